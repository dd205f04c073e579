#include "planners/algorithms/side_by_side.h"

#include <thread>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/registry.h"

namespace hippie {

std::vector<std::string> defaultComparedPlanners() {
    std::vector<std::string> names;
    for (const PlannerInfo& p : plannerRegistry())
        if (p.family == "hybrid") names.push_back(p.name);
    return names;
}

namespace {
PlannerResult runOne(Planner& planner, const Problem& problem) {
    PlanContext context(problem.time_budget_s);
    try {
        PlannerResult r = planner.plan(problem, context);
        r.planner = planner.name();
        return r;
    } catch (const std::exception& e) {
        return infeasibleResult(planner.name(), std::string("planner failed: ") + e.what(), context);
    }
}
}  // namespace

std::vector<PlannerResult> runSideBySide(const Problem& problem, const std::vector<std::string>& planners) {
    std::vector<std::unique_ptr<Planner>> made;
    for (const std::string& name : planners) made.push_back(makePlanner(name));
    std::vector<PlannerResult> results(made.size());
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < made.size(); ++i)
        threads.emplace_back([&, i] { results[i] = runOne(*made[i], problem); });
    threads.clear();  // joins
    return results;
}

}  // namespace hippie
