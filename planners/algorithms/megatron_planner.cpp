#include "planners/algorithms/megatron_planner.h"

#include "planners/algorithms/partition.h"

namespace hippie {

namespace {
// Model chunks per device of Megatron's interleaved schedule (its virtual pipeline stages):
// two halve the bubble and double the point-to-point messages.
constexpr int kVirtualStages = 2;
}  // namespace

TensorPipelinePlanner::ScheduleChoice MegatronPlanner::schedule(int pp, int layers) const {
    // Without a pipeline the gradient all-reduce overlaps the backward (Megatron's DDP with
    // overlapped gradient reduction), as every baseline's data parallelism does here.
    if (pp == 1) return {ScheduleKind::Hippie, 1};
    if (layers >= kVirtualStages * pp) return {ScheduleKind::Interleaved, kVirtualStages};
    return {ScheduleKind::OneFOneB, 1};
}

StagesFn MegatronPlanner::stageRule(const Problem& problem) const {
    const int layers = problem.graph.layerCount();
    return [layers](int stages, double) { return uniformPartition(layers, stages); };
}

}  // namespace hippie
