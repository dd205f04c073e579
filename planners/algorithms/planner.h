#pragma once
// One interface for every planner: a Problem in, a PlannerResult out. Planners report
// progress, honour a time budget and can be cancelled from another thread. The registry
// (registry.h) lists them by name so that no caller names a planner in code.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"

namespace hippie {

enum class Objective {
    MemoryEfficiency,  // max throughput / peak memory, among plans that fit
    Throughput,        // max samples/s, among plans that fit
    MemoryEfficiencyWithThroughputFloor  // best ME among plans within throughput_floor of the best throughput
};
const char* toString(Objective o);                   // "me", "throughput", "me-floor"
Objective objectiveFromString(const std::string& s);  // throws Error naming the value

struct Problem {
    Graph graph;             // costs scale with the micro-batch size, so any batch_size will do
    Cluster cluster;
    std::string cluster_name;  // preset or file, copied into plans
    int global_batch = 1;
    Optimizer optimizer = Optimizer::Adam;
    double memory_headroom = 0.0;   // fraction of device memory kept free when judging "fits"
    Objective objective = Objective::MemoryEfficiency;
    double throughput_floor = 0.9;  // for MemoryEfficiencyWithThroughputFloor
    double time_budget_s = 30.0;
    uint64_t seed = 1;              // every random search takes it
};

// What tensors may take on `device`: its usable memory (DeviceSpec::usableBytes, the runtime's
// reserve left out) less the problem's headroom. Every planner judges "fits" against this.
int64_t capacityBytes(const Problem& p, int device);
// The least capacityBytes of `devices`, or of every device of the cluster when it is empty.
int64_t smallestCapacityBytes(const Problem& p, const std::vector<int>& devices = {});

// Shared between the thread that plans and the one that watches or cancels.
class PlanContext {
public:
    using Clock = std::chrono::steady_clock;
    using ProgressFn = std::function<void(double fraction, const std::string& message)>;

    explicit PlanContext(double time_budget_s = 30.0, ProgressFn progress = {});

    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }
    bool outOfTime() const { return Clock::now() >= deadline_; }
    bool shouldStop() const { return cancelled() || outOfTime(); }  // planners poll this
    double elapsedSeconds() const;
    void progress(double fraction, const std::string& message) const;
    // The caller reads only a feasible result's plan and metrics, not what its log and an
    // infeasible result's reason say of the plans that did not fit (hippie, seeding from the
    // baselines). A search may then skip, unsimulated, plans it can prove do not fit memory,
    // which would otherwise stand in the reason's "least memory a tried plan needs".
    void setOnlyFitsMatter(bool only) { only_fits_matter_ = only; }
    bool onlyFitsMatter() const { return only_fits_matter_; }

private:
    std::atomic<bool> cancelled_{false};
    bool only_fits_matter_ = false;
    Clock::time_point start_;
    Clock::time_point deadline_;
    ProgressFn progress_;
};

struct PlannerResult {
    std::string planner;
    bool feasible = false;
    // The planner does not take problems like this one (e.g. too large to enumerate): not a
    // verdict on the problem; `reason` says why. Front ends show it as skipped, not infeasible.
    bool skipped = false;
    std::string reason;          // why infeasible or skipped, or notes (e.g. "stopped at time budget")
    // What happened that a reader of the table must know: a fallback taken (an LP that hit
    // its time limit), devices left idle, a search stopped at its budget. One line each.
    std::vector<std::string> notes;
    Plan plan;
    TraceMetrics metrics;        // of `plan`, simulated
    // The highest throughput of any plan that fits among those the planner simulated, where it
    // searched several (0 otherwise). Under me-floor it may exceed `plan`'s: the floor is kept
    // against it, and a comparison keeps every planner to that same floor.
    double fastest_throughput = 0;
    // The planner's own CPU time to reach its plan. It excludes evaluation_time_s: the final
    // scoring of the returned plan (lowering and simulating it for the metrics shown), which
    // the comparison needs whatever the planner does. Simulations a planner decides by (a
    // search's candidates, the one-device plan a placement is compared with) stay in it.
    double planning_time_s = 0;
    // CPU time of that final scoring, reported beside planning time, not part of it. Set by
    // the placement planners (placementResult); 0 for hybrid planners, whose metrics come from
    // the simulations of their own search.
    double evaluation_time_s = 0;
    std::vector<std::string> log;  // what it tried, for the studio and --verbose
    std::vector<double> convergence;  // best objective per iteration / generation, if iterative
};

class Planner {
public:
    virtual ~Planner() = default;
    virtual std::string name() const = 0;
    virtual std::string description() const = 0;
    // Never throws for an infeasible problem: returns feasible = false with the reason.
    // Throws Error only for malformed input (e.g. an empty graph).
    virtual PlannerResult plan(const Problem& problem, PlanContext& context) = 0;
};

}  // namespace hippie
