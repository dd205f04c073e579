#include "planners/algorithms/zero_planner.h"

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/pipeline_search.h"

namespace hippie {

PlannerResult ZeroPlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    SearchLog log(problem);
    const int layers = problem.graph.layerCount();
    const LayerCosts costs(problem);
    Plan plan = basePlan(problem, name());
    plan.schedule = ScheduleKind::Hippie;
    plan.dp = largestTrainableDp(problem, problem.cluster.deviceCount());
    // With one replica there is nothing to shard: stage 0 is the only one.
    const int highest = plan.dp > 1 ? kMaxZeroStage : 0;
    const StagesFn whole = [layers](int, double) { return std::vector<StageRange>{{0, layers - 1}}; };
    // Without activation recomputation first; only when no stage fits, with every layer
    // recomputed (the activation checkpointing DeepSpeed and FSDP users turn on next).
    for (const bool recompute : {false, true}) {
        plan.recompute_layers = recompute ? allLayers(problem) : std::vector<int>{};
        for (int zero = 0; zero <= highest && !context.shouldStop(); ++zero) {
            context.progress((static_cast<double>(zero) + (recompute ? highest + 1 : 0)) / (2.0 * (highest + 1)),
                             "trying ZeRO stage " + std::to_string(zero) + (recompute ? " with recomputation" : ""));
            plan.zero_stage = zero;
            const int64_t states = costs.staticBytes(0, layers - 1, plan.dp, zero);
            log.note("pp 1 x dp " + std::to_string(plan.dp) + " ZeRO " + std::to_string(zero) + " (" + zeroStageMeaning(zero) +
                     ")" + (recompute ? ", every layer recomputed" : "") + ": model states " + gib(states) + " of " +
                     gib(log.capacityBytes()) + " per device");
            if (states > log.capacityBytes()) continue;
            if (auto found = sweepMicroBatches(problem, plan, 1, whole, 1, context, log)) {
                log.note("ZeRO stage " + std::to_string(zero) + " is the lowest that fits" +
                         (recompute ? " (with every layer recomputed: none fits without)" : ""));
                return searchResult(name(), found, log, context, "");
            }
        }
    }
    return searchResult(name(), std::nullopt, log, context,
                        log.noFitReason("the whole model does not fit on one device even with ZeRO stage " + std::to_string(highest) +
                                        " over " + std::to_string(plan.dp) +
                                        " replicas, every layer recomputed and " + log.smallestMicroBatch()));
}

}  // namespace hippie
