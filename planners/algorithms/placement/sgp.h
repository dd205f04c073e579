#pragma once
// SGP: non-iterative placement from operator characteristics alone (no profiling, no search).
// 1. Per op: a computation cost (forward + backward time from FLOPs), a communication cost
//    (its largest output and that gradient over a typical link) and their sum, the combined
//    cost.
// 2. The topological order is cut into segments of equal combined cost, a fixed number per
//    device (small enough to keep parallel branches apart, few enough to schedule at once).
// 3. Each cut moves, within a window around it, to where the transfer time of the bytes
//    crossing it plus the combined cost it shifts between its two segments is smallest.
// 4. The segments are list-scheduled on the devices, earliest start first under memory
//    budgets (the scheduler m-ETF uses), which balances load across devices.
// Linear in ops and edges, plus scheduling a few segments per device: tens of thousands of
// ops in well under a second.
#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct SgpOptions {
    PlacementOptions placement;
    int segments_per_device = 16;
};

class SgpPlanner final : public PlacementPlanner {
public:
    explicit SgpPlanner(SgpOptions options = {});

protected:
    CoreOutcome place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                      std::vector<std::string>& log) const override;

private:
    SgpOptions options_;
};

}  // namespace hippie::placement
