#include "planners/algorithms/placement/placement_common.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <numeric>
#include <queue>
#include <sstream>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/placement/tensor_bytes.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/common/error.h"
#include "planners/schedule/lower.h"

namespace hippie::placement {

namespace {

// Rounds of "plan, measure the exact memory, shrink the budget of devices that overflow".
constexpr int kCalibrationRounds = 4;
// Taken off an overflowing device's budget beyond the overflow, as a share of its capacity,
// so that rounds do not creep up on the limit.
constexpr double kCalibrationMargin = 0.005;

int64_t staticBytesOf(const CostModel& cost, std::span<const int> ops, Optimizer o) {
    return cost.staticMemory(ops, o, 1, 0, 0).total();
}


GroupingWeights groupingWeights(const Problem& p, const CostModel& cost, double samples) {
    GroupingWeights w;
    const auto n = p.graph.ops.size();
    w.seconds.resize(n);
    w.bytes.resize(n);
    for (size_t op = 0; op < n; ++op) {
        const int id = static_cast<int>(op);
        w.seconds[op] = cost.fwdTime(id, samples, 0) + cost.bwdTime(id, samples, 0);
        w.bytes[op] = staticBytesOf(cost, std::span<const int>(&id, 1), p.optimizer) +
                      cost.scaled(p.graph.ops[op].keptBytes(), samples) * kPlacementMicroBatches;
    }
    return w;
}

}  // namespace

std::vector<int64_t> capacities(const Problem& p) {
    std::vector<int64_t> out;
    for (int d = 0; d < p.cluster.deviceCount(); ++d) out.push_back(capacityBytes(p, d));
    return out;
}

// A necessary condition for any placement: each op fits a device on its own and the whole
// model fits all devices together.
std::optional<std::string> impossibleReason(const Problem& problem, std::span<const int64_t> resident, std::span<const int64_t> temp) {
    const auto capacity = capacities(problem);
    const int64_t largest_device = *std::max_element(capacity.begin(), capacity.end());
    const int64_t all_devices = std::accumulate(capacity.begin(), capacity.end(), int64_t{0});
    int64_t total = 0;
    for (size_t op = 0; op < resident.size(); ++op) {
        total += resident[op];
        const int64_t alone = resident[op] + temp[op];
        if (alone > largest_device)
            return "op '" + problem.graph.ops[op].name + "' alone needs " + gib(alone) +
                   " (weights, optimizer state, activations, workspace) but the largest device holds " + gib(largest_device) +
                   "; use devices with more memory or a smaller batch";
    }
    if (total > all_devices)
        return "the model needs at least " + gib(total) + " but the " + std::to_string(problem.cluster.deviceCount()) +
               " devices hold " + gib(all_devices) + " together; add devices or reduce the batch";
    return std::nullopt;
}

PlacementModel::PlacementModel(const Problem& problem, const CoplacementOptions& coplacement)
    : problem_(problem),
      cost_(problem.graph, problem.cluster),
      devices_(problem.cluster.deviceCount()),
      samples_(static_cast<double>(problem.global_batch) / kPlacementMicroBatches),
      grouping_(coplace(problem.graph, groupingWeights(problem, cost_, samples_), devices_, coplacement)) {
    buildArcs();
    buildCosts();
}

PlacementModel::PlacementModel(const Problem& problem, Grouping grouping)
    : problem_(problem),
      cost_(problem.graph, problem.cluster),
      devices_(problem.cluster.deviceCount()),
      samples_(static_cast<double>(problem.global_batch) / kPlacementMicroBatches),
      grouping_(std::move(grouping)) {
    buildArcs();
    buildCosts();
}

void PlacementModel::buildArcs() {
    const auto n = static_cast<size_t>(units());
    preds_.assign(n, {});
    succs_.assign(n, {});
    std::vector<int> indegree(n, 0);
    for (const Edge& e : grouping_.edges) {
        const int64_t bytes = cost_.scaled(e.bytes, samples_);
        succs_[static_cast<size_t>(e.src)].push_back({e.dst, bytes});
        preds_[static_cast<size_t>(e.dst)].push_back({e.src, bytes});
        ++indegree[static_cast<size_t>(e.dst)];
    }
    // Kahn's algorithm, smallest unit first: deterministic, and the identity grouping keeps
    // the graph's own topological order (its units are numbered in that order).
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (size_t u = 0; u < n; ++u)
        if (indegree[u] == 0) ready.push(static_cast<int>(u));
    topo_.clear();
    while (!ready.empty()) {
        const int u = ready.top();
        ready.pop();
        topo_.push_back(u);
        for (const Arc& a : succs_[static_cast<size_t>(u)])
            if (--indegree[static_cast<size_t>(a.unit)] == 0) ready.push(a.unit);
    }
    if (topo_.size() != n) throw Error("co-placement produced a cycle between groups (internal error)");
}

void PlacementModel::buildCosts() {
    const auto n = static_cast<size_t>(units());
    const auto d = static_cast<size_t>(devices_);
    compute_.assign(n * d, 0.0);
    forward_.assign(n * d, 0.0);
    mean_compute_.assign(n, 0.0);
    static_.assign(n, 0);
    activation_.assign(n, 0);
    temp_.assign(n, 0);
    for (size_t u = 0; u < n; ++u) {
        const auto& ops = grouping_.members[u];
        for (size_t dev = 0; dev < d; ++dev) {
            const int device = static_cast<int>(dev);
            forward_[u * d + dev] = cost_.fwdTime(ops, samples_, device);
            compute_[u * d + dev] = forward_[u * d + dev] + cost_.bwdTime(ops, samples_, device);
            mean_compute_[u] += compute_[u * d + dev] / static_cast<double>(d);
        }
        int64_t outputs = 0;
        for (int op : ops) {
            const Op& o = problem_.graph.ops[static_cast<size_t>(op)];
            outputs += o.keptBytes();
            temp_[u] = std::max(temp_[u], cost_.scaled(o.temp_bytes, samples_));
        }
        static_[u] = staticBytesOf(cost_, ops, problem_.optimizer);
        activation_[u] = cost_.scaled(outputs, samples_) * kPlacementMicroBatches;
    }
    for (int dev = 1; dev < devices_; ++dev) {
        const Link& l = problem_.cluster.link(0, dev);
        typical_latency_s_ += l.latency_s / (devices_ - 1);
        typical_seconds_per_byte_ += 1.0 / l.bandwidth_bytes_per_s / (devices_ - 1);
    }
}

double PlacementModel::commSeconds(int64_t bytes, int from, int to) const {
    return from == to ? 0.0 : 2.0 * cost_.p2pTime(bytes, from, to);
}

double PlacementModel::typicalCommSeconds(int64_t bytes) const {
    return 2.0 * (typical_latency_s_ + static_cast<double>(bytes) * typical_seconds_per_byte_);
}

int64_t PlacementModel::capacity(int device) const { return capacityBytes(problem_, device); }

std::vector<int64_t> PlacementModel::capacities() const { return placement::capacities(problem_); }

const std::string& PlacementModel::unitName(int unit) const {
    return problem_.graph.ops[static_cast<size_t>(grouping_.members[static_cast<size_t>(unit)].front())].name;
}

// --- DeviceMemory -----------------------------------------------------------------------

DeviceMemory::DeviceMemory(const PlacementModel& model)
    : model_(model),
      static_(static_cast<size_t>(model.devices()), 0),
      live_(static_cast<size_t>(model.devices()), 0),
      temp_(static_cast<size_t>(model.devices()), 0),
      grad_buffer_(static_cast<size_t>(model.devices()), 0),
      device_of_(static_cast<size_t>(model.units()), -1) {}

int64_t DeviceMemory::imports(int unit, int device) const {
    int64_t bytes = 0;
    for (const Arc& p : model_.preds(unit)) {
        const int from = device_of_[static_cast<size_t>(p.unit)];
        if (from < 0 || from == device) continue;
        const auto it = imported_.find(key(p.unit, device));
        bytes += std::max<int64_t>(0, p.bytes - (it == imported_.end() ? 0 : it->second));
    }
    return bytes;
}

int64_t DeviceMemory::largestOutput(int unit) const {
    int64_t bytes = 0;
    for (const Arc& s : model_.succs(unit)) bytes = std::max(bytes, s.bytes);
    return bytes;
}

int64_t DeviceMemory::used(int device) const {
    const auto d = static_cast<size_t>(device);
    return static_[d] + live_[d] + temp_[d] + grad_buffer_[d];
}

int64_t DeviceMemory::added(int unit, int device) const {
    const auto d = static_cast<size_t>(device);
    return model_.staticBytes(unit) + imports(unit, device) + model_.activationBytes(unit) +
           std::max<int64_t>(0, model_.tempBytes(unit) - temp_[d]) + std::max<int64_t>(0, largestOutput(unit) - grad_buffer_[d]);
}

bool DeviceMemory::fits(int unit, int device, const std::vector<int64_t>& capacity) const {
    return used(device) + added(unit, device) <= capacity[static_cast<size_t>(device)];
}

void DeviceMemory::place(int unit, int device) {
    const auto d = static_cast<size_t>(device);
    live_[d] += imports(unit, device) + model_.activationBytes(unit);
    for (const Arc& p : model_.preds(unit)) {
        const int from = device_of_[static_cast<size_t>(p.unit)];
        if (from < 0 || from == device) continue;
        int64_t& have = imported_[key(p.unit, device)];
        have = std::max(have, p.bytes);
    }
    static_[d] += model_.staticBytes(unit);
    temp_[d] = std::max(temp_[d], model_.tempBytes(unit));
    grad_buffer_[d] = std::max(grad_buffer_[d], largestOutput(unit));
    device_of_[static_cast<size_t>(unit)] = device;
}

std::vector<int64_t> deviceLoads(const PlacementModel& model, const std::vector<int>& device_of) {
    DeviceMemory mem(model);
    for (int u : model.topoOrder()) mem.place(u, device_of[static_cast<size_t>(u)]);
    std::vector<int64_t> out(static_cast<size_t>(model.devices()));
    for (int d = 0; d < model.devices(); ++d) out[static_cast<size_t>(d)] = mem.used(d);
    return out;
}

std::vector<int64_t> overflow(const std::vector<int64_t>& loads, const std::vector<int64_t>& capacity) {
    std::vector<int64_t> out(loads.size());
    for (size_t d = 0; d < loads.size(); ++d) out[d] = std::max<int64_t>(0, loads[d] - capacity[d]);
    return out;
}

bool fitsCapacity(const std::vector<int64_t>& loads, const std::vector<int64_t>& capacity) {
    for (size_t d = 0; d < loads.size(); ++d)
        if (loads[d] > capacity[d]) return false;
    return true;
}

// --- exact memory of a plan -----------------------------------------------------------------

namespace {

// Maximal runs of the execution order on one device, as the lowering cuts them.
struct Segments {
    std::vector<int> of_op;
    std::vector<int> device;
};

Segments segmentsOf(const Graph& g, const Plan& plan) {
    Segments s;
    s.of_op.assign(g.ops.size(), -1);
    const std::vector<int> order = plan.placement_order.empty() ? g.topologicalOrder() : plan.placement_order;
    for (int op : order) {
        const int d = plan.placement[static_cast<size_t>(op)];
        if (s.device.empty() || s.device.back() != d) s.device.push_back(d);
        s.of_op[static_cast<size_t>(op)] = static_cast<int>(s.device.size()) - 1;
    }
    return s;
}

// Largest gradient a device receives at once: for each of its segments and each other device
// consuming it, one tensor per producing op.
std::vector<int64_t> gradientBuffers(const Graph& g, const Segments& s, double scale, int devices) {
    std::vector<TensorEdge> sent;  // into each (producer segment, consumer device)
    for (const Edge& e : g.edges) {
        const int a = s.of_op[static_cast<size_t>(e.src)], b = s.of_op[static_cast<size_t>(e.dst)];
        const int to = s.device[static_cast<size_t>(b)];
        if (a == b || to == s.device[static_cast<size_t>(a)]) continue;
        sent.push_back({pairKey(a, to), e.src, e.bytes});
    }
    std::vector<int64_t> out(static_cast<size_t>(devices), 0);
    for (const auto& [key, bytes] : tensorBytesByPart(sent)) {
        const auto d = static_cast<size_t>(s.device[static_cast<size_t>(splitPairKey(key).first)]);
        out[d] = std::max(out[d], static_cast<int64_t>(static_cast<double>(bytes) * scale));
    }
    return out;
}

}  // namespace

std::vector<int64_t> placementMemory(const Problem& problem, const Plan& plan) {
    const Graph& g = problem.graph;
    const CostModel cost(g, problem.cluster);
    const int devices = problem.cluster.deviceCount();
    const double samples = plan.microBatchSize();
    const Segments s = segmentsOf(g, plan);
    const size_t segments = s.device.size();
    std::vector<int64_t> kept(segments, 0), temp(segments, 0);
    std::vector<std::vector<int>> ops_of(static_cast<size_t>(devices));
    for (size_t op = 0; op < g.ops.size(); ++op) {
        const auto seg = static_cast<size_t>(s.of_op[op]);
        kept[seg] += g.ops[op].keptBytes();
        temp[seg] = std::max(temp[seg], g.ops[op].temp_bytes);
        ops_of[static_cast<size_t>(plan.placement[op])].push_back(static_cast<int>(op));
    }
    std::vector<TensorEdge> inputs;  // into each segment from other segments, kept for backward
    for (const Edge& e : g.edges) {
        const int a = s.of_op[static_cast<size_t>(e.src)], b = s.of_op[static_cast<size_t>(e.dst)];
        if (a != b) inputs.push_back({b, e.src, e.bytes});
    }
    for (const auto& [segment, bytes] : tensorBytesByPart(inputs)) kept[static_cast<size_t>(segment)] += bytes;
    const auto buffers = gradientBuffers(g, s, samples / g.batch_size, devices);
    // Fill-drain: each micro-batch's forwards in segment order, each adding its stash; the
    // running segment's workspace on top. Backwards free in reverse, never above that peak.
    std::vector<int64_t> live(static_cast<size_t>(devices), 0), peak(static_cast<size_t>(devices), 0);
    for (int mb = 0; mb < plan.micro_batches; ++mb) {
        for (size_t seg = 0; seg < segments; ++seg) {
            const auto d = static_cast<size_t>(s.device[seg]);
            live[d] += cost.scaled(kept[seg], samples);
            peak[d] = std::max(peak[d], live[d] + cost.scaled(temp[seg], samples));
        }
    }
    std::vector<int64_t> out(static_cast<size_t>(devices), 0);
    for (size_t d = 0; d < out.size(); ++d) {
        if (ops_of[d].empty()) continue;
        out[d] = cost.staticMemory(ops_of[d], plan.optimizer, plan.dp, plan.bucket_bytes, buffers[d]).total() + peak[d];
    }
    return out;
}

// --- plans from assignments ---------------------------------------------------------------

Plan placementPlan(const PlacementModel& model, const Assignment& a, const std::string& planner) {
    Plan plan = basePlan(model.problem(), planner);
    plan.placement = model.grouping().expandPlacement(a.device);
    plan.placement_order = model.grouping().expandOrder(a.order.empty() ? model.topoOrder() : a.order);
    plan.dp = 1;
    plan.micro_batches = kPlacementMicroBatches;
    plan.schedule = ScheduleKind::GPipe;
    return plan;
}

namespace {

bool fitsExactly(const Problem& problem, const Plan& plan, const std::vector<int64_t>& capacity) {
    return fitsCapacity(placementMemory(problem, plan), capacity);
}

}  // namespace

double simulatedStepSeconds(const PlacementModel& model, const Assignment& a) {
    const Plan plan = placementPlan(model, a, "candidate");
    if (!fitsExactly(model.problem(), plan, model.capacities())) return std::numeric_limits<double>::infinity();
    return evaluate(model.problem(), plan).iteration_time_s;
}

std::vector<int> orderBy(const PlacementModel& model, const std::vector<double>& key) {
    std::vector<int> order = model.topoOrder();
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[static_cast<size_t>(a)] < key[static_cast<size_t>(b)]; });
    return order;
}

std::vector<double> bottomLevels(const PlacementModel& model) {
    std::vector<double> level(static_cast<size_t>(model.units()), 0.0);
    const auto& topo = model.topoOrder();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
        double tail = 0;
        for (const Arc& s : model.succs(*it)) tail = std::max(tail, model.typicalCommSeconds(s.bytes) + level[static_cast<size_t>(s.unit)]);
        level[static_cast<size_t>(*it)] = model.meanComputeSeconds(*it) + tail;
    }
    return level;
}

std::string gib(int64_t bytes) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30) << " GiB";
    return s.str();
}

// --- the skeleton -----------------------------------------------------------------------

namespace {

// The skeleton's per-op figures for impossibleReason.
std::optional<std::string> impossibleReason(const Problem& problem) {
    const CostModel cost(problem.graph, problem.cluster);
    const double samples = static_cast<double>(problem.global_batch) / kPlacementMicroBatches;
    std::vector<int64_t> resident(problem.graph.ops.size()), temp(problem.graph.ops.size());
    for (size_t op = 0; op < problem.graph.ops.size(); ++op) {
        const int id = static_cast<int>(op);
        const Op& o = problem.graph.ops[op];
        resident[op] = staticBytesOf(cost, std::span<const int>(&id, 1), problem.optimizer) + cost.scaled(o.keptBytes(), samples) * kPlacementMicroBatches;
        temp[op] = cost.scaled(o.temp_bytes, samples);
    }
    return placement::impossibleReason(problem, resident, temp);
}

// The device a single-device plan uses: the most memory for tensors, then the fastest.
int singleDevice(const Cluster& c, Precision p) {
    int best = 0;
    for (int d = 1; d < c.deviceCount(); ++d) {
        const DeviceSpec& a = c.device(d);
        const DeviceSpec& b = c.device(best);
        if (a.usableBytes() > b.usableBytes() || (a.usableBytes() == b.usableBytes() && a.achievableFlops(p) > b.achievableFlops(p))) best = d;
    }
    return best;
}

Plan singleDevicePlan(const Problem& problem, const std::string& name) {
    Plan plan = basePlan(problem, name);
    plan.placement.assign(problem.graph.ops.size(), singleDevice(problem.cluster, problem.graph.source.precision));
    plan.micro_batches = kPlacementMicroBatches;
    plan.schedule = ScheduleKind::GPipe;
    return plan;
}

PlannerResult withLog(PlannerResult r, std::vector<std::string> log, std::vector<double> convergence = {}) {
    r.log = std::move(log);
    r.convergence = std::move(convergence);
    return r;
}

PlannerResult oneDeviceResult(const std::string& name, const Problem& problem, PlanContext& context) {
    const Plan plan = singleDevicePlan(problem, name);
    if (!fitsExactly(problem, plan, capacities(problem)))
        return infeasibleResult(name, "the model needs " + gib(placementMemory(problem, plan)[0]) + " but the only device holds " +
                                          gib(capacityBytes(problem, 0)), context);
    const double scoring_started = threadCpuSeconds();
    const TraceMetrics metrics = evaluate(problem, plan);
    PlannerResult r = feasibleResult(name, plan, metrics, context);
    r.evaluation_time_s = threadCpuSeconds() - scoring_started;  // the final scoring, as placementResult counts it
    r.planning_time_s = planningSeconds(r.planning_time_s, r);
    return r;
}

}  // namespace

// The one-device plan's memory as placementMemory counts it, in O(ops): one segment holding
// every op's kept outputs (no inputs from other segments, no gradients from other devices),
// its largest workspace on top, and the weights, gradients and optimizer state of all ops.
int64_t oneDeviceMemory(const Problem& problem) {
    const CostModel cost(problem.graph, problem.cluster);
    int64_t params = 0, kept = 0, temp = 0;
    for (size_t op = 0; op < problem.graph.ops.size(); ++op) {
        const Op& o = problem.graph.ops[op];
        params += cost.rankParamBytes(static_cast<int>(op));
        kept += o.keptBytes();
        temp = std::max(temp, o.temp_bytes);
    }
    const double samples = static_cast<double>(problem.global_batch) / kPlacementMicroBatches;
    return cost.staticMemoryOfParams(params, problem.optimizer, 1, 0, 0).total() + cost.scaled(kept, samples) + cost.scaled(temp, samples);
}

namespace {

// Keeps the single-device plan instead when it fits and is not slower. Needs no simulation
// where one device cannot hold the model (oneDeviceMemory) or its computation alone (its
// forwards and backwards, one after another: a lower bound of its step) is not shorter than
// the plan's step; otherwise simulates the one-device plan (planning time).
void preferOneDevice(const std::string& name, const Problem& problem, Plan& plan, TraceMetrics& metrics, std::vector<std::string>& log,
                     std::vector<std::string>& notes) {
    const int device = singleDevice(problem.cluster, problem.graph.source.precision);
    if (oneDeviceMemory(problem) > capacityBytes(problem, device)) return;
    if (metrics.fits_memory) {
        const CostModel cost(problem.graph, problem.cluster);
        const double samples = static_cast<double>(problem.global_batch) / kPlacementMicroBatches;
        double computation = 0;
        for (int op = 0; op < static_cast<int>(problem.graph.ops.size()); ++op)
            computation += cost.fwdTime(op, samples, device) + cost.bwdTime(op, samples, device);
        if (computation >= metrics.iteration_time_s) return;
    }
    const Plan single = singleDevicePlan(problem, name);
    const TraceMetrics m = evaluate(problem, single);
    if (metrics.fits_memory && m.iteration_time_s >= metrics.iteration_time_s) return;
    const std::string line = "everything on one device is faster (" + std::to_string(m.iteration_time_s) + " s vs " +
                             std::to_string(metrics.iteration_time_s) + " s for its placement): kept one device";
    log.push_back(line);
    notes.push_back(line);
    plan = single;
    metrics = m;
}

// "uses 3 of 8 devices" when a placement leaves devices idle.
std::optional<std::string> idleDevicesNote(const Problem& problem, const Plan& plan) {
    const int devices = problem.cluster.deviceCount();
    std::vector<char> seen(static_cast<size_t>(devices), 0);
    int used = 0;
    for (int d : plan.placement)
        if (!seen[static_cast<size_t>(d)]) {
            seen[static_cast<size_t>(d)] = 1;
            ++used;
        }
    if (used >= devices) return std::nullopt;
    return "uses " + std::to_string(used) + " of " + std::to_string(devices) + " devices; the others stay idle";
}

}  // namespace

std::string coreTimeLine(double seconds) {
    std::ostringstream s;
    s << kCoreTimePrefix << std::fixed << std::setprecision(9) << seconds << " s";
    return s.str();
}

double coreSeconds(const PlannerResult& r) {
    for (const std::string& line : r.log)
        if (line.rfind(kCoreTimePrefix, 0) == 0) return std::stod(line.substr(std::string(kCoreTimePrefix).size()));
    return -1;
}

namespace {

struct Calibrated {
    std::optional<Plan> plan;
    std::string reason;
    std::vector<double> convergence;
    std::vector<std::string> notes;
    double core_s = 0;  // in the core, all rounds
};

// Runs the core until its plan fits by exact accounting, shrinking overflowing budgets.
Calibrated calibrate(const std::string& name, const PlacementModel& model, const PlacementCore& core, PlanContext& context,
                     std::vector<std::string>& log) {
    const auto true_capacity = model.capacities();
    auto budget = true_capacity;
    Calibrated c;
    for (int round = 0; round < kCalibrationRounds; ++round) {
        const double started = threadCpuSeconds();
        CoreOutcome out = core(model, budget, context, log);
        c.core_s += threadCpuSeconds() - started;
        c.convergence = std::move(out.convergence);
        for (std::string& n : out.notes)
            if (std::find(c.notes.begin(), c.notes.end(), n) == c.notes.end()) c.notes.push_back(std::move(n));
        if (!out.assignment) {
            c.reason = out.reason;
            return c;
        }
        Plan plan = placementPlan(model, *out.assignment, name);
        const auto over = overflow(placementMemory(model.problem(), plan), true_capacity);
        c.plan = std::move(plan);
        if (std::all_of(over.begin(), over.end(), [](int64_t b) { return b == 0; })) return c;
        for (size_t d = 0; d < over.size(); ++d) {
            if (over[d] == 0) continue;
            budget[d] -= over[d] + static_cast<int64_t>(kCalibrationMargin * static_cast<double>(true_capacity[d]));
            log.push_back("device " + std::to_string(d) + " overflows by " + gib(over[d]) + " in exact accounting; budget now " + gib(budget[d]));
        }
        if (context.shouldStop()) break;
    }
    c.reason = "no placement found that fits memory after " + std::to_string(kCalibrationRounds) + " rounds";
    return c;
}

}  // namespace

PlannerResult runPlacementPlanner(const std::string& name, const PlacementOptions& options, const PlacementCore& core,
                                  const Problem& problem, PlanContext& context) {
    if (problem.graph.ops.empty()) throw Error(name + ": the model has no operators");
    if (problem.cluster.deviceCount() < 1) throw Error(name + ": the cluster has no devices");
    requireTrainableBatch(problem.graph, problem.global_batch);  // a placement runs the whole batch as one micro-batch
    context.progress(0.0, "checking memory");
    if (auto reason = impossibleReason(problem)) return infeasibleResult(name, *reason, context);
    if (problem.cluster.deviceCount() == 1) return oneDeviceResult(name, problem, context);

    context.progress(0.02, "co-placing operators");
    const PlacementModel model(problem, options.coplacement);
    std::vector<std::string> log{"placing " + std::to_string(model.units()) + " units (" + std::to_string(problem.graph.ops.size()) +
                                 " ops) on " + std::to_string(model.devices()) + " devices"};
    Calibrated c = calibrate(name, model, core, context, log);
    log.push_back(coreTimeLine(c.core_s));
    if (!c.plan) {
        PlannerResult r = infeasibleResult(name, c.reason, context);
        r.notes = c.notes;
        return withLog(std::move(r), log, c.convergence);
    }

    return placementResult(name, problem, std::move(*c.plan), std::move(c.notes), std::move(log), std::move(c.convergence), c.reason, context);
}

PlannerResult placementResult(const std::string& name, const Problem& problem, Plan plan, std::vector<std::string> notes,
                              std::vector<std::string> log, std::vector<double> convergence, const std::string& reason, PlanContext& context) {
    context.progress(0.95, "simulating");
    // The final scoring: lowering and simulating the returned plan for the metrics shown.
    const double scoring_started = threadCpuSeconds();
    TraceMetrics metrics = evaluate(problem, plan);
    const double scoring_s = threadCpuSeconds() - scoring_started;
    preferOneDevice(name, problem, plan, metrics, log, notes);
    if (auto idle = idleDevicesNote(problem, plan); idle && plan.deviceCount() > 1) notes.push_back(*idle);
    PlannerResult r = feasibleResult(name, plan, metrics, context);
    // Evaluation, not planning: the table needs it whatever the planner does. Simulating the
    // one-device plan to compare (preferOneDevice) is planning.
    r.evaluation_time_s = scoring_s;
    r.planning_time_s = planningSeconds(r.planning_time_s, r);
    if (!r.feasible && !reason.empty()) r.reason = reason;
    if (context.cancelled()) r.reason = "cancelled; best plan so far";
    if (context.outOfTime()) notes.push_back("stopped at its time budget");
    r.notes = std::move(notes);
    context.progress(1.0, "done");
    return withLog(std::move(r), std::move(log), std::move(convergence));
}

PlannerResult PlacementPlanner::plan(const Problem& problem, PlanContext& context) {
    begin();
    const PlacementCore core = [this](const PlacementModel& m, const std::vector<int64_t>& c, PlanContext& ctx, std::vector<std::string>& log) {
        return place(m, c, ctx, log);
    };
    return runPlacementPlanner(name_, options_, core, problem, context);
}

}  // namespace hippie::placement
