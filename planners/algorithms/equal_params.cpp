#include "planners/algorithms/equal_params.h"

#include "planners/algorithms/partition.h"

namespace hippie {

StagesFn EqualParamsPlanner::stageRule(const Problem& problem) const {
    std::vector<double> params;
    for (const Layer& l : problem.graph.layers()) params.push_back(static_cast<double>(l.param_bytes));
    return [params](int pp, double) { return minMaxPartition(params, pp); };
}

}  // namespace hippie
