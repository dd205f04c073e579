#pragma once
// Memory the planners free is kept for their next allocation.
//
// Planning builds and drops thousands of Programs and Traces of up to megabytes each (every
// simulated candidate, every baseline's micro-batch sweep). glibc's malloc by default hands
// freed memory at the top of its heap back to the system and serves large blocks from fresh
// mappings, so every Program's pages fault in again: on this project's 2-core VM that was half
// of hippie's planning time on gpt3-13b / dgx-a100-4x8 (42,000 page faults for a 36 MB peak;
// tests/bench/README.md has the figures). A program that plans (hippie-plan, hippie-studio,
// the benchmarks) calls this once at start, as hippie-engine does for its tensors; the price is that up to kKeptFreeBytes of freed
// heap stay with each malloc arena until releaseFreedMemory. A no-op off glibc.
#include <cstdint>

namespace hippie {

inline constexpr int64_t kKeptFreeBytes = int64_t{128} << 20;  // glibc's M_TRIM_THRESHOLD
inline constexpr int64_t kMappedAboveBytes = int64_t{32} << 20;  // M_MMAP_THRESHOLD: its largest allowed value

// Blocks up to kMappedAboveBytes come from the heap, and up to `kept_free_bytes` of freed heap
// stay with each arena (the engine keeps more: its steps reuse gigabytes of buffers). True
// when the allocator took the settings (false off glibc, and under AddressSanitizer, whose
// allocator ignores mallopt).
bool keepFreedMemoryForReuse(int64_t kept_free_bytes = kKeptFreeBytes);

// Every thread allocates from the one main heap (glibc's M_ARENA_MAX 1) instead of an arena of
// its own. Threads' arenas are heaps of at most 64 MiB that glibc maps, shrinks and drops on
// its own terms whatever the thresholds above say, so the buffers LibTorch's autograd thread
// and Gloo's worker threads allocate (an all-gather's flat output, each call) faulted in afresh
// every step: ZeRO-3 on a 20M-parameter GPT, dp2 (parameters already views of the gathered
// buffers), 93,000-111,000 page faults a step over the two ranks, 250-450 with this
// (tests/bench/README.md). The price is one lock for every thread's
// allocations beyond glibc's per-thread cache of small blocks: for a training rank, whose
// threads take turns, nothing measurable; not for the studio's concurrent planner threads.
// False off glibc and under AddressSanitizer.
bool shareOneMallocArena();

// Hands the freed memory kept so far back to the system (every malloc arena's: each planner
// thread of the studio has its own). A long-running program calls it once planning is done,
// so that what it keeps between plannings is what it uses. No-op off glibc.
void releaseFreedMemory();

}  // namespace hippie
