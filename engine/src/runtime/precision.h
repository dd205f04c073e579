#pragma once
// Mixed precision as the plan's ModelSpec says (what the cost model assumes): parameters,
// gradients and optimizer state stay fp32 (the master weights), and the forward runs under
// LibTorch's autocast, which computes matmuls and convolutions in bf16 or fp16. fp16 needs a
// loss scale against gradients that underflow: dynamic loss scaling as torch.cuda.amp's
// GradScaler does it (skip the step and halve the scale on an inf/NaN gradient anywhere in the
// model, double it after `growth_interval` good steps). LibTorch 1.13's CPU autocast knows
// bf16 only, so fp16 needs a CUDA device.
#include <string>

#include <torch/torch.h>

#include "planners/model/graph.h"

namespace hippie::engine {

// Throws Error when `p` cannot run on `device` (fp16 on a CPU).
void checkPrecision(Precision p, const torch::Device& device);

// Autocast on this thread for the forward of a mixed-precision plan; nothing for fp32.
class AutocastScope {
public:
    AutocastScope(Precision p, const torch::Device& device);
    ~AutocastScope();
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

private:
    bool active_ = false;
    bool cuda_ = false;
    bool was_enabled_ = false;
    at::ScalarType was_dtype_ = at::kFloat;
};

class LossScaler {
public:
    static constexpr double kInitialScale = 65536.0;  // GradScaler's
    static constexpr int kGrowthInterval = 2000;

    explicit LossScaler(bool enabled, double initial_scale = kInitialScale) : enabled_(enabled), scale_(initial_scale) {}
    bool enabled() const { return enabled_; }
    double scale() const { return enabled_ ? scale_ : 1.0; }
    // Good steps since the scale last changed: a checkpoint keeps them with the scale, so
    // that a resumed run grows its scale at the step the uninterrupted run does.
    int goodSteps() const { return good_steps_; }
    void restore(double scale, int good_steps) {
        scale_ = scale;
        good_steps_ = good_steps;
    }
    // After the gradients of a step are known: whether the step may be taken (no inf/NaN
    // anywhere), and the scale for the next step.
    bool update(bool found_inf);
    int skippedSteps() const { return skipped_; }

private:
    bool enabled_;
    double scale_;
    int good_steps_ = 0;
    int skipped_ = 0;
};

}  // namespace hippie::engine
