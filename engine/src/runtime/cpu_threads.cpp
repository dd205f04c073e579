#include "engine/src/runtime/cpu_threads.h"

#include <dlfcn.h>

#include <algorithm>
#include <thread>

#include <torch/torch.h>

#include "engine/src/runtime/blas_core.h"
#include "planners/common/allocator.h"

namespace hippie::engine {

int threadsPerRank(int requested, int ranks_on_host) {
    if (requested > 0) return requested;
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return std::max(1, cores / std::max(1, ranks_on_host));
}

namespace {
constexpr int64_t kKeptHeapTop = int64_t{1} << 30;
}  // namespace

CpuSetup configureCpu(int threads) {
    CpuSetup s;
    s.threads = std::max(1, threads);
    torch::set_num_threads(s.threads);
    at::globalContext().setFlushDenormal(true);  // what Python's torch.set_flush_denormal calls
    // glibc maps every allocation of 128 KiB or more afresh and unmaps it when freed, so each
    // step's new gradients and activations page-fault again: half of a small MLP's backward
    // here (4 layers of 1024 x 1024, 4 samples: a step 13.2 ms, 9.1 ms with this, the same peak
    // RSS). Served from the heap up to 32 MiB (glibc's largest threshold), and the heap's top
    // kept rather than trimmed, freed buffers are reused.
    keepFreedMemoryForReuse(kKeptHeapTop);
    // OpenBLAS is found at run time (libblas.so.3 is an alternatives link): nothing to link.
    using SetThreads = void (*)(int);
    using GetThreads = int (*)();
    auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    if (set) {
        set(s.threads);
        s.blas = "openblas " + openBlasCore() + " (" + std::to_string(get ? get() : s.threads) + " threads)";
    } else {
        s.blas = "reference or unknown BLAS (install libopenblas0-pthread for fast matmuls)";
    }
    return s;
}

}  // namespace hippie::engine
