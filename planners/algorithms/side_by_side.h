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
// Each result's planning_time_s is the CPU time of the thread that ran it (planners run at
// once on shared cores, so wall-clock time would charge each for the others), less the final
// scoring of the returned plan (planningSeconds).
std::vector<PlannerResult> runSideBySide(const Problem& problem, const std::vector<std::string>& planners);

// CPU seconds the calling thread has used: what planning_time_s measures (the planners are
// single-threaded).
double threadCpuSeconds();

// What planning_time_s is, for a planner whose thread used `thread_cpu_s` in plan(): that
// CPU time less the result's evaluation_time_s (the final scoring of the returned plan, which
// the comparison needs whatever the planner does). Every runner (compare, the studio, bench_placement) sets
// planning_time_s with this, the same way for every planner.
double planningSeconds(double thread_cpu_s, const PlannerResult& r);

// Under me-floor, the throughput every plan of a comparison is held to: the floor fraction of
// the fastest plan any planner found (a result, or a faster plan a search simulated and set
// aside for one with less memory). 0 under the other objectives.
double comparisonFloor(Objective objective, double throughput_floor, const std::vector<PlannerResult>& results);

// The best feasible result under the objective, among those at or above comparisonFloor
// (under me-floor, the most ME; a plan below the floor is never the best). -1 when none is.
int bestResult(Objective objective, double throughput_floor, const std::vector<PlannerResult>& results);

// The yardstick of a comparison: the best feasible baseline (any planner but hippie and the
// exhaustive oracle) under the objective, held to the same floor as every planner
// (comparisonFloor); if no baseline reaches it, the fastest baseline. -1 when no baseline is
// feasible.
int referenceResult(Objective objective, double throughput_floor, const std::vector<PlannerResult>& results);
// The same under the problem's objective and throughput floor.
int referenceResult(const Problem& problem, const std::vector<PlannerResult>& results);

}  // namespace hippie
