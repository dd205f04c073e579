#!/usr/bin/env bash
# Every zoo model, as a user runs it: plan it at a small size override with `hippie-plan compare
# --out`, then dispatch the best plan (highest memory efficiency among the feasible pipeline
# plans) to this machine with `hippie-plan dispatch --worker local --steps 3`: the run succeeds
# and reports a finite loss. Prints the wall time of each model and the total.
# Args: HIPPIE_PLAN SOURCE_DIR [MODEL...]. The engine comes from HIPPIE_ENGINE or beside hippie-plan.
set -u
BIN="$1"
shift 2
BIN_DIR="$(cd "$(dirname "$BIN")" && pwd)"
ENGINE="${HIPPIE_ENGINE:-$BIN_DIR/hippie-engine}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failures=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failures=$((failures + 1)); }

if ! "$BIN" dispatch --help >/dev/null 2>&1; then
    echo "SKIP: hippie-plan was built without dispatch (needs Qt 6 Core/Network/Sql)"
    exit 0
fi
if [ ! -x "$ENGINE" ]; then
    echo "SKIP: no hippie-engine at $ENGINE (set HIPPIE_ENGINE)"
    exit 0
fi

# Sizes that train in seconds on a CPU, by family (keys: hippie-plan models --json).
override_of() {
    case "$1" in
        gpt2-*|gpt3-*|bert-*) echo "layers=2,d_model=32,heads=2,vocab=128,seq_len=16" ;;
        transformer-big) echo "layers=2,d_model=32,heads=2,d_ff=64,vocab=128,seq_len=16" ;;
        gnmt-8) echo "layers=2,hidden=32,vocab=128,seq_len=16" ;;
        resnet*) echo "blocks1=1,blocks2=1,blocks3=1,blocks4=1,width_mult=0.125,image_size=32,classes=10" ;;
        vgg*) echo "convs1=1,convs2=1,convs3=1,convs4=1,convs5=1,width_mult=0.0625,fc_width=64,image_size=32,classes=10" ;;
        inception-v3) echo "width_mult=0.0625,image_size=299,classes=10,aux_logits=0" ;;  # the aux head at micro-batch 1 fails in BatchNorm (open)
        mlp) echo "layers=2,hidden=64,inputs=32,classes=10" ;;
        *) echo "" ;;
    esac
}

models=("$@")
[ ${#models[@]} -eq 0 ] && models=($("$BIN" models --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(m["name"] for m in (d["models"] if isinstance(d, dict) else d)))'))
[ ${#models[@]} -eq 19 ] || [ $# -gt 0 ] || fail "hippie-plan models lists ${#models[@]} models, expected the 19 of the zoo"
total_start=$(date +%s%N)
for m in "${models[@]}"; do
    start=$(date +%s%N)
    ov="$(override_of "$m")"
    dir="$WORK/$m"
    if ! "$BIN" compare --model "$m" --override "$ov" --cluster cpu-local --global-batch 8 --time-budget 5 --json --out "$dir" \
        >"$dir.json" 2>"$dir.err"; then
        fail "$m: compare: $(head -3 "$dir.err")"
        continue
    fi
    best=$(python3 - "$dir.json" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["results"] if r["feasible"] and r["plan"] and r["plan"].get("stages")]
rows.sort(key=lambda r: -r["metrics"]["memory_efficiency"])
print(rows[0]["planner"] if rows else "")
PY
)
    if [ -z "$best" ]; then
        fail "$m: no feasible pipeline plan"
        continue
    fi
    plan="$dir/$best.plan.json"
    timeout 120 "$BIN" dispatch --plan "$plan" --worker local --engine "$ENGINE" --db "$WORK/runs.sqlite" --work-dir "$WORK/work-$m" \
        --steps 3 --seed 1 >"$dir.out" 2>"$dir.derr"; rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    loss=$(grep '"event":"done"' "$dir.out" | grep -o '"loss":[^,}]*' | grep -v null | head -1 | cut -d: -f2)
    if [ $rc -eq 0 ] && tail -1 "$dir.out" | grep -q '"state":"succeeded"' && [ -n "$loss" ] \
        && python3 -c "import math,sys; sys.exit(0 if math.isfinite(float('$loss')) else 1)"; then
        pass "$m ($ov): $best plan dispatched, 3 steps, loss $loss, ${ms} ms"
    else
        fail "$m: dispatch of $best rc $rc: $(grep -h -o '"message":"[^"]*"' "$dir.out" "$dir.derr" | head -2) $(tail -2 "$dir.derr")"
    fi
done
echo "total: $((($(date +%s%N) - total_start) / 1000000)) ms for ${#models[@]} models"
[ $failures -eq 0 ] && exit 0 || exit 1
