#include "widgets/memory/memory_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "widgets/common/palette.h"

namespace hippie::widgets {

namespace {
constexpr double kCapacityZoomRatio = 2.5;  // capacity above this many peaks is left off scale
constexpr double kPeakHeadroom = 1.25;
constexpr double kCapacityHeadroom = 1.08;
}  // namespace

MemoryPlot::MemoryPlot(QCustomPlot* plot, QCPAxisRect* rect) : plot_(plot), rect_(rect) {
    rect_->axis(QCPAxis::atLeft)->setLabel(QStringLiteral("memory (GiB)"));
}

void MemoryPlot::clear() {
    for (QCPGraph* g : graphs_) plot_->removeGraph(g);
    for (QCPItemStraightLine* l : capacity_lines_) plot_->removeItem(l);
    graphs_.clear();
    capacity_lines_.clear();
}

void MemoryPlot::setCurves(std::vector<MemoryCurve> curves) {
    clear();
    curves_ = std::move(curves);
    QCPAxis* x = rect_->axis(QCPAxis::atBottom);
    QCPAxis* y = rect_->axis(QCPAxis::atLeft);
    double peak = 0;
    double capacity = 0;
    std::set<double> capacities;
    for (size_t i = 0; i < curves_.size(); ++i) {
        QCPGraph* g = plot_->addGraph(x, y);
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(QPen(seriesColor(static_cast<int>(i)), 1.5));
        g->setName(QStringLiteral("device %1").arg(curves_[i].device));
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
    const double top = capacity_off_scale ? peak * kPeakHeadroom : std::max(peak, capacity) * kCapacityHeadroom;
    y->setRange(0, top > 0 ? top : 1.0);
    y->setLabel(capacity_off_scale ? QStringLiteral("memory (GiB), capacity %1 GiB off scale").arg(capacity, 0, 'f', 0)
                                   : QStringLiteral("memory (GiB)"));
    fill(std::numeric_limits<double>::infinity());
}

void MemoryPlot::setRevealTime(double t_s) { fill(t_s); }

void MemoryPlot::fill(double reveal_s) {
    for (size_t i = 0; i < graphs_.size(); ++i) {
        const MemoryCurve c = std::isinf(reveal_s) ? curves_[i] : truncated(curves_[i], reveal_s);
        graphs_[i]->setData(QVector<double>(c.time_s.begin(), c.time_s.end()), QVector<double>(c.gib.begin(), c.gib.end()),
                            true);
    }
}

}  // namespace hippie::widgets
