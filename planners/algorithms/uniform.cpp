#include "planners/algorithms/uniform.h"

#include "planners/algorithms/partition.h"

namespace hippie {

StagesFn UniformPlanner::stageRule(const Problem& problem) const {
    const int layers = problem.graph.layerCount();
    return [layers](int pp, double) { return uniformPartition(layers, pp); };
}

}  // namespace hippie
