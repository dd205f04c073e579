#pragma once
// `hippie`: HIPPIE's adaptive partition. It searches the pipeline depth (fewer devices than
// the cluster has included), the data-parallel degree, the micro-batch count, the stage
// boundaries and which stages recompute their activations, under the hippie schedule, for
// the plan that maximises the problem's objective among those that fit memory.
//
// The search (the space is hybrid_candidates.h's, the one `exhaustive` enumerates), ranked by
// hybrid::Estimator, a stage-level model that tracks the simulator within a few per cent:
// 1. Seeds: for every (pp, dp), every micro-batch count with equal layers per stage, then for
//    the best few counts the baselines' partitions (equal parameters, min-max compute time,
//    torchgpipe's block partitions by time and by size), each with the recomputation that
//    fits memory or raises the objective.
// 2. Memory-aware balancing of the best shapes: a dynamic program finds, under a memory cap,
//    the boundaries and per-stage recomputation with the shortest schedule path through any
//    stage; lowering the cap walks the (time, memory) Pareto front down to the leanest plan.
// 3. Local search on the estimate from the best shapes: move a boundary, hand a layer across
//    stages, switch recomputation (one stage, or every stage of the highest memory levels).
// 4. Simulate the best-ranked candidates within an instruction budget, then climb on the
//    simulator with the same moves and the neighbouring micro-batch counts, tried in the
//    estimate's order, while the simulated objective improves.
// For "best ME with throughput at least a floor" it first searches for the best throughput,
// then for the best ME above the floor. Deterministic: no randomness, fixed budgets (only
// the time budget and cancellation depend on the clock).
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
