#pragma once
// SGP: non-iterative placement from operator characteristics alone (no profiling, no search).
// 1. Per op: a computation cost (forward + backward time from FLOPs), a communication cost
//    (its largest output and that gradient over a typical link) and their sum, the combined
//    cost.
// 2. The topological order is cut into segments: one ends before it would exceed an equal
//    share of the combined cost (segments_per_device per device), and at a chain break
//    (where the order leaves a plain chain: parallel branches start or join) once it holds a
//    minimum share (1 / max_segments of the total, which bounds the segment count).
// 3. Each cut moves, within a window around it, to where the transfer time of the bytes
//    crossing it plus the combined cost it shifts between its two segments is smallest,
//    preferring chain breaks.
// 4. Scheduling: the segments are list-scheduled on the devices, earliest start first under
//    memory budgets (the scheduler m-ETF uses), which balances the load; then the ops are
//    ordered by a list schedule on their segments' devices, so a device need not wait for a
//    whole segment's inputs.
// Linear in ops and edges, plus two list schedules (of at most max_segments segments, and of
// the ops on fixed devices): tens of thousands of ops in about a second.
#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct SgpOptions {
    PlacementOptions placement;
    int segments_per_device = 8;  // the load-balancing share: total cost / (this x devices)
    int max_segments = 8192;
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
