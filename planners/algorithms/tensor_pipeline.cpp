#include "planners/algorithms/tensor_pipeline.h"

#include <algorithm>

#include "planners/algorithms/evaluate.h"
#include "planners/model/attention_core.h"

namespace hippie {

int nodeTensorParallelDegree(const Problem& problem) {
    const Cluster& c = problem.cluster;
    if (c.nodes.empty()) return 1;
    int per_node = c.nodes.front().devices;
    for (const Node& n : c.nodes) per_node = std::min(per_node, n.devices);
    for (int t = per_node; t > 1; --t)
        if (per_node % t == 0 && c.deviceCount() % t == 0 && problem.graph.tensorParallelFits(t)) return t;
    return 1;
}

std::vector<ModelParallelShape> modelParallelOrder(const Problem& problem) {
    const int most = nodeTensorParallelDegree(problem), devices = problem.cluster.deviceCount(), layers = problem.graph.layerCount();
    std::vector<ModelParallelShape> out;
    for (int tp : divisorsOf(most))
        if (tp < most && devices % tp == 0 && problem.graph.tensorParallelFits(tp)) out.push_back({tp, 1});
    for (int pp : divisorsOf(devices / most))
        if (pp <= layers) out.push_back({most, pp});
    return out;
}

PlannerResult TensorPipelinePlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    SearchLog log(problem);
    const int layers = problem.graph.layerCount();
    const int most = nodeTensorParallelDegree(problem);
    log.note("tensor parallelism up to " + std::to_string(most) + " (a node's devices" +
             (problem.graph.tensor_parallel_divisor > 1 ? ", dividing the model's " + std::to_string(problem.graph.tensor_parallel_divisor) + " heads"
                                                          : std::string(": the model splits no op")) +
             ")" + (sequenceParallel() ? " with sequence parallelism" : "") + ", then pipeline stages; the first that fits");
    const bool selective = selectiveRecompute() && !attentionCores(problem.graph).empty();
    if (selective) log.note("selective recomputation: every block's attention core (scores, softmax and its dropout) recomputed in backward");
    Plan base = basePlan(problem, name());
    const StagesFn rule = stageRule(problem);
    const std::vector<ModelParallelShape> order = modelParallelOrder(problem);
    std::optional<Candidate> found;
    // Full activation recomputation only when no size fits without it.
    for (const bool recompute : {false, true}) {
        if (recompute) log.note("nothing fits as is: trying again with every layer recomputed in backward");
        base.recompute_layers = recompute ? allLayers(problem) : std::vector<int>{};
        // Every layer recomputed whole leaves no attention core to recompute alone.
        base.selective_recompute = !recompute && selective;
        for (size_t i = 0; i < order.size() && !found && !context.shouldStop(); ++i) {
            const auto [tp, pp] = order[i];
            context.progress((static_cast<double>(i) + (recompute ? static_cast<double>(order.size()) : 0.0)) /
                                 (2.0 * static_cast<double>(order.size())),
                             "trying tp " + std::to_string(tp) + " x pp " + std::to_string(pp));
            Plan plan = base;
            plan.tp = tp;
            plan.sequence_parallel = tp > 1 && sequenceParallel();
            plan.dp = largestTrainableDp(problem, problem.cluster.deviceCount() / (tp * pp));
            plan.zero_stage = plan.dp > 1 ? 1 : 0;
            const ScheduleChoice s = schedule(pp, layers);
            plan.schedule = s.kind;
            plan.virtual_stages = s.virtual_stages;
            const int v = s.virtual_stages;
            const StagesFn stages = [rule, v](int depth, double samples) { return rule(depth * v, samples); };
            found = sweepMicroBatches(problem, plan, pp, stages, defaultMicroBatches(pp, problem.global_batch / plan.dp), context, log);
        }
        if (found || context.shouldStop()) break;
    }
    return searchResult(name(), found, log, context,
                        log.noFitReason("no tensor x pipeline size up to tp " + std::to_string(most) + " x pp " +
                                        std::to_string(order.empty() ? 1 : order.back().pp) + " fits memory, even recomputing every layer"));
}

}  // namespace hippie
