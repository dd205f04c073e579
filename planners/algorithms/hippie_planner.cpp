#include "planners/algorithms/hippie_planner.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <stop_token>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "planners/algorithms/data_parallel.h"
#include "planners/algorithms/deepspeed_3d.h"
#include "planners/algorithms/device_mapping.h"
#include "planners/algorithms/equal_params.h"
#include "planners/algorithms/gpipe_balance.h"
#include "planners/algorithms/megatron_planner.h"
#include "planners/algorithms/pipedream.h"
#include "planners/algorithms/uniform.h"
#include "planners/algorithms/zero_planner.h"
#include "planners/algorithms/evaluate.h"
#include "planners/model/attention_core.h"
#include "planners/algorithms/hybrid_candidates.h"
#include "planners/algorithms/partition.h"
#include "planners/algorithms/pipeline_search.h"
#include "planners/schedule/plan_json.h"

namespace hippie {

namespace {

using hybrid::Candidate;
using hybrid::Estimate;
using hybrid::Shape;

// Effort. The estimate is cheap (microseconds), a simulation is not (milliseconds on large
// models), so the search estimates widely and simulates within a budget of instructions
// (the simulator runs a few million a second): about a tenth of a second whatever the model.
constexpr std::chrono::milliseconds kCancelPollInterval{5};  // relaying a cancel to a baseline run
constexpr int kSeededMicroBatchCounts = 3;         // per (pp, dp), given every seed partition
constexpr int kRecomputeLevels = 3;                // highest memory levels a seed or a move recomputes
constexpr size_t kFarthestHandOver = 8;           // stages a climbing move hands a layer across
constexpr int kClimbStarts = 8;                    // distinct shapes balanced and refined on the estimate
constexpr int kFrontSteps = 16;                    // plans taken along a shape's Pareto front, per tie-break
constexpr int64_t kBalancingCells = 20'000'000;    // dynamic-programming cells for balancing more shapes
constexpr int64_t kBalancerEntries = 4'000'000;    // largest stage-load table (24 bytes an entry) balanced
constexpr int kSimulatedFromRanking = 48;          // best-ranked candidates simulated
constexpr int kSimulationsPerPhase = 400;          // ranking plus climbing
// Even when they alone exceed the budget. Two, the best-ranked candidate and its runner-up:
// on gpt3-13b x dgx-a100-4x8 the third and fourth (ZeRO-2/3 plans, the costliest to
// simulate) took a quarter of the planning time, and the plan chosen was the same without
// them on the twenty zoo x cluster problems tried (docs/planners.md, hippie).
constexpr int kAlwaysSimulated = 2;
constexpr int64_t kInstructionBudget = 400'000;    // simulated instructions per search
// A move must beat the incumbent by more than rounding to count as an improvement.
constexpr double kRelativeImprovement = 1e-12;

// What a phase maximises: the objective's value among plans at or above a throughput.
struct Goal {
    Objective objective = Objective::MemoryEfficiency;
    double min_throughput = 0;
};

struct Ranked {
    Candidate candidate;
    Estimate estimate;
    double rank = 0;
};

bool better(double a, double b) { return a > b + kRelativeImprovement * std::abs(b); }

std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

// `c` with one layer handed from stage `from` to stage `to`: the stages between pass it
// along, keeping their sizes (every boundary between the two moves by one layer).
Candidate handOver(const Candidate& c, size_t from, size_t to) {
    Candidate n = c;
    const int step = to > from ? -1 : 1;  // boundaries move towards `from`
    for (size_t b = std::min(from, to); b < std::max(from, to); ++b) {
        n.stages[b].last_layer += step;
        n.stages[b + 1].first_layer += step;
    }
    for (size_t s = 0; s < n.stages.size(); ++s)
        if (!hybrid::canRecompute(n.stages[s])) n.recompute[s] = 0;
    return n;
}

// `c` with the boundary after stage b moved to after layer `last`.
Candidate moveBoundary(const Candidate& c, size_t b, int last) {
    Candidate n = c;
    n.stages[b].last_layer = last;
    n.stages[b + 1].first_layer = last + 1;
    for (size_t s : {b, b + 1})
        if (!hybrid::canRecompute(n.stages[s])) n.recompute[s] = 0;
    return n;
}

// Adds `n`, and `n` with stage `grown` recomputing, which the layers it gained may need.
void addWithRecomputeVariant(std::vector<Candidate>& out, Candidate n, size_t grown) {
    const bool variant = !n.recompute[grown] && hybrid::canRecompute(n.stages[grown]);
    out.push_back(n);
    if (!variant) return;
    n.recompute[grown] = 1;
    out.push_back(std::move(n));
}

// `c` with every stage at or above one of its highest few memory levels recomputing (a peak
// only falls once every stage at it recomputes), one candidate per level.
std::vector<Candidate> recomputeLevels(const Candidate& c, const std::vector<int64_t>& stage_peaks, int levels) {
    auto open = [&](size_t s) { return !c.recompute[s] && hybrid::canRecompute(c.stages[s]); };
    std::vector<int64_t> peaks;
    for (size_t s = 0; s < c.stages.size(); ++s)
        if (open(s)) peaks.push_back(stage_peaks[s]);
    std::sort(peaks.begin(), peaks.end(), std::greater<>());
    peaks.erase(std::unique(peaks.begin(), peaks.end()), peaks.end());
    std::vector<Candidate> out;
    for (size_t i = 0; i < std::min(peaks.size(), static_cast<size_t>(levels)); ++i) {
        Candidate n = c;
        for (size_t s = 0; s < c.stages.size(); ++s)
            if (open(s) && stage_peaks[s] >= peaks[i]) n.recompute[s] = 1;
        out.push_back(std::move(n));
    }
    return out;
}

// Every boundary moved anywhere between its neighbours, alone and with the grown stage recomputing.
void addBoundaryMoves(std::vector<Candidate>& out, const Candidate& c) {
    for (size_t b = 0; b + 1 < c.stages.size(); ++b)
        for (int last = c.stages[b].first_layer; last < c.stages[b + 1].last_layer; ++last)
            if (last != c.stages[b].last_layer) {
                const size_t grown = last > c.stages[b].last_layer ? b : b + 1;
                addWithRecomputeVariant(out, moveBoundary(c, b, last), grown);
            }
}

// A layer handed across two to kFarthestHandOver stages (neighbours are boundary moves),
// alone and with the receiving stage recomputing.
void addHandOvers(std::vector<Candidate>& out, const Candidate& c) {
    const size_t pp = c.stages.size();
    for (size_t from = 0; from < pp; ++from) {
        if (c.stages[from].first_layer == c.stages[from].last_layer) continue;  // a stage keeps at least one layer
        for (size_t to = from > kFarthestHandOver ? from - kFarthestHandOver : 0; to < std::min(pp, from + kFarthestHandOver + 1); ++to)
            if (to + 1 < from || to > from + 1) addWithRecomputeVariant(out, handOver(c, from, to), to);
    }
}

void addRecomputeSwitches(std::vector<Candidate>& out, const Candidate& c) {
    for (size_t s = 0; s < c.stages.size(); ++s) {
        if (!hybrid::canRecompute(c.stages[s])) continue;
        Candidate n = c;
        n.recompute[s] = !n.recompute[s];
        out.push_back(std::move(n));
    }
}

// The micro-batch counts next to c's among `counts` (ascending).
void addMicroBatchNeighbours(std::vector<Candidate>& out, const Candidate& c, const std::vector<int>& counts) {
    const auto at = std::find(counts.begin(), counts.end(), c.shape.m);
    if (at == counts.end()) return;
    for (auto it : {at - (at == counts.begin() ? 0 : 1), at + 1}) {
        if (it == at || it == counts.end()) continue;
        Candidate n = c;
        n.shape.m = *it;
        out.push_back(std::move(n));
    }
}

// Candidates one step away from `c`: the moves above, and the stages of its highest memory
// levels (`stage_peaks`) recomputing.
std::vector<Candidate> neighbours(const Candidate& c, const std::vector<int64_t>& stage_peaks, const std::vector<int>& micro_batch_counts) {
    std::vector<Candidate> out = recomputeLevels(c, stage_peaks, kRecomputeLevels);
    addBoundaryMoves(out, c);
    addHandOvers(out, c);
    addRecomputeSwitches(out, c);
    addMicroBatchNeighbours(out, c, micro_batch_counts);
    // The next and previous ZeRO stage: less memory for more communication, or the reverse.
    for (int step : {-1, 1}) {
        const int zero = c.shape.zero + step;
        if (c.shape.dp < 2 || zero < 0 || zero > hybrid::kHighestSearchedZeroStage) continue;
        Candidate n = c;
        n.shape.zero = zero;
        out.push_back(std::move(n));
    }
    return out;
}

// Memory-aware balancing of one shape: for a memory cap, the stage boundaries and per-stage
// recomputation that make the longest schedule path through any one stage shortest (the
// slowest stage when micro-batches are many; its position matters too when they are few)
// with every stage under the cap, by dynamic programming over stages and their last layers.
// Ties go either to the plan with the least compute in all (recomputation included) or to
// the leaner one; both are kept. Lowering the cap below each answer's peak walks the
// (path, peak memory) Pareto front from the fastest plan that fits down to the leanest: the
// plans between which ME and throughput choose.
class MemoryAwareBalancer {
public:
    // Table entries for a shape: stage s's first and last layers lie in a band of
    // layers - pp + 1 (the other stages keep a layer each).
    static int64_t entries(int pp, int layers) { return int64_t{pp} * (layers - pp + 1) * (layers - pp + 1) * 2; }

    MemoryAwareBalancer(const hybrid::Estimator& estimator, const Shape& shape, const hybrid::ShapeTopology& topology, int layers)
        : shape_(shape), layers_(layers), band_(layers - shape.pp + 1), loads_(static_cast<size_t>(entries(shape.pp, layers))) {
        for (int s = 0; s < shape.pp; ++s)
            for (int a = s; a <= lastLayer(s); ++a)
                for (int b = a; b <= lastLayer(s); ++b)
                    for (int r = 0; r < (b > a ? 2 : 1); ++r) load(s, a, b, r) = estimator.stageLoad(shape, s, {a, b}, r != 0, topology);
    }

    // Up to `limit` plans along the front for each tie-break, from the fastest under `cap`
    // to leaner ones.
    std::vector<Candidate> front(int64_t cap, int limit) const {
        std::vector<Candidate> out;
        for (const bool lean : {false, true}) {
            int64_t under = cap;
            for (int i = 0; i < limit; ++i) {
                int64_t peak = 0;
                std::optional<Candidate> c = fastestUnder(under, lean, peak);
                if (!c) break;
                out.push_back(std::move(*c));
                under = peak - 1;
            }
        }
        return out;
    }

private:
    struct Cell {
        double slowest_s = std::numeric_limits<double>::infinity();  // longest path through a stage
        double work_s = 0;                                            // summed over the stages
        int64_t peak = 0;
        int first = -1;     // of the last stage
        char recompute = 0;
        bool reached() const { return first >= 0; }
        bool betterThan(const Cell& o, bool lean) const {
            if (slowest_s != o.slowest_s) return slowest_s < o.slowest_s;
            if (lean) return peak != o.peak ? peak < o.peak : work_s < o.work_s;
            return work_s != o.work_s ? work_s < o.work_s : peak < o.peak;
        }
    };

    int lastLayer(int s) const { return layers_ - (shape_.pp - s); }  // later stages keep a layer each
    hybrid::Estimator::StageLoad& load(int s, int a, int b, int r) { return loads_[index(s, a, b, r)]; }
    const hybrid::Estimator::StageLoad& load(int s, int a, int b, int r) const { return loads_[index(s, a, b, r)]; }
    size_t index(int s, int a, int b, int r) const {
        const size_t w = static_cast<size_t>(band_);
        return ((static_cast<size_t>(s) * w + static_cast<size_t>(a - s)) * w + static_cast<size_t>(b - s)) * 2 + static_cast<size_t>(r);
    }

    std::optional<Candidate> fastestUnder(int64_t cap, bool lean, int64_t& peak) const {
        const size_t n = static_cast<size_t>(layers_);
        std::vector<Cell> cells(static_cast<size_t>(shape_.pp) * n);  // [stage][its last layer]
        auto cell = [&](int s, int b) -> Cell& { return cells[static_cast<size_t>(s) * n + static_cast<size_t>(b)]; };
        for (int s = 0; s < shape_.pp; ++s)
            for (int b = s; b <= lastLayer(s); ++b)
                for (int a = s; a <= (s == 0 ? 0 : b); ++a) {
                    if (s > 0 && !cell(s - 1, a - 1).reached()) continue;
                    for (int r = 0; r < (b > a ? 2 : 1); ++r) {
                        const auto& l = load(s, a, b, r);
                        if (l.peak_bytes > cap) continue;
                        const Cell before = s == 0 ? Cell{0, 0, 0, 0, 0} : cell(s - 1, a - 1);
                        const Cell c{std::max(before.slowest_s, l.path_s), before.work_s + l.work_s, std::max(before.peak, l.peak_bytes), a,
                                     static_cast<char>(r)};
                        if (c.betterThan(cell(s, b), lean)) cell(s, b) = c;
                    }
                }
        const Cell& last = cell(shape_.pp - 1, layers_ - 1);
        if (!last.reached()) return std::nullopt;
        peak = last.peak;
        Candidate c{shape_, std::vector<StageRange>(static_cast<size_t>(shape_.pp)), std::vector<char>(static_cast<size_t>(shape_.pp), 0)};
        for (int s = shape_.pp - 1, b = layers_ - 1; s >= 0; --s) {
            const Cell& at = cell(s, b);
            c.stages[static_cast<size_t>(s)] = {at.first, b};
            c.recompute[static_cast<size_t>(s)] = at.recompute;
            b = at.first - 1;
        }
        return c;
    }

    Shape shape_;
    int layers_;
    int band_;
    std::vector<hybrid::Estimator::StageLoad> loads_;  // [stage][first - stage][last - stage][recompute]
};

class AdaptiveSearch {
public:
    AdaptiveSearch(const Problem& problem, PlanContext& context)
        : problem_(problem), context_(context), found_(problem), shapes_(hybrid::searchShapes(problem)),
          usable_memory_(hybrid::usableMemory(problem)) {}

    PlannerResult run() {
        offerBaselines();
        const bool floor = problem_.objective == Objective::MemoryEfficiencyWithThroughputFloor;
        if (floor) {
            search({Objective::Throughput, 0}, 0.0, 0.5);
            log_.push_back("best throughput " + number(found_.bestThroughput()) + " samples/s; floor " +
                           number(hybrid::throughputFloor(problem_) * found_.bestThroughput()));
            search({Objective::MemoryEfficiency, hybrid::throughputFloor(problem_) * found_.bestThroughput()}, 0.5, 1.0);
        } else {
            search({problem_.objective, 0}, 0.0, 1.0);
        }
        if (!context_.cancelled() && found_.best() == nullptr && simulated_.empty()) simulateFallback();
        offerSelectiveRecomputation();
        offerPerStageDegrees();
        log_.push_back("estimated " + std::to_string(estimated_) + " candidates over " + std::to_string(shapes_.size()) +
                       " (tp, pp, dp, m, ZeRO stage) shapes; pruned " + std::to_string(pruned_) + " of the " + std::to_string(pooled_) +
                       " seeded and refined ones without simulating them; simulated " + std::to_string(simulated_.size()) + " (" +
                       std::to_string(instructions_) + " instructions)");
        logWinnersPerDepth();
        context_.progress(1.0, "done");
        PlannerResult result = hybrid::searchOutcome(HippiePlanner::kName, problem_, found_, context_, log_, stopReason(context_));
        result.convergence = convergence_;
        return result;
    }

private:
    // The search seeds from the baselines' partitions; so that it never ends below a baseline
    // on its own objective, the baselines' own plans (each with its micro-batch sweep under
    // the same objective) join the incumbents before it starts. They cost a few simulations.
    // Every hybrid baseline is offered: pipedream's plan may replicate stages unevenly
    // (Plan::stage_replicas), which the search itself does not build, and gpipe-balance's runs
    // GPipe; the incumbents hold any plan, and the front's later variants (selective
    // recomputation) keep its replication and schedule.
    void offerBaselines() {
        DataParallelPlanner data_parallel;
        UniformPlanner uniform;
        EqualParamsPlanner equal_params;
        PipeDreamPlanner pipedream;
        GPipeBalancePlanner gpipe_balance;
        ZeroPlanner zero;
        MegatronPlanner megatron;
        DeepSpeed3DPlanner deepspeed;
        for (Planner* baseline : std::initializer_list<Planner*>{&data_parallel, &uniform, &equal_params, &pipedream, &gpipe_balance,
                                                                 &zero, &megatron, &deepspeed}) {
            if (context_.shouldStop()) return;
            PlanContext own(problem_.time_budget_s);
            own.setOnlyFitsMatter(true);  // a baseline's log and its reason for finding nothing are not read
            // The baseline reports to its own context (its progress is not ours); a cancel or
            // the end of our budget is relayed to it so that it stops as promptly as we do.
            std::jthread relay([&](std::stop_token stop) {
                while (!stop.stop_requested()) {
                    if (context_.shouldStop()) {
                        own.cancel();
                        return;
                    }
                    std::this_thread::sleep_for(kCancelPollInterval);
                }
            });
            const PlannerResult r = baseline->plan(problem_, own);
            relay.request_stop();
            if (!r.feasible) continue;
            Plan plan = r.plan;
            plan.planner = HippiePlanner::kName;
            found_.offer(plan, r.metrics);
            log_.push_back("baseline " + baseline->name() + " offers " + describePlan(plan) + ": " +
                           number(r.metrics.throughput_samples_per_s) + " samples/s, ME " + number(r.metrics.memory_efficiency));
        }
    }

    // ---- One search for a goal -----------------------------------------------------------

    void search(const Goal& goal, double progress_from, double progress_to) {
        const double span = progress_to - progress_from;
        best_estimate_by_depth_.clear();  // winners are logged for the last goal only
        std::vector<Ranked> pool = seedEveryShape(goal, progress_from, span * 0.3);
        context_.progress(progress_from + span * 0.3, "balancing stages against memory");
        balanceBestShapes(pool, goal);
        refineBestShapes(pool, goal);
        context_.progress(progress_from + span * 0.5, "simulating the best candidates");
        const int64_t budget = kInstructionBudget / (problem_.objective == Objective::MemoryEfficiencyWithThroughputFloor ? 2 : 1);
        const int64_t budget_end = instructions_ + budget;
        int simulations = 0;
        for (const Ranked& r : pool) {
            if (simulations >= kSimulatedFromRanking || context_.shouldStop()) break;
            if (simulations >= kAlwaysSimulated && instructions_ + hybrid::simulationCost(r.candidate.shape) > budget_end) continue;
            if (!simulated_.count(hybrid::candidateKey(r.candidate))) ++simulations;
            simulate(r.candidate);
        }
        for (const Ranked& r : pool) pruned_ += simulated_.count(hybrid::candidateKey(r.candidate)) ? 0 : 1;
        context_.progress(progress_from + span * 0.75, "refining the best plan on the simulator");
        climbOnSimulator(goal, budget_end, kSimulationsPerPhase - simulations);
    }

    // ---- Seeds ---------------------------------------------------------------------------

    // Per (pp, dp): every micro-batch count with equal layers per stage, then every seed
    // partition for the few counts that rank best (more micro-batches shrink the bubble and
    // the activations, so few counts compete).
    std::vector<Ranked> seedEveryShape(const Goal& goal, double progress_from, double progress_span) {
        std::vector<Ranked> pool;
        std::unordered_set<std::string> seen;
        auto keep = [&](Ranked r) {
            if (seen.insert(hybrid::candidateKey(r.candidate)).second) pool.push_back(std::move(r));
        };
        for (size_t first = 0, last = 0; first < shapes_.size() && !context_.shouldStop(); first = last) {
            while (last < shapes_.size() && shapes_[last].pp == shapes_[first].pp && shapes_[last].dp == shapes_[first].dp &&
                   shapes_[last].tp == shapes_[first].tp)
                ++last;
            context_.progress(progress_from + progress_span * static_cast<double>(first) / static_cast<double>(shapes_.size()),
                              "estimating pp " + std::to_string(shapes_[first].pp) + " x dp " + std::to_string(shapes_[first].dp) +
                                  (shapes_[first].tp > 1 ? " x tp " + std::to_string(shapes_[first].tp) : std::string()));
            std::vector<Ranked> uniform;
            for (size_t i = first; i < last; ++i)
                uniform.push_back(seeded(shapes_[i], uniformPartition(problem_.graph.layerCount(), shapes_[i].pp), goal));
            sortByRank(uniform);
            for (size_t i = 0; i < uniform.size(); ++i) {
                const Shape shape = uniform[i].candidate.shape;
                if (static_cast<int>(i) < kSeededMicroBatchCounts)
                    for (const auto& stages : seedPartitions(shape)) keep(seeded(shape, stages, goal));
                keep(std::move(uniform[i]));
            }
        }
        sortByRank(pool);
        pooled_ += static_cast<int64_t>(pool.size());
        return pool;
    }

    Ranked seeded(const Shape& shape, const std::vector<StageRange>& stages, const Goal& goal) {
        return withRecomputation(Candidate{shape, stages, std::vector<char>(stages.size(), 0)}, goal);
    }

    // The baselines' partitions for this depth: equal layers (uniform), equal parameters,
    // min-max compute time (PipeDream's balanced stages), torchgpipe's block partition by
    // time and by size at this micro-batch size.
    std::vector<std::vector<StageRange>> seedPartitions(const Shape& shape) {
        auto& fixed_seeds = seeds_by_depth_[shape.pp];
        if (fixed_seeds.empty()) {
            const LayerCosts& costs = estimator(1).costs();
            const std::vector<double> time = costs.computePerLayer(1.0), params = costs.paramBytesPerLayer();
            fixed_seeds = {uniformPartition(costs.layers(), shape.pp), minMaxPartition(params, shape.pp), minMaxPartition(time, shape.pp),
                           blockPartition(time, shape.pp)};
        }
        auto out = fixed_seeds;
        out.push_back(bySize(shape));
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return lastLayers(a) < lastLayers(b); });
        auto same = [](const auto& a, const auto& b) { return lastLayers(a) == lastLayers(b); };
        out.erase(std::unique(out.begin(), out.end(), same), out.end());
        return out;
    }

    std::vector<StageRange> bySize(const Shape& shape) {
        const double samples = hybrid::microBatchSize(problem_, shape);
        auto& cached = seeds_by_size_[{shape.pp, samples}];
        if (cached.empty()) {
            const LayerCosts& costs = estimator(1).costs();
            std::vector<double> sizes;
            for (int l = 0; l < costs.layers(); ++l)
                sizes.push_back(static_cast<double>(costs.activationBytes(l, samples) + costs.layerStateBytes(l)));
            cached = blockPartition(sizes, shape.pp);
        }
        return cached;
    }

    static std::vector<int> lastLayers(const std::vector<StageRange>& stages) {
        std::vector<int> out;
        for (const StageRange& s : stages) out.push_back(s.last_layer);
        return out;
    }

    // Recomputation for a seed: first every stage over memory, then the stages of the highest
    // memory levels, if that raises the estimated objective (ME weighs the memory saved
    // against the time): enough to rank the shape; balancing then chooses per stage in earnest.
    Ranked withRecomputation(Candidate c, const Goal& goal) {
        Ranked r = ranked(std::move(c), goal);
        if (!r.estimate.fits) {
            Candidate all_over = r.candidate;
            const auto& capacity = topology(r.candidate.shape).capacity_bytes;
            for (size_t s = 0; s < all_over.stages.size(); ++s)
                if (r.estimate.stage_peak_bytes[s] > capacity[s] && hybrid::canRecompute(all_over.stages[s])) all_over.recompute[s] = 1;
            if (all_over != r.candidate) r = ranked(std::move(all_over), goal);
        }
        Ranked best = r;
        for (Candidate& n : recomputeLevels(r.candidate, r.estimate.stage_peak_bytes, kRecomputeLevels)) {
            Ranked level = ranked(std::move(n), goal);
            if (better(level.rank, best.rank)) best = std::move(level);
        }
        return best;
    }

    // ---- Memory-aware balancing on the estimate ------------------------------------------

    // The Pareto fronts of the best-ranked shapes, as many as the balancing budget allows.
    void balanceBestShapes(std::vector<Ranked>& pool, const Goal& goal) {
        std::vector<Ranked> balanced;
        std::vector<Shape> done;
        int64_t cells = 0;
        const int64_t layers = problem_.graph.layerCount();
        for (const Ranked& r : pool) {
            const Shape& shape = r.candidate.shape;
            if (context_.shouldStop() || (static_cast<int>(done.size()) >= kClimbStarts && cells > kBalancingCells)) break;
            if (std::find(done.begin(), done.end(), shape) != done.end()) continue;
            done.push_back(shape);
            const int64_t entries = MemoryAwareBalancer::entries(shape.pp, static_cast<int>(layers));
            if (entries > kBalancerEntries) continue;
            cells += entries * kFrontSteps;
            // A shape's front does not depend on the goal: balanced once, ranked per goal.
            auto [front, added] = fronts_.try_emplace({shape.pp, shape.dp, shape.m, shape.zero, shape.tp});
            if (added) {
                const MemoryAwareBalancer balancer(estimator(shape.tp), shape, topology(shape), problem_.graph.layerCount());
                front->second = balancer.front(minCapacity(topology(shape)), kFrontSteps);
            }
            for (const Candidate& c : front->second) balanced.push_back(ranked(c, goal));
        }
        addToPool(pool, std::move(balanced));
    }

    void addToPool(std::vector<Ranked>& pool, std::vector<Ranked> more) {
        std::unordered_set<std::string> seen;
        for (const Ranked& r : pool) seen.insert(hybrid::candidateKey(r.candidate));
        for (Ranked& r : more)
            if (seen.insert(hybrid::candidateKey(r.candidate)).second) {
                pool.push_back(std::move(r));
                ++pooled_;
            }
        sortByRank(pool);
    }

    static int64_t minCapacity(const hybrid::ShapeTopology& t) {
        return *std::min_element(t.capacity_bytes.begin(), t.capacity_bytes.end());
    }

    void refineBestShapes(std::vector<Ranked>& pool, const Goal& goal) {
        std::vector<Ranked> refined;
        std::vector<Shape> started;
        for (const Ranked& r : pool) {
            if (static_cast<int>(started.size()) >= kClimbStarts || context_.shouldStop()) break;
            if (std::find(started.begin(), started.end(), r.candidate.shape) != started.end()) continue;
            started.push_back(r.candidate.shape);
            refined.push_back(climbOnEstimate(r, goal));
        }
        addToPool(pool, std::move(refined));
    }

    Ranked climbOnEstimate(Ranked current, const Goal& goal) {
        while (!context_.shouldStop()) {
            Ranked best = current;
            for (Candidate& n : neighbours(current.candidate, current.estimate.stage_peak_bytes, {})) {
                Ranked r = ranked(std::move(n), goal);
                if (better(r.rank, best.rank)) best = std::move(r);
            }
            if (!better(best.rank, current.rank)) break;
            current = std::move(best);
        }
        return current;
    }

    // ---- Simulation ----------------------------------------------------------------------

    // Moves to the first neighbour (in the estimate's order) the simulator finds better,
    // from the best plan simulated so far, until none is or the budget is spent.
    void climbOnSimulator(const Goal& goal, int64_t budget_end, int simulations_left) {
        const std::string* start = bestSimulated(goal);
        if (!start) return;
        Ranked current = ranked(simulated_.at(*start).candidate, goal);
        double current_value = simulatedRank(simulated_.at(*start).metrics, goal);
        const std::vector<int> counts = microBatchCounts(problem_, current.candidate.shape.dp);
        while (simulations_left > 0 && !context_.shouldStop()) {
            std::vector<Ranked> next;
            for (Candidate& n : neighbours(current.candidate, current.estimate.stage_peak_bytes, counts))
                next.push_back(ranked(std::move(n), goal));
            sortByRank(next);
            bool moved = false;
            for (Ranked& n : next) {
                const bool known = simulated_.count(hybrid::candidateKey(n.candidate)) > 0;
                if (!known && (simulations_left <= 0 || instructions_ + hybrid::simulationCost(n.candidate.shape) > budget_end)) continue;
                if (context_.shouldStop()) return;
                simulations_left -= known ? 0 : 1;
                const double value = simulatedRank(simulate(n.candidate), goal);
                if (better(value, current_value)) {
                    current = std::move(n);
                    current_value = value;
                    moved = true;
                    break;
                }
            }
            if (!moved) return;
        }
    }

    const TraceMetrics& simulate(const Candidate& c) {
        const std::string key = hybrid::candidateKey(c);
        if (auto it = simulated_.find(key); it != simulated_.end()) return it->second.metrics;
        const Plan plan = hybrid::candidatePlan(problem_, HippiePlanner::kName, c);
        const TraceMetrics metrics = evaluateCandidate(problem_, plan);
        instructions_ += hybrid::simulationCost(c.shape);
        found_.offer(plan, metrics);
        if (const hybrid::Incumbents::Entry* best_plan = found_.best()) {
            const double score = found_.score(best_plan->metrics);
            if (convergence_.empty() || score != convergence_.back()) convergence_.push_back(score);
        }
        auto& best = best_simulated_by_depth_[c.shape.pp];
        if (best.empty() || found_.score(metrics) > found_.score(simulated_.at(best).metrics)) best = key;
        return simulated_.emplace(key, Simulated{c, metrics}).first->second.metrics;
    }

    const std::string* bestSimulated(const Goal& goal) const {
        const std::string* best = nullptr;
        double best_value = 0;
        for (const auto& [key, s] : simulated_) {
            const double v = simulatedRank(s.metrics, goal);
            if (!best || better(v, best_value) || (v == best_value && key < *best)) {
                best = &key;
                best_value = v;
            }
        }
        return best;
    }

    double simulatedRank(const TraceMetrics& m, const Goal& goal) const {
        const double overflow = static_cast<double>(m.max_peak_memory_bytes) / static_cast<double>(std::max<int64_t>(usable_memory_, 1));
        return hybrid::rankOf(m.fits_memory, overflow, m.throughput_samples_per_s, m.memory_efficiency, goal.objective,
                              goal.min_throughput);
    }

    // Selective recomputation (the attention cores' scores and softmax recomputed in backward,
    // Plan::selective_recompute) costs a few percent of a transformer's compute for the
    // a s^2 b-sized part of its activations. The estimate does not model it: the plans on the
    // incumbents' front (a handful) are simulated once more with it, and kept if they are
    // better, in two ways:
    // - instead of recomputing whole layers (Korthikanti et al.'s case): the cores alone cost
    //   far less compute, and a plan that needed full recomputation may fit with them, so
    //   every objective tries it;
    // - beside keeping every activation: it only adds compute and saves memory, so a plan that
    //   fits runs no faster with it; the throughput objective skips it, and under me-floor only
    //   plans at or above the floor (a nonzero score) can bring a twin that counts.
    void offerSelectiveRecomputation() {
        if (context_.shouldStop() || attentionCores(problem_.graph).empty()) return;
        std::vector<Plan> twins;
        int instead = 0;
        for (const hybrid::Incumbents::Entry& e : found_.front()) {
            if (e.plan.selective_recompute) continue;
            if (!e.plan.recompute_layers.empty()) {
                twins.push_back(e.plan);
                twins.back().recompute_layers.clear();
                twins.back().selective_recompute = true;
                ++instead;
            }
            if (problem_.objective != Objective::Throughput && static_cast<int>(e.plan.recompute_layers.size()) < problem_.graph.layerCount() &&
                found_.score(e.metrics) > 0) {
                twins.push_back(e.plan);
                twins.back().selective_recompute = true;
            }
        }
        // Two entries of the front can bring the same twin (a plan recomputing whole layers and
        // the same plan keeping every activation), or one the front holds: each is simulated once.
        std::set<std::string> tried;
        for (const hybrid::Incumbents::Entry& e : found_.front())
            if (e.plan.selective_recompute) tried.insert(planToJson(e.plan).dump());
        int kept = 0;
        for (const Plan& plan : twins) {
            if (context_.shouldStop()) break;
            if (!tried.insert(planToJson(plan).dump()).second) continue;
            const TraceMetrics metrics = evaluate(problem_, plan);
            kept += found_.offer(plan, metrics) ? 1 : 0;
        }
        log_.push_back("selective recomputation tried on " + std::to_string(twins.size()) + " plans of the front (" + std::to_string(instead) +
                       " instead of whole layers): " + std::to_string(kept) + " joined it");
    }

    // Per-stage tensor-parallel degrees: a plan of the front that leaves devices idle (a
    // pipeline depth that does not divide the cluster) may give them to some of its stages,
    // cut again so that a stage of more ranks takes more of the work
    // (hybrid::perStageDegreeVariants). The estimate does not model per-stage degrees: the
    // variants of the front's plans are simulated and kept if they are better.
    void offerPerStageDegrees() {
        if (context_.shouldStop()) return;
        std::vector<Plan> variants;
        for (const hybrid::Incumbents::Entry& e : found_.front())
            for (Plan& v : hybrid::perStageDegreeVariants(problem_, e.plan)) variants.push_back(std::move(v));
        if (variants.empty()) return;
        int kept = 0;
        for (const Plan& plan : variants) {
            if (context_.shouldStop()) break;
            kept += found_.offer(plan, evaluate(problem_, plan)) ? 1 : 0;
        }
        log_.push_back("per-stage tensor-parallel degrees tried on the idle devices of the front's plans: " +
                       std::to_string(variants.size()) + " variants, " + std::to_string(kept) + " joined the front");
    }

    // Out of time before anything was simulated: the best estimate is still worth a plan.
    void simulateFallback() {
        Ranked best;
        bool any = false;
        for (const auto& [pp, r] : best_estimate_by_depth_)
            if (!any || r.rank > best.rank) {
                best = r;
                any = true;
            }
        if (any) simulate(best.candidate);
    }

    // ---- Estimates -----------------------------------------------------------------------

    // Estimates are memoised by candidate: the two goals of me-floor, the seeds, the fronts
    // and the climbs meet the same candidates again, and only the rank depends on the goal.
    Ranked ranked(Candidate c, const Goal& goal) {
        auto [known, added] = estimates_.try_emplace(hybrid::candidateKey(c));
        if (added) {
            // A micro-batch no device could hold (a global batch of 2^30 in one micro-batch) is
            // over memory: its sizes would pass int64 in the estimate.
            if (microBatchBeyondAnyMemory(problem_.graph, hybrid::microBatchSize(problem_, c.shape)))
                known->second = beyondAnyMemory(c);
            else
                known->second = estimator(c.shape.tp).estimate(c, topology(c.shape));
            ++estimated_;
        }
        Estimate e = known->second;
        const double rank = hybrid::estimateRank(e, goal.objective, goal.min_throughput);
        Ranked r{std::move(c), std::move(e), rank};
        auto it = best_estimate_by_depth_.find(r.candidate.shape.pp);
        if (it == best_estimate_by_depth_.end() || r.rank > it->second.rank) best_estimate_by_depth_[r.candidate.shape.pp] = r;
        return r;
    }

    static Estimate beyondAnyMemory(const Candidate& c) {
        Estimate e;
        e.stage_peak_bytes.assign(c.stages.size(), std::numeric_limits<int64_t>::max());
        e.peak_bytes = std::numeric_limits<int64_t>::max();
        e.overflow = std::numeric_limits<double>::max();
        return e;
    }

    // The device map of a (pp, dp, tp) shape, from its uniform partition: the estimate's links.
    const hybrid::ShapeTopology& topology(const Shape& shape) {
        auto [it, added] = topologies_.try_emplace({shape.pp, shape.dp, shape.tp});
        if (added) {
            Plan plan = basePlan(problem_, HippiePlanner::kName);
            plan.stages = uniformPartition(problem_.graph.layerCount(), shape.pp);
            plan.dp = shape.dp;
            plan.tp = shape.tp;
            plan.sequence_parallel = shape.tp > 1;
            it->second = hybrid::shapeTopology(problem_, mapDevices(problem_, plan), shape.tp);
        }
        return it->second;
    }

    // The estimate of one tensor-parallel rank's costs, one per degree.
    const hybrid::Estimator& estimator(int tp) {
        auto& e = estimators_[tp];
        if (!e) e = std::make_unique<hybrid::Estimator>(problem_, tp);
        return *e;
    }

    static void sortByRank(std::vector<Ranked>& v) {
        std::stable_sort(v.begin(), v.end(), [](const Ranked& a, const Ranked& b) { return a.rank > b.rank; });
    }

    void logWinnersPerDepth() {
        for (const auto& [pp, r] : best_estimate_by_depth_) {
            std::string line = "pp " + std::to_string(pp) + ": best estimate " + hybrid::describe(r.candidate) + " (" +
                               (r.estimate.fits ? "fits" : "over memory") + ", ~" + number(r.estimate.throughput) +
                               " samples/s, ~" + gib(r.estimate.peak_bytes) + ")";
            if (auto it = best_simulated_by_depth_.find(pp); it != best_simulated_by_depth_.end()) {
                const Simulated& s = simulated_.at(it->second);
                line += "; best simulated " + hybrid::describe(s.candidate) + ": " + number(s.metrics.throughput_samples_per_s) +
                        " samples/s, peak " + gib(s.metrics.max_peak_memory_bytes) + (s.metrics.fits_memory ? "" : " (over memory)") +
                        ", ME " + number(s.metrics.memory_efficiency);
            }
            log_.push_back(line);
        }
    }

    struct Simulated {
        Candidate candidate;
        TraceMetrics metrics;
    };

    const Problem& problem_;
    PlanContext& context_;
    std::map<int, std::unique_ptr<hybrid::Estimator>> estimators_;  // by tensor-parallel degree
    hybrid::Incumbents found_;
    std::vector<Shape> shapes_;
    int64_t usable_memory_;
    std::map<std::tuple<int, int, int>, hybrid::ShapeTopology> topologies_;  // by (pp, dp, tp)
    std::map<int, std::vector<std::vector<StageRange>>> seeds_by_depth_;
    std::map<std::pair<int, double>, std::vector<StageRange>> seeds_by_size_;
    std::unordered_map<std::string, Simulated> simulated_;
    std::unordered_map<std::string, Estimate> estimates_;  // by candidateKey
    std::map<std::tuple<int, int, int, int, int>, std::vector<Candidate>> fronts_;  // balanced, by shape
    std::map<int, Ranked> best_estimate_by_depth_;
    std::map<int, std::string> best_simulated_by_depth_;
    int64_t estimated_ = 0, pooled_ = 0, pruned_ = 0, instructions_ = 0;
    std::vector<std::string> log_;
    std::vector<double> convergence_;  // the best objective found, after each simulation that changed it
};

}  // namespace

PlannerResult HippiePlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    return AdaptiveSearch(problem, context).run();
}

}  // namespace hippie
