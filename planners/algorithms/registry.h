#pragma once
// The planner registry: every planner by name, with a one-line description. Families keep
// their lists in their own files (registry_hybrid.cpp, registry_placement.cpp).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "planners/algorithms/planner.h"

namespace hippie {

struct PlannerInfo {
    std::string name;         // "hippie", "m-etf", ...
    std::string family;       // "hybrid" (pipeline + data parallel) or "placement" (op -> device)
    std::string description;  // one line
    std::function<std::unique_ptr<Planner>()> make;
};

const std::vector<PlannerInfo>& plannerRegistry();  // hippie and exhaustive, baselines, placement
const PlannerInfo* findPlanner(const std::string& name);  // nullptr if unknown
std::unique_ptr<Planner> makePlanner(const std::string& name);  // Error lists the known names

// Each family's list, defined next to its planners: the baselines (registry_hybrid.cpp),
// HIPPIE's adaptive planner and the exhaustive oracle (registry_adaptive.cpp), and the
// operator-placement planners (registry_placement.cpp).
std::vector<PlannerInfo> hybridPlanners();
std::vector<PlannerInfo> adaptivePlanners();
std::vector<PlannerInfo> placementPlanners();

}  // namespace hippie
