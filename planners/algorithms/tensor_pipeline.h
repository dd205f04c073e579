#pragma once
// Shared by the Megatron-style baselines (`megatron`, `deepspeed-3d`), after Narayanan et al.
// (SC 2021), takeaways 1 and 2: the model-parallel size t x p just large enough that the
// model fits, tensor parallelism first, up to a node's GPUs (its collectives stay on NVLink),
// then pipeline stages across nodes; data parallelism over the rest with ZeRO-1 (Megatron's
// distributed optimizer; DeepSpeed's pipeline engine supports stage 1 only). So the sizes
// tried are t = 1, 2, 4, ... up to the node's degree with one stage, then that degree with
// 2, 4, ... stages. Each baseline says its schedule, stage rule and whether it splits the
// sequence too.
#include "planners/algorithms/pipeline_search.h"

namespace hippie {

// Megatron-LM's largest tensor-parallel degree: the GPUs of the smallest node, capped by what
// the model splits: the largest t dividing both that count and the graph's
// tensor_parallel_divisor (the attention heads). 1 for a graph without split ops.
int nodeTensorParallelDegree(const Problem& problem);

// The (tp, pp) model-parallel shapes in the order the baselines try them (see above).
struct ModelParallelShape {
    int tp = 1;
    int pp = 1;
};
std::vector<ModelParallelShape> modelParallelOrder(const Problem& problem);

class TensorPipelinePlanner : public Planner {
public:
    PlannerResult plan(const Problem& problem, PlanContext& context) override;

protected:
    struct ScheduleChoice {
        ScheduleKind kind = ScheduleKind::OneFOneB;
        int virtual_stages = 1;
    };
    virtual ScheduleChoice schedule(int pp, int layers) const = 0;
    virtual bool sequenceParallel() const = 0;
    // Whether the plans recompute the attention cores in backward (selective recomputation)
    // whenever the model has them, before falling back to full recomputation.
    virtual bool selectiveRecompute() const { return false; }
    // The stage rule for this problem: `stages` contiguous ranges (pp x virtual stages).
    virtual StagesFn stageRule(const Problem& problem) const = 0;
};

}  // namespace hippie
