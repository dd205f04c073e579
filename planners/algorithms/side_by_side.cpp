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

double planningSeconds(double thread_cpu_s, const PlannerResult& r) { return std::max(0.0, thread_cpu_s - r.evaluation_time_s); }

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
    r.planning_time_s = planningSeconds(threadCpuSeconds() - start, r);
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

double comparisonFloor(Objective objective, double throughput_floor, const std::vector<PlannerResult>& results) {
    if (objective != Objective::MemoryEfficiencyWithThroughputFloor) return 0.0;
    double fastest = 0;
    for (const PlannerResult& r : results) {
        if (r.feasible) fastest = std::max(fastest, r.metrics.throughput_samples_per_s);
        fastest = std::max(fastest, r.fastest_throughput);
    }
    return std::clamp(throughput_floor, 0.0, 1.0) * fastest;
}

namespace {

// The best of the feasible results `eligible` admits, at or above `floor`; -1 if none.
template <typename Eligible>
int bestAbove(Objective objective, double floor, const std::vector<PlannerResult>& results, Eligible eligible) {
    int best = -1;
    for (size_t i = 0; i < results.size(); ++i) {
        const PlannerResult& r = results[i];
        if (!r.feasible || !eligible(r) || r.metrics.throughput_samples_per_s < floor) continue;
        if (best < 0 || objectiveValue(r.metrics, objective) > objectiveValue(results[static_cast<size_t>(best)].metrics, objective))
            best = static_cast<int>(i);
    }
    return best;
}

}  // namespace

int bestResult(Objective objective, double throughput_floor, const std::vector<PlannerResult>& results) {
    return bestAbove(objective, comparisonFloor(objective, throughput_floor, results), results, [](const PlannerResult&) { return true; });
}

int referenceResult(Objective objective, double throughput_floor, const std::vector<PlannerResult>& results) {
    const auto baseline = [](const PlannerResult& r) { return isBaseline(r.planner); };
    const int best = bestAbove(objective, comparisonFloor(objective, throughput_floor, results), results, baseline);
    return best >= 0 ? best : bestAbove(Objective::Throughput, 0.0, results, baseline);
}

int referenceResult(const Problem& problem, const std::vector<PlannerResult>& results) {
    return referenceResult(problem.objective, problem.throughput_floor, results);
}

}  // namespace hippie
