#!/usr/bin/env bash
# Benchmark (not a CTest test): where tensor parallelism's step time goes on this host's CPU
# ranks, phase by phase. For a small GPT (BENCH_TP_OVERRIDE, default as bench_tp.sh) trained in
# one process (t1) and over 2 tensor-parallel ranks (t2), each REPEATS times: the mean forward
# and backward of one micro-batch on rank 0 in the last step's measured trace, beside the
# same from `hippie-plan simulate --trace` of the very plan file on this host as
# `hippie-engine probe` measures it (bench_lib.sh). Nothing is fitted to the runs.
# Usage: bench_tp_phases.sh HIPPIE_ENGINE HIPPIE_PLAN [REPEATS] [STEPS]
set -u
# shellcheck source=bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
ENGINE="$1"; PLANNER="$2"; REPEATS="${3:-3}"; STEPS="${4:-6}"
OV="$(tp_override)"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
probe_host "$ENGINE" "$WORK/probe.json" || exit 2
for n in 1 2; do
    rank_cluster "$WORK/probe.json" "$WORK/probe-$n.json" $n || exit 2
    "$ENGINE" plan --model gpt2-small --override "$OV" --global-batch 16 --optimizer adam --out "$WORK/t$n.json" \
        --pp 1 --dp 1 --tp $n --microbatches 2 --schedule 1f1b > "$WORK/t$n.plan" || { echo "t$n: plan failed: $(cat "$WORK/t$n.plan")"; exit 2; }
    "$PLANNER" simulate --plan "$WORK/t$n.json" -c "$WORK/probe-$n.json" --trace "$WORK/t$n.pred.json" > /dev/null || exit 2
done
printf "%-4s %3s %14s %14s %14s %14s\n" plan run "forward ms" "predicted" "backward ms" "predicted"
for r in $(seq 1 "$REPEATS"); do
    for n in 1 2; do
        timeout 600 "$ENGINE" launch --plan "$WORK/t$n.json" --nprocs $n --steps "$STEPS" --rank-args "--threads 1" > "$WORK/t$n.out" 2>&1 \
            || { echo "t$n: run failed: $(grep '"event":"error"' "$WORK/t$n.out" | head -1)"; exit 1; }
        python3 - "$WORK/t$n.out" "$WORK/t$n.pred.json" "t$n" "$r" <<'PY'
import json, sys
measured = None
for line in open(sys.argv[1]):
    if '"event":"trace"' in line:
        event = json.loads(line)
        if event["rank"] == 0:
            measured = event["trace"]
predicted = json.load(open(sys.argv[2]))
def mean_ms(trace, kind):
    spans = [e["end_s"] - e["start_s"] for e in trace["events"] if e["device"] == 0 and e["kind"] == kind]
    return 1e3 * sum(spans) / len(spans)
print(f"{sys.argv[3]:4s} {sys.argv[4]:>3s} {mean_ms(measured, 'forward'):14.1f} {mean_ms(predicted, 'forward'):14.1f} "
      f"{mean_ms(measured, 'backward'):14.1f} {mean_ms(predicted, 'backward'):14.1f}")
PY
    done
done
echo "model gpt2-small ($OV), global batch 16 in 2 micro-batches, $STEPS steps, one thread a rank, Adam, fp32"
echo "load after: $(uptime)"
