#pragma once
// Calibration: fits the cost model's efficiency factors to a measured Trace, so that later
// plans on the same hardware predict better.
//
// Method. The plan is lowered and simulated on the given cluster; every measured event is
// matched to the predicted event of the same instruction (device, kind, stage, micro-batch,
// peer, and its occurrence among events with that key, which is program order). Receives are
// skipped: their measured span includes waiting for the sender.
//
// Compute (Forward, Backward, BackwardInput, BackwardWeight, Recompute, OptimizerStep). The
// cost model's time is t = fixed + flops / (peak x efficiency), where `fixed` comes from
// profiled op times, which do not depend on the device. Simulating once more with every
// device's efficiency halved gives each event's FLOP part F = t_half - t and fixed = t - F.
// For each node k, the measured durations m_i = fixed_i + F_i x s_k with s_k = e_k / e'_k are
// fitted by least squares, s_k = sum F_i (m_i - fixed_i) / sum F_i^2, and e'_k = e_k / s_k.
// An efficiency that would exceed 1 is capped at 1 and the rest goes into the peak FLOP/s
// (peak x efficiency, the only product the model uses, is what was fitted).
//
// Communication (SendActivation, SendGrad, AllReduce). Times are latency terms plus bytes over
// a bandwidth, so with u_c = 1 / f_c for each link class c (the nodes' intra-node links, and
// the inter-node link), m_i = L_i + sum_c B_ic x u_c, where B_ic is the event's bandwidth time
// over class c (found by simulating with that class's bandwidth halved: B_ic = t_c - t) and
// L_i = t_i - sum_c B_ic. The u_c are fitted by linear least squares (normal equations, one
// unknown per class that has events); each class's bandwidth is multiplied by f_c. Latencies
// are kept as given.
//
// With a measured trace produced by this simulator on a cluster whose efficiencies and
// bandwidths differ by known factors (and, for hierarchical all-reduces, the same node sets
// the pace), the fit recovers those factors exactly up to rounding.
#include <optional>
#include <vector>

#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"

namespace hippie {

struct CalibrationResult {
    Cluster cluster;                         // the calibrated cluster (name gets " (calibrated)")
    std::vector<std::optional<double>> compute_factor;  // per node: e'/e fitted; empty = no events
    std::optional<double> intra_bandwidth_factor;       // f for intra-node links; empty = no events
    std::optional<double> inter_bandwidth_factor;       // f for the inter-node link
    int compute_events = 0;                  // measured events used for each fit
    int communication_events = 0;
    int unmatched_events = 0;                // measured events with no predicted counterpart
    double measured_step_s = 0;              // the measured trace's iteration time
    double predicted_step_before_s = 0;      // on the given cluster
    double predicted_step_after_s = 0;       // on the calibrated cluster
    double errorBeforePercent() const;       // (measured - predicted) / predicted x 100, as the run store
    double errorAfterPercent() const;
};

// Throws Error when the plan does not lower, the trace holds no event that matches the plan,
// or the measured trace has no iteration time.
CalibrationResult calibrateCluster(const Plan& plan, const Graph& graph, const Cluster& cluster, const Trace& measured);

}  // namespace hippie
