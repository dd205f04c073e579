#pragma once
// `pipedream`: PipeDream's planner (Narayanan et al., SOSP'19, section 3.1), the dynamic
// program of pipedream_dp.h over layers and replication counts, hierarchical over nodes.
// PipeDream replicates stages unevenly (a wide first stage of convolutions, a narrow last one
// of parameter-heavy layers): the program's optimum becomes a plan with per-stage replication
// (Plan::stage_replicas, micro-batches round-robin over a stage's replicas), compared, once
// simulated, with the program's best configuration of uniform replication (the same GPUs per
// stage inside a node and nodes per stage across nodes), each at its best micro-batch count
// under the problem's objective; the plan is the better of the two, and the log reports both.
// Schedule `hippie` (1F1B with the all-reduce overlapping the last backward), as the other
// baselines run it.
#include "planners/algorithms/planner.h"

namespace hippie {

class PipeDreamPlanner : public Planner {
public:
    static constexpr const char* kName = "pipedream";
    static constexpr const char* kDescription =
        "PipeDream's dynamic program over layers and per-stage replication (SOSP'19), hierarchical over nodes, "
        "against its best uniform replication; 1F1B with the all-reduce overlapped";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;
};

}  // namespace hippie
