#pragma once
// The schedule view: a Gantt chart of a Trace (one row per device, grouped by node) and,
// under it on the same time axis, each device's memory curve with its capacity. Zooming or
// panning one moves both; hovering shows the time, the event and the memory there.
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <QWidget>

#include "planners/cluster/cluster.h"
#include "planners/sim/trace.h"
#include "widgets/gantt/timeline.h"

class QCustomPlot;
class QCPAxisRect;
class QCPItemStraightLine;
class QLabel;
class QMouseEvent;

namespace hippie::widgets {

class GanttPlottable;
class MemoryPlot;

class ScheduleView : public QWidget {
    Q_OBJECT
public:
    explicit ScheduleView(QWidget* parent = nullptr);
    ~ScheduleView() override;

    // `cluster` (may be null) groups the rows by node; the view keeps its own copies.
    void setTrace(const Trace& trace, const Cluster* cluster);
    void clear();
    const Trace& trace() const { return trace_; }
    const GanttRowLayout& rowLayout() const { return layout_; }

    // Teaching mode: draw only what has happened by t_s (infinity: everything).
    void setRevealTime(double t_s);
    double endTime() const;

    const GanttPlottable* gantt() const { return gantt_; }
    const MemoryPlot* memory() const { return memory_.get(); }
    QCustomPlot* plot() const { return plot_; }
    // Text of what is under plot pixel `pos` ("" when nothing): time, event, memory.
    QString describeAt(const QPointF& pos) const;

    bool savePng(const QString& path, int width = 0, int height = 0);
    bool savePdf(const QString& path);

public slots:
    void rescale();

signals:
    void hoverTextChanged(const QString& text);

private:
    void onMouseMove(QMouseEvent* event);
    void updateRowAxis();
    void updateSeparators();

    QCustomPlot* plot_;
    QCPAxisRect* gantt_rect_;
    QCPAxisRect* memory_rect_;
    GanttPlottable* gantt_;
    std::unique_ptr<MemoryPlot> memory_;
    QLabel* legend_;
    Trace trace_;
    std::optional<Cluster> cluster_;
    GanttRowLayout layout_;
    std::vector<QCPItemStraightLine*> separators_;
};

}  // namespace hippie::widgets
