#!/usr/bin/env bash
# hippie-plan on bad input: exit code 2 and exactly one line on stderr naming the problem.
# Usage: test_cli_errors.sh <path-to-hippie-plan> <repo-root>
set -euo pipefail
BIN=$1
ROOT=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# shellcheck source=expect_error.sh
source "$(dirname "$0")/expect_error.sh"

# sim MODEL CLUSTER PP DP MICROBATCHES GLOBAL_BATCH SCHEDULE [MORE...]: a simulate command line
sim() {
    echo simulate --model "$1" --cluster "$2" --pp "$3" --dp "$4" --microbatches "$5" --global-batch "$6" \
        --schedule "$7" "${@:8}"
}

expect_error "no-such-model" $(sim no-such-model cpu-local 2 2 2 16 1f1b)
expect_error "no-such-cluster" $(sim mlp no-such-cluster 2 2 2 16 1f1b)
expect_error "warp-drive" $(sim mlp cpu-local 2 2 2 16 warp-drive)
expect_error "$OUT/missing.json" simulate --plan "$OUT/missing.json"

echo '{"format": "hippie-plan", "version": 1, "model": ' >"$OUT/broken.json"
expect_error "$OUT/broken.json" simulate --plan "$OUT/broken.json"
expect_error "$OUT/broken.json" $(sim "$OUT/broken.json" cpu-local 2 1 2 16 1f1b)
CLUSTER_FILE=$ROOT/resources/examples/two-node.cluster.json
expect_error "$CLUSTER_FILE" $(sim "$CLUSTER_FILE" cpu-local 2 1 2 16 1f1b)
expect_error "$OUT/broken.json" $(sim mlp "$OUT/broken.json" 2 1 2 16 1f1b)

expect_error "cluster 'cpu-local' has 4" $(sim mlp cpu-local 4 2 2 16 1f1b)
expect_error "global batch 15" $(sim mlp cpu-local 2 2 2 15 1f1b)
expect_error "--microbatches" $(sim mlp cpu-local 2 2 -2 16 1f1b)
# Inception-v3's auxiliary classifier has a BatchNorm over a 1x1 map: 16 / dp 2 / 4 = 2 samples
# are too few to train it, and the message says what needs 3 and what to change.
expect_error "micro-batches of 2 samples (global batch 16 / dp 2 / 4 micro-batches) are too small: inception-v3 needs at least 3 samples a micro-batch (BatchNorm 'head.aux_conv1_bn'" \
    $(sim inception-v3 cpu-local 2 2 4 16 1f1b)
expect_error "more stages than the 9 layers of 'mlp'" $(sim mlp cpu-local 4 1 2 16 interleaved --virtual-stages 3)
expect_error "fp8" $(sim mlp cpu-local 2 2 2 16 1f1b --precision fp8)
expect_error "--global-batch" simulate --model mlp --cluster cpu-local --pp 2 --dp 1 --microbatches 2 --schedule 1f1b
expect_error "--pp" simulate --plan "$OUT/broken.json" --pp 2
expect_error "no-such-model" show-graph --model no-such-model
expect_error "xml" show-graph --model mlp --format xml
expect_error "frobnicate" frobnicate

# Per-stage replication: each unsupported combination names its field.
expect_error "gives 1 replica counts for --pp 2" $(sim vgg16 v100-4x4 2 3 2 48 1f1b --stage-replicas 3)
expect_error "must be a positive integer, got '0'" $(sim vgg16 v100-4x4 2 3 2 48 1f1b --stage-replicas 3,0)
expect_error "with --stage-replicas, dp is the widest stage's replicas (3)" $(sim vgg16 v100-4x4 2 2 2 48 1f1b --stage-replicas 3,1)
expect_error "share a tied weight" $(sim gpt2-small v100-4x4 2 3 2 48 1f1b --stage-replicas 3,1)
expect_error "the interleaved schedule is not built with per-stage replication" \
    $(sim vgg16 v100-4x4 2 3 2 48 interleaved --virtual-stages 2 --stage-replicas 3,1)
expect_error "do not go round-robin evenly over stage 0's 2 replicas" $(sim vgg16 v100-4x4 2 3 1 48 1f1b --stage-replicas 2,3)

echo "PASS"
