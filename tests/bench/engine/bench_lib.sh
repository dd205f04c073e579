# shellcheck shell=bash
# Sourced by the engine benchmarks that set predicted against measured step times
# (bench_predicted.sh, bench_tp.sh): not a benchmark itself.

# rank_cluster PROBE OUT N: the cluster of `hippie-engine probe` (file PROBE) as N devices, one
# per rank, written to OUT. The probe times one thread (its torch_threads); each rank runs one
# thread too. The ranks time-share the host's cores: the probe's node gives their compute
# slots (all cores' matmul rate over one thread's; 1.7-2.0 on this project's 2-vCPU hosts),
# and the simulator slows each compute by the ranks computing at once over those slots.
# The ranks' link is what the engine's Gloo all-reduce achieves between two ranks on this
# host (the probe's node): two flows at once, one each way, over loopback TCP, which the cores
# copy. When all N ranks transfer at once (a ring all-reduce has one flow per rank), those
# flows share what the two did: each min(1, 2 / N) of the link. (A probe without the Gloo
# figure gives raw TCP: each flow min(1, all_cores_loopback / N / one connection's).)
rank_cluster() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = json.load(open(src))
p, node = c["probe"], c["nodes"][0]
node["devices"] = n
if node.get("compute_slots", 0) <= 0:
    sys.exit("rank_cluster: the probe gives no compute_slots (it measures them with one torch thread): "
             "the ranks' sharing of the cores is unknown")
link = node["intra"]
if p.get("gloo_bytes_per_s", 0) > 0:
    # The link is Gloo's two-rank all-reduce: two flows at once (one each way) already.
    flow = min(1.0, 2 / n)
else:
    one_flow = p.get("loopback_bytes_per_s", 0)
    together = p.get("all_cores_loopback_bytes_per_s", 0)
    flow = min(1.0, together / n / one_flow) if together > 0 and one_flow > 0 else 1.0
link["bandwidth_bytes_per_s"] *= flow
print(f"{n} ranks on {p['cpu_cores']} cores: sharing {node['compute_slots']:.2f} threads' worth of compute, each flow {flow:.2f} of the probed link")
json.dump(c, open(out, "w"))
PY
}

# measured_step OUT: the median step time of a `hippie-engine launch` output, each step's time
# being its slowest rank's (step events), over the steps after the warm-up its "done" event
# names (planners/common/warmup.h). The median, not the mean: this VM stalls a step by tens of
# milliseconds now and then (a 32 ms backward among 1.7 ms ones), which the mean of 7 steps
# takes in and a prediction cannot.
measured_step() {
    python3 - "$1" <<'PY'
import json, statistics, sys
steps, warmup = {}, 0
for line in open(sys.argv[1]):
    if not line.startswith("{"): continue
    e = json.loads(line)
    if e.get("event") == "step": steps[e["step"]] = max(steps.get(e["step"], 0.0), e["time_s"])
    elif e.get("event") == "done": warmup = e.get("warmup_steps", 0)
timed = [t for s, t in sorted(steps.items()) if s >= warmup]
if timed: print(statistics.median(timed))
PY
}

# predicted_step PLANNER PLAN [SIMULATE ARGS...]: the simulated iteration time of the plan file.
predicted_step() {
    "$1" simulate --plan "$2" "${@:3}" --json 2>/dev/null | grep -o '"iteration_time_s": *[0-9.e-]*' | head -1 | grep -o '[0-9.e-]*$'
}

# The small GPT of the tensor-parallel benchmarks; BENCH_TP_OVERRIDE replaces it.
tp_override() { echo "${BENCH_TP_OVERRIDE:-layers=2,d_model=256,heads=8,seq_len=64,vocab=8192,positions=64}"; }

# probe_host ENGINE OUT: prints the load, then writes this host as `hippie-engine probe` measures it.
probe_host() {
    echo "load before: $(uptime)"
    "$1" probe --seconds 6 > "$2"
}
