#include "planners/algorithms/data_parallel.h"

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/pipeline_search.h"

namespace hippie {

PlannerResult DataParallelPlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    SearchLog log(problem);
    const int layers = problem.graph.layerCount();
    Plan plan = basePlan(problem, name());
    plan.schedule = ScheduleKind::Hippie;
    plan.dp = largestTrainableDp(problem, problem.cluster.deviceCount());
    context.progress(0.0, "checking that the model states fit");

    const int64_t states = LayerCosts(problem).staticBytes(0, layers - 1, plan.dp);
    log.note("pp 1 x dp " + std::to_string(plan.dp) + ": model states " + gib(states) + " of " + gib(log.capacityBytes()) + " per device");
    if (states > log.capacityBytes())
        return searchResult(name(), std::nullopt, log, context,
                            "not enough device memory: the model states alone (parameters, gradients, master weights, optimizer "
                            "state and gradient buckets) need " + gib(states) + " per device but a device has " +
                                gib(log.capacityBytes()) + " available; data parallelism keeps the whole model on every device");
    log.note(std::string("trying every micro-batch count (gradient accumulation) whose activations fit; objective ") +
             toString(problem.objective));
    const StagesFn whole = [layers](int, double) { return std::vector<StageRange>{{0, layers - 1}}; };
    const auto found = sweepMicroBatches(problem, plan, 1, whole, 1, context, log);
    return searchResult(name(), found, log, context,
                        log.noFitReason("the activations do not fit even with " + log.smallestMicroBatch() + " (gradient accumulation)"));
}

}  // namespace hippie
