#!/usr/bin/env bash
# Pipeline (pp 2) x data parallel (dp 2) training under one schedule gives the parameters of
# one process training the same model on the same data (fp32, 1e-5), for a GPT and an MLP.
# Usage: test_engine_equivalence.sh ENGINE SCHEDULE
source "$(dirname "$0")/lib.sh"
SCHEDULE="$2"
STEPS=3
for model in gpt-tiny mlp-tiny; do
    plan "$WORK/ref.json" --model "$model" --pp 1 --dp 1 --microbatches 1 --global-batch 16 --schedule 1f1b --optimizer sgd
    launch "$WORK/ref.json" 1 $STEPS "$WORK/ref.out" --dump-params "$WORK/ref.params.json" || fail "$model reference run: $(tail -2 "$WORK/ref.out")"
    for shape in "2 2" "2 1"; do
        set -- $shape
        pp=$1 dp=$2 n=$((pp * dp))
        rm -f "$WORK"/p.*.json
        plan "$WORK/p.json" --model "$model" --pp $pp --dp $dp --microbatches 4 --global-batch 16 --schedule "$SCHEDULE" \
            --optimizer sgd --bucket-bytes 4096
        if ! launch "$WORK/p.json" $n $STEPS "$WORK/p.out" --dump-params "$WORK/p.{rank}.json"; then
            fail "$model pp$pp x dp$dp $SCHEDULE: $(tail -2 "$WORK/p.out")"
            continue
        fi
        ref_loss=$(field "$WORK/ref.out" done loss)
        losses=$(field "$WORK/p.out" done loss | grep -v null | sort -u)
        if "$ENGINE" compare-params --reference "$WORK/ref.params.json" --tol 1e-5 "$WORK"/p.*.json > "$WORK/cmp.out"; then
            pass "$model pp$pp x dp$dp $SCHEDULE: parameters match ($(cat "$WORK/cmp.out")); loss $losses vs $ref_loss"
        else
            fail "$model pp$pp x dp$dp $SCHEDULE: $(cat "$WORK/cmp.out")"
        fi
        awk -v a="$ref_loss" -v b="$(echo "$losses" | head -1)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-5) }' \
            || fail "$model pp$pp x dp$dp $SCHEDULE: final loss $losses differs from the reference $ref_loss"
    done
done
finish
