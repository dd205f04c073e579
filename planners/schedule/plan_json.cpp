#include "planners/schedule/plan_json.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/common/json_read.h"
#include "planners/model/overrides_json.h"
#include "planners/model/presets.h"

namespace hippie {

using nlohmann::json;
using namespace json_read;

namespace {

constexpr const char* kFormat = "hippie-plan";
// Version 2 adds model.overrides, version 3 zero_stage, version 4 tp and sequence_parallel,
// version 5 selective_recompute, version 6 stage_replicas, version 7 stage_tp (both written only
// when set); a plan without them is still written with the lowest version that holds it, so
// older readers read it.
constexpr int kVersion = 7;
constexpr int kStageTpVersion = 7;
constexpr int kStageReplicasVersion = 6;
constexpr int kZeroStageVersion = 3;
constexpr int kTensorParallelVersion = 4;
constexpr int kSelectiveRecomputeVersion = 5;
// Most devices a plan may use: above the largest GPU clusters built (about 100,000 GPUs); it
// bounds what the device map allocates before any
// cluster is consulted. (At 2^20 a plan of dp 355,584 took 8.8 s to read and write back under
// AddressSanitizer: the fuzzer's repro-dp-355584-device-map.json.)
constexpr int64_t kMaxDevices = 1 << 17;

// Counts that size what follows, checked against each other before anything is allocated.
void checkCounts(const Plan& p, const std::string& where) {
    if (p.micro_batches > kMaxMicroBatches)
        failField(where, "micro_batches", "is " + std::to_string(p.micro_batches) + "; at most " +
                                              std::to_string(kMaxMicroBatches) + " are supported");
    const int64_t samples_needed = static_cast<int64_t>(p.dp) * p.micro_batches;  // one sample per micro-batch and replica
    if (samples_needed > p.global_batch)
        failField(where, "global_batch", "is " + std::to_string(p.global_batch) + " samples, fewer than dp " + std::to_string(p.dp) +
                                             " x " + std::to_string(p.micro_batches) + " micro-batches of at least one sample");
    if (p.isPlacement()) return;
    int64_t devices = static_cast<int64_t>(p.stages.size()) * p.dp * p.tp;
    if (p.perStageReplication()) {
        devices = 0;
        for (int r : p.stage_replicas) devices += r;
    }
    if (p.perStageTp()) {
        devices = 0;
        for (int t : p.stage_tp) devices += int64_t{p.dp} * t;
    }
    if (devices > kMaxDevices) {
        const char* field = p.tp > 1 ? "tp" : "dp";
        failField(where, field, "is " + std::to_string(p.tp > 1 ? p.tp : p.dp) + ": with " + std::to_string(p.stages.size()) +
                                    " stages, dp " + std::to_string(p.dp) + " and tp " + std::to_string(p.tp) + " the plan needs " +
                                    std::to_string(devices) + " devices, more than the " + std::to_string(kMaxDevices) + " supported");
    }
}

// ---- writing ----

json modelToJson(const ModelSpec& s) {
    json j = {{"zoo", s.zoo}, {"file", s.file}, {"batch_size", s.batch_size}, {"seq_len", s.seq_len},
              {"precision", toString(s.precision)}};
    writeOverrides(j, s);
    return j;
}

json stagesToJson(const std::vector<StageRange>& stages) {
    json out = json::array();
    for (const StageRange& s : stages) out.push_back({{"first_layer", s.first_layer}, {"last_layer", s.last_layer}});
    return out;
}

// ---- reading ----

template <typename T, typename Parse>
T readEnum(const json& j, const char* key, const std::string& where, T fallback, Parse parse) {
    const std::optional<std::string> s = optionalString(j, key, where);
    if (!s) return fallback;
    try {
        return parse(*s);
    } catch (const Error& e) {
        failField(where, key, std::string("is invalid: ") + e.what());
    }
}

ModelSpec readModel(const json& j, const std::string& where) {
    const json& m = requireObject(j, "model", where);
    const std::string w = at(where, "model");
    requireKnownFields(m, {"zoo", "file", "batch_size", "seq_len", "precision", "overrides"}, w);
    ModelSpec s;
    s.zoo = optionalString(m, "zoo", w).value_or("");
    s.file = optionalString(m, "file", w).value_or("");
    if (s.zoo.empty() && s.file.empty()) fail(w, "fields 'zoo' and 'file' are both empty: name a zoo model or a graph file");
    s.batch_size = requireInt(m, "batch_size", w, Bound::Positive);
    s.seq_len = optionalInt(m, "seq_len", w, Bound::NonNegative).value_or(0);
    s.precision = readEnum(m, "precision", w, Precision::FP32, precisionFromString);
    readOverrides(m, w, s);
    return expandPreset(s);  // a preset is read as the zoo model it sizes
}

// Stages must tile the layers from 0 in order: stage i starts right after stage i-1.
std::vector<StageRange> readStages(const json& j, const std::string& where) {
    std::vector<StageRange> stages;
    const json* arr = optionalArray(j, "stages", where);
    if (!arr) return stages;
    for (size_t i = 0; i < arr->size(); ++i) {
        const std::string w = at(where, "stages", i);
        const json& s = (*arr)[i];
        if (!s.is_object()) fail(w, "must be an object (got " + describe(s) + ")");
        requireKnownFields(s, {"first_layer", "last_layer"}, w);
        StageRange r;
        r.first_layer = requireInt(s, "first_layer", w, Bound::NonNegative);
        r.last_layer = requireInt(s, "last_layer", w, Bound::NonNegative);
        if (r.last_layer < r.first_layer)
            failField(w, "last_layer", "is " + std::to_string(r.last_layer) + ", before 'first_layer' " +
                                           std::to_string(r.first_layer));
        const int expected_first = stages.empty() ? 0 : stages.back().last_layer + 1;
        if (r.first_layer != expected_first)
            failField(w, "first_layer", "is " + std::to_string(r.first_layer) + " but must be " +
                                            std::to_string(expected_first) +
                                            ": stages cover the layers in order without gaps or overlaps");
        stages.push_back(r);
    }
    return stages;
}

std::vector<int> readIntArray(const json& j, const char* key, const std::string& where, Bound bound) {
    std::vector<int> out;
    const json* arr = optionalArray(j, key, where);
    if (!arr) return out;
    for (size_t i = 0; i < arr->size(); ++i) out.push_back(elementInt((*arr)[i], at(where, key, i), bound));
    return out;
}

std::vector<std::vector<int>> readDeviceMap(const json& j, const std::string& where) {
    std::vector<std::vector<int>> map;
    const json* arr = optionalArray(j, "device_map", where);
    if (!arr) return map;
    for (size_t s = 0; s < arr->size(); ++s) {
        const std::string ws = at(where, "device_map", s);
        const json& row = (*arr)[s];
        if (!row.is_array()) fail(ws, "must be an array of device ids, one per replica (got " + describe(row) + ")");
        std::vector<int> ids;
        for (size_t r = 0; r < row.size(); ++r)
            ids.push_back(elementInt(row[r], ws + "[" + std::to_string(r) + "]", Bound::NonNegative));
        map.push_back(std::move(ids));
    }
    return map;
}

void checkShape(const Plan& p, const std::string& where) {
    if (p.stages.empty() == p.placement.empty())
        fail(where, p.stages.empty() ? "fields 'stages' and 'placement' are both empty: a plan needs one of them"
                                     : "fields 'stages' and 'placement' are both set: a plan has one or the other");
    if (p.schedule == ScheduleKind::Interleaved && p.stages.size() % static_cast<size_t>(p.virtual_stages) != 0)
        failField(where, "virtual_stages", "is " + std::to_string(p.virtual_stages) + " but 'stages' has " +
                                               std::to_string(p.stages.size()) + " entries; it must be a multiple");
    if (p.isPlacement() && p.zero_stage != 0)
        failField(where, "zero_stage", "is " + std::to_string(p.zero_stage) +
                                           " but placement plans have no data-parallel replicas to shard over; use 0");
    if (p.isPlacement() && p.tp != 1)
        failField(where, "tp", "is " + std::to_string(p.tp) + " but placement plans place whole ops on one device each; use 1");
    if (p.sequence_parallel && p.tp == 1)
        failField(where, "sequence_parallel", "is true but 'tp' is 1: sequence parallelism splits over the tensor-parallel ranks, "
                                              "so it needs tp > 1");
}

void checkDeviceMap(const Plan& p, const std::string& where) {
    if (p.isPlacement()) return;
    const size_t pp = static_cast<size_t>(p.pipelineDepth());
    if (p.device_map.size() != pp)
        failField(where, "device_map", "has " + std::to_string(p.device_map.size()) + " rows but the plan has " +
                                           std::to_string(pp) + " pipeline stages (one row each)");
    // Device -> the cell (stage, lane) that first used it. A plan may hold hundreds of
    // thousands of cells (dp 355,584 passed the fuzzer): no string per cell, only for the one
    // reported.
    const size_t widest = static_cast<size_t>(p.dp) * static_cast<size_t>(p.tp);  // tp: the widest stage's
    std::unordered_map<int, std::pair<size_t, size_t>> seen;
    seen.reserve(std::min<size_t>(pp * widest, size_t{1} << 20));
    const auto cell = [](size_t s, size_t r) { return "device_map[" + std::to_string(s) + "][" + std::to_string(r) + "]"; };
    for (size_t s = 0; s < pp; ++s) {
        const int t = p.tpOf(static_cast<int>(s));
        const size_t expected = static_cast<size_t>(p.replicasOf(static_cast<int>(s))) * static_cast<size_t>(t);
        if (p.perStageReplication() && p.device_map[s].size() != expected)
            fail(at(where, "device_map", s), "has " + std::to_string(p.device_map[s].size()) + " devices but 'stage_replicas' gives stage " +
                                                 std::to_string(s) + " " + std::to_string(expected));
        if (p.device_map[s].size() != expected)
            fail(at(where, "device_map", s),
                 "has " + std::to_string(p.device_map[s].size()) + " devices but 'dp' is " + std::to_string(p.dp) +
                     (t > 1 ? std::string(p.perStageTp() ? " and 'stage_tp' " : " and 'tp' ") + std::to_string(t) + " (tp devices per replica, " +
                                  std::to_string(expected) + " in all)"
                            : std::string(" (one device per replica)")));
        for (size_t r = 0; r < p.device_map[s].size(); ++r) {
            const int d = p.device_map[s][r];
            const auto [it, inserted] = seen.emplace(d, std::make_pair(s, r));
            if (!inserted)
                fail(at(where, cell(s, r)), "device " + std::to_string(d) + " is also used by " + cell(it->second.first, it->second.second));
        }
    }
}

// What a per-stage list is called in the messages of readPerStage.
struct PerStageList {
    const char* field;       // "stage_replicas"
    const char* placement;   // what a placement plan lacks: "no pipeline stages to replicate"
    const char* each;        // "replica count"
    const char* whole;       // the plan-wide field the list sets: "dp"
    const char* unit;        // after the widest stage's value: " replicas", or ""
    const char* what;        // "per-stage replication"
};

// A per-stage list of `p` (stage_replicas, stage_tp): one positive value per stage; `whole` is
// then the largest, taken from the list when the plan does not give the field. Empty when the
// plan has no such list. `refusal`, when not empty, is the list's message if it is set at all
// (after its length is checked).
std::vector<int> readPerStage(const json& j, const std::string& where, const Plan& p, const PerStageList& l, int& whole,
                              const std::string& refusal = "") {
    std::vector<int> v = readIntArray(j, l.field, where, Bound::Positive);
    if (v.empty()) return v;
    if (p.isPlacement()) failField(where, l.field, std::string("is set but placement plans have ") + l.placement);
    if (v.size() != p.stages.size())
        failField(where, l.field, "has " + std::to_string(v.size()) + " entries for " + std::to_string(p.stages.size()) + " stages (one " +
                                      l.each + " per stage)");
    if (!refusal.empty()) failField(where, l.field, refusal);
    const int widest = *std::max_element(v.begin(), v.end());
    if (!j.contains(l.whole)) whole = widest;
    if (whole != widest)
        failField(where, l.whole, "is " + std::to_string(whole) + " but the widest stage of '" + l.field + "' has " + std::to_string(widest) +
                                      l.unit + "; with " + l.what + " " + l.whole + " is the widest stage's");
    return v;
}

// "stage_replicas" (dp the largest) and "stage_tp" (tp the largest). Lowering checks what else
// they need (checkPlan).
void readPerStageLists(const json& j, const std::string& where, Plan& p) {
    p.stage_replicas = readPerStage(j, where, p,
                                    {"stage_replicas", "no pipeline stages to replicate", "replica count", "dp", " replicas", "per-stage replication"},
                                    p.dp);
    p.stage_tp = readPerStage(j, where, p, {"stage_tp", "no pipeline stages", "tensor-parallel degree", "tp", "", "per-stage degrees"}, p.tp,
                              p.perStageReplication() ? "is set with 'stage_replicas'; per-stage replication runs tp 1" : "");
}

// The lowest format version that holds every field the plan sets.
int formatVersion(const Plan& p) {
    if (p.perStageTp()) return kStageTpVersion;
    if (p.perStageReplication()) return kStageReplicasVersion;
    if (p.selective_recompute) return kSelectiveRecomputeVersion;
    if (p.tp != 1 || p.sequence_parallel) return kTensorParallelVersion;
    if (p.zero_stage != 0) return kZeroStageVersion;
    return modelSpecFormatVersion(p.model);
}

// "groups" is derived from device_map: its values are recomputed, not read, but it may hold
// only the keys planToJson writes.
void checkGroups(const json& j, const std::string& where) {
    if (const json* groups = optionalObject(j, "groups", where)) requireKnownFields(*groups, {"pipelines", "stages", "tensor"}, at(where, "groups"));
}

}  // namespace

json planToJson(const Plan& p) {
    json j = {{"format", kFormat},
            {"version", formatVersion(p)},
            {"model", modelToJson(p.model)},
            {"cluster", p.cluster},
            {"planner", p.planner},
            {"stages", stagesToJson(p.stages)},
            {"dp", p.dp},
            {"placement", p.placement},
            {"placement_order", p.placement_order},
            {"micro_batches", p.micro_batches},
            {"global_batch", p.global_batch},
            {"schedule", toString(p.schedule)},
            {"virtual_stages", p.virtual_stages},
            {"optimizer", toString(p.optimizer)},
            {"recompute_layers", p.recompute_layers},
            {"selective_recompute", p.selective_recompute},
            {"bucket_bytes", p.bucket_bytes},
            {"zero_stage", p.zero_stage},
            {"tp", p.tp},
            {"sequence_parallel", p.sequence_parallel},
            {"device_map", p.device_map},
            {"groups", {{"pipelines", p.pipelineGroups()}, {"stages", p.stageGroups()}, {"tensor", p.tpGroups()}}}};
    if (p.perStageReplication()) j["stage_replicas"] = p.stage_replicas;
    if (p.perStageTp()) j["stage_tp"] = p.stage_tp;
    return j;
}

Plan planFromJson(const json& j, const std::string& where) {
    requireFormat(j, kFormat, kVersion, where);
    requireKnownFields(j, {"format", "version", "model", "cluster", "planner", "stages", "dp", "placement", "placement_order",
                           "micro_batches", "global_batch", "schedule", "virtual_stages", "optimizer", "recompute_layers",
                           "selective_recompute", "bucket_bytes", "zero_stage", "tp", "sequence_parallel", "device_map", "groups", "stage_replicas",
                           "stage_tp"},
                       where);
    checkGroups(j, where);
    Plan p;
    p.model = readModel(j, where);
    p.cluster = optionalString(j, "cluster", where).value_or("");
    p.planner = optionalString(j, "planner", where).value_or("manual");
    p.stages = readStages(j, where);
    p.dp = optionalInt(j, "dp", where, Bound::Positive).value_or(1);
    p.placement = readIntArray(j, "placement", where, Bound::NonNegative);
    p.placement_order = readIntArray(j, "placement_order", where, Bound::NonNegative);
    p.micro_batches = requireInt(j, "micro_batches", where, Bound::Positive);
    p.global_batch = requireInt(j, "global_batch", where, Bound::Positive);
    p.schedule = readEnum(j, "schedule", where, ScheduleKind::OneFOneB, scheduleFromString);
    p.virtual_stages = optionalInt(j, "virtual_stages", where, Bound::Positive).value_or(1);
    p.optimizer = readEnum(j, "optimizer", where, Optimizer::Adam, optimizerFromString);
    p.recompute_layers = readIntArray(j, "recompute_layers", where, Bound::NonNegative);
    p.selective_recompute = optionalBool(j, "selective_recompute", where).value_or(false);
    p.bucket_bytes = optionalInt64(j, "bucket_bytes", where, Bound::Positive).value_or(p.bucket_bytes);
    p.zero_stage = optionalInt(j, "zero_stage", where, Bound::NonNegative).value_or(0);
    if (p.zero_stage > kMaxZeroStage)
        failField(where, "zero_stage", "is " + std::to_string(p.zero_stage) + "; ZeRO stages are 0 (none), 1 (optimizer state), 2 (+ gradients) "
                                       "and 3 (+ parameters)");
    p.tp = optionalInt(j, "tp", where, Bound::Positive).value_or(1);
    p.sequence_parallel = optionalBool(j, "sequence_parallel", where).value_or(false);
    readPerStageLists(j, where, p);
    checkShape(p, where);
    checkCounts(p, where);
    p.device_map = readDeviceMap(j, where);
    if (p.device_map.empty() && !p.isPlacement()) p.device_map = defaultDeviceMap(p);
    checkDeviceMap(p, where);
    return p;
}

Plan loadPlanFile(const std::string& path) { return planFromJson(readJsonFile(path), path); }

void savePlanFile(const Plan& p, const std::string& path) { writeJsonFile(planToJson(p), path); }

}  // namespace hippie
