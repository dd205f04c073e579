// The simulator runs one stream of each class that repeats another's timing (the data-parallel
// replicas and tensor-parallel ranks of a pipeline position on equal nodes) and copies it to
// the rest (planners/sim/symmetry.h). Every trace it predicts so must be the trace of running
// every stream, event for event and byte for byte; plans whose streams differ (other node
// kinds, links of another kind, uneven replication) must run every stream.
#include <QtTest>

#include "planners/cluster/cluster_json.h"
#include "planners/cost/cost_model.h"
#include "planners/model/zoo.h"
#include "planners/schedule/lower.h"
#include "planners/sim/simulator.h"
#include "planners/sim/symmetry.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

Q_DECLARE_METATYPE(std::vector<std::vector<int>>)

namespace {

// gpt2-small cut down to four blocks of s = 128, h = 64 (4 heads), fp16: six layers (embedding,
// four blocks, head), the head's weight tied to the embedding's.
Graph smallGpt() {
    ModelSpec spec;
    spec.zoo = "gpt2-small";
    spec.batch_size = 2;
    spec.seq_len = 128;
    spec.precision = Precision::FP16;
    spec.overrides = {{"layers", 4}, {"d_model", 64}, {"heads", 4}};
    return buildZooModel(spec);
}

Plan gptPlan(int pp, int dp, int tp, int m, ScheduleKind kind, int v = 1) {
    Plan p = pipelinePlan(6, pp, dp, m, kind, v, 2);
    p.tp = tp;
    p.optimizer = Optimizer::Adam;
    return p;
}

struct Case {
    const char* name;
    Plan plan;
    size_t streams_run;  // distinct representatives expected
};

std::vector<Case> cases() {
    std::vector<Case> out;
    out.push_back({"pp2 dp4 t2 hippie", gptPlan(2, 4, 2, 4, ScheduleKind::Hippie), 2});
    {
        Plan p = gptPlan(2, 4, 2, 4, ScheduleKind::OneFOneB);
        p.sequence_parallel = true;
        p.zero_stage = 1;
        out.push_back({"pp2 dp4 t2 sp zero-1 1f1b", p, 2});
    }
    for (int zero : {2, 3}) {
        Plan p = gptPlan(1, 8, 2, 2, ScheduleKind::OneFOneB);
        p.zero_stage = zero;
        out.push_back({zero == 2 ? "dp8 t2 zero-2" : "dp8 t2 zero-3", p, 1});
    }
    out.push_back({"pp2 v2 dp2 t2 interleaved", gptPlan(2, 2, 2, 4, ScheduleKind::Interleaved, 2), 2});
    out.push_back({"pp4 dp2 t2 zb-h1", gptPlan(4, 2, 2, 8, ScheduleKind::ZeroBubbleH1), 4});
    {
        Plan p = gptPlan(2, 4, 1, 4, ScheduleKind::GPipe);
        p.recompute_layers = {1, 2};
        out.push_back({"pp2 dp4 gpipe recompute", p, 2});
        p.selective_recompute = true;
        p.recompute_layers.clear();
        out.push_back({"pp2 dp4 gpipe selective", p, 2});
    }
    // Replica 1's stages are on different nodes, replica 0's on one: their sends differ.
    {
        Plan p = gptPlan(2, 2, 1, 2, ScheduleKind::OneFOneB);
        p.device_map = {{0, 8}, {1, 2}};
        out.push_back({"pp2 dp2 one replica across nodes", p, 4});
        // Replica 1's devices in the opposite order to replica 0's (lowering derives it anew).
        p.device_map = {{0, 9}, {1, 8}};
        out.push_back({"pp2 dp2 replicas in opposite order", p, 2});
    }
    // Per-stage replication: stage 0 on 3 devices, stage 1 on 1, micro-batches round-robin.
    {
        Plan p = gptPlan(2, 3, 1, 2, ScheduleKind::OneFOneB);
        p.stage_replicas = {3, 1};
        out.push_back({"per-stage replicas 3-1", p, 4});
    }
    return out;
}

Trace simulateWith(const Graph& g, const Cluster& c, const Plan& plan, bool repeat) {
    const CostModel cost(g, c);
    SimOptions opt;
    opt.repeat_symmetric_streams = repeat;
    return simulate(lower(plan, g), plan, cost, opt);
}

// Streams run: the representatives symmetricRepresentatives finds.
size_t streamsRun(const Program& prog, const Cluster& cluster) {
    const std::vector<size_t> reps = symmetricRepresentatives(prog, cluster, countedGroupSharing(prog, cluster));
    size_t n = 0;
    for (size_t s = 0; s < reps.size(); ++s) n += reps[s] == s ? 1 : 0;
    return n;
}

void compareTraces(const Trace& a, const Trace& b) {
    QCOMPARE(a.devices, b.devices);
    QCOMPARE(a.capacity_bytes, b.capacity_bytes);
    QCOMPARE(a.events.size(), b.events.size());
    for (size_t i = 0; i < a.events.size(); ++i) {
        const TraceEvent& x = a.events[i];
        const TraceEvent& y = b.events[i];
        QCOMPARE(x.device, y.device);
        QCOMPARE(int(x.kind), int(y.kind));
        QCOMPARE(x.stage, y.stage);
        QCOMPARE(x.mb, y.mb);
        QCOMPARE(x.peer, y.peer);
        QCOMPARE(x.bytes, y.bytes);
        QVERIFY2(x.start_s == y.start_s && x.end_s == y.end_s,
                 qPrintable(QString("event %1 on device %2: [%3, %4] against [%5, %6]")
                                .arg(i).arg(x.device).arg(x.start_s, 0, 'g', 17).arg(x.end_s, 0, 'g', 17).arg(y.start_s, 0, 'g', 17).arg(y.end_s, 0, 'g', 17)));
    }
    QCOMPARE(a.memory.size(), b.memory.size());
    for (size_t r = 0; r < a.memory.size(); ++r) {
        QCOMPARE(a.memory[r].size(), b.memory[r].size());
        for (size_t i = 0; i < a.memory[r].size(); ++i) {
            QVERIFY(a.memory[r][i].time_s == b.memory[r][i].time_s);
            QCOMPARE(a.memory[r][i].bytes, b.memory[r][i].bytes);
        }
    }
    const TraceMetrics& x = a.metrics;
    const TraceMetrics& y = b.metrics;
    QVERIFY(x.iteration_time_s == y.iteration_time_s);
    QVERIFY(x.throughput_samples_per_s == y.throughput_samples_per_s);
    QCOMPARE(x.peak_memory_bytes, y.peak_memory_bytes);
    QCOMPARE(x.max_peak_memory_bytes, y.max_peak_memory_bytes);
    QVERIFY(x.bubble_fraction == y.bubble_fraction);
    QVERIFY(x.allreduce_hidden_fraction == y.allreduce_hidden_fraction);
    QVERIFY(x.memory_efficiency == y.memory_efficiency);
    QCOMPARE(x.fits_memory, y.fits_memory);
}

}  // namespace

class TestSymmetricStreams : public QObject {
    Q_OBJECT
private slots:
    void repeatedStreamsEqualRunningEveryStream_data() {
        QTest::addColumn<int>("index");
        const auto all = cases();
        for (size_t i = 0; i < all.size(); ++i) QTest::addRow("%s", all[i].name) << static_cast<int>(i);
    }
    void repeatedStreamsEqualRunningEveryStream() {
        QFETCH(int, index);
        const Case c = cases()[static_cast<size_t>(index)];
        const Graph g = smallGpt();
        const Cluster cluster = buildClusterPreset("dgx-a100-2x8");
        const Program prog = lower(c.plan, g);
        QCOMPARE(streamsRun(prog, cluster), c.streams_run);
        compareTraces(simulateWith(g, cluster, c.plan, true), simulateWith(g, cluster, c.plan, false));
    }

    // Lowering copies a replica's stream from replica 0's of its rank, peers and
    // tensor-parallel group replaced: the program is the one derived lane by lane.
    void replicasCopiedInLoweringEqualDerivedOnes_data() { repeatedStreamsEqualRunningEveryStream_data(); }
    void replicasCopiedInLoweringEqualDerivedOnes() {
        QFETCH(int, index);
        const Case c = cases()[static_cast<size_t>(index)];
        const Graph g = smallGpt();
        LowerOptions derived;
        derived.copy_replica_communication = false;
        const Program a = lower(c.plan, g), b = lower(c.plan, g, derived);
        QCOMPARE(a.devices, b.devices);
        QCOMPARE(a.groups, b.groups);
        QCOMPARE(a.streams.size(), b.streams.size());
        for (size_t s = 0; s < a.streams.size(); ++s) QVERIFY2(a.streams[s] == b.streams[s], qPrintable(QString("stream %1").arg(s)));
    }

    // Two nodes of different GPUs: no stream of one repeats a stream of the other, and the
    // trace is still every stream's own.
    void streamsOnNodesOfAnotherKindAreRunApart() {
        const Graph g = smallGpt();
        Cluster cluster = buildClusterPreset("dgx-a100-2x8");
        cluster.nodes[1].device.peak_flops_fp16 /= 2;
        Plan plan = gptPlan(2, 4, 2, 4, ScheduleKind::OneFOneB);
        const Program prog = lower(plan, g);
        QCOMPARE(streamsRun(prog, cluster), prog.streams.size());
        compareTraces(simulateWith(g, cluster, plan, true), simulateWith(g, cluster, plan, false));
        // On equal nodes the same plan runs two streams of sixteen.
        QCOMPARE(streamsRun(prog, buildClusterPreset("dgx-a100-2x8")), size_t(2));
    }

    // Host and port shares measured from the timeline: streams are copied only while their
    // shares are the same. On v100-4x4 (one port a server) replicas 0 and 1 send from one
    // server to another at once and share its port, while replicas 2 and 3 each have a port
    // to themselves: the replicas' timings differ, and the trace must be every stream's own.
    // With every replica on its own pair of servers, and with CPU ranks sharing a host's cores
    // (cpu-local), the shares repeat.
    void measuredSharesThatDifferAreNotCopied_data() {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("dp");
        QTest::addColumn<QVariant>("map");
        const auto map = [](std::vector<std::vector<int>> m) { return QVariant::fromValue(m); };
        QTest::addRow("v100-4x4 two replicas share a port") << "v100-4x4" << 4 << map({{0, 1, 4, 8}, {12, 13, 10, 6}});
        QTest::addRow("v100-4x4 a port each") << "v100-4x4" << 2 << map({{0, 4}, {8, 12}});
        QTest::addRow("cpu-local") << "cpu-local" << 2 << map({});
    }
    void measuredSharesThatDifferAreNotCopied() {
        QFETCH(QString, preset);
        QFETCH(int, dp);
        QFETCH(QVariant, map);
        const Graph g = smallGpt();
        const Cluster cluster = buildClusterPreset(preset.toStdString());
        Plan plan = gptPlan(2, dp, 1, 4, ScheduleKind::OneFOneB);
        plan.device_map = map.value<std::vector<std::vector<int>>>();
        compareTraces(simulateWith(g, cluster, plan, true), simulateWith(g, cluster, plan, false));
    }

    // ZeRO-3 across servers of one port (v100-4x4): the in-compute gathers and the
    // reduce-scatters share each server's port, and the repeating streams' flows are counted
    // on their twins rather than listed (PortFlow::copies). The trace is the one of every
    // stream run with every flow listed.
    void portFlowsCountedOnTheirTwinsEqualEveryFlowListed_data() {
        QTest::addColumn<int>("dp");
        QTest::addColumn<int>("tp");
        QTest::addRow("dp16 zero-3") << 16 << 1;
        QTest::addRow("dp8 t2 sp zero-3") << 8 << 2;
    }
    void portFlowsCountedOnTheirTwinsEqualEveryFlowListed() {
        QFETCH(int, dp);
        QFETCH(int, tp);
        const Graph g = smallGpt();
        const Cluster cluster = buildClusterPreset("v100-4x4");
        Plan plan = gptPlan(1, dp, tp, 2, ScheduleKind::OneFOneB);
        plan.zero_stage = 3;
        plan.sequence_parallel = tp > 1;
        const Program prog = lower(plan, g);
        QVERIFY(streamsRun(prog, cluster) < prog.streams.size());
        compareTraces(simulateWith(g, cluster, plan, true), simulateWith(g, cluster, plan, false));
    }
};

QTEST_GUILESS_MAIN(TestSymmetricStreams)
#include "test_symmetric_streams.moc"
