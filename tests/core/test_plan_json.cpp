// Plan: names of schedules and optimizers, derived sizes and groups, plan JSON round trips
// and rejections, and the schema.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/schedule/plan_json.h"
#include "error_of.h"
#include "schema_check.h"

using hippie::test::contains;
using hippie::test::errorOf;
using hippie::Error;
using hippie::Plan;
using hippie::ScheduleKind;
using nlohmann::json;
using Groups = std::vector<std::vector<int>>;

namespace {

// 4 stages x 2 replicas on a topology-aware (non-default) map, every field off its default.
Plan pipelinePlan() {
    Plan p;
    p.model.zoo = "gpt2-small";
    p.model.batch_size = 8;
    p.model.seq_len = 512;
    p.model.precision = hippie::Precision::BF16;
    p.cluster = "dgx-a100-1x8";
    p.planner = "hippie";
    p.stages = {{0, 3}, {4, 7}, {8, 10}, {11, 13}};
    p.dp = 2;
    p.micro_batches = 8;
    p.global_batch = 64;
    p.schedule = ScheduleKind::Hippie;
    p.optimizer = hippie::Optimizer::SGDMomentum;
    p.recompute_layers = {1, 5, 9};
    p.bucket_bytes = 1 << 20;
    p.device_map = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
    return p;
}

Plan interleavedPlan() {
    Plan p;
    p.model.file = "/tmp/model.graph.json";
    p.model.batch_size = 4;
    p.stages = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
    p.dp = 1;
    p.micro_batches = 4;
    p.global_batch = 16;
    p.schedule = ScheduleKind::Interleaved;
    p.virtual_stages = 2;
    p.device_map = hippie::defaultDeviceMap(2, 1);
    return p;
}

Plan placementPlan() {
    Plan p;
    p.model.zoo = "inception-v3";
    p.model.batch_size = 32;
    p.planner = "baechi-msct";
    p.placement = {0, 0, 1, 3, 1, 0};
    p.micro_batches = 1;
    p.global_batch = 32;
    p.schedule = ScheduleKind::GPipe;
    p.optimizer = hippie::Optimizer::SGD;
    return p;
}

// A scaled-down zoo model: size overrides and a sequence length.
Plan overridePlan() {
    Plan p;
    p.model.zoo = "gpt2-small";
    p.model.batch_size = 2;
    p.model.seq_len = 128;
    p.model.overrides = {{"layers", 2}, {"d_model", 64}, {"heads", 4}};
    p.stages = {{0, 1}, {2, 3}};
    p.micro_batches = 2;
    p.global_batch = 4;
    p.device_map = hippie::defaultDeviceMap(2, 1);
    return p;
}

// 2 stages x 2 replicas x 2 tensor-parallel ranks with sequence parallelism and ZeRO-1 on
// the default map.
Plan tensorParallelPlan() {
    Plan p = overridePlan();
    p.dp = 2;
    p.tp = 2;
    p.sequence_parallel = true;
    p.zero_stage = 1;
    p.micro_batches = 2;
    p.global_batch = 8;
    p.device_map = hippie::defaultDeviceMap(2, 2, 2);
    return p;
}

}  // namespace

class TestPlanJson : public QObject {
    Q_OBJECT

    static void comparePlans(const Plan& a, const Plan& b) {
        QCOMPARE(a.model.zoo, b.model.zoo);
        QCOMPARE(a.model.file, b.model.file);
        QCOMPARE(a.model.batch_size, b.model.batch_size);
        QCOMPARE(a.model.seq_len, b.model.seq_len);
        QCOMPARE(a.model.precision, b.model.precision);
        QCOMPARE(a.model.overrides, b.model.overrides);
        QCOMPARE(a.cluster, b.cluster);
        QCOMPARE(a.planner, b.planner);
        QCOMPARE(a.stages.size(), b.stages.size());
        for (size_t i = 0; i < a.stages.size(); ++i) {
            QCOMPARE(a.stages[i].first_layer, b.stages[i].first_layer);
            QCOMPARE(a.stages[i].last_layer, b.stages[i].last_layer);
        }
        QCOMPARE(a.dp, b.dp);
        QCOMPARE(a.placement, b.placement);
        QCOMPARE(a.micro_batches, b.micro_batches);
        QCOMPARE(a.global_batch, b.global_batch);
        QCOMPARE(a.schedule, b.schedule);
        QCOMPARE(a.virtual_stages, b.virtual_stages);
        QCOMPARE(a.optimizer, b.optimizer);
        QCOMPARE(a.recompute_layers, b.recompute_layers);
        QCOMPARE(a.bucket_bytes, b.bucket_bytes);
        QCOMPARE(a.zero_stage, b.zero_stage);
        QCOMPARE(a.tp, b.tp);
        QCOMPARE(a.sequence_parallel, b.sequence_parallel);
        QCOMPARE(a.device_map, b.device_map);
    }

    static void expectRejected(const char* what, const std::function<void(json&)>& mutate,
                               const std::vector<std::string>& parts, const Plan& base = pipelinePlan()) {
        json j = hippie::planToJson(base);
        mutate(j);
        const std::string msg = errorOf([&] { hippie::planFromJson(j, "p.json"); });
        QVERIFY2(!msg.empty(), (std::string(what) + ": accepted").c_str());
        QVERIFY2(msg.rfind("p.json: ", 0) == 0, (std::string(what) + ": " + msg).c_str());
        for (const std::string& p : parts)
            QVERIFY2(contains(msg, p), (std::string(what) + ": '" + p + "' not in: " + msg).c_str());
    }

private slots:
    void scheduleNamesRoundTrip() {
        const std::vector<ScheduleKind> kinds = hippie::allScheduleKinds();
        QCOMPARE(kinds.size(), size_t{5});
        for (ScheduleKind k : kinds) QCOMPARE(hippie::scheduleFromString(hippie::toString(k)), k);
        QCOMPARE(std::string(hippie::toString(ScheduleKind::OneFOneB)), std::string("1f1b"));
        QCOMPARE(std::string(hippie::toString(ScheduleKind::ZeroBubbleH1)), std::string("zb-h1"));
        QCOMPARE(hippie::scheduleFromString("interleaved"), ScheduleKind::Interleaved);
        const std::string msg = errorOf([] { hippie::scheduleFromString("2f2b"); });
        QVERIFY2(contains(msg, "2f2b") && contains(msg, "gpipe") && contains(msg, "zb-h1"), msg.c_str());
    }

    void optimizerNamesRoundTrip() {
        for (auto o : {hippie::Optimizer::SGD, hippie::Optimizer::SGDMomentum, hippie::Optimizer::Adam})
            QCOMPARE(hippie::optimizerFromString(hippie::toString(o)), o);
        QCOMPARE(std::string(hippie::toString(hippie::Optimizer::SGDMomentum)), std::string("sgd-momentum"));
        const std::string msg = errorOf([] { hippie::optimizerFromString("lamb"); });
        QVERIFY2(contains(msg, "lamb") && contains(msg, "adam"), msg.c_str());
    }

    void derivedSizes() {
        const Plan p = pipelinePlan();
        QCOMPARE(p.pipelineDepth(), 4);
        QCOMPARE(p.deviceCount(), 8);
        QCOMPARE(p.microBatchSize(), 4.0);
        const Plan v = interleavedPlan();
        QCOMPARE(v.pipelineDepth(), 2);
        QCOMPARE(v.deviceCount(), 2);
        const Plan pl = placementPlan();
        QVERIFY(pl.isPlacement());
        QCOMPARE(pl.deviceCount(), 3);
        Plan odd = pipelinePlan();
        odd.global_batch = 12;
        odd.micro_batches = 4;
        QCOMPARE(odd.microBatchSize(), 1.5);
    }

    void defaultDeviceMapPacksPipelines() {
        QCOMPARE(hippie::defaultDeviceMap(2, 3), (Groups{{0, 2, 4}, {1, 3, 5}}));
        QCOMPARE(hippie::defaultDeviceMap(1, 1), (Groups{{0}}));
        Plan p = pipelinePlan();
        p.device_map = hippie::defaultDeviceMap(4, 2);
        QCOMPARE(p.pipelineGroups(), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
        QCOMPARE(p.stageGroups(), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    }

    // Rank k of replica r of stage s on device (r * pp + s) * tp + k: each tensor-parallel
    // group is contiguous; data-parallel groups are per (stage, rank), pipelines per
    // (replica, rank).
    void tensorParallelGroups() {
        QCOMPARE(hippie::defaultDeviceMap(2, 2, 2), (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
        QCOMPARE(hippie::defaultDeviceMap(1, 1, 4), (Groups{{0, 1, 2, 3}}));
        const Plan p = tensorParallelPlan();
        QCOMPARE(p.deviceCount(), 8);
        QCOMPARE(p.microBatchSize(), 2.0);
        QCOMPARE(p.tpGroups(), (Groups{{0, 1}, {4, 5}, {2, 3}, {6, 7}}));
        QCOMPARE(p.stageGroups(), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
        QCOMPARE(p.pipelineGroups(), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
        Plan mapped = p;  // groups follow an explicit map the same way
        mapped.device_map = {{7, 6, 5, 4}, {3, 2, 1, 0}};
        QCOMPARE(mapped.tpGroups(), (Groups{{7, 6}, {5, 4}, {3, 2}, {1, 0}}));
        QCOMPARE(mapped.stageGroups(), (Groups{{7, 5}, {6, 4}, {3, 1}, {2, 0}}));
        QCOMPARE(mapped.pipelineGroups(), (Groups{{7, 3}, {6, 2}, {5, 1}, {4, 0}}));
        // Without tensor parallelism every replica is its own group of one.
        QCOMPARE(pipelinePlan().tpGroups(), (Groups{{0}, {4}, {1}, {5}, {2}, {6}, {3}, {7}}));
        QVERIFY(placementPlan().tpGroups().empty());
    }

    void groupsFollowTheDeviceMap() {
        Plan p = pipelinePlan();
        p.device_map = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
        QCOMPARE(p.pipelineGroups(), (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
        QCOMPARE(p.stageGroups(), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
        const Plan pl = placementPlan();
        QCOMPARE(pl.pipelineGroups(), (Groups{{0, 1, 3}}));
        QCOMPARE(pl.stageGroups(), (Groups{{0}, {1}, {3}}));
    }

    void roundTrips() {
        for (const Plan& p : {pipelinePlan(), interleavedPlan(), placementPlan(), overridePlan(), tensorParallelPlan()}) {
            const json j = hippie::planToJson(p);
            const Plan back = hippie::planFromJson(j);
            comparePlans(p, back);
            QCOMPARE(hippie::planToJson(back), j);
        }
        QTemporaryDir dir;
        const std::string path = dir.filePath("plan.json").toStdString();
        hippie::savePlanFile(pipelinePlan(), path);
        comparePlans(pipelinePlan(), hippie::loadPlanFile(path));
    }

    // Overrides make a version 2 file, so a build that does not know them refuses it instead
    // of planning the published size; a plan without them stays version 1.
    void overridesAreVersionTwo() {
        const json with = hippie::planToJson(overridePlan());
        QCOMPARE(with["version"].get<int>(), 2);
        QCOMPARE(with["model"]["overrides"], (json{{"layers", 2}, {"d_model", 64}, {"heads", 4}}));
        QCOMPARE(with["model"]["seq_len"].get<int>(), 128);
        const json without = hippie::planToJson(pipelinePlan());
        QCOMPARE(without["version"].get<int>(), 1);
        QVERIFY(!without["model"].contains("overrides"));
        json fractional = with;
        fractional["model"]["overrides"] = {{"width_mult", 0.5}};
        fractional["model"]["zoo"] = "resnet50";
        QCOMPARE(hippie::planFromJson(fractional).model.overrides, (std::map<std::string, double>{{"width_mult", 0.5}}));
    }

    // ZeRO makes a version 3 file (an older build refuses it rather than plan without the
    // sharding); without it the plan keeps its old version, and a file without the field reads
    // as stage 0.
    void zeroStageIsVersionThree() {
        Plan p = pipelinePlan();
        p.zero_stage = 2;
        const json j = hippie::planToJson(p);
        QCOMPARE(j["version"].get<int>(), 3);
        QCOMPARE(j["zero_stage"].get<int>(), 2);
        comparePlans(p, hippie::planFromJson(j));
        QCOMPARE(hippie::planToJson(pipelinePlan())["version"].get<int>(), 1);
        json old = hippie::planToJson(pipelinePlan());
        old.erase("zero_stage");
        QCOMPARE(hippie::planFromJson(old).zero_stage, 0);
    }

    // Tensor parallelism makes a version 4 file (an older build refuses it rather than train
    // every rank on the whole model); tp 1 keeps the old version, and a file without the
    // fields reads as tp 1 without sequence parallelism.
    void tensorParallelIsVersionFour() {
        const json j = hippie::planToJson(tensorParallelPlan());
        QCOMPARE(j["version"].get<int>(), 4);
        QCOMPARE(j["tp"].get<int>(), 2);
        QCOMPARE(j["sequence_parallel"].get<bool>(), true);
        QCOMPARE(j["groups"]["tensor"].get<Groups>(), (Groups{{0, 1}, {4, 5}, {2, 3}, {6, 7}}));
        Plan without_sp = tensorParallelPlan();
        without_sp.sequence_parallel = false;
        QCOMPARE(hippie::planToJson(without_sp)["version"].get<int>(), 4);
        Plan zero_only = tensorParallelPlan();
        zero_only.tp = 1;
        zero_only.sequence_parallel = false;
        zero_only.device_map = hippie::defaultDeviceMap(2, 2);
        QCOMPARE(hippie::planToJson(zero_only)["version"].get<int>(), 3);
        json old = hippie::planToJson(pipelinePlan());
        old.erase("tp");
        old.erase("sequence_parallel");
        const Plan back = hippie::planFromJson(old);
        QCOMPARE(back.tp, 1);
        QCOMPARE(back.sequence_parallel, false);
        // Without a device map the default one holds dp x tp devices per stage.
        json no_map = j;
        no_map.erase("device_map");
        QCOMPARE(hippie::planFromJson(no_map).device_map, hippie::defaultDeviceMap(2, 2, 2));
    }

    void rejectsBadTensorParallelism() {
        const Plan tp = tensorParallelPlan();
        expectRejected("tp 0", [](json& j) { j["tp"] = 0; }, {"'tp'", "positive"}, tp);
        expectRejected("tp type", [](json& j) { j["tp"] = "2"; }, {"'tp'"}, tp);
        expectRejected("sp type", [](json& j) { j["sequence_parallel"] = 1; }, {"'sequence_parallel'", "true or false"}, tp);
        expectRejected("sp without tp", [](json& j) { j["sequence_parallel"] = true; },
                       {"'sequence_parallel'", "'tp' is 1", "tp > 1"});
        expectRejected("tp on a placement", [](json& j) { j["tp"] = 2; }, {"'tp'", "placement"}, placementPlan());
        expectRejected("row of dp devices", [](json& j) { j["device_map"][1] = {2, 6}; },
                       {"device_map[1]", "'dp' is 2", "'tp' 2", "4 in all"}, tp);
        expectRejected("too many devices", [](json& j) { j["tp"] = 1 << 19; }, {"'tp'", "524288", "more than the 131072"}, tp);
        expectRejected("dp past the device limit", [](json& j) { j["dp"] = 355584; j["global_batch"] = 1000000000; },
                       {"'dp'", "1422336 devices", "more than the 131072"});
        expectRejected("duplicate rank", [](json& j) { j["device_map"][0][1] = 0; }, {"device_map[0][1]", "device 0", "device_map[0][0]"},
                       tp);
    }

    void rejectsBadOverrides() {
        const Plan base = overridePlan();
        expectRejected("override type", [](json& j) { j["model"]["overrides"]["layers"] = "2"; },
                       {"model", "overrides", "'layers'", "number"}, base);
        expectRejected("override key", [](json& j) { j["model"]["overrides"]["blocks1"] = 2; },
                       {"model", "overrides", "'blocks1'", "gpt2-small", "layers"}, base);
        expectRejected("override range", [](json& j) { j["model"]["overrides"]["layers"] = 0; },
                       {"model", "overrides", "'layers'", "1024"}, base);
        expectRejected("override object", [](json& j) { j["model"]["overrides"] = 3; }, {"model", "'overrides'"}, base);
        expectRejected("file with overrides", [](json& j) { j["model"]["overrides"] = {{"layers", 2}}; },
                       {"model", "overrides", "zoo"}, interleavedPlan());
    }

    void writesGroupsAndIgnoresThemOnLoad() {
        json j = hippie::planToJson(pipelinePlan());
        QCOMPARE(j["groups"]["pipelines"].get<Groups>(), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
        QCOMPARE(j["groups"]["stages"].get<Groups>(), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
        j["groups"] = {{"pipelines", "garbage"}};
        const Plan p = hippie::planFromJson(j);
        QCOMPARE(hippie::planToJson(p)["groups"]["stages"].get<Groups>(), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
    }

    void optionalFieldsTakeDefaults() {
        const json j = {{"format", "hippie-plan"},
                        {"version", 1},
                        {"model", {{"zoo", "gpt2-small"}, {"batch_size", 4}}},
                        {"stages", {{{"first_layer", 0}, {"last_layer", 5}}, {{"first_layer", 6}, {"last_layer", 13}}}},
                        {"micro_batches", 4},
                        {"global_batch", 8}};
        const Plan p = hippie::planFromJson(j);
        QCOMPARE(p.dp, 1);
        QCOMPARE(p.schedule, ScheduleKind::OneFOneB);
        QCOMPARE(p.optimizer, hippie::Optimizer::Adam);
        QCOMPARE(p.virtual_stages, 1);
        QCOMPARE(p.bucket_bytes, int64_t{25} * 1024 * 1024);
        QCOMPARE(p.model.precision, hippie::Precision::FP32);
        QCOMPARE(p.planner, std::string("manual"));
        QCOMPARE(p.device_map, hippie::defaultDeviceMap(2, 1));
        QVERIFY(p.model.overrides.empty());
        QCOMPARE(p.zero_stage, 0);
    }

    void rejectsInvalidFields() {
        expectRejected("format", [](json& j) { j["format"] = "hippie-trace"; }, {"'format'", "hippie-plan"});
        expectRejected("version", [](json& j) { j["version"] = 8; }, {"'version'", "up to version 7"});
        expectRejected("zero stage", [](json& j) { j["zero_stage"] = 4; }, {"'zero_stage'", "0 (none)", "3 (+ parameters)"});
        expectRejected("negative zero stage", [](json& j) { j["zero_stage"] = -1; }, {"'zero_stage'"});
        expectRejected("zero on a placement", [](json& j) { j["zero_stage"] = 1; }, {"'zero_stage'", "placement"}, placementPlan());
        expectRejected("no micro_batches", [](json& j) { j.erase("micro_batches"); }, {"'micro_batches'", "missing"});
        expectRejected("zero micro_batches", [](json& j) { j["micro_batches"] = 0; }, {"'micro_batches'", "positive"});
        expectRejected("global_batch type", [](json& j) { j["global_batch"] = "64"; }, {"'global_batch'"});
        expectRejected("negative dp", [](json& j) { j["dp"] = -2; }, {"'dp'"});
        expectRejected("schedule", [](json& j) { j["schedule"] = "2f2b"; }, {"'schedule'", "2f2b", "1f1b"});
        expectRejected("optimizer", [](json& j) { j["optimizer"] = "lamb"; }, {"'optimizer'", "lamb"});
        expectRejected("bucket", [](json& j) { j["bucket_bytes"] = 0; }, {"'bucket_bytes'"});
        expectRejected("virtual", [](json& j) { j["virtual_stages"] = 0; }, {"'virtual_stages'"});
        expectRejected("no model", [](json& j) { j.erase("model"); }, {"'model'"});
        expectRejected("model batch", [](json& j) { j["model"].erase("batch_size"); }, {"model", "'batch_size'"});
        expectRejected("model name", [](json& j) { j["model"]["zoo"] = ""; }, {"model", "'zoo'", "'file'"});
        expectRejected("model precision", [](json& j) { j["model"]["precision"] = "int8"; }, {"model", "'precision'"});
        expectRejected("recompute", [](json& j) { j["recompute_layers"][1] = -1; }, {"recompute_layers[1]"});
    }

    void rejectsBadStages() {
        expectRejected("gap", [](json& j) { j["stages"][2]["first_layer"] = 9; }, {"stages[2]", "'first_layer'", "8"});
        expectRejected("not from 0", [](json& j) { j["stages"][0]["first_layer"] = 1; }, {"stages[0]", "'first_layer'"});
        expectRejected("reversed", [](json& j) { j["stages"][1]["last_layer"] = 2; }, {"stages[1]", "'last_layer'"});
        expectRejected("stage type", [](json& j) { j["stages"][3] = 4; }, {"stages[3]"});
        expectRejected("both", [](json& j) { j["placement"] = {0, 1}; }, {"'stages'", "'placement'"});
        expectRejected("neither", [](json& j) { j["stages"] = json::array(); }, {"'stages'", "'placement'"});
        expectRejected("virtual not dividing", [](json& j) { j["virtual_stages"] = 3; }, {"'virtual_stages'", "4"},
                       interleavedPlan());
        expectRejected("placement", [](json& j) { j["placement"][3] = -1; }, {"placement[3]"}, placementPlan());
    }

    // The schema's "additionalProperties": false, held by the reader: a misspelt optional field is
    // named, not read as its default; unknown content never travels on with a plan.
    void rejectsUnknownFields() {
        json j = hippie::planToJson(pipelinePlan());
        j["zero_stge"] = 2;
        QCOMPARE(errorOf([&] { hippie::planFromJson(j, "p.json"); }),
                 std::string("p.json: unknown field \"zero_stge\" (known fields: format, version, model, cluster, planner, stages, "
                             "dp, placement, placement_order, micro_batches, global_batch, schedule, virtual_stages, optimizer, "
                             "recompute_layers, selective_recompute, bucket_bytes, zero_stage, tp, sequence_parallel, device_map, groups, stage_replicas, stage_tp); is it misspelt, or from a newer version?"));
        expectRejected("model", [](json& p) { p["model"]["seqlen"] = 64; }, {"p.json: model: unknown field \"seqlen\" (known fields: zoo,"});
        expectRejected("stage", [](json& p) { p["stages"][1]["tp"] = 2; }, {"p.json: stages[1]: unknown field \"tp\""});
        expectRejected("groups", [](json& p) { p["groups"]["x"] = json::array({json::array()}); },
                       {"p.json: groups: unknown field \"x\" (known fields: pipelines, stages, tensor)"});
        // A key is quoted as JSON, cut short: a newline cannot start a new line of the message.
        expectRejected("long key", [](json& p) { p[std::string("a\n") + std::string(100, 'k')] = 1; },
                       {"unknown field \"a\\n" + std::string(36, 'k') + "... (known fields"});
    }

    void rejectsBadDeviceMaps() {
        expectRejected("rows", [](json& j) { j["device_map"].erase(3); }, {"'device_map'", "3 rows", "4"});
        expectRejected("replicas", [](json& j) { j["device_map"][1] = {1}; }, {"device_map[1]", "'dp'"});
        expectRejected("duplicate", [](json& j) { j["device_map"][2][1] = 4; }, {"device_map[2][1]", "device 4", "device_map[0][1]"});
        expectRejected("negative", [](json& j) { j["device_map"][0][0] = -1; }, {"device_map[0][0]"});
        expectRejected("row type", [](json& j) { j["device_map"][0] = 3; }, {"device_map[0]"});
    }

    void schemaDocumentsEveryKey() {
        const json schema = schema_check::loadJson(schema_check::schemaPath("plan.schema.json"));
        QCOMPARE(schema["$schema"].get<std::string>(), std::string("https://json-schema.org/draft/2020-12/schema"));
        std::vector<std::string> problems;
        schema_check::undescribedProperties(schema, "", problems);
        QVERIFY2(problems.empty(), ("undescribed: " + schema_check::joined(problems)).c_str());
        for (const Plan& p : {pipelinePlan(), interleavedPlan(), placementPlan(), overridePlan(), tensorParallelPlan()})
            schema_check::undeclaredKeys(schema, schema, hippie::planToJson(p), "", problems);
        QVERIFY2(problems.empty(), ("not in schema: " + schema_check::joined(problems)).c_str());
        // The enums list every name the writer can emit.
        const json& schedules = schema["properties"]["schedule"]["enum"];
        for (ScheduleKind k : hippie::allScheduleKinds())
            QVERIFY2(std::find(schedules.begin(), schedules.end(), hippie::toString(k)) != schedules.end(), hippie::toString(k));
        const json& optimizers = schema["properties"]["optimizer"]["enum"];
        for (auto o : {hippie::Optimizer::SGD, hippie::Optimizer::SGDMomentum, hippie::Optimizer::Adam})
            QVERIFY2(std::find(optimizers.begin(), optimizers.end(), hippie::toString(o)) != optimizers.end(), hippie::toString(o));
    }
};

QTEST_GUILESS_MAIN(TestPlanJson)
#include "test_plan_json.moc"
