#!/usr/bin/env bash
# The two commands of the README's quick start.
#   ./dev.sh run    install what is missing, build, open the studio on the default example
#                   (with no display: run the headless comparison instead)
#   ./dev.sh test   install what is missing, build, run the whole test suite, then the sanitizer
#                   build (clang, ASan + UBSan) of the planning core, CLI, agent and job libraries
#                   with their core, CLI and job suites, a short agent soak and each fuzzer briefly
#                   (tests/sanitize/run.sh; SANITIZE=0 skips it)
# BUILD_DIR (default: build) and JOBS (default: all cores) can be set in the environment.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-$(nproc)}"

# The default example: a 1.3B-parameter GPT-3 on two DGX A100 nodes.
example_model=gpt3-1.3b
example_cluster=dgx-a100-2x8
example_batch=512

build_all() {
  "$root/packaging/install-deps.sh"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$build" -j "$jobs"
}

headless_comparison() {
  "$build/bin/hippie-plan" compare --model "$example_model" --cluster "$example_cluster" \
    --global-batch "$example_batch" --precision fp16
}

case "${1:-}" in
  run)
    build_all
    studio="$build/bin/hippie-studio"
    if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" ]]; then
      echo "No display (DISPLAY and WAYLAND_DISPLAY are unset): running the headless comparison instead."
      headless_comparison
    elif [[ -x "$studio" ]]; then
      exec "$studio" --model "$example_model" --cluster "$example_cluster" --global-batch "$example_batch"
    else
      echo "hippie-studio is not built yet (see the configure summary above): running the headless comparison."
      headless_comparison
    fi
    ;;
  test)
    build_all
    ctest --test-dir "$build" --output-on-failure -j "$jobs"
    # The sanitizer stage (tests/sanitize/run.sh): about a quarter of the whole on a 2-core
    # machine; SANITIZE=0 skips it.
    if [[ "${SANITIZE:-1}" != 0 ]]; then
      JOBS="$jobs" "$root/tests/sanitize/run.sh" "${build}-sanitize"
    fi
    ;;
  *)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
