#include "widgets/memory/memory_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "widgets/common/chart_legend.h"
#include "widgets/common/palette.h"
#include "widgets/common/units.h"
#include "widgets/memory/capacity_legend_item.h"

namespace hippie::widgets {

namespace {
constexpr double kCapacityZoomRatio = 2.5;  // capacity above this many peaks is left off scale
constexpr double kPeakHeadroom = 1.25;
constexpr double kCapacityHeadroom = 1.08;
constexpr double kCurvePenWidth = 1.5;
constexpr double kHighlightPenWidth = 3.0;
constexpr int kFaintAlpha = 50;
constexpr int kLegendIconWidthPx = 20;  // a line sample needs no more than QCustomPlot's 32x18
constexpr int kLegendIconHeightPx = 10;
constexpr int kLabelPaddingPx = 4;
constexpr double kSpanPadding = 0.15;  // with setAxisFromZero(false): room above and below the curves
const QPen kCapacityPen(QColor(0xd62728), 1.2, Qt::DashLine);
}  // namespace

MemoryPlot::MemoryPlot(QCustomPlot* plot, QCPAxisRect* rect) : plot_(plot), rect_(rect) {
    rect_->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("memory (GiB)"));
    // Under the curves, as wide as the time axis: beside them, a column of 16 or 32 devices
    // took the width of the Gantt chart above too (the two share their time axis).
    QCPLegend* legend = plot_->legend;
    legend->setFont(QFont(legend->font().family(), 8));
    legend->setIconSize(kLegendIconWidthPx, kLegendIconHeightPx);
    legend->setSelectableParts(QCPLegend::spItems);
    putLegendUnderAxes(plot_);
    legend->setVisible(true);
    // The capacity in a legend of its own beside the devices': as an entry among theirs, its
    // long name widened one column of sixteen short ones.
    capacity_legend_ = new QCPLegend;
    addBesideLegend(plot_, capacity_legend_);
    capacity_legend_->setLayer(QStringLiteral("legend"));
    capacity_legend_->setFont(legend->font());
    capacity_legend_->setIconSize(legend->iconSize());
    capacity_legend_->setVisible(false);
}

void MemoryPlot::clear() {
    for (QCPGraph* g : graphs_) plot_->removeGraph(g);
    for (QCPItemStraightLine* l : capacity_lines_) plot_->removeItem(l);
    capacity_legend_->clearItems();
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
        line->setPen(kCapacityPen);
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
    if (!from_zero_ && capacity_off_scale) {
        // The rise and fall of the activations over what stays resident: from 0, the curves of
        // a lesson's small model were flat lines at the top of the axis.
        double lowest = peak;
        for (const MemoryCurve& c : curves_)
            for (double gib : c.gib) lowest = std::min(lowest, gib);
        const double span = peak - lowest;
        if (span > 0) y->setRange(std::max(0.0, lowest - kSpanPadding * span) * per_gib_, (peak + kSpanPadding * span) * per_gib_);
    }
    // Nothing to draw (a run whose prediction could not be made): no unit and no numbers.
    y->setLabel(curves_.empty() ? QStringLiteral("memory") : QStringLiteral("memory (%1)").arg(unitName()));
    y->setTickLabels(!curves_.empty());
    // Never lower than its label: squeezed under a Gantt chart at 1280x800 it was cut.
    rect_->setMinimumSize(rect_->minimumSize().width(), QFontMetrics(y->labelFont()).horizontalAdvance(y->label()) + kLabelPaddingPx);
    for (double cap : capacities) {
        const QString text = QStringLiteral("capacity %1").arg(formatBytes(static_cast<int64_t>(cap * kBytesPerGiB)));
        capacity_legend_->addItem(
            new CapacityLegendItem(capacity_legend_, capacity_off_scale ? text + QStringLiteral(" (off scale)") : text, kCapacityPen));
    }
    plot_->legend->setVisible(!curves_.empty());  // an empty legend is a stray frame
    capacity_legend_->setVisible(!capacities.empty() && !curves_.empty());
    fitLegendColumns(plot_);
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
    const double lower = y->range().lower;
    y->setRange(lower, lower + std::max(1e-6, y->range().size() * factor));
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
