#include "planners/cost/calibration.h"

#include <array>
#include <cmath>
#include <map>
#include <tuple>

#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/sim/simulator.h"

namespace hippie {

namespace {

// What identifies one instruction's event across traces of the same program.
using EventKey = std::tuple<int, int, int, int, int, int>;  // device, kind, stage, mb, peer, occurrence

std::vector<EventKey> keysOf(const Trace& t) {
    std::map<std::tuple<int, int, int, int, int>, int> seen;
    std::vector<EventKey> keys;
    keys.reserve(t.events.size());
    for (const TraceEvent& e : t.events) {
        const auto base = std::make_tuple(e.device, static_cast<int>(e.kind), e.stage, e.mb, e.peer);
        const int n = seen[base]++;
        keys.emplace_back(e.device, static_cast<int>(e.kind), e.stage, e.mb, e.peer, n);
    }
    return keys;
}

std::map<EventKey, double> durations(const Trace& t) {
    std::map<EventKey, double> out;
    const std::vector<EventKey> keys = keysOf(t);
    for (size_t i = 0; i < keys.size(); ++i) out[keys[i]] = t.events[i].end_s - t.events[i].start_s;
    return out;
}

Trace simulateOn(const Program& program, const Plan& plan, const Graph& graph, const Cluster& cluster) {
    const CostModel cost(graph, cluster);
    return simulate(program, plan, cost);
}

bool isCommunication(InstrKind k) {
    return k == InstrKind::SendActivation || k == InstrKind::SendGrad || k == InstrKind::AllReduce;
}

constexpr double kHalf = 0.5;

}  // namespace

double CalibrationResult::errorBeforePercent() const {
    return predicted_step_before_s > 0 ? (measured_step_s - predicted_step_before_s) / predicted_step_before_s * 100.0 : 0.0;
}

double CalibrationResult::errorAfterPercent() const {
    return predicted_step_after_s > 0 ? (measured_step_s - predicted_step_after_s) / predicted_step_after_s * 100.0 : 0.0;
}

CalibrationResult calibrateCluster(const Plan& plan, const Graph& graph, const Cluster& cluster, const Trace& measured) {
    if (plan.deviceCount() > cluster.deviceCount())
        throw Error("calibration: the plan needs " + std::to_string(plan.deviceCount()) + " devices but cluster '" + cluster.name +
                    "' has " + std::to_string(cluster.deviceCount()));
    if (measured.metrics.iteration_time_s <= 0)
        throw Error("calibration: the measured trace has no iteration time (metrics.iteration_time_s)");
    const Program program = lower(plan, graph);

    Cluster slow_compute = cluster, slow_intra = cluster, slow_inter = cluster;
    for (Node& n : slow_compute.nodes) n.device.efficiency *= kHalf;
    for (Node& n : slow_intra.nodes) n.intra.bandwidth_bytes_per_s *= kHalf;
    slow_inter.inter.bandwidth_bytes_per_s *= kHalf;

    const Trace base = simulateOn(program, plan, graph, cluster);
    const std::map<EventKey, double> t0 = durations(base);
    const std::map<EventKey, double> t_compute = durations(simulateOn(program, plan, graph, slow_compute));
    const std::map<EventKey, double> t_intra = durations(simulateOn(program, plan, graph, slow_intra));
    const std::map<EventKey, double> t_inter = durations(simulateOn(program, plan, graph, slow_inter));

    CalibrationResult r;
    r.measured_step_s = measured.metrics.iteration_time_s;
    r.predicted_step_before_s = base.metrics.iteration_time_s;

    // Sums of the least-squares problems.
    const size_t nodes = cluster.nodes.size();
    std::vector<double> sum_ff(nodes, 0), sum_fm(nodes, 0);
    std::array<std::array<double, 2>, 2> ata{};  // classes: 0 intra, 1 inter
    std::array<double, 2> atb{};
    std::array<bool, 2> class_seen{};

    const std::vector<EventKey> keys = keysOf(measured);
    for (size_t i = 0; i < keys.size(); ++i) {
        const TraceEvent& e = measured.events[i];
        if (isRecv(e.kind)) continue;
        const auto it = t0.find(keys[i]);
        if (it == t0.end()) {
            ++r.unmatched_events;
            continue;
        }
        const double m = e.end_s - e.start_s;
        const double t = it->second;
        if (isCompute(e.kind)) {
            const double flops_part = t_compute.at(keys[i]) - t;
            if (flops_part <= 0) continue;  // fully profiled: says nothing about efficiency
            const double fixed = t - flops_part;
            const size_t node = static_cast<size_t>(cluster.nodeOf(e.device));
            sum_ff[node] += flops_part * flops_part;
            sum_fm[node] += flops_part * (m - fixed);
            ++r.compute_events;
        } else if (isCommunication(e.kind)) {
            const std::array<double, 2> b = {t_intra.at(keys[i]) - t, t_inter.at(keys[i]) - t};
            if (b[0] <= 0 && b[1] <= 0) continue;  // latency only
            const double latency = t - b[0] - b[1];
            for (size_t c = 0; c < 2; ++c) {
                if (b[c] > 0) class_seen[c] = true;
                for (size_t d = 0; d < 2; ++d) ata[c][d] += b[c] * b[d];
                atb[c] += b[c] * (m - latency);
            }
            ++r.communication_events;
        }
    }
    if (r.compute_events == 0 && r.communication_events == 0)
        throw Error("calibration: no measured event matches the plan's program (" + std::to_string(measured.events.size()) +
                    " events; was the trace measured for this plan?)");

    Cluster out = cluster;
    r.compute_factor.assign(nodes, std::nullopt);
    for (size_t k = 0; k < nodes; ++k) {
        if (sum_ff[k] <= 0 || sum_fm[k] <= 0) continue;
        const double s = sum_fm[k] / sum_ff[k];  // e / e'
        const double factor = 1.0 / s;
        r.compute_factor[k] = factor;
        DeviceSpec& d = out.nodes[k].device;
        const double efficiency = d.efficiency * factor;
        if (efficiency <= 1.0) {
            d.efficiency = efficiency;
        } else {
            d.peak_flops_fp32 *= efficiency;
            d.peak_flops_fp16 *= efficiency;
            d.efficiency = 1.0;
        }
    }

    // Normal equations for u = 1/f over the classes that have events.
    std::array<std::optional<double>, 2> u;
    if (class_seen[0] && class_seen[1]) {
        const double det = ata[0][0] * ata[1][1] - ata[0][1] * ata[1][0];
        if (std::abs(det) > 1e-300 * std::max(1.0, ata[0][0] * ata[1][1])) {
            u[0] = (atb[0] * ata[1][1] - ata[0][1] * atb[1]) / det;
            u[1] = (ata[0][0] * atb[1] - ata[1][0] * atb[0]) / det;
        }
    } else {
        for (size_t c = 0; c < 2; ++c)
            if (class_seen[c] && ata[c][c] > 0) u[c] = atb[c] / ata[c][c];
    }
    if (u[0] && *u[0] > 0) {
        r.intra_bandwidth_factor = 1.0 / *u[0];
        for (Node& n : out.nodes) n.intra.bandwidth_bytes_per_s *= *r.intra_bandwidth_factor;
    }
    if (u[1] && *u[1] > 0) {
        r.inter_bandwidth_factor = 1.0 / *u[1];
        out.inter.bandwidth_bytes_per_s *= *r.inter_bandwidth_factor;
    }
    out.name = cluster.name + " (calibrated)";
    out.source = cluster.source + (cluster.source.empty() ? "" : "; ") + "efficiencies and bandwidths fitted to a measured run";
    r.cluster = out;
    r.predicted_step_after_s = simulateOn(program, plan, graph, out).metrics.iteration_time_s;
    return r;
}

}  // namespace hippie
