#pragma once
// CPU threads of one rank. Debian's LibTorch runs its matmuls in whatever libblas.so.3 the
// system's alternatives point to (OpenBLAS when libopenblas0-pthread is installed, which the
// hippie-engine package depends on); OpenBLAS keeps its own thread pool, which
// torch::set_num_threads does not size, so both are set here. Ranks sharing a host split its
// cores: more threads than cores makes every rank slower than fewer threads would.
#include <string>

namespace hippie::engine {

struct CpuSetup {
    int threads = 1;           // intra-op threads of LibTorch and of the BLAS
    std::string blas;          // "openblas SkylakeX (N threads)" or "reference or unknown BLAS"
};

// Threads for one of `ranks_on_host` ranks on this host: the host's cores split evenly (at
// least 1), or `requested` when positive.
int threadsPerRank(int requested, int ranks_on_host);

// Sets LibTorch's and OpenBLAS's threads and flushes denormal floats to zero: after a few
// SGD steps a GPT's small gradients and activations turn denormal, and on x86 every operation
// on one takes a microcode assist (a GPT backward measured 4x slower without the flush).
// With glibc, large buffers are kept in the heap for reuse instead of mapped afresh each step
// (and main() gives every thread that one heap: shareOneMallocArena).
CpuSetup configureCpu(int threads);

}  // namespace hippie::engine
