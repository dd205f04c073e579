#!/usr/bin/env bash
# inspect on a TorchScript file the engine writes itself; profile and probe print usable JSON.
source "$(dirname "$0")/lib.sh"
"$ENGINE" export-script --model mlp-tiny --out "$WORK/mlp.pt" > "$WORK/e" || fail "export-script: $(cat "$WORK/e")"
if timeout 60 "$ENGINE" inspect "$WORK/mlp.pt" --input-shape 8,32 --out "$WORK/g.json" > "$WORK/i"; then
    layers=$(grep -o '"name":"fc[0-9]*"' "$WORK/i" | wc -l)
    [ "$layers" -eq 5 ] && grep -q '"fwd_time_s"' "$WORK/g.json" && grep -q '"format": *"hippie-graph"' "$WORK/g.json" \
        && pass "inspect: 5 layers with measured times" || fail "inspect output: $(cat "$WORK/i")"
else fail "inspect: $(cat "$WORK/i")"; fi
echo "not torchscript" > "$WORK/bad.pt"
timeout 60 "$ENGINE" inspect "$WORK/bad.pt" --input-shape 8,32 > "$WORK/b"; code=$?
[ $code -eq 2 ] && grep -q '"event":"error"' "$WORK/b" && pass "bad TorchScript file: exit 2" || fail "bad TorchScript: exit $code $(cat "$WORK/b")"
timeout 60 "$ENGINE" profile --model gpt-tiny --batch-size 4 --repeats 2 --out "$WORK/prof.json" > "$WORK/p" \
    && grep -q '"bwd_time_s"' "$WORK/prof.json" && pass "profile gpt-tiny" || fail "profile: $(cat "$WORK/p")"
timeout 60 "$ENGINE" probe --seconds 0.1 > "$WORK/probe" && grep -q '"peak_flops_fp32"' "$WORK/probe" \
    && pass "probe: $(grep -o '"matmul_flops_per_s": *[0-9.e+]*' "$WORK/probe")" || fail "probe: $(cat "$WORK/probe")"
finish
