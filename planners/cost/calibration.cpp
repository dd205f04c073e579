#include "planners/cost/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/sim/simulator.h"

namespace hippie {

namespace {

// ---- matching events across traces of the same program ---------------------------------------

using EventKey = std::tuple<int, int, int, int, int, int>;  // device, kind, stage, mb, peer, occurrence

std::vector<EventKey> keysOf(const Trace& t) {
    std::map<std::tuple<int, int, int, int, int>, int> seen;
    std::vector<EventKey> keys;
    keys.reserve(t.events.size());
    for (const TraceEvent& e : t.events) {
        const int n = seen[std::make_tuple(e.device, static_cast<int>(e.kind), e.stage, e.mb, e.peer)]++;
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

InstrKind recvOf(InstrKind send) { return send == InstrKind::SendActivation ? InstrKind::RecvActivation : InstrKind::RecvGrad; }

// A measured duration and the predicted event it is compared with.
struct Observation {
    EventKey predicted;
    double measured = 0;
    bool compute = false;
};

struct Observations {
    std::vector<Observation> list;
    int unmatched = 0;  // measured events (or transfers) with no partner to measure them by
};

Observations observe(const Trace& measured) {
    Observations out;
    const std::vector<EventKey> keys = keysOf(measured);
    std::map<EventKey, size_t> index;
    for (size_t i = 0; i < keys.size(); ++i) index[keys[i]] = i;

    // All-reduce instances: the members' events with the same stage, bucket and occurrence.
    std::map<std::tuple<int, int, int, int>, std::vector<size_t>> allreduces;
    for (size_t i = 0; i < keys.size(); ++i) {
        const TraceEvent& e = measured.events[i];
        if (e.kind == InstrKind::OptimizerStep) {
            continue;  // memory- and launch-bound: says nothing of the FLOP/s the model's kernels get
        } else if (isCompute(e.kind)) {
            out.list.push_back({keys[i], e.end_s - e.start_s, true});
        } else if (isSend(e.kind)) {
            const auto& [device, kind, stage, mb, peer, n] = keys[i];
            const auto r = index.find({peer, static_cast<int>(recvOf(e.kind)), stage, mb, device, n});
            if (r == index.end()) {
                ++out.unmatched;
                continue;
            }
            const TraceEvent& recv = measured.events[r->second];
            const double transfer = recv.end_s - std::max(e.start_s, recv.start_s);
            if (transfer > 0) out.list.push_back({keys[i], transfer, false});
        } else if (e.kind == InstrKind::AllReduce) {
            allreduces[{e.stage, e.mb, e.peer, std::get<5>(keys[i])}].push_back(i);
        }
    }
    for (const auto& [instance, members] : allreduces) {
        double start = -1e300, end = 1e300;
        for (size_t i : members) {
            start = std::max(start, measured.events[i].start_s);
            end = std::min(end, measured.events[i].end_s);
        }
        // Matched by its first member; every member of an instance has the same predicted span.
        if (end > start) out.list.push_back({keys[members.front()], end - start, false});
    }
    return out;
}

// ---- the time terms of the cost model --------------------------------------------------------

enum class Knob { Flops, Profiled, Latency, Bandwidth };
constexpr int kIntra = 0, kInter = 1;

struct Term {
    Knob knob;
    int index;  // node for Flops and Profiled; kIntra or kInter for links
};

// The cluster with term `t`'s time multiplied by x.
void scaleTerm(Cluster& c, const Term& t, double x) {
    switch (t.knob) {
    case Knob::Flops: {
        DeviceSpec& d = c.nodes[static_cast<size_t>(t.index)].device;
        const double efficiency = d.efficiency / x;
        if (efficiency <= 1.0) {
            d.efficiency = efficiency;
        } else {  // faster than the given peak allows: the product is what the model uses
            d.peak_flops_fp32 *= efficiency;
            d.peak_flops_fp16 *= efficiency;
            d.efficiency = 1.0;
        }
        break;
    }
    case Knob::Profiled: c.nodes[static_cast<size_t>(t.index)].device.profiled_time_scale *= x; break;
    case Knob::Latency:
        if (t.index == kIntra)
            for (Node& n : c.nodes) n.intra.latency_s *= x;
        else
            c.inter.latency_s *= x;
        break;
    case Knob::Bandwidth:
        if (t.index == kIntra)
            for (Node& n : c.nodes) n.intra.bandwidth_bytes_per_s /= x;
        else
            c.inter.bandwidth_bytes_per_s /= x;
        break;
    }
}

// One unknown of the fit: the terms it scales together, and its column.
struct Param {
    std::vector<Term> terms;
    std::vector<double> column;
    int pair = 0;  // the two terms of a node (FLOP/s, profiled) or of a link class share a pair
    double x = 1.0;
    bool fixed = false;
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

bool isZero(const std::vector<double>& a) {
    return std::all_of(a.begin(), a.end(), [](double v) { return std::abs(v) < 1e-15; });
}

// Nearly parallel columns: the events cannot tell the two terms apart.
bool collinear(const std::vector<double>& a, const std::vector<double>& b) {
    constexpr double kCos2 = 1 - 1e-3;  // about 1.8 degrees
    const double ab = dot(a, b);
    return ab > 0 && ab * ab >= kCos2 * dot(a, a) * dot(b, b);
}

// Adds the parameters for a pair of terms: one each, one tied, or none, as the columns allow.
void addPair(std::vector<Param>& params, Term a, std::vector<double> ca, Term b, std::vector<double> cb) {
    const bool za = isZero(ca), zb = isZero(cb);
    const int pair = params.empty() ? 0 : params.back().pair + 1;
    if (!za && !zb && collinear(ca, cb)) {
        for (size_t i = 0; i < ca.size(); ++i) ca[i] += cb[i];
        params.push_back({{a, b}, std::move(ca), pair});
        return;
    }
    if (!za) params.push_back({{a}, std::move(ca), pair});
    if (!zb) params.push_back({{b}, std::move(cb), pair});
}

// Merges the two parameters of a pair into one (both terms scale together).
void tie(std::vector<Param>& params, size_t a, size_t b) {
    for (size_t i = 0; i < params[a].column.size(); ++i) params[a].column[i] += params[b].column[i];
    params[a].terms.insert(params[a].terms.end(), params[b].terms.begin(), params[b].terms.end());
    params.erase(params.begin() + static_cast<std::ptrdiff_t>(b));
}

// Solves the symmetric system M x = v (small, dense) by Gaussian elimination with pivoting.
std::vector<double> solve(std::vector<std::vector<double>> m, std::vector<double> v) {
    const size_t n = v.size();
    for (size_t c = 0; c < n; ++c) {
        size_t p = c;
        for (size_t r = c + 1; r < n; ++r)
            if (std::abs(m[r][c]) > std::abs(m[p][c])) p = r;
        std::swap(m[c], m[p]);
        std::swap(v[c], v[p]);
        if (m[c][c] == 0) continue;
        for (size_t r = c + 1; r < n; ++r) {
            const double f = m[r][c] / m[c][c];
            for (size_t k = c; k < n; ++k) m[r][k] -= f * m[c][k];
            v[r] -= f * v[c];
        }
    }
    std::vector<double> x(n, 1.0);
    for (size_t c = n; c-- > 0;) {
        double s = v[c];
        for (size_t k = c + 1; k < n; ++k) s -= m[c][k] * x[k];
        x[c] = m[c][c] != 0 ? s / m[c][c] : 1.0;
    }
    return x;
}

// Least squares of y ~ sum_p column_p x_p with x in [lo, hi]: a bound that is crossed is fixed
// there (the worst first) and the others refitted. A tiny ridge towards x = 1 keeps the normal
// equations regular.
void fit(std::vector<Param>& params, const std::vector<double>& y) {
    constexpr double kLo = 1e-3, kHi = 1e3, kRidge = 1e-12;
    for (;;) {
        std::vector<size_t> free;
        std::vector<double> rhs = y;
        for (size_t p = 0; p < params.size(); ++p) {
            if (!params[p].fixed) {
                free.push_back(p);
                continue;
            }
            for (size_t i = 0; i < rhs.size(); ++i) rhs[i] -= params[p].column[i] * params[p].x;
        }
        if (free.empty()) return;
        std::vector<std::vector<double>> m(free.size(), std::vector<double>(free.size()));
        std::vector<double> v(free.size());
        for (size_t a = 0; a < free.size(); ++a) {
            const std::vector<double>& ca = params[free[a]].column;
            for (size_t b = 0; b < free.size(); ++b) m[a][b] = dot(ca, params[free[b]].column);
            const double ridge = kRidge * m[a][a];
            m[a][a] += ridge;
            v[a] = dot(ca, rhs) + ridge;
        }
        const std::vector<double> x = solve(std::move(m), std::move(v));
        size_t worst = free.size();
        double worst_by = 0;
        for (size_t a = 0; a < free.size(); ++a) {
            const double by = x[a] < kLo ? std::log(kLo / std::max(x[a], 1e-300)) : x[a] > kHi ? std::log(x[a] / kHi) : 0.0;
            if (by > worst_by) {
                worst_by = by;
                worst = a;
            }
        }
        if (worst == free.size()) {
            for (size_t a = 0; a < free.size(); ++a) params[free[a]].x = x[a];
            return;
        }
        params[free[worst]].fixed = true;
        params[free[worst]].x = x[worst] < kLo ? kLo : kHi;
    }
}

Trace simulateOn(const Program& program, const Plan& plan, const Graph& graph, const Cluster& cluster) {
    const CostModel cost(graph, cluster);
    return simulate(program, plan, cost);
}

double eventError(const std::vector<Observation>& obs, const std::map<EventKey, double>& predicted) {
    double diff = 0, total = 0;
    for (const Observation& o : obs) {
        diff += std::abs(o.measured - predicted.at(o.predicted));
        total += o.measured;
    }
    return total > 0 ? diff / total * 100.0 : 0.0;
}

std::string percent(double v) {
    std::ostringstream s;
    s.precision(1);
    s << std::fixed << (v >= 0 ? "+" : "") << v << " %";
    return s.str();
}

}  // namespace

double CalibrationResult::errorBeforePercent() const {
    return predicted_step_before_s > 0 ? (measured_step_s - predicted_step_before_s) / predicted_step_before_s * 100.0 : 0.0;
}

double CalibrationResult::errorAfterPercent() const {
    return predicted_step_after_s > 0 ? (measured_step_s - predicted_step_after_s) / predicted_step_after_s * 100.0 : 0.0;
}

std::vector<std::string> CalibrationResult::describeFactors() const {
    std::vector<std::string> out;
    auto line = [&](const std::string& what, double f) {
        std::ostringstream s;
        s.precision(3);
        s << what << " x " << std::fixed << f;
        out.push_back(s.str());
    };
    for (size_t k = 0; k < compute_factor.size(); ++k)
        if (compute_factor[k]) line("node " + std::to_string(k) + " FLOP/s", *compute_factor[k]);
    for (size_t k = 0; k < profiled_factor.size(); ++k)
        if (profiled_factor[k]) line("node " + std::to_string(k) + " profiled op times", *profiled_factor[k]);
    if (intra_bandwidth_factor) line("intra-node bandwidth", *intra_bandwidth_factor);
    if (intra_latency_factor) line("intra-node latency", *intra_latency_factor);
    if (inter_bandwidth_factor) line("inter-node bandwidth", *inter_bandwidth_factor);
    if (inter_latency_factor) line("inter-node latency", *inter_latency_factor);
    return out;
}

CalibrationResult calibrateCluster(const Plan& plan, const Graph& graph, const Cluster& cluster, const Trace& measured,
                                   const CalibrationOptions& options) {
    if (plan.deviceCount() > cluster.deviceCount())
        throw Error("calibration: the plan needs " + std::to_string(plan.deviceCount()) + " devices but cluster '" + cluster.name +
                    "' has " + std::to_string(cluster.deviceCount()));
    const double measured_step = options.measured_step_s.value_or(measured.metrics.iteration_time_s);
    if (!(measured_step > 0))
        throw Error("calibration: no measured step time (the trace's metrics.iteration_time_s is " +
                    std::to_string(measured.metrics.iteration_time_s) + ")");
    const Program program = lower(plan, graph);
    const Trace base = simulateOn(program, plan, graph, cluster);
    const std::map<EventKey, double> t0 = durations(base);

    CalibrationResult r;
    r.measured_step_s = measured_step;
    r.predicted_step_before_s = base.metrics.iteration_time_s;

    Observations found = observe(measured);
    std::vector<Observation> obs;
    std::set<int> nodes_seen;
    for (const Observation& o : found.list) {
        if (!t0.count(o.predicted)) {
            ++found.unmatched;
            continue;
        }
        obs.push_back(o);
        (o.compute ? r.compute_events : r.communication_events)++;
        nodes_seen.insert(cluster.nodeOf(std::get<0>(o.predicted)));
    }
    r.unmatched_events = found.unmatched;
    if (obs.empty())
        throw Error("calibration: no measured event matches the plan's program (" + std::to_string(measured.events.size()) +
                    " events; was the trace measured for this plan?)");

    // Columns: each term's share of each observed event's predicted time.
    auto column = [&](const Term& t) {
        Cluster c = cluster;
        scaleTerm(c, t, 2.0);
        const std::map<EventKey, double> d = durations(simulateOn(program, plan, graph, c));
        std::vector<double> col(obs.size());
        for (size_t i = 0; i < obs.size(); ++i) col[i] = d.at(obs[i].predicted) - t0.at(obs[i].predicted);
        return col;
    };
    std::vector<Param> params;
    for (int k : nodes_seen) {
        const Term flops{Knob::Flops, k}, profiled{Knob::Profiled, k};
        addPair(params, flops, column(flops), profiled, column(profiled));
    }
    for (int c : {kIntra, kInter}) {
        const Term latency{Knob::Latency, c}, bandwidth{Knob::Bandwidth, c};
        addPair(params, latency, column(latency), bandwidth, column(bandwidth));
    }
    // What no term explains stays as predicted.
    std::vector<double> y(obs.size());
    for (size_t i = 0; i < obs.size(); ++i) {
        double explained = 0;
        for (const Param& p : params) explained += p.column[i];
        y[i] = obs[i].measured - (t0.at(obs[i].predicted) - explained);
    }
    // A term driven to a bound means the events are all but silent on it next to its partner (e.g.
    // transfers so small that bandwidth hardly shows): the pair is then fitted as one.
    for (bool again = true; again;) {
        for (Param& p : params) {
            p.x = 1.0;
            p.fixed = false;
        }
        fit(params, y);
        again = false;
        for (size_t a = 0; a < params.size() && !again; ++a) {
            if (!params[a].fixed) continue;
            for (size_t b = 0; b < params.size() && !again; ++b)
                if (b != a && params[b].pair == params[a].pair) {
                    tie(params, std::min(a, b), std::max(a, b));
                    again = true;
                }
        }
    }

    Cluster out = cluster;
    r.compute_factor.assign(cluster.nodes.size(), std::nullopt);
    r.profiled_factor.assign(cluster.nodes.size(), std::nullopt);
    for (const Param& p : params) {
        for (const Term& t : p.terms) {
            scaleTerm(out, t, p.x);
            const size_t k = static_cast<size_t>(t.index);
            switch (t.knob) {
            case Knob::Flops: r.compute_factor[k] = 1.0 / p.x; break;
            case Knob::Profiled: r.profiled_factor[k] = p.x; break;
            case Knob::Latency: (t.index == kIntra ? r.intra_latency_factor : r.inter_latency_factor) = p.x; break;
            case Knob::Bandwidth: (t.index == kIntra ? r.intra_bandwidth_factor : r.inter_bandwidth_factor) = 1.0 / p.x; break;
            }
        }
    }
    const std::string suffix = " (calibrated)";
    out.name = cluster.name.ends_with(suffix) ? cluster.name : cluster.name + suffix;
    out.source = cluster.source + (cluster.source.empty() ? "" : "; ") + "figures fitted to a measured run";

    const Trace after = simulateOn(program, plan, graph, out);
    r.predicted_step_after_s = after.metrics.iteration_time_s;
    r.event_error_before_percent = eventError(obs, t0);
    r.event_error_after_percent = eventError(obs, durations(after));

    constexpr double kSlack = 1e-9;
    if (std::abs(r.errorAfterPercent()) <= std::abs(r.errorBeforePercent()) + kSlack) {
        r.accepted = true;
        r.cluster = out;
    } else {
        r.cluster = cluster;
        r.refusal = "the fitted figures predict the measured step worse (error " + percent(r.errorAfterPercent()) + " instead of " +
                    percent(r.errorBeforePercent()) + "), so the given cluster is kept: the run's order of events differs from the simulated one";
    }
    return r;
}

}  // namespace hippie
