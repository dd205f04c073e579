#include "planners/algorithms/evaluate.h"

#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/sim/simulator.h"

namespace hippie {

const char* toString(Objective o) {
    switch (o) {
    case Objective::MemoryEfficiency: return "me";
    case Objective::Throughput: return "throughput";
    case Objective::MemoryEfficiencyWithThroughputFloor: return "me-floor";
    }
    return "me";
}

Objective objectiveFromString(const std::string& s) {
    if (s == "me") return Objective::MemoryEfficiency;
    if (s == "throughput") return Objective::Throughput;
    if (s == "me-floor") return Objective::MemoryEfficiencyWithThroughputFloor;
    throw Error("unknown objective '" + s + "' (use me, throughput or me-floor)");
}

PlanContext::PlanContext(double time_budget_s, ProgressFn progress)
    : start_(Clock::now()),
      deadline_(start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_budget_s))),
      progress_(std::move(progress)) {}

double PlanContext::elapsedSeconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void PlanContext::progress(double fraction, const std::string& message) const {
    if (progress_) progress_(fraction, message);
}

Plan basePlan(const Problem& problem, const std::string& planner) {
    Plan p;
    p.model = problem.graph.source;
    p.cluster = problem.cluster_name;
    p.planner = planner;
    p.global_batch = problem.global_batch;
    p.optimizer = problem.optimizer;
    return p;
}

namespace {
Trace run(const Problem& problem, const Plan& plan, bool events) {
    checkPlan(plan, problem.graph, problem.cluster.deviceCount());
    const CostModel cost(problem.graph, problem.cluster);
    SimOptions opt;
    opt.record_events = events;
    opt.memory_headroom = problem.memory_headroom;
    return simulate(lower(plan, problem.graph), plan, cost, opt);
}
}  // namespace

TraceMetrics evaluate(const Problem& problem, const Plan& plan) { return run(problem, plan, false).metrics; }

Trace simulateWithEvents(const Problem& problem, const Plan& plan) { return run(problem, plan, true); }

double objectiveValue(const TraceMetrics& m, Objective o) {
    if (!m.fits_memory) return 0.0;
    return o == Objective::Throughput ? m.throughput_samples_per_s : m.memory_efficiency;
}

PlannerResult feasibleResult(const std::string& planner, const Plan& plan,
                             const TraceMetrics& metrics, const PlanContext& context) {
    PlannerResult r;
    r.planner = planner;
    r.plan = plan;
    r.metrics = metrics;
    r.feasible = metrics.fits_memory;
    if (!r.feasible) r.reason = "the best plan found needs more memory than the devices have";
    r.planning_time_s = context.elapsedSeconds();
    return r;
}

PlannerResult infeasibleResult(const std::string& planner, const std::string& reason, const PlanContext& context) {
    PlannerResult r;
    r.planner = planner;
    r.feasible = false;
    r.reason = reason;
    r.planning_time_s = context.elapsedSeconds();
    return r;
}

}  // namespace hippie
