#pragma once
// Execution orders for a fixed placement. The lowering runs each maximal run of a placement's
// order on one device as one compute: the run starts when all its inputs have arrived, and its
// tensors leave when it ends. A list scheduler's start-time order interleaves devices op by op,
// as a dataflow runtime (Baechi's TensorFlow) would run them, but runs that also join a unit
// waiting for another device make everything after it wait. These orders keep the list
// schedule's timing in runs: SGP's own order, and the order m-ETF and m-SCT hand to the
// lowering.
#include <algorithm>
#include <cstdint>
#include <queue>
#include <string>
#include <vector>

#include "planners/algorithms/placement/placement_common.h"

namespace hippie::placement {

// Times of a fixed placement in one pass over `sequence` (a topological order): a unit starts
// when its device is free and its inputs have arrived (over the actual links).
struct Timing {
    std::vector<double> ready;  // its producers' last finish
    std::vector<int> remote;    // 1: that producer is on another device
    std::vector<int> depth;     // longest path in edges from an input
    double makespan_s = 0;
};
Timing timing(const PlacementModel& m, const std::vector<int>& device, const std::vector<int>& sequence);

// Units by the time their inputs are ready, ties shallower first, then those on another device
// than their last producer (so that a branch does not wait for the home branch's run): fewer
// interleaved runs than runAwareOrder.
std::vector<int> readyOrder(const PlacementModel& m, const Timing& t);

// Units by the time their inputs are ready (ties: shallower first, then those on their
// producer's device), but a unit does not join the run on its device when it has an input
// from another device or the run feeds another device: a ready unit of another device (among
// the next few) goes between. A topological order.
std::vector<int> runAwareOrder(const PlacementModel& m, const std::vector<int>& device, const Timing& t);

// Units of `topo` (a topological order) by the time their inputs are ready, ties shallower
// first, then those whose latest producer is on another device, then as in `topo`. SGP
// orders its ops with it too.
inline std::vector<int> readyOrderOf(std::vector<int> topo, const std::vector<double>& ready, const std::vector<int>& depth,
                                     const std::vector<int>& remote) {
    std::stable_sort(topo.begin(), topo.end(), [&](int a, int b) {
        const auto x = static_cast<size_t>(a), y = static_cast<size_t>(b);
        if (ready[x] != ready[y]) return ready[x] < ready[y];
        if (depth[x] != depth[y]) return depth[x] < depth[y];
        return remote[x] > remote[y];
    });
    return topo;
}

// How far the run-aware order looks among the ready units for one of another device.
inline constexpr int kRunBreakLookahead = 8;

// The run-aware order of any graph with units(), preds(u) and succs(u) (arcs naming `unit`),
// given by unit when its inputs are ready, its depth, whether its latest producer is remote
// and a topological position (the last tie-break). SGP orders its ops with it too.
template <class Model>
std::vector<int> runAwareOrderOf(const Model& m, const std::vector<int>& device, const std::vector<double>& ready_at,
                                 const std::vector<int>& depth, const std::vector<int>& remote, const std::vector<int>& position) {
    const auto n = static_cast<size_t>(m.units());
    std::vector<int> waiting(n);
    auto later = [&](int a, int b) {  // priority queue: true when a goes after b
        const auto x = static_cast<size_t>(a), y = static_cast<size_t>(b);
        if (ready_at[x] != ready_at[y]) return ready_at[x] > ready_at[y];
        if (depth[x] != depth[y]) return depth[x] > depth[y];
        if (remote[x] != remote[y]) return remote[x] > remote[y];
        return position[x] > position[y];
    };
    std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
    for (size_t u = 0; u < n; ++u) {
        waiting[u] = static_cast<int>(m.preds(static_cast<int>(u)).size());
        if (waiting[u] == 0) ready.push(static_cast<int>(u));
    }
    auto remoteInput = [&](int u) {
        for (const auto& p : m.preds(u))
            if (device[static_cast<size_t>(p.unit)] != device[static_cast<size_t>(u)]) return true;
        return false;
    };
    auto remoteOutput = [&](int u) {
        for (const auto& c : m.succs(u))
            if (device[static_cast<size_t>(c.unit)] != device[static_cast<size_t>(u)]) return true;
        return false;
    };
    std::vector<int> order, held;
    order.reserve(n);
    int last_device = -1;
    bool run_feeds_others = false;
    while (!ready.empty()) {
        int u = ready.top();
        ready.pop();
        if (device[static_cast<size_t>(u)] == last_device && (run_feeds_others || remoteInput(u))) {
            held.clear();
            while (!ready.empty() && static_cast<int>(held.size()) < kRunBreakLookahead) {
                const int v = ready.top();
                ready.pop();
                if (device[static_cast<size_t>(v)] != last_device) {
                    held.push_back(u);
                    u = v;
                    break;
                }
                held.push_back(v);
            }
            for (int h : held) ready.push(h);
        }
        if (device[static_cast<size_t>(u)] != last_device) run_feeds_others = false;
        last_device = device[static_cast<size_t>(u)];
        run_feeds_others = run_feeds_others || remoteOutput(u);
        order.push_back(u);
        for (const auto& c : m.succs(u))
            if (--waiting[static_cast<size_t>(c.unit)] == 0) ready.push(c.unit);
    }
    return order;
}

// A list schedule's placement in the order, of its start-time order and the run-aware order
// of the same placement, with the shorter step estimate (step_estimate.h, which runs the
// order as the lowering and the simulator do) among those whose memory fits `capacity`; the
// start-time order when neither fits (the exact memory check decides then).
struct OrderChoice {
    Assignment assignment;
    double step_s = 0;        // its step estimate
    double listed_step_s = 0;  // the start-time order's
    bool run_aware = false;
};
OrderChoice chooseExecutionOrder(const PlacementModel& m, Assignment listed, const std::vector<int64_t>& capacity);
// "m-etf: step estimate 1.88 s in start-time order, 1.60 s in runs: runs taken" (the log).
std::string executionOrderLine(const std::string& planner, const OrderChoice& c);

}  // namespace hippie::placement
