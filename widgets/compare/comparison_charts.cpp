#include "widgets/compare/comparison_charts.h"

#include <algorithm>
#include <cmath>

#include <QTimer>
#include <QToolTip>
#include <QtMath>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "widgets/common/palette.h"
#include "widgets/common/units.h"
#include "widgets/compare/comparison_model.h"
#include "widgets/compare/pareto.h"

namespace hippie::widgets {

namespace {
constexpr double kBarWidth = 0.6;
constexpr double kHeadroom = 1.15;  // axis range above the largest value, room for labels
// The scatter's memory axis beyond the plan with the most memory: room for a label (planner and
// shape) right of it, where one left of it would cover its neighbours' names.
constexpr double kScatterMemoryHeadroom = 1.4;
constexpr int kNamesUnrotated = 4;  // more planners than this: their names slant
constexpr double kNameRotationDeg = 30;
constexpr double kScatterPadFraction = 0.25;     // throughput axis beyond the extreme plans, of their spread
constexpr double kScatterMinPadFraction = 0.05;  // ... and at least this much of the largest

}  // namespace

QString ComparisonCharts::toolTipAt(const QPointF& pos) const {
    const QCPAbstractPlottable* under = plot_->plottableAt(pos);
    const auto tip = tips_.find(under);
    return tip == tips_.end() ? QString() : tip.value();
}

QString ComparisonCharts::pointLabel(const QString& planner, const QString& shape) {
    return shape.isEmpty() ? planner : planner + QLatin1Char(' ') + shape;
}

ComparisonCharts::ComparisonCharts(ComparisonModel* model, QWidget* parent)
    : QWidget(parent), model_(model), plot_(new QCustomPlot(this)), rebuild_timer_(new QTimer(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(plot_);
    setMinimumHeight(280);
    // Rows arrive in bursts; redraw once per burst.
    rebuild_timer_->setSingleShot(true);
    rebuild_timer_->setInterval(0);
    connect(rebuild_timer_, &QTimer::timeout, this, &ComparisonCharts::rebuild);
    connect(model_, &QAbstractItemModel::modelReset, rebuild_timer_, qOverload<>(&QTimer::start));
    connect(model_, &QAbstractItemModel::rowsInserted, rebuild_timer_, qOverload<>(&QTimer::start));
    connect(model_, &QAbstractItemModel::dataChanged, rebuild_timer_, qOverload<>(&QTimer::start));
    connect(plot_, &QCustomPlot::afterLayout, this, &ComparisonCharts::separateLabels);
    connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        const QString tip = toolTipAt(event->position());
        if (tip.isEmpty()) QToolTip::hideText();
        else QToolTip::showText(event->globalPosition().toPoint(), tip, plot_);
    });
    rebuild();
}

namespace {
QRectF labelRect(const QCPItemText* label) {
    return QRectF(label->topLeft->pixelPosition(), label->bottomRight->pixelPosition()).normalized();
}
}  // namespace

std::vector<QRectF> ComparisonCharts::dotRects() const {
    std::vector<QRectF> rects;
    for (const ScatterDot& d : dots_) {
        const QPointF centre(d.x->coordToPixel(d.memory_gib), d.y->coordToPixel(d.throughput));
        rects.emplace_back(centre - QPointF(d.size_px / 2, d.size_px / 2), QSizeF(d.size_px, d.size_px));
    }
    return rects;
}

void ComparisonCharts::separateLabels() {
    // Each group's block of names goes to the first side of its point (right/left, under/over,
    // then a line or two further from it) where it covers no dot, no block placed before it and
    // stays in the axis rect; the largest groups are placed first. Where every side covers
    // something, the side that covers least. A name beside another plan's dot reads as that
    // plan's (issue 18: "pipedream" sat on the dot of data-parallel).
    constexpr int kSidePx = 8, kGapPx = 4;
    constexpr int kOutsideCost = 100, kOverlapCost = 10;
    std::vector<size_t> order(labels_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) { return labels_[a].lines.size() > labels_[b].lines.size(); });
    const std::vector<QRectF> dots = dotRects();
    std::vector<QRectF> placed;
    for (size_t index : order) {
        const ScatterLabel& l = labels_[index];
        if (l.lines.empty()) continue;
        const QRect inside = l.lines.front()->clipAxisRect() ? l.lines.front()->clipAxisRect()->rect() : QRect();
        const bool prefer_left = l.lines.front()->positionAlignment() & Qt::AlignRight;
        const bool prefer_down = l.lines.front()->positionAlignment() & Qt::AlignTop;
        // Left of the point (its names end beside it), right of it, or centred over or under it.
        enum class Side { Left, Right, Centre };
        auto place = [&](Side side, bool down, int extra_lines) {
            QRectF block;
            const int n = static_cast<int>(l.lines.size());
            const Qt::Alignment h = side == Side::Left ? Qt::AlignRight : side == Side::Right ? Qt::AlignLeft : Qt::AlignHCenter;
            for (int k = 0; k < n; ++k) {
                QCPItemText* t = l.lines[static_cast<size_t>(k)];
                const int offset = kGapPx + (extra_lines + (down ? k : n - 1 - k)) * l.line_px;
                t->setPositionAlignment(h | (down ? Qt::AlignTop : Qt::AlignBottom));
                const int centre_offset = side == Side::Centre ? l.line_px / 2 : 0;  // clear of the dot
                const QMargins pad(side == Side::Right ? kSidePx : 0, down ? offset + centre_offset : 0,
                                   side == Side::Left ? kSidePx : 0, down ? 0 : offset + centre_offset);
                t->setPadding(pad);
                block |= labelRect(t).adjusted(pad.left(), pad.top(), -pad.right(), -pad.bottom());
            }
            return block;
        };
        auto cost = [&](const QRectF& block) {
            int c = inside.isEmpty() || QRectF(inside).contains(block) ? 0 : kOutsideCost;
            for (const QRectF& r : dots) c += r.intersects(block) ? kOverlapCost : 0;
            for (const QRectF& r : placed) c += r.intersects(block) ? kOverlapCost : 0;
            return c;
        };
        struct Choice {
            Side side;
            bool down;
            int extra;
        };
        const Side near = prefer_left ? Side::Left : Side::Right, far = prefer_left ? Side::Right : Side::Left;
        const std::pair<Side, bool> sides[] = {{near, prefer_down},        {near, !prefer_down}, {Side::Centre, prefer_down},
                                               {Side::Centre, !prefer_down}, {far, prefer_down},   {far, !prefer_down}};
        constexpr int kMaxExtraLines = 2;
        auto search = [&](int& best_cost) {
            Choice best{near, prefer_down, 0};
            best_cost = -1;
            for (int extra = 0; extra <= kMaxExtraLines && best_cost != 0; ++extra)
                for (const auto& [side, down] : sides) {
                    const int c = cost(place(side, down, extra));
                    if (best_cost < 0 || c < best_cost) {
                        best = {side, down, extra};
                        best_cost = c;
                    }
                    if (c == 0) break;
                }
            return best;
        };
        int best_cost = 0;
        Choice best = search(best_cost);
        bool shorter = false;  // a line carries a shape its planner's name alone would drop
        for (size_t k = 0; k < l.lines.size(); ++k) shorter = shorter || l.lines[k]->text() != l.names[k];
        if (best_cost > 0 && shorter) {
            // No free place for "planner shape": the planner alone (its tooltip has the shape),
            // kept where that covers less.
            std::vector<QString> full;
            for (size_t k = 0; k < l.lines.size(); ++k) {
                full.push_back(l.lines[k]->text());
                l.lines[k]->setText(l.names[k]);
            }
            int short_cost = 0;
            const Choice short_best = search(short_cost);
            if (short_cost < best_cost) {
                best = short_best;
            } else {
                for (size_t k = 0; k < l.lines.size(); ++k) l.lines[k]->setText(full[k]);
            }
        }
        placed.push_back(place(best.side, best.down, best.extra));
    }
}

int ComparisonCharts::labelsCoveringDots() const {
    int covering = 0;
    const std::vector<QRectF> dots = dotRects();
    for (const ScatterLabel& l : labels_)
        for (const QCPItemText* t : l.lines) {
            const QMargins pad = t->padding();
            const QRectF text = labelRect(t).adjusted(pad.left(), pad.top(), -pad.right(), -pad.bottom());
            covering += static_cast<int>(std::count_if(dots.begin(), dots.end(), [&text](const QRectF& d) { return d.intersects(text); }));
        }
    return covering;
}

int ComparisonCharts::overlappingLabels() const {
    int overlaps = 0;
    std::vector<QRectF> rects;
    for (const ScatterLabel& l : labels_)
        for (const QCPItemText* t : l.lines) {
            const QMargins pad = t->padding();
            rects.push_back(labelRect(t).adjusted(pad.left(), pad.top(), -pad.right(), -pad.bottom()));
        }
    for (size_t i = 0; i < rects.size(); ++i)
        for (size_t j = 0; j < i; ++j) overlaps += rects[i].intersects(rects[j]) ? 1 : 0;
    return overlaps;
}

void ComparisonCharts::setSelectedRow(int model_row) {
    selected_row_ = model_row;
    rebuild();
}

void ComparisonCharts::rebuild() {
    tips_.clear();
    plot_->clearPlottables();
    plot_->clearItems();
    labels_.clear();
    dots_.clear();
    plot_->plotLayout()->clear();

    QVector<double> throughput, memory, me;
    // Each plan's planner, and its shape as the table's Shape column says it ("4×2 t2 z1"): two
    // plans of one planner, or two planners' plans, are told apart by their shapes.
    QVector<QString> names, shapes;
    QVector<bool> feasible;
    int highlight = -1;
    for (int row = 0; row < model_->rowCount(); ++row) {
        const PlannerResult* r = model_->result(row);
        if (!r || !ComparisonModel::hasMetrics(*r)) continue;
        if (row == selected_row_) highlight = static_cast<int>(names.size());
        names.push_back(QString::fromStdString(r->planner));
        shapes.push_back(model_->index(row, ComparisonModel::ShapeColumn).data().toString());
        feasible.push_back(r->feasible);
        throughput.push_back(r->metrics.throughput_samples_per_s);
        memory.push_back(toGiB(r->metrics.max_peak_memory_bytes));
        me.push_back(r->metrics.memory_efficiency);
    }
    plotted_ = static_cast<int>(names.size());
    pareto_ = 0;

    const QStringList headings = {tr("Throughput (samples/s)"), tr("Peak memory (GiB)"), tr("Memory efficiency (samples/s/GiB)"),
                                  tr("Throughput vs peak memory, Pareto front dashed")};
    const QFont title_font(font().family(), 9, QFont::Bold);
    const QFont tick_font(font().family(), 8);
    std::vector<QCPAxisRect*> rects;
    for (int i = 0; i < headings.size(); ++i) {
        auto* cell = new QCPLayoutGrid;
        plot_->plotLayout()->addElement(i / 2, i % 2, cell);
        cell->addElement(0, 0, new QCPTextElement(plot_, headings[i], title_font));
        auto* rect = new QCPAxisRect(plot_);
        rect->axis(QCPAxis::atLeft)->setTickLabelFont(tick_font);
        rect->axis(QCPAxis::atBottom)->setTickLabelFont(tick_font);
        rect->axis(QCPAxis::atBottom)->grid()->setZeroLinePen(Qt::NoPen);
        rect->axis(QCPAxis::atLeft)->grid()->setZeroLinePen(Qt::NoPen);
        cell->addElement(1, 0, rect);
        cell->setRowStretchFactor(0, 0.001);
        rects.push_back(rect);
    }

    if (names.isEmpty()) {
        auto* text = new QCPItemText(plot_);
        text->setClipToAxisRect(false);
        text->position->setType(QCPItemPosition::ptViewportRatio);
        text->position->setCoords(0.5, 0.5);
        text->setText(tr("No results yet: pick planners and press Run."));
        plot_->replot();
        return;
    }
    // Under the bars their planners alone: with the shapes too, slanted names ran into each
    // other. A bar's tooltip has its shape, the scatter's labels show them.
    QSharedPointer<QCPAxisTickerText> names_ticker(new QCPAxisTickerText);
    for (int i = 0; i < names.size(); ++i) names_ticker->addTick(i, names[i]);
    const double rotation_deg = names.size() > kNamesUnrotated ? kNameRotationDeg : 0;
    // A slanted name runs right of its bar: room for the last one, which QCustomPlot left out
    // when it crossed the chart's edge (gpipe-balance at the end of the right-hand chart).
    const int last_name_px = static_cast<int>(std::ceil(QFontMetrics(tick_font).horizontalAdvance(names.back()) *
                                                        std::cos(qDegreesToRadians(rotation_deg))));
    for (int i = 0; i < 3; ++i) {
        rects[static_cast<size_t>(i)]->axis(QCPAxis::atBottom)->setTicker(names_ticker);
        rects[static_cast<size_t>(i)]->axis(QCPAxis::atBottom)->setTickLabelRotation(rotation_deg);
        if (rotation_deg > 0) rects[static_cast<size_t>(i)]->setMinimumMargins(QMargins(0, 0, last_name_px, 0));
    }
    addBars(rects[0], throughput, names, shapes, tr("samples/s"), 1, highlight);
    addBars(rects[1], memory, names, shapes, tr("GiB"), 2, highlight);
    addBars(rects[2], me, names, shapes, tr("samples/s/GiB"), 2, highlight);
    addScatter(rects[3], memory, throughput, names, shapes, feasible, highlight);
    plot_->replot();
}

void ComparisonCharts::addBars(QCPAxisRect* rect, const QVector<double>& values, const QVector<QString>& names,
                               const QVector<QString>& shapes, const QString& label, int decimals, int highlight) {
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    for (int i = 0; i < values.size(); ++i) {
        auto* bars = new QCPBars(x, y);
        bars->setWidth(kBarWidth);
        const QColor c = plannerColor(names[i]);
        bars->setBrush(c);
        bars->setPen(i == highlight ? QPen(Qt::black, 2.5) : QPen(c.darker(130)));
        bars->addData(i, values[i]);
        tips_.insert(bars, QStringLiteral("%1 %2\n%3 %4").arg(names[i], shapes[i], QString::number(values[i], 'f', decimals), label));
    }
    y->setLabel(label);
    x->setRange(-0.6, values.size() - 0.4);
    y->setRange(0, std::max(1e-9, *std::max_element(values.begin(), values.end())) * kHeadroom);
}

void ComparisonCharts::addScatter(QCPAxisRect* rect, const QVector<double>& memory, const QVector<double>& throughput,
                                  const QVector<QString>& names, const QVector<QString>& shapes, const QVector<bool>& feasible,
                                  int highlight) {
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    x->setLabel(tr("peak memory (GiB)"));
    y->setLabel(tr("samples/s"));
    // The front is drawn through feasible plans only: a plan that does not fit is no trade-off.
    std::vector<TradeoffPoint> points;
    std::vector<int> index_of_point;
    for (int i = 0; i < memory.size(); ++i)
        if (feasible[i]) {
            points.push_back({memory[i], throughput[i]});
            index_of_point.push_back(i);
        }
    std::vector<int> front;
    for (int p : paretoFront(points)) front.push_back(index_of_point[static_cast<size_t>(p)]);
    pareto_ = static_cast<int>(front.size());

    auto* line = new QCPGraph(x, y);
    line->setLineStyle(QCPGraph::lsLine);
    line->setPen(QPen(QColor(0x444444), 1.2, Qt::DashLine));
    for (int i : front) line->addData(memory[i], throughput[i]);

    const double max_mem = *std::max_element(memory.begin(), memory.end());
    const double max_thr = *std::max_element(throughput.begin(), throughput.end());
    const double min_thr = *std::min_element(throughput.begin(), throughput.end());
    // Throughput from a little under the slowest plan, not from 0: plans within a few percent
    // of each other (the usual case) were a few pixels apart at 1280x800, their names piled up.
    const double pad = std::max(kScatterPadFraction * (max_thr - min_thr), kScatterMinPadFraction * max_thr);
    const double y_lo = std::max(0.0, min_thr - pad), y_hi = std::max(1e-9, max_thr + pad);
    const double x_hi = std::max(1e-9, max_mem) * kScatterMemoryHeadroom;
    // Plans whose labels would overlap share one label, at the first of them: points closer
    // than a label's height and a few characters' width, as fractions of the axes.
    constexpr double kNearX = 0.06, kNearY = 0.08;
    constexpr double kStackDownFraction = 0.7;
    std::vector<int> group(static_cast<size_t>(memory.size()));
    for (int i = 0; i < memory.size(); ++i) group[static_cast<size_t>(i)] = i;
    auto root = [&](int i) {
        while (group[static_cast<size_t>(i)] != i) i = group[static_cast<size_t>(i)];
        return i;
    };
    for (int i = 0; i < memory.size(); ++i)
        for (int j = 0; j < i; ++j)
            if (std::abs(memory[i] - memory[j]) <= kNearX * x_hi && std::abs(throughput[i] - throughput[j]) <= kNearY * (y_hi - y_lo)) {
                const int a = root(i), b = root(j);
                group[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
            }

    for (int i = 0; i < memory.size(); ++i) {
        auto* point = new QCPGraph(x, y);
        point->setLineStyle(QCPGraph::lsNone);
        const QColor c = plannerColor(names[i]);
        point->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, i == highlight ? QPen(Qt::black, 2) : QPen(c), c,
                                               i == highlight ? 13 : 9));
        point->addData(memory[i], throughput[i]);
        tips_.insert(point, tr("%1 %2\n%3 samples/s at %4 GiB")
                                .arg(names[i], shapes[i], QString::number(throughput[i], 'f', 1), QString::number(memory[i], 'f', 2)));
        dots_.push_back({x, y, memory[i], throughput[i], point->scatterStyle().size()});
        if (root(i) != i) continue;
        // One label per group of close points, at the group's centre; each name in its dot's
        // colour, one per line, so that which name is which dot does not depend on position.
        std::vector<int> members;
        double cx = 0, cy = 0;
        for (int j = 0; j < memory.size(); ++j)
            if (root(j) == i) {
                members.push_back(j);
                cx += memory[j];
                cy += throughput[j];
            }
        cx /= static_cast<double>(members.size());
        cy /= static_cast<double>(members.size());
        // Labels of plans in the right half extend to the left, so the axis does not clip them.
        const bool right_half = cx > x_hi / 2;
        const QFont small(font().family(), 8);
        const int line_px = QFontMetrics(small).height();
        // Near the top the names stack downwards, so that none is clipped by the axis rect.
        const bool top_half = cy > y_lo + (y_hi - y_lo) * kStackDownFraction;
        labels_.push_back({{}, line_px, {}});
        for (size_t k = 0; k < members.size(); ++k) {
            auto* label = new QCPItemText(plot_);
            label->setClipAxisRect(rect);
            label->position->setAxes(x, y);
            label->position->setCoords(cx, cy);
            label->setPositionAlignment((right_half ? Qt::AlignRight : Qt::AlignLeft) | (top_half ? Qt::AlignTop : Qt::AlignBottom));
            const int offset = 4 + static_cast<int>(top_half ? k : members.size() - 1 - k) * line_px;
            const int side = 8;
            label->setPadding(QMargins(right_half ? 0 : side, top_half ? offset : 0, right_half ? side : 0, top_half ? 0 : offset));
            label->setFont(small);
            label->setColor(plannerColor(names[members[k]]).darker(125));
            label->setText(pointLabel(names[members[k]], shapes[members[k]]));
            labels_.back().lines.push_back(label);
            labels_.back().names.push_back(names[members[k]]);
        }
    }
    x->setRange(0, x_hi);
    y->setRange(y_lo, y_hi);
}

}  // namespace hippie::widgets
