// Cluster: device numbering and links, every preset, cluster JSON round trips and rejections,
// the example clusters and the schema.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "error_of.h"
#include "schema_check.h"

using hippie::test::contains;
using hippie::test::errorOf;
using hippie::Cluster;
using hippie::Error;
using nlohmann::json;

namespace {

std::string examplePath(const char* name) { return std::string(HIPPIE_SOURCE_DIR) + "/resources/examples/" + name; }

// Every *.cluster.json of resources/examples (the validation clusters and the user examples).
std::vector<std::string> exampleClusterFiles() {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(examplePath("")))
        if (entry.path().string().ends_with(".cluster.json")) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

// Two different nodes (3 + 2 devices) so the numbering is not uniform.
Cluster mixedCluster() {
    Cluster c;
    c.name = "mixed";
    c.source = "test";
    c.nodes.push_back({3, {"big", 10e12, 100e12, 0.5, 32LL << 30}, {100e9, 2e-6}, {}});
    c.nodes.push_back({2, {"small", 5e12, 50e12, 0.4, 16LL << 30}, {20e9, 5e-6}, {}});
    c.inter = {10e9, 10e-6};
    return c;
}

}  // namespace

class TestCluster : public QObject {
    Q_OBJECT

    static void expectRejected(const char* what, const std::function<void(json&)>& mutate,
                               const std::vector<std::string>& parts) {
        json j = hippie::clusterToJson(mixedCluster());
        mutate(j);
        const std::string msg = errorOf([&] { hippie::clusterFromJson(j, "c.json"); });
        QVERIFY2(!msg.empty(), (std::string(what) + ": accepted").c_str());
        QVERIFY2(msg.rfind("c.json: ", 0) == 0, (std::string(what) + ": " + msg).c_str());
        for (const std::string& p : parts)
            QVERIFY2(contains(msg, p), (std::string(what) + ": '" + p + "' not in: " + msg).c_str());
    }

private slots:
    void numbersDevicesNodeByNode() {
        const Cluster c = mixedCluster();
        QCOMPARE(c.deviceCount(), 5);
        QCOMPARE(c.nodeOf(0), 0);
        QCOMPARE(c.nodeOf(2), 0);
        QCOMPARE(c.nodeOf(3), 1);
        QCOMPARE(c.nodeOf(4), 1);
        QCOMPARE(c.firstDeviceOf(0), 0);
        QCOMPARE(c.firstDeviceOf(1), 3);
        QCOMPARE(c.device(1).type, std::string("big"));
        QCOMPARE(c.device(4).type, std::string("small"));
        QVERIFY(c.sameNode(0, 2));
        QVERIFY(!c.sameNode(2, 3));
        QVERIFY(!errorOf([&] { c.nodeOf(5); }).empty());
        QVERIFY(!errorOf([&] { c.nodeOf(-1); }).empty());
        QVERIFY(!errorOf([&] { c.firstDeviceOf(2); }).empty());
    }

    void linksAreIntraOrInter() {
        const Cluster c = mixedCluster();
        QCOMPARE(c.link(0, 1), c.nodes[0].intra);
        QCOMPARE(c.link(3, 4), c.nodes[1].intra);
        QCOMPARE(c.link(2, 3), c.inter);
        QCOMPARE(c.link(4, 0), c.inter);
    }

    void peakFlopsFollowsPrecision() {
        const hippie::DeviceSpec d = mixedCluster().nodes[0].device;
        QCOMPARE(d.peakFlops(hippie::Precision::FP32), 10e12);
        QCOMPARE(d.peakFlops(hippie::Precision::FP16), 100e12);
        QCOMPARE(d.peakFlops(hippie::Precision::BF16), 100e12);
        QCOMPARE(d.achievableFlops(hippie::Precision::FP16), 50e12);
    }

    void presetsHaveTheirShape_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("nodes");
        QTest::newRow("dgx-a100-1x8") << "dgx-a100-1x8" << 8 << 1;
        QTest::newRow("dgx-a100-2x8") << "dgx-a100-2x8" << 16 << 2;
        QTest::newRow("dgx-a100-4x8") << "dgx-a100-4x8" << 32 << 4;
        QTest::newRow("dgx-h100-2x8") << "dgx-h100-2x8" << 16 << 2;
        QTest::newRow("v100-4x4") << "v100-4x4" << 16 << 4;
        QTest::newRow("cpu-local") << "cpu-local" << 4 << 1;
    }

    void presetsHaveTheirShape() {
        QFETCH(QString, name);
        QFETCH(int, devices);
        QFETCH(int, nodes);
        const Cluster c = hippie::loadCluster(name.toStdString());
        QCOMPARE(c.name, name.toStdString());
        QCOMPARE(c.deviceCount(), devices);
        QCOMPARE(static_cast<int>(c.nodes.size()), nodes);
        QVERIFY(!c.source.empty());
        const int per_node = devices / nodes;
        for (int d = 0; d < devices; ++d) QCOMPARE(c.nodeOf(d), d / per_node);
        for (int n = 0; n < nodes; ++n) QCOMPARE(c.firstDeviceOf(n), n * per_node);
        for (const hippie::Node& node : c.nodes) {
            QVERIFY(node.device.efficiency > 0 && node.device.efficiency <= 1);
            QVERIFY(node.device.peak_flops_fp32 > 0);
            QVERIFY(node.device.peak_flops_fp16 >= node.device.peak_flops_fp32);
            QVERIFY(node.device.memory_bytes > 0);
            QVERIFY(node.intra.bandwidth_bytes_per_s > 0);
        }
        QVERIFY(c.inter.bandwidth_bytes_per_s > 0);
        if (nodes > 1) {
            QCOMPARE(c.link(0, per_node), c.inter);
            // Inside a server is faster than between servers.
            QVERIFY(c.link(0, 1).bandwidth_bytes_per_s > c.link(0, per_node).bandwidth_bytes_per_s);
            QVERIFY(c.link(0, 1).latency_s < c.link(0, per_node).latency_s);
        }
        // Every preset round-trips through JSON, written compactly with a node count.
        const json j = hippie::clusterToJson(c);
        QCOMPARE(j["nodes"].size(), size_t{1});
        QCOMPARE(j["nodes"][0]["count"].get<int>(), nodes);
        QCOMPARE(hippie::clusterFromJson(j), c);
    }

    void presetFiguresMatchDatasheets() {
        const Cluster a100 = hippie::buildClusterPreset("dgx-a100-2x8");
        QCOMPARE(a100.device(0).peak_flops_fp32, 19.5e12);
        QCOMPARE(a100.device(0).peak_flops_fp16, 312e12);
        QCOMPARE(a100.nodes[0].intra.bandwidth_bytes_per_s, 300e9);
        QCOMPARE(a100.inter.bandwidth_bytes_per_s, 25e9);  // 200 Gb/s
        const Cluster h100 = hippie::buildClusterPreset("dgx-h100-2x8");
        QCOMPARE(h100.device(15).peak_flops_fp16, 989e12);
        QCOMPARE(h100.nodes[1].intra.bandwidth_bytes_per_s, 450e9);
        QCOMPARE(h100.inter.bandwidth_bytes_per_s, 50e9);  // 400 Gb/s
        const Cluster v100 = hippie::buildClusterPreset("v100-4x4");
        QCOMPARE(v100.device(5).peak_flops_fp32, 14e12);
        QCOMPARE(v100.device(5).peak_flops_fp16, 112e12);
        QCOMPARE(v100.inter.bandwidth_bytes_per_s, 1.25e9);  // 10 Gb/s
        QVERIFY(v100.nodes[0].intra.bandwidth_bytes_per_s > 15e9 && v100.nodes[0].intra.bandwidth_bytes_per_s < 17e9);
        const Cluster cpu = hippie::buildClusterPreset("cpu-local");
        QCOMPARE(cpu.device(3).memory_bytes, int64_t{4} << 30);
        QVERIFY(contains(cpu.source, "hippie-engine probe"));
        QVERIFY(contains(cpu.source, "rough"));
    }

    // Every transfer and collective leaving a node shares its network ports: a DGX has one
    // InfiniBand compute port per GPU, PipeDream's Cluster-A one 10 Gb/s Ethernet port per
    // server, which its four GPUs share (a quarter of the egress a port per GPU would give).
    void presetsHaveTheirNetworkPorts_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("ports");
        QTest::addColumn<double>("port_bytes_per_s");
        QTest::newRow("dgx-a100-1x8") << "dgx-a100-1x8" << 8 << 25e9;
        QTest::newRow("dgx-a100-2x8") << "dgx-a100-2x8" << 8 << 25e9;
        QTest::newRow("dgx-a100-4x8") << "dgx-a100-4x8" << 8 << 25e9;
        QTest::newRow("dgx-h100-2x8") << "dgx-h100-2x8" << 8 << 50e9;
        QTest::newRow("v100-4x4") << "v100-4x4" << 1 << 1.25e9;
    }

    void presetsHaveTheirNetworkPorts() {
        QFETCH(QString, name);
        QFETCH(int, ports);
        QFETCH(double, port_bytes_per_s);
        const Cluster c = hippie::buildClusterPreset(name.toStdString());
        for (int n = 0; n < static_cast<int>(c.nodes.size()); ++n) {
            const hippie::Node& node = c.nodes[static_cast<size_t>(n)];
            QCOMPARE(node.ports.count, ports);
            QCOMPARE(node.ports.bandwidth_bytes_per_s, port_bytes_per_s);
            QCOMPARE(node.ports.bandwidth_bytes_per_s, c.inter.bandwidth_bytes_per_s);  // a port is the inter-node link
            QCOMPARE(c.egressBandwidth(n), ports * port_bytes_per_s);
        }
    }

    // Every preset's devices have a memory bandwidth and a launch overhead (the cost model's
    // memory-bound and per-kernel terms), and its source names where they come from: cpu-local
    // had neither until the probe's figures for this VM were written into it.
    void presetsHaveMemoryBandwidthAndLaunchOverhead() {
        for (const hippie::ClusterPreset& p : hippie::clusterPresets()) {
            const Cluster c = hippie::buildClusterPreset(p.name);
            for (const hippie::Node& node : c.nodes) {
                QVERIFY2(node.device.memory_bandwidth_bytes_per_s > 0, p.name.c_str());
                QVERIFY2(node.device.launch_overhead_s > 0, p.name.c_str());
            }
        }
        const Cluster cpu = hippie::buildClusterPreset("cpu-local");
        QCOMPARE(cpu.nodes[0].device.memory_bandwidth_bytes_per_s, 28.5e9 / 2);  // the host's probed copy rate, two cores over four ranks
        QVERIFY(cpu.source.find("hippie-engine probe") != std::string::npos);
    }

    void presetListMatchesBuilders() {
        QCOMPARE(hippie::clusterPresets().size(), size_t{6});
        for (const hippie::ClusterPreset& p : hippie::clusterPresets()) {
            QVERIFY(!p.description.empty());
            QCOMPARE(hippie::buildClusterPreset(p.name).name, p.name);
        }
        const std::string msg = errorOf([] { hippie::buildClusterPreset("dgx-z100"); });
        QVERIFY2(contains(msg, "dgx-z100") && contains(msg, "dgx-a100-1x8") && contains(msg, "cpu-local"), msg.c_str());
        const std::string msg2 = errorOf([] { hippie::loadCluster("no-such-cluster"); });
        QVERIFY2(contains(msg2, "no-such-cluster") && contains(msg2, "v100-4x4"), msg2.c_str());
    }

    void roundTripsMixedNodes() {
        const Cluster c = mixedCluster();
        const json j = hippie::clusterToJson(c);
        QCOMPARE(j["nodes"].size(), size_t{2});
        QCOMPARE(hippie::clusterFromJson(j), c);
        QTemporaryDir dir;
        const std::string path = dir.filePath("c.json").toStdString();
        hippie::saveClusterFile(c, path);
        QCOMPARE(hippie::loadClusterFile(path), c);
        QCOMPARE(hippie::loadCluster(path), c);
    }

    // The profiled-time scale is written only when it is not 1, and read back.
    void profiledTimeScaleIsOptional() {
        Cluster c = mixedCluster();
        QVERIFY(!hippie::clusterToJson(c)["nodes"][0]["device"].contains("profiled_time_scale"));
        c.nodes[1].device.profiled_time_scale = 1.75;
        const json j = hippie::clusterToJson(c);
        QCOMPARE(j["nodes"][1]["device"]["profiled_time_scale"].get<double>(), 1.75);
        QCOMPARE(hippie::clusterFromJson(j), c);
        json bad = j;
        bad["nodes"][1]["device"]["profiled_time_scale"] = -1;
        const std::string msg = errorOf([&] { hippie::clusterFromJson(bad); });
        QVERIFY2(contains(msg, "profiled_time_scale"), msg.c_str());
    }

    // The runtime's reserve (CUDA context, what the driver keeps) is written only when set,
    // read back, leaves the rest of the memory to tensors, and must leave some.
    void reservedBytesAreOptionalAndBelowTheMemory() {
        Cluster c = mixedCluster();
        QVERIFY(!hippie::clusterToJson(c)["nodes"][0]["device"].contains("reserved_bytes"));
        QCOMPARE(c.device(0).usableBytes(), c.device(0).memory_bytes);
        c.nodes[1].device.reserved_bytes = int64_t{1} << 30;
        const json j = hippie::clusterToJson(c);
        QCOMPARE(j["nodes"][1]["device"]["reserved_bytes"].get<int64_t>(), int64_t{1} << 30);
        QCOMPARE(hippie::clusterFromJson(j), c);
        QCOMPARE(c.device(3).usableBytes(), int64_t{15} << 30);
        expectRejected("reserve as large as the memory", [](json& k) { k["nodes"][1]["device"]["reserved_bytes"] = int64_t{16} << 30; },
                       {"nodes[1].device", "reserved_bytes", "not below memory_bytes", "no memory for tensors"});
        expectRejected("negative reserve", [](json& k) { k["nodes"][0]["device"]["reserved_bytes"] = -1; }, {"reserved_bytes"});
    }

    // GPU presets keep what the driver hides (the part's memory less nvidia-smi's total) and
    // PyTorch's CUDA context (PR 86509's 666,632,192 bytes) from tensors; CPU ranks keep nothing.
    void presetsReserveTheRuntime() {
        constexpr int64_t kMiB = int64_t{1} << 20, kContext = 666'632'192;
        const Cluster a100 = hippie::buildClusterPreset("dgx-a100-2x8");
        QCOMPARE(a100.device(0).memory_bytes - a100.device(0).reserved_bytes, 40536 * kMiB - kContext);
        QCOMPARE(hippie::buildClusterPreset("dgx-h100-2x8").device(0).usableBytes(), 81559 * kMiB - kContext);
        QCOMPARE(hippie::buildClusterPreset("v100-4x4").device(0).usableBytes(), 16160 * kMiB - kContext);
        QCOMPARE(hippie::buildClusterPreset("cpu-local").device(0).reserved_bytes, int64_t{0});
        QVERIFY(contains(a100.source, "reserved"));
    }

    // The convolution efficiency is written only when it is not 1, read back, and a value no
    // measurement gives is refused with its field named.
    void convEfficiencyIsOptionalAndBounded() {
        Cluster c = mixedCluster();
        QVERIFY(!hippie::clusterToJson(c)["nodes"][0]["device"].contains("conv_efficiency"));
        c.nodes[0].device.conv_efficiency = 0.45;
        const json j = hippie::clusterToJson(c);
        QCOMPARE(j["nodes"][0]["device"]["conv_efficiency"].get<double>(), 0.45);
        QCOMPARE(hippie::clusterFromJson(j), c);
        for (const double v : {0.0, -0.5, 1e-4, 5.0}) {
            json bad = j;
            bad["nodes"][0]["device"]["conv_efficiency"] = v;
            const std::string msg = errorOf([&] { hippie::clusterFromJson(bad); });
            QVERIFY2(contains(msg, "conv_efficiency"), msg.c_str());
        }
    }

    // Measured kernels are written only when there are some, read back, and bounded: a rate
    // of 0 means the device's bandwidth, a positive one below 1 B/s, a negative value, an
    // overhead beyond a second, an unknown field or a kind that is no object are refused,
    // naming what is wrong.
    void measuredKernelsAreOptionalAndBounded() {
        Cluster c = mixedCluster();
        QVERIFY(!hippie::clusterToJson(c)["nodes"][0]["device"].contains("kernels"));
        c.nodes[0].device.kernels["gelu"] = hippie::KernelTiming{2.5e9, 4.5e9, 1.4e-6, 6.4e-6, 0};
        c.nodes[0].device.kernels["conv2d"] = hippie::KernelTiming{0, 0, 6e-6, 1.6e-5, 9.7e6};
        const json j = hippie::clusterToJson(c);
        QCOMPARE(j["nodes"][0]["device"]["kernels"]["gelu"]["forward_bytes_per_s"].get<double>(), 2.5e9);
        QCOMPARE(hippie::clusterFromJson(j), c);
        const std::pair<const char*, json> bad_fields[] = {{"forward_bytes_per_s", 0.5},    {"backward_bytes_per_s", -1.0},
                                                           {"forward_overhead_s", 2.0},     {"backward_overhead_s", -1e-6},
                                                           {"half_rate_flops", -1.0},       {"launch_s", 1e-6}};
        for (const auto& [field, v] : bad_fields) {
            json bad = j;
            bad["nodes"][0]["device"]["kernels"]["gelu"][field] = v;
            const std::string msg = errorOf([&] { hippie::clusterFromJson(bad); });
            QVERIFY2(contains(msg, field) && contains(msg, "gelu"), msg.c_str());
        }
        json not_object = j;
        not_object["nodes"][0]["device"]["kernels"]["relu"] = 3;
        const std::string msg = errorOf([&] { hippie::clusterFromJson(not_object); });
        QVERIFY2(contains(msg, "relu") && contains(msg, "object"), msg.c_str());
    }

    // A node's compute slots are written only when set, read back, and bounded.
    void computeSlotsAreOptionalAndBounded() {
        Cluster c = mixedCluster();
        QVERIFY(!hippie::clusterToJson(c)["nodes"][0].contains("compute_slots"));
        c.nodes[0].compute_slots = 0.98;
        const json j = hippie::clusterToJson(c);
        QCOMPARE(j["nodes"][0]["compute_slots"].get<double>(), 0.98);
        QCOMPARE(hippie::clusterFromJson(j), c);
        for (const double v : {0.0, -1.0, 1e-4}) {
            json bad = j;
            bad["nodes"][0]["compute_slots"] = v;
            const std::string msg = errorOf([&] { hippie::clusterFromJson(bad); });
            QVERIFY2(contains(msg, "compute_slots"), msg.c_str());
        }
    }

    void countRepeatsNodes() {
        json j = hippie::clusterToJson(mixedCluster());
        j["nodes"][1]["count"] = 3;
        j["nodes"][0].erase("count");
        const Cluster c = hippie::clusterFromJson(j);
        QCOMPARE(c.nodes.size(), size_t{4});
        QCOMPARE(c.deviceCount(), 3 + 3 * 2);
        QCOMPARE(c.nodeOf(8), 3);
    }

    void oneNodeMayOmitInter() {
        json j = hippie::clusterToJson(hippie::buildClusterPreset("dgx-a100-1x8"));
        j.erase("inter");
        QCOMPARE(hippie::clusterFromJson(j).deviceCount(), 8);
        j.erase("source");
        QCOMPARE(hippie::clusterFromJson(j).source, std::string());
    }

    // Every object holds only the fields the schema lists; a probe's measurements are the one
    // object skipped unread.
    void rejectsUnknownFields() {
        expectRejected("top", [](json& j) { j["nodez"] = json::array(); }, {"c.json: unknown field \"nodez\" (known fields: format,"});
        expectRejected("node", [](json& j) { j["nodes"][1]["gpus"] = 4; }, {"c.json: nodes[1]: unknown field \"gpus\""});
        expectRejected("device", [](json& j) { j["nodes"][0]["device"]["tflops"] = 1; }, {"c.json: nodes[0].device: unknown field \"tflops\""});
        expectRejected("link", [](json& j) { j["inter"]["mtu"] = 9000; },
                       {"c.json: inter: unknown field \"mtu\" (known fields: bandwidth_bytes_per_s, latency_s)"});
        expectRejected("ports", [](json& j) { j["nodes"][0]["ports"] = {{"count", 1}, {"bandwidth_bytes_per_s", 1e9}, {"kind", "ib"}}; },
                       {"c.json: nodes[0].ports: unknown field \"kind\""});
        json probed = hippie::clusterToJson(mixedCluster());
        probed["probe"] = {{"cpu_cores", 2}, {"matmuls", json::array()}};
        QCOMPARE(hippie::clusterFromJson(probed).deviceCount(), mixedCluster().deviceCount());
    }

    void rejectsInvalidFields() {
        expectRejected("efficiency > 1", [](json& j) { j["nodes"][1]["device"]["efficiency"] = 1.5; },
                       {"nodes[1].device", "efficiency", "(0, 1]"});
        expectRejected("efficiency 0", [](json& j) { j["nodes"][0]["device"]["efficiency"] = 0; }, {"nodes[0].device", "efficiency"});
        expectRejected("negative bandwidth", [](json& j) { j["nodes"][0]["intra"]["bandwidth_bytes_per_s"] = -1; },
                       {"nodes[0].intra", "bandwidth_bytes_per_s"});
        expectRejected("zero inter bandwidth", [](json& j) { j["inter"]["bandwidth_bytes_per_s"] = 0; }, {"inter", "bandwidth_bytes_per_s"});
        expectRejected("negative latency", [](json& j) { j["inter"]["latency_s"] = -1e-6; }, {"inter", "latency_s"});
        expectRejected("zero memory", [](json& j) { j["nodes"][1]["device"]["memory_bytes"] = 0; }, {"memory_bytes"});
        expectRejected("fp16 flops", [](json& j) { j["nodes"][1]["device"]["peak_flops_fp16"] = "fast"; }, {"peak_flops_fp16"});
        expectRejected("fp32 flops", [](json& j) { j["nodes"][1]["device"].erase("peak_flops_fp32"); }, {"peak_flops_fp32", "missing"});
        expectRejected("empty type", [](json& j) { j["nodes"][0]["device"]["type"] = ""; }, {"type"});
        expectRejected("no nodes", [](json& j) { j["nodes"] = json::array(); }, {"'nodes'", "empty"});
        expectRejected("zero devices", [](json& j) { j["nodes"][0]["devices"] = 0; }, {"nodes[0]", "'devices'"});
        expectRejected("count string", [](json& j) { j["nodes"][0]["count"] = "two"; }, {"nodes[0]", "'count'"});
        expectRejected("huge count", [](json& j) { j["nodes"][0]["count"] = 1000000000; }, {"nodes[0]", "count"});
        expectRejected("no inter", [](json& j) { j.erase("inter"); }, {"'inter'"});
        expectRejected("no device", [](json& j) { j["nodes"][0].erase("device"); }, {"nodes[0]", "'device'"});
        expectRejected("no intra", [](json& j) { j["nodes"][1].erase("intra"); }, {"nodes[1]", "'intra'"});
        expectRejected("format", [](json& j) { j["format"] = "hippie-graph"; }, {"'format'", "hippie-cluster"});
        expectRejected("version", [](json& j) { j["version"] = 7; }, {"'version'"});
        expectRejected("name", [](json& j) { j.erase("name"); }, {"'name'"});
    }

    void fileErrorsNameThePath() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("bad.json").toStdString();
        std::ofstream(path) << "[1, 2";
        const std::string msg = errorOf([&] { hippie::loadClusterFile(path); });
        QVERIFY2(contains(msg, path), msg.c_str());
    }

    void exampleLoads() {
        const Cluster c = hippie::loadCluster(examplePath("two-node.cluster.json"));
        QCOMPARE(c.name, std::string("two-node"));
        QCOMPARE(c.nodes.size(), size_t{2});
        QCOMPARE(c.deviceCount(), 8);
        QCOMPARE(c.nodeOf(4), 1);
        QCOMPARE(c.link(0, 4), c.inter);
        QCOMPARE(c.link(4, 7), c.nodes[1].intra);
    }

    // The example clusters docs/validation.md and the user guide name load, and say where
    // their figures come from.
    void everyExampleClusterLoads() {
        const std::vector<std::string> files = exampleClusterFiles();
        QVERIFY2(files.size() >= 7, std::to_string(files.size()).c_str());
        for (const std::string& f : files) {
            const Cluster c = hippie::loadClusterFile(f);
            QVERIFY2(c.deviceCount() > 0, f.c_str());
            QVERIFY2(!c.source.empty(), f.c_str());
        }
    }

    void schemaDocumentsEveryKey() {
        const json schema = schema_check::loadJson(schema_check::schemaPath("cluster.schema.json"));
        QCOMPARE(schema["$schema"].get<std::string>(), std::string("https://json-schema.org/draft/2020-12/schema"));
        std::vector<std::string> problems;
        schema_check::undescribedProperties(schema, "", problems);
        QVERIFY2(problems.empty(), ("undescribed: " + schema_check::joined(problems)).c_str());
        for (const hippie::ClusterPreset& p : hippie::clusterPresets())
            schema_check::undeclaredKeys(schema, schema, hippie::clusterToJson(hippie::buildClusterPreset(p.name)), "", problems);
        schema_check::undeclaredKeys(schema, schema, hippie::clusterToJson(mixedCluster()), "", problems);
        Cluster measured = mixedCluster();  // a probed device's kernel table
        measured.nodes[0].device.kernels["gelu"] = hippie::KernelTiming{1e9, 2e9, 1e-6, 2e-6, 3e6};
        schema_check::undeclaredKeys(schema, schema, hippie::clusterToJson(measured), "", problems);
        for (const std::string& f : exampleClusterFiles()) schema_check::undeclaredKeys(schema, schema, schema_check::loadJson(f), "", problems);
        QVERIFY2(problems.empty(), ("not in schema: " + schema_check::joined(problems)).c_str());
    }
};

QTEST_GUILESS_MAIN(TestCluster)
#include "test_cluster.moc"
