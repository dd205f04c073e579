#include "planners/algorithms/hybrid_candidates.h"

#include <algorithm>
#include <cmath>

#include "planners/algorithms/device_mapping.h"
#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/pipeline_search.h"
#include "planners/common/error.h"
#include "planners/schedule/balanced_stages.h"
#include "planners/schedule/lower.h"

namespace hippie::hybrid {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
// Instructions per stage, replica and micro-batch in a hippie program: forward, backward,
// an activation send and receive, a gradient send and receive.
constexpr int64_t kInstructionsPerMicroBatch = 6;

std::vector<int> allDevices(const Problem& problem) {
    std::vector<int> out(static_cast<size_t>(problem.cluster.deviceCount()));
    for (size_t d = 0; d < out.size(); ++d) out[d] = static_cast<int>(d);
    return out;
}

bool atLeastAsGood(const TraceMetrics& a, const TraceMetrics& b) {
    return a.throughput_samples_per_s >= b.throughput_samples_per_s && a.memory_efficiency >= b.memory_efficiency;
}

}  // namespace

// ---- The space ------------------------------------------------------------------------------

std::vector<int> searchedTensorParallelDegrees(const Problem& problem) {
    int per_node = problem.cluster.nodes.empty() ? 1 : problem.cluster.nodes.front().devices;
    for (const Node& n : problem.cluster.nodes) per_node = std::min(per_node, n.devices);
    std::vector<int> out{1};
    for (int tp = 2; tp <= per_node; tp *= 2)
        if (problem.graph.tensorParallelFits(tp)) out.push_back(tp);
    return out;
}

std::vector<Shape> searchShapes(const Problem& problem) {
    const int devices = problem.cluster.deviceCount();
    std::vector<Shape> out;
    for (int tp : searchedTensorParallelDegrees(problem)) {
        const int groups = devices / tp;
        const int deepest = std::min(problem.graph.layerCount(), groups);
        for (int pp = 1; pp <= deepest; ++pp)
            for (int dp = 1; pp * dp <= groups; ++dp)
                if (problem.global_batch % dp == 0)
                    for (int m : microBatchCounts(problem, dp))
                        for (int zero = 0; zero <= (dp > 1 ? kHighestSearchedZeroStage : 0); ++zero) out.push_back({pp, dp, m, zero, tp});
    }
    return out;
}

double microBatchSize(const Problem& problem, const Shape& shape) {
    return static_cast<double>(problem.global_batch) / (static_cast<double>(shape.dp) * shape.m);
}

std::vector<int> recomputeLayers(const Candidate& c) {
    std::vector<int> layers;
    for (size_t s = 0; s < c.stages.size(); ++s)
        if (c.recompute[s] && canRecompute(c.stages[s]))
            for (int l = c.stages[s].first_layer; l < c.stages[s].last_layer; ++l) layers.push_back(l);
    return layers;
}

bool operator==(const Candidate& a, const Candidate& b) {
    auto sameRange = [](const StageRange& x, const StageRange& y) {
        return x.first_layer == y.first_layer && x.last_layer == y.last_layer;
    };
    return a.shape == b.shape && a.recompute == b.recompute &&
           std::equal(a.stages.begin(), a.stages.end(), b.stages.begin(), b.stages.end(), sameRange);
}

std::string candidateKey(const Candidate& c) {
    std::string k = std::to_string(c.shape.pp) + "," + std::to_string(c.shape.dp) + "," + std::to_string(c.shape.m) + "," +
                    std::to_string(c.shape.zero) + "," + std::to_string(c.shape.tp) + ":";
    for (size_t s = 0; s < c.stages.size(); ++s) k += std::to_string(c.stages[s].last_layer) + (c.recompute[s] ? "r," : ",");
    return k;
}

std::string describe(const Candidate& c) {
    std::string stages;
    for (size_t s = 0; s < c.stages.size(); ++s)
        stages += (stages.empty() ? "" : " | ") + std::to_string(c.stages[s].first_layer) + "-" +
                  std::to_string(c.stages[s].last_layer) + (c.recompute[s] ? "*" : "");
    return "pp " + std::to_string(c.shape.pp) + " x dp " + std::to_string(c.shape.dp) +
           (c.shape.tp > 1 ? " t" + std::to_string(c.shape.tp) : std::string()) +
           (c.shape.zero > 0 ? " z" + std::to_string(c.shape.zero) : std::string()) + ", m " + std::to_string(c.shape.m) +
           ", stages " + stages;
}

Plan candidatePlan(const Problem& problem, const std::string& planner, const Candidate& c) {
    Plan plan = basePlan(problem, planner);
    plan.stages = c.stages;
    plan.dp = c.shape.dp;
    plan.micro_batches = c.shape.m;
    plan.zero_stage = c.shape.dp > 1 ? c.shape.zero : 0;
    plan.tp = c.shape.tp;
    plan.sequence_parallel = c.shape.tp > 1;
    plan.schedule = ScheduleKind::Hippie;
    plan.recompute_layers = recomputeLayers(c);
    plan.device_map = mapDevices(problem, plan);
    return plan;
}

std::vector<Plan> perStageDegreeVariants(const Problem& problem, const Plan& plan) {
    const int pp = plan.pipelineDepth(), devices = problem.cluster.deviceCount();
    if (plan.isPlacement() || pp < 2 || plan.sequence_parallel || plan.perStageReplication() || plan.perStageTp() ||
        plan.schedule == ScheduleKind::Interleaved || plan.device_map.size() != static_cast<size_t>(pp))
        return {};
    const int t = std::max(plan.tp, 1), unit = plan.dp * t;  // devices one doubled stage adds
    std::vector<bool> used(static_cast<size_t>(devices), false);
    for (const auto& row : plan.device_map)
        for (int d : row)
            if (d >= 0 && d < devices) used[static_cast<size_t>(d)] = true;
    const int idle = static_cast<int>(std::count(used.begin(), used.end(), false));
    if (idle < unit) return {};
    std::vector<std::vector<bool>> doubled_sets;
    for (int s = 0; s < pp; ++s) {
        doubled_sets.emplace_back(static_cast<size_t>(pp), false);
        doubled_sets.back()[static_cast<size_t>(s)] = true;
    }
    if (pp > 2 && 2 * unit <= idle) {
        std::vector<bool> ends(static_cast<size_t>(pp), false);
        ends.front() = ends.back() = true;
        doubled_sets.push_back(ends);
    }
    if (pp > 3 && (pp - 2) * unit <= idle) {
        std::vector<bool> inner(static_cast<size_t>(pp), true);
        inner.front() = inner.back() = false;
        doubled_sets.push_back(inner);
    }
    // Which old stages recompute (every layer but the last), to keep that per stage.
    std::vector<char> recomputes(static_cast<size_t>(pp), 0);
    for (int layer : plan.recompute_layers)
        for (int s = 0; s < pp; ++s)
            if (layer >= plan.stages[static_cast<size_t>(s)].first_layer && layer <= plan.stages[static_cast<size_t>(s)].last_layer)
                recomputes[static_cast<size_t>(s)] = 1;
    std::vector<Plan> out;
    for (const std::vector<bool>& doubled : doubled_sets) {
        Plan v = plan;
        v.stage_tp.assign(static_cast<size_t>(pp), t);
        for (int s = 0; s < pp; ++s)
            if (doubled[static_cast<size_t>(s)]) v.stage_tp[static_cast<size_t>(s)] = 2 * t;
        v.tp = *std::max_element(v.stage_tp.begin(), v.stage_tp.end());
        if (!problem.graph.tensorParallelFits(v.tp)) continue;
        try {
            v.stages = balancedStages(problem.graph, v.stage_tp);
        } catch (const Error&) {
            continue;
        }
        v.recompute_layers = recomputeLayers(Candidate{Shape{}, v.stages, recomputes});
        // The old ranks keep their devices; a doubled stage's new ranks take idle ones, its
        // node's first.
        std::vector<bool> taken = used;
        const auto idleOn = [&](int node) {
            for (int d = 0; d < devices; ++d)
                if (!taken[static_cast<size_t>(d)] && (node < 0 || problem.cluster.nodeOf(d) == node)) return d;
            return -1;
        };
        bool placed = true;
        for (int s = 0; s < pp && placed; ++s) {
            const auto& old_row = plan.device_map[static_cast<size_t>(s)];
            const int t_new = v.stage_tp[static_cast<size_t>(s)];
            std::vector<int> row;
            for (int r = 0; r < plan.dp && placed; ++r) {
                const auto first = old_row.begin() + static_cast<std::ptrdiff_t>(r) * t;
                row.insert(row.end(), first, first + t);
                const int node = problem.cluster.nodeOf(*first);
                for (int k = t; k < t_new; ++k) {
                    int d = idleOn(node);
                    if (d < 0) d = idleOn(-1);
                    if (d < 0) {
                        placed = false;
                        break;
                    }
                    taken[static_cast<size_t>(d)] = true;
                    row.push_back(d);
                }
            }
            v.device_map[static_cast<size_t>(s)] = std::move(row);
        }
        if (!placed) continue;
        try {
            checkPlan(v, problem.graph, devices);
        } catch (const Error&) {
            continue;
        }
        out.push_back(std::move(v));
    }
    return out;
}

double throughputFloor(const Problem& problem) { return std::clamp(problem.throughput_floor, 0.0, 1.0); }

int64_t usableMemory(const Problem& problem) { return smallestCapacityBytes(problem); }

int64_t simulationCost(const Shape& s) {
    // Tensor parallelism: a stream per rank, and a TensorParallel after forward and backward.
    const int64_t per_micro_batch = kInstructionsPerMicroBatch + (s.tp > 1 ? 2 : 0);
    return int64_t{s.pp} * s.dp * s.tp * (per_micro_batch * s.m + 2);
}

// ---- The best plans found -------------------------------------------------------------------

bool Incumbents::offer(const Plan& plan, const TraceMetrics& metrics) {
    if (least_peak_ < 0 || metrics.max_peak_memory_bytes < least_peak_) {
        least_peak_ = metrics.max_peak_memory_bytes;
        least_peak_lower_bound_ = metrics.peak_is_lower_bound;
        least_peak_plan_ = plan;
    }
    if (!metrics.fits_memory) return false;
    for (const Entry& e : front_)
        if (atLeastAsGood(e.metrics, metrics)) return false;  // ties keep the earlier plan
    std::erase_if(front_, [&](const Entry& e) { return atLeastAsGood(metrics, e.metrics); });
    front_.push_back({plan, metrics});
    return true;
}

double Incumbents::bestThroughput() const {
    double best = 0;
    for (const Entry& e : front_) best = std::max(best, e.metrics.throughput_samples_per_s);
    return best;
}

double Incumbents::score(const TraceMetrics& m) const {
    if (!m.fits_memory) return 0;
    switch (problem_.objective) {
    case Objective::Throughput: return m.throughput_samples_per_s;
    case Objective::MemoryEfficiency: return m.memory_efficiency;
    case Objective::MemoryEfficiencyWithThroughputFloor: {
        const double floor = throughputFloor(problem_) * std::max(bestThroughput(), m.throughput_samples_per_s);
        return m.throughput_samples_per_s >= floor ? m.memory_efficiency : 0;
    }
    }
    return 0;
}

const Incumbents::Entry* Incumbents::best() const {
    const Entry* best = nullptr;
    double best_score = 0;
    for (const Entry& e : front_) {
        const double s = score(e.metrics);
        if (s > best_score) {
            best = &e;
            best_score = s;
        }
    }
    return best;
}

namespace {

std::string layerList(const std::vector<int>& layers) {
    std::string out;
    for (int l : layers) {
        if (!out.empty()) out += ',';
        out += std::to_string(l);
    }
    return out;
}

std::string chosenLine(const Incumbents::Entry& best) {
    std::string line = "chose " + describePlan(best.plan);
    if (!best.plan.recompute_layers.empty()) line += ", recompute layers " + layerList(best.plan.recompute_layers);
    line += ": " + std::to_string(best.metrics.throughput_samples_per_s) + " samples/s, peak " + gib(best.metrics.max_peak_memory_bytes);
    return line + ", ME " + std::to_string(best.metrics.memory_efficiency);
}

std::string noFitReason(const Problem& problem, const Incumbents& found) {
    std::string reason = "no plan fits device memory";
    if (const Plan* lean = found.leastPeakPlan())
        reason += ": the leanest plan tried (" + describePlan(*lean) + ") needs " + (found.leastPeakIsLowerBound() ? "at least " : "") + gib(found.leastPeakBytes()) +
                  " per device but a device has " + gib(usableMemory(problem)) +
                  " available; add devices or memory, or train with a smaller global batch";
    return reason;
}

}  // namespace

PlannerResult searchOutcome(const std::string& planner, const Problem& problem, const Incumbents& found,
                            const PlanContext& context, std::vector<std::string> log, const std::string& stopped_note) {
    PlannerResult r;
    if (const Incumbents::Entry* best = found.best()) {
        r = feasibleResult(planner, best->plan, best->metrics, context);
        if (!stopped_note.empty()) r.reason = stopped_note + "; best plan found so far";
        const int devices = problem.cluster.deviceCount();
        if (best->plan.deviceCount() < devices)
            r.notes.push_back("uses " + std::to_string(best->plan.deviceCount()) + " of " + std::to_string(devices) +
                              " devices: more would not raise the objective");
        log.push_back(chosenLine(*best));
    } else if (!stopped_note.empty()) {
        r = infeasibleResult(planner, stopped_note + " before a plan that fits memory was found", context);
    } else {
        r = infeasibleResult(planner, noFitReason(problem, found), context);
    }
    if (!stopped_note.empty()) r.notes.push_back(stopped_note);
    r.fastest_throughput = found.bestThroughput();
    r.log = std::move(log);
    return r;
}

// ---- Analytic estimate ----------------------------------------------------------------------

namespace {

// A 1F1B run is a warm-up and a cool-down of about a pipeline depth of micro-batches each,
// and a steady state between them: longer runs are simulated for this window, which leaves
// enough steady state to measure its period, and extended by it.
int pipelineWindow(int pp, int m) { return std::min(m, 2 * pp + 8); }

// The hippie schedule's compute at stage granularity (no all-reduce), for one micro-batch
// count: each stage runs its 1F1B order; a forward waits for its input, a backward for its
// gradient, and so does a recompute (the backward rebuilds its layers one at a time); sends
// on a link go one after another. Returns when each stage's last backward ends.
class StagePipeline {
public:
    StagePipeline(const std::vector<StageTimes>& stages, int m)
        : st_(stages), pp_(static_cast<int>(stages.size())), m_(m), lanes_(stages.size()), act_arrival_(cells(), kPending),
          grad_arrival_(cells(), kPending), first_stage_backward_end_(static_cast<size_t>(m), 0.0) {
        for (int s = 0; s < pp_; ++s) lanes_[static_cast<size_t>(s)].warm_up = std::min(pp_ - s - 1, m_);
    }

    std::vector<double> run() {
        // A stage runs until it waits for a neighbour; it is woken when that neighbour sends.
        std::vector<int> ready;
        for (int s = pp_ - 1; s >= 0; --s) ready.push_back(s);
        std::vector<char> queued(static_cast<size_t>(pp_), 1);
        while (!ready.empty()) {
            const int s = ready.back();
            ready.pop_back();
            queued[static_cast<size_t>(s)] = 0;
            for (int woken = step(s); woken != kBlocked; woken = step(s)) {
                if (woken >= 0 && !queued[static_cast<size_t>(woken)]) {
                    queued[static_cast<size_t>(woken)] = 1;
                    ready.push_back(woken);
                }
            }
        }
        std::vector<double> ends;
        for (const Lane& l : lanes_) ends.push_back(l.free);  // every stage ends with a backward
        return ends;
    }

    // Seconds per micro-batch in the steady state: stage 0's backwards before its cool-down,
    // over the last half pipeline depth of them (the warm-up's transient has died out by then).
    double steadyPeriod() const {
        const int last = m_ - pp_, span = std::max(1, pp_ / 2), first = last - span;
        if (first < 0) return 0.0;
        const auto& ends = first_stage_backward_end_;
        return (ends[static_cast<size_t>(last)] - ends[static_cast<size_t>(first)]) / span;
    }

private:
    static constexpr double kPending = -1;
    static constexpr int kBlocked = -2;

    struct Lane {
        int warm_up = 0;                  // forwards before 1F1B starts alternating
        int forwards = 0, backwards = 0;  // done
        double free = 0;                  // when the stage's compute is free
        double act_link = 0, grad_link = 0;  // when its links to the next and the previous stage are
    };

    size_t cells() const { return static_cast<size_t>(pp_) * static_cast<size_t>(m_); }
    size_t at(int s, int k) const { return static_cast<size_t>(s) * static_cast<size_t>(m_) + static_cast<size_t>(k); }

    // Runs stage s's next compute (1F1B: a forward while at most warm_up + 1 micro-batches
    // would be in flight) if its input is there; returns the neighbour it sent to (-1: none),
    // or kBlocked when it waits or is done.
    int step(int s) {
        Lane& l = lanes_[static_cast<size_t>(s)];
        if (l.backwards == m_) return kBlocked;
        const bool forward = l.forwards < m_ && l.forwards - l.backwards <= l.warm_up;
        const int k = forward ? l.forwards : l.backwards;
        const StageTimes& t = st_[static_cast<size_t>(s)];
        double input = 0;
        if (forward && s > 0) input = act_arrival_[at(s, k)];
        if (!forward && s + 1 < pp_) input = grad_arrival_[at(s, k)];
        if (input == kPending) return kBlocked;
        if (forward) {
            l.free = std::max(l.free, input) + t.fwd_s;
            ++l.forwards;
            if (s + 1 == pp_) return -1;
            act_arrival_[at(s + 1, k)] = send(l.act_link, l.free, t.hop_s);
            return s + 1;
        }
        l.free = std::max(l.free, input) + t.recompute_s + t.bwd_s;
        ++l.backwards;
        if (s == 0) {
            first_stage_backward_end_[static_cast<size_t>(k)] = l.free;
            return -1;
        }
        grad_arrival_[at(s - 1, k)] = send(l.grad_link, l.free, st_[static_cast<size_t>(s) - 1].hop_s);
        return s - 1;
    }

    static double send(double& link_free, double when, double hop) { return link_free = std::max(link_free, when) + hop; }

    const std::vector<StageTimes>& st_;
    int pp_, m_;
    std::vector<Lane> lanes_;
    std::vector<double> act_arrival_, grad_arrival_;  // [stage][micro-batch]: when its input arrives
    std::vector<double> first_stage_backward_end_;
};

}  // namespace

std::vector<double> lastBackwardEnds(const std::vector<StageTimes>& stages, int m) {
    const int pp = static_cast<int>(stages.size());
    const int window = pipelineWindow(pp, m);
    StagePipeline pipeline(stages, window);
    std::vector<double> ends = pipeline.run();
    if (window == m) return ends;
    const double extra = pipeline.steadyPeriod() * (m - window);
    for (double& e : ends) e += extra;
    return ends;
}

namespace {

// Whether every hop of `a` is at most as slow as the same hop of `b`, for any tensor size.
bool noSlower(const std::vector<Link>& a, const std::vector<Link>& b) {
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].latency_s > b[i].latency_s || a[i].bandwidth_bytes_per_s < b[i].bandwidth_bytes_per_s) return false;
    return true;
}

// The links along each replica's pipeline; only chains no other chain is slower than at
// every hop matter, since replicas wait for each other at the all-reduce.
std::vector<std::vector<Link>> pipelineLinks(const Cluster& cluster, const std::vector<std::vector<int>>& device_map) {
    std::vector<std::vector<Link>> chains;
    for (size_t r = 0; r < device_map.front().size(); ++r) {
        std::vector<Link> chain;
        for (size_t s = 0; s + 1 < device_map.size(); ++s) chain.push_back(cluster.link(device_map[s][r], device_map[s + 1][r]));
        if (std::any_of(chains.begin(), chains.end(), [&](const auto& c) { return noSlower(chain, c); })) continue;
        std::erase_if(chains, [&](const auto& c) { return noSlower(c, chain); });
        chains.push_back(std::move(chain));
    }
    return chains;
}

}  // namespace

ShapeTopology shapeTopology(const Problem& problem, const std::vector<std::vector<int>>& device_map, int tp) {
    const CostModel cost(problem.graph, problem.cluster);
    // Two sizes give the all-reduce's line: ring and hierarchical times are affine in bytes.
    constexpr int64_t kProbeBytes = int64_t{1} << 20;
    ShapeTopology t;
    t.pipelines = pipelineLinks(problem.cluster, device_map);
    const size_t ranks = static_cast<size_t>(std::max(tp, 1));
    if (ranks > 1) {
        // The first replica's tensor-parallel group of stage 0; mapDevices keeps every group
        // on one node's links when tp divides the node's devices.
        const std::vector<int> group(device_map.front().begin(), device_map.front().begin() + static_cast<std::ptrdiff_t>(ranks));
        const double one = cost.tensorParallelTime(kProbeBytes, 1, group, true), two = cost.tensorParallelTime(2 * kProbeBytes, 1, group, true);
        t.tp_per_byte_s = (two - one) / static_cast<double>(kProbeBytes);
        t.tp_fixed_s = one - t.tp_per_byte_s * static_cast<double>(kProbeBytes);
    }
    for (size_t s = 0; s < device_map.size(); ++s) {
        // Rank 0's data-parallel group: its replicas (every rank's group is alike).
        std::vector<int> group;
        for (size_t i = 0; i < device_map[s].size(); i += ranks) group.push_back(device_map[s][i]);
        const double one = cost.allReduceTime(kProbeBytes, group), two = cost.allReduceTime(2 * kProbeBytes, group);
        const double per_byte = (two - one) / static_cast<double>(kProbeBytes);
        t.reduce_per_byte_s.push_back(per_byte);
        t.reduce_fixed_s.push_back(one - per_byte * static_cast<double>(kProbeBytes));
        t.capacity_bytes.push_back(smallestCapacityBytes(problem, device_map[s]));
    }
    return t;
}

struct Estimator::StageCost {
    double fwd_s = 0, bwd_s = 0, recompute_s = 0;
    int64_t static_bytes = 0, params = 0;
    int64_t kept = 0, sent = 0, recomputed = 0, temp = 0;  // one micro-batch
};

namespace {
Problem rankProblem(const Problem& problem, int tp) {
    Problem p = problem;
    p.graph = tensorParallelRankGraph(problem.graph, TensorSplit{tp, tp > 1});
    return p;
}
}  // namespace

Estimator::Estimator(const Problem& problem, int tp)
    : problem_(problem), rank_problem_(rankProblem(problem, tp)), tp_(std::max(tp, 1)), costs_(rank_problem_),
      layers_(problem.graph.layerCount()) {
    const Graph& g = rank_problem_.graph;
    const CostModel& cost = costs_.cost();
    const size_t n = static_cast<size_t>(layers_);
    tp_fwd_count_prefix_.assign(n + 1, 0);
    tp_bwd_count_prefix_.assign(n + 1, 0);
    tp_fwd_bytes_prefix_.assign(n + 1, 0);
    tp_bwd_bytes_prefix_.assign(n + 1, 0);
    if (tp_ > 1) {
        const double batch = problem.graph.batch_size;
        const std::vector<OpTensorParallelTraffic> by_op = tensorParallelTrafficByOp(problem.graph, TensorSplit{tp_, true}, batch);
        for (int l = 0; l < layers_; ++l) {
            const size_t i = static_cast<size_t>(l);
            OpTensorParallelTraffic t;
            for (int op : costs_.ops(l, l)) {
                const OpTensorParallelTraffic& o = by_op[static_cast<size_t>(op)];
                t.forward += o.forward;
                t.backward += o.backward;
                t.forward_bytes += o.forward_bytes;
                t.backward_bytes += o.backward_bytes;
            }
            tp_fwd_count_prefix_[i + 1] = tp_fwd_count_prefix_[i] + t.forward;
            tp_bwd_count_prefix_[i + 1] = tp_bwd_count_prefix_[i] + t.backward;
            tp_fwd_bytes_prefix_[i + 1] = tp_fwd_bytes_prefix_[i] + static_cast<double>(t.forward_bytes) / batch;
            tp_bwd_bytes_prefix_[i + 1] = tp_bwd_bytes_prefix_[i] + static_cast<double>(t.backward_bytes) / batch;
        }
    }
    fwd_prefix_s_.assign(n + 1, 0);
    bwd_prefix_s_.assign(n + 1, 0);
    accumulation_prefix_s_.assign(n + 1, 0);
    activation_prefix_.assign(n + 1, 0);
    checkpoint_prefix_.assign(n + 1, 0);
    state_prefix_.assign(n + 1, 0);
    std::vector<int64_t> layer_temp(n, 0);
    for (int l = 0; l < layers_; ++l) {
        const auto ops = costs_.ops(l, l);
        const size_t i = static_cast<size_t>(l);
        fwd_prefix_s_[i + 1] = fwd_prefix_s_[i] + cost.fwdTime(ops, 1.0, 0);
        bwd_prefix_s_[i + 1] = bwd_prefix_s_[i] + cost.bwdTime(ops, 1.0, 0);
        accumulation_prefix_s_[i + 1] = accumulation_prefix_s_[i] + cost.gradAccumulationTime(ops, 0);
        activation_prefix_[i + 1] = activation_prefix_[i] + costs_.activationBytes(l, g.batch_size);
        state_prefix_[i + 1] = state_prefix_[i] + costs_.layerStateBytes(l);
        for (int op : ops) layer_temp[i] = std::max(layer_temp[i], g.ops[static_cast<size_t>(op)].temp_bytes);
    }
    input_bytes_.assign(n * n, 0);
    sent_bytes_.assign(n * n, 0);
    temp_bytes_.assign(n * n, 0);
    largest_layer_.assign(n * n, 0);

    // Per producing op: the layers that read it and the largest tensor it sends them.
    std::vector<std::vector<int>> readers(g.ops.size());
    std::vector<int64_t> tensor(g.ops.size(), 0);
    for (const Edge& e : g.edges) {
        const int to = g.ops[static_cast<size_t>(e.dst)].layer;
        readers[static_cast<size_t>(e.src)].push_back(to);
        int64_t& bytes = tensor[static_cast<size_t>(e.src)];
        if (to != g.ops[static_cast<size_t>(e.src)].layer) bytes = std::max(bytes, e.bytes);
    }
    std::vector<int64_t> checkpoints(n, 0);
    const std::vector<bool> read_by_other_layer = g.readByAnotherLayer();
    for (size_t op = 0; op < g.ops.size(); ++op)
        if (read_by_other_layer[op]) checkpoints[static_cast<size_t>(g.ops[op].layer)] += g.ops[op].output_bytes;
    for (size_t i = 0; i < n; ++i) checkpoint_prefix_[i + 1] = checkpoint_prefix_[i] + checkpoints[i];
    std::vector<int64_t> only_later(n * n, 0);  // [layer][last]: outputs of the layer's ops read only after `last`
    for (size_t op = 0; op < g.ops.size(); ++op) {
        auto& r = readers[op];
        if (r.empty()) continue;
        std::sort(r.begin(), r.end());
        r.erase(std::unique(r.begin(), r.end()), r.end());
        const int from = g.ops[op].layer;
        // A stage starting after `from` takes this tensor as input once it reaches a reader.
        size_t next = 0;
        for (int first = from + 1; first <= r.back(); ++first) {
            while (r[next] < first) ++next;
            input_bytes_[at(first, r[next])] += tensor[op];
        }
        for (int last = from; last < r.front(); ++last) only_later[at(from, last)] += g.ops[op].keptBytes();
    }
    for (int first = 0; first < layers_; ++first)
        for (int last = first + 1; last < layers_; ++last) input_bytes_[at(first, last)] += input_bytes_[at(first, last - 1)];
    for (int last = 0; last < layers_; ++last) {
        int64_t sum = 0;
        for (int first = last; first >= 0; --first) sent_bytes_[at(first, last)] = sum += only_later[at(first, last)];
    }
    for (int first = 0; first < layers_; ++first) {
        int64_t most = 0;
        for (int last = first; last < layers_; ++last)
            temp_bytes_[at(first, last)] = most = std::max(most, layer_temp[static_cast<size_t>(last)]);
        most = 0;
        for (int last = first; last < layers_; ++last) {
            const size_t l = static_cast<size_t>(last);
            largest_layer_[at(first, last)] = most = std::max(most, activation_prefix_[l + 1] - activation_prefix_[l]);
        }
    }
}

int64_t Estimator::zeroStateBytes(int64_t param_bytes, int64_t gathered_bytes, const Shape& shape) const {
    const CostModel& cost = costs_.cost();
    const int64_t count = param_bytes / activationElementBytes(cost.precision());
    const int64_t master = isMixed(cost.precision()) ? count * 4 : 0;  // fp32 copy, as the cost model counts it
    const int64_t optimizer = count * optimizerStateBytesPerParam(problem_.optimizer);
    const auto shard = [&](int64_t bytes) { return (bytes + shape.dp - 1) / shape.dp; };
    const int64_t params = shape.zero >= 3 ? shard(param_bytes) + gathered_bytes : param_bytes;  // ZeRO-3: shard + two layers gathered
    const int64_t grads = shape.zero >= 2 ? shard(param_bytes) : param_bytes;
    return params + grads + shard(master) + shard(optimizer);
}

double Estimator::tensorParallelSeconds(int first, int last, bool backward, double samples, const ShapeTopology& topology) const {
    if (tp_ <= 1 || last < first) return 0.0;
    const auto& count = backward ? tp_bwd_count_prefix_ : tp_fwd_count_prefix_;
    const auto& bytes = backward ? tp_bwd_bytes_prefix_ : tp_fwd_bytes_prefix_;
    const size_t a = static_cast<size_t>(first), b = static_cast<size_t>(last) + 1;
    return (count[b] - count[a]) * topology.tp_fixed_s + (bytes[b] - bytes[a]) * samples * topology.tp_per_byte_s;
}

Estimator::StageCost Estimator::stageCost(const StageRange& r, bool recompute, int stage, const Shape& shape, double samples,
                                          const ShapeTopology& topology) const {
    const CostModel& cost = costs_.cost();
    const size_t a = static_cast<size_t>(r.first_layer), b = static_cast<size_t>(r.last_layer);
    const bool last_stage = stage + 1 == shape.pp;
    recompute = recompute && canRecompute(r);
    StageCost s;
    // Each compute with its tensor-parallel collectives, which run inside it.
    s.fwd_s = (fwd_prefix_s_[b + 1] - fwd_prefix_s_[a]) * samples + tensorParallelSeconds(r.first_layer, r.last_layer, false, samples, topology);
    s.bwd_s = (bwd_prefix_s_[b + 1] - bwd_prefix_s_[a]) * samples + tensorParallelSeconds(r.first_layer, r.last_layer, true, samples, topology);
    // Every backward but the first of a step accumulates its weight gradients (ZeRO 2 and 3:
    // into the shard): spread over the m backwards, as the per-micro-batch times are.
    const double shards = shape.dp > 1 && shape.zero >= 2 ? shape.dp : 1;
    s.bwd_s += (accumulation_prefix_s_[b + 1] - accumulation_prefix_s_[a]) / shards * (shape.m - 1) / shape.m;
    s.recompute_s = recompute ? (fwd_prefix_s_[b] - fwd_prefix_s_[a]) * samples +
                                    tensorParallelSeconds(r.first_layer, r.last_layer - 1, false, samples, topology)
                              : 0.0;
    s.params = costs_.paramBytes(r.first_layer, r.last_layer);
    if (shape.dp > 1 && shape.zero >= 3 && s.params > 0) {
        // ZeRO-3 gathers each layer inside every compute, the next one prefetched: the
        // first layer's gather is exposed, and the rest wherever gathering outpaces compute
        // (all-gather: half an all-reduce's ring). A rebuilt layer's backward uses what its
        // rebuild gathered: with recomputation (every layer but the last) the backward
        // gathers the last layer only.
        const auto gather_s = [&](int from, int to) {  // one all-gather per layer of [from, to]
            return ((to - from + 1) * topology.reduce_fixed_s[static_cast<size_t>(stage)] +
                    topology.reduce_per_byte_s[static_cast<size_t>(stage)] * static_cast<double>(costs_.paramBytes(from, to))) / 2;
        };
        const auto exposed = [&](double compute, int from, int to) {
            if (compute <= 0 || to < from) return 0.0;
            const double all = gather_s(from, to);
            return std::max(0.0, all - compute) + all / (to - from + 1);
        };
        const int backward_from = recompute ? r.last_layer : r.first_layer;
        s.fwd_s += exposed(s.fwd_s, r.first_layer, r.last_layer);
        s.bwd_s += exposed(s.bwd_s, backward_from, r.last_layer);
        s.recompute_s += exposed(s.recompute_s, r.first_layer, r.last_layer - 1);
    }
    const int64_t buckets = shape.dp > 1 ? std::min(s.params, 2 * Plan{}.bucket_bytes) : 0;  // the cost model's two in flight
    const int64_t states = shape.dp > 1 && shape.zero > 0 ? zeroStateBytes(s.params, shape.zero >= 3 ? costs_.zeroGatheredBytes(r.first_layer, r.last_layer) : 0, shape) : state_prefix_[b + 1] - state_prefix_[a];
    s.static_bytes = states + buckets + (last_stage ? 0 : costs_.boundaryBytes(r.last_layer, samples));
    // Recomputation (of every layer but the last) stashes the recomputed layers' checkpoints
    // and rebuilds one layer at a time inside the backward, or, where the micro-batches in
    // flight (the hippie schedule's min(pp - s, m)) hold more checkpoints than that saves,
    // stashes the stage's input alone and rebuilds the layers together, as lowering chooses
    // (Program::recompute_per_layer).
    const int64_t checkpoints = checkpoint_prefix_[b] - checkpoint_prefix_[a], rebuilt = activation_prefix_[b] - activation_prefix_[a];
    const int64_t largest = recompute ? largest_layer_[at(r.first_layer, r.last_layer - 1)] : 0;
    const double held = static_cast<double>(std::min(shape.pp - stage, shape.m));
    const bool per_layer = (shape.dp > 1 && shape.zero >= 3) || b - a < 2 ||
                           Program::checkpointsEachLayer(held, static_cast<double>(checkpoints), static_cast<double>(largest),
                                                         static_cast<double>(rebuilt));
    const int64_t outputs = !recompute ? activation_prefix_[b + 1] - activation_prefix_[a]
                                       : (per_layer ? checkpoints : 0) + activation_prefix_[b + 1] - activation_prefix_[b];
    s.kept = cost.scaled(input_bytes_[at(r.first_layer, r.last_layer)] + outputs, samples);
    s.recomputed = recompute ? cost.scaled(per_layer ? largest : rebuilt, samples) : 0;
    s.sent = cost.scaled(per_layer ? sent_bytes_[at(r.first_layer, r.last_layer)] : sent_bytes_[at(r.last_layer, r.last_layer)], samples);
    s.temp = cost.scaled(temp_bytes_[at(r.first_layer, r.last_layer)], samples);
    return s;
}

Estimator::StageLoad Estimator::stageLoad(const Shape& shape, int stage, const StageRange& r, bool recompute,
                                          const ShapeTopology& topology) const {
    const double samples = microBatchSize(problem_, shape);
    const StageCost sc = stageCost(r, recompute, stage, shape, samples, topology);
    double send_s = 0;
    if (stage + 1 < shape.pp)
        for (const std::vector<Link>& links : topology.pipelines)
            send_s = std::max(send_s, transferSeconds(links[static_cast<size_t>(stage)], r.last_layer, samples));
    const int64_t held = std::min(shape.pp - stage, shape.m);
    const double work_s = sc.fwd_s + sc.bwd_s + sc.recompute_s;
    const size_t a = static_cast<size_t>(r.first_layer), n = static_cast<size_t>(layers_);
    const double before_s = (fwd_prefix_s_[a] + bwd_prefix_s_[a]) * samples;  // forwards there and backwards back
    const double round_trip_s = (fwd_prefix_s_[n] - fwd_prefix_s_[a] + bwd_prefix_s_[n] - bwd_prefix_s_[a]) * samples;
    const double own_s = shape.m * work_s;
    const double after_trip_s = round_trip_s + (shape.m - 1) * (sc.bwd_s + sc.recompute_s) + static_cast<double>(shape.m - held) * sc.fwd_s;
    return {work_s, before_s + std::max(own_s, after_trip_s), sc.static_bytes + activationPeak(sc, held, send_s, sc.fwd_s)};
}

// Activations at the stage's peak with `held` micro-batches in flight, forwards arriving
// every `pace_s` (the slowest forward or link upstream). At a forward's start the earlier
// micro-batches hold their stash less the outputs already sent; the previous one's send is
// still under way unless the stage idled longer than a send, and sends queue when a send
// takes longer than the pace. At a recompute, which starts once its gradient has arrived (at
// the earliest when the forward before it ends), the micro-batch just forwarded may still hold
// the outputs it is sending.
int64_t Estimator::activationPeak(const StageCost& sc, int64_t held, double send_s, double pace_s) {
    const int64_t stashed = sc.kept - sc.sent;
    // A send a billionth of a forward long ends when the forward does, at the simulator's resolution.
    const bool sending = send_s > 1e-9 * sc.fwd_s;
    int64_t unsent = 0;
    if (sending && held > 1 && send_s > pace_s - sc.fwd_s) {
        const double sent = std::floor(static_cast<double>(held - 2) * pace_s / send_s);
        unsent = std::clamp<int64_t>(held - 1 - static_cast<int64_t>(std::min(sent, 1e18)), 1, held - 1);
    }
    const int64_t at_forward = (held - 1) * stashed + unsent * sc.sent + sc.kept;
    const int64_t at_recompute = (held - 1) * stashed + (sending ? sc.kept : stashed) + sc.recomputed;
    return std::max(at_forward, sc.recomputed > 0 ? at_recompute : 0) + sc.temp;
}

// One way over `link` for the tensors crossing the cut after `last_layer` (activations
// forward, their gradients back).
double Estimator::transferSeconds(const Link& link, int last_layer, double samples) const {
    const double bytes = static_cast<double>(costs_.boundaryBytes(last_layer, samples));
    return link.latency_s + (link.bandwidth_bytes_per_s > 0 ? bytes / link.bandwidth_bytes_per_s : 0.0);
}

Estimate Estimator::estimate(const Candidate& c, const ShapeTopology& topology) const {
    const int pp = c.shape.pp, m = c.shape.m;
    const double samples = microBatchSize(problem_, c.shape);
    std::vector<StageCost> stages;
    stages.reserve(static_cast<size_t>(pp));
    for (int s = 0; s < pp; ++s)
        stages.push_back(stageCost(c.stages[static_cast<size_t>(s)], c.recompute[static_cast<size_t>(s)] != 0, s, c.shape, samples, topology));

    // Replicas synchronise at the all-reduce, so each stage waits for its slowest replica;
    // memory follows the slowest link after each stage.
    std::vector<double> backward_ends(static_cast<size_t>(pp), 0.0), hop(static_cast<size_t>(pp), 0.0);
    for (const std::vector<Link>& links : topology.pipelines) {
        std::vector<StageTimes> times;
        for (size_t s = 0; s < static_cast<size_t>(pp); ++s) {
            const double h = s + 1 < static_cast<size_t>(pp) ? transferSeconds(links[s], c.stages[s].last_layer, samples) : 0.0;
            hop[s] = std::max(hop[s], h);
            times.push_back({stages[s].fwd_s, stages[s].bwd_s, stages[s].recompute_s, h});
        }
        const std::vector<double> ends = lastBackwardEnds(times, m);
        for (size_t s = 0; s < ends.size(); ++s) backward_ends[s] = std::max(backward_ends[s], ends[s]);
    }

    Estimate e;
    const CostModel& cost = costs_.cost();
    double pace = 0;     // slowest forward or link so far: how often a stage receives work in its warm-up
    for (size_t s = 0; s < static_cast<size_t>(pp); ++s) {
        const StageCost& sc = stages[s];
        const double backward_end = backward_ends[s];
        double reduced_end = backward_end;
        const int zero = c.shape.dp > 1 ? c.shape.zero : 0;
        double gather_s = 0;  // ZeRO 1-2: all-gathers of the parameters after the step (ZeRO-3's are in stageCost)
        if (c.shape.dp > 1 && sc.params > 0) {
            // The last backward runs bucket by bucket, each bucket's all-reduce (ZeRO 2/3:
            // reduce-scatter, half of it) after its part.
            const double buckets = std::max(1.0, std::ceil(static_cast<double>(sc.params) / static_cast<double>(Plan{}.bucket_bytes)));
            const double each = topology.reduce_fixed_s[s] + topology.reduce_per_byte_s[s] * static_cast<double>(sc.params) / buckets;
            const double reduce_each = zero >= 2 ? each / 2 : each;
            reduced_end = std::max(backward_end - sc.bwd_s + sc.bwd_s / buckets + buckets * reduce_each, backward_end + reduce_each);
            if (zero == 1 || zero == 2) gather_s = buckets * each / 2;
        }
        int64_t params = sc.params / activationElementBytes(cost.precision());
        if (zero > 0) params = (params + c.shape.dp - 1) / c.shape.dp;
        e.iteration_s = std::max(e.iteration_s, reduced_end + cost.optimizerTime(params, problem_.optimizer, 0) + gather_s);

        pace = std::max({pace, sc.fwd_s, s > 0 ? hop[s - 1] : 0.0});
        const int64_t activations = activationPeak(sc, std::min(pp - static_cast<int>(s), m), hop[s], pace);
        const int64_t peak = sc.static_bytes + activations;
        e.stage_peak_bytes.push_back(peak);
        e.peak_bytes = std::max(e.peak_bytes, peak);
        const int64_t capacity = std::max<int64_t>(topology.capacity_bytes[s], 1);
        e.overflow = std::max(e.overflow, static_cast<double>(peak) / static_cast<double>(capacity));
    }
    e.fits = e.overflow <= 1.0;
    e.throughput = e.iteration_s > 0 ? problem_.global_batch / e.iteration_s : 0.0;
    e.memory_efficiency = e.peak_bytes > 0 ? e.throughput / (static_cast<double>(e.peak_bytes) / kBytesPerGiB) : 0.0;
    return e;
}

double rankOf(bool fits, double overflow, double throughput, double memory_efficiency, Objective objective, double min_throughput) {
    if (!fits) return -1 - overflow;
    if (throughput < min_throughput) return throughput / min_throughput - 1;
    return objective == Objective::Throughput ? throughput : memory_efficiency;
}

double estimateRank(const Estimate& e, Objective objective, double min_throughput) {
    return rankOf(e.fits, e.overflow, e.throughput, e.memory_efficiency, objective, min_throughput);
}

}  // namespace hippie::hybrid
