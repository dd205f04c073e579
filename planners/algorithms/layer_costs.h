#pragma once
// Per-layer costs of a problem's graph, with range queries over contiguous layers: what the
// pipeline planners weigh when they cut (compute time, parameter bytes, memory of a stage,
// bytes crossing a cut). Times are for device 0 of the cluster.
#include <cstdint>
#include <span>
#include <vector>

#include "planners/algorithms/planner.h"
#include "planners/cost/cost_model.h"

namespace hippie {

// What one rank of t-way tensor parallelism runs, as a graph of its own: every op's FLOPs,
// profiled times, traffic, output and workspace times its share (CostModel::rankShare), its
// parameters the rank's (rankParamBytes), each edge's bytes what a rank sends of that tensor
// (sentShare), and nothing split any more. Costed without a split, it gives the split
// costs of `graph`; stage-level planners weigh ranks with it. The collectives are not in it.
Graph tensorParallelRankGraph(const Graph& graph, TensorSplit split);

class LayerCosts {
public:
    explicit LayerCosts(const Problem& problem);

    const CostModel& cost() const { return cost_; }
    int layers() const { return static_cast<int>(fwd_bwd_s_.size()); }

    // Forward + backward seconds of each layer for `samples` samples.
    std::vector<double> computePerLayer(double samples) const;
    double computeSeconds(int first, int last, double samples) const;  // layers first..last
    std::vector<double> paramBytesPerLayer() const;
    int64_t paramBytes(int first, int last) const;
    std::span<const int> ops(int first, int last) const;  // the layers' ops, layer by layer

    // Parameters, gradients, master weights, optimizer state and gradient buckets of a stage
    // replica with `dp` replicas (the cost model's static memory), under ZeRO stage `zero`
    // (stage 3: with two adjacent layers' parameters gathered, zeroGatheredBytes).
    int64_t staticBytes(int first, int last, int dp, int zero = 0) const;
    // ZeRO-3: the most parameter bytes layers first..last hold whole at once, gathered layer by
    // layer with the next one prefetched: the largest two adjacent layers' (zero_gathers.h).
    int64_t zeroGatheredBytes(int first, int last) const;
    // Model states of one layer alone (no buffers): torchgpipe's "parameter size x scale".
    int64_t layerStateBytes(int layer) const;
    // Activations one micro-batch of `samples` keeps for backward in a stage: its layers'
    // outputs, the stage input and the largest workspace.
    int64_t stashBytes(int first, int last, double samples) const;
    int64_t activationBytes(int layer, double samples) const;
    // Bytes of the tensors crossing the cut after `last` (one per producing op).
    int64_t boundaryBytes(int last, double samples) const;

private:
    int64_t scaled(int64_t bytes_at_graph_batch, double samples) const { return cost_.scaled(bytes_at_graph_batch, samples); }

    const Problem& problem_;
    CostModel cost_;
    std::vector<Layer> layers_;
    std::vector<int> ops_by_layer_;       // op ids ordered by layer
    std::vector<size_t> layer_offset_;    // start of each layer in ops_by_layer_, plus the end
    std::vector<double> fwd_bwd_s_;       // per layer, for one sample
    std::vector<double> time_prefix_;     // prefix sums of fwd_bwd_s_
    std::vector<int64_t> param_prefix_;
    std::vector<int64_t> rank_param_prefix_;  // of cost_.rankParamBytes, what staticBytes sums
    std::vector<int64_t> activation_prefix_;  // at the graph's batch size
    std::vector<int64_t> cut_bytes_;          // at the graph's batch size, after each layer
};

}  // namespace hippie
