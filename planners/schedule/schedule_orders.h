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

}  // namespace hippie
