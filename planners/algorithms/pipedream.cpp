#include "planners/algorithms/pipedream.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/pipedream_dp.h"
#include "planners/algorithms/pipeline_search.h"
#include "planners/common/error.h"
#include "planners/schedule/lower.h"

namespace hippie {

namespace {

// 1F1B with the gradient all-reduce overlapping the last backward, bucket by bucket, as the
// other baselines and hippie run it; lowering, the simulator and the engine build it with
// per-stage replication too (a stage's buckets are all-reduced over its own replicas).
constexpr ScheduleKind kSchedule = ScheduleKind::Hippie;

// Samples per micro-batch assumed by the memory constraint: the default micro-batch count
// (4 per stage) over all devices gives global batch / (4 x devices); halved down to the
// model's smallest micro-batch (one sample unless BatchNorm needs more) while nothing fits.
std::vector<double> microBatchSizes(const Problem& problem) {
    const double first = std::max(1.0, std::floor(problem.global_batch / (4.0 * problem.cluster.deviceCount())));
    std::vector<double> out;
    const double least = problem.graph.min_micro_batch;  // BatchNorm over small feature maps
    for (double b = first; b > least; b = std::floor(b / 2)) out.push_back(b);
    out.push_back(least);
    return out;
}

// (GPUs per stage inside a node, nodes per stage) pairs whose product, the plan's dp,
// divides the global batch; flat clusters have one level.
std::vector<PipeDreamOptions> uniformReplications(const Problem& problem, double micro_batch_size) {
    const Cluster& c = problem.cluster;
    const bool two_levels = pipeDreamHierarchical(c);
    const int gpus = two_levels ? c.nodes.front().devices : c.deviceCount();
    const int nodes = two_levels ? static_cast<int>(c.nodes.size()) : 1;
    std::vector<PipeDreamOptions> out;
    for (int r1 = 1; r1 <= gpus; ++r1)
        for (int r2 = 1; r2 <= nodes; ++r2)
            if (problem.global_batch % (r1 * r2) == 0) out.push_back({micro_batch_size, r1, two_levels ? r2 : 0});
    std::stable_sort(out.begin(), out.end(), [](const PipeDreamOptions& a, const PipeDreamOptions& b) {
        return a.gpus_per_stage * std::max(a.nodes_per_stage, 1) < b.gpus_per_stage * std::max(b.nodes_per_stage, 1);
    });
    return out;
}

// The program's best configuration with one replication for every stage.
PipeDreamConfig bestUniform(const Problem& problem, const LayerCosts& costs, double micro_batch_size, const PlanContext& context) {
    PipeDreamConfig best;
    for (const PipeDreamOptions& o : uniformReplications(problem, micro_batch_size)) {
        if (context.shouldStop()) break;
        PipeDreamConfig c = solvePipeDream(problem, costs, o);
        if (c.found() && c.slowest_stage_s < best.slowest_stage_s) best = std::move(c);
    }
    return best;
}

Plan planOf(const Problem& problem, const PipeDreamConfig& c) {
    Plan p = basePlan(problem, PipeDreamPlanner::kName);
    p.schedule = kSchedule;
    p.dp = c.stages.front().replicas;
    for (const PipeDreamStage& s : c.stages) p.stages.push_back({s.first_layer, s.last_layer});
    return p;
}

// Micro-batches per replica closest to (not above) the assumed micro-batch size.
int microBatchesFor(int per_replica_batch, double micro_batch_size) {
    const int wanted = static_cast<int>(std::ceil(per_replica_batch / micro_batch_size));
    for (int m : divisorsOf(per_replica_batch))
        if (m >= wanted) return m;
    return per_replica_batch;
}

// Whether some count of equal micro-batches of the global batch goes round-robin over every
// stage's replicas: their least common multiple divides the batch.
bool dealsRoundRobin(const Problem& problem, const PipeDreamConfig& c) {
    int64_t l = 1;
    for (const PipeDreamStage& s : c.stages) {
        l = std::lcm(l, static_cast<int64_t>(s.replicas));
        if (l > problem.global_batch) return false;
    }
    return problem.global_batch % l == 0;
}

// The program's configuration as it is: each stage with its own replicas on the GPUs the
// program gave it (Plan::stage_replicas), micro-batches round-robin over them; every
// micro-batch count from the size the memory constraint assumed down to the model's smallest
// micro-batch whose dp x m micro-batches go round-robin evenly over every stage's replicas,
// simulated, and the best that fits under the problem's objective. nullopt when none fits or
// the plan cannot be built (a tied weight across stages of different widths).
std::optional<Candidate> perStageCandidate(const Problem& problem, const PipeDreamConfig& c, double b, const PlanContext& context,
                                           SearchLog& log) {
    Plan plan = basePlan(problem, PipeDreamPlanner::kName);
    plan.schedule = kSchedule;
    for (const PipeDreamStage& s : c.stages) {
        plan.stages.push_back({s.first_layer, s.last_layer});
        plan.stage_replicas.push_back(s.replicas);
        plan.device_map.push_back(s.devices);
        plan.dp = std::max(plan.dp, s.replicas);
    }
    if (problem.global_batch % plan.dp != 0) {
        log.note("per-stage replication " + plan.dpText() + ": the global batch does not split over the widest stage's " +
                 std::to_string(plan.dp) + " replicas");
        return std::nullopt;
    }
    const int wanted = static_cast<int>(std::ceil(problem.global_batch / plan.dp / b));
    std::vector<Candidate> fits;
    for (int m : microBatchCounts(problem, plan.dp)) {
        const int64_t total = int64_t{plan.dp} * m;
        if (m < wanted || std::any_of(plan.stage_replicas.begin(), plan.stage_replicas.end(), [&](int r) { return total % r != 0; }))
            continue;
        if (context.shouldStop()) break;
        plan.micro_batches = m;
        try {
            checkPlan(plan, problem.graph, problem.cluster.deviceCount());
        } catch (const Error& e) {
            log.note("per-stage replication " + plan.dpText() + " is not built for this model: " + e.what());
            return std::nullopt;
        }
        const TraceMetrics metrics = evaluateCandidate(problem, plan);
        log.tried(plan, metrics);
        if (metrics.fits_memory) fits.push_back({plan, metrics});
    }
    return bestByObjective(problem, fits);
}

// The best plan of each kind under the objective, each from the first micro-batch size the
// memory constraint assumes (largest first) at which one fits, with its micro-batch count
// swept from that size down: the program's optimum as it is (per-stage replication), and its
// best configuration with one replication for every stage.
struct Found {
    std::optional<Candidate> per_stage, uniform;
    bool per_stage_done = false;  // found, or the optimum replicates every stage equally: no more sizes for it
};

void tryMicroBatchSize(const Problem& problem, const LayerCosts& costs, double b, const PlanContext& context, SearchLog& log,
                       Found& found) {
    const PipeDreamConfig free = solvePipeDream(problem, costs, {b, 0, 0});
    log.note("micro-batch size " + std::to_string(static_cast<int>(b)) + " for the memory constraint; PipeDream's optimum: " + free.str());
    if (!free.found() || context.shouldStop()) return;
    if (!found.per_stage_done) {
        PipeDreamConfig per_stage = free;
        if (!free.uniformReplication() && !dealsRoundRobin(problem, free)) {
            // The batch cannot be dealt round-robin over these replicas: the program again,
            // with replica counts that divide the global batch.
            per_stage = solvePipeDream(problem, costs, {b, 0, 0, problem.global_batch});
            log.note("its replicas do not divide the global batch of " + std::to_string(problem.global_batch) +
                     "; with replica counts that do, the optimum is " + per_stage.str());
        }
        const bool uniform_optimum = !per_stage.found() || per_stage.uniformReplication();
        if (!uniform_optimum) found.per_stage = perStageCandidate(problem, per_stage, b, context, log);
        found.per_stage_done = uniform_optimum || found.per_stage.has_value();
    }
    if (found.uniform) return;
    const PipeDreamConfig uniform = bestUniform(problem, costs, b, context);
    if (!uniform.found()) return;
    log.note(free.uniformReplication() && free.slowest_stage_s == uniform.slowest_stage_s
                 ? "the optimum replicates every stage equally"
                 : "restricted to uniform replication, the best is " + uniform.str());
    const Plan plan = planOf(problem, uniform);
    const std::vector<StageRange> stages = plan.stages;
    const StagesFn fixed = [stages](int, double) { return stages; };
    const int first_m = microBatchesFor(problem.global_batch / plan.dp, b);
    found.uniform = sweepMicroBatches(problem, plan, static_cast<int>(stages.size()), fixed, first_m, context, log);
}

}  // namespace

PlannerResult PipeDreamPlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    const LayerCosts costs(problem);
    SearchLog log(problem);
    const auto sizes = microBatchSizes(problem);
    Found found;
    for (size_t i = 0; i < sizes.size() && !(found.uniform && found.per_stage_done) && !context.shouldStop(); ++i) {
        context.progress(static_cast<double>(i) / static_cast<double>(sizes.size()),
                         "dynamic program for micro-batches of " + std::to_string(static_cast<int>(sizes[i])) + " samples");
        tryMicroBatchSize(problem, costs, sizes[i], context, log, found);
    }
    // The plan: the better of the two, simulated, under the problem's objective.
    std::vector<Candidate> fits;
    for (const auto* c : {&found.per_stage, &found.uniform})
        if (*c) fits.push_back(**c);
    const std::optional<Candidate> best = bestByObjective(problem, fits);
    if (best && fits.size() > 1)
        log.note(std::string("simulated, ") + (best->plan.perStageReplication() ? "per-stage replication" : "uniform replication") +
                 " is the better under the objective");
    return searchResult(name(), best, log, context,
                        log.noFitReason("no configuration of PipeDream's program fits memory, even with " + log.smallestMicroBatch()));
}

}  // namespace hippie
