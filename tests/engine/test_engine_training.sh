#!/usr/bin/env bash
# Training for real: optimizers with weight decay, warm-up and cosine decay and global-norm
# clipping give one process's parameters on pp2 x dp2; fp16's dynamic loss scaling (on fp32
# here); bf16 mixed precision trains on a CPU with fp32 master weights; token-id files
# (uint16/uint32; the zoo's GPT and BERT, presets gpt-tiny and bert-tiny among them) with a vocabulary check, sharded over replicas so that
# one epoch sees every sample once (with per-stage replication 3-1 too); checkpoints, and a run
# with a rank killed between checkpoints resumes to the uninterrupted run's losses and
# parameters (gpt-tiny, and the zoo's gpt2-small with tied weights across stages on a token file).
source "$(dirname "$0")/lib.sh"
STEPS=4
# close A B TOL: |A - B| < TOL
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < t) }'; }
steps_of() { field "$1" step "$2" | grep -v null; }   # values of KEY in step events with a loss

# ---- optimizers, schedule, clipping: pp2 x dp2 = one process ----------------------------------
# Adam (weight decay as L2) and AdamW (decoupled) divide each gradient by its running magnitude,
# so a parameter whose true gradient is zero (the attention's key bias: softmax ignores it)
# moves by +-lr on rounding noise alone, in either direction: up to the sum of the 4 steps'
# learning rates (0.03) each way. Their fused QKV biases are compared within 0.07, every other
# parameter within 1e-3; sgd-momentum's all within 1e-5. The gradient norm, which clipping
# uses, is compared tightly for all.
TRAIN=(--weight-decay 0.1 --warmup-steps 2 --lr-schedule cosine --lr 0.01 --clip-grad-norm 0.3)
for opt in adamw adam sgd-momentum; do
    tol=1e-5 loose=(); [ $opt != sgd-momentum ] && tol=1e-3 loose=(--loose attn_qkv.bias=0.07)
    plan "$WORK/ref.json" --model gpt-tiny --pp 1 --dp 1 --microbatches 1 --global-batch 16 --optimizer $opt
    launch "$WORK/ref.json" 1 $STEPS "$WORK/ref.out" "${TRAIN[@]}" --dump-params "$WORK/ref.params.json" \
        || { fail "$opt reference: $(tail -2 "$WORK/ref.out")"; continue; }
    rm -f "$WORK"/p.*.json
    plan "$WORK/p.json" --model gpt-tiny --pp 2 --dp 2 --microbatches 4 --global-batch 16 --schedule 1f1b --optimizer $opt --bucket-bytes 4096
    launch "$WORK/p.json" 4 $STEPS "$WORK/p.out" "${TRAIN[@]}" --dump-params "$WORK/p.{rank}.json" \
        || { fail "$opt pp2 x dp2: $(tail -2 "$WORK/p.out")"; continue; }
    if "$ENGINE" compare-params --reference "$WORK/ref.params.json" --tol $tol "$WORK"/p.*.json "${loose[@]}" > "$WORK/cmp.out"; then
        pass "$opt, weight decay, warm-up + cosine, clip 0.3: pp2 x dp2 parameters = one process ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out"))"
    else fail "$opt pp2 x dp2 differs from one process: $(cat "$WORK/cmp.out")"; fi
    ref_norm=$(steps_of "$WORK/ref.out" grad_norm | head -1)
    norm=$(grep '"rank":3' "$WORK/p.out" | grep '"event":"step"' | grep -o '"grad_norm":[^,}]*' | head -1 | cut -d: -f2)
    close "$ref_norm" "$norm" 1e-4 && awk -v n="$norm" 'BEGIN { exit !(n > 0.3) }' \
        && pass "$opt: global gradient norm $norm on rank 3 = one process's $ref_norm (> 0.3, so clipping acted)" \
        || fail "$opt: gradient norm $norm on rank 3, one process $ref_norm"
done
# Learning rates: warm-up 0.005, 0.01, then cosine over the 2 remaining steps: 0.01, 0.005.
lrs=$(field "$WORK/ref.out" step lr | tr '\n' ' ')
[ "$lrs" = "0.005 0.01 0.01 0.005 " ] && pass "learning rates follow warm-up + cosine: $lrs" || fail "learning rates $lrs"

# ---- dynamic loss scaling (fp16's, asked for here on fp32: no CPU runs fp16) ------------------
# A power-of-two scale is exact in fp32: from 2^64 (gradients of this model do not overflow
# it; from 2^127 whether one does depends on how the batch is split) pp2 x dp2 ends with one
# process's parameters, and the losses reported are unscaled. An
# overflow on one rank (HIPPIE_ENGINE_TEST_OVERFLOW, as fp16 would find one) skips that step on
# every rank and halves the scale everywhere.
plan "$WORK/ls1.json" --model gpt-tiny --pp 1 --dp 1 --microbatches 2 --global-batch 16 --optimizer sgd
plan "$WORK/ls4.json" --model gpt-tiny --pp 2 --dp 2 --microbatches 2 --global-batch 16 --schedule 1f1b --optimizer sgd
if launch "$WORK/ls1.json" 1 4 "$WORK/ls1.out" --loss-scale 18446744073709551616 --dump-params "$WORK/ls1.params.json" \
    && launch "$WORK/ls4.json" 4 4 "$WORK/ls4.out" --loss-scale 18446744073709551616 --dump-params "$WORK/ls4.{rank}.json"; then
    "$ENGINE" compare-params --reference "$WORK/ls1.params.json" --tol 1e-5 "$WORK"/ls4.*.json > "$WORK/lscmp.out" \
        && pass "loss scale 2^64: pp2 x dp2 parameters = one process's ($(grep -o '"max_abs_diff":[^,]*' "$WORK/lscmp.out"))" \
        || fail "loss scaling parameters: $(cat "$WORK/lscmp.out")"
    awk -v l="$(field "$WORK/ls1.out" done loss)" 'BEGIN { exit !(l > 0 && l < 10) }' \
        && pass "loss scaling: the losses reported are unscaled ($(field "$WORK/ls1.out" done loss))" || fail "scaled loss reported: $(field "$WORK/ls1.out" done loss)"
else fail "loss scaling runs: $(tail -2 "$WORK/ls4.out")"; fi
if HIPPIE_ENGINE_TEST_OVERFLOW=2:1 launch "$WORK/ls4.json" 4 4 "$WORK/lsi.out" --loss-scale 1024 --dump-params "$WORK/lsi.{rank}.json"; then
    /usr/bin/python3 - "$WORK/lsi.out" <<'PY' && pass "an overflow on rank 2 in step 1: $(cat "$WORK/ls.msg")" || fail "overflow: $(cat "$WORK/ls.msg")"
import json, sys
ranks = {}
for e in (json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")):
    if e.get("event") == "step": ranks.setdefault(e["rank"], []).append((e["loss_scale"], e["skipped"]))
want = [(1024, False), (1024, True), (512, False), (512, False)]
ok = sorted(ranks) == [0, 1, 2, 3] and all(v == want for v in ranks.values())
open(sys.argv[1].rsplit("/", 1)[0] + "/ls.msg", "w").write("every rank skipped it and went on at scale 512" if ok else f"(scale, skipped) by rank {ranks}")
sys.exit(0 if ok else 1)
PY
else fail "overflow run: $(tail -2 "$WORK/lsi.out")"; fi

# ---- bf16 mixed precision on a CPU ------------------------------------------------------------
# On a token file where each id follows the one before (learnable from one token), bf16 learns
# as fp32 does: the loss falls by more than 0.5 in 8 steps, within 0.02 of fp32's every step.
/usr/bin/python3 -c 'import struct, sys; n = 64 * 17 + 1; open(sys.argv[1], "wb").write(struct.pack("<%dH" % n, *[i % 64 for i in range(n)]))' "$WORK/seq.bin"
plan "$WORK/bf.json" --model gpt-tiny --pp 2 --dp 1 --microbatches 2 --global-batch 8 --optimizer adam --precision bf16
plan "$WORK/f32.json" --model gpt-tiny --pp 2 --dp 1 --microbatches 2 --global-batch 8 --optimizer adam
if launch "$WORK/bf.json" 2 8 "$WORK/bf.out" --lr 0.01 --data "$WORK/seq.bin" && launch "$WORK/f32.json" 2 8 "$WORK/f32.out" --lr 0.01 --data "$WORK/seq.bin"; then
    losses=$(steps_of "$WORK/bf.out" loss)
    first=$(echo "$losses" | head -1); last=$(echo "$losses" | tail -1)
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' && pass "bf16 pp2 trains: loss $first -> $last" || fail "bf16 loss $first -> $last"
    paste <(echo "$losses") <(steps_of "$WORK/f32.out" loss) | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d; n++ } END { print n, m; exit !(n == 8 && m < 0.02) }' > "$WORK/bfd" \
        && pass "bf16 losses within 0.02 of fp32's each step (8 steps, largest difference $(cut -d' ' -f2 "$WORK/bfd"))" || fail "bf16 against fp32 losses: $(cat "$WORK/bfd")"
    dt=$(grep '"event":"done"' "$WORK/bf.out" | grep -o '"param_dtypes":\[[^]]*\]' | sort -u | tr '\n' ' ')
    [ "$dt" = '"param_dtypes":["Float"] ' ] && pass "bf16 keeps fp32 master weights: $dt" || fail "bf16 parameter dtypes: $dt"
    grep -q '"precision":"bf16"' "$WORK/bf.out" || fail "setup does not say bf16"
    # The measured step time leaves the warm-up out (planners/common/warmup.h): the mean of
    # steps 3..7 of each rank, which the done event says it left out.
    python3 - "$WORK/bf.out" <<'PY' && pass "done's mean_step_s is the mean of steps 3-7 (warm-up 0-2 left out)" || fail "done's mean step time"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for rank in (0, 1):
    steps = [e["time_s"] for e in ev if e.get("event") == "step" and e["rank"] == rank]
    done = next(e for e in ev if e.get("event") == "done" and e["rank"] == rank)
    want = sum(steps[3:]) / len(steps[3:])
    if len(steps) != 8 or done["warmup_steps"] != 3 or abs(done["mean_step_s"] - want) > 1e-9 * want:
        sys.exit(f"rank {rank}: {len(steps)} steps, warmup_steps {done.get('warmup_steps')}, mean {done['mean_step_s']} != {want}")
PY
else fail "bf16 run: $(tail -2 "$WORK/bf.out")"; fi
plan "$WORK/fp16.json" --model gpt-tiny --pp 1 --dp 1 --microbatches 1 --global-batch 8 --precision fp16
launch "$WORK/fp16.json" 1 1 "$WORK/fp16.out" --device cpu
[ $? -ne 0 ] && grep -q 'exit_code":2,"message":"the plan.s precision fp16 needs a CUDA device\|exited with code 2: the plan.s precision fp16 needs' "$WORK/fp16.out" \
    && pass "fp16 on a CPU: the rank exits 2, says to use bf16" || fail "fp16 on CPU: $(tail -1 "$WORK/fp16.out")"

# ---- token-id files ---------------------------------------------------------------------------
# gpt-tiny: vocabulary 64, 16 tokens a sample (17 ids). 32 samples = 2 epochs of 2 steps at global batch 16.
python3 - "$WORK" <<'PY'
import struct, sys, random
w = sys.argv[1]; random.seed(1); n = 32 * 16 + 1
ids = [random.randrange(64) for _ in range(n)]
open(w + "/tok16.bin", "wb").write(struct.pack("<%dH" % n, *ids))
open(w + "/tok32.bin", "wb").write(struct.pack("<%dI" % n, *ids))
bad = list(ids); bad[100] = 64
open(w + "/bad.bin", "wb").write(struct.pack("<%dH" % n, *bad))
PY
plan "$WORK/t.json" --model gpt-tiny --pp 1 --dp 2 --microbatches 1 --global-batch 16 --optimizer adam
if launch "$WORK/t.json" 2 4 "$WORK/t.out" --data "$WORK/tok16.bin" --log-samples; then
    for epoch in 0 1; do
        got=$(grep '"event":"step"' "$WORK/t.out" | grep -E "\"step\":($((2 * epoch))|$((2 * epoch + 1))),"  | grep -o '"samples":\[[^]]*\]' \
              | tr -d '"samples:[]' | tr ',' '\n' | sort -n | tr '\n' ' ')
        [ "$got" = "$(seq 0 31 | tr '\n' ' ')" ] && pass "epoch $epoch: the replicas' samples are a permutation of 0..31" \
            || fail "epoch $epoch samples: $got"
    done
    r0=$(grep '"rank":0' "$WORK/t.out" | grep '"step":0,' | grep -o '"samples":\[[^]]*\]')
    r1=$(grep '"rank":1' "$WORK/t.out" | grep '"step":0,' | grep -o '"samples":\[[^]]*\]')
    [ "$r0" != "$r1" ] && pass "replicas take different samples" || fail "replicas see the same samples: $r0"
    e0=$(grep '"rank":0' "$WORK/t.out" | grep '"step":0,' | grep -o '"samples":\[[^]]*\]')
    e1=$(grep '"rank":0' "$WORK/t.out" | grep '"step":2,' | grep -o '"samples":\[[^]]*\]')
    [ "$e0" != "$e1" ] && pass "each epoch has its own order" || fail "epochs 0 and 1 in the same order"
    launch "$WORK/t.json" 2 4 "$WORK/t32.out" --data "$WORK/tok32.bin" --token-dtype uint32
    [ "$(field "$WORK/t32.out" done loss | grep -v null)" = "$(field "$WORK/t.out" done loss | grep -v null)" ] \
        && pass "uint32 ids train as the same uint16 ids" || fail "uint32 file: $(tail -1 "$WORK/t32.out")"
else fail "token file run: $(tail -2 "$WORK/t.out")"; fi
# The zoo's GPT and BERT read the same files (vocabulary 64, 16 tokens a sample): gpt2-small
# on pp2 x dp2 (one epoch's two steps take all 32 samples over the two replicas), and both models train on
# the file's ids, not on their synthetic data (a different first loss).
ZGPT=layers=2,d_model=32,heads=2,seq_len=16,positions=16,vocab=64
plan "$WORK/zt.json" --model gpt2-small --override "$ZGPT" --pp 2 --dp 2 --microbatches 2 --global-batch 16 --schedule 1f1b
if launch "$WORK/zt.json" 4 2 "$WORK/zt.out" --data "$WORK/tok16.bin" --log-samples; then
    got=$(grep '"event":"step"' "$WORK/zt.out" | grep -o '"samples":\[[^]]*\]' | tr -d '"samples:[]' | tr ',' '\n' | sort -nu | tr '\n' ' ')
    [ "$got" = "$(seq 0 31 | tr '\n' ' ')" ] && pass "zoo gpt2-small pp2 x dp2 on a token file: the epoch's two steps take all 32 samples" \
        || fail "zoo gpt2-small token samples: $got"
else fail "zoo gpt2-small token file run: $(tail -2 "$WORK/zt.out")"; fi
for zoo in "gpt2-small $ZGPT" "bert-base layers=2,d_model=32,heads=2,seq_len=16,positions=16,vocab=64"; do
    set -- $zoo
    plan "$WORK/z1.json" --model "$1" --override "$2" --pp 1 --dp 1 --microbatches 1 --global-batch 16
    launch "$WORK/z1.json" 1 1 "$WORK/z1.out" --data "$WORK/tok16.bin" && launch "$WORK/z1.json" 1 1 "$WORK/z1s.out" \
        || { fail "zoo $1 token file: $(tail -2 "$WORK/z1.out")"; continue; }
    file_loss=$(field "$WORK/z1.out" done loss | grep -v null); syn_loss=$(field "$WORK/z1s.out" done loss | grep -v null)
    [ -n "$file_loss" ] && [ "$file_loss" != "$syn_loss" ] && pass "zoo $1 trains on the token file (loss $file_loss, synthetic $syn_loss)" \
        || fail "zoo $1: token-file loss '$file_loss', synthetic '$syn_loss'"
done
launch "$WORK/z1.json" 1 1 "$WORK/zbad.out" --data "$WORK/bad.bin"
grep -q "bad.bin': token id 64 at offset 100 (byte 200) is not below the model's vocabulary of 64" "$WORK/zbad.out" \
    && pass "zoo bert-base: an id beyond its vocabulary is named" || fail "zoo bad id: $(grep -o '"message":"[^"]*' "$WORK/zbad.out" | head -1)"
# Per-stage replication (3-1): micro-batch m runs on replica m mod 3 of stage 0, and the
# one-device stage 1 runs all of them: over an epoch (24 samples, 2 steps of 12) the three
# replicas' samples are a permutation of 0..23, and stage 1's each step are the step's 12. On
# the MLP: a GPT's stages share its tied embedding, so they must have the same replicas.
"$ENGINE" make-data --model mlp-tiny --samples 24 --out "$WORK/mlp24.data" > /dev/null
plan "$WORK/sr.json" --model mlp-tiny --pp 2 --dp 3 --stage-replicas 3,1 --microbatches 1 --global-batch 12 --schedule 1f1b
if launch "$WORK/sr.json" 4 2 "$WORK/sr.out" --data "$WORK/mlp24.data" --log-samples; then
    samples() { grep '"event":"step"' "$WORK/sr.out" | grep -E "$1" | grep -o '"samples":\[[^]]*\]' | tr -d '"samples:[]' | tr ',' '\n' | sort -n | tr '\n' ' '; }
    got=$(samples '"rank":[012],')
    [ "$got" = "$(seq 0 23 | tr '\n' ' ')" ] && pass "3-1 per-stage replicas: stage 0's three replicas take each of the epoch's 24 samples once" \
        || fail "3-1 stage 0 samples: $got"
    s0=$(samples '"rank":3,.*"step":0,|"step":0,.*"rank":3,'); s1=$(samples '"rank":3,.*"step":1,|"step":1,.*"rank":3,')
    [ "$(echo $s0 $s1 | tr ' ' '\n' | sort -n | tr '\n' ' ')" = "$(seq 0 23 | tr '\n' ' ')" ] && [ "$(echo $s0 | wc -w)" = 12 ] \
        && pass "3-1 per-stage replicas: the one-device stage runs the step's 12 samples" || fail "3-1 stage 1 samples: $s0 / $s1"
else fail "3-1 per-stage run: $(tail -2 "$WORK/sr.out")"; fi
launch "$WORK/t.json" 2 1 "$WORK/bad.out" --data "$WORK/bad.bin"
grep -q "bad.bin': token id 64 at offset 100 (byte 200) is not below the model's vocabulary of 64" "$WORK/bad.out" \
    && pass "an id beyond the vocabulary: file, offset and id named" || fail "bad id: $(grep -o '"message":"[^"]*' "$WORK/bad.out" | head -1)"
launch "$WORK/t.json" 2 1 "$WORK/odd.out" --data "$WORK/tok16.bin" --token-dtype uint32
grep -q 'tok16.bin.*not a whole number of uint32 ids\|tok16.bin.*not below' "$WORK/odd.out" \
    && pass "uint16 file read as uint32: refused" || fail "wrong dtype: $(grep -o '"message":"[^"]*' "$WORK/odd.out" | head -1)"

# ---- checkpoints: a rank killed between checkpoints, then --resume ----------------------------
# kill_and_resume NAME PLAN EXTRA_RUN_ARGS...: PLAN on 4 ranks for 6 steps, uninterrupted and
# with rank 3 killed in step 3 (checkpoints every 2 steps), then resumed: the resumed run's
# losses of steps 2-5 and final parameters equal the uninterrupted run's exactly.
kill_and_resume() {
    local name="$1" plan_file="$2"; shift 2
    local RUN=(--weight-decay 0.01 --warmup-steps 2 --lr-schedule cosine --clip-grad-norm 1 "$@")
    local ck="$WORK/ck-${name// /-}"  # --rank-args splits at spaces
    rm -f "$WORK"/full.*.json "$WORK"/res.*.json
    launch "$plan_file" 4 6 "$WORK/full.out" "${RUN[@]}" --dump-params "$WORK/full.{rank}.json" || fail "$name uninterrupted run: $(tail -1 "$WORK/full.out")"
    HIPPIE_ENGINE_TEST_KILL=3:3 launch "$plan_file" 4 6 "$WORK/cut.out" "${RUN[@]}" --checkpoint-dir "$ck" --checkpoint-every 2
    local code=$?
    [ $code -ne 0 ] && pass "$name: rank 3 killed in step 3: the run fails (exit $code)" || fail "$name: the run with a killed rank succeeded"
    ls "$ck"/rank-*/step-1.pt > /dev/null 2>&1 && ! ls "$ck"/rank-*/step-3.pt > /dev/null 2>&1 \
        && pass "$name: every rank checkpointed step 1, none step 3" || fail "$name checkpoints: $(ls -R "$ck" | tr '\n' ' ')"
    ls "$ck"/rank-*/*.tmp > /dev/null 2>&1 && fail "$name: a temporary checkpoint file was left"
    launch "$plan_file" 4 6 "$WORK/res.out" "${RUN[@]}" --checkpoint-dir "$ck" --checkpoint-every 2 --resume --dump-params "$WORK/res.{rank}.json" \
        || fail "$name resume: $(tail -2 "$WORK/res.out")"
    grep -q '"resumed_from":{"samples_seen":16,"step":1}' "$WORK/res.out" && pass "$name: resumed after step 1 (16 samples seen)" \
        || fail "$name resume point: $(grep -o '"resumed_from":[^}]*}' "$WORK/res.out" | head -1)"
    local want got
    want=$(grep '"event":"step"' "$WORK/full.out" | grep -v '"loss":null' | grep -E '"step":[2-5],' | grep -o '"step":[0-9]*\|"loss":[^,}]*' | paste - - | sort -u)
    got=$(grep '"event":"step"' "$WORK/res.out" | grep -v '"loss":null' | grep -o '"step":[0-9]*\|"loss":[^,}]*' | paste - - | sort -u)
    [ -n "$got" ] && [ "$got" = "$want" ] && pass "$name: resumed losses of steps 2-5 equal the uninterrupted run's exactly" \
        || fail "$name: resumed losses differ: got [$got] want [$want]"
    python3 -c "
import json
p = {}
for r in range(4): p.update(json.load(open('$WORK/full.%d.json' % r))['params'])
json.dump({'rank': 0, 'params': p}, open('$WORK/full.json', 'w'))"
    "$ENGINE" compare-params --reference "$WORK/full.json" --tol 0 "$WORK"/res.*.json > "$WORK/cmp.out" \
        && pass "$name: resumed final parameters equal the uninterrupted run's ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out"))" \
        || fail "$name: resumed parameters: $(cat "$WORK/cmp.out")"
}
plan "$WORK/c.json" --model gpt-tiny --pp 2 --dp 2 --microbatches 2 --global-batch 8 --schedule 1f1b --optimizer adamw
kill_and_resume gpt-tiny "$WORK/c.json"
# The zoo's gpt2-small (its embedding and LM head tied across the two stages) on a token file:
# 32 samples are 4 steps of 8, so the resumed run crosses into the second epoch's order.
plan "$WORK/zc.json" --model gpt2-small --override "$ZGPT" --pp 2 --dp 2 --microbatches 2 --global-batch 8 --schedule 1f1b --optimizer adamw
kill_and_resume "zoo gpt2-small on a token file" "$WORK/zc.json" --data "$WORK/tok16.bin"
launch "$WORK/c.json" 4 6 "$WORK/nock.out" --checkpoint-dir "$WORK/empty" --resume
grep -q 'no checkpoint that every rank has' "$WORK/nock.out" && pass "--resume without checkpoints: refused" || fail "resume without checkpoints: $(tail -1 "$WORK/nock.out")"
finish
