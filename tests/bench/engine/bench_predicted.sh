#!/usr/bin/env bash
# Benchmark (3) of issue 13 (not a CTest test): predicted against measured step time for
# plans of several model families on this host's CPU ranks. The cluster is
# `hippie-engine probe` of this host (its loopback bandwidth and latency, and its matmul rate)
# with as many devices as ranks, not fitted to these runs; layer times come from each model's
# own profile (`hippie-engine profile` for the tiny models, `inspect` for the TorchScript
# GPT-2-shaped model), measured before the runs. Prints the error of each plan and the median.
# Usage: bench_predicted.sh HIPPIE_ENGINE HIPPIE_PLAN [STEPS] [GLOBAL_BATCH]
set -u
ENGINE="$1"; PLANNER="$2"; STEPS="${3:-6}"; GB="${4:-16}"; N=4
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
echo "load before: $(uptime)"
"$ENGINE" probe --seconds 2 > "$WORK/probe.json" || exit 2
python3 - "$WORK/probe.json" "$N" <<'PY'
import json, sys
p, n = sys.argv[1], int(sys.argv[2])
c = json.load(open(p))
c["nodes"][0]["devices"] = n   # one device per rank, as the runs place them
json.dump(c, open(p, "w"))
PY
echo "probe: $(grep -o '"matmul_flops_per_s":[^,]*' "$WORK/probe.json"), $(grep -o '"loopback_bytes_per_s":[^,]*' "$WORK/probe.json")"
errors=()
run() {  # run FAMILY GRAPH DATA_ARGS NAME PLAN_ARGS... (the model: $PLAN_MODEL, e.g. --model gpt-tiny or --graph G)
    local fam="$1" graph="$2" data="$3" name="$4"; shift 4
    "$ENGINE" plan $PLAN_MODEL --global-batch "$GB" --optimizer sgd --out "$WORK/$name.json" "$@" > /dev/null || { echo "$name: plan failed"; return; }
    timeout 900 "$ENGINE" launch --plan "$WORK/$name.json" --nprocs $N --steps "$STEPS" --rank-args "$data --threads 1" > "$WORK/$name.out" 2>&1 \
        || { echo "$name: run failed: $(tail -1 "$WORK/$name.out")"; return; }
    local measured predicted
    measured=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"mean_step_s":[0-9.e-]*' | cut -d: -f2 | sort -g | tail -1)
    predicted=$("$PLANNER" simulate --plan "$WORK/$name.json" -m "$graph" -c "$WORK/probe.json" --json 2>/dev/null \
                | grep -o '"iteration_time_s": *[0-9.e-]*' | head -1 | grep -o '[0-9.e-]*$')
    [ -n "$predicted" ] || { echo "$name: no prediction"; return; }
    local err; err=$(awk -v m="$measured" -v p="$predicted" 'BEGIN { printf "%.1f", 100 * (p - m) / m }')
    errors+=("${err#-}")
    printf "%-8s %-22s measured %8.4f s  predicted %8.4f s  error %+6.1f%%\n" "$fam" "$name" "$measured" "$predicted" "$err"
}
for m in gpt-tiny bert-tiny mlp-tiny resnet-tiny; do
    "$ENGINE" profile --model $m --batch-size $((GB / N)) --repeats 5 --out "$WORK/$m.graph.json" > /dev/null || { echo "$m: profile failed"; continue; }
    # the profile's graph is for a global batch of GB/N samples; plans are at GB (the simulator scales)
    PLAN_MODEL="--model $m"
    run "$m" "$WORK/$m.graph.json" "" "$m-dp4" --pp 1 --dp 4 --microbatches 1 --schedule 1f1b
    run "$m" "$WORK/$m.graph.json" "" "$m-pp2dp2-hippie" --pp 2 --dp 2 --microbatches 2 --schedule hippie
done
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' 2> /dev/null; then
    /usr/bin/python3 "$HERE/make_gpt_script.py" "$WORK" 1 768 12 32 4096 $((GB * STEPS)) \
        && "$ENGINE" inspect "$WORK/gpt.pt" --input-shape "$((GB / N)),32" --input-dtype long --repeats 3 --out "$WORK/gpt.graph.json" > /dev/null \
        && { PLAN_MODEL="--graph $WORK/gpt.graph.json"
             run gpt2-shape "$WORK/gpt.graph.json" "--data $WORK/gpt.data" gpt2s-dp4 --pp 1 --dp 4 --microbatches 1 --schedule 1f1b
             run gpt2-shape "$WORK/gpt.graph.json" "--data $WORK/gpt.data" gpt2s-pp2dp2-hippie --pp 2 --dp 2 --microbatches 2 --schedule hippie; }
fi
printf "%s\n" "${errors[@]}" | sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "plans: %d, median |error| %.1f%%\n", NR, (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
echo "load after: $(uptime)"
