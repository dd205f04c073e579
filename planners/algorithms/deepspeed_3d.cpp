#include "planners/algorithms/deepspeed_3d.h"

#include "planners/algorithms/partition.h"

namespace hippie {

StagesFn DeepSpeed3DPlanner::stageRule(const Problem& problem) const {
    std::vector<double> params;
    for (const Layer& l : problem.graph.layers()) params.push_back(static_cast<double>(l.param_bytes));
    return [params](int stages, double) { return minMaxPartition(params, stages); };
}

}  // namespace hippie
