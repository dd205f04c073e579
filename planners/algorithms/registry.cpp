#include "planners/algorithms/registry.h"

#include "planners/common/error.h"

namespace hippie {

const std::vector<PlannerInfo>& plannerRegistry() {
    static const std::vector<PlannerInfo> all = [] {
        std::vector<PlannerInfo> v = adaptivePlanners();
        for (PlannerInfo& p : hybridPlanners()) v.push_back(std::move(p));
        for (PlannerInfo& p : placementPlanners()) v.push_back(std::move(p));
        return v;
    }();
    return all;
}

const PlannerInfo* findPlanner(const std::string& name) {
    for (const PlannerInfo& p : plannerRegistry())
        if (p.name == name) return &p;
    return nullptr;
}

std::unique_ptr<Planner> makePlanner(const std::string& name) {
    if (const PlannerInfo* p = findPlanner(name)) return p->make();
    std::string known;
    for (const PlannerInfo& p : plannerRegistry()) known += (known.empty() ? "" : ", ") + p.name;
    throw Error("unknown planner '" + name + "' (known: " + known + ")");
}

}  // namespace hippie
