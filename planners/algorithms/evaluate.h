#pragma once
// Shared by every planner: turn a candidate Plan into simulated metrics, compare candidates
// under an objective, and package a PlannerResult.
#include <optional>
#include <string>

#include "planners/algorithms/planner.h"
#include "planners/sim/trace.h"

namespace hippie {

// A Plan with what every plan of this problem shares: model spec, cluster name, global
// batch, optimizer and the planner's name. The caller fills stages/placement and schedule.
Plan basePlan(const Problem& problem, const std::string& planner);

// Micro-batches evaluateCandidate() simulates before it knows a plan of more fits memory.
inline constexpr int kMemoryProbeMicroBatches = 64;

// checkPlan + lower + simulate: the plan's metrics. Throws Error if the plan is malformed for
// this problem.
TraceMetrics evaluate(const Problem& problem, const Plan& plan);
// What a search needs of a candidate: evaluate() when it fits memory; when it does not, maybe
// only a lower bound of its peak. A pipeline plan of more than kMemoryProbeMicroBatches
// micro-batches is first simulated with only that many (rounded down to whole rounds of its
// pipeline depth, two rounds at least) of the same size: more micro-batches of the same size
// never need less memory, so when those do not fit, neither does the plan, and the metrics are
// the probe's with peak_is_lower_bound set and no times. (Past two rounds the 1F1B-like
// schedules' peak stays the same, so for them the bound is the peak; GPipe keeps every
// micro-batch's activations, so its peak grows.) A micro-batch beyond any memory
// (microBatchBeyondAnyMemory) is not simulated at all: peak_is_lower_bound with the largest
// peak. Simulating tens of thousands of micro-batches takes seconds and gigabytes each: a
// global batch of 2^30 made every planner's micro-batch sweep do so, for more than half a
// minute, only to find that nothing fits.
TraceMetrics evaluateCandidate(const Problem& problem, const Plan& plan);
// Whether one micro-batch of `samples` samples needs more than 2^62 bytes (every op's output,
// workspace and bytes moved, and every edge's tensor, added up): no device has that much, and
// the cost model's sizes would pass int64 on the way. No plan or candidate with such a
// micro-batch fits; evaluateCandidate() says so without simulating it.
bool microBatchBeyondAnyMemory(const Graph& graph, double samples);

// The smaller plan evaluateCandidate() simulates first for `plan`, or nullopt when it simulates `plan`
// at once (no more than kMemoryProbeMicroBatches micro-batches, a placement plan, or a batch
// that does not split evenly, for checkPlan to refuse).
std::optional<Plan> memoryProbePlan(const Plan& plan);
Trace simulateWithEvents(const Problem& problem, const Plan& plan);

// The objective's value (larger is better): memory efficiency or throughput; 0 if the plan
// does not fit. For MemoryEfficiencyWithThroughputFloor this is ME (the floor is applied by
// the planner, which knows the best throughput).
double objectiveValue(const TraceMetrics& m, Objective o);

// A feasible result for `plan` (simulated again), timed from `context`.
PlannerResult feasibleResult(const std::string& planner, const Plan& plan,
                             const TraceMetrics& metrics, const PlanContext& context);
PlannerResult infeasibleResult(const std::string& planner, const std::string& reason, const PlanContext& context);

}  // namespace hippie
