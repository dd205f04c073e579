#pragma once
// Runs several planners on one Problem at once, each in its own thread, as `hippie-plan
// compare` and the studio do. Results come back in the order the names were given.
#include <string>
#include <vector>

#include "planners/algorithms/planner.h"

namespace hippie {

// Default planner list: every registered planner of the "hybrid" family.
std::vector<std::string> defaultComparedPlanners();

// Throws Error for an unknown name (before anything runs). A planner that throws gets an
// infeasible result whose reason is its message, so one bad planner never hides the rest.
// Each result's planning_time_s is the CPU time of the thread that ran it: planners run at
// once on shared cores, so wall-clock time would charge each for the others.
std::vector<PlannerResult> runSideBySide(const Problem& problem, const std::vector<std::string>& planners);

// CPU seconds the calling thread has used: what planning_time_s measures (the planners are
// single-threaded).
double threadCpuSeconds();

// The yardstick of a comparison: the best feasible baseline (any planner but hippie and the
// exhaustive oracle) under the problem's objective; for me-floor, the most ME among the
// baselines within the floor of the best baseline throughput. -1 when no baseline is
// feasible.
int referenceResult(const Problem& problem, const std::vector<PlannerResult>& results);

}  // namespace hippie
