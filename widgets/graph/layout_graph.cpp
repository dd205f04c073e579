#include "widgets/graph/layout_graph.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace hippie::widgets {

namespace {
constexpr double kOpHeightPt = 26;
constexpr double kLayerHeightPt = 34;
constexpr double kCharWidthPt = 6.2;  // average label glyph width at the view's font size
constexpr double kMinWidthPt = 54;
constexpr double kMaxWidthPt = 190;

double widthFor(const std::string& label) {
    return std::clamp(kCharWidthPt * static_cast<double>(label.size()) + 14, kMinWidthPt, kMaxWidthPt);
}
}  // namespace

bool shouldCollapse(const Graph& graph, int threshold_ops) { return static_cast<int>(graph.ops.size()) > threshold_ops; }

LayoutInput buildLayoutInput(const Graph& graph, bool collapsed, const std::set<int>& expanded_layers) {
    LayoutInput in;
    std::vector<int> box_of_op(graph.ops.size(), -1);
    std::map<int, int> box_of_layer;
    const std::vector<Layer> layers = graph.layers();
    for (size_t i = 0; i < graph.ops.size(); ++i) {
        const Op& op = graph.ops[i];
        const bool as_op = !collapsed || expanded_layers.count(op.layer) > 0;
        if (as_op) {
            LayoutNode n;
            n.label = op.name;
            n.width_pt = widthFor(op.name);
            n.height_pt = kOpHeightPt;
            n.op = static_cast<int>(i);
            n.layer = op.layer;
            box_of_op[i] = static_cast<int>(in.nodes.size());
            in.nodes.push_back(std::move(n));
            continue;
        }
        auto [it, inserted] = box_of_layer.emplace(op.layer, static_cast<int>(in.nodes.size()));
        if (inserted) {
            LayoutNode n;
            const auto li = static_cast<size_t>(op.layer);
            const std::string name = li < layers.size() && !layers[li].name.empty() ? layers[li].name
                                                                                    : "layer " + std::to_string(op.layer);
            const size_t count = li < layers.size() ? layers[li].ops.size() : 0;
            n.label = name + " (" + std::to_string(count) + " ops)";
            n.width_pt = widthFor(n.label);
            n.height_pt = kLayerHeightPt;
            n.layer = op.layer;
            in.nodes.push_back(std::move(n));
        }
        box_of_op[i] = it->second;
    }
    std::map<std::pair<int, int>, size_t> edge_index;
    for (const Edge& e : graph.edges) {
        if (e.src < 0 || e.dst < 0 || static_cast<size_t>(e.src) >= box_of_op.size() ||
            static_cast<size_t>(e.dst) >= box_of_op.size())
            continue;
        const int a = box_of_op[static_cast<size_t>(e.src)];
        const int b = box_of_op[static_cast<size_t>(e.dst)];
        if (a == b) continue;
        auto [it, inserted] = edge_index.emplace(std::make_pair(a, b), in.edges.size());
        if (inserted)
            in.edges.push_back({a, b, e.bytes});
        else
            in.edges[it->second].bytes += e.bytes;
    }
    return in;
}

}  // namespace hippie::widgets
