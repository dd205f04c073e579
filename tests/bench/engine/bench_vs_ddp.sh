#!/usr/bin/env bash
# Benchmarks (1) and (2) of issue 13, run side by side in one invocation (not a CTest test):
#   (1) hippie-engine data parallel (dp N) against PyTorch DDP (Debian's python3-torch 1.13, the
#       same LibTorch) on a GPT-2-small-shaped model (d_model 768, 12 heads) with a size
#       override, same global batch, ranks, threads per rank and optimizer: step time,
#       throughput ratio, peak RSS per rank;
#   (2) hippie pp2 x dp2 (schedule hippie) against DDP dp4: memory per rank and throughput.
# The model is a TorchScript file of gpt_model.py (the engine trains its children in
# sequence), the data one tensor file both read. Run it on a quiet machine; it prints uptime.
# Usage: bench_vs_ddp.sh HIPPIE_ENGINE [STEPS] [GLOBAL_BATCH] [LAYERS] [SEQ] [VOCAB] [THREADS] [OPTIMIZER]
set -u
ENGINE="$1"; STEPS="${2:-4}"; GB="${3:-8}"; LAYERS="${4:-2}"; SEQ="${5:-64}"; VOCAB="${6:-8192}"; THREADS="${7:-1}"; OPT="${8:-sgd}"
D=768; HEADS=12; N=4
HERE="$(cd "$(dirname "$0")" && pwd)"
PY=/usr/bin/python3   # Debian's python3-torch, not a python3 earlier on PATH
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
echo "model: gpt2-small shape, layers $LAYERS, d_model $D, heads $HEADS, seq $SEQ, vocab $VOCAB; global batch $GB; $N ranks x $THREADS thread(s); $OPT; $STEPS steps (first not timed)"
echo "load before: $(uptime)"
"$PY" "$HERE/make_gpt_script.py" "$WORK" "$LAYERS" "$D" "$HEADS" "$SEQ" "$VOCAB" $((GB * STEPS)) || exit 2
"$ENGINE" inspect "$WORK/gpt.pt" --input-shape "$GB,$SEQ" --input-dtype long --repeats 1 --out "$WORK/g.json" > /dev/null || exit 2

mib() { awk -v b="$1" 'BEGIN { printf "%.0f\n", b / 1048576 }'; }
engine_row() {  # engine_row NAME PLAN_ARGS...
    local name="$1"; shift
    "$ENGINE" plan --graph "$WORK/g.json" --global-batch "$GB" --optimizer "$OPT" --out "$WORK/$name.json" "$@" > /dev/null || return
    timeout 1800 "$ENGINE" launch --plan "$WORK/$name.json" --nprocs $N --steps "$STEPS" \
        --rank-args "--data $WORK/gpt.data --threads $THREADS --op-timeout 600" > "$WORK/$name.out" 2>&1 \
        || { echo "$name: failed: $(tail -2 "$WORK/$name.out")"; return; }
    local step rss
    step=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"mean_step_s":[0-9.e-]*' | cut -d: -f2 | sort -g | tail -1)
    rss=$(grep '"event":"done"' "$WORK/$name.out" | grep -o '"peak_rss_bytes":[0-9]*' | cut -d: -f2 | sort -n | while read -r b; do mib "$b"; done | tr '\n' ' ')
    eval "STEP_$name=$step"
    printf "%-16s step %7.3f s  %6.2f samples/s  peak RSS per rank (MiB): %s\n" "$name" "$step" "$(awk -v s="$step" -v b="$GB" 'BEGIN { print b / s }')" "$rss"
}
engine_row engine_dp4 --pp 1 --dp 4 --microbatches 1 --schedule 1f1b
engine_row hippie_pp2dp2 --pp 2 --dp 2 --microbatches 2 --schedule hippie
ddp=$("$PY" "$HERE/ddp_gpt.py" $N "$STEPS" "$GB" "$THREADS" "$OPT" "$LAYERS" "$D" "$HEADS" "$SEQ" "$VOCAB" 2> "$WORK/ddp.err") \
    || { echo "ddp: failed: $(tail -3 "$WORK/ddp.err")"; exit 1; }
STEP_ddp=$(echo "$ddp" | grep -o '"mean_step_s": [0-9.e-]*' | cut -d' ' -f2)
printf "%-16s step %7.3f s  %6.2f samples/s  peak RSS per rank (MiB): %s\n" ddp_dp4 "$STEP_ddp" "$(awk -v s="$STEP_ddp" -v b="$GB" 'BEGIN { print b / s }')" \
    "$(echo "$ddp" | grep -o '"peak_rss_bytes": \[[^]]*' | cut -d[ -f2 | tr ',' '\n' | while read -r b; do mib "$b"; done | tr '\n' ' ')"
for n in engine_dp4 hippie_pp2dp2; do
    v="STEP_$n"; [ -n "${!v:-}" ] && printf "throughput %s / ddp_dp4: %.2fx\n" "$n" "$(awk -v a="${!v}" -v b="$STEP_ddp" 'BEGIN { print b / a }')"
done
echo "load after: $(uptime)"
