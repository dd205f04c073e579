#pragma once
// Memory curves of a Trace drawn into one axis rect of a QCustomPlot: a step line per
// device and each distinct device capacity as a dashed line.
#include <vector>

#include <qcustomplot.h>

#include "widgets/memory/memory_series.h"

namespace hippie::widgets {

class MemoryPlot {
public:
    MemoryPlot(QCustomPlot* plot, QCPAxisRect* rect);

    void setCurves(std::vector<MemoryCurve> curves);
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
};

}  // namespace hippie::widgets
