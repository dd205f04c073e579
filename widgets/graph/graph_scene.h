#pragma once
// The laid-out operator graph as QGraphicsItems: a rounded box per node, filled with its
// category's colour and labelled, and Graphviz's splines with arrowheads for edges.
#include <vector>

#include <QColor>
#include <QGraphicsScene>

#include "widgets/graph/layout_graph.h"

class QGraphicsPathItem;

namespace hippie::widgets {

class GraphScene : public QGraphicsScene {
    Q_OBJECT
public:
    explicit GraphScene(QObject* parent = nullptr);

    // Replaces everything; `tooltips` and `colors` have one entry per node.
    void setLayout(const LayoutInput& input, const GraphLayout& layout, const std::vector<QColor>& colors,
                   const std::vector<QString>& tooltips);
    void setColors(const std::vector<QColor>& colors, const std::vector<QString>& tooltips);
    // Marks the nodes with a non-empty tag (nodeSplitTags: split by tensor parallelism) with a
    // double border and the tag in a badge on their top-right corner; one entry per node.
    void setSplitTags(const std::vector<QString>& tags);
    QString splitTag(int node) const;  // "" when unmarked
    int splitMarkCount() const;        // nodes drawn with the double border

    int nodeItemCount() const { return static_cast<int>(nodes_.size()); }
    int edgeItemCount() const { return edge_count_; }
    QColor nodeColor(int node) const;
    int nodeOfItem(const QGraphicsItem* item) const;  // -1 if not a node box (or its label)
    QRectF nodeRect(int node) const;

    // Outlines the nodes whose label contains `text` (case-insensitive); returns them.
    std::vector<int> highlight(const QString& text);

private:
    std::vector<QGraphicsPathItem*> nodes_;
    std::vector<QString> labels_;  // full names; the drawn ones may be elided
    std::vector<QString> split_tags_;
    std::vector<QGraphicsItem*> split_marks_;  // inner borders and badges, children of their boxes
    int edge_count_ = 0;
};

}  // namespace hippie::widgets
