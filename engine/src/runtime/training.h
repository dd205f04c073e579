#pragma once
// The training hyper-parameters of a run beyond the plan: the optimizer's learning rate and
// weight decay, a learning-rate schedule (linear warm-up, then constant or cosine decay) and
// gradient clipping by the global norm, the norm of every gradient of the model (all stages,
// counted once however many replicas hold a stage), as torch.nn.utils.clip_grad_norm_
// computes it in one process.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "planners/schedule/plan.h"

namespace hippie::engine {

struct TrainingOptions {
    double lr = 0;              // 0: the optimizer's default (sgd 0.05, adam/adamw 1e-3)
    double weight_decay = 0;    // L2 for sgd/adam, decoupled for adamw
    int warmup_steps = 0;       // linear warm-up from lr/warmup to lr
    std::string lr_schedule = "constant";  // constant or cosine
    int decay_steps = 0;        // cosine: steps from the end of warm-up to min_lr; 0: the run's steps
    double min_lr = 0;          // cosine floor
    double clip_grad_norm = 0;  // 0: no clipping
    // > 0: dynamic loss scaling (precision.h) from this scale on any precision; fp16 plans scale
    // from LossScaler::kInitialScale without it.
    double loss_scale = 0;
};

// Throws Error naming the flag for a value out of range.
void checkTrainingOptions(const TrainingOptions& t);

double defaultLearningRate(Optimizer o);

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(Optimizer kind, const std::vector<torch::Tensor>& params, double lr,
                                                       double weight_decay);

// Learning rate of `step` (0-based) of a run of `total_steps`.
double learningRate(const TrainingOptions& t, double base_lr, int step, int total_steps);
void setLearningRate(torch::optim::Optimizer& opt, double lr);

// Sum of squares of the gradients of `params` (undefined gradients count 0), in double.
double squaredGradNorm(const std::vector<torch::Tensor>& params);
// Scales every gradient by min(1, max_norm / (norm + 1e-6)), as clip_grad_norm_ does.
void scaleGradsToNorm(const std::vector<torch::Tensor>& params, double norm, double max_norm);

}  // namespace hippie::engine
