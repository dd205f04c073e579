#pragma once
// `megatron`: Megatron-LM's recipe (Narayanan et al., SC 2021; Korthikanti et al. 2022): the
// smallest model-parallel size that fits, tensor parallelism (with sequence parallelism) first
// up to a node's GPUs, then pipeline stages with equal layers each under the interleaved
// schedule (2 model chunks a device when the layers allow, 1F1B otherwise), data parallelism
// over the rest with the distributed optimizer (ZeRO-1); selective recomputation of the attention
// cores always (as the paper recommends with sequence parallelism), full recomputation only when
// nothing fits without it (tensor_pipeline.h).
#include "planners/algorithms/tensor_pipeline.h"

namespace hippie {

class MegatronPlanner : public TensorPipelinePlanner {
public:
    static constexpr const char* kName = "megatron";
    static constexpr const char* kDescription =
        "Megatron-LM: the smallest tensor (with sequence parallelism, up to a node's GPUs) x pipeline size that fits "
        "(equal layers, interleaved schedule), data parallel over the rest with ZeRO-1 (distributed optimizer)";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }

protected:
    ScheduleChoice schedule(int pp, int layers) const override;
    bool sequenceParallel() const override { return true; }
    // Korthikanti et al. 2022 (section 5, and Megatron-LM's --recompute-activations): selective
    // recomputation together with sequence parallelism, which leaves 2-4% of compute to
    // recompute for most of the memory full recomputation saves.
    bool selectiveRecompute() const override { return true; }
    StagesFn stageRule(const Problem& problem) const override;
};

}  // namespace hippie
