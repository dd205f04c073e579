#pragma once
// Which category (pipeline stage or device) each box of the graph view belongs to under a
// plan, so that the graph is coloured like the Gantt chart. Plain functions, no widgets.
#include <string>
#include <vector>

#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "widgets/graph/layout_graph.h"

namespace hippie::widgets {

enum class ColorBy { Stage, Device };

// Category of each op under `plan`: its pipeline stage (interleaved chunks count as their
// device position) or the first device holding it; -1 without a plan or when unplaced.
std::vector<int> opCategories(const Graph& graph, const Plan* plan, ColorBy by);

// Category of each LayoutInput node: its op's, or a collapsed layer's first op's.
std::vector<int> nodeCategories(const Graph& graph, const LayoutInput& input, const Plan* plan, ColorBy by);

// How tensor parallelism splits each LayoutInput node under `plan` (only when plan->tp > 1):
// "col/t2" or "row/t2" for an op it splits (Op::tensor_parallel), "t2: 4 col 2 row" for a
// collapsed layer holding split ops, "" for what every rank runs whole.
std::vector<std::string> nodeSplitTags(const Graph& graph, const LayoutInput& input, const Plan* plan);
// "tensor parallel: column-parallel over 2 ranks" for a tooltip, "" when `tag` is.
std::string splitTooltip(const std::string& tag, const Plan* plan);

// Tooltip text of a node: op kind, FLOPs, bytes and the device or stage.
std::string nodeTooltip(const Graph& graph, const LayoutNode& node, int category, ColorBy by);

// The properties panel: the tooltip plus the op's inputs and outputs (producer/consumer op
// and tensor bytes; the graph holds no shapes).
std::string nodeProperties(const Graph& graph, const LayoutNode& node, int category, ColorBy by);

}  // namespace hippie::widgets
