#include "widgets/gantt/timeline.h"

#include <algorithm>

namespace hippie::widgets {

namespace {
// Fractions of a row's unit height: compute band, gap, communication band.
constexpr double kComputeTop = -0.42;
constexpr double kComputeBottom = 0.14;
constexpr double kCommTop = 0.20;
constexpr double kCommBottom = 0.42;
}  // namespace

double TimeAxisMapping::pixelsPerSecond() const {
    const double span = t1_s - t0_s;
    return span > 0 ? (px1 - px0) / span : 0.0;
}

double TimeAxisMapping::toPixel(double t_s) const { return px0 + (t_s - t0_s) * pixelsPerSecond(); }

double TimeAxisMapping::toTime(double px) const {
    const double pps = pixelsPerSecond();
    return pps != 0 ? t0_s + (px - px0) / pps : t0_s;
}

TimeWindow clampWindow(TimeWindow w, TimeWindow limits, double min_span_s) {
    const double full = limits.span();
    double span = std::clamp(w.span(), std::min(min_span_s, full), full);
    const double centre = (w.lower_s + w.upper_s) / 2;
    TimeWindow out{centre - span / 2, centre + span / 2};
    if (out.lower_s < limits.lower_s) out = {limits.lower_s, limits.lower_s + span};
    if (out.upper_s > limits.upper_s) out = {limits.upper_s - span, limits.upper_s};
    return out;
}

TimeWindow zoomWindow(TimeWindow w, double anchor_s, double factor, TimeWindow limits, double min_span_s) {
    const double full = limits.span();
    const double span = std::clamp(w.span() * factor, std::min(min_span_s, full), full);
    const double ratio = w.span() > 0 ? (anchor_s - w.lower_s) / w.span() : 0.5;  // where the anchor sits on screen
    const double lower = anchor_s - ratio * span;
    return clampWindow({lower, lower + span}, limits, min_span_s);
}

TimeWindow panWindow(TimeWindow w, double fraction, TimeWindow limits, double min_span_s) {
    const double shift = w.span() * fraction;
    return clampWindow({w.lower_s + shift, w.upper_s + shift}, limits, min_span_s);
}

int GanttRowLayout::rowOfDevice(int device) const {
    const auto it = std::lower_bound(device_rows_.begin(), device_rows_.end(), std::make_pair(device, -1));
    return it != device_rows_.end() && it->first == device ? it->second : -1;
}

double GanttRowLayout::top() const { return rows.empty() ? 0.0 : rows.front().y - 0.5; }
double GanttRowLayout::bottom() const { return rows.empty() ? 1.0 : rows.back().y + 0.5; }

std::map<int, DeviceRole> deviceRoles(const Plan& plan) {
    std::map<int, DeviceRole> roles;
    if (plan.isPlacement() || (plan.tp <= 1 && plan.dp <= 1)) return roles;
    const auto map = plan.device_map.empty() ? defaultDeviceMap(plan) : plan.device_map;
    for (size_t s = 0; s < map.size(); ++s)
        for (size_t i = 0; i < map[s].size(); ++i) {
            const int tp = std::max(plan.tpOf(static_cast<int>(s)), 1);
            const int device = map[s][i];
            if (device < 0 || roles.contains(device)) continue;  // interleaved chunks repeat a device
            roles[device] = {static_cast<int>(s), static_cast<int>(i) / tp, static_cast<int>(i) % tp};
        }
    return roles;
}

bool GanttRowLayout::groupsByStage(const std::map<int, DeviceRole>& roles) {
    std::set<int> stages;
    for (const auto& [device, role] : roles) stages.insert(role.stage);
    return stages.size() > 1;
}

std::string roleLabel(const DeviceRole& role, bool show_replica, bool show_rank) {
    std::string s = "S" + std::to_string(role.stage);
    if (show_replica) s += " r" + std::to_string(role.replica);
    if (show_rank) s += " t" + std::to_string(role.tp_rank);
    return s;
}

GanttRowLayout GanttRowLayout::build(const std::vector<int>& devices, const std::function<int(int)>& node_of,
                                     double group_gap, const std::set<int>& collapsed,
                                     const std::map<int, DeviceRole>& roles) {
    GanttRowLayout layout;
    layout.by_stage = groupsByStage(roles);
    std::vector<GanttRow> sorted;
    sorted.reserve(devices.size());
    // Devices the plan does not use (none in a simulated trace) go in a group after the last stage.
    int after_last_stage = 0;
    for (const auto& [device, role] : roles) after_last_stage = std::max(after_last_stage, role.stage + 1);
    for (int d : devices) {
        GanttRow row;
        row.device = d;
        row.node = node_of ? node_of(d) : 0;
        if (const auto it = roles.find(d); it != roles.end()) row.role = it->second;
        if (layout.by_stage)
            row.group = row.role ? row.role->stage : after_last_stage;
        else
            row.group = row.node;
        sorted.push_back(row);
    }
    std::stable_sort(sorted.begin(), sorted.end(), [](const GanttRow& a, const GanttRow& b) {
        if (a.group != b.group) return a.group < b.group;
        if (a.role && b.role && a.role->replica != b.role->replica) return a.role->replica < b.role->replica;
        if (a.role && b.role && a.role->tp_rank != b.role->tp_rank) return a.role->tp_rank < b.role->tp_rank;
        return a.node != b.node ? a.node < b.node : a.device < b.device;
    });
    double y = 0;
    for (size_t i = 0; i < sorted.size(); ++i) {
        const bool same_group = i > 0 && sorted[i].group == sorted[i - 1].group;
        if (same_group && collapsed.contains(sorted[i].group)) {
            // Drawn on the group's one row.
            layout.rows.back().device_count += 1;
            layout.device_rows_.emplace_back(sorted[i].device, static_cast<int>(layout.rows.size()) - 1);
            continue;
        }
        if (i > 0 && !same_group) {
            layout.group_separators.push_back(y - 0.5 + group_gap / 2);
            y += group_gap;
        } else if (same_group && layout.by_stage && sorted[i].node != sorted[i - 1].node) {
            layout.node_boundaries.push_back(y - 0.5);
        }
        sorted[i].y = y;
        y += 1.0;
        layout.rows.push_back(sorted[i]);
        layout.device_rows_.emplace_back(sorted[i].device, static_cast<int>(layout.rows.size()) - 1);
    }
    std::sort(layout.device_rows_.begin(), layout.device_rows_.end());
    return layout;
}

GanttLane laneOf(InstrKind kind) { return isCompute(kind) ? GanttLane::Compute : GanttLane::Communication; }

std::vector<GanttBlock> placeBlocks(const Trace& trace, const GanttRowLayout& layout) {
    // Device id -> row, built once: traces have tens of thousands of events.
    int max_device = -1;
    for (int d : trace.devices) max_device = std::max(max_device, d);
    std::vector<int> row_of(static_cast<size_t>(max_device + 1), -1);
    for (int d : trace.devices)
        if (d >= 0) row_of[static_cast<size_t>(d)] = layout.rowOfDevice(d);

    std::vector<GanttBlock> blocks;
    blocks.reserve(trace.events.size());
    for (size_t i = 0; i < trace.events.size(); ++i) {
        const TraceEvent& e = trace.events[i];
        if (e.device < 0 || e.device > max_device) continue;
        const int row = row_of[static_cast<size_t>(e.device)];
        if (row < 0) continue;
        const double y = layout.rows[static_cast<size_t>(row)].y;
        const bool compute = laneOf(e.kind) == GanttLane::Compute;
        GanttBlock b;
        b.start_s = e.start_s;
        b.end_s = std::max(e.end_s, e.start_s);
        b.y_top = y + (compute ? kComputeTop : kCommTop);
        b.y_bottom = y + (compute ? kComputeBottom : kCommBottom);
        b.kind = e.kind;
        b.mb = e.mb;
        b.stage = e.stage;
        b.row = row;
        b.event = static_cast<int>(i);
        b.shared_row = layout.rows[static_cast<size_t>(row)].device_count > 1;
        blocks.push_back(b);
    }
    return blocks;
}

std::string blockLabel(const GanttBlock& block) {
    const std::string mb = block.mb >= 0 ? std::to_string(block.mb) : std::string();
    switch (block.kind) {
    case InstrKind::Forward: return "F" + mb;
    case InstrKind::Backward: return "B" + mb;
    case InstrKind::BackwardInput: return "B" + mb;
    case InstrKind::BackwardWeight: return "W" + mb;
    case InstrKind::Recompute: return "R" + mb;
    case InstrKind::SendActivation:
    case InstrKind::SendGrad: return "S" + mb;
    case InstrKind::RecvActivation:
    case InstrKind::RecvGrad: return "R" + mb;
    case InstrKind::AllReduce: return "AR";
    case InstrKind::ReduceScatter: return "RS";
    case InstrKind::AllGather: return "AG";
    case InstrKind::TensorParallel: return "TP" + mb;
    case InstrKind::ZeroGather: return "AG" + mb;
    case InstrKind::OptimizerStep: return "OPT";
    }
    return {};
}

}  // namespace hippie::widgets
