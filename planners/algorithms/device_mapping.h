#pragma once
// Topology-aware device mapping: which concrete device runs each (pipeline stage, replica) of
// a pipeline plan. Keeps the heavier traffic, pipeline neighbours' activations or a stage's
// gradient all-reduce, inside a node, as measured by the cost model.
#include <vector>

#include "planners/algorithms/planner.h"

namespace hippie {

// device_map[stage][replica] for plan.stages / plan.dp on problem.cluster.
std::vector<std::vector<int>> mapDevices(const Problem& problem, const Plan& plan);

}  // namespace hippie
