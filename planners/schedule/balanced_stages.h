#pragma once
// The simplest pipeline partition: contiguous layer ranges with about equal forward FLOPs.
// Hand-made plans (the CLI's flags, tests) use it; planners search for better cuts.
#include <vector>

#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

namespace hippie {

// Cuts the graph's layers into `stages` contiguous ranges by prefix sums of forward FLOPs:
// stage k ends at the layer boundary nearest to (k+1)/stages of the total, and every stage
// keeps at least one layer. Throws Error when the graph has fewer layers than `stages`.
std::vector<StageRange> balancedStages(const Graph& graph, int stages);
// The same with stage k taking shares[k] parts of the FLOPs (one share per stage, each
// positive): with per-stage tensor-parallel degrees as shares, every device gets about the
// same work (a stage of 4 ranks takes twice the layers of one of 2).
std::vector<StageRange> balancedStages(const Graph& graph, const std::vector<int>& shares);

}  // namespace hippie
