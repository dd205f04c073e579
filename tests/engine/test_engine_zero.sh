#!/usr/bin/env bash
# ZeRO sharding (Plan::zero_stage) trains as one process does: a GPT at a reduced size (its
# embedding and tied head split over two stages in pp 2), fp32 with Adam (so the sharded
# optimizer state matters), trained as pp 2 x dp 2 (1f1b) and pp 1 x dp 2 (hippie: the last
# backward reduce-scatters bucket by bucket) under ZeRO stages 1, 2 and 3, gives the losses and
# final parameters of one process, and those of the same plan without ZeRO. Small buckets make
# several per stage, so shards span parameter boundaries. Then a ZeRO-2 run checkpointed after
# 2 steps and resumed for the third ends where the uninterrupted run does: each rank's
# checkpoint holds its own shards' optimizer state.
#
# One parameter is compared loosely: the key part of attn_qkv.bias. Its gradient is zero in
# exact arithmetic (softmax does not change when every score of a query moves by q.b_k), so
# what it gets is rounding noise, which Adam divides by the noise's own root mean square: any
# other order of summation (data parallelism's, without ZeRO too: 5.1e-4 against one process
# after 3 steps, 2026-12-04) moves those elements by up to the learning rate a step. Adam does
# the same, less, to any element whose gradient is tiny: pp 2 x dp 2 without ZeRO ends 2.2e-5
# from one process (L1.mlp_fc1.weight[784]). So against one process the parameters are compared
# within 5e-5 (the losses within 1e-5), and the tight comparison is against the same plan
# without ZeRO: ZeRO-1 exactly (it sums in the same order), ZeRO-2 and 3 within 2e-6 (they
# reduce each micro-batch's gradients before summing them: measured 1.2e-6).
# Usage: test_engine_zero.sh ENGINE
source "$(dirname "$0")/lib.sh"
STEPS=3
OV="layers=2,d_model=32,heads=2,vocab=96,seq_len=8"
TOL=1e-5        # losses
PARAM_TOL=5e-5  # parameters against one process
LOOSE=(--loose attn_qkv.bias=2e-3)
common=(--model gpt2-small --override "$OV" --global-batch 16 --optimizer adam --bucket-bytes 4096)

plan "$WORK/ref.json" "${common[@]}" --pp 1 --dp 1 --microbatches 1 --schedule 1f1b
launch "$WORK/ref.json" 1 $STEPS "$WORK/ref.out" --threads 1 --dump-params "$WORK/ref.params.json" \
    || fail "reference run: $(tail -2 "$WORK/ref.out.err")"
ref_loss=$(field "$WORK/ref.out" done loss)

check() {  # WHAT OUT REFERENCE TOL PARAMS...
    local what="$1" out="$2" reference="$3" tol="$4"; shift 4
    local loss
    loss=$(field "$out" done loss | grep -v null | sort -u | head -1)
    if "$ENGINE" compare-params "${LOOSE[@]}" --reference "$reference" --tol "$tol" "$@" > "$WORK/cmp.out"; then
        pass "$what: parameters match ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out")), loss $loss vs $ref_loss"
    else
        fail "$what: $(cat "$WORK/cmp.out")"
    fi
    same_losses "$WORK/ref.out" "$out" "$TOL" > "$WORK/losses.out" 2>&1 || fail "$what: $(cat "$WORK/losses.out")"
}

# merge DEST FILES...: one dump holding every rank's parameters (a reference for a plan's ranks)
merge() {
    local dest="$1"; shift
    { printf '{"rank":0,"threads":1,"params":{'
      local first=1
      for f in "$@"; do
          body=$(sed -e 's/^{"params":{//' -e 's/},"rank":[^{]*$//' "$f")
          [ -n "$body" ] || continue
          [ $first -eq 1 ] || printf ','
          printf '%s' "$body"
          first=0
      done
      printf '}}'; } > "$dest"
}

for shape in "2 2 4 1f1b" "1 2 2 hippie"; do
    read -r pp dp m schedule <<< "$shape"
    n=$((pp * dp))
    rm -f "$WORK"/z0.*.json
    plan "$WORK/z0.json" "${common[@]}" --pp "$pp" --dp "$dp" --microbatches "$m" --schedule "$schedule"
    launch "$WORK/z0.json" $n $STEPS "$WORK/z0.out" --threads 1 --dump-params "$WORK/z0.{rank}.json" \
        || fail "pp$pp x dp$dp without ZeRO: $(tail -2 "$WORK/z0.out.err")"
    merge "$WORK/z0.params.json" "$WORK"/z0.*.json
    for zero in 1 2 3; do
        what="gpt pp$pp x dp$dp $schedule ZeRO-$zero"
        rm -f "$WORK"/p.*.json
        plan "$WORK/p.json" "${common[@]}" --pp "$pp" --dp "$dp" --microbatches "$m" --schedule "$schedule" --zero "$zero"
        start=$(date +%s%N)
        if ! launch "$WORK/p.json" $n $STEPS "$WORK/p.out" --threads 1 --dump-params "$WORK/p.{rank}.json"; then
            fail "$what: $(tail -2 "$WORK/p.out.err")"
            continue
        fi
        grep -q '"program":"[^"]*AG' "$WORK/p.out" || fail "$what: no all-gather in the program the ranks ran"
        [ "$zero" != 3 ] || grep -q '"program":"[^"]*Z3AG0F0' "$WORK/p.out" || fail "$what: no per-layer ZeRO-3 gathers (Z3AG) in the program"
        if [ "$zero" = 3 ]; then
            # The next layer's gather is started while a layer runs: some gathers find theirs
            # done (the first of each pass cannot).
            for r in $(seq 0 $((n - 1))); do
                g=$(grep '"event":"done"' "$WORK/p.out" | grep "\"rank\":$r[,}]" | grep -o '"zero_gathers":[0-9]*' | cut -d: -f2)
                f=$(grep '"event":"done"' "$WORK/p.out" | grep "\"rank\":$r[,}]" | grep -o '"zero_gathers_prefetched":[0-9]*' | cut -d: -f2)
                if [ -n "$g" ] && [ -n "$f" ] && [ "$f" -gt 0 ] && [ "$f" -lt "$g" ]; then
                    pass "$what rank $r: $f of $g gathers were prefetched"
                else
                    fail "$what rank $r: prefetched '$f' of '$g' gathers (expected some, not all)"
                fi
            done
        fi
        check "$what ($((($(date +%s%N) - start) / 1000000)) ms) against one process" "$WORK/p.out" "$WORK/ref.params.json" $PARAM_TOL \
            "$WORK"/p.*.json
        same_tol=2e-6
        [ "$zero" = 1 ] && same_tol=0
        check "$what against the plan without ZeRO" "$WORK/p.out" "$WORK/z0.params.json" $same_tol "$WORK"/p.*.json
    done
done

# Interleaved chunks under ZeRO-3: a chunk's parameter storage is released between its forward
# and its backward (the other chunk runs in between) and gathered again: autograd's saved
# views of the weights find it again. Compared rank by rank with the plan without ZeRO.
ic=(--model gpt2-small --override "layers=4,d_model=32,heads=2,vocab=96,seq_len=8" --global-batch 16 --optimizer adam
    --bucket-bytes 4096 --pp 2 --dp 2 --microbatches 4 --schedule interleaved --virtual-stages 2)
# ZeRO-2 of the same plan reduces the same gradients in the same order (per micro-batch) and
# keeps its parameters: ZeRO-3 must equal it exactly, so releasing and gathering the storage
# changes nothing. Against the plan without ZeRO (one all-reduce per step: another summation
# order, which Adam amplifies on near-zero gradients) the tolerance is the one-process one.
rm -f "$WORK"/i*.json
plan "$WORK/i0.json" "${ic[@]}"
plan "$WORK/i2.json" "${ic[@]}" --zero 2
plan "$WORK/i3.json" "${ic[@]}" --zero 3
if launch "$WORK/i0.json" 4 $STEPS "$WORK/i0.out" --threads 1 --dump-params "$WORK/i0.{rank}.json" &&
   launch "$WORK/i2.json" 4 $STEPS "$WORK/i2.out" --threads 1 --dump-params "$WORK/i2.{rank}.json" &&
   launch "$WORK/i3.json" 4 $STEPS "$WORK/i3.out" --threads 1 --dump-params "$WORK/i3.{rank}.json"; then
    ok=1
    for r in 0 1 2 3; do
        "$ENGINE" compare-params --reference "$WORK/i2.$r.json" --tol 0 "$WORK/i3.$r.json" > "$WORK/cmp.out" \
            || { ok=0; fail "interleaved ZeRO-3 against ZeRO-2, rank $r: $(cat "$WORK/cmp.out")"; }
        "$ENGINE" compare-params "${LOOSE[@]}" --reference "$WORK/i0.$r.json" --tol 5e-5 "$WORK/i3.$r.json" > "$WORK/cmp.out" \
            || { ok=0; fail "interleaved ZeRO-3 against the plan without ZeRO, rank $r: $(cat "$WORK/cmp.out")"; }
    done
    [ $ok = 1 ] && pass "gpt pp2 x dp2 interleaved (2 chunks) ZeRO-3, parameters released between uses: equals ZeRO-2 exactly, and the plan without ZeRO within 5e-5"
else
    fail "interleaved ZeRO runs: $(tail -2 "$WORK/i0.out.err" "$WORK/i2.out.err" "$WORK/i3.out.err" 2>/dev/null)"
fi

# ZeRO-3 with both blocks recomputed: the backward rebuilds each block from its checkpoint with
# the block's parameters gathered (the Recompute's gathers, listed by its Z3AG...R instruction)
# and keeps them for that block's backward, which gathers only the embedding and the head (each
# rank checks its gathers against the program's counts). Equal to ZeRO-2 of the same plan
# exactly, rank by rank, and to one process.
rc=("${common[@]}" --pp 1 --dp 2 --microbatches 2 --schedule 1f1b --recompute 1,2)
rm -f "$WORK"/rc*.json
plan "$WORK/rc2.json" "${rc[@]}" --zero 2
plan "$WORK/rc3.json" "${rc[@]}" --zero 3
if launch "$WORK/rc2.json" 2 $STEPS "$WORK/rc2.out" --threads 1 --dump-params "$WORK/rc2.{rank}.json" &&
   launch "$WORK/rc3.json" 2 $STEPS "$WORK/rc3.out" --threads 1 --dump-params "$WORK/rc3.{rank}.json"; then
    ok=1
    grep -q '"program":"[^"]*Z3AG0R0' "$WORK/rc3.out" || { ok=0; fail "ZeRO-3 recompute: no gathers of the Recompute (Z3AG0R0) in the program"; }
    for r in 0 1; do
        "$ENGINE" compare-params --reference "$WORK/rc2.$r.json" --tol 0 "$WORK/rc3.$r.json" > "$WORK/cmp.out" \
            || { ok=0; fail "recomputed ZeRO-3 against ZeRO-2, rank $r: $(cat "$WORK/cmp.out")"; }
    done
    [ $ok = 1 ] && check "gpt pp1 x dp2 1f1b ZeRO-3, blocks recomputed one at a time (equals ZeRO-2 exactly)" "$WORK/rc3.out" \
        "$WORK/ref.params.json" $PARAM_TOL "$WORK"/rc3.*.json
else
    fail "recomputed ZeRO runs: $(tail -2 "$WORK/rc2.out.err" "$WORK/rc3.out.err" 2>/dev/null)"
fi

# Global-norm clipping under ZeRO-2: the norm is summed over the shards (each element on one
# replica) and the tied copy left out, as without ZeRO: the same norm and parameters.
cc=("${common[@]}" --pp 2 --dp 2 --microbatches 4 --schedule 1f1b)
rm -f "$WORK"/c*.json
plan "$WORK/c0.json" "${cc[@]}"
plan "$WORK/c2.json" "${cc[@]}" --zero 2
if launch "$WORK/c0.json" 4 $STEPS "$WORK/c0.out" --threads 1 --clip-grad-norm 0.5 --dump-params "$WORK/c0.{rank}.json" &&
   launch "$WORK/c2.json" 4 $STEPS "$WORK/c2.out" --threads 1 --clip-grad-norm 0.5 --dump-params "$WORK/c2.{rank}.json"; then
    n0=$(grep -o '"grad_norm":[^,]*' "$WORK/c0.out" | head -1 | cut -d: -f2)
    n2=$(grep -o '"grad_norm":[^,]*' "$WORK/c2.out" | head -1 | cut -d: -f2)
    awk -v a="$n0" -v b="$n2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0.5 && d < 1e-5 * a) }' \
        || fail "ZeRO-2 global gradient norm $n2, without ZeRO $n0"
    ok=1
    for r in 0 1 2 3; do
        "$ENGINE" compare-params "${LOOSE[@]}" --reference "$WORK/c0.$r.json" --tol 2e-6 "$WORK/c2.$r.json" > "$WORK/cmp.out" \
            || { ok=0; fail "clipped ZeRO-2 rank $r: $(cat "$WORK/cmp.out")"; }
    done
    [ $ok = 1 ] && pass "gradient clipping under ZeRO-2: norm $n2 (without ZeRO $n0), parameters match"
else
    fail "clipped runs: $(tail -2 "$WORK/c0.out.err" "$WORK/c2.out.err" 2>/dev/null)"
fi

# ZeRO-3 under zb-h1 is refused by name (the weight pass would gather every layer again).
plan "$WORK/zb3.json" "${common[@]}" --pp 1 --dp 2 --microbatches 2 --schedule zb-h1 --zero 3
if launch "$WORK/zb3.json" 2 1 "$WORK/zb3.out" --threads 1; then
    fail "a zb-h1 ZeRO-3 plan trained"
elif grep -q "ZeRO-3 under the zb-h1 schedule" "$WORK/zb3.out" "$WORK/zb3.out.err"; then
    pass "zb-h1 with ZeRO-3 refused by name"
else
    fail "zb-h1 ZeRO-3: $(tail -2 "$WORK/zb3.out.err")"
fi

# The plan says what runs: the stream printed by each rank has the ZeRO collectives.
"$ENGINE" plan --out "$WORK/z2.json" "${common[@]}" --pp 1 --dp 2 --microbatches 2 --schedule 1f1b --zero 2
grep -q '"zero_stage": 2' "$WORK/z2.json" || fail "the plan file does not record zero_stage 2"

# Checkpoint after 2 steps, resume for the 3rd: the same parameters as 3 steps at once.
ck="$WORK/ck"
rm -f "$WORK"/p.*.json
if launch "$WORK/z2.json" 2 2 "$WORK/c1.out" --threads 1 --checkpoint-dir "$ck" --checkpoint-every 1 &&
   launch "$WORK/z2.json" 2 3 "$WORK/c2.out" --threads 1 --checkpoint-dir "$ck" --resume --dump-params "$WORK/p.{rank}.json"; then
    launch "$WORK/z2.json" 2 3 "$WORK/c3.out" --threads 1 --dump-params "$WORK/whole.{rank}.json" || fail "uninterrupted ZeRO-2 run"
    "$ENGINE" compare-params --reference "$WORK/whole.0.json" --tol 1e-6 "$WORK/p.0.json" > "$WORK/cmp.out" \
        && "$ENGINE" compare-params --reference "$WORK/whole.1.json" --tol 1e-6 "$WORK/p.1.json" >> "$WORK/cmp.out" \
        && pass "ZeRO-2 resumed from a checkpoint matches the uninterrupted run" \
        || fail "ZeRO-2 resume: $(cat "$WORK/cmp.out")"
else
    fail "ZeRO-2 checkpoint/resume runs: $(tail -2 "$WORK/c1.out.err" "$WORK/c2.out.err" 2>/dev/null)"
fi
finish
