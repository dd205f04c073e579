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
std::vector<PlannerResult> runSideBySide(const Problem& problem, const std::vector<std::string>& planners);

}  // namespace hippie
