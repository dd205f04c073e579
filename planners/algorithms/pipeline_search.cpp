#include "planners/algorithms/pipeline_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planners/algorithms/device_mapping.h"
#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/layer_costs.h"
#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"

namespace hippie {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
// Micro-batches per pipeline stage by default: with m = 4p the fill-drain bubble
// (p-1)/(m+p-1) stays below 20% (GPipe, Huang et al. 2019, found m >= 4p enough).
constexpr int kMicroBatchesPerStage = 4;

// The interleaved schedule runs micro-batches in rounds of the pipeline depth.
bool scheduleTakes(const Plan& plan, int pp, int m) { return plan.schedule != ScheduleKind::Interleaved || m % pp == 0; }

std::string fixed(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

}  // namespace

std::vector<int> divisorsOf(int n) {
    // Pairs d, n / d up to the square root: a global batch of 2^31 - 1 took 2^31 steps, and the
    // counter overflowed into a division by zero (SIGFPE) on its way past INT_MAX.
    std::vector<int> low, high;
    for (int64_t d = 1; d * d <= n; ++d) {
        if (n % d != 0) continue;
        low.push_back(static_cast<int>(d));
        if (d * d != n) high.push_back(static_cast<int>(n / d));
    }
    low.insert(low.end(), high.rbegin(), high.rend());
    return low;
}

int largestDivisorAtMost(int n, int cap) {
    for (int d = std::min(n, cap); d > 1; --d)
        if (n % d == 0) return d;
    return 1;
}

std::vector<int> microBatchCounts(const Problem& problem, int dp) {
    std::vector<int> out;
    if (dp < 1 || problem.global_batch % dp != 0) return out;
    const int per_replica = problem.global_batch / dp;
    // No more than a plan may hold (kMaxMicroBatches): a large prime batch would otherwise offer
    // a plan of one sample per micro-batch, billions of them.
    for (int m : divisorsOf(per_replica))
        if (m <= kMaxMicroBatches && per_replica / m >= problem.graph.min_micro_batch) out.push_back(m);
    return out;
}

int largestTrainableDp(const Problem& problem, int cap) {
    return largestDivisorAtMost(problem.global_batch, std::min(cap, problem.global_batch / std::max(1, problem.graph.min_micro_batch)));
}

std::vector<PipelineShape> pipelineShapes(const Problem& problem) {
    const int devices = problem.cluster.deviceCount(), layers = problem.graph.layerCount();
    std::vector<PipelineShape> out;
    for (int pp : divisorsOf(devices))
        if (pp <= layers) out.push_back({pp, largestTrainableDp(problem, devices / pp)});
    return out;
}

int defaultMicroBatches(int pp, int per_replica_batch) { return largestDivisorAtMost(per_replica_batch, kMicroBatchesPerStage * pp); }

std::string gib(int64_t bytes) { return fixed(static_cast<double>(bytes) / kBytesPerGiB, 1) + " GiB"; }

std::string describePlan(const Plan& p) {
    std::string stages;
    for (const StageRange& s : p.stages)
        stages += (stages.empty() ? "" : " | ") + std::to_string(s.first_layer) + "-" + std::to_string(s.last_layer);
    return "pp " + std::to_string(p.pipelineDepth()) + " x dp " + p.dpText() +
           (p.tp > 1 ? " x tp " + std::to_string(p.tp) + (p.sequence_parallel ? " sp" : "") : std::string()) +
           (p.zero_stage > 0 ? " z" + std::to_string(p.zero_stage) : std::string()) + ", m " + std::to_string(p.micro_batches) +
           ", " + toString(p.schedule) + (p.virtual_stages > 1 ? " x" + std::to_string(p.virtual_stages) : std::string()) +
           ", stages " + stages;
}

SearchLog::SearchLog(const Problem& problem) : capacity_(smallestCapacityBytes(problem)), min_micro_batch_(problem.graph.min_micro_batch) {}

void SearchLog::tried(const Plan& plan, const TraceMetrics& m) {
    if (m.peak_is_lower_bound) {
        const std::optional<Plan> probe = memoryProbePlan(plan);
        lines_.push_back(describePlan(plan) + ": peak at least " + gib(m.max_peak_memory_bytes) + " does not fit (only its first " +
                         std::to_string(probe ? probe->micro_batches : plan.micro_batches) + " micro-batches simulated)");
    }
    else
        lines_.push_back(describePlan(plan) + ": peak " + gib(m.max_peak_memory_bytes) + (m.fits_memory ? " fits" : " does not fit") +
                         ", " + fixed(m.throughput_samples_per_s, 1) + " samples/s, ME " + fixed(m.memory_efficiency, 2));
    const double samples = plan.microBatchSize();
    if (smallest_micro_batch_ < 0 || samples < smallest_micro_batch_) smallest_micro_batch_ = samples;
    if (!m.fits_memory && (least_peak_ < 0 || m.max_peak_memory_bytes < least_peak_)) {
        least_peak_ = m.max_peak_memory_bytes;
        least_peak_lower_bound_ = m.peak_is_lower_bound;
        least_peak_plan_ = describePlan(plan);
    }
}

void SearchLog::exceeds(const Plan& plan, int64_t floor, int stage) {
    lines_.push_back(describePlan(plan) + ": stage " + std::to_string(stage) + " needs at least " + gib(floor) +
                     " (model states and every micro-batch's stashed inputs before the first backward): does not fit, not simulated");
}

std::string SearchLog::smallestMicroBatch() const {
    if (smallest_micro_batch_ < 0 || smallest_micro_batch_ <= 1) return "one sample per micro-batch";
    return "micro-batches of " + fixed(smallest_micro_batch_, 0) + " samples (the smallest tried; a plan holds at most " +
           std::to_string(kMaxMicroBatches) + " micro-batches and the model's smallest is " +
           std::to_string(min_micro_batch_) + (min_micro_batch_ == 1 ? " sample)" : " samples)");
}

std::string SearchLog::noFitReason(const std::string& what) const {
    std::string r = what;
    if (least_peak_ >= 0)
        r += "; the least memory a tried plan needs is " + std::string(least_peak_lower_bound_ ? "at least " : "") + gib(least_peak_) +
             " per device (" + least_peak_plan_ + ") but a device has " + gib(capacity_) + " available";
    else
        r += "; a device has " + gib(capacity_) + " available";
    return r;
}

// The argument for the floor is in the header.
std::optional<std::vector<int64_t>> gpipeStashFloors(const Problem& problem, const Plan& plan, const CostModel& cost) {
    if (plan.schedule != ScheduleKind::GPipe || plan.isPlacement() || plan.tp > 1 || plan.perStageTp() || plan.perStageReplication() ||
        plan.virtual_stages > 1 || plan.zero_stage != 0 || plan.micro_batches < 1 || plan.dp < 1 ||
        plan.device_map.size() != plan.stages.size())
        return std::nullopt;
    for (const Node& node : problem.cluster.nodes)
        if (node.compute_slots > 0) return std::nullopt;
    try {
        checkPlan(plan, problem.graph, problem.cluster.deviceCount());  // a plan the simulation would refuse is left to it
    } catch (const Error&) {
        return std::nullopt;
    }
    const Graph& g = problem.graph;
    const double samples = plan.microBatchSize();
    std::vector<int64_t> floors(plan.stages.size(), 0);
    std::vector<int64_t> smallest_into(g.ops.size());
    std::vector<int> ops;
    for (size_t s = 0; s < plan.stages.size(); ++s) {
        const StageRange& st = plan.stages[s];
        const auto inside = [&](int op) {
            const int layer = g.ops[static_cast<size_t>(op)].layer;
            return layer >= st.first_layer && layer <= st.last_layer;
        };
        ops.clear();
        for (size_t op = 0; op < g.ops.size(); ++op)
            if (inside(static_cast<int>(op))) ops.push_back(static_cast<int>(op));
        // The argument needs the last forward to take time on each of the stage's devices.
        if (!std::all_of(plan.device_map[s].begin(), plan.device_map[s].end(), [&](int d) { return cost.fwdTime(ops, samples, d) > 0; }))
            continue;
        std::fill(smallest_into.begin(), smallest_into.end(), -1);
        for (const Edge& e : g.edges) {
            if (inside(e.src) || !inside(e.dst)) continue;
            int64_t& b = smallest_into[static_cast<size_t>(e.src)];
            b = b < 0 ? e.bytes : std::min(b, e.bytes);
        }
        double received = 0;
        for (int64_t b : smallest_into) received += b > 0 ? static_cast<double>(b) : 0.0;
        const double per_micro_batch = std::max(0.0, received * samples / std::max(g.batch_size, 1) - 1.0);
        const double floor = static_cast<double>(cost.staticMemory(ops, plan.optimizer, plan.dp, plan.bucket_bytes, 0).total()) +
                             static_cast<double>(plan.micro_batches) * per_micro_batch;
        floors[s] = static_cast<int64_t>(std::floor(floor));
    }
    return floors;
}

namespace {

// The first stage whose floor (gpipeStashFloors) passes the usable memory of one of its
// devices, with that floor; nullopt when none does or the floor does not apply.
std::optional<std::pair<int, int64_t>> gpipeStageOverMemory(const Problem& problem, const Plan& plan, const CostModel& cost) {
    const std::optional<std::vector<int64_t>> floors = gpipeStashFloors(problem, plan, cost);
    if (!floors) return std::nullopt;
    for (size_t s = 0; s < floors->size(); ++s)
        for (int d : plan.device_map[s])
            if ((*floors)[s] > capacityBytes(problem, d))
                return std::pair{static_cast<int>(s), (*floors)[s]};
    return std::nullopt;
}

// The highest throughput of a fitting candidate, or of the plans one was chosen from.
double fastestThroughput(const std::vector<Candidate>& candidates) {
    double fastest = 0;
    for (const Candidate& c : candidates)
        if (c.metrics.fits_memory) fastest = std::max({fastest, c.metrics.throughput_samples_per_s, c.fastest_throughput});
    return fastest;
}

}  // namespace

std::optional<size_t> bestIndexByObjective(const Problem& problem, const std::vector<Candidate>& candidates) {
    // The floor is kept against the fastest plan simulated, a chosen candidate's set-aside ones
    // included: a variant's faster plan must not be forgotten because the variant chose another.
    const double best_throughput = fastestThroughput(candidates);
    const double floor = problem.objective == Objective::MemoryEfficiencyWithThroughputFloor
                             ? std::clamp(problem.throughput_floor, 0.0, 1.0) * best_throughput
                             : 0.0;
    std::optional<size_t> best;
    for (size_t i = 0; i < candidates.size(); ++i) {
        const TraceMetrics& m = candidates[i].metrics;
        if (!m.fits_memory || m.throughput_samples_per_s < floor) continue;
        if (!best || objectiveValue(m, problem.objective) > objectiveValue(candidates[*best].metrics, problem.objective)) best = i;
    }
    return best;
}

std::optional<Candidate> bestByObjective(const Problem& problem, const std::vector<Candidate>& candidates) {
    const std::optional<size_t> i = bestIndexByObjective(problem, candidates);
    if (!i) return std::nullopt;
    return chosenAmong(candidates, *i);
}

Candidate chosenAmong(const std::vector<Candidate>& candidates, size_t i) {
    Candidate chosen = candidates.at(i);
    chosen.fastest_throughput = fastestThroughput(candidates);
    return chosen;
}

std::optional<Candidate> sweepMicroBatches(const Problem& problem, Plan plan, int pp, const StagesFn& stages, int first_m,
                                           const PlanContext& context, SearchLog& log) {
    std::vector<Candidate> fits;
    const std::vector<int> counts = microBatchCounts(problem, plan.dp);
    if (!counts.empty()) first_m = std::min(first_m, counts.back());  // the model's smallest micro-batch caps the count
    std::optional<CostModel> cost;  // for GPipe's memory floor
    if (plan.schedule == ScheduleKind::GPipe && context.onlyFitsMatter()) cost.emplace(problem.graph, problem.cluster);
    for (int m : counts) {
        if (m < first_m || !scheduleTakes(plan, pp, m)) continue;
        if (context.shouldStop()) break;
        plan.micro_batches = m;
        plan.stages = stages(pp, plan.microBatchSize());
        plan.device_map = mapDevices(problem, plan);
        if (const auto over = cost ? gpipeStageOverMemory(problem, plan, *cost) : std::nullopt) {
            log.exceeds(plan, over->second, over->first);
            continue;
        }
        const TraceMetrics metrics = evaluateCandidate(problem, plan);
        log.tried(plan, metrics);
        if (metrics.fits_memory) fits.push_back({plan, metrics});
    }
    return bestByObjective(problem, fits);
}

std::optional<Candidate> shallowestFit(const Problem& problem, const Plan& base, const StagesFn& stages,
                                       const PlanContext& context, SearchLog& log) {
    const auto shapes = pipelineShapes(problem);
    const LayerCosts costs(problem);
    const int64_t capacity = smallestCapacityBytes(problem);
    for (size_t i = 0; i < shapes.size() && !context.shouldStop(); ++i) {
        const PipelineShape& s = shapes[i];
        context.progress(static_cast<double>(i) / static_cast<double>(shapes.size()),
                         "trying pp " + std::to_string(s.pp) + " x dp " + std::to_string(s.dp));
        Plan plan = base;
        plan.dp = s.dp;
        // No split of the layers into pp stages fits where the model states alone do not when
        // spread evenly (the fullest stage holds at least the average): every micro-batch count
        // of the shape is skipped unsimulated.
        if (plan.tp == 1 && !plan.perStageTp() &&
            costs.staticBytes(0, problem.graph.layerCount() - 1, s.dp, plan.zero_stage) / s.pp > capacity) {
            log.note("pp " + std::to_string(s.pp) + " x dp " + std::to_string(s.dp) + ": the model states alone, spread over " +
                     std::to_string(s.pp) + " stages, exceed a device's memory");
            continue;
        }
        const int first_m = defaultMicroBatches(s.pp, problem.global_batch / s.dp);
        if (auto found = sweepMicroBatches(problem, plan, s.pp, stages, first_m, context, log)) return found;
    }
    return std::nullopt;
}

std::string stopReason(const PlanContext& context) {
    if (context.cancelled()) return "cancelled";
    if (context.outOfTime()) return "stopped at its time budget";
    return {};
}

PlannerResult searchResult(const std::string& planner, const std::optional<Candidate>& found, const SearchLog& log,
                           const PlanContext& context, const std::string& no_fit) {
    const std::string stopped = stopReason(context);
    PlannerResult r = found ? feasibleResult(planner, found->plan, found->metrics, context)
                            : infeasibleResult(planner, stopped.empty() ? no_fit : stopped + " before a plan that fits memory was found", context);
    if (found) r.fastest_throughput = std::max(found->fastest_throughput, found->metrics.throughput_samples_per_s);
    if (found && !stopped.empty()) r.reason = stopped + "; best plan found so far";
    if (!stopped.empty()) r.notes.push_back(stopped);
    r.log = log.lines();
    context.progress(1.0, found ? "done: " + describePlan(found->plan) : "done: nothing fits");
    return r;
}

void requirePlannable(const Problem& problem) {
    if (problem.graph.ops.empty()) throw Error("the model '" + problem.graph.name + "' has no operators to plan");
    if (problem.cluster.deviceCount() < 1) throw Error("the cluster '" + problem.cluster_name + "' has no devices");
    if (problem.global_batch < 1) throw Error("the global batch must be at least 1, got " + std::to_string(problem.global_batch));
    requireTrainableBatch(problem.graph, problem.global_batch);
}

std::string depthList(const Problem& problem) {
    std::string s;
    for (const PipelineShape& shape : pipelineShapes(problem)) s += (s.empty() ? "" : ", ") + std::to_string(shape.pp);
    return s;
}

std::vector<int> allLayers(const Problem& problem) {
    std::vector<int> out;
    for (int l = 0; l < problem.graph.layerCount(); ++l) out.push_back(l);
    return out;
}

PlannerResult ShallowestPipelinePlanner::plan(const Problem& problem, PlanContext& context) {
    requirePlannable(problem);
    SearchLog log(problem);
    Plan base = basePlan(problem, name());
    base.schedule = schedule();
    const StagesFn rule = stageRule(problem);
    auto found = shallowestFit(problem, base, rule, context, log);
    if (!found && !context.shouldStop()) {
        // What a practitioner turns on next: full activation checkpointing.
        log.note("no depth fits as is: trying again with every layer recomputed in backward (activation checkpointing)");
        base.recompute_layers = allLayers(problem);
        found = shallowestFit(problem, base, rule, context, log);
    }
    return searchResult(name(), found, log, context,
                        log.noFitReason("no pipeline depth fits memory, even recomputing every layer (tried pp " + depthList(problem) +
                                        " with down to " + log.smallestMicroBatch() + ")"));
}

}  // namespace hippie
