#include "widgets/graph/node_colors.h"

#include <algorithm>

#include <QString>

#include "widgets/common/units.h"

namespace hippie::widgets {

namespace {

int stageOfLayer(const Plan& plan, int layer) {
    for (size_t s = 0; s < plan.stages.size(); ++s)
        if (layer >= plan.stages[s].first_layer && layer <= plan.stages[s].last_layer) return static_cast<int>(s);
    return -1;
}

}  // namespace

std::vector<int> opCategories(const Graph& graph, const Plan* plan, ColorBy by) {
    std::vector<int> cat(graph.ops.size(), -1);
    if (!plan) return cat;
    if (plan->isPlacement()) {
        for (size_t i = 0; i < graph.ops.size() && i < plan->placement.size(); ++i) cat[i] = plan->placement[i];
        return cat;
    }
    const int pp = plan->pipelineDepth();
    for (size_t i = 0; i < graph.ops.size(); ++i) {
        const int stage = stageOfLayer(*plan, graph.ops[i].layer);
        if (stage < 0) continue;
        const int position = pp > 0 ? stage % pp : stage;  // an interleaved chunk runs on its position
        if (by == ColorBy::Stage) {
            cat[i] = stage;
        } else {
            const auto p = static_cast<size_t>(position);
            cat[i] = p < plan->device_map.size() && !plan->device_map[p].empty() ? plan->device_map[p].front() : position;
        }
    }
    return cat;
}

std::vector<int> nodeCategories(const Graph& graph, const LayoutInput& input, const Plan* plan, ColorBy by) {
    const std::vector<int> ops = opCategories(graph, plan, by);
    std::vector<int> layer_cat(static_cast<size_t>(graph.layerCount()), -1);
    for (size_t i = 0; i < graph.ops.size(); ++i) {
        const auto l = static_cast<size_t>(graph.ops[i].layer);
        if (l < layer_cat.size() && layer_cat[l] < 0) layer_cat[l] = ops[i];
    }
    std::vector<int> cat;
    cat.reserve(input.nodes.size());
    for (const LayoutNode& n : input.nodes) {
        if (n.op >= 0)
            cat.push_back(ops[static_cast<size_t>(n.op)]);
        else
            cat.push_back(n.layer >= 0 && static_cast<size_t>(n.layer) < layer_cat.size() ? layer_cat[static_cast<size_t>(n.layer)]
                                                                                       : -1);
    }
    return cat;
}

std::vector<std::string> nodeSplitTags(const Graph& graph, const LayoutInput& input, const Plan* plan) {
    std::vector<std::string> tags(input.nodes.size());
    if (!plan || plan->isPlacement() || plan->tp <= 1) return tags;
    // Each node's stage's degree (Plan::stage_tp, or tp for every stage); none on a stage of 1.
    const auto degreeText = [&](int layer) -> std::string {
        const int stage = stageOfLayer(*plan, layer);
        const int t = stage < 0 ? plan->tp : plan->tpOf(stage % std::max(plan->pipelineDepth(), 1));
        return t > 1 ? "t" + std::to_string(t) : std::string();
    };
    // Split ops per layer, for the collapsed layers' boxes.
    std::vector<std::pair<int, int>> per_layer(static_cast<size_t>(std::max(graph.layerCount(), 0)));  // (column, row)
    for (const Op& op : graph.ops) {
        const auto l = static_cast<size_t>(op.layer);
        if (l >= per_layer.size()) continue;
        if (op.tensor_parallel == TensorParallel::Column) ++per_layer[l].first;
        if (op.tensor_parallel == TensorParallel::Row) ++per_layer[l].second;
    }
    for (size_t i = 0; i < input.nodes.size(); ++i) {
        const LayoutNode& n = input.nodes[i];
        if (n.op >= 0) {
            const Op& op = graph.ops[static_cast<size_t>(n.op)];
            const std::string t = degreeText(op.layer);
            if (t.empty()) continue;
            if (op.tensor_parallel == TensorParallel::Column) tags[i] = "col/" + t;
            if (op.tensor_parallel == TensorParallel::Row) tags[i] = "row/" + t;
        } else if (n.layer >= 0 && static_cast<size_t>(n.layer) < per_layer.size()) {
            const auto [col, row] = per_layer[static_cast<size_t>(n.layer)];
            const std::string t = degreeText(n.layer);
            if (col + row == 0 || t.empty()) continue;
            tags[i] = t + ":";
            if (col > 0) tags[i] += " " + std::to_string(col) + " col";
            if (row > 0) tags[i] += " " + std::to_string(row) + " row";
        }
    }
    return tags;
}

std::string splitTooltip(const std::string& tag, const Plan* plan) {
    if (tag.empty() || !plan) return {};
    // The tag names its stage's degree: "col/t4", "row/t2", "t2: 1 col 1 row".
    const size_t at = tag.starts_with("col/") || tag.starts_with("row/") ? 5 : 1;
    const std::string ranks = tag.substr(at, tag.find_first_not_of("0123456789", at) - at) + " tensor-parallel ranks";
    if (tag.starts_with("col/")) return "tensor parallel: column-parallel, output split over " + ranks + " (no collective after it)";
    if (tag.starts_with("row/")) return "tensor parallel: row-parallel, input split over " + ranks + ", outputs all-reduced";
    return "tensor parallel: " + tag.substr(tag.find(':') + 2) + " ops split over " + ranks;
}

std::string nodeTooltip(const Graph& graph, const LayoutNode& node, int category, ColorBy by) {
    QString text;
    if (node.op >= 0) {
        const Op& op = graph.ops[static_cast<size_t>(node.op)];
        text = QStringLiteral("%1 (%2), layer %3\nforward %4, backward %5\nparams %6, activation (output) %7, temporary %8")
                   .arg(QString::fromStdString(op.name), QString::fromStdString(op.kind))
                   .arg(op.layer)
                   .arg(formatFlops(op.fwd_flops), formatFlops(op.bwd_flops), formatBytes(op.param_bytes),
                        formatBytes(op.output_bytes), formatBytes(op.temp_bytes));
    } else {
        text = QString::fromStdString(node.label) + QStringLiteral("\ndouble-click to expand");
    }
    if (category >= 0) text += QStringLiteral("\n%1 %2").arg(by == ColorBy::Stage ? QStringLiteral("stage") : QStringLiteral("device")).arg(category);
    return text.toStdString();
}

std::string nodeProperties(const Graph& graph, const LayoutNode& node, int category, ColorBy by) {
    std::string text = nodeTooltip(graph, node, category, by);
    if (node.op < 0) return text;
    const auto edgeText = [&](int other, int64_t bytes) {
        return QStringLiteral("\n  %1 (%2)").arg(QString::fromStdString(graph.ops[static_cast<size_t>(other)].name), formatBytes(bytes));
    };
    QString in, out;
    for (const Edge& e : graph.edges) {
        if (e.dst == node.op) in += edgeText(e.src, e.bytes);
        if (e.src == node.op) out += edgeText(e.dst, e.bytes);
    }
    text += QStringLiteral("\ninputs:%1\noutputs:%2")
                .arg(in.isEmpty() ? QStringLiteral(" (model input)") : in, out.isEmpty() ? QStringLiteral(" (loss)") : out)
                .toStdString();
    return text;
}

}  // namespace hippie::widgets
