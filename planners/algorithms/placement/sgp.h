#pragma once
// SGP: a swift, non-iterative, load-balancing placer from operator characteristics alone (no
// profiling, no search, no list scheduling), as the project's placement issue describes it.
// It plans on the graph's ops directly, in O((ops + edges) x devices) plus sorts: no
// co-placement, no placement model with per-unit arc lists, no step estimate. Costs per op
// (computation per device type, the transfer of its edges over a typical link, its memory);
// segments of the topological order, a few per device, cut at equal shares of that cost
// where few bytes cross and homed on devices by earliest finish under memory budgets; one
// earliest-finish pass spreading parallel branches under an O(1)-per-op memory account; a
// run-aware execution order; the placement's memory counted as the simulator counts it in
// O(ops + edges) (sgpMemory), with fallbacks when it overflows. The plan is then scored as
// every placement planner's is (placementResult): the simulator judges its memory.
#include <cstdint>
#include <string>
#include <vector>

#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

struct SgpOptions {
    // Home segments hold at most this share of a device's memory, leaving room for the
    // branches other segments move there.
    double memory_fill = 0.85;
    // A cut moves up to this share of a segment's ops to the fewest crossing bytes.
    double cut_window = 0.25;
    // Segments per device before refining for memory.
    int segments_per_device = 2;
};

// The balancing pass's own timing of the placement (its makespan over typical links), in the log.
inline constexpr const char* kSgpEstimatePrefix = "sgp: the balancing pass's makespan ";

class SgpPlanner final : public Planner {
public:
    explicit SgpPlanner(SgpOptions options = {}) : options_(options) {}
    std::string name() const override { return "sgp"; }
    std::string description() const override;
    PlannerResult plan(const Problem& problem, PlanContext& context) override;

private:
    SgpOptions options_;
};

// Peak memory per device of placing op i on device[i] and running the ops in `order` (a
// topological order of all ops), one micro-batch of the problem's global batch, fill-drain:
// what placementMemory counts for that plan, in O(ops + edges) without sorting.
std::vector<int64_t> sgpMemory(const Problem& problem, const std::vector<int>& device, const std::vector<int>& order);

}  // namespace hippie::placement
