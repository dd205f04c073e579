#pragma once
// Topology-aware device mapping: which concrete device runs each (pipeline stage, replica) of
// a pipeline plan. Keeps the heavier traffic, pipeline neighbours' activations or a stage's
// gradient all-reduce, inside a node, as measured by the cost model.
#include <vector>

#include "planners/algorithms/planner.h"

namespace hippie {

// device_map[stage][replica * tp + k] for plan.stages / plan.dp / plan.tp on problem.cluster.
// Each tensor-parallel group gets tp consecutive devices (one node's when tp divides the
// devices per node); the groups are then arranged like single devices.
std::vector<std::vector<int>> mapDevices(const Problem& problem, const Plan& plan);

}  // namespace hippie
