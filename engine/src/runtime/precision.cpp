#include "engine/src/runtime/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "planners/common/error.h"

namespace hippie::engine {

void checkPrecision(Precision p, const torch::Device& device) {
    if (p == Precision::FP16 && !device.is_cuda())
        throw Error("the plan's precision fp16 needs a CUDA device: LibTorch's CPU autocast computes in bf16 only (plan with "
                    "precision bf16 to train mixed precision on a CPU)");
}

namespace {

// PyTorch 2.4 replaced the per-device autocast setters (set_enabled, set_cpu_enabled,
// set_autocast_gpu_dtype, ...) by ones taking the device type, and later releases drop the
// old names; 1.13 has only the old ones. This is the one place that knows.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocastEnabled(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }
at::ScalarType autocastDtype(bool cuda) { return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU); }
void setAutocast(bool cuda, bool enabled, at::ScalarType dtype) {
    const at::DeviceType type = cuda ? at::kCUDA : at::kCPU;
    at::autocast::set_autocast_dtype(type, dtype);
    at::autocast::set_autocast_enabled(type, enabled);
}
#else
bool autocastEnabled(bool cuda) { return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }
at::ScalarType autocastDtype(bool cuda) {
    return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void setAutocast(bool cuda, bool enabled, at::ScalarType dtype) {
    if (cuda) {
        at::autocast::set_autocast_gpu_dtype(dtype);
        at::autocast::set_enabled(enabled);
    } else {
        at::autocast::set_autocast_cpu_dtype(dtype);
        at::autocast::set_cpu_enabled(enabled);
    }
}
#endif

}  // namespace

AutocastScope::AutocastScope(Precision p, const torch::Device& device) {
    if (!isMixed(p)) return;
    active_ = true;
    cuda_ = device.is_cuda();
    was_enabled_ = autocastEnabled(cuda_);
    was_dtype_ = autocastDtype(cuda_);
    setAutocast(cuda_, true, p == Precision::BF16 ? at::kBFloat16 : at::kHalf);
    at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
    if (!active_) return;
    // The cast copies of the weights live until the outermost scope ends, as in Python.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    setAutocast(cuda_, was_enabled_, was_dtype_);
}

bool LossScaler::update(bool found_inf) {
    if (!enabled_) return true;
    if (found_inf) {
        scale_ /= 2;
        good_steps_ = 0;
        ++skipped_;
        return false;
    }
    if (++good_steps_ >= kGrowthInterval) {
        scale_ *= 2;
        good_steps_ = 0;
    }
    return true;
}

}  // namespace hippie::engine
