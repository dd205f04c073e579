#pragma once
// `equal-params`: DeepSpeed's default pipeline partition ("parameters" method), stages with
// about equal parameter counts, with the shallowest pipeline that fits memory and data
// parallelism over the rest (1F1B); full activation recomputation only when nothing fits
// without it.
#include "planners/algorithms/pipeline_search.h"

namespace hippie {

class EqualParamsPlanner : public ShallowestPipelinePlanner {
public:
    static constexpr const char* kName = "equal-params";
    static constexpr const char* kDescription =
        "stages with equal parameter counts (DeepSpeed's default), shallowest pipeline that fits (recomputing if it must), "
        "1F1B, data parallel over the rest";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }

protected:
    // 1F1B with the gradient all-reduce overlapping the last backward, as data-parallel and
    // hippie run it: baselines get the same overlap.
    ScheduleKind schedule() const override { return ScheduleKind::Hippie; }
    StagesFn stageRule(const Problem& problem) const override;
};

}  // namespace hippie
