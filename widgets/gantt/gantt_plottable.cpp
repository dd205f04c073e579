#include "widgets/gantt/gantt_plottable.h"

#include <algorithm>
#include <array>

#include "widgets/common/palette.h"

namespace hippie::widgets {

namespace {
constexpr int kKindCount = static_cast<int>(InstrKind::OptimizerStep) + 1;
constexpr double kMinOutlinedWidthPx = 6.0;  // narrower blocks are drawn without an outline
constexpr double kLabelPaddingPx = 4.0;
}  // namespace

GanttPlottable::GanttPlottable(QCPAxis* time_axis, QCPAxis* row_axis) : QCPAbstractPlottable(time_axis, row_axis) {
    setAntialiasedFill(false);
    setSelectable(QCP::stNone);
}

void GanttPlottable::setBlocks(std::vector<GanttBlock> blocks) { blocks_ = std::move(blocks); }

void GanttPlottable::setRevealTime(double t_s) { reveal_s_ = t_s; }

int GanttPlottable::blockAt(double t_s, double y) const {
    for (size_t i = 0; i < blocks_.size(); ++i) {
        const GanttBlock& b = blocks_[i];
        if (b.start_s > reveal_s_) continue;
        if (t_s >= b.start_s && t_s <= b.end_s && y >= b.y_top && y <= b.y_bottom) return static_cast<int>(i);
    }
    return -1;
}

double GanttPlottable::selectTest(const QPointF& pos, bool only_selectable, QVariant* details) const {
    Q_UNUSED(details)
    if (only_selectable && !selectable()) return -1;
    if (!mKeyAxis || !mValueAxis) return -1;
    const double t = mKeyAxis->pixelToCoord(pos.x());
    const double y = mValueAxis->pixelToCoord(pos.y());
    return blockAt(t, y) >= 0 ? 0.0 : -1.0;
}

QCPRange GanttPlottable::getKeyRange(bool& found, QCP::SignDomain) const {
    found = !blocks_.empty();
    if (!found) return {};
    QCPRange r(blocks_.front().start_s, blocks_.front().end_s);
    for (const GanttBlock& b : blocks_) {
        r.lower = std::min(r.lower, b.start_s);
        r.upper = std::max(r.upper, b.end_s);
    }
    return r;
}

QCPRange GanttPlottable::getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const {
    found = !blocks_.empty();
    if (!found) return {};
    QCPRange r(blocks_.front().y_top, blocks_.front().y_bottom);
    for (const GanttBlock& b : blocks_) {
        r.lower = std::min(r.lower, b.y_top);
        r.upper = std::max(r.upper, b.y_bottom);
    }
    return r;
}

QColor GanttPlottable::subPixelColor() { return QColor(0x9a9a9a); }
// Apart from every instruction kind's colour (palette.h): outlines must not read as a kind.
QColor GanttPlottable::waitsOnColor() { return QColor(0x00, 0xa8, 0xc0); }
QColor GanttPlottable::waitedByColor() { return QColor(0xe0, 0x10, 0x90); }

void GanttPlottable::setDependencyBlocks(std::vector<int> waits_on, std::vector<int> waited_by) {
    waits_on_ = std::move(waits_on);
    waited_by_ = std::move(waited_by);
}

void GanttPlottable::draw(QCPPainter* painter) {
    last_drawn_ = 0;
    last_sub_pixel_ = 0;
    QVector<QRectF> sub_pixel;
    if (!mKeyAxis || !mValueAxis || blocks_.empty()) return;
    const QCPRange visible = mKeyAxis->range();
    std::array<QVector<QRectF>, kKindCount> by_kind;
    std::array<QVector<QRectF>, kKindCount> outlined;
    std::vector<std::pair<QRectF, int>> labelled;
    const QFontMetricsF metrics(mParentPlot->font());

    for (size_t i = 0; i < blocks_.size(); ++i) {
        const GanttBlock& b = blocks_[i];
        if (b.end_s < visible.lower || b.start_s > visible.upper || b.start_s > reveal_s_) continue;
        const double end = std::min(b.end_s, reveal_s_);
        const QPointF a = coordsToPixels(b.start_s, b.y_top);
        const QPointF c = coordsToPixels(end, b.y_bottom);
        QRectF rect = QRectF(a, c).normalized();
        ++last_drawn_;
        if (rect.width() < 1.0) {
            rect.setWidth(1.0);  // a block never disappears when zoomed out, but its colour would lie
            sub_pixel.push_back(rect);
            ++last_sub_pixel_;
            continue;
        }
        const int k = static_cast<int>(b.kind);
        (rect.width() >= kMinOutlinedWidthPx ? outlined : by_kind)[static_cast<size_t>(k)].push_back(rect);
        if (isCompute(b.kind) && !b.shared_row && rect.width() >= metrics.height() * 1.2) labelled.emplace_back(rect, static_cast<int>(i));
    }

    painter->setPen(Qt::NoPen);
    for (int k = 0; k < kKindCount; ++k) {
        const QColor color = instrColor(static_cast<InstrKind>(k));
        painter->setBrush(color);
        painter->setPen(Qt::NoPen);
        if (!by_kind[static_cast<size_t>(k)].isEmpty()) painter->drawRects(by_kind[static_cast<size_t>(k)]);
        painter->setPen(QPen(color.darker(150), 0));
        if (!outlined[static_cast<size_t>(k)].isEmpty()) painter->drawRects(outlined[static_cast<size_t>(k)]);
    }
    if (!sub_pixel.isEmpty()) {
        painter->setPen(Qt::NoPen);
        painter->setBrush(subPixelColor());
        painter->drawRects(sub_pixel);
    }
    drawLabels(painter, labelled);
    auto outline = [&](int block, const QPen& pen) {
        if (block < 0 || block >= blockCount()) return;
        const GanttBlock& b = blocks_[static_cast<size_t>(block)];
        if (b.start_s > reveal_s_) return;
        const QRectF r = QRectF(coordsToPixels(b.start_s, b.y_top), coordsToPixels(b.end_s, b.y_bottom)).normalized();
        painter->setBrush(Qt::NoBrush);
        painter->setPen(pen);
        painter->drawRect(r.adjusted(-1, -1, 1, 1));
    };
    constexpr double kDependencyPenWidth = 2.5;
    for (int b : waits_on_) outline(b, QPen(waitsOnColor(), kDependencyPenWidth));
    for (int b : waited_by_) outline(b, QPen(waitedByColor(), kDependencyPenWidth, Qt::DashLine));
    outline(selected_, QPen(Qt::black, kDependencyPenWidth));
}

void GanttPlottable::drawLabels(QCPPainter* painter, const std::vector<std::pair<QRectF, int>>& labelled) const {
    painter->setPen(Qt::white);
    const QFontMetricsF metrics(painter->font());
    for (const auto& [rect, index] : labelled) {
        const QString text = QString::fromStdString(blockLabel(blocks_[static_cast<size_t>(index)]));
        if (metrics.horizontalAdvance(text) + kLabelPaddingPx > rect.width() || metrics.height() > rect.height() + 2)
            continue;
        painter->drawText(rect, Qt::AlignCenter, text);
    }
}

void GanttPlottable::drawLegendIcon(QCPPainter* painter, const QRectF& rect) const {
    painter->setPen(Qt::NoPen);
    painter->setBrush(instrColor(InstrKind::Forward));
    painter->drawRect(rect.adjusted(0, rect.height() * 0.25, -rect.width() / 2, -rect.height() * 0.25));
    painter->setBrush(instrColor(InstrKind::Backward));
    painter->drawRect(rect.adjusted(rect.width() / 2, rect.height() * 0.25, 0, -rect.height() * 0.25));
}

}  // namespace hippie::widgets
