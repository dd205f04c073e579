#pragma once
// `gpipe-balance`: torchgpipe's automatic balancing. Block partition (Bárány et al., as in
// torchgpipe.balance.blockpartition) of the layers by elapsed time (balance_by_time: forward
// + backward per layer) and by memory (balance_by_size: activations of a micro-batch plus
// parameters times the copies training keeps); the shallowest pipeline that fits memory for
// each, GPipe's fill-drain schedule with re-materialisation (every layer recomputed in
// backward, as GPipe and torchgpipe's default checkpointing do), and the better of the two
// under the objective.
#include "planners/algorithms/pipeline_search.h"

namespace hippie {

class GPipeBalancePlanner : public Planner {
public:
    static constexpr const char* kName = "gpipe-balance";
    static constexpr const char* kDescription =
        "torchgpipe's block partition by time and by size, shallowest pipeline that fits, GPipe schedule with recomputation";
    std::string name() const override { return kName; }
    std::string description() const override { return kDescription; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;
};

}  // namespace hippie
