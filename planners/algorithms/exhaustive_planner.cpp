#include "planners/algorithms/exhaustive_planner.h"

#include <functional>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/hybrid_candidates.h"
#include "planners/algorithms/pipeline_search.h"
#include "planners/model/attention_core.h"

namespace hippie {

namespace {

// Visitors return false to stop the enumeration; the enumerators then return false too.
using StagesVisitor = std::function<bool(const std::vector<StageRange>&)>;
using RecomputeVisitor = std::function<bool(const std::vector<char>&)>;

// Every split of layers first..layers-1 into `stages` contiguous non-empty stages, appended to `prefix`.
bool forEachSplit(int first, int layers, int stages, std::vector<StageRange>& prefix, const StagesVisitor& visit) {
    if (stages == 1) {
        prefix.push_back({first, layers - 1});
        const bool go_on = visit(prefix);
        prefix.pop_back();
        return go_on;
    }
    for (int last = first; last <= layers - stages; ++last) {
        prefix.push_back({first, last});
        const bool go_on = forEachSplit(last + 1, layers, stages - 1, prefix, visit);
        prefix.pop_back();
        if (!go_on) return false;
    }
    return true;
}

// Every recomputation choice: each stage that can recompute does or does not.
bool forEachRecomputation(const std::vector<StageRange>& stages, const RecomputeVisitor& visit) {
    std::vector<size_t> choosable;
    for (size_t s = 0; s < stages.size(); ++s)
        if (hybrid::canRecompute(stages[s])) choosable.push_back(s);
    std::vector<char> flags(stages.size(), 0);
    for (uint64_t mask = 0; mask < (uint64_t{1} << choosable.size()); ++mask) {
        for (size_t i = 0; i < choosable.size(); ++i) flags[choosable[i]] = static_cast<char>((mask >> i) & 1U);
        if (!visit(flags)) return false;
    }
    return true;
}

std::string tooBig(const Problem& problem) {
    const int layers = problem.graph.layerCount(), devices = problem.cluster.deviceCount();
    if (layers <= ExhaustivePlanner::kMaxLayers && devices <= ExhaustivePlanner::kMaxDevices) return {};
    return "exhaustive search is limited to " + std::to_string(ExhaustivePlanner::kMaxLayers) + " layers and " +
           std::to_string(ExhaustivePlanner::kMaxDevices) + " devices, but model '" + problem.graph.name + "' has " +
           std::to_string(layers) + " layers and cluster '" + problem.cluster_name + "' " + std::to_string(devices) +
           " devices; use the hippie planner for problems this size";
}

}  // namespace

PlannerResult ExhaustivePlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    if (const std::string reason = tooBig(problem); !reason.empty()) {
        PlannerResult r = infeasibleResult(kName, reason, context);
        r.skipped = true;
        return r;
    }
    hybrid::Incumbents found(problem);
    const std::vector<hybrid::Shape> shapes = hybrid::searchShapes(problem);
    const int layers = problem.graph.layerCount();
    // Selective recomputation (the attention cores' scores and softmax rebuilt in backward) is
    // a dimension of its own where the model has cores: every plan is simulated with and
    // without it (it acts on the layers a plan does not recompute whole).
    const bool selective = !attentionCores(problem.graph).empty();
    int64_t simulated = 0, variants = 0;
    std::vector<StageRange> prefix;
    for (size_t i = 0; i < shapes.size(); ++i) {
        const hybrid::Shape& shape = shapes[i];
        context.progress(static_cast<double>(i) / static_cast<double>(shapes.size()),
                         "simulating every plan of pp " + std::to_string(shape.pp) + " x dp " + std::to_string(shape.dp) +
                             (shape.tp > 1 ? " x tp " + std::to_string(shape.tp) : std::string()) + ", m " + std::to_string(shape.m));
        const bool finished = forEachSplit(0, layers, shape.pp, prefix, [&](const std::vector<StageRange>& stages) {
            return forEachRecomputation(stages, [&](const std::vector<char>& recompute) {
                if (context.shouldStop()) return false;
                const Plan plan = hybrid::candidatePlan(problem, kName, hybrid::Candidate{shape, stages, recompute});
                found.offer(plan, evaluateCandidate(problem, plan));
                ++simulated;
                if (selective && static_cast<int>(plan.recompute_layers.size()) < layers) {
                    Plan twin = plan;
                    twin.selective_recompute = true;
                    found.offer(twin, evaluateCandidate(problem, twin));
                    ++simulated;
                }
                // Per-stage degrees on the devices the plan leaves idle (the space's last dimension).
                for (const Plan& variant : hybrid::perStageDegreeVariants(problem, plan)) {
                    if (context.shouldStop()) return false;
                    found.offer(variant, evaluateCandidate(problem, variant));
                    ++variants;
                }
                return true;
            });
        });
        if (!finished) break;
    }
    const std::string with_selective = selective ? ", each with and without selective recomputation" : "";
    std::vector<std::string> log{"simulated " + std::to_string(simulated) + " plans over " + std::to_string(shapes.size()) +
                                 " (tp, pp, dp, m, ZeRO stage) shapes" + with_selective + ", and " + std::to_string(variants) +
                                 " variants of those with per-stage tensor-parallel degrees on the devices they leave idle"};
    context.progress(1.0, "done");
    return hybrid::searchOutcome(kName, problem, found, context, std::move(log), stopReason(context));
}

}  // namespace hippie
