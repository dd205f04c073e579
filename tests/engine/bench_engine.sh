#!/usr/bin/env bash
# Benchmark (not a CTest test): one small GPT at a fixed global batch on 4 local CPU ranks.
#   hippie (pp 2 x dp 2) against plain data parallelism (dp 4), and against 1f1b without overlap;
#   measured against simulated iteration time on the cpu-local preset (needs hippie-plan).
# Usage: bench_engine.sh HIPPIE_ENGINE [HIPPIE_PLAN] [STEPS] [GLOBAL_BATCH]
set -u
ENGINE="$1"; PLANNER="${2:-}"; STEPS="${3:-20}"; GB="${4:-32}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
M=4
row() {  # row NAME PLAN_ARGS...
    local name="$1"; shift
    "$ENGINE" plan --out "$WORK/$name.json" --model gpt-tiny --global-batch "$GB" "$@" > /dev/null
    timeout 600 "$ENGINE" launch --plan "$WORK/$name.json" --nprocs 4 --steps "$STEPS" > "$WORK/$name.out" 2>&1 || { echo "$name: failed"; return; }
    local sps step rss tracked
    step=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"mean_step_s":[0-9.e-]*' | cut -d: -f2 | sort -g | tail -1)
    rss=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"peak_rss_bytes":[0-9]*' | cut -d: -f2 | sort -n | tail -1)
    tracked=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"peak_tracked_bytes":[0-9]*' | cut -d: -f2 | sort -n | tail -1)
    sps=$(awk -v s="$step" -v b="$GB" 'BEGIN { printf "%.1f", b / s }')
    local sim="n/a" err="n/a"
    if [ -n "$PLANNER" ]; then
        "$ENGINE" profile --model gpt-tiny --batch-size $((GB / M)) --repeats 7 --out "$WORK/graph.json" > /dev/null
        sim=$("$PLANNER" simulate -m "$WORK/graph.json" -c cpu-local "${@/--bucket-bytes*/}" --global-batch "$GB" --optimizer sgd --json 2>/dev/null \
              | grep -o '"iteration_time_s": *[0-9.e-]*' | grep -o '[0-9.e-]*$')
        [ -n "$sim" ] && err=$(awk -v m="$step" -v s="$sim" 'BEGIN { printf "%+.0f%%", 100 * (s - m) / m }')
    fi
    printf "%-22s step %.4f s  %7s samples/s  peak tracked %8d B  peak RSS %6.1f MiB  simulated %s s (%s)\n" \
        "$name" "$step" "$sps" "$tracked" "$(awk -v r="$rss" 'BEGIN { print r / 1048576 }')" "${sim:-n/a}" "$err"
}
row hippie-pp2xdp2 --pp 2 --dp 2 --microbatches $M --schedule hippie
row 1f1b-pp2xdp2 --pp 2 --dp 2 --microbatches $M --schedule 1f1b
row dp4 --pp 1 --dp 4 --microbatches 1 --schedule hippie
row dp4-no-overlap --pp 1 --dp 4 --microbatches 1 --schedule 1f1b
