#pragma once
// Co-placement grouper: shrinks a graph before placement by merging ops that would almost
// always share a device anyway (Baechi's co-placement, Jeon et al., SoCC'20):
// - an op with a single consumer joins that consumer's group (its only tensor then never
//   crosses devices);
// - a group with a single producer group joins it (chains after a fan-out).
// Both rules keep the group graph acyclic (see coplacement.cpp). Groups are capped in
// compute time and memory so that the placer keeps enough freedom to balance devices.
#include <cstdint>
#include <vector>

#include "planners/model/graph.h"

namespace hippie::placement {

struct CoplacementOptions {
    bool enabled = true;
    int min_ops = 1000;              // smaller graphs are placed op by op
    bool merge_single_consumer = true;
    bool fuse_chains = true;
    // Caps, in units of the whole graph: a group holds at most this share of the total
    // compute and of the total memory, times 1 / devices.
    double max_group_share = 0.125;
};

// Costs the caps are measured in, by op of the graph being grouped.
struct GroupingWeights {
    std::vector<double> seconds;  // compute time of one op
    std::vector<int64_t> bytes;   // memory the op adds to its device
};

struct Grouping {
    std::vector<int> group_of;              // original op -> group
    std::vector<std::vector<int>> members;  // group -> original ops, in topological order
    // Between groups (src, dst are group ids): the bytes of the distinct tensors flowing from
    // src's ops into dst's ops, at the graph's batch size.
    std::vector<Edge> edges;

    int groups() const { return static_cast<int>(members.size()); }
    // Expands a per-group device vector, or an order of groups, back to the original ops.
    std::vector<int> expandPlacement(const std::vector<int>& group_device) const;
    std::vector<int> expandOrder(const std::vector<int>& group_order) const;
};

// Every op its own group.
Grouping identityGrouping(const Graph& graph);

// Ops with equal labels form a group. The caller makes sure the groups are acyclic (e.g.
// contiguous runs of a topological order).
Grouping groupByLabel(const Graph& graph, const std::vector<int>& label);

// Groups by the rules above, within caps of max_group_share / devices of the totals of
// `weights`. Returns the identity grouping when disabled or when the graph is small.
Grouping coplace(const Graph& graph, const GroupingWeights& weights, int devices, const CoplacementOptions& options);

}  // namespace hippie::placement
