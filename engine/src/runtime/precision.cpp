#include "engine/src/runtime/precision.h"

#include <ATen/autocast_mode.h>

#include "planners/common/error.h"

namespace hippie::engine {

void checkPrecision(Precision p, const torch::Device& device) {
    if (p == Precision::FP16 && !device.is_cuda())
        throw Error("the plan's precision fp16 needs a CUDA device: LibTorch's CPU autocast computes in bf16 only (plan with "
                    "precision bf16 to train mixed precision on a CPU)");
}

AutocastScope::AutocastScope(Precision p, const torch::Device& device) {
    if (!isMixed(p)) return;
    active_ = true;
    cuda_ = device.is_cuda();
    const at::ScalarType dtype = p == Precision::BF16 ? at::kBFloat16 : at::kHalf;
    if (cuda_) {
        was_enabled_ = at::autocast::is_enabled();
        was_dtype_ = at::autocast::get_autocast_gpu_dtype();
        at::autocast::set_autocast_gpu_dtype(dtype);
        at::autocast::set_enabled(true);
    } else {
        was_enabled_ = at::autocast::is_cpu_enabled();
        was_dtype_ = at::autocast::get_autocast_cpu_dtype();
        at::autocast::set_autocast_cpu_dtype(dtype);
        at::autocast::set_cpu_enabled(true);
    }
    at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
    if (!active_) return;
    // The cast copies of the weights live until the outermost scope ends, as in Python.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (cuda_) {
        at::autocast::set_enabled(was_enabled_);
        at::autocast::set_autocast_gpu_dtype(was_dtype_);
    } else {
        at::autocast::set_cpu_enabled(was_enabled_);
        at::autocast::set_autocast_cpu_dtype(was_dtype_);
    }
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
