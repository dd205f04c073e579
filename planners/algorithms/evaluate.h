#pragma once
// Shared by every planner: turn a candidate Plan into simulated metrics, compare candidates
// under an objective, and package a PlannerResult.
#include <string>

#include "planners/algorithms/planner.h"
#include "planners/sim/trace.h"

namespace hippie {

// A Plan with what every plan of this problem shares: model spec, cluster name, global
// batch, optimizer and the planner's name. The caller fills stages/placement and schedule.
Plan basePlan(const Problem& problem, const std::string& planner);

// checkPlan + lower + simulate. Throws Error if the plan is malformed for this problem.
TraceMetrics evaluate(const Problem& problem, const Plan& plan);
Trace simulateWithEvents(const Problem& problem, const Plan& plan);

// The objective's value (larger is better): memory efficiency or throughput; 0 if the plan
// does not fit. For MemoryEfficiencyWithThroughputFloor this is ME (the floor is applied by
// the planner, which knows the best throughput).
double objectiveValue(const TraceMetrics& m, Objective o);

// A feasible result for `plan` (simulated again), timed from `context`.
PlannerResult feasibleResult(const std::string& planner, const Plan& plan,
                             const TraceMetrics& metrics, const PlanContext& context);
PlannerResult infeasibleResult(const std::string& planner, const std::string& reason, const PlanContext& context);

}  // namespace hippie
