#pragma once
// A placement's step time and memory estimated the way the lowering and the simulator run
// it, in time linear in units and edges (cheap enough for a genetic algorithm's fitness):
// the execution order is cut into segments (runs on one device); a segment's forward starts
// when its device is free and every input segment has ended and sent its tensors; then the
// backwards in reverse, each after the gradients of its consumers arrived. Transfers take the
// link's latency plus bandwidth time of the tensors one segment sends one device; links are
// not shared. Memory as placementMemory counts it, for the units.
#include <cstdint>
#include <vector>

#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct StepEstimate {
    double step_s = 0;            // last backward's end
    double comm_s = 0;            // all transfers, activations and gradients
    std::vector<double> busy_s;   // compute per device
    std::vector<int64_t> memory;  // peak per device
};

// `order`: the execution order, a topological order of the units.
StepEstimate estimateStep(const PlacementModel& model, const std::vector<int>& device, const std::vector<int>& order);

}  // namespace hippie::placement
