#!/usr/bin/env bash
# Tensor parallelism (Plan::tp, Megatron-LM) trains as one process does: a GPT at a reduced size
# (2 blocks, d_model 64, 4 heads, 16 tokens, a vocabulary of 96) split over 2 tensor-parallel
# ranks, alone (t2), with 2 pipeline stages (t2 x pp2: 4 ranks, the embedding and the tied LM
# head on different stages, both split by vocabulary; 1f1b, zb-h1 whose weight pass reuses the
# input pass's collectives, and interleaved with 2 chunks a device), with recomputed blocks
# (their collectives run again in Recompute), with selective recomputation (the attention cores'
# scores and probabilities recomputed inside backward: t2, and t2 x pp2 beside a block
# recomputed whole; and in one process against the same process without it), with 2 data-parallel replicas under ZeRO 1, 2 and
# 3 (t2 x dp2, hippie: the last backward runs in bucket parts), and with sequence parallelism
# (alone and with 2 stages: the stage boundary carries each rank's half of the sequence), and with per-stage
# degrees (t(1,2,1) and t(2,1,2) over 3 stages, and t(1,2,1) x dp2 under ZeRO-1), gives
# the losses and the final parameters of one process (fp32, SGD with momentum, 1e-5), the ranks'
# slices gathered into whole tensors by --dump-params. With gradient clipping (sequence parallel,
# and ZeRO-2), the global gradient norm is one process's too (whole parameters counted once over
# the tp group). A BERT and a Transformer at reduced sizes train the same at t2, with sequence
# parallelism too (the BERT alone and with 2 stages). A t2 x dp2 ZeRO-2 run checkpointed and
# resumed ends where the uninterrupted run does.
# Every rank checks that the collectives its layers ran are those the Program's TensorParallel
# instructions list (else the run fails), and the measured trace holds TensorParallel events.
# Then the refusals: a tp that does not divide the heads (the planner's check, at plan time) and
# one that does not divide the MLP width and vocabulary (the engine's, at load, naming them).
# Usage: test_engine_tp_equivalence.sh ENGINE
source "$(dirname "$0")/lib.sh"
STEPS=3
GPT="layers=2,d_model=64,heads=4,vocab=96,seq_len=16"
BERT="layers=2,d_model=64,heads=4,vocab=96,seq_len=16"
TRANSFORMER="layers=1,d_model=64,heads=4,d_ff=128,vocab=96,seq_len=16"
EXTRA=()  # more arguments for every rank (the reference's too)
TOL=1e-5
common=(--global-batch 8 --optimizer sgd-momentum --bucket-bytes 8192)

reference() {  # NAME MODEL OVERRIDES
    plan "$WORK/$1.ref.json" --model "$2" --override "$3" "${common[@]}" --pp 1 --dp 1 --microbatches 1 --schedule 1f1b
    launch "$WORK/$1.ref.json" 1 $STEPS "$WORK/$1.ref.out" --threads 1 "${EXTRA[@]}" --dump-params "$WORK/$1.ref.params.json" \
        || fail "$1 reference run: $(tail -2 "$WORK/$1.ref.out.err")"
}

# run NAME REF MODEL OVERRIDES NPROCS PLAN-ARGS...: trains the plan, compares with the reference
run() {
    local name="$1" ref="$2" model="$3" ov="$4" n="$5"; shift 5
    local what="$model $name" start ref_loss loss
    rm -f "$WORK"/p.*.json
    plan "$WORK/p.json" --model "$model" --override "$ov" "${common[@]}" "$@" || return
    start=$(date +%s%N)
    if ! launch "$WORK/p.json" "$n" $STEPS "$WORK/p.out" --threads 1 "${EXTRA[@]}" --dump-params "$WORK/p.{rank}.json"; then
        fail "$what: $(grep -h '"event":"error"' "$WORK/p.out" | head -1) $(tail -2 "$WORK/p.out.err")"
        return
    fi
    local ms=$((($(date +%s%N) - start) / 1000000))
    grep -q '"program":"[^"]*TP' "$WORK/p.out" || fail "$what: no TensorParallel instruction in the program the ranks ran"
    grep -q '"kind":"tensor-parallel"' "$WORK/p.out" || fail "$what: no TensorParallel event in the measured trace"
    ref_loss=$(field "$WORK/$ref.ref.out" done loss)
    loss=$(field "$WORK/p.out" done loss | grep -v null | sort -u)
    [ "$(echo "$loss" | wc -l)" = 1 ] || fail "$what: the ranks report different losses: $(echo $loss)"
    loss=$(echo "$loss" | head -1)
    if "$ENGINE" compare-params --reference "$WORK/$ref.ref.params.json" --tol $TOL "$WORK"/p.*.json > "$WORK/cmp.out"; then
        pass "$what ($ms ms): parameters match ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out")), loss $loss vs $ref_loss"
    else
        fail "$what: $(cat "$WORK/cmp.out")"
    fi
    same_losses "$WORK/$ref.ref.out" "$WORK/p.out" "$TOL" > "$WORK/losses.out" 2>&1 || fail "$what: $(cat "$WORK/losses.out")"
    if [ ${#EXTRA[@]} -gt 0 ]; then  # clipping: every rank's first gradient norm is one process's
        local want got norms
        want=$(grep -o '"grad_norm":[^,]*' "$WORK/$ref.ref.out" | head -1 | cut -d: -f2)
        norms=$(grep '"step":0' "$WORK/p.out" | grep -o '"grad_norm":[^,]*' | cut -d: -f2)
        [ "$(echo "$norms" | grep -c .)" = "$n" ] || fail "$what: $(echo "$norms" | grep -c .) ranks report a gradient norm, not $n"
        for got in $norms; do
            awk -v a="$want" -v b="$got" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0.5 && d < 1e-5 * a) }' \
                || fail "$what: gradient norm $got, one process $want"
        done
    fi
}

reference gpt gpt2-small "$GPT"
# Selective recomputation in one process: the losses and parameters of the same run without.
plan "$WORK/sel.json" --model gpt2-small --override "$GPT" "${common[@]}" --pp 1 --dp 1 --microbatches 1 --schedule 1f1b \
    --selective-recompute
if launch "$WORK/sel.json" 1 $STEPS "$WORK/sel.out" --threads 1 --dump-params "$WORK/sel.params.json"; then
    grep -q '"program":"[^"]*0R0' "$WORK/sel.out" || fail "selective recomputation: no Recompute instruction in the program run"
    if "$ENGINE" compare-params --reference "$WORK/gpt.ref.params.json" --tol $TOL "$WORK/sel.params.json" > "$WORK/cmp.out" &&
       awk -v a="$(field "$WORK/gpt.ref.out" done loss)" -v b="$(field "$WORK/sel.out" done loss)" -v t=$TOL \
           'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < t) }'; then
        pass "gpt2-small selective recomputation, one process: parameters match ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out")), loss $(field "$WORK/sel.out" done loss)"
    else
        fail "gpt2-small selective recomputation, one process: $(cat "$WORK/cmp.out"), loss $(field "$WORK/sel.out" done loss) vs $(field "$WORK/gpt.ref.out" done loss)"
    fi
else
    fail "selective recomputation run: $(tail -2 "$WORK/sel.out.err")"
fi
run "t2" gpt gpt2-small "$GPT" 2 --pp 1 --dp 1 --tp 2 --microbatches 2 --schedule 1f1b
run "t2 x pp2 (1f1b)" gpt gpt2-small "$GPT" 4 --pp 2 --dp 1 --tp 2 --microbatches 4 --schedule 1f1b
run "t2 x pp2 (zb-h1)" gpt gpt2-small "$GPT" 4 --pp 2 --dp 1 --tp 2 --microbatches 4 --schedule zb-h1
run "t2 x pp2 (interleaved, 2 chunks)" gpt gpt2-small "$GPT" 4 --pp 2 --dp 1 --tp 2 --microbatches 4 --schedule interleaved --virtual-stages 2
run "t2 recomputing the blocks" gpt gpt2-small "$GPT" 2 --pp 1 --dp 1 --tp 2 --microbatches 2 --schedule 1f1b --recompute 1,2
run "t2 selective recomputation" gpt gpt2-small "$GPT" 2 --pp 1 --dp 1 --tp 2 --microbatches 2 --schedule 1f1b --selective-recompute
run "t2 x pp2 selective recomputation, block 1 recomputed whole" gpt gpt2-small "$GPT" 4 --pp 2 --dp 1 --tp 2 --microbatches 4 \
    --schedule 1f1b --selective-recompute --recompute 1
for zero in 1 2 3; do
    run "t2 x dp2 ZeRO-$zero (hippie)" gpt gpt2-small "$GPT" 4 --pp 1 --dp 2 --tp 2 --microbatches 2 --schedule hippie --zero $zero
done
run "t2 sequence parallel" gpt gpt2-small "$GPT" 2 --pp 1 --dp 1 --tp 2 --sequence-parallel --microbatches 2 --schedule 1f1b
run "t2 sequence parallel x pp2" gpt gpt2-small "$GPT" 4 --pp 2 --dp 1 --tp 2 --sequence-parallel --microbatches 4 --schedule 1f1b
# Per-stage degrees (stage_tp): rank k of a stage takes its input from rank k mod t of the
# other, so a one-rank stage sends each activation (and each gradient) to both ranks of a
# two-rank one. The embedding and the LM head share their table: the same degree on both.
run "t(1,2,1) x pp3 (1f1b)" gpt gpt2-small "$GPT" 4 --pp 3 --stage-tp 1,2,1 --microbatches 4 --schedule 1f1b
run "t(2,1,2) x pp3 (zb-h1)" gpt gpt2-small "$GPT" 5 --pp 3 --stage-tp 2,1,2 --microbatches 4 --schedule zb-h1
run "t(1,2,1) x pp3 x dp2 ZeRO-1 (hippie)" gpt gpt2-small "$GPT" 8 --pp 3 --dp 2 --stage-tp 1,2,1 --microbatches 2 --schedule hippie --zero 1

reference bert bert-base "$BERT"
run "t2" bert bert-base "$BERT" 2 --pp 1 --dp 1 --tp 2 --microbatches 2 --schedule 1f1b
# BERT's pooler reads the first token, on tp rank 0 alone under sequence parallelism.
run "t2 sequence parallel" bert bert-base "$BERT" 2 --pp 1 --dp 1 --tp 2 --sequence-parallel --microbatches 2 --schedule 1f1b
run "t2 sequence parallel x pp2" bert bert-base "$BERT" 4 --pp 2 --dp 1 --tp 2 --sequence-parallel --microbatches 4 --schedule 1f1b
reference transformer transformer-big "$TRANSFORMER"
run "t2" transformer transformer-big "$TRANSFORMER" 2 --pp 1 --dp 1 --tp 2 --microbatches 2 --schedule 1f1b
# Two sequences, each split; the decoder's cross-attention all-gathers the encoder's output.
run "t2 sequence parallel" transformer transformer-big "$TRANSFORMER" 2 --pp 1 --dp 1 --tp 2 --sequence-parallel --microbatches 2 \
    --schedule 1f1b

EXTRA=(--clip-grad-norm 0.5)
reference gptclip gpt2-small "$GPT"
run "t2 sequence parallel, clipped to norm 0.5" gptclip gpt2-small "$GPT" 2 --pp 1 --dp 1 --tp 2 --sequence-parallel --microbatches 2 --schedule 1f1b
run "t2 x dp2 ZeRO-2, clipped to norm 0.5" gptclip gpt2-small "$GPT" 4 --pp 1 --dp 2 --tp 2 --microbatches 2 --schedule 1f1b --zero 2
EXTRA=()

# Checkpoint after 2 steps, resume for the 3rd (t2 x dp2 ZeRO-2): each rank restores its own
# slices and its shards' optimizer state; the same parameters as 3 steps at once.
ck=(--model gpt2-small --override "$GPT" "${common[@]}" --pp 1 --dp 2 --tp 2 --microbatches 2 --schedule 1f1b --zero 2)
plan "$WORK/ck.json" "${ck[@]}"
rm -f "$WORK"/p.*.json "$WORK"/w.*.json
if launch "$WORK/ck.json" 4 2 "$WORK/c1.out" --threads 1 --checkpoint-dir "$WORK/ck" --checkpoint-every 1 &&
   launch "$WORK/ck.json" 4 3 "$WORK/c2.out" --threads 1 --checkpoint-dir "$WORK/ck" --resume --dump-params "$WORK/p.{rank}.json" &&
   launch "$WORK/ck.json" 4 3 "$WORK/c3.out" --threads 1 --dump-params "$WORK/w.{rank}.json"; then
    ok=1
    for r in 0 1 2 3; do
        "$ENGINE" compare-params --reference "$WORK/w.$r.json" --tol 1e-6 "$WORK/p.$r.json" > "$WORK/cmp.out" \
            || { ok=0; fail "t2 x dp2 ZeRO-2 resumed, rank $r: $(cat "$WORK/cmp.out")"; }
    done
    [ $ok = 1 ] && pass "gpt2-small t2 x dp2 ZeRO-2 resumed from a checkpoint matches the uninterrupted run"
else
    fail "t2 checkpoint/resume runs: $(grep -h '"event":"error"' "$WORK"/c[123].out | head -1)"
fi

# Refusals. Per-stage degrees that split the tied embedding and LM head differently.
if "$ENGINE" plan --out "$WORK/bad.json" --model gpt2-small --override "$GPT" "${common[@]}" --pp 2 --stage-tp 2,1 > "$WORK/bad.out" 2>&1; then
    fail "a plan of stage_tp 2,1 splitting the tied embedding and head differently was written"
else
    grep -q "share a tied weight" "$WORK/bad.out" \
        && pass "stage_tp 2,1 across the tied embedding and head refused at plan time: $(grep -o '"message":"[^"]*' "$WORK/bad.out" | cut -c12-220)" \
        || fail "stage_tp 2,1: unclear message $(cat "$WORK/bad.out")"
fi
# The planner: tp 3 does not divide 4 heads.
if "$ENGINE" plan --out "$WORK/bad.json" --model gpt2-small --override "$GPT" "${common[@]}" --pp 1 --tp 3 > "$WORK/bad.out" 2>&1; then
    fail "a plan of tp 3 over 4 heads was written"
else
    grep -q "field 'tp'" "$WORK/bad.out" && grep -q "heads" "$WORK/bad.out" \
        && pass "tp 3 over 4 heads refused at plan time: $(grep -o '"message":"[^"]*' "$WORK/bad.out" | cut -c12-200)" \
        || fail "tp 3 over 4 heads: unclear message $(cat "$WORK/bad.out")"
fi
# The engine: 6 heads take tp 3, but d_ff 256 and the vocabulary 128 do not split in 3.
plan "$WORK/bad.json" --model gpt2-small --override "layers=1,d_model=48,heads=6,d_ff=256,vocab=128,seq_len=12" "${common[@]}" --pp 1 --tp 3
if launch "$WORK/bad.json" 3 1 "$WORK/bad.run"; then
    fail "a tp 3 plan over d_ff 256 and vocabulary 128 trained"
else
    grep -q "tensor parallelism tp 3 does not divide the MLP width d_ff (256), the vocabulary (128)" "$WORK/bad.run" \
        && pass "tp 3 over d_ff 256 and vocabulary 128 refused at load: $(grep -o '"message":"[^"]*' "$WORK/bad.run" | head -1 | cut -c12-300)" \
        || fail "tp 3 over d_ff 256, vocabulary 128: unclear refusal $(grep '"event":"error"' "$WORK/bad.run" | head -1)"
fi
finish
