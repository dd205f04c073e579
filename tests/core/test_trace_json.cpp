// Trace JSON: metrics keys, round trips, rejections, Chrome trace export and the schema.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/sim/trace_json.h"
#include "error_of.h"
#include "schema_check.h"

using hippie::test::contains;
using hippie::test::errorOf;
using hippie::Error;
using hippie::InstrKind;
using hippie::Trace;
using hippie::TraceEvent;
using nlohmann::json;

namespace {

// Two devices on different nodes of dgx-a100-2x8 (devices 0 and 8), a 2-stage pipeline with
// one micro-batch, its transfers, an all-reduce and optimizer steps.
Trace sampleTrace() {
    Trace t;
    t.devices = {0, 8};
    t.capacity_bytes = {40LL << 30, 40LL << 30};
    auto ev = [](int device, double start, double end, InstrKind kind, int stage, int mb, int peer, int64_t bytes) {
        TraceEvent e;
        e.device = device;
        e.start_s = start;
        e.end_s = end;
        e.kind = kind;
        e.stage = stage;
        e.mb = mb;
        e.peer = peer;
        e.bytes = bytes;
        return e;
    };
    t.events = {ev(0, 0.0, 0.010, InstrKind::Forward, 0, 0, -1, 0),
                ev(0, 0.010, 0.012, InstrKind::SendActivation, 0, 0, 8, 1 << 20),
                ev(8, 0.010, 0.012, InstrKind::RecvActivation, 0, 0, 0, 1 << 20),
                ev(8, 0.012, 0.022, InstrKind::Forward, 1, 0, -1, 0),
                ev(8, 0.022, 0.042, InstrKind::Backward, 1, 0, -1, 0),
                ev(8, 0.042, 0.044, InstrKind::SendGrad, 1, 0, 0, 1 << 20),
                ev(0, 0.042, 0.044, InstrKind::RecvGrad, 1, 0, 8, 1 << 20),
                ev(0, 0.044, 0.064, InstrKind::Backward, 0, 0, -1, 0),
                ev(0, 0.064, 0.070, InstrKind::AllReduce, 0, -1, -1, 64 << 20),
                ev(0, 0.070, 0.075, InstrKind::OptimizerStep, 0, -1, -1, 0),
                ev(8, 0.042, 0.045, InstrKind::OptimizerStep, 1, -1, -1, 0)};
    t.memory = {{{0.0, 1000}, {0.010, 5000}, {0.064, 1000}}, {{0.0, 2000}, {0.022, 9000}, {0.042, 2000}, {0.045, 2000}}};
    t.metrics.iteration_time_s = 0.075;
    t.metrics.throughput_samples_per_s = 8 / 0.075;
    t.metrics.peak_memory_bytes = {5000, 9000};
    t.metrics.max_peak_memory_bytes = 9000;
    t.metrics.bubble_fraction = 0.25;
    t.metrics.allreduce_hidden_fraction = 0.0;
    t.metrics.memory_efficiency = 123.5;
    t.metrics.fits_memory = true;
    return t;
}

}  // namespace

class TestTraceJson : public QObject {
    Q_OBJECT

    static void compareTraces(const Trace& a, const Trace& b) {
        QCOMPARE(a.devices, b.devices);
        QCOMPARE(a.capacity_bytes, b.capacity_bytes);
        QCOMPARE(a.events.size(), b.events.size());
        for (size_t i = 0; i < a.events.size(); ++i) {
            const TraceEvent &x = a.events[i], &y = b.events[i];
            QCOMPARE(x.device, y.device);
            QCOMPARE(x.start_s, y.start_s);
            QCOMPARE(x.end_s, y.end_s);
            QCOMPARE(x.kind, y.kind);
            QCOMPARE(x.stage, y.stage);
            QCOMPARE(x.mb, y.mb);
            QCOMPARE(x.peer, y.peer);
            QCOMPARE(x.bytes, y.bytes);
        }
        QCOMPARE(a.memory.size(), b.memory.size());
        for (size_t r = 0; r < a.memory.size(); ++r) {
            QCOMPARE(a.memory[r].size(), b.memory[r].size());
            for (size_t i = 0; i < a.memory[r].size(); ++i) {
                QCOMPARE(a.memory[r][i].time_s, b.memory[r][i].time_s);
                QCOMPARE(a.memory[r][i].bytes, b.memory[r][i].bytes);
            }
        }
        QCOMPARE(a.metrics.iteration_time_s, b.metrics.iteration_time_s);
        QCOMPARE(a.metrics.throughput_samples_per_s, b.metrics.throughput_samples_per_s);
        QCOMPARE(a.metrics.peak_memory_bytes, b.metrics.peak_memory_bytes);
        QCOMPARE(a.metrics.max_peak_memory_bytes, b.metrics.max_peak_memory_bytes);
        QCOMPARE(a.metrics.bubble_fraction, b.metrics.bubble_fraction);
        QCOMPARE(a.metrics.allreduce_hidden_fraction, b.metrics.allreduce_hidden_fraction);
        QCOMPARE(a.metrics.memory_efficiency, b.metrics.memory_efficiency);
        QCOMPARE(a.metrics.fits_memory, b.metrics.fits_memory);
    }

    static void expectRejected(const char* what, const std::function<void(json&)>& mutate,
                               const std::vector<std::string>& parts) {
        json j = hippie::traceToJson(sampleTrace());
        mutate(j);
        const std::string msg = errorOf([&] { hippie::traceFromJson(j, "t.json"); });
        QVERIFY2(!msg.empty(), (std::string(what) + ": accepted").c_str());
        QVERIFY2(msg.rfind("t.json: ", 0) == 0, (std::string(what) + ": " + msg).c_str());
        for (const std::string& p : parts)
            QVERIFY2(contains(msg, p), (std::string(what) + ": '" + p + "' not in: " + msg).c_str());
    }

    // The "X" events of a Chrome trace, in order.
    static std::vector<json> spans(const json& chrome) {
        std::vector<json> out;
        for (const json& e : chrome["traceEvents"])
            if (e["ph"] == "X") out.push_back(e);
        return out;
    }

private slots:
    void metricsHaveExactlyTheDocumentedKeys() {
        const json m = hippie::metricsToJson(sampleTrace().metrics);
        std::set<std::string> keys;
        for (const auto& [k, v] : m.items()) keys.insert(k);
        const std::set<std::string> expected = {"iteration_time_s",  "throughput_samples_per_s",  "peak_memory_bytes",
                                                "max_peak_memory_bytes", "bubble_fraction", "allreduce_hidden_fraction",
                                                "memory_efficiency", "fits_memory"};
        QCOMPARE(keys, expected);
        QCOMPARE(m["peak_memory_bytes"].get<std::vector<int64_t>>(), (std::vector<int64_t>{5000, 9000}));
        QCOMPARE(m["fits_memory"].get<bool>(), true);
        const hippie::TraceMetrics back = hippie::metricsFromJson(m);
        QCOMPARE(back.max_peak_memory_bytes, int64_t{9000});
        QCOMPARE(back.memory_efficiency, 123.5);
    }

    void roundTrips() {
        const Trace t = sampleTrace();
        const json j = hippie::traceToJson(t);
        QCOMPARE(j["format"].get<std::string>(), std::string("hippie-trace"));
        QCOMPARE(j["events"][0]["kind"].get<std::string>(), std::string("forward"));
        const Trace back = hippie::traceFromJson(j);
        compareTraces(t, back);
        QCOMPARE(hippie::traceToJson(back), j);
    }

    void everyKindRoundTrips() {
        Trace t = sampleTrace();
        t.events.clear();
        for (int k = 0; k <= static_cast<int>(InstrKind::OptimizerStep); ++k) {
            TraceEvent e;
            e.kind = static_cast<InstrKind>(k);
            e.start_s = k;
            e.end_s = k + 1;
            t.events.push_back(e);
        }
        compareTraces(t, hippie::traceFromJson(hippie::traceToJson(t)));
    }

    void emptyTraceRoundTrips() {
        const Trace t;
        compareTraces(t, hippie::traceFromJson(hippie::traceToJson(t)));
    }

    // Every object holds only the fields the schema lists ("additionalProperties": false).
    void rejectsUnknownFields() {
        expectRejected("top", [](json& j) { j["name"] = "x"; }, {"t.json: unknown field \"name\" (known fields: format, version,"});
        expectRejected("event", [](json& j) { j["events"][0]["label"] = "F0"; }, {"t.json: events[0]: unknown field \"label\""});
        expectRejected("sample", [](json& j) { j["memory"][0][0]["peak"] = 1; }, {"t.json: memory[0][0]: unknown field \"peak\""});
        expectRejected("metrics", [](json& j) { j["metrics"]["mfu"] = 0.5; }, {"t.json: metrics: unknown field \"mfu\""});
    }

    void rejectsInvalidFields() {
        expectRejected("format", [](json& j) { j["format"] = "hippie-plan"; }, {"'format'", "hippie-trace"});
        expectRejected("version", [](json& j) { j["version"] = 3; }, {"'version'"});
        expectRejected("unknown device", [](json& j) { j["events"][3]["device"] = 5; }, {"events[3]", "'device'", "5"});
        expectRejected("end before start", [](json& j) { j["events"][2]["end_s"] = 0.001; }, {"events[2]", "'end_s'"});
        expectRejected("negative start", [](json& j) { j["events"][0]["start_s"] = -1; }, {"events[0]", "'start_s'"});
        expectRejected("kind", [](json& j) { j["events"][1]["kind"] = "teleport"; }, {"events[1]", "'kind'", "teleport", "forward"});
        expectRejected("stage", [](json& j) { j["events"][1]["stage"] = -2; }, {"events[1]", "'stage'"});
        expectRejected("bytes", [](json& j) { j["events"][1]["bytes"] = -2; }, {"events[1]", "'bytes'"});
        expectRejected("missing mb", [](json& j) { j["events"][4].erase("mb"); }, {"events[4]", "'mb'"});
        expectRejected("duplicate device", [](json& j) { j["devices"][1] = 0; }, {"devices[1]", "twice"});
        expectRejected("capacity size", [](json& j) { j["capacity_bytes"].erase(1); }, {"'capacity_bytes'"});
        expectRejected("memory size", [](json& j) { j["memory"].erase(0); }, {"'memory'"});
        expectRejected("memory order", [](json& j) { j["memory"][1][2]["time_s"] = 0.001; }, {"memory[1][2]", "'time_s'"});
        expectRejected("memory bytes", [](json& j) { j["memory"][0][1]["bytes"] = -1; }, {"memory[0][1]", "'bytes'"});
        expectRejected("metrics key", [](json& j) { j["metrics"].erase("bubble_fraction"); }, {"metrics", "'bubble_fraction'"});
        expectRejected("metrics type", [](json& j) { j["metrics"]["fits_memory"] = 1; }, {"metrics", "'fits_memory'"});
        expectRejected("peaks size", [](json& j) { j["metrics"]["peak_memory_bytes"] = {1}; }, {"metrics", "'peak_memory_bytes'"});
        expectRejected("no metrics", [](json& j) { j.erase("metrics"); }, {"'metrics'"});
    }

    void chromeTraceHasSpansCountersAndNames() {
        const Trace t = sampleTrace();
        const json c = hippie::traceToChromeJson(t, {"gpu0", "gpu8"});
        QVERIFY(c.contains("traceEvents"));
        const std::vector<json> x = spans(c);
        QCOMPARE(x.size(), t.events.size());
        QCOMPARE(x[0]["name"].get<std::string>(), std::string("F0"));
        QCOMPARE(x[0]["cat"].get<std::string>(), std::string("forward"));
        QCOMPARE(x[0]["ts"].get<double>(), 0.0);
        QCOMPARE(x[0]["dur"].get<double>(), 10000.0);  // 10 ms in microseconds
        QCOMPARE(x[0]["tid"].get<int>(), 0);
        QCOMPARE(x[0]["pid"].get<int>(), 0);
        QCOMPARE(x[0]["args"]["stage"].get<int>(), 0);
        QCOMPARE(x[0]["args"]["mb"].get<int>(), 0);
        QCOMPARE(x[4]["name"].get<std::string>(), std::string("B0"));
        QCOMPARE(x[4]["tid"].get<int>(), 8);
        QCOMPARE(x[4]["pid"].get<int>(), 0);  // no cluster: one process
        QCOMPARE(x[1]["args"]["bytes"].get<int64_t>(), int64_t{1} << 20);
        QCOMPARE(x[1]["args"]["peer"].get<int>(), 8);
        QCOMPARE(x[8]["name"].get<std::string>(), std::string("AR0"));
        QCOMPARE(x[8]["cat"].get<std::string>(), std::string("all-reduce"));
        QCOMPARE(x[9]["name"].get<std::string>(), std::string("OPT"));
        QCOMPARE(x[3]["ts"].get<double>(), 12000.0);

        size_t counters = 0;
        std::vector<std::string> thread_names;
        for (const json& e : c["traceEvents"]) {
            if (e["ph"] == "C") {
                ++counters;
                QVERIFY(e["args"].contains("bytes"));
                QVERIFY(contains(e["name"].get<std::string>(), "memory"));
            }
            if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.push_back(e["args"]["name"].get<std::string>());
        }
        QCOMPARE(counters, t.memory[0].size() + t.memory[1].size());
        QCOMPARE(thread_names, (std::vector<std::string>{"gpu0", "gpu8"}));
        // Without names the rows are labelled by device.
        std::vector<std::string> defaults;
        const json unnamed = hippie::traceToChromeJson(t);
        for (const json& e : unnamed["traceEvents"])
            if (e["ph"] == "M" && e["name"] == "thread_name") defaults.push_back(e["args"]["name"].get<std::string>());
        QCOMPARE(defaults, (std::vector<std::string>{"device 0", "device 8"}));
    }

    void chromeTracePidIsTheNode() {
        const hippie::Cluster cluster = hippie::buildClusterPreset("dgx-a100-2x8");
        const json c = hippie::traceToChromeJson(sampleTrace(), {}, &cluster);
        for (const json& e : spans(c)) QCOMPARE(e["pid"].get<int>(), e["tid"].get<int>() == 8 ? 1 : 0);
        for (const json& e : c["traceEvents"])
            if (e["ph"] == "C") QCOMPARE(e["pid"].get<int>(), e["tid"].get<int>() == 8 ? 1 : 0);
    }

    void savesChromeTrace() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("chrome.json").toStdString();
        hippie::saveChromeTrace(sampleTrace(), path);
        std::ifstream in(path);
        const json c = json::parse(in);
        QCOMPARE(spans(c).size(), sampleTrace().events.size());
        const std::string msg = errorOf([&] { hippie::saveChromeTrace(sampleTrace(), dir.filePath("no/such/dir.json").toStdString()); });
        QVERIFY2(contains(msg, "no/such/dir.json"), msg.c_str());
    }

    void schemaDocumentsEveryKey() {
        const json schema = schema_check::loadJson(schema_check::schemaPath("trace.schema.json"));
        QCOMPARE(schema["$schema"].get<std::string>(), std::string("https://json-schema.org/draft/2020-12/schema"));
        std::vector<std::string> problems;
        schema_check::undescribedProperties(schema, "", problems);
        QVERIFY2(problems.empty(), ("undescribed: " + schema_check::joined(problems)).c_str());
        schema_check::undeclaredKeys(schema, schema, hippie::traceToJson(sampleTrace()), "", problems);
        QVERIFY2(problems.empty(), ("not in schema: " + schema_check::joined(problems)).c_str());
        // Every instruction kind the writer can emit is in the schema's enum.
        const json& kinds = schema["$defs"]["event"]["properties"]["kind"]["enum"];
        for (int k = 0; k <= static_cast<int>(InstrKind::OptimizerStep); ++k)
            QVERIFY2(std::find(kinds.begin(), kinds.end(), hippie::toString(static_cast<InstrKind>(k))) != kinds.end(),
                     hippie::toString(static_cast<InstrKind>(k)));
    }
};

QTEST_GUILESS_MAIN(TestTraceJson)
#include "test_trace_json.moc"
