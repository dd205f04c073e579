#!/usr/bin/env bash
# The engine's CUDA / NCCL path, for a host with an NVIDIA GPU: not part of ctest (this
# project's CI has no GPU). Builds hippie-engine against a CUDA LibTorch in its own build
# folder, then checks on the GPU:
#   1. one rank on cuda:0 trains and reports CUDA memory (caching allocator statistics);
#   2. it ends with the parameters of the same training on the CPU (tolerance 1e-4: cuBLAS
#      sums in another order);
#   3. a 2-stage pipeline with both ranks on cuda:0 (Gloo through host copies) equals the CPU;
#   4. with 2 or more GPUs, the same pipeline over NCCL (one GPU per rank), and 2 x 2 over
#      NCCL with 4 or more; with 4 or more, a GPT at t2 x pp2 and at per-stage degrees
#      t(1,2,1) x pp3 over NCCL, equal to one process on the CPU;
#   5. profile --device cuda writes a graph with measured times and memory; probe measures the
#      runtime's reserve (reserved_bytes);
#   6. the CPU equivalence tests pass with the CUDA-built binary on --device cpu.
# Usage: tests/engine/gpu_check.sh [LIBTORCH_PREFIX]   (default: $LIBTORCH, else the Python torch's
#        torch.utils.cmake_prefix_path). Set BUILD to choose the build folder (default build-gpu)
#        and CMAKE_ARGS to add configure arguments (e.g. where GLPK or CLI11 are on that host).
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-gpu}"
PREFIX="${1:-${LIBTORCH:-}}"
if [ -z "$PREFIX" ]; then PREFIX="$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)"; fi
nvidia-smi -L > /dev/null 2>&1 || { echo "gpu_check: no NVIDIA GPU here (nvidia-smi -L failed)"; exit 2; }
GPUS=$(nvidia-smi -L | wc -l)
[ -n "$PREFIX" ] || { echo "gpu_check: give the CUDA LibTorch's prefix (LIBTORCH=/path/to/libtorch or argument 1)"; exit 2; }

echo "== configure against $PREFIX ($GPUS GPU(s))"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHIPPIE_BUILD_STUDIO=OFF -DCMAKE_PREFIX_PATH="$PREFIX" \
    ${CMAKE_ARGS:-} > "$BUILD.configure.log" 2>&1 || { tail -30 "$BUILD.configure.log"; echo "gpu_check: configure failed"; exit 2; }
grep -E "hippie-engine|engine:" "$BUILD.configure.log"
if grep -q "engine: CPU only" "$BUILD.configure.log"; then echo "gpu_check: $PREFIX is a LibTorch without CUDA"; exit 2; fi
ninja -C "$BUILD" hippie-engine hippie-plan || { echo "gpu_check: the CUDA build of hippie-engine failed"; exit 2; }

source "$ROOT/tests/engine/lib.sh" "$BUILD/bin/hippie-engine"
STEPS=3
# same REF PARAMS... WHAT: parameter dumps within 1e-4 of the reference
same() {
    local ref="$1" what="${@: -1}"; local files=("${@:2:$#-2}")
    if "$ENGINE" compare-params --reference "$ref" --tol 1e-4 "${files[@]}" > "$WORK/cmp.out"; then
        pass "$what ($(grep -o '"max_abs_diff":[^,]*' "$WORK/cmp.out"))"
    else fail "$what: $(cat "$WORK/cmp.out")"; fi
}

for model in mlp-tiny gpt-tiny; do
    plan "$WORK/ref.json" --model $model --pp 1 --dp 1 --microbatches 1 --global-batch 16 --optimizer sgd
    launch "$WORK/ref.json" 1 $STEPS "$WORK/cpu.out" --device cpu --dump-params "$WORK/cpu.params.json" \
        || fail "$model on cpu: $(tail -2 "$WORK/cpu.out")"
    # 1. one rank on the GPU
    if launch "$WORK/ref.json" 1 $STEPS "$WORK/gpu.out" --device cuda --dump-params "$WORK/gpu.params.json"; then
        grep -q '"device":"cuda:0' "$WORK/gpu.out" && pass "$model runs on $(grep -o '"device":"[^"]*' "$WORK/gpu.out" | cut -d'"' -f4)" \
            || fail "$model: setup does not say cuda: $(head -1 "$WORK/gpu.out")"
        peak=$(field "$WORK/gpu.out" done peak_device_bytes)
        [ "${peak:-0}" -gt 0 ] && pass "$model: CUDA allocator peak $peak bytes" || fail "$model: no CUDA memory figure ($peak)"
        # 2. same parameters as on the CPU
        same "$WORK/cpu.params.json" "$WORK/gpu.params.json" "$model cuda:0 equals cpu"
    else fail "$model on cuda: $(tail -2 "$WORK/gpu.out")"; fi
    # 3. two pipeline stages sharing cuda:0, Gloo through host copies
    plan "$WORK/p.json" --model $model --pp 2 --dp 1 --microbatches 4 --global-batch 16 --schedule 1f1b --optimizer sgd
    rm -f "$WORK"/g.*.json
    if launch "$WORK/p.json" 2 $STEPS "$WORK/g.out" --device cuda --local-rank 0 --comm gloo --dump-params "$WORK/g.{rank}.json"; then
        same "$WORK/cpu.params.json" "$WORK"/g.*.json "$model pp2 1f1b, both ranks on cuda:0 over host-staged Gloo, equals cpu"
    else fail "$model pp2 on one GPU: $(tail -2 "$WORK/g.out")"; fi
    # 4. NCCL, one GPU per rank
    if [ "$GPUS" -ge 2 ]; then
        for shape in "2 1 1f1b" "2 1 hippie" "2 2 hippie"; do
            set -- $shape
            [ $(($1 * $2)) -le "$GPUS" ] || continue
            plan "$WORK/n.json" --model $model --pp $1 --dp $2 --microbatches 4 --global-batch 16 --schedule $3 --optimizer sgd --bucket-bytes 4096
            rm -f "$WORK"/n.*.json
            if launch "$WORK/n.json" $(($1 * $2)) $STEPS "$WORK/n.out" --device cuda --comm nccl --dump-params "$WORK/n.{rank}.json"; then
                grep -q '"comm":"nccl"' "$WORK/n.out" || fail "$model: the ranks did not use NCCL: $(head -1 "$WORK/n.out")"
                same "$WORK/cpu.params.json" "$WORK"/n.*.json "$model pp$1 x dp$2 $3 over NCCL equals cpu"
            else fail "$model pp$1 x dp$2 $3 over NCCL: $(tail -2 "$WORK/n.out")"; fi
        done
    else echo "skip: NCCL pipelines need 2 GPUs (this host has $GPUS)"; fi
done

# 4b. tensor parallelism over NCCL, one GPU per rank: a GPT at the tp equivalence test's size,
# t2 x pp2, and per-stage degrees t(1,2,1) x pp3 (a stage of one rank sends each activation to
# both ranks of the next), each ending with the parameters of one process on the CPU
TP_GPT="layers=2,d_model=64,heads=4,vocab=96,seq_len=16"
if [ "$GPUS" -ge 4 ]; then
    plan "$WORK/tref.json" --model gpt2-small --override "$TP_GPT" --pp 1 --dp 1 --microbatches 1 --global-batch 8 --optimizer sgd
    launch "$WORK/tref.json" 1 $STEPS "$WORK/tcpu.out" --device cpu --dump-params "$WORK/tcpu.params.json" \
        || fail "gpt reference on cpu: $(tail -2 "$WORK/tcpu.out")"
    for shape in "--pp 2 --tp 2" "--pp 3 --stage-tp 1,2,1"; do
        # shellcheck disable=SC2086  # the shape is several arguments
        plan "$WORK/t.json" --model gpt2-small --override "$TP_GPT" --dp 1 --microbatches 4 --global-batch 8 --schedule 1f1b \
            --optimizer sgd $shape
        rm -f "$WORK"/t.*.json
        if launch "$WORK/t.json" 4 $STEPS "$WORK/t.out" --device cuda --comm nccl --dump-params "$WORK/t.{rank}.json"; then
            grep -q '"comm":"nccl"' "$WORK/t.out" || fail "gpt $shape: the ranks did not use NCCL: $(head -1 "$WORK/t.out")"
            same "$WORK/tcpu.params.json" "$WORK"/t.*.json "gpt $shape (1f1b) over NCCL equals cpu"
        else fail "gpt $shape over NCCL: $(grep -h '"event":"error"' "$WORK/t.out" | head -1) $(tail -2 "$WORK/t.out.err")"; fi
    done
else echo "skip: tensor parallelism over NCCL needs 4 GPUs (this host has $GPUS)"; fi

# 5. profile on the GPU
if timeout 120 "$ENGINE" profile --model gpt-tiny --batch-size 8 --device cuda --out "$WORK/prof.json" > "$WORK/prof.out"; then
    grep -q '"device":"cuda' "$WORK/prof.out" && grep -q '"saved_bytes"' "$WORK/prof.out" \
        && pass "profile --device cuda: $(grep -o '"memory":\[{[^}]*}' "$WORK/prof.out")" || fail "profile cuda: $(cat "$WORK/prof.out")"
else fail "profile --device cuda: $(cat "$WORK/prof.out")"; fi

# 5b. probe on the GPU: the runtime's reserve (CUDA context, cuBLAS) is measured, at least
# 100 MiB (a CUDA context alone is more) and under a quarter of the device
if timeout 300 "$ENGINE" probe --no-loopback --seconds 0.5 > "$WORK/probe.json" 2> "$WORK/probe.err"; then
    python3 - "$WORK/probe.json" <<'PY' && pass "probe measures the runtime's reserve: $(grep -o '"reserved_bytes": [0-9]*' "$WORK/probe.json")" \
        || fail "probe's reserved_bytes: $(grep -o '"\(memory\|reserved\)_bytes": [0-9]*' "$WORK/probe.json" | tr '\n' ' ')"
import json, sys
d = json.load(open(sys.argv[1]))["nodes"][0]["device"]
assert 100 * 2**20 <= d.get("reserved_bytes", 0) < d["memory_bytes"] // 4, d.get("reserved_bytes")
PY
else fail "probe on the GPU: $(tail -2 "$WORK/probe.err")"; fi

# 6. the CPU equivalence tests, CUDA-built binary on the CPU (HIPPIE_ENGINE_DEVICE sets --device's default)
for schedule in gpipe 1f1b hippie; do
    HIPPIE_ENGINE_DEVICE=cpu bash "$ROOT/tests/engine/test_engine_equivalence.sh" "$ENGINE" $schedule > "$WORK/eq.out" 2>&1 \
        && pass "equivalence $schedule on cpu with the CUDA build" || fail "equivalence $schedule: $(grep FAIL "$WORK/eq.out" | head -3)"
done
finish
