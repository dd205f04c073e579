#pragma once
// PipeDream's partitioning dynamic program (Narayanan et al., "PipeDream: Generalized
// Pipeline Parallelism for DNN Training", SOSP'19, section 3.1), over our cost model.
//
// A(i->j, m) is the time of the slowest stage of the best pipeline for layers i..j on m
// workers; a stage of layers i..j replicated on r workers takes
//     T(i->j, r) = compute(i..j) / r + allreduce(weights(i..j), r)
// (each replica runs 1/r of the samples and synchronises its weights), and
//     A(i->j, m) = min( T(i->j, r) for r <= m,
//                       min over k < j, r' < m of max( A(i->k, m - r'), 2 a_k / B, T(k+1->j, r') ) )
// where 2 a_k / B moves the activations and their gradients across the cut. A stage that
// does not fit memory (model states + the micro-batches in flight, estimated as PipeDream's
// optimizer does from the workers downstream) is not allowed. The program is hierarchical:
// it is solved inside a node over its GPUs for every layer range, and the node-level optimum
// of a range becomes the compute time of a "worker" (a whole node) in the program across
// nodes, whose all-reduce runs over the inter-node links.
//
// Times are per iteration of the global batch: unlike PipeDream's asynchronous weight
// updates, our schedules synchronise weights once per iteration (PipeDream-flush).
#include <limits>
#include <string>
#include <vector>

#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/planner.h"

namespace hippie {

struct PipeDreamStage {
    int first_layer = 0;
    int last_layer = 0;
    int replicas = 1;  // GPUs running this stage
    // Those GPUs (global device ids): a GPU-level stage inside a node-level stage of n nodes
    // runs on the same GPUs of each of those nodes, listed node-interleaved (GPU g of each node,
    // then g + 1) so that round-robin keeps a micro-batch on one node within the node-level stage.
    std::vector<int> devices;
};

struct PipeDreamConfig {
    double slowest_stage_s = std::numeric_limits<double>::infinity();  // the program's objective
    std::vector<PipeDreamStage> stages;

    bool found() const { return !stages.empty(); }
    bool uniformReplication() const;  // every stage has the same number of replicas
    std::string str() const;          // "0-11 x2 | 12-25 x6 (slowest stage 1.23 s)"
};

struct PipeDreamOptions {
    double micro_batch_size = 1;  // samples per micro-batch, for the memory constraint
    // 0: any replication (the paper). Otherwise every stage uses exactly this many GPUs of a
    // node, and every node-level stage exactly this many nodes: uniform replication.
    int gpus_per_stage = 0;
    int nodes_per_stage = 0;
    // Nonzero: every replica count (GPUs of a stage in a node, nodes of a node-level stage)
    // divides this, the global batch, so that a synchronous iteration can deal the batch's
    // micro-batches round-robin over each stage's replicas (PipeDream's asynchronous pipeline
    // needs no such thing; a plan does).
    int replicas_divide = 0;
};

// Whether the program runs on two levels (nodes of equal size, more than one node).
bool pipeDreamHierarchical(const Cluster& cluster);

PipeDreamConfig solvePipeDream(const Problem& problem, const LayerCosts& costs, const PipeDreamOptions& options);

}  // namespace hippie
