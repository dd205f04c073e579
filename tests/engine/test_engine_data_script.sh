#!/usr/bin/env bash
# Training from a tensor data file, and training a TorchScript module split at its children,
# each equal to one process training the same model on the same data; bad data files and an
# unavailable device are refused with a clear error.
source "$(dirname "$0")/lib.sh"
STEPS=3

# equal REF_PARAMS REF_OUT OUT WHAT PARAMS...: parameters and final loss within 1e-5
equal() {
    local ref="$1" ref_out="$2" out="$3" what="$4"; shift 4
    local ref_loss loss
    ref_loss=$(field "$ref_out" done loss); loss=$(field "$out" done loss | grep -v null | sort -u | head -1)
    if "$ENGINE" compare-params --reference "$ref" --tol 1e-5 "$@" > "$WORK/cmp.out"; then
        pass "$what: parameters match ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out")), loss $loss vs $ref_loss"
    else
        fail "$what: $(cat "$WORK/cmp.out")"
    fi
    awk -v a="$ref_loss" -v b="$loss" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-5) }' \
        || fail "$what: final loss $loss differs from the reference $ref_loss"
}

# run_one PLAN DATA OUT: one rank, expected to fail with exit 2 before training
run_one() { timeout 60 "$ENGINE" run --plan "$1" --rank 0 --world-size 1 --master-port "$(shuf -i 20000-60000 -n 1)" $2 > "$3" 2>/dev/null; }

# ---- tensor data file: 40 samples, global batch 16: epochs of 2 steps, a new permutation each ----
"$ENGINE" make-data --model mlp-tiny --samples 40 --seed 3 --out "$WORK/mlp.data" > "$WORK/md" || fail "make-data: $(cat "$WORK/md")"
plan "$WORK/ref.json" --model mlp-tiny --pp 1 --dp 1 --microbatches 1 --global-batch 16 --optimizer sgd
launch "$WORK/ref.json" 1 $STEPS "$WORK/ref.out" --data "$WORK/mlp.data" --dump-params "$WORK/ref.params.json" \
    || fail "data reference run: $(tail -2 "$WORK/ref.out")"
grep -q '"data":"file ' "$WORK/ref.out" && pass "the run reads the data file" || fail "setup does not name the data file: $(head -1 "$WORK/ref.out")"
launch "$WORK/ref.json" 1 $STEPS "$WORK/syn.out"
[ "$(field "$WORK/syn.out" done loss)" != "$(field "$WORK/ref.out" done loss)" ] \
    && pass "file data and synthetic data train differently" || fail "file data gives the synthetic loss"
plan "$WORK/p.json" --model mlp-tiny --pp 2 --dp 2 --microbatches 4 --global-batch 16 --schedule hippie --optimizer sgd --bucket-bytes 4096
if launch "$WORK/p.json" 4 $STEPS "$WORK/p.out" --data "$WORK/mlp.data" --dump-params "$WORK/p.{rank}.json"; then
    equal "$WORK/ref.params.json" "$WORK/ref.out" "$WORK/p.out" "data file, mlp-tiny pp2 x dp2 hippie" "$WORK"/p.*.json
else fail "data file pp2 x dp2: $(tail -2 "$WORK/p.out")"; fi

# ---- bad data files -----------------------------------------------------------------------
run_one "$WORK/ref.json" "--data $WORK/missing.data" "$WORK/b1"; code=$?
[ $code -eq 2 ] && grep -q 'missing.data.*no such file' "$WORK/b1" && pass "missing data file: exit 2, named" || fail "missing data file: exit $code $(cat "$WORK/b1")"
echo "not a tensor file" > "$WORK/bad.data"
run_one "$WORK/ref.json" "--data $WORK/bad.data" "$WORK/b2"; code=$?
[ $code -eq 2 ] && grep -q 'bad.data.*is not a tensor file' "$WORK/b2" && pass "garbage data file: exit 2" || fail "garbage data file: exit $code $(cat "$WORK/b2")"
"$ENGINE" make-data --model gpt-tiny --samples 16 --out "$WORK/gpt.data" > /dev/null
run_one "$WORK/ref.json" "--data $WORK/gpt.data" "$WORK/b3"; code=$?
[ $code -eq 2 ] && grep -q 'gpt.data.*inputs \[2,16\] Long' "$WORK/b3" && grep -q 'expected\|model.s own data' "$WORK/b3" \
    && pass "data of the wrong shape: exit 2 ($(grep -o '"message":"[^"]*' "$WORK/b3" | cut -c12-140)...)" || fail "wrong-shape data: exit $code $(cat "$WORK/b3")"

# ---- TorchScript: export -> inspect -> plan on the graph -> 2 ranks = 1 process --------------
"$ENGINE" export-script --model mlp-tiny --seed 5 --out "$WORK/mlp.pt" > "$WORK/e" || fail "export-script: $(cat "$WORK/e")"
timeout 60 "$ENGINE" inspect "$WORK/mlp.pt" --input-shape 8,32 --repeats 1 --out "$WORK/mlp.graph.json" > "$WORK/i" \
    || fail "inspect: $(cat "$WORK/i")"
plan "$WORK/sref.json" --graph "$WORK/mlp.graph.json" --pp 1 --dp 1 --microbatches 1 --global-batch 16 --optimizer sgd
launch "$WORK/sref.json" 1 $STEPS "$WORK/sref.out" --input-shape 32 --dump-params "$WORK/sref.params.json" \
    || fail "TorchScript reference run: $(tail -2 "$WORK/sref.out")"
for v in "2 1 1f1b" "2 2 hippie"; do
    set -- $v
    rm -f "$WORK"/s.*.json
    plan "$WORK/s.json" --graph "$WORK/mlp.graph.json" --pp $1 --dp $2 --microbatches 4 --global-batch 16 --schedule $3 \
        --optimizer sgd --bucket-bytes 4096
    if launch "$WORK/s.json" $(($1 * $2)) $STEPS "$WORK/s.out" --input-shape 32 --dump-params "$WORK/s.{rank}.json"; then
        equal "$WORK/sref.params.json" "$WORK/sref.out" "$WORK/s.out" "TorchScript mlp.pt pp$1 x dp$2 $3" "$WORK"/s.*.json
    else fail "TorchScript pp$1 x dp$2: $(tail -2 "$WORK/s.out")"; fi
done
# Training moves the script's parameters: a run one step shorter differs from the reference.
launch "$WORK/sref.json" 1 $((STEPS - 1)) "$WORK/short.out" --input-shape 32 --dump-params "$WORK/short.params.json"
if "$ENGINE" compare-params --reference "$WORK/sref.params.json" --tol 1e-5 "$WORK/short.params.json" > "$WORK/cmp.out"; then
    fail "TorchScript: a run one step shorter compares equal: $(cat "$WORK/cmp.out")"
else pass "TorchScript: a run one step shorter differs ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out"))"; fi
# A plan may name the .pt itself; its data then can come from a file.
sed "s|\"file\": *\"[^\"]*\"|\"file\": \"$WORK/mlp.pt\"|" "$WORK/s.json" > "$WORK/direct.json"
launch "$WORK/direct.json" 4 1 "$WORK/d.out" --data "$WORK/mlp.data" \
    && pass "a plan naming the .pt trains from a data file" || fail "plan naming the .pt: $(tail -2 "$WORK/d.out")"
run_one "$WORK/sref.json" "" "$WORK/b4"; code=$?
[ $code -eq 2 ] && grep -q 'needs --data FILE or --input-shape' "$WORK/b4" && pass "TorchScript without an input shape: exit 2" \
    || fail "TorchScript without input shape: exit $code $(cat "$WORK/b4")"

echo "not torchscript" > "$WORK/bad.pt"
sed "s|\"file\": *\"[^\"]*\"|\"file\": \"$WORK/bad.pt\"|" "$WORK/sref.json" > "$WORK/badpt.json"
run_one "$WORK/badpt.json" "--input-shape 32" "$WORK/b5"; code=$?
[ $code -eq 2 ] && grep -q 'bad.pt.*is not a TorchScript module' "$WORK/b5" && pass "a plan naming a bad TorchScript file: exit 2" \
    || fail "bad TorchScript in a plan: exit $code $(cat "$WORK/b5")"

# ---- devices: this build's answer to --device cuda ------------------------------------------
run_one "$WORK/ref.json" "--device cuda" "$WORK/c1"; code=$?
if grep -q '"device":"cuda' "$WORK/c1"; then pass "--device cuda runs here (a CUDA build with a GPU)"
else
    [ $code -eq 2 ] && grep -q -- '--device cuda: this' "$WORK/c1" && pass "--device cuda unavailable: exit 2 ($(grep -o 'this [^;]*' "$WORK/c1" | head -1))" \
        || fail "--device cuda: exit $code $(cat "$WORK/c1")"
fi
run_one "$WORK/ref.json" "--device bogus" "$WORK/c2"; code=$?
[ $code -eq 2 ] && grep -q 'auto, cpu or cuda' "$WORK/c2" && pass "--device bogus: exit 2" || fail "--device bogus: exit $code $(cat "$WORK/c2")"
finish
