#include "engine/src/runtime/cpu_threads.h"

#include <dlfcn.h>

#include <algorithm>
#include <thread>

#include <torch/torch.h>

namespace hippie::engine {

int threadsPerRank(int requested, int ranks_on_host) {
    if (requested > 0) return requested;
    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    return std::max(1, cores / std::max(1, ranks_on_host));
}

CpuSetup configureCpu(int threads) {
    CpuSetup s;
    s.threads = std::max(1, threads);
    torch::set_num_threads(s.threads);
    at::globalContext().setFlushDenormal(true);  // what Python's torch.set_flush_denormal calls
    // OpenBLAS is found at run time (libblas.so.3 is an alternatives link): nothing to link.
    using SetThreads = void (*)(int);
    using GetThreads = int (*)();
    auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    if (set) {
        set(s.threads);
        s.blas = "openblas (" + std::to_string(get ? get() : s.threads) + " threads)";
    } else {
        s.blas = "reference or unknown BLAS (install libopenblas0-pthread for fast matmuls)";
    }
    return s;
}

}  // namespace hippie::engine
