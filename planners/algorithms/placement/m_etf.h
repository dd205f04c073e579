#pragma once
// m-ETF (Baechi, Jeon et al., SoCC'20): memory-constrained earliest-task-first list
// scheduling. The ready op and device with the earliest start, transfers modelled, among
// devices with memory left for it; the plan runs each device's ops in start-time order.
#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

class MEtfPlanner final : public PlacementPlanner {
public:
    explicit MEtfPlanner(PlacementOptions options = {});

protected:
    CoreOutcome place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                      std::vector<std::string>& log) const override;
};

}  // namespace hippie::placement
