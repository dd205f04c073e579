#pragma once
// Calibration: fits the cost model's hardware figures to a measured Trace, so that later plans
// on the same hardware predict better.
//
// What is fitted. Every time the cost model gives is linear in a few figures of the cluster:
//   compute   t = profiled x scale_k + flops / (peak x efficiency_k)         (per node k)
//   transfer  t = latency_c + bytes / bandwidth_c                             (per link class c:
//             the nodes' intra-node links together, and the inter-node link; ring all-reduces
//             are sums of such terms)
// so with a multiplier x_j on each time term (x = 1 is the given cluster), an event's predicted
// duration is t_i = sum_j A_ij x_j. The columns A_ij are found exactly by simulating once more
// with each term doubled (A_ij = t_i(term j doubled) - t_i). The x_j are then the least-squares
// fit of the measured durations m_i, kept in [1e-3, 1e3] (a bound that binds is fixed there and
// the rest refitted), and the calibrated cluster divides efficiency_k by x, multiplies the
// profiled-time scale_k and latency_c by x, and divides bandwidth_c by x. An efficiency that
// would exceed 1 is capped at 1 and the rest goes into the peak FLOP/s.
//
// Terms the trace cannot tell apart are fitted as one: when a node's events all have the same
// mix of profiled and FLOP time, or a link class's transfers all have the same size, the two
// terms get one multiplier (the whole compute time, or the whole link time, scales); so do two
// terms of which one is driven to a bound (transfers so small that their bandwidth hardly shows).
// A term with no events keeps its figure.
//
// What is measured. Compute events (forward, backward, recompute) count their span; optimizer
// steps do not (they are bound by memory and kernel launches, not by FLOP/s). A point-to-point transfer is the receive's end minus the later of the send's and the
// receive's start (the engine's send span lasts until its wait, long after the data left); the
// engine's receive ends when it was waited for, so when the data arrived while the receiver was
// still computing, this is an upper bound of the transfer and the fitted link is slower than the
// wire (the fit then also carries that wait, which the simulator adds again). An
// all-reduce is the earliest end minus the latest start over the members of one instance.
// Measured events are matched to predicted ones by instruction: device, kind, stage,
// micro-batch, peer, and the occurrence among events with that key (program order).
//
// Refusal. The fit is kept only when the calibrated cluster predicts the measured step time at
// least as well as the given cluster; otherwise `accepted` is false, `cluster` is the given one
// and `refusal` says why (the simulator's order of events then differs from what ran, and
// better event times do not make a better step prediction).
//
// With a measured trace produced by this simulator on a cluster whose figures differ by known
// factors, the fit recovers those factors exactly up to rounding (when the trace can tell the
// terms apart, as above).
#include <optional>
#include <string>
#include <vector>

#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"

namespace hippie {

struct CalibrationOptions {
    // The run's measured step time (e.g. the mean over its steps); default: the trace's
    // iteration time. The step errors and the refusal are judged against it.
    std::optional<double> measured_step_s;
};

struct CalibrationResult {
    Cluster cluster;                 // calibrated (name gets " (calibrated)"), or the given one if refused
    bool accepted = false;
    std::string refusal;             // why the fit was not kept; empty when accepted

    // Fitted factors, new figure / given figure; empty where no event tells. Compute and bandwidth
    // factors are speeds (> 1: faster than given), profiled and latency factors are times.
    std::vector<std::optional<double>> compute_factor;   // per node: achievable FLOP/s new / given
    std::vector<std::optional<double>> profiled_factor;  // per node: profiled-time scale new / given
    std::optional<double> intra_bandwidth_factor;        // bandwidth new / given
    std::optional<double> inter_bandwidth_factor;
    std::optional<double> intra_latency_factor;          // latency new / given
    std::optional<double> inter_latency_factor;

    int compute_events = 0;          // measured events used for each fit
    int communication_events = 0;    // transfers and all-reduce instances
    int unmatched_events = 0;        // measured events with no predicted counterpart
    // Sum of |measured - predicted| over the events used, / sum of measured, x 100.
    double event_error_before_percent = 0;
    double event_error_after_percent = 0;

    double measured_step_s = 0;
    double predicted_step_before_s = 0;  // on the given cluster
    double predicted_step_after_s = 0;   // on the fitted cluster (also when refused)
    double errorBeforePercent() const;   // (measured - predicted) / predicted x 100, as the run store
    double errorAfterPercent() const;

    // One line per fitted factor, e.g. "node 0 profiled op times x 1.62".
    std::vector<std::string> describeFactors() const;
};

// Throws Error when the plan does not lower, the trace holds no event that matches the plan,
// or there is no measured step time.
CalibrationResult calibrateCluster(const Plan& plan, const Graph& graph, const Cluster& cluster, const Trace& measured,
                                   const CalibrationOptions& options = {});

}  // namespace hippie
