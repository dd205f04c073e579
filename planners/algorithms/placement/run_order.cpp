#include "planners/algorithms/placement/run_order.h"

#include <algorithm>
#include <iomanip>
#include <queue>
#include <sstream>

#include "planners/algorithms/placement/step_estimate.h"

namespace hippie::placement {

namespace {
}  // namespace

Timing timing(const PlacementModel& m, const std::vector<int>& device, const std::vector<int>& sequence) {
    const auto n = static_cast<size_t>(m.units());
    Timing t{std::vector<double>(n, 0.0), std::vector<int>(n, 0), std::vector<int>(n, 0), 0.0};
    std::vector<double> finish(n, 0.0), free_at(static_cast<size_t>(m.devices()), 0.0);
    for (int u : sequence) {
        const auto uu = static_cast<size_t>(u);
        const int d = device[uu];
        double arrived = 0;
        for (const Arc& p : m.preds(u)) {
            const auto pu = static_cast<size_t>(p.unit);
            if (finish[pu] >= t.ready[uu]) {
                t.ready[uu] = finish[pu];
                t.remote[uu] = device[pu] != d;
            }
            t.depth[uu] = std::max(t.depth[uu], t.depth[pu] + 1);
            arrived = std::max(arrived, finish[pu] + m.commSeconds(p.bytes, device[pu], d));
        }
        finish[uu] = free_at[static_cast<size_t>(d)] = std::max(free_at[static_cast<size_t>(d)], arrived) + m.computeSeconds(u, d);
        t.makespan_s = std::max(t.makespan_s, finish[uu]);
    }
    return t;
}

std::vector<int> readyOrder(const PlacementModel& m, const Timing& t) { return readyOrderOf(m.topoOrder(), t.ready, t.depth, t.remote); }

std::vector<int> runAwareOrder(const PlacementModel& m, const std::vector<int>& device, const Timing& t) {
    std::vector<int> position(static_cast<size_t>(m.units()));
    for (size_t i = 0; i < position.size(); ++i) position[static_cast<size_t>(m.topoOrder()[i])] = static_cast<int>(i);
    return runAwareOrderOf(m, device, t.ready, t.depth, t.remote, position);
}

OrderChoice chooseExecutionOrder(const PlacementModel& m, Assignment listed, const std::vector<int64_t>& capacity) {
    if (listed.order.empty()) listed.order = m.topoOrder();
    const StepEstimate as_listed = estimateStep(m, listed.device, listed.order);
    OrderChoice c{listed, as_listed.step_s, as_listed.step_s, false};
    Assignment runs{listed.device, runAwareOrder(m, listed.device, timing(m, listed.device, listed.order))};
    const StepEstimate in_runs = estimateStep(m, runs.device, runs.order);
    const bool listed_fits = fitsCapacity(as_listed.memory, capacity);
    if (fitsCapacity(in_runs.memory, capacity) && (!listed_fits || in_runs.step_s < as_listed.step_s)) {
        c.assignment = std::move(runs);
        c.step_s = in_runs.step_s;
        c.run_aware = true;
    }
    return c;
}

std::string executionOrderLine(const std::string& planner, const OrderChoice& c) {
    std::ostringstream s;
    s << planner << ": step estimate " << std::setprecision(6) << c.listed_step_s << " s in start-time order";
    if (c.run_aware) s << ", " << c.step_s << " s in runs of the same placement: runs taken";
    else s << ": kept (the run-aware order is not faster or does not fit)";
    return s.str();
}

}  // namespace hippie::placement
