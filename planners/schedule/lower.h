#pragma once
// Lowering: Plan -> Program for each schedule kind. Compute order comes from the schedule;
// sends and receives are derived from the compute instructions and the data flow between
// segments, never written by hand.
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/schedule/program.h"

namespace hippie {

// Checks that the plan is consistent with the graph (stages cover every layer in order,
// device map shape, micro-batches divide the batch, ...) and throws Error naming the field.
void checkPlan(const Plan& plan, const Graph& graph, int cluster_devices);
// Throws Error when even one micro-batch of the whole global batch is smaller than the model
// trains on (Graph::min_micro_batch): no plan of that batch can train it.
void requireTrainableBatch(const Graph& graph, int global_batch);

struct LowerOptions {
    // A data-parallel replica's stream copies replica 0's of the same tensor-parallel rank,
    // peers and group replaced, where every segment places their devices alike
    // (CommunicationDeriver::counterparts). false: every lane's communication is derived on
    // its own (the tests compare the two).
    bool copy_replica_communication = true;
};

Program lower(const Plan& plan, const Graph& graph, const LowerOptions& options = {});

}  // namespace hippie
