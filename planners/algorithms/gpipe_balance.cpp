#include "planners/algorithms/gpipe_balance.h"

#include <memory>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/partition.h"

namespace hippie {

namespace {

struct Variant {
    const char* name;
    StagesFn stages;
};

// balance_by_time: profiled time per layer; ours is forward + backward from the cost model.
StagesFn byTime(const std::shared_ptr<const LayerCosts>& costs) {
    const std::vector<double> times = costs->computePerLayer(1.0);
    return [times](int pp, double) { return blockPartition(times, pp); };
}

// balance_by_size: activation bytes of a micro-batch plus parameter bytes scaled by the
// copies training keeps (torchgpipe's param_scale; here the cost model's model states).
StagesFn bySize(const std::shared_ptr<const LayerCosts>& costs) {
    return [costs](int pp, double micro_batch_size) {
        std::vector<double> sizes;
        for (int l = 0; l < costs->layers(); ++l)
            sizes.push_back(static_cast<double>(costs->activationBytes(l, micro_batch_size) + costs->layerStateBytes(l)));
        return blockPartition(sizes, pp);
    };
}

}  // namespace

PlannerResult GPipeBalancePlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    const auto costs = std::make_shared<const LayerCosts>(problem);
    const Variant variants[] = {{"balance_by_time", byTime(costs)}, {"balance_by_size", bySize(costs)}};
    SearchLog log(problem);
    Plan base = basePlan(problem, name());
    base.schedule = ScheduleKind::GPipe;
    // GPipe re-materialises activations in backward (torchgpipe's default checkpointing).
    base.recompute_layers = allLayers(problem);
    std::vector<Candidate> found_by_variant;
    std::vector<const char*> names;
    for (const Variant& v : variants) {
        log.note(std::string(v.name) + ":");
        auto found = shallowestFit(problem, base, v.stages, context, log);
        if (!found) continue;
        log.note(std::string(v.name) + " gives " + describePlan(found->plan));
        found_by_variant.push_back(std::move(*found));
        names.push_back(v.name);
    }
    const std::optional<size_t> best_index = bestIndexByObjective(problem, found_by_variant);
    std::optional<Candidate> best;
    const char* best_name = "";
    if (best_index) {
        best = chosenAmong(found_by_variant, *best_index);
        best_name = names[*best_index];
    }
    if (best) log.note(std::string("chose ") + best_name + " (objective " + toString(problem.objective) + ")");
    return searchResult(name(), best, log, context,
                        log.noFitReason("no pipeline depth fits memory with either balance (tried pp " + depthList(problem) + ")"));
}

}  // namespace hippie
