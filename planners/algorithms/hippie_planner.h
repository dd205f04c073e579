#pragma once
// `hippie`: HIPPIE's adaptive partition. It searches the pipeline depth (fewer devices than
// the cluster has included), the data-parallel degree, the micro-batch count, the stage
// boundaries and which stages recompute their activations, under the hippie schedule, for
// the plan that maximises the problem's objective among those that fit memory.
//
// The search (the space is hybrid_candidates.h's, the one `exhaustive` enumerates):
// 1. Seeds: for every (pp, dp, m), the baselines' partitions (equal layers, equal
//    parameters, min-max compute time, torchgpipe's block partitions by time and by size),
//    each with the recomputation that fits memory or raises the objective, ranked by the
//    analytic estimate.
// 2. Memory-aware balancing on the estimate: from the best seeds, move one stage boundary
//    by one layer, or switch a stage's recomputation, while the estimate improves.
// 3. Simulate the best-ranked candidates (an instruction budget keeps it fast on big models),
//    then climb on the simulator from the best: the same moves and the neighbouring
//    micro-batch counts, tried in the estimate's order, while the simulated objective improves.
// For "best ME with throughput at least a floor", it first searches for the best throughput,
// then for the best ME above the floor.
#include "planners/algorithms/planner.h"

namespace hippie {

class HippiePlanner : public Planner {
public:
    static constexpr const char* kName = "hippie";
    static constexpr const char* kDescription =
        "HIPPIE's adaptive partition: searches pipeline depth, data parallelism, micro-batches, memory-aware stage "
        "boundaries and recomputation under the hippie schedule for the best objective that fits memory";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;
};

}  // namespace hippie
