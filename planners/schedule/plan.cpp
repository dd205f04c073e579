#include "planners/schedule/plan.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

#include "planners/common/error.h"

namespace hippie {

const char* zeroStageMeaning(int stage) {
    switch (stage) {
    case 0: return "no sharding (plain data parallelism)";
    case 1: return "optimizer state sharded";
    case 2: return "optimizer state and gradients sharded";
    case 3: return "optimizer state, gradients and parameters sharded (FSDP)";
    default: return "not a ZeRO stage (0..3)";
    }
}

namespace {

constexpr std::array<std::pair<ScheduleKind, const char*>, 5> kScheduleNames = {{
    {ScheduleKind::GPipe, "gpipe"},
    {ScheduleKind::OneFOneB, "1f1b"},
    {ScheduleKind::Hippie, "hippie"},
    {ScheduleKind::Interleaved, "interleaved"},
    {ScheduleKind::ZeroBubbleH1, "zb-h1"},
}};

constexpr std::array<std::pair<Optimizer, const char*>, 4> kOptimizerNames = {{
    {Optimizer::SGD, "sgd"},
    {Optimizer::SGDMomentum, "sgd-momentum"},
    {Optimizer::Adam, "adam"},
    {Optimizer::AdamW, "adamw"},
}};

template <typename Names>
std::string nameList(const Names& names) {
    std::string s;
    for (const auto& [value, name] : names) s += (s.empty() ? "" : ", ") + std::string(name);
    return s;
}

std::vector<int> distinctPlacementDevices(const std::vector<int>& placement) {
    const std::set<int> devices(placement.begin(), placement.end());
    return {devices.begin(), devices.end()};
}

}  // namespace

const char* toString(ScheduleKind k) {
    for (const auto& [value, name] : kScheduleNames)
        if (value == k) return name;
    return "?";
}

ScheduleKind scheduleFromString(const std::string& s) {
    for (const auto& [value, name] : kScheduleNames)
        if (s == name) return value;
    throw Error("unknown schedule '" + s + "' (use " + nameList(kScheduleNames) + ")");
}

std::vector<ScheduleKind> allScheduleKinds() {
    std::vector<ScheduleKind> out;
    for (const auto& [value, name] : kScheduleNames) out.push_back(value);
    return out;
}

const char* toString(Optimizer o) {
    for (const auto& [value, name] : kOptimizerNames)
        if (value == o) return name;
    return "?";
}

Optimizer optimizerFromString(const std::string& s) {
    for (const auto& [value, name] : kOptimizerNames)
        if (s == name) return value;
    throw Error("unknown optimizer '" + s + "' (use " + nameList(kOptimizerNames) + ")");
}

int Plan::pipelineDepth() const {
    if (isPlacement()) return static_cast<int>(distinctPlacementDevices(placement).size());
    const int v = schedule == ScheduleKind::Interleaved ? std::max(virtual_stages, 1) : 1;
    return static_cast<int>(stages.size()) / v;
}

int Plan::deviceCount() const {
    if (isPlacement()) return pipelineDepth();
    if (perStageReplication()) {
        int64_t n = 0;
        for (int r : stage_replicas) n += std::max(r, 0);
        return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max()));
    }
    if (perStageTp()) {
        int64_t n = 0;
        for (int s = 0; s < pipelineDepth(); ++s) n += int64_t{dp} * std::max(tpOf(s), 0);
        return static_cast<int>(std::min<int64_t>(n, std::numeric_limits<int>::max()));
    }
    return pipelineDepth() * dp * tp;
}

int Plan::tpOf(int stage) const {
    if (stage >= 0 && static_cast<size_t>(stage) < stage_tp.size()) return stage_tp[static_cast<size_t>(stage)];
    return tp;
}

std::string Plan::tpText() const {
    if (!perStageTp()) return std::to_string(tp);
    std::string s;
    for (int t : stage_tp) s += (s.empty() ? "(" : ",") + std::to_string(t);
    return s + ")";
}

std::string Plan::dpText() const {
    if (!perStageReplication()) return std::to_string(dp);
    std::string s;
    for (int r : stage_replicas) s += (s.empty() ? "(" : ",") + std::to_string(r);
    return s + ")";
}

int Plan::replicasOf(int stage) const {
    if (stage >= 0 && static_cast<size_t>(stage) < stage_replicas.size()) return stage_replicas[static_cast<size_t>(stage)];
    return dp;
}

double Plan::microBatchSize() const {
    return static_cast<double>(global_batch) / (static_cast<double>(dp) * static_cast<double>(micro_batches));
}

std::vector<std::vector<int>> Plan::pipelineMap() const {
    return device_map.empty() ? defaultDeviceMap(*this) : device_map;
}

// A device map row holds tp ranks per replica; rows shorter than dp * tp (a malformed map
// the checks reject later) give what they hold rather than reading past the end.
namespace {

int rowDevice(const std::vector<int>& row, size_t replica, size_t rank, size_t tp) {
    const size_t i = replica * tp + rank;
    return i < row.size() ? row[i] : -1;
}

size_t replicasIn(const std::vector<int>& row, size_t tp) { return (row.size() + tp - 1) / tp; }

void appendIfSet(std::vector<int>& group, int device) {
    if (device >= 0) group.push_back(device);
}

// Per-stage replication: the devices micro-batch m meets, stage by stage (row s's device
// m mod its size), for each m up to the rows' least common multiple, after which the paths
// repeat; at most kMaxPaths of them.
std::vector<std::vector<int>> roundRobinPaths(const std::vector<std::vector<int>>& map) {
    constexpr int64_t kMaxPaths = 1 << 16;
    int64_t period = 1;
    for (const auto& row : map)
        if (!row.empty()) period = std::min(kMaxPaths, std::lcm(period, static_cast<int64_t>(row.size())));
    std::vector<std::vector<int>> paths;
    for (int64_t m = 0; m < period; ++m) {
        std::vector<int> path;
        for (const auto& row : map)
            if (!row.empty()) path.push_back(row[static_cast<size_t>(m % static_cast<int64_t>(row.size()))]);
        paths.push_back(std::move(path));
    }
    return paths;
}

}  // namespace

std::vector<std::vector<int>> Plan::pipelineGroups() const {
    if (isPlacement() && device_map.empty()) return {distinctPlacementDevices(placement)};
    const auto map = pipelineMap();
    if (perStageReplication()) return roundRobinPaths(map);
    // One per (replica, tp rank k of the widest stage): rank k meets rank k mod t of each stage.
    const size_t widest = static_cast<size_t>(std::max(tp, 1));
    size_t replicas = 0;
    for (size_t s = 0; s < map.size(); ++s) replicas = std::max(replicas, replicasIn(map[s], rowTp(s)));
    std::vector<std::vector<int>> groups;
    for (size_t r = 0; r < replicas; ++r)
        for (size_t k = 0; k < widest; ++k) {
            std::vector<int> group;
            for (size_t s = 0; s < map.size(); ++s) appendIfSet(group, rowDevice(map[s], r, k % rowTp(s), rowTp(s)));
            groups.push_back(std::move(group));
        }
    return groups;
}

std::vector<std::vector<int>> Plan::stageGroups() const {
    if (isPlacement() && device_map.empty()) {
        std::vector<std::vector<int>> groups;
        for (int d : distinctPlacementDevices(placement)) groups.push_back({d});
        return groups;
    }
    const auto map = pipelineMap();
    std::vector<std::vector<int>> groups;
    for (size_t s = 0; s < map.size(); ++s) {
        const size_t t = rowTp(s);
        for (size_t k = 0; k < t; ++k) {
            std::vector<int> group;
            for (size_t r = 0; r * t < map[s].size(); ++r) appendIfSet(group, rowDevice(map[s], r, k, t));
            groups.push_back(std::move(group));
        }
    }
    return groups;
}

std::vector<std::vector<int>> Plan::tpGroups() const {
    if (isPlacement()) return {};
    const auto map = pipelineMap();
    std::vector<std::vector<int>> groups;
    for (size_t s = 0; s < map.size(); ++s) {
        const size_t t = rowTp(s);
        for (size_t r = 0; r * t < map[s].size(); ++r) {
            std::vector<int> group;
            for (size_t k = 0; k < t; ++k) appendIfSet(group, rowDevice(map[s], r, k, t));
            groups.push_back(std::move(group));
        }
    }
    return groups;
}

size_t Plan::rowTp(size_t row) const { return static_cast<size_t>(std::max(tpOf(static_cast<int>(row)), 1)); }

std::vector<std::vector<int>> defaultDeviceMap(int pp, int dp, int tp) {
    std::vector<std::vector<int>> map(static_cast<size_t>(std::max(pp, 0)));
    for (int s = 0; s < pp; ++s)
        for (int r = 0; r < dp; ++r)
            for (int k = 0; k < tp; ++k) map[static_cast<size_t>(s)].push_back((r * pp + s) * tp + k);
    return map;
}

std::vector<std::vector<int>> defaultDeviceMap(const std::vector<int>& replicas) {
    std::vector<std::vector<int>> map(replicas.size());
    int next = 0;
    for (size_t s = 0; s < replicas.size(); ++s)
        for (int r = 0; r < replicas[s]; ++r) map[s].push_back(next++);
    return map;
}

std::vector<std::vector<int>> defaultDeviceMap(int dp, const std::vector<int>& stage_tp) {
    int per_replica = 0;
    for (int t : stage_tp) per_replica += std::max(t, 0);
    std::vector<std::vector<int>> map(stage_tp.size());
    for (int r = 0; r < dp; ++r) {
        int next = r * per_replica;
        for (size_t s = 0; s < stage_tp.size(); ++s)
            for (int k = 0; k < stage_tp[s]; ++k) map[s].push_back(next++);
    }
    return map;
}

std::vector<std::vector<int>> defaultDeviceMap(const Plan& plan) {
    if (plan.perStageReplication()) return defaultDeviceMap(plan.stage_replicas);
    if (plan.perStageTp()) {
        std::vector<int> t(static_cast<size_t>(std::max(plan.pipelineDepth(), 0)));
        for (size_t s = 0; s < t.size(); ++s) t[s] = plan.tpOf(static_cast<int>(s));
        return defaultDeviceMap(plan.dp, t);
    }
    return defaultDeviceMap(plan.pipelineDepth(), plan.dp, plan.tp);
}

}  // namespace hippie
