#pragma once
// Search pieces the pipeline + data-parallel baselines share: the (pp, dp) shapes a cluster
// allows, the default micro-batch count, "the shallowest pipeline that fits memory", the log
// of what was tried and the packaging of the result.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planners/algorithms/planner.h"

namespace hippie {

class CostModel;

struct Candidate {
    Plan plan;
    TraceMetrics metrics;
    // The highest throughput among the fitting plans this one was chosen from (bestByObjective),
    // itself included; 0 when it was not chosen among others. PlannerResult::fastest_throughput.
    double fastest_throughput = 0;
};

struct PipelineShape {
    int pp = 1;
    int dp = 1;
};

// Divisors of n, ascending.
std::vector<int> divisorsOf(int n);
// The largest divisor of n that is at most cap (1 if cap < 1).
int largestDivisorAtMost(int n, int cap);
// Micro-batch counts of one replica of a dp-way plan, ascending: the divisors m of its batch
// whose micro-batches keep the model's Graph::min_micro_batch samples (BatchNorm over small
// feature maps), so every plan a planner builds from them trains, and at most kMaxMicroBatches
// (the most a plan may hold).
std::vector<int> microBatchCounts(const Problem& problem, int dp);
// The largest data-parallel degree at most cap that divides the global batch and leaves every
// replica at least the model's smallest micro-batch (1 if none does).
int largestTrainableDp(const Problem& problem, int cap);
// Pipeline depths that divide the device count (and do not exceed the layers), shallowest
// first; dp is the largest divisor of the global batch with pp * dp <= devices.
std::vector<PipelineShape> pipelineShapes(const Problem& problem);
// Four micro-batches per stage keep the 1F1B/GPipe bubble (p-1)/(m+p-1) under 20%; capped
// by the per-replica batch (the largest divisor of it not above 4 * pp).
int defaultMicroBatches(int pp, int per_replica_batch);

std::string gib(int64_t bytes);            // "12.3 GiB"
std::string describePlan(const Plan& p);  // "pp 2 x dp 8, m 8, stages 0-12 | 13-25"

// What a search tried, for PlannerResult::log, and the closest miss for an infeasible reason.
class SearchLog {
public:
    explicit SearchLog(const Problem& problem);
    void note(const std::string& line) { lines_.push_back(line); }
    void tried(const Plan& plan, const TraceMetrics& metrics);
    // A plan skipped unsimulated: stage `stage` needs at least `floor` bytes, more than its
    // devices have. Noted only: not a closest miss (its peak is not known).
    void exceeds(const Plan& plan, int64_t floor, int stage);
    // "<what>; the least memory any tried plan needs is X (plan) but a device has Y".
    std::string noFitReason(const std::string& what) const;
    // "one sample per micro-batch", or the fewest samples a tried plan's micro-batch had (a
    // large batch allows no fewer in kMaxMicroBatches micro-batches, nor a BatchNorm model).
    std::string smallestMicroBatch() const;
    int64_t capacityBytes() const { return capacity_; }
    const std::vector<std::string>& lines() const { return lines_; }

private:
    std::vector<std::string> lines_;
    int64_t capacity_ = 0;  // smallest device memory, less the headroom
    int min_micro_batch_ = 1;
    int64_t least_peak_ = -1;
    bool least_peak_lower_bound_ = false;  // only the plan's first micro-batches were simulated
    std::string least_peak_plan_;
    double smallest_micro_batch_ = -1;  // samples
};

// Stage boundaries for a pipeline depth and micro-batch size (samples).
using StagesFn = std::function<std::vector<StageRange>(int pp, double micro_batch_size)>;

// Of the candidates that fit, the best under the problem's objective: the most throughput,
// the most ME, or (me-floor) the most ME among those within the floor of the best
// throughput among them (kept in its fastest_throughput). nullopt when none fits.
std::optional<size_t> bestIndexByObjective(const Problem& problem, const std::vector<Candidate>& candidates);
std::optional<Candidate> bestByObjective(const Problem& problem, const std::vector<Candidate>& candidates);
// candidates[i], chosen among them: its fastest_throughput is theirs (what bestByObjective
// returns, for a caller that has the index already).
Candidate chosenAmong(const std::vector<Candidate>& candidates, size_t i);

// Every micro-batch count from `first_m` upwards (the divisors of the per-replica batch) for
// `plan` (dp, schedule set) with `pp` stages from `stages`, each with its topology-aware
// device map, simulated; the best that fits under the problem's objective (bestByObjective).
// A baseline sweeps its micro-batch count as hippie does. Where only plans that fit matter
// (PlanContext::onlyFitsMatter), a GPipe plan whose model states and stashed stage inputs
// alone pass a device's memory is skipped unsimulated (logged, not in the closest miss).
std::optional<Candidate> sweepMicroBatches(const Problem& problem, Plan plan, int pp, const StagesFn& stages, int first_m,
                                           const PlanContext& context, SearchLog& log);

// A floor under the simulated peak memory of each stage's devices of a GPipe plan, without
// simulating it (bytes, by stage; 0 where it makes no claim), or nullopt for a plan outside
// what the argument covers: GPipe, one tensor-parallel rank, uniform replication, no ZeRO
// (model states whole on each replica), no virtual stages, no host sharing (compute_slots,
// which rescales compute times), and a plan checkPlan takes.
//
// GPipe runs every micro-batch's forward on a device before any backward (fillDrainOrder), and
// the simulator allocates what a forward stashes for backward at its start and frees it when
// that micro-batch's backward ends (memoryCurves; GPipe frees nothing when a send ends). So at
// the start of the last forward a device holds its model states and all m micro-batches'
// stashes, none freed yet: a backward starts after that forward ends, which is later than its
// start where the forward takes time (the stage's forward time by the cost model, as the
// simulator times it, is positive on each of its devices; the floor is 0 for a stage where it
// is not). A stage's stash holds at least each tensor it receives from another stage
// (segmentMemory keeps one per producing op, whatever is recomputed): at least, per producing
// op, the smallest of its edges into the stage. The floor is
//     staticMemory(the stage's ops, dp, bucket bytes, no receive buffer: the simulator adds one)
//   + m x (those bytes at the micro-batch size, less a byte for the simulator's rounding)
// Where it passes a device's usable memory, evaluateCandidate() would find that the plan does
// not fit: sweepMicroBatches() skips such a plan unsimulated where the caller reads only plans
// that fit (PlanContext::onlyFitsMatter; elsewhere the floor, not the simulated peak, would
// stand in an infeasible reason's "least memory a tried plan needs").
std::optional<std::vector<int64_t>> gpipeStashFloors(const Problem& problem, const Plan& plan, const CostModel& cost);

// The shallowest pipeline shape that fits memory with the default micro-batch count or
// more, at its best micro-batch count under the objective. `base` carries the schedule.
std::optional<Candidate> shallowestFit(const Problem& problem, const Plan& base, const StagesFn& stages,
                                       const PlanContext& context, SearchLog& log);

// A feasible result for the candidate, or an infeasible one saying why (`no_fit` when the
// search ended without a fit, or that it was cancelled / ran out of time).
PlannerResult searchResult(const std::string& planner, const std::optional<Candidate>& found, const SearchLog& log,
                           const PlanContext& context, const std::string& no_fit);

// Throws Error for a problem no planner can work on (no operators, no devices, no batch).
void requirePlannable(const Problem& problem);
// The pipeline depths pipelineShapes() tries, "1, 2, 4, 8".
std::string depthList(const Problem& problem);

// Why a search stopped early ("cancelled", "stopped at its time budget"), or empty.
std::string stopReason(const PlanContext& context);

// Every layer of the problem's model, for Plan::recompute_layers.
std::vector<int> allLayers(const Problem& problem);

// A baseline that cuts the model with one rule (StagesFn) and takes the shallowest pipeline
// that fits memory, data-parallel over the remaining devices; only when no depth fits does
// it recompute every layer's activations (full activation checkpointing) and search again.
class ShallowestPipelinePlanner : public Planner {
public:
    PlannerResult plan(const Problem& problem, PlanContext& context) override;

protected:
    virtual ScheduleKind schedule() const = 0;
    // The stage rule for this problem; the returned function may keep references to `problem`.
    virtual StagesFn stageRule(const Problem& problem) const = 0;
};

}  // namespace hippie
