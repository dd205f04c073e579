#pragma once
// What the graph view lays out, without Qt or Graphviz: boxes (ops, or whole layers when
// collapsed) and the edges between them, and the geometry a layouter returns.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "planners/model/graph.h"

namespace hippie::widgets {

// Above this many ops the view starts with one box per layer.
inline constexpr int kDefaultCollapseThresholdOps = 300;

struct LayoutNode {
    std::string label;
    double width_pt = 0;   // box size in points (1/72 inch), as Graphviz measures
    double height_pt = 0;
    int op = -1;            // op id, or -1 for a collapsed layer
    int layer = -1;         // the layer of the op, or the collapsed layer's index
};

struct LayoutEdge {
    int src = 0;  // indices into LayoutInput::nodes
    int dst = 0;
    int64_t bytes = 0;
};

struct LayoutInput {
    std::vector<LayoutNode> nodes;
    std::vector<LayoutEdge> edges;
};

struct NodeGeometry {
    double x = 0;  // centre, points, y grows downwards
    double y = 0;
    double width = 0;
    double height = 0;
};

struct EdgeGeometry {
    int src = 0;
    int dst = 0;
    std::vector<std::pair<double, double>> bezier;  // cubic Bezier control points: p0 (c1 c2 p)*
    bool has_arrow = false;
    std::pair<double, double> arrow_tip{0, 0};
};

struct GraphLayout {
    std::vector<NodeGeometry> nodes;  // one per LayoutInput node, same order
    std::vector<EdgeGeometry> edges;
    double width = 0;
    double height = 0;
    std::string error;  // non-empty when the layout failed
};

bool shouldCollapse(const Graph& graph, int threshold_ops = kDefaultCollapseThresholdOps);

// Ops of expanded layers (all layers when `collapsed` is false) as boxes, every other layer
// as one box; edges between boxes are merged, with their bytes summed.
LayoutInput buildLayoutInput(const Graph& graph, bool collapsed, const std::set<int>& expanded_layers = {});

}  // namespace hippie::widgets
