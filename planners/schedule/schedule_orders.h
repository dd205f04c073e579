#pragma once
// Compute orders of the pipeline schedules: for each pipeline position, the sequence of
// Forward / Backward (or BackwardInput / BackwardWeight) instructions it runs. Segment ids
// are pipeline stages: chunk c of position i is segment c * pp + i.
#include <vector>

#include "planners/schedule/plan.h"
#include "planners/schedule/program.h"

namespace hippie {

// All forwards of every micro-batch, then all backwards in reverse (GPipe's fill-drain).
// `segments` are run in the given order forward and in reverse order backward.
std::vector<Instr> fillDrainOrder(const std::vector<int>& segments, int micro_batches);

// One compute order per pipeline position for the given schedule kind.
std::vector<std::vector<Instr>> pipelineOrders(ScheduleKind kind, int pp, int virtual_stages, int micro_batches);

// Per-stage replication (Plan::stage_replicas): orders[s][j] is the compute order of replica j
// of stage s, which runs the iteration's micro-batches m = j, j + r_s, ... (r_s =
// replicas[s]) of `total`. GPipe: its forwards, then its backwards in reverse. 1F1B and hippie:
// the backward of micro-batch m follows the replica's forward of the last of its micro-batches
// up to m + G_s, where G_s, the forwards stage s keeps ahead of its backwards, sums
// max(r_k, r_k+1) over the stages k >= s after it: with one replica count for every stage this
// is 1F1B's pp - s - 1 warm-up forwards per pipeline. G_s shrinks along the pipeline, so no
// order waits on a forward that waits on it: the orders cannot deadlock.
std::vector<std::vector<std::vector<Instr>>> roundRobinOrders(ScheduleKind kind, const std::vector<int>& replicas, int total);

}  // namespace hippie
