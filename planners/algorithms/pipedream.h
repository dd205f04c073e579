#pragma once
// `pipedream`: PipeDream's planner (Narayanan et al., SOSP'19, section 3.1), the dynamic
// program of pipedream_dp.h over layers and replication counts, hierarchical over nodes.
// PipeDream may replicate stages unevenly; a Plan has one dp for every stage, so the plan
// is the program's best configuration among those with uniform replication (the same GPUs
// per stage inside a node and nodes per stage across nodes). The log reports both that and
// the unrestricted optimum. Schedule 1F1B.
#include "planners/algorithms/planner.h"

namespace hippie {

class PipeDreamPlanner : public Planner {
public:
    static constexpr const char* kName = "pipedream";
    static constexpr const char* kDescription =
        "PipeDream's dynamic program over layers and replication (SOSP'19), hierarchical over nodes, "
        "restricted to uniform replication; 1F1B";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;
};

}  // namespace hippie
