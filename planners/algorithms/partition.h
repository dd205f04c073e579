#pragma once
// Contiguous partitions of a layer sequence into pipeline stages, shared by the planners.
#include <vector>

#include "planners/schedule/plan.h"

namespace hippie {

// Equal numbers of layers per stage (Megatron's default); earlier stages get the remainder.
std::vector<StageRange> uniformPartition(int layers, int stages);

// Minimises the largest stage sum of `weights` (one per layer), each stage non-empty; exact
// (dynamic programming / binary search over the prefix sums). Ties: earliest cuts.
std::vector<StageRange> minMaxPartition(const std::vector<double>& weights, int stages);

// torchgpipe's balance-by-time/size "block partition" (Bárány et al. heuristic as in
// torchgpipe.balance.blockpartition.solve): e.g. [1,2,3,4,5,6] into 2 -> [[1,2,3,4],[5,6]].
// Where torchgpipe's answer is not a valid balance (an empty partition, which GPipe rejects;
// possible when several layers share the smallest weight), falls back to minMaxPartition.
std::vector<StageRange> blockPartition(const std::vector<double>& weights, int stages);

}  // namespace hippie
