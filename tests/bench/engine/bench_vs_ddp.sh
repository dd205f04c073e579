#!/usr/bin/env bash
# Benchmarks (1) and (2) of issue 13, run side by side in one invocation (not a CTest test):
#   (1) hippie-engine data parallel (dp N) against PyTorch DDP (Debian's python3-torch 1.13, the
#       same LibTorch) on the zoo's gpt2-small (d_model 768, 12 heads) with a size override
#       (layers, seq_len, vocab; positions = seq_len), same global batch, ranks, threads per rank
#       and optimizer: step time, throughput ratio, peak RSS per rank;
#   (2) hippie pp2 x dp2 (schedule hippie) against DDP dp4: memory per rank and throughput.
# The engine builds the model from the zoo's architecture table; DDP trains gpt_model.py, the
# same layers and parameter count (the DDP side prints it). Both draw synthetic token ids (a step's
# time does not depend on their values). Run it on a quiet machine; it prints uptime.
# Usage: bench_vs_ddp.sh HIPPIE_ENGINE [STEPS] [GLOBAL_BATCH] [LAYERS] [SEQ] [VOCAB] [THREADS] [OPTIMIZER]
set -u
ENGINE="$1"; STEPS="${2:-8}"; GB="${3:-8}"; LAYERS="${4:-2}"; SEQ="${5:-64}"; VOCAB="${6:-8192}"; THREADS="${7:-1}"; OPT="${8:-sgd}"
D=768; HEADS=12; N=4
OVERRIDE="layers=$LAYERS,seq_len=$SEQ,vocab=$VOCAB,positions=$SEQ"
HERE="$(cd "$(dirname "$0")" && pwd)"
PY=/usr/bin/python3   # Debian's python3-torch, not a python3 earlier on PATH
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
echo "model: gpt2-small --override $OVERRIDE (d_model $D, heads $HEADS); global batch $GB; $N ranks x $THREADS thread(s); $OPT; $STEPS steps (the first 3 not timed)"
echo "DDP model parameters: $("$PY" -c "import sys; sys.path.insert(0, '$HERE'); from gpt_model import gpt
print(sum(p.numel() for p in gpt($LAYERS, $D, $HEADS, $SEQ, $VOCAB).parameters()))") (hippie-plan show-graph --model gpt2-small --override $OVERRIDE: the same)"
echo "load before: $(uptime)"

mib() { awk -v b="$1" 'BEGIN { printf "%.0f\n", b / 1048576 }'; }
engine_row() {  # engine_row NAME PLAN_ARGS...
    local name="$1"; shift
    "$ENGINE" plan --model gpt2-small --override "$OVERRIDE" --global-batch "$GB" --optimizer "$OPT" --out "$WORK/$name.json" "$@" > /dev/null || return
    timeout 1800 "$ENGINE" launch --plan "$WORK/$name.json" --nprocs $N --steps "$STEPS" \
        --rank-args "--threads $THREADS --op-timeout 600" > "$WORK/$name.out" 2>&1 \
        || { echo "$name: failed: $(tail -2 "$WORK/$name.out")"; return; }
    local step rss
    step=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"mean_step_s":[0-9.e-]*' | cut -d: -f2 | sort -g | tail -1)
    rss=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"peak_rss_bytes":[0-9]*' | cut -d: -f2 | sort -n | while read -r b; do mib "$b"; done | tr '\n' ' ')
    eval "STEP_$name=$step"
    printf "%-16s step %7.3f s  %6.2f samples/s  peak RSS per rank (MiB): %s\n" "$name" "$step" "$(awk -v s="$step" -v b="$GB" 'BEGIN { print b / s }')" "$rss"
}
engine_row engine_dp4 --pp 1 --dp 4 --microbatches 1 --schedule hippie  # the data-parallel planner's plan: all-reduces overlap the backward
engine_row engine_dp4_1f1b --pp 1 --dp 4 --microbatches 1 --schedule 1f1b  # all-reduces after the backward
engine_row hippie_pp2dp2 --pp 2 --dp 2 --microbatches 2 --schedule hippie
# DDP runs the matmul kernels the engine's ranks ran (hippie-engine picks them when OpenBLAS
# misreads a virtual machine's CPU as Prescott: engine/src/runtime/cpu_threads.h).
core=$(grep -ho '"blas":"openblas [A-Za-z0-9]*' "$WORK"/engine_dp4.out | head -1 | cut -d' ' -f2)
[ -n "$core" ] && export OPENBLAS_CORETYPE="$core" && echo "OpenBLAS kernels of both: $core"
ddp=$("$PY" "$HERE/ddp_gpt.py" $N "$STEPS" "$GB" "$THREADS" "$OPT" "$LAYERS" "$D" "$HEADS" "$SEQ" "$VOCAB" 2> "$WORK/ddp.err") \
    || { echo "ddp: failed: $(tail -3 "$WORK/ddp.err")"; exit 1; }
STEP_ddp=$(echo "$ddp" | grep -o '"mean_step_s": [0-9.e-]*' | cut -d' ' -f2)
printf "%-16s step %7.3f s  %6.2f samples/s  peak RSS per rank (MiB): %s\n" ddp_dp4 "$STEP_ddp" "$(awk -v s="$STEP_ddp" -v b="$GB" 'BEGIN { print b / s }')" \
    "$(echo "$ddp" | grep -o '"peak_rss_bytes": \[[^]]*' | cut -d[ -f2 | tr ',' '\n' | while read -r b; do mib "$b"; done | tr '\n' ' ')"
for n in engine_dp4 engine_dp4_1f1b hippie_pp2dp2; do
    v="STEP_$n"; [ -n "${!v:-}" ] && printf "throughput %s / ddp_dp4: %.2fx\n" "$n" "$(awk -v a="${!v}" -v b="$STEP_ddp" 'BEGIN { print b / a }')"
done
echo "load after: $(uptime)"
