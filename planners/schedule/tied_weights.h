#pragma once
// Weights that two layers share (an LM head reusing the token embedding). When the owner and
// the user are on different pipeline segments, each segment keeps a copy and their gradients
// are summed every step before the optimizer (Megatron's embedding group): one all-reduce of
// the weight over every device holding either copy, in every replica, posted before the
// optimizer step. The simulator times it like any all-reduce; the engine runs it.
#include <cstdint>
#include <vector>

#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/schedule/program.h"

namespace hippie {

struct TiedWeightUse {
    int owner_layer = 0;  // the layer that owns (and counts) the weight
    int user_layer = 0;   // the layer that reuses it
    int owner_op = -1;    // the op that owns it in the Graph
    int64_t bytes = 0;    // the weight's bytes in the graph's precision
};

// The tied weights of a zoo model's Graph (GPT's LM head, BERT's MLM decoder, the Transformer's
// output projection, each tied to the embedding table of layer 0); none for other graphs.
std::vector<TiedWeightUse> tiedWeights(const Graph& graph);

// Adds, for every tied weight whose owner and user segments are on different devices, a bucket
// (Bucket::tied_segment set), its all-reduce group and an AllReduce before the OptimizerStep of
// each device of the group; with tensor parallelism one per rank, of that rank's share of
// the weight. Lowering calls it last.
void addTiedWeightReductions(Program& program, const Graph& graph);

}  // namespace hippie
