#pragma once
// The schedule view: a Gantt chart of a Trace (one row per device, grouped by node, or by
// stage, replica and tensor-parallel rank when given a plan that has them) and,
// under it on the same time axis, each device's memory curve with its capacity. Zooming or
// panning one moves both; hovering shows the time, the event and the memory there. Keys as in
// Perfetto: W/S zoom at the cursor, A/D pan, Home or 0 fits the iteration; zooming out stops
// at the iteration. Clicking a block selects it, shows its details and outlines what it waits
// on and what waits on it (dependencies.h); dragging along the time axis under the rows
// measures a span; clicking a memory curve's legend entry highlights that device's curve and
// Gantt row; nodes (or stages) collapse to one row each.
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <QPointF>
#include <QWidget>

#include "planners/cluster/cluster.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"
#include "widgets/gantt/timeline.h"
#include "widgets/memory/memory_series.h"

class QCustomPlot;
class QCPAxisRect;
class QCPItemRect;
class QCPItemText;
class QCPItemStraightLine;
class QCPRange;
class QLabel;
class QKeyEvent;
class QMouseEvent;
class QToolButton;

namespace hippie::widgets {

class GanttPlottable;
class MemoryPlot;
class TimeTicker;

class ScheduleView : public QWidget {
    Q_OBJECT
public:
    explicit ScheduleView(QWidget* parent = nullptr);
    ~ScheduleView() override;

    // `cluster` (may be null) groups the rows by node; `plan` (may be null), when it has tp > 1
    // or dp > 1, orders them by pipeline stage, replica and tensor-parallel rank instead
    // ("S0 r0 t1 · GPU 1"), grouped by stage. The view keeps its own copies.
    void setTrace(const Trace& trace, const Cluster* cluster, const Plan* plan = nullptr);
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
    // Blocks (indices into gantt()->blocks()) the selected block waits on / that wait on it.
    const std::vector<int>& waitsOnBlocks() const;
    const std::vector<int>& waitedByBlocks() const;
    // A measured span of time (drag along the time axis under the chart): shaded, with its
    // duration; measureSpan(0, 0) clears it.
    void measureSpan(double from_s, double to_s);
    QString measuredText() const;  // "12.3 ms" or ""
    double measuredSeconds() const { return span_to_s_ - span_from_s_; }
    // Groups of rows (nodes, or pipeline stages when the rows are grouped by stage) drawn as one
    // Gantt row each (all their devices' blocks on it) with only their fullest device's memory
    // curve: 16 or 32 devices stay readable. Double-clicking a row's label, or the "Collapse
    // nodes" ("Collapse stages") button, toggles them.
    void setGroupCollapsed(int group, bool collapsed);
    void setAllGroupsCollapsed(bool collapsed);
    const std::set<int>& collapsedGroups() const { return collapsed_groups_; }
    int groupCount() const;
    QString rowText(int row) const;  // the row axis's label of rowLayout().rows[row]
    void highlightDevice(int device);  // -1: none
    int highlightedDevice() const { return highlighted_device_; }

    // "CPU" or "GPU" for every row whatever the cluster says (a measured trace of ranks that ran
    // on CPUs); empty: from the cluster's device type, "GPU" without a cluster. Set before setTrace.
    void setDeviceNoun(const QString& noun) { device_noun_ = noun; }
    // The memory axis from 0 (default) or over the curves' range (MemoryPlot::setAxisFromZero).
    void setMemoryAxisFromZero(bool from_zero);

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
    void onMouseRelease(QMouseEvent* event);
    bool onTimeAxisStrip(const QPointF& pos) const;
    int blockOfEvent(int event) const;
    void onTimeRangeChanged(const QCPRange& range);
    void updateRowAxis();
    QString rowLabel(int device) const;  // "GPU 3", or "CPU 3" on a CPU cluster
    int groupOf(int device) const;       // its node, or its stage when grouped by stage
    int nodeOfDevice(int device) const;
    std::function<QString(int)> rowLabeller() const;
    void layOut();  // rows, blocks and curves from trace_, cluster_, roles_ and collapsed_groups_
    void onMouseDoubleClick(QMouseEvent* event);
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
    QString device_noun_;
    std::set<int> collapsed_groups_;
    std::map<int, DeviceRole> roles_;  // empty: rows grouped by node
    bool show_replica_ = false, show_rank_ = false;
    std::vector<MemoryCurve> all_curves_;  // every device's, also those of collapsed nodes
    QToolButton* collapse_button_ = nullptr;
    QCPItemRect* span_rect_ = nullptr;
    QCPItemText* span_label_ = nullptr;
    std::optional<double> span_anchor_s_;  // a drag on the time axis in progress
    double span_from_s_ = 0, span_to_s_ = 0;
};

}  // namespace hippie::widgets
