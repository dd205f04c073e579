# shellcheck shell=bash
# Sourced by the engine benchmarks that set predicted against measured step times
# (bench_predicted.sh, bench_tp.sh): not a benchmark itself.

# rank_cluster PROBE OUT N: the cluster of `hippie-engine probe` (file PROBE) as N devices, one
# per rank, written to OUT. The probe times one thread (its torch_threads); each rank runs one
# thread too, but N ranks on fewer cores take turns: a device is a rank's share of a core,
# min(1, cores / N) of the probed matmul rate and memory bandwidth.
rank_cluster() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = json.load(open(src))
share = min(1.0, c["probe"]["cpu_cores"] / n)
node = c["nodes"][0]
node["devices"] = n
for key in ("peak_flops_fp32", "peak_flops_fp16", "memory_bandwidth_bytes_per_s"):
    node["device"][key] *= share
print(f"{n} ranks on {c['probe']['cpu_cores']} cores: each device {share:.2f} of the probed core")
json.dump(c, open(out, "w"))
PY
}

# measured_step OUT: the slowest rank's mean step time of a `hippie-engine launch` output.
measured_step() {
    grep '"event":"done"' "$1" | grep -o '"mean_step_s":[0-9.e-]*' | cut -d: -f2 | sort -g | tail -1
}

# predicted_step PLANNER PLAN [SIMULATE ARGS...]: the simulated iteration time of the plan file.
predicted_step() {
    "$1" simulate --plan "$2" "${@:3}" --json 2>/dev/null | grep -o '"iteration_time_s": *[0-9.e-]*' | head -1 | grep -o '[0-9.e-]*$'
}
