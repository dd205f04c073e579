#include "planners/algorithms/placement/sgp.h"

#include <algorithm>
#include <cmath>

#include "planners/algorithms/placement/list_scheduler.h"

namespace hippie::placement {

namespace {

// How far a cut may move, as a share of the two segments around it.
constexpr double kAdjustWindowShare = 0.25;

// Costs by position of the topological order.
struct Profile {
    std::vector<int> unit;              // unit at each position
    std::vector<double> combined_s;     // computation plus communication cost
    std::vector<double> prefix_s;       // combined cost of positions [0, i)
    std::vector<int64_t> crossing;      // bytes on edges across a cut before position i
    std::vector<bool> chain_break;      // positions i - 1 and i are not a link of a plain chain
};

// Position i breaks the chain unless unit i - 1 feeds only unit i and unit i reads only it.
std::vector<bool> chainBreaks(const PlacementModel& m, const std::vector<int>& unit) {
    std::vector<bool> out(unit.size() + 1, true);
    for (size_t i = 1; i < unit.size(); ++i) {
        const auto& in = m.preds(unit[i]);
        out[i] = !(in.size() == 1 && in.front().unit == unit[i - 1] && m.succs(unit[i - 1]).size() == 1);
    }
    return out;
}

Profile profile(const PlacementModel& m) {
    Profile p;
    p.unit = m.topoOrder();
    const size_t n = p.unit.size();
    std::vector<int> position(n);
    for (size_t i = 0; i < n; ++i) position[static_cast<size_t>(p.unit[i])] = static_cast<int>(i);
    p.combined_s.resize(n);
    p.prefix_s.assign(n + 1, 0.0);
    std::vector<int64_t> diff(n + 2, 0);
    for (size_t i = 0; i < n; ++i) {
        const int u = p.unit[i];
        int64_t largest = 0;
        for (const Arc& a : m.succs(u)) {
            largest = std::max(largest, a.bytes);
            diff[i + 1] += a.bytes;
            diff[static_cast<size_t>(position[static_cast<size_t>(a.unit)]) + 1] -= a.bytes;
        }
        const double compute = m.meanComputeSeconds(u);
        const double comm = m.succs(u).empty() ? 0.0 : m.typicalCommSeconds(largest);
        p.combined_s[i] = compute + comm;
        p.prefix_s[i + 1] = p.prefix_s[i] + p.combined_s[i];
    }
    p.crossing.assign(n + 1, 0);
    for (size_t i = 1; i <= n; ++i) p.crossing[i] = p.crossing[i - 1] + diff[i];
    p.chain_break = chainBreaks(m, p.unit);
    return p;
}

// Segment k holds positions [cuts[k], cuts[k + 1]). A segment ends before it would exceed
// `target` combined cost (load balance), and at a chain break (where parallel branches start
// or join) once it holds `least`; no empty segments.
std::vector<int> balancedCuts(const Profile& p, double target, double least) {
    const size_t n = p.unit.size();
    std::vector<int> cuts{0};
    for (size_t c = 1; c < n; ++c) {
        const double held = p.prefix_s[c] - p.prefix_s[static_cast<size_t>(cuts.back())];
        if ((p.chain_break[c] && held >= least) || held + p.combined_s[c] > target) cuts.push_back(static_cast<int>(c));
    }
    cuts.push_back(static_cast<int>(n));
    return cuts;
}

// Moves each cut, left to right, within its window to where transfer time plus the combined
// cost shifted between its two segments is smallest.
void adjustCuts(const PlacementModel& m, const Profile& p, std::vector<int>& cuts) {
    for (size_t k = 1; k + 1 < cuts.size(); ++k) {
        const int left = cuts[k - 1], here = cuts[k], right = cuts[k + 1];
        const int window = std::max(1, static_cast<int>(kAdjustWindowShare * (right - left)));
        auto score = [&](int c) {
            return m.typicalCommSeconds(p.crossing[static_cast<size_t>(c)]) +
                   std::abs(p.prefix_s[static_cast<size_t>(c)] - p.prefix_s[static_cast<size_t>(here)]);
        };
        int best = here;
        bool best_breaks = p.chain_break[static_cast<size_t>(here)];
        for (int c = std::max(left + 1, here - window); c <= std::min(right - 1, here + window); ++c) {
            const bool breaks = p.chain_break[static_cast<size_t>(c)];
            if ((breaks && !best_breaks) || (breaks == best_breaks && score(c) < score(best))) {
                best = c;
                best_breaks = breaks;
            }
        }
        cuts[k] = best;
    }
}

// The problem's ops grouped by segment, so the segments can be scheduled as units.
Grouping segmentGrouping(const PlacementModel& m, const Profile& p, const std::vector<int>& cuts) {
    std::vector<int> label(m.problem().graph.ops.size());
    for (size_t k = 0; k + 1 < cuts.size(); ++k)
        for (int i = cuts[k]; i < cuts[k + 1]; ++i)
            for (int op : m.grouping().members[static_cast<size_t>(p.unit[static_cast<size_t>(i)])]) label[static_cast<size_t>(op)] = static_cast<int>(k);
    return groupByLabel(m.problem().graph, label);
}

// The device of each of the model's units: its segment's.
std::vector<int> unitDevices(const PlacementModel& m, const PlacementModel& segments, const std::vector<int>& segment_device) {
    std::vector<int> device(static_cast<size_t>(m.units()));
    for (int u = 0; u < m.units(); ++u) {
        const int s = segments.grouping().group_of[static_cast<size_t>(m.grouping().members[static_cast<size_t>(u)].front())];
        device[static_cast<size_t>(u)] = segment_device[static_cast<size_t>(s)];
    }
    return device;
}

}  // namespace

SgpPlanner::SgpPlanner(SgpOptions options)
    : PlacementPlanner("sgp",
                       "SGP: per-op compute/communication costs, equal-cost segments of the topological order with "
                       "communication-aware cuts, list-scheduled on devices; non-iterative",
                       options.placement),
      options_(std::move(options)) {}

CoreOutcome SgpPlanner::place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                              std::vector<std::string>& log) const {
    context.progress(0.1, "costing operators");
    const Profile p = profile(model);
    context.progress(0.3, "segmenting the topological order");
    const double total = p.prefix_s.back();
    auto cuts = balancedCuts(p, total / (options_.segments_per_device * model.devices()), total / options_.max_segments);
    adjustCuts(model, p, cuts);
    const PlacementModel segments(model.problem(), segmentGrouping(model, p, cuts));
    log.push_back("sgp: " + std::to_string(segments.units()) + " segments");
    context.progress(0.6, "scheduling segments");
    ScheduleOutcome s = listSchedule(segments, capacity, SchedulingRule{}, context);
    if (!s.schedule) return {std::nullopt, s.reason, {}, {}};
    log.push_back("sgp: segment schedule makespan " + std::to_string(s.schedule->makespan_s) + " s");
    // Ops run in the start-time order of their own schedule on the chosen devices, so a
    // device does not wait for a whole segment's inputs before starting it.
    const std::vector<int> device = unitDevices(model, segments, s.schedule->assignment.device);
    ScheduleOutcome ops = listSchedule(model, capacity, SchedulingRule{}, context, device);
    log.push_back("sgp: estimated makespan " + std::to_string(ops.schedule->makespan_s) + " s");
    return {std::move(ops.schedule->assignment), {}, {}, {}};
}

}  // namespace hippie::placement
