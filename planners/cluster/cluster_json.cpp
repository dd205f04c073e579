#include "planners/cluster/cluster_json.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/common/json_read.h"

namespace hippie {

using nlohmann::json;
using namespace json_read;

namespace {

constexpr const char* kFormat = "hippie-cluster";
constexpr int kVersion = 1;
// Guards against a typo in "count" allocating millions of nodes; far above any cluster the
// planners can search.
constexpr int64_t kMaxDevices = 1 << 20;
// Slowest rate a device or link may have (FLOP/s, bytes/s) and longest latency: far beyond any
// real hardware, and they keep every time the cost model computes (work / rate) finite. A rate
// of 5e-324 would otherwise round to 0, which the cost model reads as "free".
constexpr double kMinRate = 1.0;
constexpr double kMaxLatencyS = 3600.0;
// profiled_time_scale multiplies measured times: calibration moves it by small factors; a
// million either way is a typo, and a tiny one would make profiled ops free.
constexpr double kMaxTimeScale = 1e6;
// conv_efficiency: convolution kernels reach a fraction of matmul's rate (0.3-0.9 measured);
// outside [1e-3, 4] the probe or the file is wrong.
constexpr double kMinConvEfficiency = 1e-3;
constexpr double kMaxConvEfficiency = 4.0;
// A kernel's measured overhead beyond a second is no dispatch cost but a broken measurement.
constexpr double kMaxKernelOverheadS = 1.0;
// compute_slots below this would make a shared device thousands of times slower: a typo.
constexpr double kMinComputeSlots = 1e-3;

double readRate(const json& j, std::string_view key, const std::string& where) {
    const double v = requireNumber(j, key, where, Bound::Positive);
    if (v < kMinRate)
        failField(where, key, "is " + json(v).dump() + "; a rate must be at least " + json(kMinRate).dump() + " per second");
    return v;
}

// ---- writing ----

json linkToJson(const Link& l) {
    return {{"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s}, {"latency_s", l.latency_s}};
}

json deviceToJson(const DeviceSpec& d) {
    json j = {{"type", d.type},
              {"peak_flops_fp32", d.peak_flops_fp32},
              {"peak_flops_fp16", d.peak_flops_fp16},
              {"efficiency", d.efficiency},
              {"memory_bytes", d.memory_bytes}};
    if (d.reserved_bytes > 0) j["reserved_bytes"] = d.reserved_bytes;  // optional: 0 when absent
    if (d.profiled_time_scale != 1.0) j["profiled_time_scale"] = d.profiled_time_scale;  // optional: 1 when absent
    // Optional: 0 (term left out) when absent.
    if (d.memory_bandwidth_bytes_per_s > 0) j["memory_bandwidth_bytes_per_s"] = d.memory_bandwidth_bytes_per_s;
    if (d.launch_overhead_s > 0) j["launch_overhead_s"] = d.launch_overhead_s;
    if (d.half_rate_flops > 0) j["half_rate_flops"] = d.half_rate_flops;
    if (d.conv_efficiency != 1.0) j["conv_efficiency"] = d.conv_efficiency;  // optional: 1 when absent
    if (!d.kernels.empty()) {  // optional: none when absent
        json& kernels = j["kernels"] = json::object();
        for (const auto& [kind, k] : d.kernels)
            kernels[kind] = {{"forward_bytes_per_s", k.forward_bytes_per_s}, {"backward_bytes_per_s", k.backward_bytes_per_s},
                             {"forward_overhead_s", k.forward_overhead_s}, {"backward_overhead_s", k.backward_overhead_s},
                             {"half_rate_flops", k.half_rate_flops}};
    }
    return j;
}

json nodeToJson(const Node& n, int count) {
    json j = {{"count", count}, {"devices", n.devices}, {"device", deviceToJson(n.device)}, {"intra", linkToJson(n.intra)}};
    if (n.ports.count > 0) j["ports"] = {{"count", n.ports.count}, {"bandwidth_bytes_per_s", n.ports.bandwidth_bytes_per_s}};
    if (n.compute_slots > 0) j["compute_slots"] = n.compute_slots;  // optional: 0 (not shared) when absent
    return j;
}

// ---- reading ----

Link readLink(const json& parent, const char* key, const std::string& where) {
    const json& j = requireObject(parent, key, where);
    const std::string w = at(where, key);
    requireKnownFields(j, {"bandwidth_bytes_per_s", "latency_s"}, w);
    Link l;
    l.bandwidth_bytes_per_s = readRate(j, "bandwidth_bytes_per_s", w);
    l.latency_s = requireNumber(j, "latency_s", w, Bound::NonNegative);
    if (l.latency_s > kMaxLatencyS)
        failField(w, "latency_s", "is " + json(l.latency_s).dump() + " s; a link's latency must be at most " +
                                      json(kMaxLatencyS).dump() + " s");
    return l;
}

// "kernels": {"<op kind>": {forward/backward bytes per second (0: the device's memory
// bandwidth), forward/backward overhead in seconds, half_rate_flops (0: the device's)}, ...}.
std::map<std::string, KernelTiming> readKernels(const json& device, const std::string& where) {
    std::map<std::string, KernelTiming> out;
    if (!has(device, "kernels")) return out;
    const json& j = requireObject(device, "kernels", where);
    for (const auto& [kind, entry] : j.items()) {
        const std::string w = at(at(where, "kernels"), kind);
        if (kind.empty()) fail(at(where, "kernels"), "an op kind must not be empty");
        if (!entry.is_object()) fail(w, "must be an object with the kind's forward/backward rates and overheads");
        requireKnownFields(entry, {"forward_bytes_per_s", "backward_bytes_per_s", "forward_overhead_s", "backward_overhead_s", "half_rate_flops"}, w);
        KernelTiming k;
        double* rates[] = {&k.forward_bytes_per_s, &k.backward_bytes_per_s};
        const char* rate_keys[] = {"forward_bytes_per_s", "backward_bytes_per_s"};
        for (int i = 0; i < 2; ++i) {
            *rates[i] = optionalNumber(entry, rate_keys[i], w, Bound::NonNegative).value_or(0.0);
            if (*rates[i] > 0 && *rates[i] < kMinRate)
                failField(w, rate_keys[i], "is " + json(*rates[i]).dump() + "; a rate must be 0 (the device's memory bandwidth) or at least " +
                                               json(kMinRate).dump() + " bytes per second");
        }
        double* overheads[] = {&k.forward_overhead_s, &k.backward_overhead_s};
        const char* overhead_keys[] = {"forward_overhead_s", "backward_overhead_s"};
        for (int i = 0; i < 2; ++i) {
            *overheads[i] = optionalNumber(entry, overhead_keys[i], w, Bound::NonNegative).value_or(0.0);
            if (*overheads[i] > kMaxKernelOverheadS)
                failField(w, overhead_keys[i], "is " + json(*overheads[i]).dump() + " s; a kernel's overhead must be at most " +
                                                   json(kMaxKernelOverheadS).dump() + " s");
        }
        k.half_rate_flops = optionalNumber(entry, "half_rate_flops", w, Bound::NonNegative).value_or(0.0);
        out.emplace(kind, k);
    }
    return out;
}

DeviceSpec readDevice(const json& parent, const std::string& where) {
    const json& j = requireObject(parent, "device", where);
    const std::string w = at(where, "device");
    requireKnownFields(j, {"type", "peak_flops_fp32", "peak_flops_fp16", "efficiency", "memory_bytes", "reserved_bytes", "profiled_time_scale",
                           "memory_bandwidth_bytes_per_s", "launch_overhead_s", "half_rate_flops", "conv_efficiency", "kernels"},
                       w);
    DeviceSpec d;
    d.type = requireString(j, "type", w);
    if (d.type.empty()) failField(w, "type", "must not be empty (e.g. \"A100-SXM4-40GB\")");
    d.peak_flops_fp32 = readRate(j, "peak_flops_fp32", w);
    d.peak_flops_fp16 = readRate(j, "peak_flops_fp16", w);
    d.efficiency = requireNumber(j, "efficiency", w, Bound::Positive);
    if (d.efficiency > 1)
        failField(w, "efficiency", "must be in (0, 1]: the achievable fraction of peak (got " + json(d.efficiency).dump() + ")");
    if (d.achievableFlops(Precision::FP32) < kMinRate || d.achievableFlops(Precision::FP16) < kMinRate)
        failField(w, "efficiency", "times the peak FLOP/s is below " + json(kMinRate).dump() + " FLOP/s; no device is that slow");
    d.memory_bytes = requireInt64(j, "memory_bytes", w, Bound::Positive);
    d.reserved_bytes = optionalInt64(j, "reserved_bytes", w, Bound::NonNegative).value_or(0);
    if (d.reserved_bytes >= d.memory_bytes)
        failField(w, "reserved_bytes", "is " + std::to_string(d.reserved_bytes) + ", not below memory_bytes (" + std::to_string(d.memory_bytes) +
                                           "): the runtime would leave no memory for tensors");
    d.profiled_time_scale = optionalNumber(j, "profiled_time_scale", w, Bound::Positive).value_or(1.0);
    if (d.profiled_time_scale > kMaxTimeScale || d.profiled_time_scale < 1.0 / kMaxTimeScale)
        failField(w, "profiled_time_scale", "is " + json(d.profiled_time_scale).dump() + "; it must be between 1e-6 and 1e6");
    d.memory_bandwidth_bytes_per_s = optionalNumber(j, "memory_bandwidth_bytes_per_s", w, Bound::Positive).value_or(0.0);
    d.launch_overhead_s = optionalNumber(j, "launch_overhead_s", w, Bound::NonNegative).value_or(0.0);
    d.half_rate_flops = optionalNumber(j, "half_rate_flops", w, Bound::NonNegative).value_or(0.0);
    d.conv_efficiency = optionalNumber(j, "conv_efficiency", w, Bound::Positive).value_or(1.0);
    if (d.conv_efficiency < kMinConvEfficiency || d.conv_efficiency > kMaxConvEfficiency)
        failField(w, "conv_efficiency", "is " + json(d.conv_efficiency).dump() + "; a convolution's rate relative to a matmul's must be between " +
                                            json(kMinConvEfficiency).dump() + " and " + json(kMaxConvEfficiency).dump());
    d.kernels = readKernels(j, w);
    return d;
}

NetworkPorts readPorts(const json& node, const std::string& where) {
    if (!has(node, "ports")) return {};
    const json& j = requireObject(node, "ports", where);
    const std::string w = at(where, "ports");
    requireKnownFields(j, {"count", "bandwidth_bytes_per_s"}, w);
    NetworkPorts p;
    p.count = requireInt(j, "count", w, Bound::Positive);
    p.bandwidth_bytes_per_s = requireNumber(j, "bandwidth_bytes_per_s", w, Bound::Positive);
    return p;
}

// Appends the node `count` times. `devices` is the cluster's device count so far (kept by the
// caller: recounting it per node made reading quadratic in nodes).
void readNode(const json& j, const std::string& w, Cluster& c, int64_t& devices) {
    if (!j.is_object()) fail(w, "must be an object (got " + describe(j) + ")");
    requireKnownFields(j, {"count", "devices", "device", "intra", "ports", "compute_slots"}, w);
    const int count = optionalInt(j, "count", w, Bound::Positive).value_or(1);
    Node n;
    n.devices = requireInt(j, "devices", w, Bound::Positive);
    n.device = readDevice(j, w);
    n.intra = readLink(j, "intra", w);
    n.ports = readPorts(j, w);
    n.compute_slots = optionalNumber(j, "compute_slots", w, Bound::Positive).value_or(0.0);
    if (n.compute_slots > 0 && n.compute_slots < kMinComputeSlots)
        failField(w, "compute_slots", "is " + json(n.compute_slots).dump() + "; a host shared by its devices has at least " +
                                          json(kMinComputeSlots).dump() + " of one device's compute");
    if (devices + static_cast<int64_t>(count) * n.devices > kMaxDevices)
        fail(w, "'count' x 'devices' brings the cluster above " + std::to_string(kMaxDevices) + " devices; is 'count' a typo?");
    devices += static_cast<int64_t>(count) * n.devices;
    c.nodes.insert(c.nodes.end(), static_cast<size_t>(count), n);
}

bool knownPreset(const std::string& name) {
    for (const ClusterPreset& p : clusterPresets())
        if (p.name == name) return true;
    return false;
}

}  // namespace

json clusterToJson(const Cluster& c) {
    json nodes = json::array();
    // Runs of identical nodes are written once with a count.
    for (size_t i = 0; i < c.nodes.size();) {
        size_t end = i + 1;
        while (end < c.nodes.size() && c.nodes[end] == c.nodes[i]) ++end;
        nodes.push_back(nodeToJson(c.nodes[i], static_cast<int>(end - i)));
        i = end;
    }
    return {{"format", kFormat},   {"version", kVersion},          {"name", c.name},
            {"source", c.source},   {"nodes", std::move(nodes)},    {"inter", linkToJson(c.inter)}};
}

Cluster clusterFromJson(const json& j, const std::string& where) {
    requireFormat(j, kFormat, kVersion, where);
    // "probe": what `hippie-engine probe` measured to write the file; for people, not read.
    requireKnownFields(j, {"format", "version", "name", "source", "nodes", "inter", "probe"}, where);
    Cluster c;
    c.name = requireString(j, "name", where);
    c.source = optionalString(j, "source", where).value_or("");
    const json& nodes = requireArray(j, "nodes", where);
    if (nodes.empty()) failField(where, "nodes", "is empty: a cluster needs at least one node");
    int64_t devices = 0;
    c.nodes.reserve(nodes.size());  // at least one node each
    for (size_t i = 0; i < nodes.size(); ++i) readNode(nodes[i], at(where, "nodes", i), c, devices);
    // Devices of one node never use the inter-node link, so a one-node cluster may omit it.
    if (c.nodes.size() == 1 && !has(j, "inter"))
        c.inter = c.nodes.front().intra;
    else
        c.inter = readLink(j, "inter", where);
    return c;
}

Cluster loadClusterFile(const std::string& path) { return clusterFromJson(readJsonFile(path), path); }

void saveClusterFile(const Cluster& c, const std::string& path) { writeJsonFile(clusterToJson(c), path); }

Cluster loadCluster(const std::string& preset_or_file) {
    if (knownPreset(preset_or_file)) return buildClusterPreset(preset_or_file);
    std::error_code ec;
    if (std::filesystem::is_regular_file(preset_or_file, ec)) return loadClusterFile(preset_or_file);
    std::string known;
    for (const ClusterPreset& p : clusterPresets()) known += (known.empty() ? "" : ", ") + p.name;
    throw Error("cluster '" + preset_or_file + "' is neither a preset nor a file; presets: " + known);
}

}  // namespace hippie
