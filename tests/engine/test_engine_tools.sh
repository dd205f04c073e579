#!/usr/bin/env bash
# inspect on a TorchScript file the engine writes itself; profile and probe print usable JSON;
# plan cuts stages where told.
source "$(dirname "$0")/lib.sh"
"$ENGINE" export-script --model mlp-tiny --out "$WORK/mlp.pt" > "$WORK/e" || fail "export-script: $(cat "$WORK/e")"
if timeout 60 "$ENGINE" inspect "$WORK/mlp.pt" --input-shape 8,32 --out "$WORK/g.json" > "$WORK/i"; then
    layers=$(grep -o '"name":"fc[0-9]*"' "$WORK/i" | wc -l)
    [ "$layers" -eq 5 ] && grep -q '"fwd_time_s"' "$WORK/g.json" && grep -q '"format": *"hippie-graph"' "$WORK/g.json" \
        && pass "inspect: 5 layers with measured times" || fail "inspect output: $(cat "$WORK/i")"
else fail "inspect: $(cat "$WORK/i")"; fi
echo "not torchscript" > "$WORK/bad.pt"
timeout 60 "$ENGINE" inspect "$WORK/bad.pt" --input-shape 8,32 > "$WORK/b"; code=$?
[ $code -eq 2 ] && grep -q '"event":"error"' "$WORK/b" && pass "bad TorchScript file: exit 2" || fail "bad TorchScript: exit $code $(cat "$WORK/b")"
timeout 60 "$ENGINE" profile --model gpt-tiny --batch-size 4 --repeats 2 --out "$WORK/prof.json" > "$WORK/p" \
    && grep -q '"bwd_time_s"' "$WORK/prof.json" && pass "profile gpt-tiny" || fail "profile: $(cat "$WORK/p")"
# Profiled memory: the MLP's first layer (Linear 32 -> 64, ReLU) on 8 samples outputs exactly
# 8 x 64 x 4 bytes and keeps nothing more for backward (ReLU keeps its output; the Linear its
# input, which is not its allocation); its temporary is the pre-ReLU tensor. Transformer blocks
# keep several times their output. The graph's ops carry the measured activation per layer.
timeout 60 "$ENGINE" profile --model mlp-tiny --batch-size 8 --repeats 2 --out "$WORK/mlp.prof.json" > "$WORK/pm" || fail "profile mlp: $(cat "$WORK/pm")"
python3 - "$WORK/pm" "$WORK/mlp.prof.json" "$WORK/p" "$WORK/prof.json" <<'PY' && pass "profile memory: $(head -c 300 "$WORK/pm.summary")" || fail "profile memory: $(cat "$WORK/pm")"
import json, sys
mlp = json.loads(open(sys.argv[1]).read().splitlines()[-1])
graph = json.load(open(sys.argv[2]))
gpt = json.loads(open(sys.argv[3]).read().splitlines()[-1])
gpt_graph = json.load(open(sys.argv[4]))
m0 = mlp["memory"][0]
assert m0["output_bytes"] == 8 * 64 * 4, m0
assert m0["saved_bytes"] == 0, m0
assert m0["fwd_temp_bytes"] == 8 * 64 * 4, m0
for layer in mlp["memory"] + gpt["memory"]:
    assert all(layer[k] >= 0 for k in ("output_bytes", "saved_bytes", "fwd_temp_bytes", "bwd_temp_bytes")), layer
    assert layer["saved_bytes"] < 64 * max(layer["output_bytes"], 4096), layer
block = gpt["memory"][1]
assert block["saved_bytes"] > 2 * block["output_bytes"], block
for g, p in ((graph, mlp), (gpt_graph, gpt)):
    for i, layer in enumerate(p["memory"]):
        ops = [o for o in g["ops"] if o["layer"] == i]
        assert sum(o["output_bytes"] for o in ops) == layer["output_bytes"] + layer["saved_bytes"], (i, layer)
        assert max(o["temp_bytes"] for o in ops) == max(layer["fwd_temp_bytes"], layer["bwd_temp_bytes"]), (i, layer)
        assert all("fwd_time_s" in o and "bwd_time_s" in o for o in ops)
open(sys.argv[1] + ".summary", "w").write("mlp layer 0 %s; gpt block 1 %s" % (m0, block))
PY
# A zoo model at a size override is profiled layer by layer as the engine builds it: its graph
# keeps the override, every layer and op gets a time, the layers' times add up to the whole
# model's pass (measured too), and a plan of the profiled graph trains. A GPT (token ids in, a
# tied LM head) and a ResNet (skip connections cross layers). A preset takes overrides on top of its own.
timeout 120 "$ENGINE" profile --model resnet50 --override blocks1=1,blocks2=1,blocks3=1,blocks4=1,width_mult=0.25,image_size=32,classes=10 \
    --batch-size 2 --repeats 1 --out "$WORK/rn.prof.json" > "$WORK/prn" || fail "profile resnet50: $(cat "$WORK/prn")"
timeout 120 "$ENGINE" profile --model gpt2-small --override layers=2,d_model=64,heads=2,seq_len=16,vocab=256,positions=16 \
    --batch-size 2 --repeats 1 --out "$WORK/gpt.prof.json" > "$WORK/pgpt" || fail "profile gpt2-small: $(cat "$WORK/pgpt")"
python3 - "$WORK/prn" "$WORK/rn.prof.json" "$WORK/pgpt" "$WORK/gpt.prof.json" <<'PY' && pass "profile zoo models: $(head -c 200 "$WORK/prn.summary")" || fail "profile zoo models: $(tail -c 600 "$WORK/prn") $(tail -c 600 "$WORK/pgpt")"
import json, sys
summaries = []
for out, graph_file, zoo, key in ((sys.argv[1], sys.argv[2], "resnet50", "width_mult"), (sys.argv[3], sys.argv[4], "gpt2-small", "d_model")):
    summary = json.loads(open(out).read().splitlines()[-1])
    g = json.load(open(graph_file))
    assert g["source"]["zoo"] == zoo and key in g["source"]["overrides"], g["source"]
    layers = summary["layers"]
    assert layers == len(summary["layer_names"]) == len(summary["fwd_time_s"]) == len(summary["memory"]) == 1 + max(o["layer"] for o in g["ops"]), summary
    assert all(t > 0 for t in summary["fwd_time_s"] + summary["bwd_time_s"]), summary
    assert summary["model_fwd_time_s"] > 0 and summary["model_bwd_time_s"] > 0, summary
    fwd = sum(o["fwd_time_s"] for o in g["ops"])
    bwd = sum(o["bwd_time_s"] for o in g["ops"])
    assert abs(fwd - summary["model_fwd_time_s"]) <= 1e-6 * fwd and abs(bwd - summary["model_bwd_time_s"]) <= 1e-6 * bwd, (fwd, bwd, summary)
    summaries.append("%s: %d layers, a pass %.2f + %.2f ms" % (zoo, layers, 1e3 * summary["model_fwd_time_s"], 1e3 * summary["model_bwd_time_s"]))
open(sys.argv[1] + ".summary", "w").write("; ".join(summaries))
PY
"$ENGINE" plan --graph "$WORK/gpt.prof.json" --pp 2 --global-batch 4 --microbatches 2 --out "$WORK/gpt.prof.plan.json" > /dev/null \
    && launch "$WORK/gpt.prof.plan.json" 2 2 "$WORK/gpt.prof.run" > /dev/null 2>&1 && grep -q '"event":"done"' "$WORK/gpt.prof.run" \
    && pass "a plan of the profiled gpt2-small graph trains on 2 ranks" || fail "training the profiled graph: $(grep '"event":"error"' "$WORK/gpt.prof.run" | head -2)"
"$ENGINE" profile --model mlp-tiny --override layers=2 --batch-size 2 --repeats 1 --out "$WORK/pt.json" > "$WORK/pt" \
    && python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["source"]; assert s["zoo"] == "mlp" and s["overrides"] == {"layers": 2, "hidden": 64, "inputs": 32, "classes": 10}, s' "$WORK/pt.json" \
    && pass "profile: mlp-tiny --override layers=2 is the zoo's mlp at the preset's sizes with 2 hidden layers" \
    || fail "profile mlp-tiny --override layers=2: $(cat "$WORK/pt") $(head -c 400 "$WORK/pt.json")"
# The planners' cost model prefers the profiled times: simulating the profiled graph and the
# same graph without times gives different iteration times.
HIPPIE_PLAN="$(dirname "$ENGINE")/hippie-plan"
if [ -x "$HIPPIE_PLAN" ]; then
    python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); [[o.pop(k, None) for k in ("fwd_time_s", "bwd_time_s")] for o in g["ops"]]; json.dump(g, open(sys.argv[2], "w"))' \
        "$WORK/prof.json" "$WORK/flops.json"
    a=$("$HIPPIE_PLAN" simulate --model "$WORK/prof.json" --cluster cpu-local --pp 2 --dp 1 --microbatches 4 --global-batch 4 --schedule 1f1b --json 2>&1 | grep -o '"iteration_time_s":[^,]*')
    b=$("$HIPPIE_PLAN" simulate --model "$WORK/flops.json" --cluster cpu-local --pp 2 --dp 1 --microbatches 4 --global-batch 4 --schedule 1f1b --json 2>&1 | grep -o '"iteration_time_s":[^,]*')
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && pass "hippie-plan uses the profiled times ($a vs FLOPs $b)" \
        || fail "profiled vs FLOP times: '$a' vs '$b'"
fi
timeout 60 "$ENGINE" probe --seconds 0.1 > "$WORK/probe" && grep -q '"peak_flops_fp32"' "$WORK/probe" \
    && grep -q '"all_cores_matmul_flops_per_s": *[1-9]' "$WORK/probe" \
    && grep -q '"all_cores_loopback_bytes_per_s": *[1-9]' "$WORK/probe" \
    && pass "probe: $(grep -o '"matmul_flops_per_s": *[0-9.e+]*' "$WORK/probe"), $(grep -o '"all_cores_matmul_flops_per_s": *[0-9.e+]*' "$WORK/probe")" \
    || fail "probe: $(cat "$WORK/probe")"
# Convolutions timed against the matmul curve: a measured efficiency the cluster reader accepts
# (hippie-plan reads the probe's cluster), one sample per shape.
python3 - "$WORK/probe" <<'PY2' && pass "probe: conv_efficiency $(grep -o '"conv_efficiency": *[0-9.e+-]*' "$WORK/probe" | head -1)" || fail "probe's convolutions"
import json, sys
c = json.load(open(sys.argv[1]))
e = c["probe"]["conv_efficiency"]
assert 0.001 <= e <= 4, e
assert c["nodes"][0]["device"].get("conv_efficiency", 1.0) == e
assert len(c["probe"]["convolutions"]) == 5 and all(s["seconds"] > 0 for s in c["probe"]["convolutions"])
PY2
# The CPU ranks' link is the engine's own all-reduce between two rank processes (slower than raw
# TCP: Gloo's hand-offs and sums), fitted to four sizes from 4 B to 16 MiB; the second process
# is gone when the probe ends; and the node says how much compute its ranks share.
python3 - "$WORK/probe" <<'PY2' && pass "probe: the link is Gloo's ($(grep -o '"gloo_bytes_per_s": *[0-9.e+]*' "$WORK/probe"), $(grep -o '"gloo_latency_s": *[0-9.e+-]*' "$WORK/probe")), $(grep -o '"compute_slots": *[0-9.e+-]*' "$WORK/probe")" || fail "probe's Gloo link or compute slots: $(head -c 600 "$WORK/probe")"
import json, sys
c = json.load(open(sys.argv[1]))
p, node = c["probe"], c["nodes"][0]
assert p["gloo_bytes_per_s"] > 0 and p["gloo_latency_s"] > 0, p
assert node["intra"] == {"bandwidth_bytes_per_s": p["gloo_bytes_per_s"], "latency_s": p["gloo_latency_s"]}, node["intra"]
assert [m["bytes"] for m in p["gloo_allreduces"]] == [4, 65536, 1048576, 16777216], p["gloo_allreduces"]
assert all(m["mean_s"] > 0 and m["median_s"] > 0 for m in p["gloo_allreduces"]), p["gloo_allreduces"]
assert node["compute_slots"] > 0, node
PY2
pgrep -f -- "--transport-peer" > /dev/null && fail "probe left its transport peer running: $(pgrep -af -- --transport-peer)" \
    || pass "probe: its transport peer process has exited"
# A CPU device is one rank of one thread: OpenBLAS's own pool is sized to it too (left alone it
# ran the "one thread" matmuls on every core). The kernel table has the zoo's op kinds, each
# timed at two sizes, forward and backward, with overheads the cluster reader accepts.
python3 - "$WORK/probe" <<'PY2' && pass "probe: one thread ($(grep -o '"blas": *"[^"]*"' "$WORK/probe")), kernels of $(grep -c '"forward_overhead_s"' "$WORK/probe") kinds" || fail "probe's threads or kernels: $(head -c 600 "$WORK/probe")"
import json, sys
c = json.load(open(sys.argv[1]))
p, device = c["probe"], c["nodes"][0]["device"]
assert p["torch_threads"] == 1, p["torch_threads"]
assert not p["blas"].startswith("openblas") or p["blas"].endswith("(1 threads)"), p["blas"]
kinds = {"add", "relu", "gelu", "tanh", "softmax", "layernorm", "batchnorm", "maxpool", "concat", "cross_entropy", "matmul", "attention", "conv2d"}
assert set(device["kernels"]) == kinds, sorted(device["kernels"])
for kind, k in device["kernels"].items():
    assert 0 <= k["forward_overhead_s"] <= 1 and 0 <= k["backward_overhead_s"] <= 1, (kind, k)
    assert k["forward_bytes_per_s"] == 0 or k["forward_bytes_per_s"] >= 1, (kind, k)
samples = p["kernel_samples"]
# Two sizes a kind, and three small CNN convolutions more for the convolution's half-rate size.
assert len(samples) == 2 * len(kinds) + 3 and all(s["forward_s"] > 0 and s["backward_s"] > 0 for s in samples), samples
assert [s["kind"] for s in samples].count("conv2d") == 5, [s["kind"] for s in samples]
PY2
if [ -x "$HIPPIE_PLAN" ]; then
    "$HIPPIE_PLAN" simulate --cluster "$WORK/probe" --model resnet50 --override blocks1=1,blocks2=1,blocks3=1,blocks4=1,width_mult=0.25,image_size=64 \
        --pp 1 --dp 1 --global-batch 2 --microbatches 1 --schedule 1f1b > /dev/null 2>&1 \
        && pass "hippie-plan reads the probe's cluster" || fail "hippie-plan cannot read the probe's cluster"
fi
# OpenBLAS's kernels: those of the CPU's widest vector unit, whatever OpenBLAS read of its model
# (a virtual machine's masked model made it take Prescott's SSE3 kernels, a quarter of the
# rate); a user's OPENBLAS_CORETYPE is kept. The engine's own choice is checked without one (a
# host may set it for everything it runs: one of this project's machines exports Haswell).
"$ENGINE" plan --model mlp --override layers=2,hidden=64,inputs=64,classes=10 --pp 1 --global-batch 4 --out "$WORK/blas.json" > /dev/null
blas() { launch "$WORK/blas.json" 1 1 "$WORK/blas.out" > /dev/null 2>&1; grep -o '"blas":"openblas [A-Za-z0-9]*' "$WORK/blas.out" | head -1 | cut -d' ' -f2; }
core=$(unset OPENBLAS_CORETYPE; blas)
if [ -z "$core" ]; then
    pass "BLAS kernels: not OpenBLAS here ($(grep -o '"blas":"[^"]*' "$WORK/blas.out" | head -1))"
elif grep -q avx512bw /proc/cpuinfo; then
    case "$core" in SkylakeX|Cooperlake|SapphireRapids) pass "BLAS kernels on an AVX-512 CPU: $core";; *) fail "BLAS kernels on an AVX-512 CPU: $core";; esac
elif grep -q avx2 /proc/cpuinfo; then
    case "$core" in Haswell|Zen|SkylakeX|Cooperlake|SapphireRapids) pass "BLAS kernels on an AVX2 CPU: $core";; *) fail "BLAS kernels on an AVX2 CPU: $core";; esac
else
    pass "BLAS kernels on a CPU without AVX2: $core (OpenBLAS's own choice)"
fi
[ "$(OPENBLAS_CORETYPE=Prescott blas)" = Prescott ] && pass "OPENBLAS_CORETYPE=Prescott is kept" || fail "OPENBLAS_CORETYPE=Prescott: $(grep -o '"blas":"[^"]*' "$WORK/blas.out")"
# plan --stage-starts cuts stages where asked (inception-v3 has 17 layers), and refuses a wrong
# count or an out-of-order layer by name.
"$ENGINE" plan --model inception-v3 --pp 2 --stage-starts 14 --out "$WORK/cut.json" > "$WORK/cut" \
    && python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["stages"]; sys.exit(s != [{"first_layer": 0, "last_layer": 13}, {"first_layer": 14, "last_layer": 16}])' "$WORK/cut.json" \
    && pass "plan --stage-starts 14: layers 0-13 and 14-16" || fail "plan --stage-starts: $(cat "$WORK/cut")"
"$ENGINE" plan --model inception-v3 --pp 2 --stage-starts 3,9 > "$WORK/cut2"; code=$?
[ $code -eq 2 ] && grep -q '1 value(s) for 2 stages, got 2' "$WORK/cut2" && pass "plan --stage-starts: wrong count refused" \
    || fail "plan --stage-starts 3,9 with --pp 2: exit $code $(cat "$WORK/cut2")"
"$ENGINE" plan --model inception-v3 --pp 3 --stage-starts 9,5 > "$WORK/cut3"; code=$?
[ $code -eq 2 ] && grep -q 'layer 5 must be above 9' "$WORK/cut3" && pass "plan --stage-starts: decreasing layers refused" \
    || fail "plan --stage-starts 9,5: exit $code $(cat "$WORK/cut3")"
# The front links no LibTorch: planning and listing work without its LibTorch half, and a
# command that computes, without it, names the missing binary.
mkdir -p "$WORK/front" && cp "$ENGINE" "$WORK/front/hippie-engine"
! ldd "$WORK/front/hippie-engine" | grep -q libtorch && pass "hippie-engine links no LibTorch" || fail "hippie-engine links LibTorch"
"$WORK/front/hippie-engine" plan --model mlp-tiny --pp 2 --out "$WORK/front.json" > "$WORK/front.out" \
    && "$WORK/front/hippie-engine" models | grep -q '"name":"gpt2-small"' && pass "plan and models without the LibTorch half" \
    || fail "plan/models without the LibTorch half: $(cat "$WORK/front.out")"
"$WORK/front/hippie-engine" run --plan "$WORK/front.json" --rank 0 --world-size 2 > "$WORK/front.run"; code=$?
[ $code -eq 2 ] && grep -q "'run' needs the LibTorch half of the engine, $WORK/front/hippie-engine-torch" "$WORK/front.run" \
    && pass "run without the LibTorch half: $(grep -o '"message":"[^"]*' "$WORK/front.run" | cut -c12-200)" \
    || fail "run without the LibTorch half: exit $code $(cat "$WORK/front.run")"
"$WORK/front/hippie-engine" launch --plan "$WORK/front.json" --nprocs 2 > "$WORK/front.launch"; code=$?
[ $code -eq 2 ] && grep -q "launch starts its ranks with the LibTorch half of the engine, $WORK/front/hippie-engine-torch, which cannot be run" "$WORK/front.launch" \
    && pass "launch without the LibTorch half: refused before any rank starts" \
    || fail "launch without the LibTorch half: exit $code $(cat "$WORK/front.launch")"
finish
