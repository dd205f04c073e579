// Graph JSON: round trips, every rejection path naming file, field and op, DOT export,
// the example graph, the schema and loadModel.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/zoo.h"
#include "error_of.h"
#include "schema_check.h"

using hippie::test::contains;
using hippie::test::errorOf;
using hippie::Error;
using hippie::Graph;
using nlohmann::json;

namespace {

// A 5-op graph with a branch (a -> b, a -> c, b -> d, c -> d, d -> e) and ids that are not
// positions, so id remapping is exercised.
json validGraph() {
    auto op = [](int id, const char* name, int layer) {
        return json{{"id", id},          {"name", name},       {"kind", "matmul"},    {"layer", layer},
                    {"fwd_flops", 1e6},  {"bwd_flops", 2e6},   {"param_bytes", 4096}, {"output_bytes", 1024},
                    {"temp_bytes", 128}};
    };
    json ops = json::array({op(10, "l0.a", 0), op(20, "l1.b", 1), op(30, "l1.c", 1), op(40, "l2.d", 2), op(50, "l3.e", 3)});
    ops[1]["fwd_time_s"] = 0.001;
    ops[1]["bwd_time_s"] = 0.002;
    ops[3]["moved_bytes"] = 3072;  // optional: the other ops leave it out (unknown)
    json edges = json::array();
    for (auto [s, d] : std::vector<std::pair<int, int>>{{10, 20}, {10, 30}, {20, 40}, {30, 40}, {40, 50}})
        edges.push_back({{"src", s}, {"dst", d}, {"bytes", 1024}});
    return {{"format", "hippie-graph"}, {"version", 1}, {"name", "branchy"}, {"batch_size", 8},
            {"precision", "fp16"},      {"ops", ops},   {"edges", edges}};
}

std::string examplePath(const char* name) { return std::string(HIPPIE_SOURCE_DIR) + "/resources/examples/" + name; }

}  // namespace

Graph validGraphWithoutOverrides() { return hippie::graphFromJson(validGraph()); }

class TestGraphJson : public QObject {
    Q_OBJECT

    static void compareGraphs(const Graph& a, const Graph& b) {
        QCOMPARE(a.name, b.name);
        QCOMPARE(a.batch_size, b.batch_size);
        QCOMPARE(a.source.zoo, b.source.zoo);
        QCOMPARE(a.source.file, b.source.file);
        QCOMPARE(a.source.batch_size, b.source.batch_size);
        QCOMPARE(a.source.seq_len, b.source.seq_len);
        QCOMPARE(a.source.precision, b.source.precision);
        QCOMPARE(a.source.overrides, b.source.overrides);
        QCOMPARE(a.ops.size(), b.ops.size());
        for (size_t i = 0; i < a.ops.size(); ++i) {
            const hippie::Op &x = a.ops[i], &y = b.ops[i];
            QCOMPARE(x.name, y.name);
            QCOMPARE(x.kind, y.kind);
            QCOMPARE(x.layer, y.layer);
            QCOMPARE(x.fwd_flops, y.fwd_flops);
            QCOMPARE(x.bwd_flops, y.bwd_flops);
            QCOMPARE(x.param_bytes, y.param_bytes);
            QCOMPARE(x.output_bytes, y.output_bytes);
            QCOMPARE(x.temp_bytes, y.temp_bytes);
            QCOMPARE(x.moved_bytes, y.moved_bytes);
            QCOMPARE(x.fwd_time_s, y.fwd_time_s);
            QCOMPARE(x.bwd_time_s, y.bwd_time_s);
            QVERIFY(x.tensor_parallel == y.tensor_parallel);
        }
        QCOMPARE(a.tensor_parallel_divisor, b.tensor_parallel_divisor);
        QCOMPARE(a.edges.size(), b.edges.size());
        for (size_t i = 0; i < a.edges.size(); ++i) {
            QCOMPARE(a.edges[i].src, b.edges[i].src);
            QCOMPARE(a.edges[i].dst, b.edges[i].dst);
            QCOMPARE(a.edges[i].bytes, b.edges[i].bytes);
        }
    }

    // Applies `mutate` to a valid document and expects an Error naming every part.
    static void expectRejected(const char* what, const std::function<void(json&)>& mutate,
                               const std::vector<std::string>& parts) {
        json j = validGraph();
        mutate(j);
        const std::string msg = errorOf([&] { hippie::graphFromJson(j, "model.json"); });
        QVERIFY2(!msg.empty(), (std::string(what) + ": accepted").c_str());
        QVERIFY2(msg.rfind("model.json: ", 0) == 0, (std::string(what) + ": " + msg).c_str());
        for (const std::string& p : parts)
            QVERIFY2(contains(msg, p), (std::string(what) + ": '" + p + "' not in: " + msg).c_str());
    }

private slots:
    // Every object holds only the fields the schema lists ("additionalProperties": false).
    void rejectsUnknownFields() {
        expectRejected("top", [](json& j) { j["comment"] = "x"; }, {"model.json: unknown field \"comment\" (known fields: format, version, name,"});
        expectRejected("source", [](json& j) { j["source"] = {{"zoo", "mlp"}, {"size", 2}}; },
                       {"model.json: source: unknown field \"size\""});
        expectRejected("op", [](json& j) { j["ops"][2]["device"] = 3; }, {"model.json: ops[2] (id 30, 'l1.c'): unknown field \"device\""});
        expectRejected("edge", [](json& j) { j["edges"][1]["tensor"] = "t"; },
                       {"model.json: edges[1]: unknown field \"tensor\" (known fields: src, dst, bytes)"});
    }

    void readsIdsAsPositions() {
        const Graph g = hippie::graphFromJson(validGraph());
        QCOMPARE(g.ops.size(), size_t{5});
        QCOMPARE(g.edges.size(), size_t{5});
        QCOMPARE(g.edges[0].src, 0);
        QCOMPARE(g.edges[0].dst, 1);
        QCOMPARE(g.edges[3].src, 2);
        QCOMPARE(g.edges[3].dst, 3);
        QCOMPARE(g.source.precision, hippie::Precision::FP16);
        QCOMPARE(g.source.batch_size, 8);
        QCOMPARE(g.ops[1].fwd_time_s.value_or(-1), 0.001);
        QVERIFY(!g.ops[0].fwd_time_s.has_value());
        QCOMPARE(g.ops[3].moved_bytes, int64_t{3072});
        QCOMPARE(g.ops[0].moved_bytes, int64_t{0});  // absent: unknown
        QCOMPARE(g.layerCount(), 4);
    }

    void precisionDefaultsToFp32() {
        json j = validGraph();
        j.erase("precision");
        QCOMPARE(hippie::graphFromJson(j).source.precision, hippie::Precision::FP32);
    }

    void roundTripsInMemory() {
        const Graph g = hippie::graphFromJson(validGraph());
        const json written = hippie::graphToJson(g);
        const Graph back = hippie::graphFromJson(written);
        compareGraphs(g, back);
        QCOMPARE(hippie::graphToJson(back), written);
        // moved_bytes is written where it is known and left out where it is not (0).
        QCOMPARE(written["ops"][3]["moved_bytes"].get<int64_t>(), int64_t{3072});
        QVERIFY(!written["ops"][0].contains("moved_bytes"));
    }

    // A zoo model's ops know the bytes they move (memory-bound ops are timed by them): they
    // survive a trip through JSON.
    void zooMovedBytesRoundTrip() {
        hippie::ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.overrides = {{"layers", 1}, {"d_model", 64}, {"heads", 4}};
        spec.seq_len = 16;
        const Graph g = hippie::buildZooModel(spec);
        QVERIFY(std::any_of(g.ops.begin(), g.ops.end(), [](const hippie::Op& op) { return op.moved_bytes > 0; }));
        compareGraphs(g, hippie::graphFromJson(hippie::graphToJson(g)));
    }

    // A zoo transformer written to JSON keeps what tensor parallelism splits; a graph
    // without the fields splits nothing, and an unknown split is refused naming the op.
    void tensorParallelSplitRoundTrips() {
        hippie::ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.overrides = {{"layers", 1}, {"d_model", 64}, {"heads", 4}};
        spec.seq_len = 16;
        const Graph g = hippie::buildZooModel(spec);
        const json j = hippie::graphToJson(g);
        QCOMPARE(j["tensor_parallel_divisor"].get<int>(), 4);
        size_t column = 0, row = 0;
        for (const json& op : j["ops"]) {
            if (!op.contains("tensor_parallel")) continue;
            (op["tensor_parallel"] == "column" ? column : row) += 1;
            QVERIFY(op["tensor_parallel"] == "column" || op["tensor_parallel"] == "row");
        }
        QCOMPARE(row, size_t{3});     // token embedding, attention projection, second linear
        QCOMPARE(column, size_t{9});  // qkv, scores, softmax, its dropout, context, first linear, gelu, LM head, loss
        // A dropout's mask: one byte an element, kept for backward.
        for (const hippie::Op& op : g.ops) QCOMPARE(op.saved_bytes, op.kind == "dropout" ? op.output_bytes / 4 : int64_t{0});
        const Graph back = hippie::graphFromJson(j);
        compareGraphs(g, back);
        QVERIFY(back.tensorParallelFits(4));
        QVERIFY(!hippie::graphFromJson(validGraph()).tensorParallelFits(2));
        expectRejected("split", [](json& v) { v["ops"][0]["tensor_parallel"] = "diagonal"; },
                       {"'tensor_parallel'", "diagonal", "column"});
        expectRejected("divisor", [](json& v) { v["tensor_parallel_divisor"] = 0; }, {"'tensor_parallel_divisor'"});
    }

    void roundTripsThroughFile() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath("g.json").toStdString();
        Graph g = hippie::graphFromJson(validGraph());
        g.source.zoo = "gpt2-small";
        g.source.seq_len = 128;
        hippie::saveGraphFile(g, path);
        compareGraphs(g, hippie::loadGraphFile(path));
    }

    // A scaled-down zoo graph records its overrides (version 2) and reads back the same.
    void overridesRoundTrip() {
        const Graph g = hippie::loadModel("bert-base", 2, 64, hippie::Precision::FP32, {{"layers", 2}, {"d_model", 128}, {"heads", 2}});
        QCOMPARE(g.name, std::string("bert-base[layers=2,d_model=128,heads=2,seq_len=64]"));
        const json j = hippie::graphToJson(g);
        QCOMPARE(j["version"].get<int>(), 2);
        QCOMPARE(j["source"]["overrides"], (json{{"layers", 2}, {"d_model", 128}, {"heads", 2}}));
        compareGraphs(g, hippie::graphFromJson(j));
        QCOMPARE(hippie::graphToJson(validGraphWithoutOverrides())["version"].get<int>(), 1);
        json bad = j;
        bad["source"]["overrides"]["heads"] = 3;  // divides no 128
        const std::string msg = errorOf([&] { hippie::graphFromJson(bad, "g.json"); });
        QVERIFY2(contains(msg, "g.json") && contains(msg, "heads") && contains(msg, "d_model"), msg.c_str());
        const std::string file_msg = errorOf([] {
            hippie::loadModel(examplePath("tiny-mlp.graph.json"), 1, 0, hippie::Precision::FP32, {{"layers", 2}});
        });
        QVERIFY2(contains(file_msg, "tiny-mlp.graph.json") && contains(file_msg, "zoo"), file_msg.c_str());
    }

    void fileWithoutSourceRecordsItsPath() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("plain.json").toStdString();
        std::ofstream(path) << validGraph().dump();
        const Graph g = hippie::loadGraphFile(path);
        QCOMPARE(g.source.file, path);
        QCOMPARE(g.source.zoo, std::string());
        QCOMPARE(g.source.batch_size, 8);
    }

    void rejectsMissingField() {
        expectRejected("missing", [](json& j) { j["ops"][1].erase("param_bytes"); }, {"param_bytes", "id 20", "'l1.b'", "ops[1]"});
        expectRejected("missing name", [](json& j) { j.erase("name"); }, {"'name'"});
        expectRejected("missing batch", [](json& j) { j.erase("batch_size"); }, {"batch_size"});
        expectRejected("missing ops", [](json& j) { j.erase("ops"); }, {"'ops'"});
        expectRejected("missing edges", [](json& j) { j.erase("edges"); }, {"'edges'"});
        expectRejected("missing kind", [](json& j) { j["ops"][3].erase("kind"); }, {"kind", "id 40"});
        expectRejected("missing edge bytes", [](json& j) { j["edges"][2].erase("bytes"); }, {"edges[2]", "bytes"});
    }

    void rejectsWrongTypes() {
        expectRejected("string flops", [](json& j) { j["ops"][2]["fwd_flops"] = "lots"; }, {"fwd_flops", "id 30", "'l1.c'"});
        expectRejected("fractional bytes", [](json& j) { j["ops"][2]["param_bytes"] = 1.5; }, {"param_bytes", "id 30"});
        expectRejected("op not object", [](json& j) { j["ops"][1] = 5; }, {"ops[1]"});
        expectRejected("ops not array", [](json& j) { j["ops"] = json::object(); }, {"'ops'", "array"});
        expectRejected("name not string", [](json& j) { j["ops"][4]["name"] = 3; }, {"name", "id 50"});
        expectRejected("batch zero", [](json& j) { j["batch_size"] = 0; }, {"batch_size", "positive"});
        expectRejected("bad precision", [](json& j) { j["precision"] = "fp8"; }, {"precision", "fp8"});
        expectRejected("root not object", [](json& j) { j = json::array(); }, {"object"});
    }

    void rejectsNegativeValues() {
        expectRejected("neg output", [](json& j) { j["ops"][0]["output_bytes"] = -1; }, {"output_bytes", "id 10", "'l0.a'", "-1"});
        expectRejected("neg temp", [](json& j) { j["ops"][0]["temp_bytes"] = -1; }, {"temp_bytes", "id 10"});
        expectRejected("neg moved", [](json& j) { j["ops"][3]["moved_bytes"] = -1; }, {"moved_bytes", "id 40", "'l2.d'"});
        expectRejected("neg param", [](json& j) { j["ops"][4]["param_bytes"] = -4; }, {"param_bytes", "id 50"});
        expectRejected("neg flops", [](json& j) { j["ops"][3]["bwd_flops"] = -5.0; }, {"bwd_flops", "id 40"});
        expectRejected("neg time", [](json& j) { j["ops"][1]["fwd_time_s"] = -0.1; }, {"fwd_time_s", "id 20"});
        expectRejected("neg layer", [](json& j) { j["ops"][2]["layer"] = -1; }, {"layer", "id 30"});
        expectRejected("neg id", [](json& j) { j["ops"][2]["id"] = -3; }, {"'id'", "ops[2]"});
        expectRejected("neg edge bytes", [](json& j) { j["edges"][0]["bytes"] = -1; }, {"bytes", "edges[0]"});
    }

    void rejectsDanglingEdges() {
        expectRejected("dangling dst", [](json& j) { j["edges"][1]["dst"] = 99; }, {"edges[1]", "'dst'", "99"});
        expectRejected("dangling src", [](json& j) { j["edges"][4]["src"] = 7; }, {"edges[4]", "'src'", "7"});
    }

    void rejectsDuplicateIds() {
        expectRejected("duplicate", [](json& j) { j["ops"][3]["id"] = 20; }, {"'id'", "20", "ops[3]", "ops[1]", "'l1.b'"});
    }

    void rejectsSelfLoopsAndCycles() {
        expectRejected("self loop", [](json& j) { j["edges"].push_back({{"src", 30}, {"dst", 30}, {"bytes", 1}}); },
                       {"edges[5]", "'src'", "'dst'", "30", "'l1.c'"});
        // Ids equal to positions: the op named on the cycle is the one the file calls so.
        json j = validGraph();
        for (size_t i = 0; i < j["ops"].size(); ++i) j["ops"][i]["id"] = i;
        j["edges"] = json::array({{{"src", 0}, {"dst", 1}, {"bytes", 1}},
                                  {{"src", 1}, {"dst", 2}, {"bytes", 1}},
                                  {{"src", 2}, {"dst", 1}, {"bytes", 1}}});
        const std::string msg = errorOf([&] { hippie::graphFromJson(j, "model.json"); });
        QVERIFY2(contains(msg, "model.json: "), msg.c_str());
        QVERIFY2(contains(msg, "cycle"), msg.c_str());
        QVERIFY2(contains(msg, "op 1 ('l1.b')") || contains(msg, "op 2 ('l1.c')"), msg.c_str());
        // With other ids the message says that op numbers are positions (a cycle inside layer 1).
        expectRejected("cycle", [](json& g) { g["edges"].push_back({{"src", 30}, {"dst", 20}, {"bytes", 1}}); g["edges"].push_back({{"src", 20}, {"dst", 30}, {"bytes", 1}}); },
                       {"cycle", "positions"});
        // An edge into an earlier layer is named as such, with both ends, before any cycle search.
        expectRejected("backward edge", [](json& g) { g["edges"].push_back({{"src", 50}, {"dst", 10}, {"bytes", 1}}); },
                       {"edges[5]", "op id 50 ('l3.e', layer 3)", "op id 10 ('l0.a', layer 0)", "earlier layer"});
    }

    void rejectsEmptyAndUnknownFormats() {
        expectRejected("empty ops", [](json& j) { j["ops"] = json::array(); j["edges"] = json::array(); }, {"'ops'", "empty"});
        expectRejected("format", [](json& j) { j["format"] = "hippie-cluster"; }, {"'format'", "hippie-graph"});
        expectRejected("no format", [](json& j) { j.erase("format"); }, {"'format'"});
        expectRejected("version", [](json& j) { j["version"] = 3; }, {"'version'", "3"});
        expectRejected("version 0", [](json& j) { j["version"] = 0; }, {"'version'"});
    }

    void rejectsInconsistentSource() {
        expectRejected("source batch", [](json& j) { j["source"] = {{"zoo", "x"}, {"batch_size", 4}}; }, {"source", "batch_size"});
        expectRejected("source precision", [](json& j) { j["source"] = {{"zoo", "x"}, {"precision", "fp32"}}; },
                       {"source", "precision"});
        expectRejected("source seq_len", [](json& j) { j["source"] = {{"zoo", "x"}, {"seq_len", -1}}; }, {"source", "seq_len"});
    }

    void fileErrorsNameThePath() {
        QTemporaryDir dir;
        const std::string missing = dir.filePath("nope.json").toStdString();
        std::string msg = errorOf([&] { hippie::loadGraphFile(missing); });
        QVERIFY2(contains(msg, missing), msg.c_str());
        const std::string bad = dir.filePath("bad.json").toStdString();
        std::ofstream(bad) << "{ \"format\": ";
        msg = errorOf([&] { hippie::loadGraphFile(bad); });
        QVERIFY2(contains(msg, bad) && contains(msg, "not valid JSON"), msg.c_str());
        const std::string invalid = dir.filePath("invalid.json").toStdString();
        json j = validGraph();
        j["ops"][0]["fwd_flops"] = -1;
        std::ofstream(invalid) << j.dump();
        msg = errorOf([&] { hippie::loadGraphFile(invalid); });
        QVERIFY2(msg.rfind(invalid + ": ", 0) == 0 && contains(msg, "fwd_flops") && contains(msg, "id 10"), msg.c_str());
    }

    void exampleLoads() {
        const Graph g = hippie::loadGraphFile(examplePath("tiny-mlp.graph.json"));
        QCOMPARE(g.name, std::string("tiny-mlp"));
        QCOMPARE(g.layerCount(), 4);
        std::vector<int> out_degree(g.ops.size(), 0);
        for (const hippie::Edge& e : g.edges) ++out_degree[static_cast<size_t>(e.src)];
        QVERIFY2(std::count_if(out_degree.begin(), out_degree.end(), [](int d) { return d > 1; }) >= 1,
                 "the example should have a branch");
        QVERIFY(g.totalParamBytes() > 0);
        QCOMPARE(g.source.file, examplePath("tiny-mlp.graph.json"));
    }

    void dotClustersByLayer() {
        const Graph g = hippie::graphFromJson(validGraph());
        const std::string dot = hippie::graphToDot(g);
        QVERIFY(contains(dot, "digraph \"branchy\""));
        for (int l = 0; l < 4; ++l) QVERIFY(contains(dot, "subgraph cluster_layer" + std::to_string(l)));
        QVERIFY(contains(dot, "op0 -> op1"));
        QVERIFY(contains(dot, "op2 -> op3"));
        QVERIFY(contains(dot, "l1.b\\nmatmul"));
        Graph quoted = g;
        quoted.ops[0].name = "a\"b";
        QVERIFY(contains(hippie::graphToDot(quoted), "a\\\"b"));
    }

    void schemaDocumentsEveryKey() {
        const json schema = schema_check::loadJson(schema_check::schemaPath("graph.schema.json"));
        QCOMPARE(schema["$schema"].get<std::string>(), std::string("https://json-schema.org/draft/2020-12/schema"));
        std::vector<std::string> problems;
        schema_check::undescribedProperties(schema, "", problems);
        QVERIFY2(problems.empty(), ("undescribed: " + schema_check::joined(problems)).c_str());
        Graph g = hippie::graphFromJson(validGraph());
        g.source.zoo = "gpt2-small";
        g.source.overrides = {{"layers", 2}, {"width_mult", 0.5}};
        schema_check::undeclaredKeys(schema, schema, hippie::graphToJson(g), "", problems);
        QVERIFY2(problems.empty(), ("not in schema: " + schema_check::joined(problems)).c_str());
        schema_check::undeclaredKeys(schema, schema, schema_check::loadJson(examplePath("tiny-mlp.graph.json")), "", problems);
        QVERIFY2(problems.empty(), ("example keys not in schema: " + schema_check::joined(problems)).c_str());
    }

    void loadModelReadsZooAndFiles() {
        const Graph file = hippie::loadModel(examplePath("tiny-mlp.graph.json"), 1, 0, hippie::Precision::FP32);
        QCOMPARE(file.name, std::string("tiny-mlp"));
        QCOMPARE(file.batch_size, 32);  // a file keeps its own batch size
        QVERIFY(!hippie::zooModels().empty());
        const hippie::ZooEntry& z = hippie::zooModels().front();
        const Graph zoo = hippie::loadModel(z.name, 2, 0, hippie::Precision::FP16);
        QCOMPARE(zoo.source.zoo, z.name);
        QCOMPARE(zoo.source.batch_size, 2);
        QCOMPARE(zoo.source.precision, hippie::Precision::FP16);
        const std::string msg = errorOf([] { hippie::loadModel("no-such-model", 1, 0, hippie::Precision::FP32); });
        QVERIFY2(contains(msg, "no-such-model") && contains(msg, z.name), msg.c_str());
    }
};

QTEST_GUILESS_MAIN(TestGraphJson)
#include "test_graph_json.moc"
