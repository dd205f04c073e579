#!/usr/bin/env bash
# Remakes the user guide's pictures of the studio's pages (docs/images) from a build, on the
# guide's example: GPT-3 1.3B on two DGX A100 nodes, global batch 512, at 1600x1000 and at
# 1280x800 ("-1280" in the name). Settings and the run store are a fresh temporary pair, so a
# saved window layout or earlier runs do not show. The Gantt close-ups come from the GUI tests
# and the operator's properties come from the GUI tests (HIPPIE_SCREENSHOT_DIR); the pictures of
# runs need an engine and are made by hand.
#
#   docs/make-screenshots.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, docs/images)
set -euo pipefail

build=${1:-build}
out=${2:-docs/images}
studio="$build/bin/hippie-studio"
[[ -x $studio ]] || { echo "no $studio: build the hippie-studio target first" >&2; exit 2; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The Workers dock shows this machine ready when an engine is found: $HIPPIE_ENGINE, or the build's.
if [[ -z ${HIPPIE_ENGINE:-} && -x $build/bin/hippie-engine ]]; then export HIPPIE_ENGINE="$(cd "$build" && pwd)/bin/hippie-engine"; fi
# A home of its own: the run store is shown as ~/.local/share/hippie-studio/runs.sqlite.
export HOME="$tmp" XDG_CONFIG_HOME="$tmp/.config" XDG_DATA_HOME="$tmp/.local/share" QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"

shoot() {  # NAME VIEW SIZE
    echo "$out/$1"
    "$studio" --model gpt3-1.3b --cluster dgx-a100-2x8 --global-batch 512 --precision fp16 \
        --view "$2" --screenshot-size "$3" --screenshot "$out/$1"
}

for view in compare gantt graph teaching; do
    shoot "$view.png" "$view" 1600x1000
    shoot "$view-1280.png" "$view" 1280x800
done
# The tensor-parallel, ZeRO and selective recomputation lessons (numbers in the Teaching page's
# list), whole iterations.
"$studio" --no-run --lesson 8 --screenshot-size 1280x800 --screenshot "$out/teaching-tp.png" && echo "$out/teaching-tp.png"
"$studio" --no-run --lesson 11 --screenshot-size 1280x800 --screenshot "$out/teaching-zero.png" && echo "$out/teaching-zero.png"
"$studio" --no-run --lesson 13 --screenshot-size 1280x800 --screenshot "$out/teaching-zero3.png" && echo "$out/teaching-zero3.png"
"$studio" --no-run --lesson 16 --screenshot-size 1280x800 --screenshot "$out/teaching-recompute.png" && echo "$out/teaching-recompute.png"
"$studio" --no-run --lesson 17 --screenshot-size 1280x800 --screenshot "$out/teaching-pipedream.png" && echo "$out/teaching-pipedream.png"
"$studio" --no-run --lesson 19 --screenshot-size 1280x800 --screenshot "$out/teaching-stage-tp.png" && echo "$out/teaching-stage-tp.png"
# A t2 x pp2 x dp2 ZeRO-1 plan of GPT-2 small: its Gantt chart with rows grouped by stage, replica and rank.
"$build/bin/hippie-plan" simulate --model gpt2-small --precision fp16 --cluster dgx-a100-1x8 --pp 2 --dp 2 --tp 2 --zero 1 \
    --microbatches 4 --global-batch 16 --schedule 1f1b --save-plan "$tmp/tp.json" >/dev/null
"$studio" --plan "$tmp/tp.json" --view gantt --screenshot-size 1280x800 --screenshot "$out/gantt-tp.png" && echo "$out/gantt-tp.png"
# PipeDream's per-stage replication: VGG-16's convolutions on 3 GPUs, its fully connected layers on 1.
"$build/bin/hippie-plan" simulate --model vgg16 --cluster v100-4x4 --pp 2 --dp 3 --stage-replicas 3,1 \
    --microbatches 2 --global-batch 48 --schedule 1f1b --save-plan "$tmp/rr.json" >/dev/null
"$studio" --plan "$tmp/rr.json" --view gantt --screenshot-size 1280x800 --screenshot "$out/gantt-stage-replicas.png" && echo "$out/gantt-stage-replicas.png"
"$build/bin/hippie-plan" simulate --model gpt2-medium --cluster dgx-a100-1x8 --pp 3 --dp 1 --stage-tp 2,4,2 --global-batch 32 \
    --microbatches 8 --precision fp16 --schedule 1f1b --save-plan "$tmp/ptp.json" > /dev/null
"$studio" --plan "$tmp/ptp.json" --view gantt --screenshot-size 1280x800 --screenshot "$out/gantt-stage-tp.png" && echo "$out/gantt-stage-tp.png"
shoot run-empty.png runs 1600x1000
shoot run-empty-1280.png runs 1280x800
shoot run-history-empty-1280.png history 1280x800

# Close-ups from the GUI tests: a selected Gantt block with its dependencies and a measured
# span, a folded node; an operator found by search with its properties.
HIPPIE_SCREENSHOT_DIR="$out" "$build/tests/test_gantt_interaction" >/dev/null
HIPPIE_SCREENSHOT_DIR="$out" "$build/tests/test_graph_view" legendAndPropertiesNameStagesAndDevices marksTheOpsTensorParallelismSplits >/dev/null
printf '%s\n' "$out/gantt-dependencies.png" "$out/gantt-collapsed.png" "$out/graph-properties.png" "$out/graph-tp.png"
