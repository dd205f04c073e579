#include "planners/algorithms/registry.h"

#include <memory>

#include "planners/algorithms/data_parallel.h"
#include "planners/algorithms/deepspeed_3d.h"
#include "planners/algorithms/equal_params.h"
#include "planners/algorithms/gpipe_balance.h"
#include "planners/algorithms/megatron_planner.h"
#include "planners/algorithms/pipedream.h"
#include "planners/algorithms/uniform.h"
#include "planners/algorithms/zero_planner.h"

namespace hippie {

namespace {

template <class P>
PlannerInfo entry() {
    return {P::kName, "hybrid", P::kDescription, [] { return std::make_unique<P>(); }};
}

}  // namespace

// The pipeline + data-parallel (+ tensor-parallel) baselines: what practitioners use today.
std::vector<PlannerInfo> hybridPlanners() {
    return {
        entry<DataParallelPlanner>(),
        entry<EqualParamsPlanner>(),
        entry<UniformPlanner>(),
        entry<PipeDreamPlanner>(),
        entry<GPipeBalancePlanner>(),
        entry<ZeroPlanner>(),
        entry<MegatronPlanner>(),
        entry<DeepSpeed3DPlanner>(),
    };
}

}  // namespace hippie
