#include "planners/algorithms/evaluate.h"

#include <algorithm>
#include <limits>
#include <numeric>

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

int64_t capacityBytes(const Problem& p, int device) {
    return static_cast<int64_t>(static_cast<double>(p.cluster.device(device).usableBytes()) * (1.0 - p.memory_headroom));
}

int64_t smallestCapacityBytes(const Problem& p, const std::vector<int>& devices) {
    int64_t least = -1;
    const auto consider = [&](int d) {
        const int64_t bytes = capacityBytes(p, d);
        if (least < 0 || bytes < least) least = bytes;
    };
    if (devices.empty())
        for (int d = 0; d < p.cluster.deviceCount(); ++d) consider(d);
    for (int d : devices) consider(d);
    return std::max<int64_t>(least, 0);
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
// `memory_only`: the caller reads only the memory (a probe), so the ports' sharing is not
// measured (SimOptions::measure_port_sharing): each flow has its whole link.
Trace run(const Problem& problem, const Plan& plan, bool events, bool memory_only = false) {
    checkPlan(plan, problem.graph, problem.cluster.deviceCount());
    const CostModel cost(problem.graph, problem.cluster);
    SimOptions opt;
    opt.record_events = events;
    opt.measure_port_sharing = !memory_only;
    opt.memory_headroom = problem.memory_headroom;
    return simulate(lower(plan, problem.graph), plan, cost, opt);
}
}  // namespace

std::optional<Plan> memoryProbePlan(const Plan& plan) {
    if (plan.isPlacement() || plan.micro_batches <= kMemoryProbeMicroBatches || plan.dp < 1) return std::nullopt;
    const int64_t per_micro_batch = static_cast<int64_t>(plan.dp) * plan.micro_batches;
    if (plan.global_batch % per_micro_batch != 0) return std::nullopt;
    // Whole rounds of the pipeline depth (the interleaved schedule runs micro-batches in rounds),
    // and two of them at least: from there on the 1F1B-like schedules' peak no longer grows.
    const int depth = std::max(plan.pipelineDepth(), 1);
    int m = std::max(kMemoryProbeMicroBatches / depth, 2) * depth;
    // Per-stage replication: the probe's dp x m micro-batches must go round-robin evenly too.
    int64_t round = 1;
    for (int r : plan.stage_replicas) round = std::lcm(round, static_cast<int64_t>(r / std::gcd(r, plan.dp)));
    if (round > 1) m = static_cast<int>((m + round - 1) / round * round);
    if (m >= plan.micro_batches) return std::nullopt;
    Plan probe = plan;
    probe.micro_batches = m;
    probe.global_batch = static_cast<int>(plan.global_batch / per_micro_batch * plan.dp * m);  // the same micro-batch size
    return probe;
}

bool microBatchBeyondAnyMemory(const Graph& graph, double samples) {
    double bytes = 0;
    for (const Op& op : graph.ops)
        bytes += static_cast<double>(op.output_bytes) + static_cast<double>(op.temp_bytes) + static_cast<double>(op.moved_bytes);
    for (const Edge& e : graph.edges) bytes += static_cast<double>(e.bytes);
    return bytes * samples / std::max(graph.batch_size, 1) >= 4611686018427387904.0;  // 2^62
}

TraceMetrics evaluateCandidate(const Problem& problem, const Plan& plan) {
    if (!plan.isPlacement() && plan.dp >= 1 && plan.micro_batches >= 1 &&
        microBatchBeyondAnyMemory(problem.graph, plan.microBatchSize())) {
        checkPlan(plan, problem.graph, problem.cluster.deviceCount());
        TraceMetrics m;
        m.fits_memory = false;
        m.peak_is_lower_bound = true;
        m.max_peak_memory_bytes = std::numeric_limits<int64_t>::max();
        m.peak_memory_bytes.assign(static_cast<size_t>(plan.deviceCount()), m.max_peak_memory_bytes);
        return m;
    }
    if (const std::optional<Plan> probe = memoryProbePlan(plan)) {
        checkPlan(plan, problem.graph, problem.cluster.deviceCount());  // the plan's own errors, not the probe's
        TraceMetrics m = run(problem, *probe, false, true).metrics;
        if (!m.fits_memory) {
            m.peak_is_lower_bound = true;
            m.iteration_time_s = m.throughput_samples_per_s = m.memory_efficiency = m.bubble_fraction = 0;
            return m;
        }
    }
    return evaluate(problem, plan);
}

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
