#pragma once
// `deepspeed-3d`: DeepSpeed's 3D parallelism (Megatron-DeepSpeed, as trained Megatron-Turing
// NLG): the smallest model-parallel size that fits, Megatron-style tensor parallelism
// (without sequence parallelism) first up to a node's GPUs, then DeepSpeed's pipeline engine
// (1F1B, gradients all-reduced after the flush) with its default partition of equal parameter
// counts, and ZeRO-1 over the data-parallel replicas; full recomputation only when nothing
// fits without it (tensor_pipeline.h).
#include "planners/algorithms/tensor_pipeline.h"

namespace hippie {

class DeepSpeed3DPlanner : public TensorPipelinePlanner {
public:
    static constexpr const char* kName = "deepspeed-3d";
    static constexpr const char* kDescription =
        "DeepSpeed 3D: the smallest Megatron tensor (up to a node's GPUs) x pipeline size that fits (equal parameters, "
        "1F1B), ZeRO-1 data parallel over the rest";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }

protected:
    ScheduleChoice schedule(int, int) const override { return {ScheduleKind::OneFOneB, 1}; }
    bool sequenceParallel() const override { return false; }
    StagesFn stageRule(const Problem& problem) const override;
};

}  // namespace hippie
