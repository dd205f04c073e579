#!/usr/bin/env bash
# Benchmark (3) of issue 13 (not a CTest test): predicted against measured step time for plans
# of four zoo families (GPT, ResNet, VGG, MLP at size overrides that take a fraction of a
# second to seconds a step here) on this host's CPU ranks. The cluster is `hippie-engine
# probe` of this host (one thread's matmul curve, its kernel table of the zoo's op kinds,
# memory bandwidth, the Gloo link, the cores' compute slots), one device per rank
# (bench_lib.sh's rank_cluster), measured right before each plan's run and not fitted to it
# (this VM's speed drifts within minutes: three probes in a row here gave a matmul rate of 68,
# 101 and 100 GFLOP/s, and the copy bandwidth ranged 27-45 GB/s over a day's probes, so one
# probe for all the runs mispredicts the later ones by whatever the host did meanwhile; PROBE_ONCE=1 does that); the
# prediction is `hippie-plan simulate` of the very plan file the ranks ran (the zoo's Graph:
# FLOPs and bytes, no measured layer times).
# Prints the error of each run and the median |error|.
# RANKS=N (default 4, even) runs N ranks of one thread: data parallel over all N, and two
# pipeline stages of N/2 replicas each; 4 on this project's 2-core hosts time-share the
# cores, 2 give each rank its own.
# REPEATS=R (default 1) runs the whole list R times over (plan 1..8, then again), each run
# with its own probe, and then gives each plan's median error over its R runs, the spread of
# its measured step times (the same plan's step took 11-19 ms on two ranks here within ten
# minutes), and the median |error| over the plans of those medians: one run of each plan is
# one draw of the host's noise.
# PROBE_B=ENGINE2 (an A/B of a probe change) also probes with that engine's binary right
# before each run (after the first engine's probe) and predicts the same run on it: the runs
# are the same, only the probes differ; the summary gives both.
# Usage: [RANKS=N] [REPEATS=R] [PROBE_B=ENGINE2] bench_predicted.sh HIPPIE_ENGINE HIPPIE_PLAN [STEPS] [GLOBAL_BATCH (default 4 x N)]
set -u
# shellcheck source=bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
N="${RANKS:-4}"
[ $((N % 2)) -eq 0 ] && [ "$N" -ge 2 ] || { echo "RANKS must be even and at least 2 (got $N)"; exit 2; }
R="${REPEATS:-1}"
ENGINE="$1"; PLANNER="$2"; STEPS="${3:-30}"; GB="${4:-$((4 * N))}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
echo "load before: $(uptime)"
probe() {  # the host as it is now, as N rank devices, in $WORK/probe.json
    "$ENGINE" probe --seconds 6 > "$WORK/probe.json" || exit 2
    rank_cluster "$WORK/probe.json" "$WORK/probe.json" $N > "$WORK/probe.txt" || exit 2
}
probe; cat "$WORK/probe.txt"
probe_b() {  # PROBE_B's probe of the host as it is now, in $WORK/probe_b.json
    "$PROBE_B" probe --seconds 6 > "$WORK/probe_b.json" || exit 2
    rank_cluster "$WORK/probe_b.json" "$WORK/probe_b.json" $N > /dev/null || exit 2
}
[ -z "${PROBE_B:-}" ] || [ "${PROBE_ONCE:-0}" != 1 ] || probe_b  # otherwise each run probes
errors=()
run() {  # run MODEL OVERRIDE NAME PLAN_ARGS...
    local model="$1" ov="$2" name="$3"; shift 3
    "$ENGINE" plan --model "$model" --override "$ov" --global-batch "$GB" --optimizer sgd --out "$WORK/$name.json" "$@" > /dev/null \
        || { echo "$name: plan failed"; return; }
    [ "${PROBE_ONCE:-0}" = 1 ] || { probe; [ -z "${PROBE_B:-}" ] || probe_b; }
    timeout 900 "$ENGINE" launch --plan "$WORK/$name.json" --nprocs $N --steps "$STEPS" --rank-args "--threads 1" > "$WORK/$name.out" 2>&1 \
        || { echo "$name: run failed: $(tail -1 "$WORK/$name.out")"; return; }
    local measured predicted
    measured=$(measured_step "$WORK/$name.out")
    predicted=$(predicted_step "$PLANNER" "$WORK/$name.json" -c "$WORK/probe.json")
    [ -n "$predicted" ] || { echo "$name: no prediction"; return; }
    local err; err=$(awk -v m="$measured" -v p="$predicted" 'BEGIN { printf "%.1f", 100 * (p - m) / m }')
    errors+=("${err#-}")
    printf "%-12s %-22s measured %8.4f s  predicted %8.4f s  error %+6.1f%%  (probe: %s GFLOP/s)\n" "$model" "$name" "$measured" "$predicted" "$err" \
        "$(python3 -c 'import json,sys; print("%.0f" % (json.load(open(sys.argv[1]))["probe"]["matmul_flops_per_s"] / 1e9))' "$WORK/probe.json")"
    local predicted_b="$predicted"
    if [ -n "${PROBE_B:-}" ]; then
        predicted_b=$(predicted_step "$PLANNER" "$WORK/$name.json" -c "$WORK/probe_b.json")
        [ -n "$predicted_b" ] || { echo "$name: no prediction on PROBE_B's probe"; return; }
        awk -v m="$measured" -v p="$predicted_b" 'BEGIN { printf "%-36s predicted %8.4f s  error %+6.1f%%  (PROBE_B)\n", "", p, 100 * (p - m) / m }'
    fi
    echo "$name $measured $predicted $predicted_b" >> "$WORK/runs.txt"
}
declare -A OVERRIDE=(
    [gpt2-small]="layers=2,seq_len=64,vocab=8192,positions=64"
    [resnet50]="blocks1=1,blocks2=1,blocks3=1,blocks4=1,width_mult=0.25,image_size=64,classes=10"
    [vgg16]="width_mult=0.25,fc_width=512,image_size=32,classes=10"
    [mlp]="layers=4,hidden=1024,inputs=1024,classes=10"
)
for r in $(seq 1 "$R"); do
    [ "$R" -gt 1 ] && echo "-- repeat $r of $R"
    for m in gpt2-small resnet50 vgg16 mlp; do
        run "$m" "${OVERRIDE[$m]}" "$m-dp$N" --pp 1 --dp "$N" --microbatches 1 --schedule 1f1b
        run "$m" "${OVERRIDE[$m]}" "$m-pp2dp$((N / 2))-hippie" --pp 2 --dp $((N / 2)) --microbatches 2 --schedule hippie
    done
done
printf "%s\n" "${errors[@]}" | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "runs: %d, median |error| %.1f%%\n", NR, (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
if { [ "$R" -gt 1 ] || [ -n "${PROBE_B:-}" ]; } && [ -s "$WORK/runs.txt" ]; then
    python3 - "$WORK/runs.txt" "${PROBE_B:+b}" <<'PY'
import statistics, sys
ab = len(sys.argv) > 2 and sys.argv[2] == "b"
runs = {}
for line in open(sys.argv[1]):
    name, measured, predicted, predicted_b = line.split()
    m, p, q = float(measured), float(predicted), float(predicted_b)
    runs.setdefault(name, []).append((m, p, 100 * (p - m) / m, q, 100 * (q - m) / m))
print(f"{'plan':24s} {'runs':>4s} {'measured ms (min-max)':>24s} {'predicted ms':>13s} {'median error':>13s}" + ("  PROBE_B: predicted ms, median error" if ab else ""))
medians, medians_b = [], []
for name, rs in runs.items():
    m = [x[0] * 1e3 for x in rs]
    e, f = statistics.median(x[2] for x in rs), statistics.median(x[4] for x in rs)
    medians.append(abs(e))
    medians_b.append(abs(f))
    print(f"{name:24s} {len(rs):4d} {statistics.median(m):9.2f} ({min(m):.2f}-{max(m):.2f}) {statistics.median(x[1] * 1e3 for x in rs):13.2f} {e:+12.1f}%"
          + (f"  {statistics.median(x[3] * 1e3 for x in rs):10.2f} {f:+7.1f}%" if ab else ""))
print(f"plans: {len(medians)}, median over plans of each plan's median |error|: {statistics.median(medians):.1f}%"
      + (f"; on PROBE_B's probes: {statistics.median(medians_b):.1f}%" if ab else ""))
PY
fi
echo "load after: $(uptime)"
