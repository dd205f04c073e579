#include "widgets/graph/graph_scene.h"

#include <algorithm>

#include <QFontMetricsF>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QPainterPath>
#include <QPen>

namespace hippie::widgets {

namespace {
constexpr int kNodeIndexKey = 0;
constexpr double kCornerRadius = 5;
constexpr double kArrowLength = 8;
constexpr double kArrowHalfWidth = 3.5;
const QColor kEdgeColor(0x6b6b6b);
const QColor kHighlightColor(0xd62728);
constexpr double kSplitInset = 2.5;      // the inner line of the double border
constexpr double kBadgeFontPt = 6.5;
constexpr double kBadgePad = 1.5;

QPainterPath edgePath(const EdgeGeometry& e) {
    QPainterPath path;
    if (e.bezier.empty()) return path;
    path.moveTo(e.bezier[0].first, e.bezier[0].second);
    for (size_t k = 1; k + 2 < e.bezier.size(); k += 3)
        path.cubicTo(e.bezier[k].first, e.bezier[k].second, e.bezier[k + 1].first, e.bezier[k + 1].second,
                     e.bezier[k + 2].first, e.bezier[k + 2].second);
    return path;
}

QPolygonF arrowHead(QPointF from, QPointF tip) {
    QLineF line(tip, from);
    if (line.length() <= 0) return {};
    line.setLength(kArrowLength);
    const QPointF base = line.p2();
    const QPointF normal = QPointF(-(base - tip).y(), (base - tip).x()) / kArrowLength * kArrowHalfWidth;
    return QPolygonF({tip, base + normal, base - normal});
}
}  // namespace

GraphScene::GraphScene(QObject* parent) : QGraphicsScene(parent) { setItemIndexMethod(QGraphicsScene::BspTreeIndex); }

void GraphScene::setLayout(const LayoutInput& input, const GraphLayout& layout, const std::vector<QColor>& colors,
                           const std::vector<QString>& tooltips) {
    clear();
    nodes_.clear();
    labels_.clear();
    split_tags_.clear();
    split_marks_.clear();
    edge_count_ = 0;
    const QPen edge_pen(kEdgeColor, 1.0);
    for (const EdgeGeometry& e : layout.edges) {
        const QPainterPath path = edgePath(e);
        if (path.isEmpty()) continue;
        auto* item = addPath(path, edge_pen);
        item->setZValue(0);
        if (e.has_arrow) {
            const auto& last = e.bezier.back();
            auto* head = addPolygon(arrowHead(QPointF(last.first, last.second),
                                              QPointF(e.arrow_tip.first, e.arrow_tip.second)),
                                    edge_pen, QBrush(kEdgeColor));
            head->setZValue(0);
        }
        ++edge_count_;
    }
    QFont font;
    font.setPointSizeF(8);
    const QFontMetricsF metrics(font);
    for (size_t i = 0; i < layout.nodes.size() && i < input.nodes.size(); ++i) {
        const NodeGeometry& g = layout.nodes[i];
        const QRectF rect(g.x - g.width / 2, g.y - g.height / 2, g.width, g.height);
        QPainterPath box;
        box.addRoundedRect(rect, kCornerRadius, kCornerRadius);
        auto* item = addPath(box, QPen(QColor(0x404040), input.nodes[i].op < 0 ? 1.6 : 0.8));
        item->setData(kNodeIndexKey, static_cast<int>(i));
        item->setZValue(1);
        auto* label = new QGraphicsSimpleTextItem(
            metrics.elidedText(QString::fromStdString(input.nodes[i].label), Qt::ElideMiddle, rect.width() - 6), item);
        label->setFont(font);
        const QRectF lr = label->boundingRect();
        label->setPos(rect.center() - QPointF(lr.width() / 2, lr.height() / 2));
        nodes_.push_back(item);
        labels_.push_back(QString::fromStdString(input.nodes[i].label));
    }
    setColors(colors, tooltips);
    setSceneRect(QRectF(-20, -20, layout.width + 40, layout.height + 40));
}

void GraphScene::setColors(const std::vector<QColor>& colors, const std::vector<QString>& tooltips) {
    for (size_t i = 0; i < nodes_.size(); ++i) {
        nodes_[i]->setBrush(i < colors.size() ? colors[i] : QColor(Qt::lightGray));
        if (i < tooltips.size()) nodes_[i]->setToolTip(tooltips[i]);
    }
}

void GraphScene::setSplitTags(const std::vector<QString>& tags) {
    for (QGraphicsItem* mark : split_marks_) delete mark;  // children of the boxes: removed with them
    split_marks_.clear();
    split_tags_.assign(nodes_.size(), QString());
    QFont font;
    font.setPointSizeF(kBadgeFontPt);
    font.setBold(true);
    for (size_t i = 0; i < nodes_.size() && i < tags.size(); ++i) {
        if (tags[i].isEmpty()) continue;
        split_tags_[i] = tags[i];
        QGraphicsPathItem* box = nodes_[i];
        const QRectF rect = box->path().boundingRect();
        QPainterPath inner;
        inner.addRoundedRect(rect.adjusted(kSplitInset, kSplitInset, -kSplitInset, -kSplitInset), kCornerRadius - 1, kCornerRadius - 1);
        auto* border = new QGraphicsPathItem(inner, box);
        border->setPen(QPen(QColor(0x202020), 0.9));
        border->setData(kNodeIndexKey, static_cast<int>(i));
        split_marks_.push_back(border);
        // The badge straddles the top-right corner, over the border rather than the name.
        auto* text = new QGraphicsSimpleTextItem(tags[i]);
        text->setFont(font);
        const QRectF tr = text->boundingRect().adjusted(-kBadgePad, 0, kBadgePad, 0);
        auto* badge = new QGraphicsRectItem(QRectF(QPointF(0, 0), tr.size()), box);
        badge->setPos(rect.right() - tr.width() - kCornerRadius, rect.top() - tr.height() / 2);
        badge->setBrush(QColor(0xfafafa));
        badge->setPen(QPen(QColor(0x202020), 0.7));
        badge->setZValue(2);
        badge->setData(kNodeIndexKey, static_cast<int>(i));
        text->setParentItem(badge);
        text->setPos(kBadgePad, 0);
        split_marks_.push_back(badge);
    }
}

QString GraphScene::splitTag(int node) const {
    return node >= 0 && static_cast<size_t>(node) < split_tags_.size() ? split_tags_[static_cast<size_t>(node)] : QString();
}

int GraphScene::splitMarkCount() const {
    return static_cast<int>(std::count_if(split_tags_.begin(), split_tags_.end(), [](const QString& t) { return !t.isEmpty(); }));
}

QColor GraphScene::nodeColor(int node) const {
    return nodes_[static_cast<size_t>(node)]->brush().color();
}

int GraphScene::nodeOfItem(const QGraphicsItem* item) const {
    for (; item; item = item->parentItem()) {
        const QVariant v = item->data(kNodeIndexKey);
        if (v.isValid()) return v.toInt();
    }
    return -1;
}

QRectF GraphScene::nodeRect(int node) const { return nodes_[static_cast<size_t>(node)]->boundingRect(); }

std::vector<int> GraphScene::highlight(const QString& text) {
    std::vector<int> found;
    for (size_t i = 0; i < nodes_.size(); ++i) {
        QPen pen = nodes_[i]->pen();
        const bool match = !text.isEmpty() && labels_[i].contains(text, Qt::CaseInsensitive);
        pen.setColor(match ? kHighlightColor : QColor(0x404040));
        pen.setWidthF(match ? 3.0 : 0.8);
        nodes_[i]->setPen(pen);
        if (match) found.push_back(static_cast<int>(i));
    }
    return found;
}

}  // namespace hippie::widgets
