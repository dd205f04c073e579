#!/usr/bin/env bash
# hippie-plan simulate: JSON metrics, pipeline bubble, schedules compared, plan round trip,
# trace and program outputs.
# Usage: test_cli_simulate.sh <path-to-hippie-plan> <repo-root>
set -euo pipefail
BIN=$1
ROOT=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# field FILE KEY: one metric from a simulate --json output
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# check EXPRESSION MESSAGE: a Python boolean expression
check() { python3 -c "import sys; sys.exit(0 if ($1) else 1)" || fail "$2"; }
# plan ARGS...: hippie-plan that must succeed
plan() { "$BIN" "$@" || fail "hippie-plan $* exited with $?"; }

# A model of 4 equal layers (a matmul each, small tensors) so a 4-stage pipeline is balanced
# and communication is negligible: the bubble is (P-1)/(K+P-1).
python3 - "$OUT/equal.graph.json" <<'PY'
import json, sys
ops = [{"id": i, "name": f"layer{i}.fc", "kind": "matmul", "layer": i, "fwd_flops": 1.2e9, "bwd_flops": 2.4e9,
        "param_bytes": 4096, "output_bytes": 1024, "temp_bytes": 0} for i in range(4)]
edges = [{"src": i, "dst": i + 1, "bytes": 1024} for i in range(3)]
json.dump({"format": "hippie-graph", "version": 1, "name": "equal4", "batch_size": 8, "precision": "fp32",
           "ops": ops, "edges": edges}, open(sys.argv[1], "w"))
PY
EQUAL=(--model "$OUT/equal.graph.json" --cluster cpu-local --dp 1 --microbatches 8 --global-batch 64)

# --json prints exactly the 8 metric keys and nothing else
plan simulate "${EQUAL[@]}" --pp 4 --schedule 1f1b --json >"$OUT/1f1b.json"
python3 - "$OUT/1f1b.json" <<'PY' || fail "simulate --json keys are wrong: $(cat "$OUT/1f1b.json")"
import json, sys
keys = {"iteration_time_s", "throughput_samples_per_s", "peak_memory_bytes", "max_peak_memory_bytes",
        "bubble_fraction", "allreduce_hidden_fraction", "memory_efficiency", "fits_memory"}
assert set(json.load(open(sys.argv[1]))) == keys
PY

# 1F1B bubble for 4 equal stages and 8 micro-batches: 3/11
bubble=$(field "$OUT/1f1b.json" bubble_fraction)
check "abs($bubble - 3/11) < 0.01" "1f1b bubble $bubble, expected 3/11 = 0.273"

# GPipe idles as long as 1F1B
plan simulate "${EQUAL[@]}" --pp 4 --schedule gpipe --json >"$OUT/gpipe.json"
gpipe=$(field "$OUT/gpipe.json" bubble_fraction)
check "abs($gpipe - $bubble) < 0.01" "gpipe bubble $gpipe differs from 1f1b bubble $bubble"

# HIPPIE overlaps the gradient all-reduce: never slower than 1F1B with data parallelism
GPT=(--model gpt2-small --cluster dgx-a100-1x8 --pp 4 --dp 2 --microbatches 8 --global-batch 64 --precision fp16)
plan simulate "${GPT[@]}" --schedule 1f1b --json >"$OUT/gpt-1f1b.json"
plan simulate "${GPT[@]}" --schedule hippie --json >"$OUT/gpt-hippie.json"
t_1f1b=$(field "$OUT/gpt-1f1b.json" iteration_time_s)
t_hippie=$(field "$OUT/gpt-hippie.json" iteration_time_s)
check "$t_hippie <= $t_1f1b * (1 + 1e-9)" "hippie iteration $t_hippie s is slower than 1f1b $t_1f1b s"

# --save-plan then --plan reproduces the same metrics, byte for byte
plan simulate "${GPT[@]}" --schedule hippie --recompute --save-plan "$OUT/plan.json" --json >"$OUT/saved.json"
plan simulate --plan "$OUT/plan.json" --json >"$OUT/replayed.json"
cmp -s "$OUT/saved.json" "$OUT/replayed.json" || fail "--plan gives other metrics than the run that saved it"
plan simulate "${EQUAL[@]}" --pp 2 --schedule interleaved --virtual-stages 2 --save-plan "$OUT/inter.json" \
    --json >"$OUT/inter-saved.json"
plan simulate --plan "$OUT/inter.json" --json >"$OUT/inter-replayed.json"
cmp -s "$OUT/inter-saved.json" "$OUT/inter-replayed.json" || fail "--plan differs for an interleaved plan"
# --recompute selective: the attention cores recomputed (less peak memory, more time), saved
# in the plan and replayed; "full" is --recompute alone; a model without attention refuses it.
plan simulate "${GPT[@]}" --schedule hippie --recompute selective --save-plan "$OUT/sel.json" --json >"$OUT/sel.json.out"
check "$(field "$OUT/sel.json.out" max_peak_memory_bytes) < $(field "$OUT/gpt-hippie.json" max_peak_memory_bytes)" \
    "selective recomputation did not lower the peak memory"
check "$(field "$OUT/sel.json.out" iteration_time_s) > $t_hippie" "selective recomputation took no time"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if p["selective_recompute"] and p["version"] == 5 and not p["recompute_layers"] else 1)' \
    "$OUT/sel.json" || fail "the saved plan does not say selective_recompute (version 5)"
plan simulate --plan "$OUT/sel.json" --json >"$OUT/sel-replayed.json"
cmp -s "$OUT/sel.json.out" "$OUT/sel-replayed.json" || fail "--plan differs for a selectively recomputed plan"
plan simulate "${GPT[@]}" --schedule hippie --recompute full --json >"$OUT/full.json"
cmp -s "$OUT/full.json" "$OUT/saved.json" || fail "--recompute full differs from --recompute"
if "$BIN" simulate "${EQUAL[@]}" --pp 2 --schedule 1f1b --recompute selective >"$OUT/nosel.txt" 2>&1; then
    fail "selective recomputation of a model without attention was simulated"
fi
grep -q "selective_recompute" "$OUT/nosel.txt" || fail "the refusal does not name selective_recompute: $(cat "$OUT/nosel.txt")"
if "$BIN" simulate "${GPT[@]}" --schedule hippie --recompute some >"$OUT/badrc.txt" 2>&1; then fail "--recompute some accepted"; fi
# a graph file and a cluster file travel in the plan too
FILES=(--model "$ROOT/resources/examples/tiny-mlp.graph.json" --cluster "$ROOT/resources/examples/two-node.cluster.json")
plan simulate "${FILES[@]}" --pp 2 --dp 1 --microbatches 4 --global-batch 32 --schedule zb-h1 \
    --save-plan "$OUT/files.json" --json >"$OUT/files-saved.json"
plan simulate --plan "$OUT/files.json" --json >"$OUT/files-replayed.json"
cmp -s "$OUT/files-saved.json" "$OUT/files-replayed.json" || fail "--plan differs for a plan of graph and cluster files"
# --cluster next to --plan re-targets the plan
plan simulate --plan "$OUT/files.json" --cluster cpu-local >"$OUT/retarget.txt"
grep -q "on cpu-local:" "$OUT/retarget.txt" || fail "--cluster did not override the plan's cluster"

# trace files
plan simulate "${GPT[@]}" --schedule 1f1b --trace "$OUT/trace.json" --chrome-trace "$OUT/chrome.json" >/dev/null
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert len(t["traceEvents"]) > 0' "$OUT/chrome.json" \
    || fail "--chrome-trace file has no traceEvents"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert t["format"]=="hippie-trace" and t["events"]' \
    "$OUT/trace.json" || fail "--trace file is not a hippie-trace with events"

# readable report and --program
plan simulate "${EQUAL[@]}" --pp 4 --schedule 1f1b --program >"$OUT/report.txt"
grep -q "^d0: " "$OUT/report.txt" || fail "--program output has no 'd0:' line"
grep -q "^bubble  *27\.[0-9]%$" "$OUT/report.txt" || fail "report lacks the bubble line: $(cat "$OUT/report.txt")"
grep -q "stages 0 | 1 | 2 | 3" "$OUT/report.txt" || fail "report lacks the stage ranges"

# --zero: the ZeRO stage of the data-parallel groups, in the report, the program and the plan
# file; sharding lowers the predicted peak; stages above 3 are refused.
ZERO=(--model "$OUT/equal.graph.json" --cluster cpu-local --pp 2 --dp 2 --microbatches 2 --global-batch 64 --schedule 1f1b)
plan simulate "${ZERO[@]}" --zero 2 --program --save-plan "$OUT/z2.plan.json" >"$OUT/z2.txt"
grep -q "ZeRO 2 (optimizer state and gradients sharded)" "$OUT/z2.txt" || fail "the report does not name ZeRO 2: $(head -3 "$OUT/z2.txt")"
grep -q "^d0: .*RS0@0.* OPT AG0" "$OUT/z2.txt" || fail "ZeRO 2 program lacks reduce-scatter and all-gather: $(grep '^d0:' "$OUT/z2.txt")"
check "__import__('json').load(open('$OUT/z2.plan.json'))['zero_stage'] == 2" "the saved plan does not record zero_stage 2"
plan simulate --plan "$OUT/z2.plan.json" --json >"$OUT/z2.json"
plan simulate "${ZERO[@]}" --json >"$OUT/z0.json"
check "$(field "$OUT/z2.json" max_peak_memory_bytes) < $(field "$OUT/z0.json" max_peak_memory_bytes)" "ZeRO 2 does not lower the peak memory"
if "$BIN" simulate "${ZERO[@]}" --zero 4 >"$OUT/z4.out" 2>"$OUT/z4.err"; then fail "--zero 4 accepted"; fi
grep -q -- "--zero" "$OUT/z4.err" || fail "--zero 4: the error does not name the flag: $(cat "$OUT/z4.err")"

# --tp / --sp: tensor parallelism in the report, the program and the plan file; each rank's
# stream carries its tp collectives; a plan file replays it; bad degrees are refused naming
# the flag.
TP1=(--model gpt2-small --cluster dgx-a100-1x8 --dp 1 --microbatches 4 --global-batch 16 --precision fp16 --schedule 1f1b)
TP=("${TP1[@]}" --pp 2)
plan simulate "${TP[@]}" --tp 4 --program --save-plan "$OUT/tp4.plan.json" >"$OUT/tp4.txt"
grep -q "pp 2 x dp 1 x tp 4, " "$OUT/tp4.txt" || fail "the report does not name tp 4: $(head -1 "$OUT/tp4.txt")"
grep -q "tensor groups *\[0 1 2 3\] \[4 5 6 7\]" "$OUT/tp4.txt" || fail "no tensor groups line: $(cat "$OUT/tp4.txt")"
grep -q "^d0: 0F0 TPAR0F0 0SEND_F0 " "$OUT/tp4.txt" || fail "tp 4 program of d0: $(grep '^d0:' "$OUT/tp4.txt")"
grep -q "^d5: 0RECV_F0 1F0 TPAR1F0 " "$OUT/tp4.txt" || fail "tp 4 program of d5: $(grep '^d5:' "$OUT/tp4.txt")"
check "__import__('json').load(open('$OUT/tp4.plan.json'))['tp'] == 4" "the saved plan does not record tp 4"
plan simulate "${TP[@]}" --tp 4 --json >"$OUT/tp4.json"
plan simulate --plan "$OUT/tp4.plan.json" --json >"$OUT/tp4-replayed.json"
cmp -s "$OUT/tp4.json" "$OUT/tp4-replayed.json" || fail "--plan gives other metrics than the tp 4 run that saved it"
# Each rank holds a quarter of the split weights: the peak falls well below pp 2 alone's.
plan simulate "${TP[@]}" --json >"$OUT/tp1.json"
check "$(field "$OUT/tp4.json" max_peak_memory_bytes) < 0.5 * $(field "$OUT/tp1.json" max_peak_memory_bytes)" "tp 4 does not lower the peak"
plan simulate "${TP[@]}" --tp 4 --sp --program >"$OUT/sp.txt"
grep -q "tp 4 (sequence parallel)" "$OUT/sp.txt" || fail "the report does not say sequence parallel: $(head -1 "$OUT/sp.txt")"
grep -q "^d0: 0F0 TPSP0F0 " "$OUT/sp.txt" || fail "sequence-parallel program: $(grep '^d0:' "$OUT/sp.txt")"
source "$ROOT/tests/cli/expect_error.sh"
expect_error "--sp needs --tp 2 or more" simulate "${TP[@]}" --sp
expect_error "--tp 5: model 'gpt2-small' splits only by divisors of 12" simulate "${TP1[@]}" --pp 1 --tp 5
expect_error "pp 2 x dp 1 x tp 8 needs 16 devices but cluster 'dgx-a100-1x8' has 8" simulate "${TP[@]}" --tp 8
expect_error "has no op that tensor parallelism splits" simulate "${EQUAL[@]}" --pp 1 --tp 2 --schedule 1f1b

# The peak memory table compares each device's peak with what its runtime leaves for tensors:
# an A100 40GB less what the driver hides and PyTorch's CUDA context, 38.97 GiB.
plan simulate --model gpt2-small --cluster dgx-a100-1x8 --pp 2 --dp 1 --microbatches 4 --global-batch 8 --schedule 1f1b > "$OUT/a100.txt"
grep -q "for tensors GiB" "$OUT/a100.txt" || fail "simulate's peak memory table does not say what is left for tensors: $(cat "$OUT/a100.txt")"
[ "$(grep -cE '^ +[01] +0 +[01] +0 +[0-9.]+ +38\.97 *$' "$OUT/a100.txt")" = 2 ] \
    || fail "simulate does not give both A100s 38.97 GiB for tensors: $(grep -A4 'Peak memory' "$OUT/a100.txt")"

echo "PASS"
