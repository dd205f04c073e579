#!/usr/bin/env bash
# The sanitizer build: the planning core, hippie-plan, the agent, the job and store libraries
# built with clang, AddressSanitizer and UndefinedBehaviorSanitizer (-O1), and run: the CLI
# suites, the short agent soak and each libFuzzer harness of tests/fuzz on a fixed seed and number
# of inputs (tests/fuzz/CMakeLists.txt), and the core and jobs unit suites (SANITIZE_QUICK=1: not those).
# ./dev.sh test (CI) runs this after the main suites; SANITIZE=0 skips it.
# The engine and the studio stay out (LibTorch and the GUI libraries are not built with them).
# Usage: tests/sanitize/run.sh [BUILD_DIR]   (default: build-sanitize beside build; JOBS as dev.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-${SANITIZE_BUILD_DIR:-$root/build-sanitize}}"
jobs="${JOBS:-$(nproc)}"
cxx="${SANITIZE_CXX:-clang++-14}"

if ! command -v "$cxx" >/dev/null; then
  echo "sanitize: $cxx not found; install clang-14 and libclang-rt-14-dev (packaging/install-deps.sh)" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g" "${launcher[@]}" \
  -DHIPPIE_SANITIZE=ON -DHIPPIE_FUZZ=ON -DHIPPIE_BUILD_ENGINE=OFF -DHIPPIE_BUILD_STUDIO=OFF
# By default (what ./dev.sh test and CI run): everything this configuration builds (the planning
# core, hippie-plan, the agent, the job and store libraries, their Qt Test suites and the fuzz
# harnesses), then the core, CLI and jobs suites (the short agent soak among them) and each
# fuzzer. Measured on this project's 2-core machine: the build ran 25 minutes at the lowest
# priority beside the main suites (less alone), and the 45 suites took 295 s with -j2 (the
# hippie and placement planner suites are the longest under ASan). SANITIZE_QUICK=1 builds and
# runs only hippie-plan, the agent, the CLI suites, the soak and the fuzzers (what CI ran until
# 2026-12-04), for a quicker check while developing.
if [[ "${SANITIZE_QUICK:-0}" != 0 ]]; then
  cmake --build "$build" -j "$jobs" --target hippie-plan hippie-agent fuzz_graph_json fuzz_cluster_json \
    fuzz_plan_json fuzz_trace_json fuzz_pipeline fuzz_agent_messages
  selection=(-R '^(cli\.|jobs\.soak_short$|fuzz\.)')
else
  cmake --build "$build" -j "$jobs"
  selection=(-L 'core|cli|jobs|fuzz')
fi

# Leaks count (Qt's own one-time allocations are not reported in these non-GUI programs); the
# first UBSan report fails the test that caused it.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "${selection[@]}" ${SANITIZE_CTEST_ARGS:-}
