#pragma once
// m-TOPO (Baechi, Jeon et al., SoCC'20): ops in topological order, each device filled in turn
// up to an even share of the model's memory; the last device takes the rest up to its
// capacity. If the shares leave ops over, devices are filled to capacity instead.
#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

class MTopoPlanner final : public PlacementPlanner {
public:
    explicit MTopoPlanner(PlacementOptions options = {});

protected:
    CoreOutcome place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                      std::vector<std::string>& log) const override;
};

}  // namespace hippie::placement
