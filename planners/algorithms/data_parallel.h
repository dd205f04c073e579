#pragma once
// `data-parallel`: every device holds the whole model (PyTorch DDP): one stage, dp = the
// largest divisor of the global batch not above the device count, bucketed gradient
// all-reduce overlapping backward (the hippie schedule with pp = 1), and gradient
// accumulation (more micro-batches) only when one pass's activations do not fit.
#include "planners/algorithms/planner.h"

namespace hippie {

class DataParallelPlanner : public Planner {
public:
    static constexpr const char* kName = "data-parallel";
    static constexpr const char* kDescription =
        "whole model on every device (DDP, bucketed all-reduce overlapping backward), gradient accumulation if activations do not fit";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;
};

}  // namespace hippie
