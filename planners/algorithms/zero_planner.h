#pragma once
// `zero`: pure data parallelism (every device runs the whole model, as the data-parallel
// baseline) with the lowest ZeRO stage whose model states and activations fit device memory
// (DeepSpeed's advice: shard no more than memory requires; stage 3 is FSDP). Per stage it
// sweeps the micro-batch count (gradient accumulation) as the data-parallel baseline does and
// stops at the first stage with a plan that fits.
#include "planners/algorithms/planner.h"

namespace hippie {

class ZeroPlanner : public Planner {
public:
    static constexpr const char* kName = "zero";
    static constexpr const char* kDescription =
        "whole model on every device with the lowest ZeRO stage that fits (1 optimizer state, 2 + gradients, 3 + parameters: FSDP)";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;
};

}  // namespace hippie
