#!/usr/bin/env bash
# Reruns every prediction in docs/validation.md and prints it beside the published
# measurement with the error, (predicted - measured) / measured. A benchmark, not a test:
# registered nowhere in CTest, never run by CI. Nothing here is fitted: the measured figures
# are copied from the sources the doc cites.
#
# Usage (from the repository root): tests/bench/validation.sh [path/to/hippie-plan]
# Needs python3 (to read the --json output). Takes a few seconds.
set -euo pipefail

B=${1:-build/bin/hippie-plan}
[[ -x $B ]] || { echo "validation.sh: $B is not an executable hippie-plan; build it or pass its path" >&2; exit 2; }
B=$(realpath "$B")
cd "$(dirname "$0")/../.."

EX=resources/examples
V100=$EX/dgx1-v100.cluster.json
EDR=$EX/v100-sxm2-4x8-edr.cluster.json
P40=$EX/p40-1x8.cluster.json
RTX=$EX/rtx2080-1x4.cluster.json
GPT1536="layers=16,d_model=1536,heads=16,d_ff=6144,vocab=50304,positions=2048,seq_len=2048"
GPT768="layers=12,d_model=768,heads=12,d_ff=3072,vocab=50304,positions=2048,seq_len=2048"
MEGATRON="--model gpt2-small --precision fp16 --schedule 1f1b --recompute --optimizer adam --cluster $EDR"
# Megatron-LM SC'21 Table 1, first row: 137 teraFLOP/s a GPU on 32 GPUs is, by the paper's
# Equation 3 (1.5467e16 FLOPs an iteration), an iteration of 3528.02 ms.
SC21="--model gpt2-small --override layers=24,d_model=2304,heads=24,d_ff=9216,vocab=51200,positions=2048,seq_len=2048 --cluster dgx-a100-4x8 --precision fp16 --schedule 1f1b --recompute --optimizer adam --pp 1 --dp 32 --global-batch 512"
# Megatron-LM 2019 (arXiv 1909.08053) Table 1: GPT-2 with 96 dimensions a head, batch 8,
# sequence 1024, vocabulary 51,200, on one DGX-2H, tensor parallelism 1 to 8 (Figure 5).
DGX2H=$EX/dgx2h-32x16.cluster.json
MEG19="--model gpt2-small --cluster $DGX2H --precision fp16 --schedule 1f1b --recompute --optimizer adam --pp 1 --dp 1 --global-batch 8 --microbatches 1"
meg19() { echo "layers=$3,d_model=$1,heads=$2,d_ff=$((4 * $1)),vocab=51200,positions=1024,seq_len=1024"; }
GPIPE="--model resnet101 --cluster $P40 --precision fp32 --optimizer sgd --schedule gpipe"
RN50="--model resnet50 --pp 1 --microbatches 1 --schedule hippie --optimizer sgd-momentum"
INCEPTION="--model inception-v3 --cluster $RTX --global-batch 64 --optimizer sgd"

# metric: "img/s" or "samples/s" compare throughput, "ms" compares iteration time.
# kind: sim (simulate ARGS), plan (simulate --plan FILE), place:PLANNER (compare ARGS).
rows=(
  "resnet50 A100 1 GPU AMP|img/s|2470|sim|$RN50 --cluster dgx-a100-1x8 --precision fp16 --dp 1 --global-batch 256"
  "resnet50 A100 8 GPU AMP|img/s|16621|sim|$RN50 --cluster dgx-a100-1x8 --precision fp16 --dp 8 --global-batch 2048"
  "resnet50 V100 1 GPU AMP|img/s|1200|sim|$RN50 --cluster $V100 --precision fp16 --dp 1 --global-batch 256"
  "resnet50 V100 8 GPU AMP|img/s|8322|sim|$RN50 --cluster $V100 --precision fp16 --dp 8 --global-batch 2048"
  "resnet50 V100 1 GPU FP32|img/s|367|sim|$RN50 --cluster $V100 --precision fp32 --dp 1 --global-batch 112"
  "resnet50 V100 8 GPU FP32|img/s|2855|sim|$RN50 --cluster $V100 --precision fp32 --dp 8 --global-batch 896"
  "Megatron DP_1x1x1_2_1536x16|ms|464.12|sim|$MEGATRON --override $GPT1536 --pp 1 --dp 1 --global-batch 2 --microbatches 1"
  "Megatron DP_8x1x1_16_1536x16|ms|480.96|sim|$MEGATRON --override $GPT1536 --pp 1 --dp 8 --global-batch 16 --microbatches 1"
  "Megatron DP_16x1x1_32_1536x16|ms|664.46|sim|$MEGATRON --override $GPT1536 --pp 1 --dp 16 --global-batch 32 --microbatches 1"
  "Megatron DP_32x1x1_64_1536x16|ms|683.51|sim|$MEGATRON --override $GPT1536 --pp 1 --dp 32 --global-batch 64 --microbatches 1"
  "Megatron MP_1x1x1_8_768x12|ms|611.2|sim|$MEGATRON --override $GPT768 --pp 1 --dp 1 --global-batch 8 --microbatches 1"
  "Megatron DP_PP_8x1x4_512_1536x16|ms|4893.55|plan|$EX/validation/megatron-gpt-1536x16-pp4-dp8.plan.json"
  "SC'21 Table 1 row 1, micro-batch 1|ms|3528.02|sim|$SC21 --microbatches 16"
  "SC'21 Table 1 row 1, micro-batch 16|ms|3528.02|sim|$SC21 --microbatches 1"
  "Megatron v1.0 1.2B, 1 V100 (2020)|ms|1288|sim|$MEG19 --tp 1 --override $(meg19 1536 16 40)"
  "torchgpipe resnet101 baseline|samples/s|95.862|sim|$GPIPE --pp 1 --dp 1 --global-batch 118 --microbatches 1"
  "torchgpipe resnet101 pipeline-1|samples/s|81.796|sim|$GPIPE --recompute --pp 1 --dp 1 --global-batch 220 --microbatches 2"
  "torchgpipe resnet101 pipeline-2|samples/s|135.539|sim|$GPIPE --recompute --pp 2 --dp 1 --global-batch 25005 --microbatches 1667"
  "torchgpipe resnet101 pipeline-4|samples/s|265.958|sim|$GPIPE --recompute --pp 4 --dp 1 --global-batch 5632 --microbatches 256"
  "torchgpipe resnet101 pipeline-8|samples/s|411.662|sim|$GPIPE --recompute --pp 8 --dp 1 --global-batch 5400 --microbatches 150"
  "Baechi inception-v3 single GPU|ms|458.78|sim|$INCEPTION --precision fp32 --pp 1 --dp 1 --microbatches 1 --schedule gpipe"
  "Baechi inception-v3 m-ETF 4 GPU|ms|465.68|place:m-etf|$INCEPTION"
  "Baechi inception-v3 m-SCT 4 GPU|ms|464.51|place:m-sct|$INCEPTION"
  "Baechi inception-v3 m-TOPO 4 GPU|ms|535.15|place:m-topo|$INCEPTION"
)

# Reads simulate's or compare's JSON on stdin and prints the predicted metric and the
# predicted peak memory of the busiest device in GiB.
read_metric() {
    python3 -c '
import json, sys
metric, planner = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
if planner:
    d = next(r["metrics"] for r in d["results"] if r["planner"] == planner)
print(d["iteration_time_s"] * 1000 if metric == "ms" else d["throughput_samples_per_s"], d["max_peak_memory_bytes"] / 2**30)
' "$1" "$2"
}

printf '%-36s %-9s %10s %10s %8s %10s\n' case metric measured predicted error "peak GiB"
for row in "${rows[@]}"; do
    IFS='|' read -r name metric measured kind args <<<"$row"
    # shellcheck disable=SC2086  # args are word lists on purpose
    case $kind in
    sim) predicted=$("$B" simulate $args --json | read_metric "$metric" "") ;;
    plan) predicted=$("$B" simulate --plan "$args" --json | read_metric "$metric" "") ;;
    place:*) predicted=$("$B" compare $args --planners "${kind#place:}" --json | read_metric "$metric" "${kind#place:}") ;;
    esac
    read -r predicted peak <<<"$predicted"
    python3 -c 'import sys; n, m, u, p, g = sys.argv[1:]; m, p, g = float(m), float(p), float(g)
print(f"{n:36s} {u:9s} {m:10.2f} {p:10.2f} {100 * (p - m) / m:+7.1f}% {g:10.2f}")' "$name" "$measured" "$metric" "$predicted" "$peak"
done

# Weak scaling (1909.08053, Figure 5): a GPU's share of an iteration's FLOPs per second,
# relative to the 1.2B model on one GPU; tensor parallel alone (batch 8), then with 64-way
# data parallelism (batch 512) on 4 to 32 servers. FLOPs by SC'21's Equation 3 at a fixed
# sequence: F ~ B l h^2 (1 + s / (6 h) + V / (16 l h)).
echo
printf '%-36s %-9s %10s %10s %8s\n' "Megatron 2019 weak scaling" metric measured predicted error
base=""
for cfg in "1 1 1536 16 40 100" "2 1 1920 20 54 95" "4 1 2304 24 64 82" "8 1 3072 32 72 77" \
    "1 64 1536 16 40 96" "2 64 1920 20 54 83" "4 64 2304 24 64 79" "8 64 3072 32 72 74"; do
    read -r tp dp h a l measured <<<"$cfg"
    # shellcheck disable=SC2086
    t=$("$B" simulate ${MEG19/--dp 1 --global-batch 8/--dp $dp --global-batch $((8 * dp))} --tp "$tp" \
        --override "$(meg19 "$h" "$a" "$l")" --json | read_metric ms "" | cut -d' ' -f1)
    [[ -n $base ]] || base=$t
    python3 -c 'import sys
tp, dp, h, l, t, base, m = map(float, sys.argv[1:])
flops = lambda h, l: l * h * h * (1 + 1024 / (6 * h) + 51200 / (16 * l * h))
p = 100 * (flops(h, l) / (tp * t)) / (flops(1536, 40) / base)
name = "tp %d x dp %d, %d x %d" % (tp, dp, l, h)
unit = "% of 1 GPU"
print(f"{name:36s} {unit:9s} {m:10.1f} {p:10.1f} {p - m:+7.1f}pt")' "$tp" "$dp" "$h" "$l" "$t" "$base" "$measured"
done
