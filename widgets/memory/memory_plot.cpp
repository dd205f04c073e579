#include "widgets/memory/memory_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "widgets/common/palette.h"
#include "widgets/common/units.h"

namespace hippie::widgets {

namespace {
constexpr double kCapacityZoomRatio = 2.5;  // capacity above this many peaks is left off scale
constexpr double kPeakHeadroom = 1.25;
constexpr double kCapacityHeadroom = 1.08;
constexpr int kLegendRowsPerColumn = 8;
constexpr double kCurvePenWidth = 1.5;
constexpr double kHighlightPenWidth = 3.0;
constexpr int kFaintAlpha = 50;
constexpr int kLegendGapPx = 4;    // between the curves' axis rect and the legend
constexpr int kLegendInsetPx = 3;  // between the legend and the widget's right edge
}  // namespace

MemoryPlot::MemoryPlot(QCustomPlot* plot, QCPAxisRect* rect) : plot_(plot), rect_(rect) {
    rect_->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("memory (GiB)"));
    // The legend beside the memory curves, in a column of its own, so it never covers data.
    QCPLegend* legend = plot_->legend;
    if (plot_->axisRect()->insetLayout()->take(legend)) plot_->axisRect()->insetLayout()->simplify();
    int row = 0, column = 0;
    if (plot_->plotLayout()->hasElement(0, 0)) {
        for (int r = 0; r < plot_->plotLayout()->rowCount(); ++r)
            if (plot_->plotLayout()->element(r, 0) == rect_) row = r;
        column = 1;
    }
    // With free space under it: a grid row is no taller than its smallest element allows, and
    // the legend alone (a few devices, or none) would squash the curves to its height.
    auto* side = new QCPLayoutGrid;
    plot_->plotLayout()->addElement(row, column, side);
    side->addElement(0, 0, legend);
    side->addElement(1, 0, new QCPLayoutElement(plot_));
    side->setRowStretchFactor(1, 1000);
    // Off the widget's right edge: the legend's frame is drawn one pixel past its rect.
    side->setMargins(QMargins(kLegendGapPx, 0, kLegendInsetPx, 0));
    plot_->plotLayout()->setColumnStretchFactor(column, 0.001);
    legend->setFillOrder(QCPLayoutGrid::foRowsFirst);
    legend->setWrap(kLegendRowsPerColumn);
    legend->setFont(QFont(legend->font().family(), 8));
    legend->setSelectableParts(QCPLegend::spItems);
    legend->setVisible(true);
}

void MemoryPlot::clear() {
    for (QCPGraph* g : graphs_) plot_->removeGraph(g);
    for (QCPItemStraightLine* l : capacity_lines_) plot_->removeItem(l);
    graphs_.clear();
    capacity_lines_.clear();
}

void MemoryPlot::setCurves(std::vector<MemoryCurve> curves, const std::function<QString(int)>& label) {
    clear();
    curves_ = std::move(curves);
    colors_.clear();
    QCPAxis* x = rect_->axis(QCPAxis::atBottom);
    QCPAxis* y = rect_->axis(QCPAxis::atLeft);
    double peak = 0;
    double capacity = 0;
    std::set<double> capacities;
    for (size_t i = 0; i < curves_.size(); ++i) {
        QCPGraph* g = plot_->addGraph(x, y);
        g->setLineStyle(QCPGraph::lsStepLeft);
        colors_.push_back(deviceColor(static_cast<int>(i), static_cast<int>(curves_.size())));
        g->setPen(QPen(colors_.back(), kCurvePenWidth));
        g->setName(label ? label(curves_[i].device) : QStringLiteral("GPU %1").arg(curves_[i].device));
        g->setProperty("device", curves_[i].device);
        g->setAdaptiveSampling(true);
        graphs_.push_back(g);
        peak = std::max(peak, curves_[i].peak_gib);
        capacity = std::max(capacity, curves_[i].capacity_gib);
        if (curves_[i].capacity_gib > 0) capacities.insert(curves_[i].capacity_gib);
    }
    for (double cap : capacities) {
        auto* line = new QCPItemStraightLine(plot_);
        line->setClipAxisRect(rect_);
        line->point1->setAxes(x, y);
        line->point2->setAxes(x, y);
        line->point1->setCoords(0, cap);
        line->point2->setCoords(1, cap);
        line->setPen(QPen(QColor(0xd62728), 1.2, Qt::DashLine));
        capacity_lines_.push_back(line);
    }
    // Far below capacity, the curves would be a flat line at the bottom: zoom on them and say
    // where the capacity is instead.
    const bool capacity_off_scale = capacity > kCapacityZoomRatio * peak && peak > 0;
    // A tiny model's curves read "0.2 MiB", not "0.0002 GiB".
    unit_ = byteUnitFor((capacity_off_scale || capacity <= 0 ? peak : std::max(peak, capacity)) * kBytesPerGiB);
    per_gib_ = kBytesPerGiB * unit_.per_byte;
    for (QCPItemStraightLine* line : capacity_lines_) {
        line->point1->setCoords(0, line->point1->coords().y() * per_gib_);
        line->point2->setCoords(1, line->point2->coords().y() * per_gib_);
    }
    const double top = (capacity_off_scale ? peak * kPeakHeadroom : std::max(peak, capacity) * kCapacityHeadroom) * per_gib_;
    y->setRange(0, top > 0 ? top : 1.0);
    y->setLabel(capacity_off_scale ? QStringLiteral("memory (%1)\ncapacity %2 off scale")
                                         .arg(unitName(), formatBytes(static_cast<int64_t>(capacity * kBytesPerGiB)))
                                   : QStringLiteral("memory (%1)").arg(unitName()));
    plot_->legend->setVisible(!curves_.empty());  // an empty legend is a stray frame
    fill(std::numeric_limits<double>::infinity());
}

void MemoryPlot::setRevealTime(double t_s) { fill(t_s); }

void MemoryPlot::highlightDevice(int device) {
    for (size_t i = 0; i < graphs_.size(); ++i) {
        QColor c = colors_[i];
        double width = kCurvePenWidth;
        if (device >= 0 && curves_[i].device == device) width = kHighlightPenWidth;
        else if (device >= 0) c.setAlpha(kFaintAlpha);
        graphs_[i]->setPen(QPen(c, width));
    }
}

QString MemoryPlot::formatGiB(double gib) const {
    return QStringLiteral("%1 %2").arg(gib * per_gib_, 0, 'f', 2).arg(unitName());
}

void MemoryPlot::scaleValueAxis(double factor) {
    QCPAxis* y = rect_->axis(QCPAxis::atLeft);
    y->setRange(0, std::max(1e-6, y->range().upper * factor));
}

void MemoryPlot::fill(double reveal_s) {
    for (size_t i = 0; i < graphs_.size(); ++i) {
        const MemoryCurve c = std::isinf(reveal_s) ? curves_[i] : truncated(curves_[i], reveal_s);
        QVector<double> values(c.gib.begin(), c.gib.end());
        for (double& v : values) v *= per_gib_;
        graphs_[i]->setData(QVector<double>(c.time_s.begin(), c.time_s.end()), values, true);
    }
}

}  // namespace hippie::widgets
