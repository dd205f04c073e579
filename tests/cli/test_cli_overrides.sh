#!/usr/bin/env bash
# hippie-plan --override: scaled-down zoo models through show-graph, simulate (saved plan and
# replay), compare --out; bad keys and values exit 2 with one line naming the key; models
# --json lists every model's keys with their values.
# Usage: test_cli_overrides.sh <path-to-hippie-plan> <repo-root>
set -euo pipefail
BIN=$1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# shellcheck source=expect_error.sh
source "$(dirname "$0")/expect_error.sh"

SMALL=layers=2,d_model=64,heads=4,vocab=1000,seq_len=16

# show-graph: the graph JSON records the overrides; 229632 parameters by the closed form
# (embed (1000 + 1024) x 64, two blocks of 12 x 64^2 + 13 x 64, head 2 x 64).
"$BIN" show-graph --model gpt2-small --override "$SMALL" --format json >"$OUT/graph.json"
python3 - "$OUT/graph.json" <<'PY' || fail "show-graph --override: wrong graph JSON"
import json, sys
g = json.load(open(sys.argv[1]))
assert g["version"] == 2, g["version"]
assert g["name"] == "gpt2-small[layers=2,d_model=64,heads=4,vocab=1000,seq_len=16]", g["name"]
assert g["source"]["overrides"] == {"layers": 2, "d_model": 64, "heads": 4, "vocab": 1000}, g["source"]
assert g["source"]["seq_len"] == 16, g["source"]
assert sum(op["param_bytes"] for op in g["ops"]) // 4 == 229632
assert max(op["layer"] for op in g["ops"]) == 3
PY
"$BIN" show-graph --model resnet50 --override blocks1=1,blocks2=1,blocks3=1,blocks4=1,width_mult=0.25 --layers \
    >"$OUT/resnet.txt"
grep -q "^model  *resnet50\[blocks1=1,blocks2=1,blocks3=1,blocks4=1,width_mult=0.25\]$" "$OUT/resnet.txt" \
    || fail "show-graph resnet50 name: $(head -1 "$OUT/resnet.txt")"
grep -q "^layers  *6$" "$OUT/resnet.txt" || fail "resnet50 with one block a stage is not 6 layers"

# simulate: the saved plan keeps the overrides and replays the same model
"$BIN" simulate --model bert-base --override layers=2,d_model=128,heads=2 --seq-len 64 --cluster cpu-local \
    --pp 2 --dp 1 --microbatches 2 --global-batch 4 --schedule 1f1b --save-plan "$OUT/plan.json" >/dev/null \
    || fail "simulate --override exited non-zero"
python3 - "$OUT/plan.json" <<'PY' || fail "simulate --save-plan lost the overrides"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["version"] == 2 and p["model"]["overrides"] == {"layers": 2, "d_model": 128, "heads": 2}, p["model"]
assert p["model"]["seq_len"] == 64, p["model"]
assert p["stages"][-1]["last_layer"] == 3, p["stages"]
PY
"$BIN" simulate --plan "$OUT/plan.json" >"$OUT/replay.txt" || fail "simulate --plan with overrides exited non-zero"
grep -qF "bert-base[layers=2,d_model=128,heads=2,seq_len=64]" "$OUT/replay.txt" \
    || fail "replayed plan does not name the overrides: $(head -1 "$OUT/replay.txt")"

# compare --out: every plan written carries the overrides
"$BIN" compare --model mlp --override layers=3,hidden=64,inputs=32,classes=10 --cluster cpu-local \
    --global-batch 16 --planners data-parallel,uniform --out "$OUT/plans" >/dev/null || fail "compare --override exited non-zero"
python3 - "$OUT/plans" <<'PY' || fail "compare --out plans lack the overrides"
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*.json")
assert files, "no plans written"
for f in files:
    m = json.load(open(f))["model"]
    assert m["overrides"] == {"layers": 3, "hidden": 64, "inputs": 32, "classes": 10}, (f, m)
PY

# dropout=0 removes the dropout ops; the published model has them, their masks kept
"$BIN" show-graph --model gpt2-small --override layers=1,d_model=64,heads=2,seq_len=16 --format json >"$OUT/drop.json" \
    || fail "show-graph of the published dropout exited non-zero"
"$BIN" show-graph --model gpt2-small --override layers=1,d_model=64,heads=2,seq_len=16,dropout=0,attention_dropout=0 \
    --format json >"$OUT/nodrop.json" || fail "show-graph --override dropout=0 exited non-zero"
python3 - "$OUT/drop.json" "$OUT/nodrop.json" <<'PY' || fail "dropout ops wrong in the graph JSON"
import json, sys
drop, nodrop = (json.load(open(f)) for f in sys.argv[1:3])
names = sorted(o["name"] for o in drop["ops"] if o["kind"] == "dropout")
assert names == ["block0.attn_dropout", "block0.attn_resid_dropout", "block0.mlp_dropout", "embed.embed_dropout"], names
assert all(o.get("saved_bytes") == o["output_bytes"] // 4 for o in drop["ops"] if o["kind"] == "dropout")
assert not [o for o in nodrop["ops"] if o["kind"] == "dropout"] and len(nodrop["ops"]) == len(drop["ops"]) - 4
PY

# bad keys and values: exit 2, one line naming the key
expect_error "'blocks1'" show-graph --model gpt2-small --override blocks1=2
expect_error "'layers'" show-graph --model resnet50 --override layers=2
expect_error "'layers'" simulate --model gpt2-small --override layers=0 --cluster cpu-local --pp 1 --dp 1 \
    --microbatches 1 --global-batch 1 --schedule 1f1b
expect_error "'hidden'" compare --model gnmt-8 --override hidden=70000 --cluster cpu-local --global-batch 8
expect_error "heads" show-graph --model gpt2-small --override heads=5
expect_error "'dropout'" show-graph --model gpt2-small --override dropout=1
expect_error "'attention_dropout'" show-graph --model bert-base --override attention_dropout=-0.1
expect_error "'seq_len'" show-graph --model mlp --override seq_len=8
expect_error "'layers'" show-graph --model gpt2-small --override layers
expect_error "zoo" show-graph --model "$2/resources/examples/tiny-mlp.graph.json" --override layers=2

# models --json: every model lists its family's keys with its own values
"$BIN" models --json >"$OUT/models.json"
python3 - "$OUT/models.json" <<'PY' || fail "models --json override keys are wrong"
import json, sys
models = {m["name"]: m for m in json.load(open(sys.argv[1]))}
assert len(models) == 19
def values(name):
    return {o["key"]: o["default"] for o in models[name]["overrides"]}
assert values("gpt2-small") == {"layers": 12, "d_model": 768, "heads": 12, "d_ff": 3072, "vocab": 50257,
                                "positions": 1024, "seq_len": 1024, "dropout": 0.1, "attention_dropout": 0.1}, values("gpt2-small")
assert values("transformer-big")["dropout"] == 0.3 and values("transformer-big")["attention_dropout"] == 0
assert values("resnet152")["blocks3"] == 36 and values("resnet152")["width_mult"] == 1
assert values("vgg19")["convs5"] == 4 and values("vgg19")["fc_width"] == 4096 and values("vgg19")["dropout"] == 0.5
assert values("inception-v3") == {"width_mult": 1, "image_size": 299, "classes": 1000, "aux_logits": 1}
assert values("gnmt-8") == {"layers": 4, "hidden": 1024, "vocab": 32320, "seq_len": 50}
assert values("transformer-big")["layers"] == 6
for m in models.values():
    assert m["family"] and m["description"] and m["parameters"] > 0, m["name"]
    for o in m["overrides"]:
        assert o["min"] <= o["default"] <= o["max"] and o["meaning"], (m["name"], o)
PY

echo "PASS"
