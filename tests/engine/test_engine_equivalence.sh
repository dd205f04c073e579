#!/usr/bin/env bash
# Pipeline (pp 2) x data parallel (dp 2) training under one schedule gives the losses and
# parameters of one process training the same model on the same data (fp32, SGD, 1e-5), for
# a GPT and an MLP. gpipe, 1f1b and hippie also run 2 stages x 1 replica, and train a ResNet
# and a BERT as 2 x 2, the MLP with per-stage replication (3-1, 1-3, 2-3) and the GPT (with
# dropout) as 1-2-1; hippie also recomputes layers; interleaved runs 2 chunks per device.
#
# The ResNet's BatchNorm normalises each micro-batch by its own statistics, so its reference is
# one process with the same micro-batch size (global batch 16 in 8 micro-batches of 2 = the
# 2 x 2 plan's 2 replicas x 4 micro-batches of 2), not one batch of 16. Parameters and loss
# then match; the running statistics (buffers, not compared) do not: each replica updates its
# own from its own micro-batches, and nothing averages them. Every run uses one CPU thread a rank,
# as the reference would otherwise round differently (see test_engine_zoo_equivalence.sh).
#
# Every rank also reports whether its links are received in the order they are sent
# (link_order_ok), which NCCL needs (it matches transfers by order, not tag): checked here on
# Gloo for every schedule, so the CUDA path never meets a program it would refuse.
# Usage: test_engine_equivalence.sh ENGINE SCHEDULE
source "$(dirname "$0")/lib.sh"
SCHEDULE="$2"
STEPS=3
models=(gpt-tiny mlp-tiny)
# check_run WHAT NPROCS: launches $WORK/p.json on NPROCS ranks and compares its parameters, every
# step's loss and link order with the reference run ($WORK/ref.out, $WORK/ref.params.json).
check_run() {
    local what="$1" n="$2"
    rm -f "$WORK"/p.*.json
    if ! launch "$WORK/p.json" "$n" $STEPS "$WORK/p.out" --threads 1 --dump-params "$WORK/p.{rank}.json"; then
        fail "$what: $(tail -2 "$WORK/p.out")"
        return
    fi
    local order ref_loss loss
    order=$(field "$WORK/p.out" setup link_order_ok | sort -u | tr '\n' ' ')
    ref_loss=$(field "$WORK/ref.out" done loss)
    loss=$(field "$WORK/p.out" done loss | grep -v null | sort -u | head -1)
    if "$ENGINE" compare-params --reference "$WORK/ref.params.json" --tol 1e-5 "$WORK"/p.*.json > "$WORK/cmp.out"; then
        pass "$what: parameters match ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out")), loss $loss vs $ref_loss, link order ok: $order"
    else
        fail "$what: $(cat "$WORK/cmp.out")"
    fi
    [ "$order" = "true " ] || fail "$what: a link is received out of its send order ($order), which NCCL cannot run"
    same_losses "$WORK/ref.out" "$WORK/p.out" 1e-5 > "$WORK/losses.out" 2>&1 || fail "$what: $(cat "$WORK/losses.out")"
}
case "$SCHEDULE" in gpipe|1f1b|hippie) models+=(resnet-tiny bert-tiny) ;; esac
for model in "${models[@]}"; do
    ref_mb=1
    [ "$model" = resnet-tiny ] && ref_mb=8
    plan "$WORK/ref.json" --model "$model" --pp 1 --dp 1 --microbatches $ref_mb --global-batch 16 --schedule 1f1b --optimizer sgd
    launch "$WORK/ref.json" 1 $STEPS "$WORK/ref.out" --threads 1 --dump-params "$WORK/ref.params.json" || fail "$model reference run: $(tail -2 "$WORK/ref.out")"
    [ "$model" = mlp-tiny ] && cp "$WORK/ref.params.json" "$WORK/mlp.params.json"
    variants=("2 2 none")
    case "$SCHEDULE/$model" in gpipe/gpt-tiny|gpipe/mlp-tiny|1f1b/gpt-tiny|1f1b/mlp-tiny|hippie/gpt-tiny|hippie/mlp-tiny) variants+=("2 1 none") ;; esac
    [ "$SCHEDULE" = hippie ] && [ "$model" = gpt-tiny ] && variants+=("2 2 1,2,4")
    for v in "${variants[@]}"; do
        set -- $v
        pp=$1 dp=$2 n=$(($1 * $2)) recompute=$3
        what="$model pp$pp x dp$dp $SCHEDULE$([ "$recompute" != none ] && echo " recompute $recompute")"
        extra=(); [ "$recompute" != none ] && extra=(--recompute "$recompute")
        [ "$SCHEDULE" = interleaved ] && extra+=(--virtual-stages 2)
        plan "$WORK/p.json" --model "$model" --pp $pp --dp $dp --microbatches 4 --global-batch 16 --schedule "$SCHEDULE" \
            --optimizer sgd --bucket-bytes 4096 "${extra[@]}"
        check_run "$what" $n
    done
done
# Per-stage replication (PipeDream's plans): stages of different widths, micro-batches going
# round-robin over each stage's replicas, train as one process does: 3-1 (a wide first stage),
# 1-3 and 2-3 on the MLP, global batch 24 (12 micro-batches of 2, or 6 of 4 for 2-3).
case "$SCHEDULE" in gpipe|1f1b|hippie)
    plan "$WORK/ref.json" --model mlp-tiny --pp 1 --dp 1 --microbatches 1 --global-batch 24 --optimizer sgd
    launch "$WORK/ref.json" 1 $STEPS "$WORK/ref.out" --threads 1 --dump-params "$WORK/ref.params.json" || fail "mlp-tiny batch 24 reference: $(tail -2 "$WORK/ref.out")"
    for v in "3,1 4 4" "1,3 4 4" "2,3 2 5"; do
        set -- $v
        replicas=$1 m=$2 n=$3
        plan "$WORK/p.json" --model mlp-tiny --pp 2 --stage-replicas "$replicas" --microbatches "$m" --global-batch 24 \
            --schedule "$SCHEDULE" --optimizer sgd --bucket-bytes 4096
        check_run "mlp-tiny stage replicas $replicas $SCHEDULE" "$n"
    done
    # The GPT has dropout: the middle stage's two replicas each draw the masks of the samples
    # round-robin gives them (a mask is a hash of the sample's index in the global batch), so
    # 1-2-1 matches one process only if each replica numbers its samples as the iteration does.
    # (Its embedding and LM head share a weight, so the first and last stage keep one width.)
    plan "$WORK/ref.json" --model gpt-tiny --pp 1 --dp 1 --microbatches 1 --global-batch 24 --optimizer sgd
    launch "$WORK/ref.json" 1 $STEPS "$WORK/ref.out" --threads 1 --dump-params "$WORK/ref.params.json" || fail "gpt-tiny batch 24 reference: $(tail -2 "$WORK/ref.out")"
    plan "$WORK/p.json" --model gpt-tiny --pp 3 --stage-replicas 1,2,1 --microbatches 4 --global-batch 24 \
        --schedule "$SCHEDULE" --optimizer sgd --bucket-bytes 4096
    check_run "gpt-tiny stage replicas 1,2,1 $SCHEDULE (dropout)" 4
    ;;
esac
# The comparison can fail: parameters one step apart differ by far more than the tolerance.
plan "$WORK/ref.json" --model mlp-tiny --pp 1 --dp 1 --microbatches 1 --global-batch 16 --optimizer sgd
launch "$WORK/ref.json" 1 $((STEPS - 1)) "$WORK/short.out" --dump-params "$WORK/short.params.json"
if "$ENGINE" compare-params --reference "$WORK/mlp.params.json" --tol 1e-5 "$WORK/short.params.json" > "$WORK/cmp.out"; then
    fail "a run one step shorter compares equal: $(cat "$WORK/cmp.out")"
else
    pass "a run one step shorter differs ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out"))"
fi
finish
