#include "planners/algorithms/placement/sgp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "planners/algorithms/placement/run_order.h"
#include "planners/algorithms/placement/step_estimate.h"

namespace hippie::placement {

namespace {

// Per unit: the transfer time of its largest output (forward and gradient, typical link),
// the cost of cutting right after it.
std::vector<double> outputCommSeconds(const PlacementModel& m) {
    std::vector<double> out(static_cast<size_t>(m.units()), 0.0);
    for (int u = 0; u < m.units(); ++u) {
        int64_t largest = 0;
        for (const Arc& a : m.succs(u)) largest = std::max(largest, a.bytes);
        if (!m.succs(u).empty()) out[static_cast<size_t>(u)] = m.typicalCommSeconds(largest);
    }
    return out;
}

// Bytes crossing a cut before each position of the topological order: every producer's
// largest output, from its position to its last consumer's.
std::vector<int64_t> crossingBytes(const PlacementModel& m) {
    const auto& topo = m.topoOrder();
    const size_t n = topo.size();
    std::vector<int> position(n);
    for (size_t i = 0; i < n; ++i) position[static_cast<size_t>(topo[i])] = static_cast<int>(i);
    std::vector<int64_t> diff(n + 2, 0);
    for (size_t i = 0; i < n; ++i) {
        int64_t largest = 0;
        int last = static_cast<int>(i);
        for (const Arc& a : m.succs(topo[i])) {
            largest = std::max(largest, a.bytes);
            last = std::max(last, position[static_cast<size_t>(a.unit)]);
        }
        diff[i + 1] += largest;
        diff[static_cast<size_t>(last) + 1] -= largest;
    }
    std::vector<int64_t> crossing(n + 1, 0);
    for (size_t i = 1; i <= n; ++i) crossing[i] = crossing[i - 1] + diff[i];
    return crossing;
}

// Devices by decreasing capacity (ties by index): homes of segments 0, 1, ...
std::vector<int> devicesByCapacity(const std::vector<int64_t>& capacity) {
    std::vector<int> d(capacity.size());
    std::iota(d.begin(), d.end(), 0);
    std::stable_sort(d.begin(), d.end(), [&](int a, int b) { return capacity[static_cast<size_t>(a)] > capacity[static_cast<size_t>(b)]; });
    return d;
}

struct Homes {
    std::vector<int> device;  // by unit
    std::vector<int> cuts;    // positions of the topological order where a segment starts (after the first)
    int segments = 1;
};

// Home segments: as many as memory needs, cut at equal shares of the memory prefix, each cut
// moved within its window to the fewest crossing bytes.
Homes homeSegments(const PlacementModel& m, const std::vector<int64_t>& capacity, const SgpOptions& o) {
    const auto& topo = m.topoOrder();
    const int n = m.units();
    std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
    for (int i = 0; i < n; ++i)
        prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + static_cast<double>(m.residentBytes(topo[static_cast<size_t>(i)]));
    const double total = prefix.back();
    const std::vector<int> by_capacity = devicesByCapacity(capacity);
    double held = 0;
    Homes h;
    h.segments = 0;
    while (h.segments < m.devices() && held < total) held += o.memory_fill * static_cast<double>(capacity[static_cast<size_t>(by_capacity[static_cast<size_t>(h.segments++)])]);
    h.segments = std::max(1, std::min(h.segments, n));
    const std::vector<int64_t> crossing = crossingBytes(m);
    const int window = static_cast<int>(o.cut_window * n / h.segments);
    int previous = 0;
    for (int k = 1; k < h.segments; ++k) {
        const double share = total * k / h.segments;
        const int target = static_cast<int>(std::lower_bound(prefix.begin(), prefix.end(), share) - prefix.begin());
        const int lo = std::max(previous + 1, target - window), hi = std::min(n - (h.segments - k), target + window);
        int best = std::clamp(target, lo, std::max(lo, hi));
        for (int c = lo; c <= hi; ++c) {
            const auto cs = static_cast<size_t>(c), bs = static_cast<size_t>(best);
            if (crossing[cs] < crossing[bs] || (crossing[cs] == crossing[bs] && std::abs(c - target) < std::abs(best - target))) best = c;
        }
        h.cuts.push_back(best);
        previous = best;
    }
    h.device.assign(static_cast<size_t>(n), by_capacity.front());
    size_t k = 0;
    for (int i = 0; i < n; ++i) {
        while (k < h.cuts.size() && h.cuts[k] <= i) ++k;
        h.device[static_cast<size_t>(topo[static_cast<size_t>(i)])] = by_capacity[k];
    }
    return h;
}

// Units by depth (longest path in edges from an input), each level in topological order:
// the units of one level never depend on each other.
std::vector<std::vector<int>> depthLevels(const PlacementModel& m) {
    std::vector<int> depth(static_cast<size_t>(m.units()), 0);
    int deepest = 0;
    for (int u : m.topoOrder()) {
        deepest = std::max(deepest, depth[static_cast<size_t>(u)]);
        for (const Arc& a : m.succs(u)) depth[static_cast<size_t>(a.unit)] = std::max(depth[static_cast<size_t>(a.unit)], depth[static_cast<size_t>(u)] + 1);
    }
    std::vector<std::vector<int>> levels(static_cast<size_t>(deepest) + 1);
    for (int u : m.topoOrder()) levels[static_cast<size_t>(depth[static_cast<size_t>(u)])].push_back(u);
    return levels;
}

// The order the balancing pass takes units in, as groups placed largest computation first.
// Wide graphs (on average at least one unit per device in each depth level): the depth
// levels, each balanced as a whole. Narrow ones: one unit at a time by earliest possible
// start (longest computation path from an input), which follows the critical path and the
// branches beside it in time.
std::vector<std::vector<int>> passOrder(const PlacementModel& m, bool& wide) {
    std::vector<std::vector<int>> levels = depthLevels(m);
    wide = static_cast<double>(m.units()) >= static_cast<double>(levels.size()) * m.devices();
    if (wide) return levels;
    std::vector<double> top(static_cast<size_t>(m.units()), 0.0);
    for (int u : m.topoOrder())
        for (const Arc& a : m.succs(u))
            top[static_cast<size_t>(a.unit)] = std::max(top[static_cast<size_t>(a.unit)], top[static_cast<size_t>(u)] + m.meanComputeSeconds(u));
    levels.clear();
    for (int u : orderBy(m, top)) levels.push_back({u});
    return levels;
}

struct Balanced {
    std::vector<int> device;  // by unit; empty when a unit fits nowhere
    std::string reason;
    int moved_for_parallelism = 0, moved_for_memory = 0;
};

// One pass over the groups of passOrder, each largest computation first: each unit goes to
// the device where it would finish first (device free, inputs arrived over a typical link,
// its computation there), plus, off its home, its output's transfer back. A branch thus
// leaves its home only where the parallel work pays for the transfers, and then stays (its
// next unit's input is there). A device without room for it (DeviceMemory, as the other
// placement planners count) gives way to the next best.
Balanced balance(const PlacementModel& m, const std::vector<int64_t>& capacity, const std::vector<std::vector<int>>& groups,
                 const Homes& homes, PlanContext& context) {
    const std::vector<double> out_s = outputCommSeconds(m);
    const auto devices = static_cast<size_t>(m.devices());
    DeviceMemory mem(m);
    Balanced b;
    b.device.assign(static_cast<size_t>(m.units()), -1);
    std::vector<double> free_at(devices, 0.0), finish(static_cast<size_t>(m.units()), 0.0), arrive(devices), score(devices);
    std::vector<int> group;
    size_t placed = 0;
    for (const std::vector<int>& g : groups) {
        group = g;
        if (group.size() > 1)
            std::stable_sort(group.begin(), group.end(), [&](int x, int y) { return m.meanComputeSeconds(x) > m.meanComputeSeconds(y); });
        for (int u : group) {
            const auto uu = static_cast<size_t>(u);
            const int home = homes.device[uu];
            std::fill(arrive.begin(), arrive.end(), 0.0);
            for (const Arc& p : m.preds(u)) {
                const auto pu = static_cast<size_t>(p.unit);
                const double here = finish[pu], there = here + m.typicalCommSeconds(p.bytes);
                for (size_t d = 0; d < devices; ++d) arrive[d] = std::max(arrive[d], static_cast<int>(d) == b.device[pu] ? here : there);
            }
            for (size_t d = 0; d < devices; ++d)
                score[d] = std::max(free_at[d], arrive[d]) + m.computeSeconds(u, static_cast<int>(d)) + (static_cast<int>(d) == home ? 0.0 : out_s[uu]);
            // Best score first (home on ties), skipping devices without room.
            int best = -1;
            bool first = true;
            for (size_t tried = 0; tried < devices && best < 0; ++tried) {
                int pick = home;
                for (size_t d = 0; d < devices; ++d)
                    if (score[d] < score[static_cast<size_t>(pick)]) pick = static_cast<int>(d);
                if (mem.fits(u, pick, capacity)) best = pick;
                else first = false;
                score[static_cast<size_t>(pick)] = std::numeric_limits<double>::infinity();
            }
            if (best < 0) {
                b.reason = "after placing " + std::to_string(placed) + " of " + std::to_string(m.units()) + " ops, '" + m.unitName(u) +
                           "' (" + gib(m.residentBytes(u)) + ") fits on no device";
                b.device.clear();
                return b;
            }
            if (best != home) ++(first ? b.moved_for_parallelism : b.moved_for_memory);
            mem.place(u, best);
            b.device[uu] = best;
            const auto bd = static_cast<size_t>(best);
            finish[uu] = free_at[bd] = std::max(free_at[bd], arrive[bd]) + m.computeSeconds(u, best);
            ++placed;
        }
        if (context.cancelled()) {
            b.reason = "cancelled after placing " + std::to_string(placed) + " of " + std::to_string(m.units()) + " ops";
            b.device.clear();
            return b;
        }
    }
    return b;
}

bool fitsAll(const PlacementModel& m, const std::vector<int>& device, const std::vector<int64_t>& capacity) {
    return fitsCapacity(deviceLoads(m, device), capacity);
}

}  // namespace

SgpPlanner::SgpPlanner(SgpOptions options)
    : PlacementPlanner("sgp",
                       "SGP: per-op compute/communication/memory costs; memory-sized home segments of the topological order "
                       "cut where little crosses; parallel branches spread by one earliest-finish load-balancing pass; no search",
                       options.placement),
      options_(std::move(options)) {}

CoreOutcome SgpPlanner::place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                              std::vector<std::string>& log) const {
    context.progress(0.1, "cutting home segments");
    const Homes homes = homeSegments(model, capacity, options_);
    std::string cuts;
    for (int c : homes.cuts) cuts += (cuts.empty() ? "" : ", ") + std::to_string(c);
    log.push_back("sgp: " + std::to_string(homes.segments) + " home segment(s)" + (cuts.empty() ? "" : ", cut before positions " + cuts));
    context.progress(0.3, "balancing parallel branches");
    bool wide = false;
    const auto groups = passOrder(model, wide);
    const Balanced b = balance(model, capacity, groups, homes, context);
    if (b.device.empty()) return {std::nullopt, b.reason, {}, {}};
    log.push_back(std::string("sgp: ") + (wide ? "wide graph, balanced by depth level (" + std::to_string(groups.size()) + " levels)" : "narrow graph, units by earliest start") +
                  "; " + std::to_string(b.moved_for_parallelism) + " units off their home for parallel branches, " + std::to_string(b.moved_for_memory) +
                  " for memory");
    context.progress(0.8, "ordering");
    std::vector<int> sequence;
    sequence.reserve(static_cast<size_t>(model.units()));
    for (const auto& g : groups) sequence.insert(sequence.end(), g.begin(), g.end());
    // The balanced placement, or the home segments alone where they are not slower by the
    // same one-pass timing (on chains spreading only adds transfers) and fit.
    Timing t = timing(model, b.device, sequence);
    const std::vector<int>* device = &b.device;
    const Timing home_t = timing(model, homes.device, sequence);
    log.push_back("sgp: one-pass makespan " + std::to_string(t.makespan_s) + " s balanced, " + std::to_string(home_t.makespan_s) + " s home segments alone");
    if (home_t.makespan_s <= t.makespan_s && fitsAll(model, homes.device, capacity)) {
        device = &homes.device;
        t = home_t;
        log.push_back("sgp: home segments alone");
    }
    // Runs that interleave hold tensors from other runs of their own device too: when the
    // step estimate's memory (as the simulator counts it) overflows, the topological order,
    // with fewer runs, and then the home segments alone, are the fallbacks.
    std::vector<std::string> notes;
    Assignment a{*device, runAwareOrder(model, *device, t)};
    auto fits = [&](const Assignment& x) { return fitsCapacity(estimateStep(model, x.device, x.order).memory, capacity); };
    if (!fits(a)) {
        const std::pair<const char*, Assignment> fallbacks[] = {{"the ready-time order", Assignment{*device, readyOrder(model, t)}},
                                                                {"the topological order", Assignment{*device, model.topoOrder()}},
                                                                {"the home segments alone in the topological order", Assignment{homes.device, model.topoOrder()}}};
        for (const auto& [what, fallback] : fallbacks) {
            if (!fits(fallback)) continue;
            notes.push_back(std::string("the run-aware order needs more memory than the devices have: ") + what + " taken instead");
            log.push_back("sgp: " + notes.back());
            a = std::move(fallback);
            break;
        }
    }
    return {std::move(a), {}, {}, std::move(notes)};
}

}  // namespace hippie::placement
