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

// OpenBLAS (Debian's is built DYNAMIC_ARCH) picks its kernels from the CPU's model when it
// loads. A virtual machine that hides the model ("Intel(R) Xeon(R) Processor") makes 0.3.21
// fall back to Prescott's SSE3 kernels: a quarter of an AVX-512 core's matmul rate (62 against
// 241 GFLOP/s measured here, one thread). The kernels this CPU can run instead ("SkylakeX" with
// AVX-512, "Haswell" with AVX2), when OpenBLAS chose slower ones; "" otherwise. OpenBLAS reads
// OPENBLAS_CORETYPE only when it loads: main() sets it and runs the engine again.
std::string blasCoreToForce();

// Threads for one of `ranks_on_host` ranks on this host: the host's cores split evenly (at
// least 1), or `requested` when positive.
int threadsPerRank(int requested, int ranks_on_host);

// Sets LibTorch's and OpenBLAS's threads and flushes denormal floats to zero: after a few
// SGD steps a GPT's small gradients and activations turn denormal, and on x86 every operation
// on one takes a microcode assist (a GPT backward measured 4x slower without the flush).
// With glibc, large buffers are kept in the heap for reuse instead of mapped afresh each step.
CpuSetup configureCpu(int threads);

}  // namespace hippie::engine
