#!/usr/bin/env bash
# Measured against predicted step time of zoo models at their published size on one GPU:
# hippie-engine trains the plan on cuda:0, `hippie-plan simulate` predicts the same plan on
# CLUSTER (a cluster JSON describing that GPU, e.g. resources/examples/h200-1x1.cluster.json).
# Each row: model, precision, global batch, the median measured step time (after WARMUP
# steps), the predicted iteration time, their ratio, and CUDA's peak allocated memory
# against the predicted peak.
# Usage: bench_gpu_step.sh ENGINE HIPPIE_PLAN CLUSTER [STEPS] [WARMUP]
set -u
ENGINE="$1" PLANNER="$2" CLUSTER="$3" STEPS="${4:-12}" WARMUP="${5:-4}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
printf '%-12s %-5s %5s  %12s %12s %7s  %10s %10s\n' model prec batch measured_s predicted_s meas/pred peak_GiB pred_GiB

# row MODEL PRECISION GLOBAL_BATCH [OVERRIDES]
row() {
    local model="$1" prec="$2" gb="$3" ov="${4:-}" p="$WORK/plan.json" out="$WORK/run.out"
    "$ENGINE" plan --model "$model" ${ov:+--override "$ov"} --pp 1 --dp 1 --microbatches 1 --global-batch "$gb" \
        --precision "$prec" --optimizer adam --out "$p" || { echo "$model: plan failed"; return; }
    local sim; sim="$("$PLANNER" simulate --plan "$p" --cluster "$CLUSTER" --json)" || { echo "$model: simulate failed"; return; }
    if ! timeout 600 "$ENGINE" launch --plan "$p" --nprocs 1 --steps "$STEPS" --seed 7 --rank-args "--device cuda" > "$out" 2> "$out.err"; then
        echo "$model $prec $gb: the run failed: $(tail -3 "$out.err" "$out" | tr '\n' ' ' | cut -c1-400)"; return
    fi
    SIM="$sim" WARMUP="$WARMUP" python3 - "$out" "$model" "$prec" "$gb" <<'PY'
import json, os, statistics, sys
path, model, prec, gb = sys.argv[1:]
events = [json.loads(l) for l in open(path) if l.startswith("{")]
steps = [e["time_s"] for e in events if e.get("event") == "step"][int(os.environ["WARMUP"]):]
done = [e for e in events if e.get("event") == "done"]
sim = json.loads(os.environ["SIM"])
measured, predicted = statistics.median(steps), sim["iteration_time_s"]
peak = done[0].get("peak_device_bytes", 0) / 2**30 if done else float("nan")
print(f"{model:<12} {prec:<5} {gb:>5}  {measured:12.4f} {predicted:12.4f} {measured / predicted:7.2f}  {peak:10.2f} {sim['max_peak_memory_bytes'] / 2**30:10.2f}")
PY
}

row gpt2-small bf16 8
row gpt2-small bf16 32
row gpt2-small fp32 8
row gpt2-medium bf16 16
row bert-base bf16 32
row resnet50 bf16 128
row vgg16 bf16 64
