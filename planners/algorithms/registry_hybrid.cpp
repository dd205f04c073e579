#include "planners/algorithms/registry.h"

#include <memory>

#include "planners/algorithms/data_parallel.h"
#include "planners/algorithms/equal_params.h"
#include "planners/algorithms/gpipe_balance.h"
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

// The pipeline + data-parallel baselines: what practitioners use today.
std::vector<PlannerInfo> hybridPlanners() {
    return {
        entry<DataParallelPlanner>(),
        entry<EqualParamsPlanner>(),
        entry<UniformPlanner>(),
        entry<PipeDreamPlanner>(),
        entry<GPipeBalancePlanner>(),
        entry<ZeroPlanner>(),
    };
}

}  // namespace hippie
