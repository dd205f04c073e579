#include "planners/algorithms/pipedream.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/pipedream_dp.h"
#include "planners/algorithms/pipeline_search.h"

namespace hippie {

namespace {

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
    p.schedule = ScheduleKind::OneFOneB;
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

std::optional<Candidate> tryMicroBatchSize(const Problem& problem, const LayerCosts& costs, double b, const PlanContext& context,
                                           SearchLog& log) {
    const PipeDreamConfig free = solvePipeDream(problem, costs, {b, 0, 0});
    log.note("micro-batch size " + std::to_string(static_cast<int>(b)) + " for the memory constraint; PipeDream's optimum: " + free.str());
    if (!free.found() || context.shouldStop()) return std::nullopt;
    const PipeDreamConfig uniform = bestUniform(problem, costs, b, context);
    if (!uniform.found()) return std::nullopt;
    log.note(free.uniformReplication() && free.slowest_stage_s == uniform.slowest_stage_s
                 ? "the optimum replicates every stage equally: kept as is"
                 : "a plan has one dp for every stage: restricted to uniform replication, the best is " + uniform.str());
    const Plan plan = planOf(problem, uniform);
    const std::vector<StageRange> stages = plan.stages;
    const StagesFn fixed = [stages](int, double) { return stages; };
    const int first_m = microBatchesFor(problem.global_batch / plan.dp, b);
    return fitMicroBatches(problem, plan, static_cast<int>(stages.size()), fixed, first_m, context, log);
}

}  // namespace

PlannerResult PipeDreamPlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    const LayerCosts costs(problem);
    SearchLog log(problem);
    const auto sizes = microBatchSizes(problem);
    std::optional<Candidate> found;
    for (size_t i = 0; i < sizes.size() && !found && !context.shouldStop(); ++i) {
        context.progress(static_cast<double>(i) / static_cast<double>(sizes.size()),
                         "dynamic program for micro-batches of " + std::to_string(static_cast<int>(sizes[i])) + " samples");
        found = tryMicroBatchSize(problem, costs, sizes[i], context, log);
    }
    return searchResult(name(), found, log, context,
                        log.noFitReason("no configuration of PipeDream's program fits memory, even with " + log.smallestMicroBatch()));
}

}  // namespace hippie
