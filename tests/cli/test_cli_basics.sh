#!/usr/bin/env bash
# hippie-plan basics: --version, the model and cluster listings, show-graph formats.
# Usage: test_cli_basics.sh <path-to-hippie-plan> <repo-root>
set -euo pipefail
BIN=$1
ROOT=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# --version prints "hippie-plan <version>"
version=$("$BIN" --version)
[[ $version =~ ^hippie-plan\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version printed '$version'"

# --help exits 0
"$BIN" --help >/dev/null || fail "--help exited non-zero"
"$BIN" simulate --help >/dev/null || fail "simulate --help exited non-zero"

# models lists every zoo model (table and JSON)
"$BIN" models >"$OUT/models.txt"
zoo="gpt2-small gpt2-medium gpt2-large gpt2-xl gpt3-1.3b gpt3-2.7b gpt3-6.7b gpt3-13b bert-base bert-large
     transformer-big resnet50 resnet101 resnet152 vgg16 vgg19 inception-v3 gnmt-8 mlp"
for m in $zoo; do
    grep -q "^$m " "$OUT/models.txt" || fail "models does not list $m"
done
"$BIN" models --json >"$OUT/models.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert len(m)==19 and all(x["parameters"]>0 for x in m), m' \
    "$OUT/models.json" || fail "models --json is not 19 models with parameters"

# clusters lists the 6 presets (table and JSON)
"$BIN" clusters >"$OUT/clusters.txt"
for c in dgx-a100-1x8 dgx-a100-2x8 dgx-a100-4x8 dgx-h100-2x8 v100-4x4 cpu-local; do
    grep -q "^$c " "$OUT/clusters.txt" || fail "clusters does not list $c"
done
"$BIN" clusters --json >"$OUT/clusters.json"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert len(c)==6, c' "$OUT/clusters.json" \
    || fail "clusters --json is not 6 presets"
# What tensors may take: an A100 40GB less what the driver hides (424 MiB) and PyTorch's CUDA
# context (666,632,192 bytes); CPU ranks keep their whole 4 GiB.
python3 -c 'import json,sys; c={x["name"]: x for x in json.load(open(sys.argv[1]))}
assert c["dgx-a100-2x8"]["usable_memory_bytes"] == 40536 * 2**20 - 666632192, c["dgx-a100-2x8"]
assert c["cpu-local"]["usable_memory_bytes"] == c["cpu-local"]["device_memory_bytes"] == 4 * 2**30, c["cpu-local"]' "$OUT/clusters.json" \
    || fail "clusters --json: usable memory is not the device's less the runtime's reserve"
grep -q "for tensors" "$OUT/clusters.txt" || fail "clusters does not show the memory left for tensors"

# show-graph: summary, layers, JSON (hippie-graph), DOT
"$BIN" show-graph --model gpt2-small >"$OUT/summary.txt"
grep -q "^layers  *14$" "$OUT/summary.txt" || fail "show-graph summary lacks 'layers 14': $(cat "$OUT/summary.txt")"
"$BIN" show-graph --model gpt2-small --layers >"$OUT/layers.txt"
grep -q "block11" "$OUT/layers.txt" || fail "show-graph --layers lacks block11"
"$BIN" show-graph --model resnet50 --batch-size 8 --format json >"$OUT/graph.json"
python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); assert g["format"]=="hippie-graph" and g["batch_size"]==8' \
    "$OUT/graph.json" || fail "show-graph --format json is not a hippie-graph for batch 8"
"$BIN" show-graph --model "$ROOT/resources/examples/tiny-mlp.graph.json" --format dot >"$OUT/graph.dot"
head -n1 "$OUT/graph.dot" | grep -q "^digraph" || fail "show-graph --format dot does not start with digraph"

echo "PASS"
