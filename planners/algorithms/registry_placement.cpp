#include "planners/algorithms/placement/m_etf.h"
#include "planners/algorithms/placement/m_sct.h"
#include "planners/algorithms/placement/m_topo.h"
#include "planners/algorithms/placement/sgp.h"
#include "planners/algorithms/placement/tga.h"
#include "planners/algorithms/registry.h"

namespace hippie {

// Operator-placement planners: an op -> device placement of the whole graph.
std::vector<PlannerInfo> placementPlanners() {
    using namespace placement;
    auto entry = [](auto make) {
        const auto planner = make();
        return PlannerInfo{planner->name(), "placement", planner->description(), make};
    };
    return {
        entry([]() -> std::unique_ptr<Planner> { return std::make_unique<MTopoPlanner>(); }),
        entry([]() -> std::unique_ptr<Planner> { return std::make_unique<MEtfPlanner>(); }),
        entry([]() -> std::unique_ptr<Planner> { return std::make_unique<MSctPlanner>(); }),
        entry([]() -> std::unique_ptr<Planner> { return std::make_unique<TgaPlanner>(); }),
        entry([]() -> std::unique_ptr<Planner> { return std::make_unique<SgpPlanner>(); }),
    };
}

}  // namespace hippie
