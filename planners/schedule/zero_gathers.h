#pragma once
// ZeRO-3's per-layer parameter gathering (program.h, ZeroGather): which buckets a compute
// instruction all-gathers, read the same way by the lowering that writes ZeroGather
// instructions, the validator that checks them, the simulator that times them and the engine
// that runs them.
#include <cstdint>
#include <vector>

#include "planners/model/graph.h"
#include "planners/schedule/program.h"

namespace hippie {

// The data-parallel buckets with bytes that `compute` uses, in the order it uses them: a
// forward or recompute from the segment's first layer to its last, a backward the other way.
// Under ZeRO-3 a bucket is one layer's parameters (lower.cpp), so this is one gather per
// layer. A layer that reuses a weight another layer on the same devices owns (an LM head
// tied to the embedding table) gathers that layer's bucket too, just before its own.
// A Recompute gathers the buckets of its recomputed ops that have parameters. A backward
// gathers none of a layer recomputed whole: the engine rebuilds such a layer right before its
// backward and keeps what the rebuild gathered through it (one gather per layer in backward,
// as FSDP's checkpointed layers have), so the Recompute lists that gather. A backward's
// bucket part gathers its own bucket, BackwardWeight and the optimizer step nothing.
// Empty below ZeRO stage 3.
std::vector<int> zeroGatheredBuckets(const Program& prog, const Graph& graph, const Instr& compute);

// The most parameter bytes one gathering holds whole at once: a layer's and, prefetched
// while it computes, the next one's.
int64_t zeroGatherHeldBytes(const Program& prog, const std::vector<int>& buckets);

}  // namespace hippie
