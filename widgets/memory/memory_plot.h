#pragma once
// Memory curves of a Trace drawn into one axis rect of a QCustomPlot: a step line per
// device, in colours apart from the Gantt chart's, named in a legend under the curves (not
// over them), and each distinct device capacity as a dashed line, named in a legend beside it.
#include <functional>
#include <vector>

#include <QString>

#include <qcustomplot.h>

#include "widgets/common/time_units.h"
#include "widgets/memory/memory_series.h"

namespace hippie::widgets {

class MemoryPlot {
public:
    MemoryPlot(QCustomPlot* plot, QCPAxisRect* rect);

    // `label` names a device in the legend ("GPU 3"); default "GPU <id>".
    void setCurves(std::vector<MemoryCurve> curves, const std::function<QString(int)>& label = {});
    // Draws `device`'s curve thick and the others faint (-1: all alike).
    void highlightDevice(int device);
    void scaleValueAxis(double factor);  // vertical zoom, anchored at the axis' lower end
    // false: when the capacity is off scale, the axis spans the curves' lowest to highest value
    // rather than 0 to the highest (teaching mode, where the change is the point). Before setCurves.
    void setAxisFromZero(bool from_zero) { from_zero_ = from_zero; }
    double axisLower() const { return rect_->axis(QCPAxis::atLeft)->range().lower; }
    double axisUpper() const { return rect_->axis(QCPAxis::atLeft)->range().upper; }
    // The unit the axis shows (GiB, MiB, KiB: chosen from the largest peak) and a value in it.
    QString unitName() const { return QString::fromUtf8(unit_.name); }
    QString formatGiB(double gib) const;
    const std::vector<MemoryCurve>& curves() const { return curves_; }
    void setRevealTime(double t_s);  // infinity shows everything
    int graphCount() const { return static_cast<int>(graphs_.size()); }
    const QCPGraph* graph(int i) const { return graphs_[static_cast<size_t>(i)]; }

private:
    void clear();
    void fill(double reveal_s);

    QCustomPlot* plot_;
    QCPAxisRect* rect_;
    std::vector<MemoryCurve> curves_;
    std::vector<QCPGraph*> graphs_;
    std::vector<QCPItemStraightLine*> capacity_lines_;
    QCPLegend* capacity_legend_;
    std::vector<QColor> colors_;
    ByteUnit unit_;
    double per_gib_ = 1.0;  // displayed units per GiB
    bool from_zero_ = true;
};

}  // namespace hippie::widgets
