#pragma once
// Which OpenBLAS kernels this process runs, and which it should. Plain C++ (no LibTorch): the
// engine's front (main.cpp) asks before it starts the LibTorch half, so that the ranks inherit
// OPENBLAS_CORETYPE instead of loading LibTorch twice.
#include <string>

namespace hippie::engine {

// OpenBLAS's name of the kernels it chose at load ("Haswell"), or "" when the BLAS is not
// OpenBLAS. Looks in this process first, else loads libblas.so.3 (the alternatives link
// Debian's LibTorch calls) on its own.
std::string openBlasCore();

// OpenBLAS (Debian's is built DYNAMIC_ARCH) picks its kernels from the CPU's model when it
// loads. A virtual machine that hides the model ("Intel(R) Xeon(R) Processor") makes 0.3.21
// fall back to Prescott's SSE3 kernels: a quarter of an AVX-512 core's matmul rate (62 against
// 241 GFLOP/s measured here, one thread). The kernels this CPU can run instead ("SkylakeX" with
// AVX-512, "Haswell" with AVX2), when OpenBLAS chose slower ones; "" otherwise. OpenBLAS reads
// OPENBLAS_CORETYPE only when it loads: set it before the process that computes starts.
std::string blasCoreToForce();

// Sets OPENBLAS_CORETYPE to blasCoreToForce() unless it is set already (a user's choice is
// kept); true when it set it.
bool forceBlasKernels();

}  // namespace hippie::engine
