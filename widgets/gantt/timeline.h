#pragma once
// Timeline maths of the Gantt chart, free of any widget so that it is tested without a
// window: time <-> pixel mapping, one row per device (grouped by node, or by pipeline stage,
// replica and tensor-parallel rank under a plan that has them), and where each event's block goes.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"

namespace hippie::widgets {

// Linear map from a visible time range [t0_s, t1_s] onto pixels [px0, px1].
struct TimeAxisMapping {
    double t0_s = 0;
    double t1_s = 1;
    double px0 = 0;
    double px1 = 1;

    double toPixel(double t_s) const;
    double toTime(double px) const;
    double pixelsPerSecond() const;
};

// A visible time range, and the navigation of Perfetto and Nsight Systems on it: W/S zoom at
// the cursor, A/D pan, never beyond the iteration (`limits`) and never narrower than `min_span_s`.
struct TimeWindow {
    double lower_s = 0;
    double upper_s = 1;
    double span() const { return upper_s - lower_s; }
};
TimeWindow clampWindow(TimeWindow w, TimeWindow limits, double min_span_s);
// `factor` < 1 zooms in; `anchor_s` stays where it is on screen.
TimeWindow zoomWindow(TimeWindow w, double anchor_s, double factor, TimeWindow limits, double min_span_s);
// Moves by `fraction` of the visible span (negative: earlier).
TimeWindow panWindow(TimeWindow w, double fraction, TimeWindow limits, double min_span_s);

// Where a device works in a pipeline plan: its pipeline stage (for interleaved plans, its
// position in the pipeline), data-parallel replica and tensor-parallel rank.
struct DeviceRole {
    int stage = 0;
    int replica = 0;
    int tp_rank = 0;
};
// The role of every device of a pipeline plan that has tp > 1 or dp > 1, read from its device
// map (device_map[stage][replica * tp + k]); empty for placement plans and plain pipelines,
// whose rows stay in device order.
std::map<int, DeviceRole> deviceRoles(const Plan& plan);

struct GanttRow {
    int device = 0;   // global device id (a collapsed group's row: its first device)
    int node = 0;
    double y = 0;     // row centre in plot units; rows are one unit tall, top to bottom
    int device_count = 1;  // devices drawn on this row: all of the group's when it is collapsed
    int group = 0;    // the node, or with roles the pipeline stage: what separators and collapsing follow
    std::optional<DeviceRole> role;  // set when the rows are grouped by stage
};

// Without roles: rows ordered by node, then device id, grouped by node. With roles (a
// tp > 1 or dp > 1 plan): ordered by stage, replica, tensor-parallel rank and grouped by stage
// when the plan has several stages (devices without a role follow), by node when it has one
// (its replicas then fold node by node). A gap of `group_gap` rows between two groups.
struct GanttRowLayout {
    std::vector<GanttRow> rows;
    std::vector<double> group_separators;  // y of the boundary between consecutive groups
    // Grouped by stage: y of the boundaries between consecutive rows of one stage on different nodes.
    std::vector<double> node_boundaries;
    bool by_stage = false;  // groups are pipeline stages (else nodes)
    // Whether rows with these roles are grouped by stage: they span two stages or more.
    static bool groupsByStage(const std::map<int, DeviceRole>& roles);

    int rowOfDevice(int device) const;  // -1 if the device has no row; a collapsed group's row for its devices
    double top() const;                 // smallest y covered (first row's top edge)
    double bottom() const;              // largest y covered

    // Groups in `collapsed` get one row holding all their devices' blocks (16 or 32 devices stay
    // readable: expand only the group being looked at).
    static GanttRowLayout build(const std::vector<int>& devices, const std::function<int(int)>& node_of,
                                double group_gap = 0.6, const std::set<int>& collapsed = {},
                                const std::map<int, DeviceRole>& roles = {});

private:
    std::vector<std::pair<int, int>> device_rows_;  // (device, row), sorted by device
};

// "S0 r1 t0": a row's place in the plan; the replica only when dp > 1 shows in `roles`,
// the rank only when tp > 1 does.
std::string roleLabel(const DeviceRole& role, bool show_replica, bool show_rank);

// Compute runs in the upper band of a row; sends, receives and all-reduces (which overlap
// compute on their own streams) in a thinner band under it.
enum class GanttLane { Compute, Communication };
GanttLane laneOf(InstrKind kind);

struct GanttBlock {
    double start_s = 0;
    double end_s = 0;
    double y_top = 0;     // plot units, y grows downwards
    double y_bottom = 0;
    InstrKind kind = InstrKind::Forward;
    int mb = -1;
    int stage = -1;
    int row = 0;
    int event = 0;        // index into Trace::events
    bool shared_row = false;  // on a collapsed node's row, over other devices' blocks: no label
};

// One block per trace event whose device has a row, in event order.
std::vector<GanttBlock> placeBlocks(const Trace& trace, const GanttRowLayout& layout);

// "F3", "B3", "W3", "R3", "AR", "OPT": what a block shows when it is wide enough.
std::string blockLabel(const GanttBlock& block);

}  // namespace hippie::widgets
