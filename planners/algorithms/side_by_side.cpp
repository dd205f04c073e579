#include "planners/algorithms/side_by_side.h"

#include <algorithm>
#include <ctime>
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

double threadCpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

namespace {

PlannerResult runOne(Planner& planner, const Problem& problem) {
    PlanContext context(problem.time_budget_s);
    const double start = threadCpuSeconds();
    PlannerResult r;
    try {
        r = planner.plan(problem, context);
        r.planner = planner.name();
    } catch (const std::exception& e) {
        r = infeasibleResult(planner.name(), std::string("planner failed: ") + e.what(), context);
    }
    r.planning_time_s = threadCpuSeconds() - start;
    return r;
}

bool isBaseline(const std::string& planner) { return planner != "hippie" && planner != "exhaustive"; }

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

int referenceResult(const Problem& problem, const std::vector<PlannerResult>& results) {
    double best_throughput = 0;
    for (const PlannerResult& r : results)
        if (r.feasible && isBaseline(r.planner)) best_throughput = std::max(best_throughput, r.metrics.throughput_samples_per_s);
    const double floor = problem.objective == Objective::MemoryEfficiencyWithThroughputFloor
                             ? std::clamp(problem.throughput_floor, 0.0, 1.0) * best_throughput
                             : 0.0;
    int best = -1;
    for (size_t i = 0; i < results.size(); ++i) {
        const PlannerResult& r = results[i];
        if (!r.feasible || !isBaseline(r.planner) || r.metrics.throughput_samples_per_s < floor) continue;
        if (best < 0 || objectiveValue(r.metrics, problem.objective) > objectiveValue(results[static_cast<size_t>(best)].metrics, problem.objective))
            best = static_cast<int>(i);
    }
    return best;
}

}  // namespace hippie
