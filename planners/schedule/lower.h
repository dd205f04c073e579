#pragma once
// Lowering: Plan -> Program for each schedule kind. Compute order comes from the schedule;
// sends and receives are derived from the compute instructions and the data flow between
// segments, never written by hand.
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/schedule/program.h"

namespace hippie {

// Checks that the plan is consistent with the graph (stages cover every layer in order,
// device map shape, micro-batches divide the batch, ...) and throws Error naming the field.
void checkPlan(const Plan& plan, const Graph& graph, int cluster_devices);

Program lower(const Plan& plan, const Graph& graph);

}  // namespace hippie
