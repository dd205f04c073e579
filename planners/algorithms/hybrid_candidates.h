#pragma once
// Search machinery shared by the adaptive planner (`hippie`) and its oracle (`exhaustive`):
// the space of pipeline + data-parallel plans they search, a candidate's compact form and
// its Plan, simulating a candidate, keeping the best ones under an objective, and a fast
// analytic estimate of a candidate's time and memory that the adaptive planner prunes with.
//
// The space (both planners search it, so the oracle's optimum is the adaptive planner's
// target): pipeline depth pp <= min(layers, devices); data-parallel degree dp dividing the
// global batch with pp * dp <= devices (fewer devices than the cluster has are allowed);
// micro-batch count m dividing the per-replica batch (so every micro-batch holds a whole
// number of samples); contiguous non-empty stages; per stage, either keep every activation
// or recompute every layer but the last; the ZeRO stage 0..3 of the data-parallel groups
// (dp > 1 only); the tensor-parallel degree tp,
// a power of two up to the smallest node's devices that the model splits by
// (Graph::tensorParallelFits), with sequence parallelism when tp > 1 (it moves the same bytes
// as tp alone and splits more compute and activations), pp * dp * tp <= devices; the `hippie`
// schedule; the default gradient bucket; the device map from mapDevices(). And, for a plan
// that leaves devices idle, its per-stage tensor-parallel variants (perStageDegreeVariants):
// `exhaustive` simulates those of every plan, `hippie` those of its front's.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/planner.h"

namespace hippie::hybrid {

// ---- The space ------------------------------------------------------------------------------

// The highest ZeRO stage of the space: ZeRO-3 gathers one layer at a time (zero_gathers.h), so
// it needs less memory than ZeRO-2 for the all-gathers inside every compute.
constexpr int kHighestSearchedZeroStage = 3;

struct Shape {
    int pp = 1;  // pipeline stages
    int dp = 1;  // replicas of each stage
    int m = 1;   // micro-batches per pipeline per iteration
    int zero = 0;  // ZeRO stage of the data-parallel groups (0 when dp == 1)
    int tp = 1;    // tensor-parallel degree (with sequence parallelism when > 1)
    bool operator==(const Shape&) const = default;
};

// The tensor-parallel degrees of the space: powers of two up to the smallest node's devices
// that the model splits by, ascending (1 first).
std::vector<int> searchedTensorParallelDegrees(const Problem& problem);
// Every (tp, pp, dp, m, zero) of the space for this problem, by tp, then pp, dp, m and zero.
std::vector<Shape> searchShapes(const Problem& problem);
double microBatchSize(const Problem& problem, const Shape& shape);  // samples

// A point of the space.
struct Candidate {
    Shape shape;
    std::vector<StageRange> stages;  // shape.pp contiguous ranges
    std::vector<char> recompute;     // per stage: recompute all its layers but the last
};
bool operator==(const Candidate& a, const Candidate& b);

// A one-layer stage has nothing to recompute: its only layer's output is sent on (and the
// hippie schedule frees it once sent), so recomputing it would cost time and save nothing.
inline bool canRecompute(const StageRange& s) { return s.last_layer > s.first_layer; }
std::vector<int> recomputeLayers(const Candidate& c);
std::string candidateKey(const Candidate& c);   // compact and unique, for memoising
std::string describe(const Candidate& c);       // "pp 2 x dp 4 t2 z1, m 8, stages 0-5 | 6-11*" (* recomputes)

// The candidate as a Plan under the hippie schedule, with its topology-aware device map.
Plan candidatePlan(const Problem& problem, const std::string& planner, const Candidate& c);

// Per-stage tensor-parallel degrees (Plan::stage_tp) for a pipeline plan that leaves devices
// idle: the plan with idle devices given to some of its stages, each of those splitting over
// twice its ranks, and the stages cut again by the degrees (balancedStages) so that every
// device has about the same work. The variants: each stage alone doubled, the first and last
// together (GPT's embedding and LM head share one table), and every stage but those two. A
// new rank takes an idle device of its stage's node where there is one. Only variants that
// checkPlan accepts; none for plans with one stage, sequence parallelism, per-stage
// replication, the interleaved schedule, or fewer idle devices than a stage's dp x t.
std::vector<Plan> perStageDegreeVariants(const Problem& problem, const Plan& plan);
// Problem::throughput_floor within [0, 1]: a floor above the best throughput would exclude
// every plan.
double throughputFloor(const Problem& problem);
// The smallest device's memory less the problem's headroom: what "fits" means.
int64_t usableMemory(const Problem& problem);
// Simulated instructions a candidate costs (about 6 per stage, replica and micro-batch):
// the unit the adaptive planner budgets its simulations in.
int64_t simulationCost(const Shape& s);

// ---- The best plans found -------------------------------------------------------------------

// Simulated plans that fit memory, kept as their (throughput, memory efficiency) Pareto
// front: every objective's optimum is on it, including "best ME with throughput at least a
// floor fraction of the best", whatever the best throughput turns out to be.
class Incumbents {
public:
    struct Entry {
        Plan plan;
        TraceMetrics metrics;
    };

    explicit Incumbents(const Problem& problem) : problem_(problem) {}

    // Records a simulated plan; returns whether it is on the front now.
    bool offer(const Plan& plan, const TraceMetrics& metrics);
    const Entry* best() const;                    // under problem.objective; nullptr if none fits
    double bestThroughput() const;                // 0 if none fits
    // What the objective maximises for these metrics, given the plans found so far (0 when
    // the plan does not fit or is below the throughput floor).
    double score(const TraceMetrics& metrics) const;
    int64_t leastPeakBytes() const { return least_peak_; }  // over every plan offered; -1 if none
    const std::vector<Entry>& front() const { return front_; }
    const Plan* leastPeakPlan() const { return least_peak_ < 0 ? nullptr : &least_peak_plan_; }
    bool leastPeakIsLowerBound() const { return least_peak_lower_bound_; }  // TraceMetrics::peak_is_lower_bound

private:
    const Problem& problem_;
    std::vector<Entry> front_;  // no entry has both throughput and ME at or above another's
    int64_t least_peak_ = -1;
    bool least_peak_lower_bound_ = false;
    Plan least_peak_plan_;
};

// The result of a search: the incumbent best, or why there is none (memory, named with the
// leanest plan tried), with a note when the search stopped early.
PlannerResult searchOutcome(const std::string& planner, const Problem& problem, const Incumbents& found,
                            const PlanContext& context, std::vector<std::string> log, const std::string& stopped_note);

// ---- Analytic estimate ----------------------------------------------------------------------

// What the estimate needs of a (pp, dp, tp) device map: the link between consecutive stages,
// each stage's data-parallel all-reduce time as a linear function of the bytes reduced, and
// the tensor-parallel collectives' time as one (per collective, per byte).
struct ShapeTopology {
    std::vector<std::vector<Link>> pipelines;  // each replica's links from stage s to s + 1 (distinct chains only)
    std::vector<double> reduce_fixed_s;  // per stage: all-reduce seconds = fixed + per_byte * bytes
    std::vector<double> reduce_per_byte_s;
    std::vector<int64_t> capacity_bytes;  // per stage: the smallest device, less the headroom
    double tp_fixed_s = 0;      // per tensor-parallel collective (latencies)
    double tp_per_byte_s = 0;   // per byte of the collectives' whole tensors
};
ShapeTopology shapeTopology(const Problem& problem, const std::vector<std::vector<int>>& device_map, int tp = 1);

// One pipeline stage's compute and the one-way transfer to the next stage, per micro-batch.
struct StageTimes {
    double fwd_s = 0, bwd_s = 0, recompute_s = 0, hop_s = 0;
};
// When each stage's last backward ends under the hippie schedule (1F1B order, recompute
// before its backward without waiting for the gradient, sends serialised per link), from a
// stage-level simulation; runs longer than a few pipeline depths are simulated for a window
// and extended by its steady-state period.
std::vector<double> lastBackwardEnds(const std::vector<StageTimes>& stages, int m);

struct Estimate {
    double iteration_s = 0;
    double throughput = 0;                // samples/s
    std::vector<int64_t> stage_peak_bytes;
    int64_t peak_bytes = 0;
    double overflow = 0;                  // largest peak / capacity over the stages
    bool fits = false;
    double memory_efficiency = 0;
};

// A fast model of a candidate under the hippie schedule, after O(layers^2 + ops * layers)
// set-up. Time: a stage-level simulation of the 1F1B order (lastBackwardEnds) for each
// distinct replica pipeline, then the gradient all-reduce left after each stage's last
// backward (bucket by bucket, overlapping it) and the optimizer step. Memory: the model
// states and buffers, plus min(pp - s, m) micro-batches of stashed activations on stage s
// (less the outputs sent on, which the hippie schedule frees once sent; a recomputed layer
// stashes only its checkpoints, the outputs other layers read), one recomputed layer's
// rebuild and the largest workspace, as the simulator accounts them.
// It tracks the simulator within a few per cent on the zoo models (exactly on chains); it
// ranks candidates and the best are simulated.
class Estimator {
public:
    // Costs of one rank of `tp`-way tensor parallelism with sequence parallelism (tp > 1):
    // its share of compute and memory (tensorParallelRankGraph) and the tensor-parallel
    // collectives of each compute on the critical path.
    explicit Estimator(const Problem& problem, int tp = 1);

    Estimate estimate(const Candidate& c, const ShapeTopology& topology) const;

    // One stage alone, as memory-aware balancing weighs it: its compute per micro-batch
    // (forward, backward, recompute); the longest path of the schedule through it (the
    // first micro-batch's forwards to it, its m micro-batches, the last one's backwards back;
    // or the first micro-batch's round trip from it, then its remaining work), which is what
    // its position costs when m is not much larger than pp; and its memory peak, taking its
    // input as arriving no slower than it computes (the worst case for sends under way).
    // Communication is left out of the path: it is the same wherever the boundaries fall.
    struct StageLoad {
        double work_s = 0;
        double path_s = 0;
        int64_t peak_bytes = 0;
    };
    StageLoad stageLoad(const Shape& shape, int stage, const StageRange& r, bool recompute, const ShapeTopology& topology) const;
    const LayerCosts& costs() const { return costs_; }

private:
    struct StageCost;
    double transferSeconds(const Link& link, int last_layer, double samples) const;
    static int64_t activationPeak(const StageCost& sc, int64_t held, double send_s, double pace_s);
    StageCost stageCost(const StageRange& r, bool recompute, int stage, const Shape& shape, double samples,
                        const ShapeTopology& topology) const;
    // Seconds of the tensor-parallel collectives of layers first..last, forward or backward.
    double tensorParallelSeconds(int first, int last, bool backward, double samples, const ShapeTopology& topology) const;
    // Parameters, gradients, master weights and optimizer state of `param_bytes` of parameters
    // under shape.zero over shape.dp replicas, as the cost model counts them (no buffers);
    // ZeRO-3 holds `gathered_bytes` whole besides its shard.
    int64_t zeroStateBytes(int64_t param_bytes, int64_t gathered_bytes, const Shape& shape) const;
    size_t at(int first, int last) const { return static_cast<size_t>(first) * static_cast<size_t>(layers_) + static_cast<size_t>(last); }

    const Problem& problem_;
    Problem rank_problem_;  // problem_ with the graph of one tensor-parallel rank
    int tp_ = 1;
    LayerCosts costs_;
    int layers_ = 0;
    // Per layer, prefix sums: tensor-parallel collectives forward and backward, and their
    // whole tensors' bytes per sample.
    std::vector<double> tp_fwd_count_prefix_, tp_bwd_count_prefix_, tp_fwd_bytes_prefix_, tp_bwd_bytes_prefix_;
    std::vector<double> fwd_prefix_s_;          // per sample, device 0
    std::vector<double> bwd_prefix_s_;
    std::vector<double> accumulation_prefix_s_;  // CostModel::gradAccumulationTime, whole gradients
    std::vector<int64_t> activation_prefix_;    // at the graph's batch size
    std::vector<int64_t> checkpoint_prefix_;    // outputs another layer reads (a recomputed layer's stash)
    std::vector<int64_t> state_prefix_;         // model states per layer (no buffers)
    std::vector<int64_t> input_bytes_;          // [first][last]: tensors entering the stage
    std::vector<int64_t> sent_bytes_;           // [first][last]: outputs only later stages read
    std::vector<int64_t> temp_bytes_;           // [first][last]: largest workspace
    std::vector<int64_t> largest_layer_;        // [first][last]: largest one layer's activations
};

// A ranking key for candidates, larger is better: those that fit and reach min_throughput by
// the objective's value (positive); then those that fit, by how close they come to it (in
// (-1, 0)); then those that do not fit, by how little they overflow (below -1).
double rankOf(bool fits, double overflow, double throughput, double memory_efficiency, Objective objective, double min_throughput);
double estimateRank(const Estimate& e, Objective objective, double min_throughput);

}  // namespace hippie::hybrid
