#pragma once
// Shared by the operator-placement planners (m-topo, m-etf, m-sct, tga, sgp):
// - PlacementModel: the units they place (the problem's ops, or co-placed groups of them)
//   with compute, communication and memory costs from the CostModel;
// - DeviceMemory: the memory a device needs for the units placed on it so far;
// - placementMemory: the memory per device of a finished placement plan, counted as the
//   simulator counts it;
// - runPlacementPlanner: the skeleton every placement planner runs (checks, the one-device
//   case, co-placement, memory calibration, simulation, the result).
//
// Placement plans run one micro-batch (kPlacementMicroBatches) with the fill-drain schedule:
// every forward, then every backward. An activation therefore stays on its device until its
// own backward has run, after all its consumers ran forward and backward; a device holds the
// activations of all its ops, plus the tensors it received from other devices, at the end
// of the forward pass.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "planners/algorithms/placement/coplacement.h"
#include "planners/algorithms/planner.h"
#include "planners/cost/cost_model.h"

namespace hippie::placement {

inline constexpr int kPlacementMicroBatches = 1;

struct PlacementOptions {
    CoplacementOptions coplacement;
};

// A neighbour of a unit and the bytes (at the micro-batch size) of the tensors between them.
struct Arc {
    int unit = 0;
    int64_t bytes = 0;
};

class PlacementModel {
public:
    // `problem` must outlive the model.
    PlacementModel(const Problem& problem, const CoplacementOptions& coplacement);
    PlacementModel(const Problem& problem, Grouping grouping);

    const Problem& problem() const { return problem_; }
    const CostModel& cost() const { return cost_; }
    const Grouping& grouping() const { return grouping_; }
    int units() const { return grouping_.groups(); }
    int devices() const { return devices_; }
    double samples() const { return samples_; }  // per micro-batch
    const std::vector<int>& topoOrder() const { return topo_; }  // of units
    const std::vector<Arc>& preds(int unit) const { return preds_[static_cast<size_t>(unit)]; }
    const std::vector<Arc>& succs(int unit) const { return succs_[static_cast<size_t>(unit)]; }

    // Forward plus backward of one micro-batch, and the forward alone.
    double computeSeconds(int unit, int device) const { return compute_[index(unit, device)]; }
    double forwardSeconds(int unit, int device) const { return forward_[index(unit, device)]; }
    double meanComputeSeconds(int unit) const { return mean_compute_[static_cast<size_t>(unit)]; }
    // An activation forward and its gradient back; 0 on one device.
    double commSeconds(int64_t bytes, int from, int to) const;
    // The same on an average link of the cluster, for device-independent estimates.
    double typicalCommSeconds(int64_t bytes) const;

    // Weights, gradients, master weights and optimizer state: held for the whole step.
    int64_t staticBytes(int unit) const { return static_[static_cast<size_t>(unit)]; }
    // Outputs kept for backward, every micro-batch.
    int64_t activationBytes(int unit) const { return activation_[static_cast<size_t>(unit)]; }
    int64_t residentBytes(int unit) const { return staticBytes(unit) + activationBytes(unit); }
    int64_t tempBytes(int unit) const { return temp_[static_cast<size_t>(unit)]; }  // workspace while it runs
    int64_t capacity(int device) const;  // device memory less the problem's headroom
    std::vector<int64_t> capacities() const;
    const std::string& unitName(int unit) const;  // the name of its first op

private:
    void buildArcs();
    void buildCosts();
    size_t index(int unit, int device) const { return static_cast<size_t>(unit) * static_cast<size_t>(devices_) + static_cast<size_t>(device); }

    const Problem& problem_;
    CostModel cost_;
    int devices_;
    double samples_;
    Grouping grouping_;
    std::vector<int> topo_;
    std::vector<std::vector<Arc>> preds_, succs_;
    std::vector<double> compute_, forward_, mean_compute_;
    std::vector<int64_t> static_, activation_, temp_;
    double typical_latency_s_ = 0, typical_seconds_per_byte_ = 0;
};

// Memory a device needs for the units placed on it so far: their weights and optimizer
// state, their activations and the tensors received from other devices (all held at the end
// of a fill-drain forward pass), the largest workspace on top, and room for the gradient of
// its largest output, should that be sent to another device. This is what the
// simulator counts when the device runs its units as one segment; interleaving with other
// devices splits it into segments that may also count tensors passed between two of its own
// segments, which placementMemory measures exactly afterwards.
class DeviceMemory {
public:
    explicit DeviceMemory(const PlacementModel& model);

    // Bytes placing `unit` on `device` adds, given what is placed (its producers must be).
    int64_t added(int unit, int device) const;
    bool fits(int unit, int device, const std::vector<int64_t>& capacity) const;
    void place(int unit, int device);
    int64_t used(int device) const;
    int deviceOf(int unit) const { return device_of_[static_cast<size_t>(unit)]; }

private:
    static uint64_t key(int unit, int device) { return (static_cast<uint64_t>(unit) << 32) | static_cast<uint32_t>(device); }
    int64_t imports(int unit, int device) const;  // bytes of inputs not yet on the device
    int64_t largestOutput(int unit) const;

    const PlacementModel& model_;
    // By device: weights etc., activations, largest workspace, largest gradient received.
    std::vector<int64_t> static_, live_, temp_, grad_buffer_;
    std::vector<int> device_of_;
    std::unordered_map<uint64_t, int64_t> imported_;  // (producer, device) -> bytes received
};

// Memory of every device for a whole placement (by unit), placed in topological order.
std::vector<int64_t> deviceLoads(const PlacementModel& model, const std::vector<int>& device_of);
// Bytes by which each device exceeds `capacity` (0 where it fits).
std::vector<int64_t> overflow(const std::vector<int64_t>& loads, const std::vector<int64_t>& capacity);
// Whether every device's load is within its capacity (overflow all zero).
bool fitsCapacity(const std::vector<int64_t>& loads, const std::vector<int64_t>& capacity);

// Peak memory per device of a placement plan of problem.graph, counted as the simulator
// counts a fill-drain step: parameters, gradients, master weights and optimizer state of its
// ops and the gradient receive buffer for the whole step; per micro-batch and segment (run of
// the execution order on one device) its ops' outputs and the inputs it reads from other
// segments, added as the forwards run, with the running segment's workspace on top.
std::vector<int64_t> placementMemory(const Problem& problem, const Plan& plan);
// What placementMemory counts for the plan that puts every op on one device, in O(ops).
int64_t oneDeviceMemory(const Problem& problem);

// capacityBytes (planner.h) of every device, by device id.
std::vector<int64_t> capacities(const Problem& p);

// Why no placement can fit, from each op's bytes resident for the step (weights, optimizer
// state, its kept activations of every micro-batch) and its workspace: an op that fits no
// device alone, or a model larger than all devices together. nullopt when neither.
std::optional<std::string> impossibleReason(const Problem& problem, std::span<const int64_t> resident, std::span<const int64_t> temp);

// What a placement core returns: a device per unit and an execution order of units.
struct Assignment {
    std::vector<int> device;  // by unit
    std::vector<int> order;   // units, topological; empty: the model's topological order
};

struct CoreOutcome {
    std::optional<Assignment> assignment;
    std::string reason;               // why there is none
    std::vector<double> convergence;  // for iterative cores
    std::vector<std::string> notes;   // fallbacks taken (PlannerResult::notes)
};

using PlacementCore = std::function<CoreOutcome(const PlacementModel& model, const std::vector<int64_t>& capacity,
                                                PlanContext& context, std::vector<std::string>& log)>;

// The plan for an assignment: placement and order expanded to the problem's ops, one
// micro-batch, fill-drain.
Plan placementPlan(const PlacementModel& model, const Assignment& a, const std::string& planner);

// Simulated iteration time of an assignment (infinity if it does not fit).
double simulatedStepSeconds(const PlacementModel& model, const Assignment& a);

// The skeleton every placement planner runs: throws Error for an empty graph; returns
// infeasible with the reason when no placement can fit (an op larger than every device, a
// model larger than all of them); plans one device directly; otherwise co-places, runs
// `core` and, when a device's exact memory exceeds what the core assumed, shrinks that
// device's budget and runs it again. Never returns a plan slower than putting everything on
// one device when that fits.
PlannerResult runPlacementPlanner(const std::string& name, const PlacementOptions& options, const PlacementCore& core,
                                  const Problem& problem, PlanContext& context);

// How every placement planner (runPlacementPlanner, and SGP, which plans without its
// co-placement) finishes: scores `plan` (lowers and simulates it for the metrics the table
// shows; its CPU time is the result's evaluation_time_s, not planning time), keeps the
// one-device plan instead when that fits and is not slower (simulating the one-device plan
// to compare is planning time; it is skipped where one device cannot hold the model,
// counted in O(ops) by oneDeviceMemory, or where its computation alone is not shorter than
// the plan's step), notes idle devices and the budget. The simulator judges memory: a plan
// that does not fit is returned infeasible with `reason`.
PlannerResult placementResult(const std::string& name, const Problem& problem, Plan plan, std::vector<std::string> notes,
                              std::vector<std::string> log, std::vector<double> convergence, const std::string& reason, PlanContext& context);

// The log line runPlacementPlanner adds: the CPU time spent in the core itself (all
// calibration rounds), without co-placement, exact memory checks and simulation, which every
// placement planner shares; and that time read back from a result's log (-1 when absent).
inline constexpr const char* kCoreTimePrefix = "placement core: ";
std::string coreTimeLine(double seconds);
double coreSeconds(const PlannerResult& r);

// A placement planner: a name, a description and a core run inside runPlacementPlanner.
class PlacementPlanner : public Planner {
public:
    PlacementPlanner(std::string name, std::string description, PlacementOptions options)
        : name_(std::move(name)), description_(std::move(description)), options_(std::move(options)) {}
    std::string name() const override { return name_; }
    std::string description() const override { return description_; }
    PlannerResult plan(const Problem& problem, PlanContext& context) override;

protected:
    // Called once at the start of each plan(), before the core's first run.
    virtual void begin() {}
    // Runs once, or again with smaller budgets when exact accounting finds an overflow.
    virtual CoreOutcome place(const PlacementModel& model, const std::vector<int64_t>& capacity, PlanContext& context,
                              std::vector<std::string>& log) const = 0;

private:
    std::string name_, description_;
    PlacementOptions options_;
};

// Units in order of `key`, ties by topological position (a topological order when key never
// decreases along an edge, e.g. start times).
std::vector<int> orderBy(const PlacementModel& model, const std::vector<double>& key);

// Longest path from each unit to the end: compute plus typical communication (list
// schedulers' priority).
std::vector<double> bottomLevels(const PlacementModel& model);

std::string gib(int64_t bytes);  // "12.3 GiB"

}  // namespace hippie::placement
