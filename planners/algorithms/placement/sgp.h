#pragma once
// SGP: a swift, non-iterative, load-balancing placement from operator characteristics alone
// (no profiling, no search, no list scheduling). Every step is one pass (plus sorts):
// 1. Per unit, a comprehensive cost: its computation (forward + backward from FLOPs), the
//    communication of its edges (each tensor forward and its gradient back over a typical
//    link) and its memory (weights, optimizer state, activations).
// 2. Segments tied to the number of devices: `segments_per_device` per device (fewer where
//    single units hold more than a segment's share), cut at equal shares of the units'
//    comprehensive cost (share of all computation and output transfers plus share of all
//    memory), each cut moved within a window (`cut_window` of a segment) to where the fewest
//    bytes cross it. Segments go to devices in order, each to the device where it would
//    finish first (the device's busy time so far, its inputs' arrival over a typical link
//    from other devices' segments, its computation there; ties: its predecessor's device)
//    among those with room in their home budget: at most `memory_fill` of the device, and no
//    more than a quarter of the segment past an equal share of the model over the devices
//    memory needs. A chain thus stays on one device (staying costs no transfer) and moves to
//    the next at a segment boundary, a cheap cut, when memory needs; segments that do not
//    depend on each other spread. Refined where memory requires more: a segment that fits no
//    device's room is cut where the room of its predecessor's device (else the roomiest)
//    ends, moved back within its window to the fewest crossing bytes, and the rest is the
//    next segment. A segment's device is the home of its units.
// 3. Load balance across parallel branches, in one pass over a fixed order: wide graphs (on
//    average at least one unit per device in each depth level; units of one depth level never
//    depend on each other) level by level, narrow ones unit by unit in order of earliest
//    possible start (longest computation path from an input); largest computation first,
//    each unit goes to the device where it would finish first (the device's busy time so far,
//    its inputs' arrival over a typical link, its computation there) plus, off its home, the
//    transfer of its output back. A branch therefore leaves its home only where the cost model
//    says the parallel work pays for the transfers, and then stays on its new device (its
//    next unit has its input there). A device without room (DeviceMemory, as the other
//    placement planners count) gives way to the next best; a unit that fits nowhere makes the
//    plan infeasible, with the reason. No ready list and no choice among units: this is
//    O((units + edges) x devices), not a list-scheduling search. Where the home segments
//    alone are no slower by the step estimate every placement planner shares
//    (step_estimate.h, tracked against the simulator by tests), and they fit, they are kept
//    instead.
// 4. Execution order (the simulator runs each maximal run of the order on one device as a
//    whole: it starts when all its inputs are there, its tensors leave when it ends): units by
//    the time their inputs are ready in that pass, but a unit starts a new run when it has an
//    input from another device or the run on its device feeds another device (a ready unit of
//    another device goes between). A topological order. When its memory, as the step
//    estimate counts it (step_estimate.h), does not fit, the ready-time order, the topological
//    order and the home segments alone are the fallbacks, said in the notes.
// A 20,000-op graph's core takes milliseconds; most of the planner's time is the co-placement,
// exact memory check and simulation every placement planner shares (the log's "placement
// core:" line has the core's own time).
#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct SgpOptions {
    PlacementOptions placement;
    // Home segments hold at most this share of a device's memory, leaving room for the
    // branches other segments move there.
    double memory_fill = 0.85;
    // A cut moves up to this share of a segment's units to the fewest crossing bytes.
    double cut_window = 0.25;
    // Segments per device before refining for memory.
    int segments_per_device = 2;
};

// The log line with the step estimate (step_estimate.h) of the placement SGP returns:
// "sgp: step estimate of the placement 1.2345 s".
inline constexpr const char* kSgpEstimatePrefix = "sgp: step estimate of the placement ";

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
