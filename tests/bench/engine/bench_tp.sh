#!/usr/bin/env bash
# Benchmark of issue 15 (not a CTest test): measured against predicted step time of tensor-
# parallel plans of a small GPT on this host's CPU ranks: t2 alone, t2 with sequence
# parallelism, t2 x dp2 without ZeRO and with ZeRO 1 and 3, t4, and dp4 (no tp) beside them;
# pp3 with per-stage degrees t(1,2,1) beside pp3 alone.
# The prediction is `hippie-plan simulate` of the very plan file the ranks ran, on the plan's
# cluster (cpu-local, a preset of rough figures: 4 CPU ranks over loopback) and on this host
# as `hippie-engine probe` measures it before the runs (one device per rank of the plan, each
# its share of the cores: bench_lib.sh); nothing is fitted to the runs.
# Usage: bench_tp.sh HIPPIE_ENGINE HIPPIE_PLAN [STEPS] [GLOBAL_BATCH]
set -u
# shellcheck source=bench_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/bench_lib.sh"
ENGINE="$1"; PLANNER="$2"; STEPS="${3:-10}"; GB="${4:-16}"
OV="$(tp_override)"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
# One probe; a cluster of as many devices as each plan has ranks (2 ranks share the cores
# differently from 4).
probe_host "$ENGINE" "$WORK/probe.json" || exit 2
for n in 2 3 4; do rank_cluster "$WORK/probe.json" "$WORK/probe-$n.json" $n || exit 2; done
printf "%-26s %5s %12s %14s %9s %14s %9s\n" plan ranks "measured s" "cpu-local s" error "probed s" error
run() {  # NAME RANKS PLAN_ARGS...
    local name="$1" n="$2"; shift 2
    "$ENGINE" plan --model gpt2-small --override "$OV" --global-batch "$GB" --optimizer adam --out "$WORK/$name.json" "$@" > "$WORK/$name.plan" \
        || { echo "$name: plan failed: $(cat "$WORK/$name.plan")"; return; }
    timeout 900 "$ENGINE" launch --plan "$WORK/$name.json" --nprocs "$n" --steps "$STEPS" --rank-args "--threads 1" > "$WORK/$name.out" 2>&1 \
        || { echo "$name: run failed: $(grep '"event":"error"' "$WORK/$name.out" | head -1)"; return; }
    local measured local_p probed_p
    measured=$(measured_step "$WORK/$name.out")
    local_p=$(predicted_step "$PLANNER" "$WORK/$name.json")
    probed_p=$(predicted_step "$PLANNER" "$WORK/$name.json" -c "$WORK/probe-$n.json")
    [ -n "$local_p" ] && [ -n "$probed_p" ] || { echo "$name: no prediction ($("$PLANNER" simulate --plan "$WORK/$name.json" 2>&1 | tail -1))"; return; }
    awk -v name="$name" -v n="$n" -v m="$measured" -v a="$local_p" -v b="$probed_p" \
        'BEGIN { printf "%-26s %5d %12.4f %14.4f %+8.1f%% %14.4f %+8.1f%%\n", name, n, m, a, 100 * (a - m) / m, b, 100 * (b - m) / m }'
}
run t2 2 --pp 1 --dp 1 --tp 2 --microbatches 2 --schedule 1f1b
run t2-sp 2 --pp 1 --dp 1 --tp 2 --sequence-parallel --microbatches 2 --schedule 1f1b
run t2xdp2 4 --pp 1 --dp 2 --tp 2 --microbatches 2 --schedule hippie
run t2xdp2-zero1 4 --pp 1 --dp 2 --tp 2 --microbatches 2 --schedule hippie --zero 1
run t2xdp2-zero3 4 --pp 1 --dp 2 --tp 2 --microbatches 2 --schedule hippie --zero 3
run t4 4 --pp 1 --dp 1 --tp 4 --microbatches 2 --schedule 1f1b
run dp4 4 --pp 1 --dp 4 --microbatches 1 --schedule hippie
# Per-stage degrees (stage_tp): the middle stage of three split over 2 ranks, beside pp3 alone.
run pp3 3 --pp 3 --dp 1 --microbatches 4 --schedule 1f1b
run pp3-t121 4 --pp 3 --dp 1 --stage-tp 1,2,1 --microbatches 4 --schedule 1f1b
echo "model gpt2-small ($OV), global batch $GB, $STEPS steps (the first three untimed), one thread a rank, Adam, fp32"
echo "load after: $(uptime)"
