#include "engine/src/runtime/blas_core.h"

#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

namespace hippie::engine {

namespace {

bool oneOf(const std::string& core, std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return strcasecmp(core.c_str(), n) == 0; });
}

}  // namespace

std::string openBlasCore() {
    using GetName = char* (*)();
    auto name = reinterpret_cast<GetName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    if (!name) {
        // Not loaded here (the front links no BLAS): load it on its own. The handle stays open,
        // as every later lookup would load it again.
        static void* const blas = dlopen("libblas.so.3", RTLD_LAZY | RTLD_LOCAL);
        if (blas) name = reinterpret_cast<GetName>(dlsym(blas, "openblas_get_corename"));
    }
    const char* core = name ? name() : nullptr;
    return core ? core : "";
}

std::string blasCoreToForce() {
#if defined(__x86_64__)
    const std::string core = openBlasCore();
    if (core.empty()) return "";
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx512 && !oneOf(core, {"SkylakeX", "Cooperlake", "SapphireRapids"})) return "SkylakeX";
    if (avx2 && !avx512 && !oneOf(core, {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})) return "Haswell";
#endif
    return "";
}

bool forceBlasKernels() {
    if (std::getenv("OPENBLAS_CORETYPE")) return false;
    const std::string core = blasCoreToForce();
    return !core.empty() && setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0;
}

}  // namespace hippie::engine
