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
    std::vector<int> device;      // by unit
    std::vector<int> cuts;        // positions of the topological order where a segment starts (after the first)
    std::vector<int> of_segment;  // device of each segment
    int segments = 1;             // cuts.size() + 1
    int by_devices = 1;           // the count the device count asks for, before refining for memory
    int used = 1;                 // devices homing at least one segment
};

// Cut positions for `parts` parts of the topological order positions [lo, hi): at equal shares
// of `prefix` (over positions), each moved within `window` positions to the fewest crossing
// bytes (ties: nearest the share), strictly increasing.
void cutAtShares(const std::vector<double>& prefix, const std::vector<int64_t>& crossing, int lo, int hi, int parts, int window,
                 std::vector<int>& cuts) {
    const auto lo_s = static_cast<size_t>(lo), hi_s = static_cast<size_t>(hi);
    int previous = lo;
    for (int k = 1; k < parts; ++k) {
        const double share = prefix[lo_s] + (prefix[hi_s] - prefix[lo_s]) * k / parts;
        const auto first = prefix.begin() + static_cast<std::ptrdiff_t>(lo_s), last = prefix.begin() + static_cast<std::ptrdiff_t>(hi_s) + 1;
        const int target = static_cast<int>(std::lower_bound(first, last, share) - prefix.begin());
        const int from = std::max(previous + 1, target - window), to = std::min(hi - (parts - k), target + window);
        if (from > to) continue;
        int best = std::clamp(target, from, to);
        for (int c = from; c <= to; ++c) {
            const auto cs = static_cast<size_t>(c), bs = static_cast<size_t>(best);
            if (crossing[cs] < crossing[bs] || (crossing[cs] == crossing[bs] && std::abs(c - target) < std::abs(best - target))) best = c;
        }
        cuts.push_back(best);
        previous = best;
    }
}

// Segments of the topological order, their number tied to the number of devices
// (segments_per_device of them per device), cut at equal shares of the units' comprehensive
// cost (their share of all computation and of their output's transfers, plus their share of
// all memory), each cut moved within its window to the fewest crossing bytes. Segments go to
// devices in order, each to the one where it would finish first (device free, inputs arrived
// over a typical link from other devices' segments, its computation there; ties: its
// predecessor's device, then larger devices first) among those with room in their home
// budget: at most `memory_fill` of the device, and no more than a quarter of the segment past an
// equal share of the model over as many devices as memory needs. A chain thus stays on one
// device and moves on only at a segment boundary (a cheap cut) when memory needs; segments
// that do not depend on each other spread. Refined where memory requires more: a segment that
// fits no device's room is cut where the room of its predecessor's device (else of the device
// with the most room) ends, moved back within its window to the fewest crossing bytes; the
// rest is the next segment.
Homes homeSegments(const PlacementModel& m, const std::vector<int64_t>& capacity, const SgpOptions& o) {
    const auto& topo = m.topoOrder();
    const int n = m.units();
    const auto un = static_cast<size_t>(n);
    const std::vector<double> out_s = outputCommSeconds(m);
    std::vector<double> memory(un + 1, 0.0), work(un + 1, 0.0), cost(un + 1, 0.0);
    std::vector<int> position(un);
    for (size_t i = 0; i < un; ++i) {
        const int u = topo[i];
        position[static_cast<size_t>(u)] = static_cast<int>(i);
        memory[i + 1] = memory[i] + static_cast<double>(m.residentBytes(u));
        work[i + 1] = work[i] + m.meanComputeSeconds(u) + out_s[static_cast<size_t>(u)];
    }
    const double total_memory = memory.back(), total_work = work.back();
    for (size_t i = 1; i <= un; ++i)
        cost[i] = (total_work > 0 ? work[i] / total_work : 0.0) + (total_memory > 0 ? memory[i] / total_memory : 0.0);
    const std::vector<int64_t> crossing = crossingBytes(m);
    const std::vector<int> by_capacity = devicesByCapacity(capacity);

    // Home limits: memory_fill of each device, and the equal share of the model over the
    // devices memory needs.
    const auto devices = static_cast<size_t>(m.devices());
    std::vector<double> limit(devices);
    int needed = 0;
    double held = 0, needed_capacity = 0;
    while (needed < m.devices() && held < total_memory) {
        const auto d = static_cast<size_t>(by_capacity[static_cast<size_t>(needed++)]);
        held += o.memory_fill * static_cast<double>(capacity[d]);
        needed_capacity += static_cast<double>(capacity[d]);
    }
    const double fair = needed_capacity > 0 ? total_memory / needed_capacity : 0.0;  // of each device's capacity
    for (size_t d = 0; d < devices; ++d)
        limit[d] = std::min(o.memory_fill, fair) * static_cast<double>(capacity[d]);

    Homes h;
    h.by_devices = std::max(1, std::min(n, o.segments_per_device * m.devices()));
    const int window = static_cast<int>(o.cut_window * n / h.by_devices);
    std::vector<int> coarse;
    cutAtShares(cost, crossing, 0, n, h.by_devices, window, coarse);
    coarse.push_back(n);
    h.by_devices = static_cast<int>(coarse.size());  // fewer where single units hold more than a share (cuts that coincide)

    std::vector<int> segment_at(un, -1);  // by position
    std::vector<double> free_at(devices, 0.0), finish, arrive(devices), home_bytes(devices, 0.0), seconds(devices);
    auto slack = [&](size_t d, double bytes) {  // room left with a quarter of `bytes` past the equal share
        return std::min(o.memory_fill * static_cast<double>(capacity[d]), limit[d] + 0.25 * bytes) - home_bytes[d];
    };
    int begin = 0;
    for (size_t k = 0; k < coarse.size();) {
        int end = coarse[k];
        const int previous = h.of_segment.empty() ? by_capacity.front() : h.of_segment.back();
        double bytes = memory[static_cast<size_t>(end)] - memory[static_cast<size_t>(begin)];
        std::vector<int> candidates{previous};
        candidates.insert(candidates.end(), by_capacity.begin(), by_capacity.end());
        bool fits_somewhere = false;
        for (int d : candidates) fits_somewhere = fits_somewhere || bytes <= slack(static_cast<size_t>(d), bytes);
        if (!fits_somewhere) {
            // Refine: the part that fits the previous device's room (else the roomiest's).
            int to = previous;
            if (limit[static_cast<size_t>(to)] - home_bytes[static_cast<size_t>(to)] <= 0)
                for (int d : by_capacity)
                    if (limit[static_cast<size_t>(d)] - home_bytes[static_cast<size_t>(d)] > limit[static_cast<size_t>(to)] - home_bytes[static_cast<size_t>(to)]) to = d;
            const double room = limit[static_cast<size_t>(to)] - home_bytes[static_cast<size_t>(to)];
            const auto from = memory.begin() + begin;
            const int fit = static_cast<int>(std::upper_bound(from, memory.begin() + end + 1, memory[static_cast<size_t>(begin)] + room) - memory.begin()) - 1;
            if (fit > begin && fit < end) {
                int cut = fit;
                for (int c = std::max(begin + 1, fit - window); c <= fit; ++c)
                    if (crossing[static_cast<size_t>(c)] < crossing[static_cast<size_t>(cut)]) cut = c;
                end = cut;
                bytes = memory[static_cast<size_t>(end)] - memory[static_cast<size_t>(begin)];
            }
        }
        // Earliest finish among the devices with room (ties: the previous segment's device,
        // then larger devices first); over every budget, the most room left (the balancing
        // pass's exact count decides then).
        std::fill(arrive.begin(), arrive.end(), 0.0);
        std::fill(seconds.begin(), seconds.end(), 0.0);
        for (int i = begin; i < end; ++i) {
            const int u = topo[static_cast<size_t>(i)];
            for (size_t d = 0; d < devices; ++d) seconds[d] += m.computeSeconds(u, static_cast<int>(d));
            for (const Arc& p : m.preds(u)) {
                const int ps = segment_at[static_cast<size_t>(position[static_cast<size_t>(p.unit)])];
                if (ps < 0) continue;  // in this segment
                const double here = finish[static_cast<size_t>(ps)], there = here + m.typicalCommSeconds(p.bytes);
                for (size_t d = 0; d < devices; ++d)
                    arrive[d] = std::max(arrive[d], static_cast<int>(d) == h.of_segment[static_cast<size_t>(ps)] ? here : there);
            }
        }
        int best = -1, roomiest = candidates.front();
        double best_score = std::numeric_limits<double>::infinity();
        for (int d : candidates) {
            const auto dd = static_cast<size_t>(d);
            if (slack(dd, bytes) > slack(static_cast<size_t>(roomiest), bytes)) roomiest = d;
            if (bytes > slack(dd, bytes)) continue;
            const double score = std::max(free_at[dd], arrive[dd]) + seconds[dd];
            if (score < best_score) {
                best_score = score;
                best = d;
            }
        }
        if (best < 0) best = roomiest;
        const auto bd = static_cast<size_t>(best);
        const int segment = static_cast<int>(h.of_segment.size());
        for (int i = begin; i < end; ++i) segment_at[static_cast<size_t>(i)] = segment;
        h.of_segment.push_back(best);
        home_bytes[bd] += bytes;
        finish.push_back(free_at[bd] = std::max(free_at[bd], arrive[bd]) + seconds[bd]);
        if (end < n) h.cuts.push_back(end);
        begin = end;
        if (end == coarse[k]) ++k;
    }
    h.segments = static_cast<int>(h.of_segment.size());
    h.device.assign(un, by_capacity.front());
    for (size_t i = 0; i < un; ++i)
        h.device[static_cast<size_t>(topo[i])] = h.of_segment[static_cast<size_t>(segment_at[i])];
    h.used = static_cast<int>(std::count_if(home_bytes.begin(), home_bytes.end(), [](double b) { return b > 0; }));
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

// Forward and backward computation of the busiest device.
double busiestSeconds(const PlacementModel& m, const std::vector<int>& device) {
    std::vector<double> busy(static_cast<size_t>(m.devices()), 0.0);
    for (int u = 0; u < m.units(); ++u) busy[static_cast<size_t>(device[static_cast<size_t>(u)])] += m.computeSeconds(u, device[static_cast<size_t>(u)]);
    return *std::max_element(busy.begin(), busy.end());
}

bool fitsAll(const PlacementModel& m, const std::vector<int>& device, const std::vector<int64_t>& capacity) {
    return fitsCapacity(deviceLoads(m, device), capacity);
}

}  // namespace

SgpPlanner::SgpPlanner(SgpOptions options)
    : PlacementPlanner("sgp",
                       "SGP: per-op compute/communication/memory costs; segments of the topological order, a few per device, "
                       "cut where little crosses and homed on devices by earliest finish under memory budgets; parallel "
                       "branches spread by one earliest-finish load-balancing pass; no search",
                       options.placement),
      options_(std::move(options)) {}

CoreOutcome SgpPlanner::place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                              std::vector<std::string>& log) const {
    context.progress(0.1, "cutting segments");
    const Homes homes = homeSegments(model, capacity, options_);
    std::string cuts, homed;
    for (int c : homes.cuts) cuts += (cuts.empty() ? "" : ", ") + std::to_string(c);
    for (int d : homes.of_segment) homed += (homed.empty() ? "" : " ") + std::to_string(d);
    log.push_back("sgp: " + std::to_string(homes.segments) + " segment(s) (" + std::to_string(homes.by_devices) + " for " +
                  std::to_string(model.devices()) + " devices, " + std::to_string(homes.segments - homes.by_devices) +
                  " more for memory), homed on " + std::to_string(homes.used) + " device(s) (" + homed + ")" +
                  (cuts.empty() ? "" : ", cut before positions " + cuts));
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
    // Each candidate placement in its run-aware order (its timing in one pass over the
    // balancing order), judged by the step estimate every placement planner shares
    // (step_estimate.h), which runs the order as the lowering and the simulator do.
    struct Candidate {
        Timing timing;
        Assignment assignment;
        StepEstimate estimate;
    };
    auto candidate = [&](const std::vector<int>& device) {
        Candidate c{timing(model, device, sequence), {device, {}}, {}};
        c.assignment.order = runAwareOrder(model, device, c.timing);
        c.estimate = estimateStep(model, device, c.assignment.order);
        return c;
    };
    Candidate chosen = candidate(b.device);
    // The home segments alone where they are not slower (on chains spreading only adds
    // transfers) and fit; identical to the balanced placement when no unit moved, and not
    // estimated when their busiest device's computation alone (a lower bound of any step
    // estimate: a device runs its forwards and backwards one after another) is longer than
    // the balanced placement's step estimate.
    if (b.moved_for_parallelism + b.moved_for_memory > 0) {
        const double home_bound = busiestSeconds(model, homes.device);
        if (home_bound > chosen.estimate.step_s) {
            log.push_back("sgp: step estimate " + std::to_string(chosen.estimate.step_s) + " s balanced; the home segments alone compute " +
                          std::to_string(home_bound) + " s on their busiest device");
        } else {
            Candidate home = candidate(homes.device);
            log.push_back("sgp: step estimate " + std::to_string(chosen.estimate.step_s) + " s balanced, " + std::to_string(home.estimate.step_s) +
                          " s home segments alone");
            if (home.estimate.step_s <= chosen.estimate.step_s && fitsAll(model, homes.device, capacity) && fitsCapacity(home.estimate.memory, capacity)) {
                chosen = std::move(home);
                log.push_back("sgp: home segments alone");
            }
        }
    }
    // Runs that interleave hold tensors from other runs of their own device too: when the
    // step estimate's memory (as the simulator counts it) overflows, the ready-time order,
    // the topological order, with fewer runs, and then the home segments alone are the
    // fallbacks.
    std::vector<std::string> notes;
    if (!fitsCapacity(chosen.estimate.memory, capacity)) {
        const std::vector<int>& device = chosen.assignment.device;
        const std::pair<const char*, Assignment> fallbacks[] = {{"the ready-time order", Assignment{device, readyOrder(model, chosen.timing)}},
                                                                {"the topological order", Assignment{device, model.topoOrder()}},
                                                                {"the home segments alone in the topological order", Assignment{homes.device, model.topoOrder()}}};
        for (const auto& [what, fallback] : fallbacks) {
            StepEstimate e = estimateStep(model, fallback.device, fallback.order);
            if (!fitsCapacity(e.memory, capacity)) continue;
            notes.push_back(std::string("the run-aware order needs more memory than the devices have: ") + what + " taken instead");
            log.push_back("sgp: " + notes.back());
            chosen.assignment = fallback;
            chosen.estimate = std::move(e);
            break;
        }
    }
    log.push_back(std::string(kSgpEstimatePrefix) + std::to_string(chosen.estimate.step_s) + " s");
    return {std::move(chosen.assignment), {}, {}, std::move(notes)};
}

}  // namespace hippie::placement
