#pragma once
// Streams that repeat each other's timing. A pipeline plan's data-parallel replicas and
// tensor-parallel ranks run the same instructions on devices of the same kind, so on a
// homogeneous cluster their timings are the same to the last bit: the simulator runs one
// stream of each such class (its representative) and copies its timing to the others.
// A plan of 32 devices as 4 stages x 8 tensor-parallel ranks runs 4 streams instead of 32.
#include <cstddef>
#include <vector>

#include "planners/cluster/cluster.h"
#include "planners/schedule/program.h"

namespace hippie {

// For each stream of `prog`, the stream whose timing it repeats (itself for a
// representative). Streams of the same segments are one class when, instruction by
// instruction, they agree in everything but their peers and groups, and
// - their devices' nodes are equal (Node::operator==: device, links, ports, host sharing);
// - each transfer's peer is a stream whose representative is the representative's peer at
//   that instruction, over a link of the same kind (same node or not);
// - each collective's group has the same number of members on each node, counted as a
//   multiset (the ring's time depends on nothing else on equal nodes), members of the same
//   classes, and the same count of groups on its ports for its in-line collectives
//   (`group_sharing`: countedGroupSharing(prog, cluster), which the simulator has);
// - every group a representative posts to holds, for each member, that member's
//   representative (so the representatives' collectives wait for each other alone).
// Anything else (placements, whose segments have no stage; per-stage replication or degrees, heterogeneous nodes, a
// group that mixes classes) gives every stream itself: the caller runs them all.
std::vector<size_t> symmetricRepresentatives(const Program& prog, const Cluster& cluster, const std::vector<int>& group_sharing);

}  // namespace hippie
