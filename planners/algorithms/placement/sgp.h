#pragma once
// SGP: a swift, non-iterative, load-balancing placement from operator characteristics alone
// (no profiling, no search, no list scheduling). Every step is one linear pass (plus sorts):
// 1. Per unit, a comprehensive cost: its computation (forward + backward from FLOPs), the
//    communication of its edges (each tensor forward and its gradient back over a typical
//    link) and its memory (weights, optimizer state, activations).
// 2. Home segments, as many as memory needs (devices at `memory_fill` of their capacity; at
//    least one, at most one per device): the topological order is cut where the prefix of
//    memory reaches an equal share, each cut moved within a window (`cut_window` of a
//    segment) to where the fewest bytes cross it. Segment k is device k's home: a chain of
//    the graph stays on one device and crosses to the next only at a cheap cut.
// 3. Load balance across parallel branches, in one pass: units of equal depth (longest path
//    in edges from an input) never depend on each other; level by level, largest
//    computation first, each unit goes to the device where it would finish first (the
//    device's busy time so far, its inputs' arrival over the links, its computation there)
//    plus, off its home, the transfer of its output back. A branch therefore leaves its home
//    only where the cost model says the parallel work pays for the transfers, and then stays
//    on its new device (its next unit has its input there). Devices without room (the memory
//    accounting of the other placement planners) are skipped; a unit that fits nowhere makes
//    the plan infeasible, with the reason. No ready list, no choice among units: the order is
//    fixed, so this is O((units + edges) x devices), not a list-scheduling search.
// 4. Execution order: units by the time their inputs are ready in that pass, those on another
//    device than their producer first (the simulator runs each maximal run of the order on
//    one device as a whole, so a branch must not wait for its producer's device to finish
//    the home branch), ties by depth: a topological order.
// 5. Four candidates, each estimated once by the step estimate (step_estimate.h): the balanced
//    placement and the home segments alone, each in that order and in the topological order;
//    the fastest that fits memory wins (the home segments alone win on chains, where spreading
//    only adds transfers).
// Linear in units and edges times devices: a 20,000-op graph's core takes tens of
// milliseconds; most of the planner's time is the co-placement, exact memory check and
// simulation that every placement planner shares (the "placement core" log line has the
// core's own time).
#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct SgpOptions {
    PlacementOptions placement;
    // Home segments hold at most this share of a device's memory, leaving room for the
    // branches other segments move there.
    double memory_fill = 0.85;
    // A home cut moves up to this share of a segment's units to the fewest crossing bytes.
    double cut_window = 0.25;
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
