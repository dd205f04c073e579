#include "planners/algorithms/registry.h"

#include <memory>

#include "planners/algorithms/exhaustive_planner.h"
#include "planners/algorithms/hippie_planner.h"

namespace hippie {

namespace {

template <class P>
PlannerInfo entry() {
    return {P::kName, "hybrid", P::kDescription, [] { return std::make_unique<P>(); }};
}

}  // namespace

// HIPPIE's adaptive planner and the exhaustive oracle it is tested against.
std::vector<PlannerInfo> adaptivePlanners() { return {entry<HippiePlanner>(), entry<ExhaustivePlanner>()}; }

}  // namespace hippie
