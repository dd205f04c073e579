#include "planners/sim/trace_json.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/common/json_read.h"

namespace hippie {

using nlohmann::json;
using namespace json_read;

namespace {

constexpr const char* kFormat = "hippie-trace";
constexpr int kVersion = 1;
constexpr double kMicrosecondsPerSecond = 1e6;  // Chrome trace timestamps are in microseconds
constexpr int kNone = -1;                       // "no stage / micro-batch / peer" in TraceEvent

// ---- writing ----

json eventToJson(const TraceEvent& e) {
    return {{"device", e.device}, {"start_s", e.start_s}, {"end_s", e.end_s}, {"kind", toString(e.kind)},
            {"stage", e.stage},   {"mb", e.mb},           {"peer", e.peer},   {"bytes", e.bytes}};
}

json memoryToJson(const std::vector<MemorySample>& curve) {
    json out = json::array();
    for (const MemorySample& m : curve) out.push_back({{"time_s", m.time_s}, {"bytes", m.bytes}});
    return out;
}

// ---- reading ----

InstrKind kindFromString(const std::string& s, const std::string& where) {
    std::string known;
    for (int k = 0; k <= static_cast<int>(InstrKind::OptimizerStep); ++k) {
        const auto kind = static_cast<InstrKind>(k);
        if (s == toString(kind)) return kind;
        known += (known.empty() ? "" : ", ") + std::string(toString(kind));
    }
    failField(where, "kind", "is \"" + s + "\", not one of " + known);
}

// Stage, micro-batch and peer are indices or -1 for "none".
int requireIndexOrNone(const json& j, const char* key, const std::string& where) {
    const int v = requireInt(j, key, where);
    if (v < kNone) failField(where, key, "must be an index >= 0, or -1 for none (got " + std::to_string(v) + ")");
    return v;
}

std::vector<int64_t> readInt64Array(const json& j, const char* key, const std::string& where, size_t expected_size,
                                    const char* size_reason) {
    const json& arr = requireArray(j, key, where);
    if (arr.size() != expected_size)
        failField(where, key, "has " + std::to_string(arr.size()) + " entries but must have " +
                                  std::to_string(expected_size) + " (" + size_reason + ")");
    std::vector<int64_t> out;
    for (size_t i = 0; i < arr.size(); ++i) out.push_back(elementInt64(arr[i], at(where, key, i), Bound::NonNegative));
    return out;
}

// Global device id -> row.
std::map<int, size_t> readDevices(const json& j, const std::string& where, Trace& t) {
    const json& arr = requireArray(j, "devices", where);
    std::map<int, size_t> row_of;
    for (size_t i = 0; i < arr.size(); ++i) {
        const std::string w = at(where, "devices", i);
        const int d = elementInt(arr[i], w, Bound::NonNegative);
        if (!row_of.emplace(d, i).second) fail(w, "device " + std::to_string(d) + " is listed twice");
        t.devices.push_back(d);
    }
    return row_of;
}

TraceEvent readEvent(const json& e, const std::string& w, const std::map<int, size_t>& row_of) {
    if (!e.is_object()) fail(w, "must be an object (got " + describe(e) + ")");
    requireKnownFields(e, {"device", "start_s", "end_s", "kind", "stage", "mb", "peer", "bytes"}, w);
    TraceEvent ev;
    ev.device = requireInt(e, "device", w, Bound::NonNegative);
    if (!row_of.count(ev.device))
        failField(w, "device", "is " + std::to_string(ev.device) + ", which is not in 'devices'");
    ev.start_s = requireNumber(e, "start_s", w, Bound::NonNegative);
    ev.end_s = requireNumber(e, "end_s", w, Bound::NonNegative);
    if (ev.end_s < ev.start_s) failField(w, "end_s", "is before 'start_s'");
    ev.kind = kindFromString(requireString(e, "kind", w), w);
    ev.stage = requireIndexOrNone(e, "stage", w);
    ev.mb = requireIndexOrNone(e, "mb", w);
    ev.peer = requireIndexOrNone(e, "peer", w);
    ev.bytes = requireInt64(e, "bytes", w, Bound::NonNegative);
    return ev;
}

std::vector<MemorySample> readCurve(const json& arr, const std::string& w) {
    if (!arr.is_array()) fail(w, "must be an array of {time_s, bytes} samples (got " + describe(arr) + ")");
    std::vector<MemorySample> curve;
    for (size_t i = 0; i < arr.size(); ++i) {
        const std::string ws = w + "[" + std::to_string(i) + "]";
        const json& s = arr[i];
        if (!s.is_object()) fail(ws, "must be an object (got " + describe(s) + ")");
        requireKnownFields(s, {"time_s", "bytes"}, ws);
        MemorySample m;
        m.time_s = requireNumber(s, "time_s", ws, Bound::NonNegative);
        m.bytes = requireInt64(s, "bytes", ws, Bound::NonNegative);
        if (!curve.empty() && m.time_s < curve.back().time_s)
            failField(ws, "time_s", "goes back in time: samples must be time-ordered");
        curve.push_back(m);
    }
    return curve;
}

// ---- Chrome trace ----

std::string eventPrefix(InstrKind k) {
    // The letters of Instr::str(), so the Chrome view and `hippie-plan` print alike.
    switch (k) {
    case InstrKind::Forward: return "F";
    case InstrKind::Backward: return "B";
    case InstrKind::BackwardInput: return "I";
    case InstrKind::BackwardWeight: return "W";
    case InstrKind::Recompute: return "R";
    case InstrKind::SendActivation: return "SEND_F";
    case InstrKind::RecvActivation: return "RECV_F";
    case InstrKind::SendGrad: return "SEND_B";
    case InstrKind::RecvGrad: return "RECV_B";
    case InstrKind::AllReduce: return "AR";
    case InstrKind::ReduceScatter: return "RS";
    case InstrKind::AllGather: return "AG";
    case InstrKind::TensorParallel: return "TP";
    case InstrKind::ZeroGather: return "Z3AG";
    case InstrKind::OptimizerStep: return "OPT";
    }
    return "?";
}

// "F3" (forward of micro-batch 3), "AR0" (all-reduce of stage 0's gradients; RS, AG alike), "OPT".
std::string eventName(const TraceEvent& e) {
    const int n = isCollective(e.kind) ? e.stage : e.mb;
    return eventPrefix(e.kind) + (n >= 0 ? std::to_string(n) : "");
}

int pidOf(int device, const Cluster* cluster) {
    if (!cluster || device < 0 || device >= cluster->deviceCount()) return 0;
    return cluster->nodeOf(device);
}

std::string rowName(size_t row, int device, const std::vector<std::string>& names) {
    if (row < names.size() && !names[row].empty()) return names[row];
    return "device " + std::to_string(device);
}

void appendMetadata(const Trace& t, const std::vector<std::string>& names, const Cluster* cluster, json& events) {
    std::set<int> pids;
    for (size_t row = 0; row < t.devices.size(); ++row) {
        const int d = t.devices[row];
        const int pid = pidOf(d, cluster);
        pids.insert(pid);
        events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", d},
                          {"args", {{"name", rowName(row, d, names)}}}});
        events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", pid}, {"tid", d},
                          {"args", {{"sort_index", row}}}});
    }
    for (const int pid : pids)
        events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0},
                          {"args", {{"name", cluster ? "node " + std::to_string(pid) : std::string("devices")}}}});
}

json chromeEvent(const TraceEvent& e, const Cluster* cluster) {
    json args = {{"stage", e.stage}, {"mb", e.mb}, {"bytes", e.bytes}};
    if (e.peer >= 0) args["peer"] = e.peer;
    return {{"name", eventName(e)},
            {"cat", toString(e.kind)},
            {"ph", "X"},
            {"ts", e.start_s * kMicrosecondsPerSecond},
            {"dur", (e.end_s - e.start_s) * kMicrosecondsPerSecond},
            {"pid", pidOf(e.device, cluster)},
            {"tid", e.device},
            {"args", std::move(args)}};
}

void appendMemoryCounters(const Trace& t, const Cluster* cluster, json& events) {
    for (size_t row = 0; row < t.memory.size() && row < t.devices.size(); ++row) {
        const int d = t.devices[row];
        const std::string name = "memory device " + std::to_string(d);
        for (const MemorySample& m : t.memory[row])
            events.push_back({{"name", name}, {"ph", "C"}, {"ts", m.time_s * kMicrosecondsPerSecond},
                              {"pid", pidOf(d, cluster)}, {"tid", d}, {"args", {{"bytes", m.bytes}}}});
    }
}

}  // namespace

json metricsToJson(const TraceMetrics& m) {
    return {{"iteration_time_s", m.iteration_time_s},
            {"throughput_samples_per_s", m.throughput_samples_per_s},
            {"peak_memory_bytes", m.peak_memory_bytes},
            {"max_peak_memory_bytes", m.max_peak_memory_bytes},
            {"bubble_fraction", m.bubble_fraction},
            {"allreduce_hidden_fraction", m.allreduce_hidden_fraction},
            {"memory_efficiency", m.memory_efficiency},
            {"fits_memory", m.fits_memory}};
}

TraceMetrics metricsFromJson(const json& j, const std::string& where) {
    if (!j.is_object()) fail(where, "must be an object (got " + describe(j) + ")");
    requireKnownFields(j, {"iteration_time_s", "throughput_samples_per_s", "peak_memory_bytes", "max_peak_memory_bytes",
                           "bubble_fraction", "allreduce_hidden_fraction", "memory_efficiency", "fits_memory"},
                       where);
    TraceMetrics m;
    m.iteration_time_s = requireNumber(j, "iteration_time_s", where, Bound::NonNegative);
    m.throughput_samples_per_s = requireNumber(j, "throughput_samples_per_s", where, Bound::NonNegative);
    const json& peaks = requireArray(j, "peak_memory_bytes", where);
    for (size_t i = 0; i < peaks.size(); ++i)
        m.peak_memory_bytes.push_back(elementInt64(peaks[i], at(where, "peak_memory_bytes", i), Bound::NonNegative));
    m.max_peak_memory_bytes = requireInt64(j, "max_peak_memory_bytes", where, Bound::NonNegative);
    m.bubble_fraction = requireNumber(j, "bubble_fraction", where, Bound::NonNegative);
    m.allreduce_hidden_fraction = requireNumber(j, "allreduce_hidden_fraction", where, Bound::NonNegative);
    m.memory_efficiency = requireNumber(j, "memory_efficiency", where, Bound::NonNegative);
    m.fits_memory = requireBool(j, "fits_memory", where);
    return m;
}

json traceToJson(const Trace& t) {
    json events = json::array();
    for (const TraceEvent& e : t.events) events.push_back(eventToJson(e));
    json memory = json::array();
    for (const auto& curve : t.memory) memory.push_back(memoryToJson(curve));
    return {{"format", kFormat},
            {"version", kVersion},
            {"devices", t.devices},
            {"capacity_bytes", t.capacity_bytes},
            {"events", std::move(events)},
            {"memory", std::move(memory)},
            {"metrics", metricsToJson(t.metrics)}};
}

Trace traceFromJson(const json& j, const std::string& where) {
    requireFormat(j, kFormat, kVersion, where);
    requireKnownFields(j, {"format", "version", "devices", "capacity_bytes", "events", "memory", "metrics"}, where);
    Trace t;
    const std::map<int, size_t> row_of = readDevices(j, where, t);
    const size_t rows = t.devices.size();
    t.capacity_bytes = readInt64Array(j, "capacity_bytes", where, rows, "one per entry of 'devices'");
    const json& events = requireArray(j, "events", where);
    for (size_t i = 0; i < events.size(); ++i) t.events.push_back(readEvent(events[i], at(where, "events", i), row_of));
    const json& memory = requireArray(j, "memory", where);
    if (memory.size() != rows)
        failField(where, "memory", "has " + std::to_string(memory.size()) + " curves but 'devices' has " +
                                       std::to_string(rows) + " entries (one curve per device)");
    for (size_t i = 0; i < memory.size(); ++i) t.memory.push_back(readCurve(memory[i], at(where, "memory", i)));
    const std::string wm = at(where, "metrics");
    t.metrics = metricsFromJson(requireObject(j, "metrics", where), wm);
    if (t.metrics.peak_memory_bytes.size() != rows)
        failField(wm, "peak_memory_bytes", "has " + std::to_string(t.metrics.peak_memory_bytes.size()) +
                                               " entries but 'devices' has " + std::to_string(rows));
    return t;
}

json traceToChromeJson(const Trace& t, const std::vector<std::string>& device_names, const Cluster* cluster) {
    json events = json::array();
    appendMetadata(t, device_names, cluster, events);
    for (const TraceEvent& e : t.events) events.push_back(chromeEvent(e, cluster));
    appendMemoryCounters(t, cluster, events);
    return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

void saveChromeTrace(const Trace& t, const std::string& path, const std::vector<std::string>& device_names,
                     const Cluster* cluster) {
    writeJsonFile(traceToChromeJson(t, device_names, cluster), path);
}

}  // namespace hippie
