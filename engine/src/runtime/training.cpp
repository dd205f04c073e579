#include "engine/src/runtime/training.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "planners/common/error.h"

namespace hippie::engine {

namespace {
constexpr double kSgdDefaultLr = 0.05;
constexpr double kAdamDefaultLr = 1e-3;
constexpr double kMomentum = 0.9;
constexpr double kClipEpsilon = 1e-6;  // clip_grad_norm_'s
}  // namespace

void checkTrainingOptions(const TrainingOptions& t) {
    if (t.lr < 0) throw Error("--lr must not be negative");
    if (t.weight_decay < 0) throw Error("--weight-decay must not be negative");
    if (t.warmup_steps < 0) throw Error("--warmup-steps must not be negative");
    if (t.decay_steps < 0) throw Error("--decay-steps must not be negative");
    if (t.min_lr < 0) throw Error("--min-lr must not be negative");
    if (t.clip_grad_norm < 0) throw Error("--clip-grad-norm must not be negative (0: no clipping)");
    if (t.loss_scale < 0 || !std::isfinite(t.loss_scale))
        throw Error("--loss-scale must be a finite number, not negative (0: only fp16 plans scale, from 65536)");
    if (t.lr_schedule != "constant" && t.lr_schedule != "cosine")
        throw Error("--lr-schedule must be constant or cosine, not '" + t.lr_schedule + "'");
}

double defaultLearningRate(Optimizer o) { return o == Optimizer::SGD || o == Optimizer::SGDMomentum ? kSgdDefaultLr : kAdamDefaultLr; }

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(Optimizer kind, const std::vector<torch::Tensor>& params, double lr,
                                                       double weight_decay) {
    switch (kind) {
    case Optimizer::SGD: return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).weight_decay(weight_decay));
    case Optimizer::SGDMomentum:
        return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).momentum(kMomentum).weight_decay(weight_decay));
    case Optimizer::Adam: return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr).weight_decay(weight_decay));
    case Optimizer::AdamW: return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
    }
    throw Error("unknown optimizer");
}

double learningRate(const TrainingOptions& t, double base_lr, int step, int total_steps) {
    if (step < t.warmup_steps) return base_lr * (step + 1) / t.warmup_steps;
    if (t.lr_schedule != "cosine") return base_lr;
    const int decay = t.decay_steps > 0 ? t.decay_steps : std::max(1, total_steps - t.warmup_steps);
    const double progress = std::min(1.0, static_cast<double>(step - t.warmup_steps) / decay);
    return t.min_lr + 0.5 * (base_lr - t.min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

void setLearningRate(torch::optim::Optimizer& opt, double lr) {
    for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

double squaredGradNorm(const std::vector<torch::Tensor>& params) {
    double sum = 0;
    for (const torch::Tensor& p : params)
        if (p.grad().defined()) sum += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
    return sum;
}

void scaleGradsToNorm(const std::vector<torch::Tensor>& params, double norm, double max_norm) {
    const double coef = max_norm / (norm + kClipEpsilon);
    if (coef >= 1.0) return;
    torch::NoGradGuard no_grad;
    for (const torch::Tensor& p : params)
        if (p.grad().defined()) p.grad().mul_(coef);
}

}  // namespace hippie::engine
