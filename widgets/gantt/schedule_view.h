#pragma once
// The schedule view: a Gantt chart of a Trace (one row per device, grouped by node) and,
// under it on the same time axis, each device's memory curve with its capacity. Zooming or
// panning one moves both; hovering shows the time, the event and the memory there. Keys as in
// Perfetto: W/S zoom at the cursor, A/D pan, Home or 0 fits the iteration; zooming out stops
// at the iteration. Clicking a block selects it and shows its details; clicking a memory
// curve's legend entry highlights that device's curve and Gantt row.
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <QPointF>
#include <QWidget>

#include "planners/cluster/cluster.h"
#include "planners/sim/trace.h"
#include "widgets/gantt/timeline.h"

class QCustomPlot;
class QCPAxisRect;
class QCPItemRect;
class QCPItemStraightLine;
class QCPRange;
class QLabel;
class QKeyEvent;
class QMouseEvent;

namespace hippie::widgets {

class GanttPlottable;
class MemoryPlot;
class TimeTicker;

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

    // Navigation (keys W/S/A/D/Home/0 call these): the visible time range, clamped to the iteration.
    TimeWindow visibleWindow() const;
    TimeWindow fullWindow() const;
    // Views that share one time axis (predicted beside measured) may show up to the longer of
    // their traces: the full window reaches at least end_s (0: this view's own end only).
    void setSharedEndTime(double end_s);
    void zoomAt(double anchor_s, double factor);
    void pan(double fraction);
    QString timeAxisLabel() const;  // "time (ms)": the unit follows the visible span

    // Click selection: the block (index into gantt()->blocks()) and its details text.
    void selectBlock(int block);
    int selectedBlock() const { return selected_; }
    QString selectedDetails() const;
    void highlightDevice(int device);  // -1: none
    int highlightedDevice() const { return highlighted_device_; }

    bool savePng(const QString& path, int width = 0, int height = 0);
    bool savePdf(const QString& path);

public slots:
    void rescale();

signals:
    void hoverTextChanged(const QString& text);
    void blockSelected(const QString& details);  // "" when the selection is cleared

protected:
    void keyPressEvent(QKeyEvent* event) override;

private:
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    void onTimeRangeChanged(const QCPRange& range);
    void updateRowAxis();
    QString rowLabel(int device) const;  // "GPU 3", or "CPU 3" on a CPU cluster
    std::function<QString(int)> rowLabeller() const;
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
    TimeTicker* gantt_ticker_ = nullptr;
    TimeTicker* memory_ticker_ = nullptr;
    QPointF last_mouse_{-1, -1};
    int selected_ = -1;
    int highlighted_device_ = -1;
    double shared_end_s_ = 0;  // setSharedEndTime
    QCPItemRect* row_highlight_ = nullptr;
};

}  // namespace hippie::widgets
