// The simulator against pipeline theory: exact bubble fractions, activation counts per stage,
// interleaving, all-reduce overlap, zero-bubble, recomputation and communication costs.
#include <QtTest>

#include <algorithm>
#include <map>

#include "planners/common/allocator.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/sim/simulator.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

namespace {

constexpr double kEps = 1e-9;

struct Run {
    Graph graph;
    Cluster cluster;
    Plan plan;
    Trace trace;
};

Run simulatePlan(const Graph& g, const Cluster& c, const Plan& plan) {
    Run r{g, c, plan, {}};
    const CostModel cost(r.graph, r.cluster);
    r.trace = simulate(lower(r.plan, r.graph), r.plan, cost);
    return r;
}

// Compute time the pipeline leaves idle before its last backward, summed over devices.
double idleSeconds(const Trace& t) {
    double window = 0, busy = 0;
    for (const TraceEvent& e : t.events)
        if (isCompute(e.kind) && e.kind != InstrKind::OptimizerStep) {
            window = std::max(window, e.end_s);
            busy += e.end_s - e.start_s;
        }
    return window * static_cast<double>(t.devices.size()) - busy;
}

// Activation bytes held at the peak, in units of one micro-batch's stash on that device.
double stashedMicroBatches(const Trace& t, size_t row, int64_t one_micro_batch) {
    const int64_t fixed = t.memory[row].back().bytes;  // everything freed again at the end
    return static_cast<double>(t.metrics.peak_memory_bytes[row] - fixed) / static_cast<double>(one_micro_batch);
}

}  // namespace

class TestSimulator : public QObject {
    Q_OBJECT
private slots:
    void bubbleFractionMatchesTheory_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("p");
        QTest::addColumn<int>("m");
        for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
            for (int p : {1, 2, 4, 8})
                for (int m : {1, 3, 8, 32}) QTest::addRow("%s p%d m%d", toString(k), p, m) << int(k) << p << m;
    }
    void bubbleFractionMatchesTheory() {
        QFETCH(int, kind);
        QFETCH(int, p);
        QFETCH(int, m);
        const Run r = simulatePlan(chainGraph(p), exactCluster(1, p), pipelinePlan(p, p, 1, m, static_cast<ScheduleKind>(kind)));
        const double expected = static_cast<double>(p - 1) / (m + p - 1);
        QVERIFY2(std::abs(r.trace.metrics.bubble_fraction - expected) < kEps,
                 qPrintable(QString("bubble %1, expected %2").arg(r.trace.metrics.bubble_fraction).arg(expected)));
        // The pipeline takes (m + p - 1) slots of forward + backward (1 s + 2 s).
        double last_backward = 0;
        for (const TraceEvent& e : r.trace.events)
            if (e.kind == InstrKind::Backward) last_backward = std::max(last_backward, e.end_s);
        QVERIFY(std::abs(last_backward - 3.0 * (m + p - 1)) < kEps);
    }

    void oneFOneBHoldsAtMostPMinusSMicroBatches() {
        const int p = 4, m = 8;
        const Graph g = chainGraph(p, 1, 2, 0);
        const Cluster c = exactCluster(1, p);
        const Run one = simulatePlan(g, c, pipelinePlan(p, p, 1, 1, ScheduleKind::OneFOneB));
        const Run r = simulatePlan(g, c, pipelinePlan(p, p, 1, m, ScheduleKind::OneFOneB));
        const Run gp = simulatePlan(g, c, pipelinePlan(p, p, 1, m, ScheduleKind::GPipe));
        for (int s = 0; s < p; ++s) {
            const auto row = static_cast<size_t>(s);
            const int64_t stash = one.trace.metrics.peak_memory_bytes[row] - one.trace.memory[row].back().bytes;
            QCOMPARE(stashedMicroBatches(r.trace, row, stash), double(std::min(p - s, m)));
            QCOMPARE(stashedMicroBatches(gp.trace, row, stash), double(m));
        }
    }

    void interleavingDividesTheBubbleByV() {
        const int p = 4, m = 8, v = 2;
        const Cluster c = exactCluster(1, p);
        const Run plain = simulatePlan(chainGraph(p), c, pipelinePlan(p, p, 1, m, ScheduleKind::OneFOneB));
        // Same work per device, cut into v chunks of half the layers' time each.
        const Run inter = simulatePlan(chainGraph(p * v, 0.5, 1.0), c, pipelinePlan(p * v, p, 1, m, ScheduleKind::Interleaved, v));
        const double plain_idle = idleSeconds(plain.trace);
        QVERIFY(std::abs(plain_idle - p * (p - 1) * 3.0) < kEps);
        QVERIFY2(std::abs(idleSeconds(inter.trace) - plain_idle / v) < kEps, qPrintable(QString::number(idleSeconds(inter.trace))));
    }

    void hippieHidesAllReduceThatOneFOneBLeavesExposed() {
        // 2 stages x 2 replicas; 64 MiB of weights per layer over a 10 GB/s link.
        const Graph g = chainGraph(8, 1, 2, int64_t(64) << 20);
        const Cluster c = exactCluster(1, 4, int64_t(1) << 40, 10e9);
        Plan plan = pipelinePlan(8, 2, 2, 4, ScheduleKind::OneFOneB);
        const Run base = simulatePlan(g, c, plan);
        plan.schedule = ScheduleKind::Hippie;
        const Run hip = simulatePlan(g, c, plan);
        QCOMPARE(base.trace.metrics.allreduce_hidden_fraction, 0.0);
        QVERIFY(hip.trace.metrics.allreduce_hidden_fraction > 0.5);
        QVERIFY(hip.trace.metrics.iteration_time_s < base.trace.metrics.iteration_time_s);
        // Same compute, same bubble before the last backward.
        QVERIFY(std::abs(hip.trace.metrics.bubble_fraction - base.trace.metrics.bubble_fraction) < 0.05);
    }

    void hippieReleasesSentActivationsEarly() {
        const Graph g = chainGraph(4, 1, 2, 0);
        const Cluster c = exactCluster(1, 2);
        const Run base = simulatePlan(g, c, pipelinePlan(4, 2, 1, 8, ScheduleKind::OneFOneB));
        const Run hip = simulatePlan(g, c, pipelinePlan(4, 2, 1, 8, ScheduleKind::Hippie));
        QVERIFY(hip.trace.metrics.peak_memory_bytes[0] < base.trace.metrics.peak_memory_bytes[0]);
        QCOMPARE(hip.trace.metrics.peak_memory_bytes[1], base.trace.metrics.peak_memory_bytes[1]);  // the last stage sends nothing
    }

    void zeroBubbleShrinksTheBubble_data() {
        QTest::addColumn<int>("p");
        QTest::addColumn<int>("m");
        for (int p : {2, 4, 8})
            for (int m : {8, 32}) QTest::addRow("p%d m%d", p, m) << p << m;
    }
    void zeroBubbleShrinksTheBubble() {
        // F = 1 s, B = W = 1 s: ZB-H1 leaves (p-1)(F+B-W) idle instead of 1F1B's (p-1)(F+B+W).
        QFETCH(int, p);
        QFETCH(int, m);
        const int64_t act = 1 << 20;
        const Graph g = chainGraph(p, 1, 2, 1 << 20, act);
        const Cluster c = exactCluster(1, p);
        const Run base = simulatePlan(g, c, pipelinePlan(p, p, 1, m, ScheduleKind::OneFOneB));
        const Run zb = simulatePlan(g, c, pipelinePlan(p, p, 1, m, ScheduleKind::ZeroBubbleH1));
        QVERIFY(std::abs(base.trace.metrics.bubble_fraction - double(p - 1) / (m + p - 1)) < kEps);
        QVERIFY2(std::abs(zb.trace.metrics.bubble_fraction - double(p - 1) / (3 * m + p - 1)) < kEps,
                 qPrintable(QString::number(zb.trace.metrics.bubble_fraction)));
        // Activations between F and B stay within 1F1B's bound; weight gradients that wait
        // hold only their inputs (one layer output here), at most p - 1 of them.
        QCOMPARE(zb.trace.metrics.peak_memory_bytes[0], base.trace.metrics.peak_memory_bytes[0]);
        for (size_t s = 1; s < static_cast<size_t>(p); ++s)
            QVERIFY(zb.trace.metrics.peak_memory_bytes[s] <= base.trace.metrics.peak_memory_bytes[s] + (p - 1) * act);
    }

    void recomputationTradesTimeForMemory() {
        // Stage 0 of 2 (layers 0-3) keeps two micro-batches in flight. Its layers have three ops
        // each (norm, two linears), each output 1 MiB: 12 MiB a micro-batch. Recomputing them
        // keeps each layer's output only (its checkpoint, which the next layer reads): 4 MiB;
        // the backward rebuilds one layer at a time (3 MiB live). That holds 2 x 4 + 3 = 11
        // MiB, less than the 12 MiB of rebuilding the stage from its input alone, so lowering
        // checkpoints every layer. Peak, besides the 1 MiB buffer the gradients arrive in:
        // 2 x 12 = 24 MiB without, 11 MiB with, at the first rebuild.
        const int64_t act = 1 << 20;
        const Graph g = tensorParallelChain(8, 1, 2, 0, act);
        const Cluster c = exactCluster(1, 2);
        Plan plan = pipelinePlan(8, 2, 1, 4, ScheduleKind::OneFOneB);
        const Run base = simulatePlan(g, c, plan);
        plan.recompute_layers = {0, 1, 2, 3};
        const Run rc = simulatePlan(g, c, plan);
        QVERIFY(lower(rc.plan, rc.graph).recomputesPerLayer(0));
        QCOMPARE(base.trace.metrics.peak_memory_bytes[0], 25 * act);
        QCOMPARE(rc.trace.metrics.peak_memory_bytes[0], 12 * act);
        // Each of the 4 micro-batches runs stage 0's four forward layers again: 16 s of compute.
        double base_busy = 0, rc_busy = 0;
        for (const TraceEvent& e : base.trace.events) base_busy += e.device == 0 && isCompute(e.kind) ? e.end_s - e.start_s : 0;
        for (const TraceEvent& e : rc.trace.events) rc_busy += e.device == 0 && isCompute(e.kind) ? e.end_s - e.start_s : 0;
        QVERIFY(std::abs(rc_busy - base_busy - 16.0) < 1e-6);
        QVERIFY(rc.trace.metrics.iteration_time_s > base.trace.metrics.iteration_time_s);
    }

    void manyMicroBatchesInFlightCheckpointTheStageInput() {
        // GPipe keeps all 4 micro-batches of stage 0 (layers 0-1, 6 MiB each) in flight. Their
        // checkpoints a layer at a time would hold 4 x 2 + 3 = 11 MiB; keeping the stage's input
        // alone (none: it reads the data) and rebuilding both layers holds 6 MiB: lowering takes
        // that (GPipe's re-materialisation of a partition). Peak with the gradient buffer: 7
        // MiB, against 4 x 6 + 1 = 25 without recomputation. Layers of one op each would hold as
        // much a layer at a time as without recomputation: their outputs are their checkpoints.
        const int64_t act = 1 << 20;
        const Cluster c = exactCluster(1, 2);
        Plan plan = pipelinePlan(4, 2, 1, 4, ScheduleKind::GPipe);
        const Graph g = tensorParallelChain(4, 1, 2, 0, act);
        const Run base = simulatePlan(g, c, plan);
        plan.recompute_layers = {0, 1};
        const Run rc = simulatePlan(g, c, plan);
        QVERIFY(!lower(rc.plan, rc.graph).recomputesPerLayer(0));
        QCOMPARE(base.trace.metrics.peak_memory_bytes[0], 25 * act);
        QCOMPARE(rc.trace.metrics.peak_memory_bytes[0], 7 * act);
        const Graph one_op = chainGraph(4, 1, 2, 0, act);
        Plan one_f_one_b = pipelinePlan(4, 2, 1, 4, ScheduleKind::OneFOneB);
        one_f_one_b.recompute_layers = {0, 1};
        QVERIFY(!lower(one_f_one_b, one_op).recomputesPerLayer(0));
    }

    void zeroBubbleKeepsEveryRebuildForItsWeightPass() {
        // zb-h1's input pass keeps the graph for the weight pass: the rebuilt layers of a
        // micro-batch all live until W, so checkpoints would only add to them and lowering keeps
        // the stage's input alone. Stage 0 as in recomputationTradesTimeForMemory: 1F1B's peak is
        // 12 MiB a layer at a time; zb-h1 rebuilds all four layers (12 MiB) beside the 1 MiB
        // buffer: 13 MiB.
        const int64_t act = 1 << 20;
        const Graph g = tensorParallelChain(8, 1, 2, 0, act);
        const Cluster c = exactCluster(1, 2);
        Plan plan = pipelinePlan(8, 2, 1, 4, ScheduleKind::OneFOneB);
        plan.recompute_layers = {0, 1, 2, 3};
        const Run one = simulatePlan(g, c, plan);
        plan.schedule = ScheduleKind::ZeroBubbleH1;
        const Run zb = simulatePlan(g, c, plan);
        QVERIFY(!lower(zb.plan, zb.graph).recomputesPerLayer(0));
        QCOMPARE(one.trace.metrics.peak_memory_bytes[0], 12 * act);
        QCOMPARE(zb.trace.metrics.peak_memory_bytes[0], 13 * act);
    }

    void pointToPointCostsLatencyPlusBytesOverBandwidth() {
        // 1 MiB activations over 1 MiB/s with 0.5 s latency: each hop 1.5 s, two hops.
        const Graph g = chainGraph(2, 1, 2, 0, 1 << 20);
        const Cluster c = exactCluster(1, 2, int64_t(1) << 40, double(1 << 20), 0.5);
        const Run r = simulatePlan(g, c, pipelinePlan(2, 2, 1, 1, ScheduleKind::OneFOneB));
        QVERIFY(std::abs(r.trace.metrics.iteration_time_s - (1 + 1.5 + 1 + 2 + 1.5 + 2)) < 1e-6);
        QVERIFY(std::abs(r.trace.metrics.throughput_samples_per_s - 1.0 / r.trace.metrics.iteration_time_s) < kEps);
    }

    // A data-parallel gradient bucket is flattened before its all-reduce (two passes over its
    // bytes at the memory bandwidth) and averaged and copied back in the optimizer step (four):
    // the engine's GradBuckets. Without a memory bandwidth neither costs anything.
    void gradientBucketsCostTheirCopies() {
        const Graph g = chainGraph(1, 1, 2, int64_t{1} << 30);  // 1 GiB of parameters, one bucket
        Cluster c = exactCluster(1, 2, int64_t(1) << 40, 1e10, 0);
        Plan plan = pipelinePlan(1, 1, 2, 1, ScheduleKind::OneFOneB);
        plan.bucket_bytes = int64_t{2} << 30;
        const auto durations = [&](const Cluster& cluster) {
            const Run r = simulatePlan(g, cluster, plan);
            std::map<InstrKind, double> d;
            for (const TraceEvent& e : r.trace.events)
                if (e.device == 0) d[e.kind] += e.end_s - e.start_s;
            return d;
        };
        const auto plain = durations(c);
        c.nodes[0].device.memory_bandwidth_bytes_per_s = 4e9;
        const auto copied = durations(c);
        const double gib = static_cast<double>(int64_t{1} << 30);
        QVERIFY2(std::abs(copied.at(InstrKind::AllReduce) - plain.at(InstrKind::AllReduce) - 2 * gib / 4e9) < 1e-9,
                 qPrintable(QString("%1 vs %2").arg(copied.at(InstrKind::AllReduce)).arg(plain.at(InstrKind::AllReduce))));
        // The optimizer step also becomes memory-bound itself (SGD: 12 bytes a parameter).
        const CostModel with_bw(g, c);
        const int64_t params = (int64_t{1} << 30) / 4;
        QVERIFY2(std::abs(copied.at(InstrKind::OptimizerStep) - with_bw.optimizerTime(params, Optimizer::SGD, 0) - 4 * gib / 4e9) < 1e-9,
                 qPrintable(QString::number(copied.at(InstrKind::OptimizerStep))));
        QVERIFY(std::abs(plain.at(InstrKind::OptimizerStep) - CostModel(g, exactCluster(1, 2, int64_t(1) << 40, 1e10, 0)).optimizerTime(params, Optimizer::SGD, 0)) < 1e-12);
    }

    // A backward after the first of the step adds its weight gradients into those held: two
    // reads and a write of the gradient at the memory bandwidth, plus one add kernel's launch
    // (autograd's AccumulateGrad). Under ZeRO 2 only the replica's shard accumulates.
    void laterMicroBatchesAccumulateGradients() {
        const int64_t gib = int64_t{1} << 30;
        const Graph g = chainGraph(1, 1, 2, gib);
        Cluster c = exactCluster(1, 2);
        c.nodes[0].device.memory_bandwidth_bytes_per_s = 4e9;
        c.nodes[0].device.launch_overhead_s = 1e-3;
        const auto backwards = [&](const Plan& plan) {
            std::vector<double> d;
            for (const TraceEvent& e : simulatePlan(g, c, plan).trace.events)
                if (e.device == 0 && e.kind == InstrKind::Backward) d.push_back(e.end_s - e.start_s);
            return d;
        };
        const std::vector<double> plain = backwards(pipelinePlan(1, 1, 1, 3, ScheduleKind::GPipe));
        QCOMPARE(plain.size(), size_t{3});
        const double accumulate = 3 * static_cast<double>(gib) / 4e9 + 1e-3;
        QVERIFY2(std::abs(plain[1] - plain[0] - accumulate) < 1e-9, qPrintable(QString("%1 vs %2").arg(plain[1]).arg(plain[0])));
        QVERIFY(std::abs(plain[2] - plain[1]) < 1e-12);
        Plan sharded = pipelinePlan(1, 1, 2, 3, ScheduleKind::GPipe);
        sharded.zero_stage = 2;
        const std::vector<double> zero = backwards(sharded);
        QCOMPARE(zero.size(), size_t{3});
        QVERIFY2(std::abs(zero[1] - zero[0] - (3 * static_cast<double>(gib) / 2 / 4e9 + 1e-3)) < 1e-9, qPrintable(QString::number(zero[1] - zero[0])));
        // One micro-batch accumulates nothing.
        QCOMPARE(backwards(pipelinePlan(1, 1, 1, 1, ScheduleKind::GPipe)).size(), size_t{1});
        QVERIFY(std::abs(backwards(pipelinePlan(1, 1, 1, 1, ScheduleKind::GPipe))[0] - plain[0]) < 1e-12);
    }

    // Devices that time-share a host's cores (CPU ranks, Node::compute_slots) compute at
    // min(1, slots / devices computing at once) of their rate: data-parallel replicas that
    // compute together each take twice as long on one slot, pipeline stages that take turns
    // keep their full rate, and a partly overlapped pipeline lands in between.
    void hostSharedComputeSlowsConcurrentComputeOnly() {
        const Graph one = chainGraph(1, 1, 2, 0);
        Cluster c = exactCluster(1, 2);
        const double plain_dp = simulatePlan(one, c, pipelinePlan(1, 1, 2, 1, ScheduleKind::OneFOneB)).trace.metrics.iteration_time_s;
        QVERIFY(std::abs(plain_dp - 3.0) < kEps);
        c.nodes[0].compute_slots = 1;
        const Run dp = simulatePlan(one, c, pipelinePlan(1, 1, 2, 1, ScheduleKind::OneFOneB));
        QVERIFY2(std::abs(dp.trace.metrics.iteration_time_s - 6.0) < kEps, qPrintable(QString::number(dp.trace.metrics.iteration_time_s)));
        c.nodes[0].compute_slots = 2;  // a slot each: as if unshared
        QVERIFY(std::abs(simulatePlan(one, c, pipelinePlan(1, 1, 2, 1, ScheduleKind::OneFOneB)).trace.metrics.iteration_time_s - 3.0) < kEps);

        // pp 2, one micro-batch: F0, F1, B1, B0 never overlap.
        const Graph two = chainGraph(2, 1, 2, 0);
        c.nodes[0].compute_slots = 1;
        const Run turns = simulatePlan(two, c, pipelinePlan(2, 2, 1, 1, ScheduleKind::OneFOneB));
        QVERIFY2(std::abs(turns.trace.metrics.iteration_time_s - 6.0) < kEps, qPrintable(QString::number(turns.trace.metrics.iteration_time_s)));

        // pp 2, four micro-batches: the steady state overlaps the stages, warm-up and drain do not.
        const Plan four = pipelinePlan(2, 2, 1, 4, ScheduleKind::OneFOneB);
        const double shared = simulatePlan(two, c, four).trace.metrics.iteration_time_s;
        c.nodes[0].compute_slots = 0;
        const double plain = simulatePlan(two, c, four).trace.metrics.iteration_time_s;
        QVERIFY2(shared > plain * 1.2 && shared < 2 * plain - 1, qPrintable(QString("%1 vs %2").arg(shared).arg(plain)));
    }

    // A node's network ports carry every flow that leaves it: the simulator measures, over each
    // cross-node send's and collective's span, how many flows share its busiest port and gives
    // it that share. Two all-reduces of different groups that run at once on nodes of one port
    // each take twice as long as alone; the same plan on nodes with a port per device, or
    // all-reduces that never meet, take the time alone.
    void collectivesOfDifferentGroupsShareANodesPorts() {
        // Backward costs nothing: both stages post their all-reduce at once (t = 2).
        const Graph g = chainGraph(2, 1, 0, int64_t{1} << 30, 0);
        const double port = 1e9;
        Cluster c = exactCluster(2, 2, int64_t(1) << 40, 1e30, 0, port);
        for (Node& n : c.nodes) n.ports = {1, port};
        const Plan plan = pipelinePlan(2, 2, 2, 1, ScheduleKind::OneFOneB);
        const auto allReduces = [&](const Cluster& cluster) {
            std::vector<TraceEvent> out;
            for (const TraceEvent& e : simulatePlan(g, cluster, plan).trace.events)
                if (e.kind == InstrKind::AllReduce) out.push_back(e);
            return out;
        };
        // Stage groups {0, 2} and {1, 3}: one member on each node, a 2-node ring of 1 GiB.
        const double alone = static_cast<double>(int64_t{1} << 30) / port;
        const std::vector<TraceEvent> shared = allReduces(c);
        QCOMPARE(shared.size(), size_t{4});
        for (const TraceEvent& e : shared)
            QVERIFY2(std::abs(e.end_s - e.start_s - 2 * alone) < 1e-9, qPrintable(QString("%1 vs %2").arg(e.end_s - e.start_s).arg(2 * alone)));
        for (Node& n : c.nodes) n.ports = {2, port};  // a port per device
        for (const TraceEvent& e : allReduces(c)) QVERIFY(std::abs(e.end_s - e.start_s - alone) < 1e-9);
        // With a backward of 2 s, stage 1 all-reduces from t = 4 to 5.07 and stage 0 from t = 6:
        // they never meet, and each has the whole port.
        for (Node& n : c.nodes) n.ports = {1, port};
        const Graph staggered = chainGraph(2, 1, 2, int64_t{1} << 30, 0);
        int seen = 0;
        for (const TraceEvent& e : simulatePlan(staggered, c, plan).trace.events)
            if (e.kind == InstrKind::AllReduce) {
                ++seen;
                QVERIFY2(std::abs(e.end_s - e.start_s - alone) < 1e-9, qPrintable(QString("%1 vs %2").arg(e.end_s - e.start_s).arg(alone)));
            }
        QCOMPARE(seen, 4);
    }

    // A pipeline's cross-node send and an all-reduce leaving the same node at once share its
    // port too. Every device its own node (one port): stage 1 ends its backward at t = 5 (F0,
    // the activation's send alone, F1: 1 s each; B1 2 s) and at once sends the gradient to
    // stage 0 (1 s alone) and all-reduces its 4 GB of weights with
    // its replica (4 s alone). The send has half the port all along: 2 s. The all-reduce has
    // half of it while the send runs and all of it after, on average 1 + 2 / T over its T
    // seconds: T = 4 (1 + 2 / T), T = 2 + 2 sqrt(3) = 5.46 s.
    void pipelineSendsAndAllReducesShareANodesPorts() {
        const double port = 1e9;
        Graph g = chainGraph(2, 1, 2, 0, int64_t(1e9));
        g.ops[1].param_bytes = int64_t(4e9);
        Cluster c = exactCluster(4, 1, int64_t(1) << 40, 1e30, 0, port);
        for (Node& n : c.nodes) n.ports = {1, port};
        const Run r = simulatePlan(g, c, pipelinePlan(2, 2, 2, 1, ScheduleKind::OneFOneB));
        const TraceEvent* send = nullptr;
        const TraceEvent* all_reduce = nullptr;
        for (const TraceEvent& e : r.trace.events) {
            if (e.device != 1) continue;
            if (e.kind == InstrKind::SendGrad) send = &e;
            if (e.kind == InstrKind::AllReduce) all_reduce = &e;
        }
        QVERIFY(send && all_reduce);
        QVERIFY2(std::abs(send->start_s - 5) < 1e-9 && std::abs(all_reduce->start_s - 5) < 1e-9,
                 qPrintable(QString("send at %1, all-reduce at %2").arg(send->start_s).arg(all_reduce->start_s)));
        // Measured to within the simulator's tolerance (0.5% a time).
        const double expected_send = 2.0, expected_all_reduce = 2 + 2 * std::sqrt(3.0);
        QVERIFY2(std::abs(send->end_s - send->start_s - expected_send) < 0.01 * expected_send, qPrintable(QString::number(send->end_s - send->start_s)));
        QVERIFY2(std::abs(all_reduce->end_s - all_reduce->start_s - expected_all_reduce) < 0.01 * expected_all_reduce,
                 qPrintable(QString::number(all_reduce->end_s - all_reduce->start_s)));
    }

    // ZeRO-3's gathers run inside the computes and its reduce-scatters on the collective
    // stream, over the same group and the same ports: they share them. Two layers of 1 GiB of
    // weights and no compute, dp 2 across two nodes of one port each, two micro-batches: a
    // unit u = 1 GiB / 2 / port is one layer's gather or reduce-scatter alone. Each forward
    // and backward gathers both layers (2u) and each backward's gradients are reduce-scattered
    // after it (2u) while the next micro-batch's forward gathers: 6 GiB cross each port one
    // way, 12u. Sharing, the step is F0 2u, B0 2u, F1 with the reduce-scatters 4u, B1 2u and the
    // last reduce-scatters 2u: 12u, the ports full all along (10u when the gathers ignored the
    // reduce-scatters). With a port each, nothing slows: 10u. Both beside the optimizer step.
    void zeroThreeGathersShareANodesPortsWithTheReduceScatters() {
        const double port = 1e9;
        const Graph g = chainGraph(2, 0, 0, int64_t{1} << 30, 0);
        Cluster c = exactCluster(2, 1, int64_t(1) << 40, 1e30, 0, port);
        for (Node& n : c.nodes) n.ports = {1, port};
        Plan plan = pipelinePlan(2, 1, 2, 2, ScheduleKind::OneFOneB);
        plan.zero_stage = 3;
        const double u = static_cast<double>(int64_t{1} << 30) / 2 / port;
        const auto step = [&] { return simulatePlan(g, c, plan).trace.metrics.iteration_time_s; };
        const double shared = step();
        for (Node& n : c.nodes) n.ports = {2, port};
        const double own = step();
        // Both beside the optimizer's step over the 1 GiB shard (0.5 ms).
        QVERIFY2(std::abs(own - 10 * u) < 1e-3 * 10 * u, qPrintable(QString("%1 s, expected %2").arg(own).arg(10 * u)));
        QVERIFY2(std::abs(shared - own - 2 * u) < 0.01 * 2 * u, qPrintable(QString("%1 s against %2, expected %3 more").arg(shared).arg(own).arg(2 * u)));
    }

    void memoryEfficiencyIsThroughputPerGiB() {
        const Run r = simulatePlan(chainGraph(2), exactCluster(1, 2), pipelinePlan(2, 2, 1, 4, ScheduleKind::OneFOneB));
        const auto& m = r.trace.metrics;
        QVERIFY(std::abs(m.memory_efficiency - m.throughput_samples_per_s / (double(m.max_peak_memory_bytes) / (1 << 30))) < kEps);
        QCOMPARE(memoryEfficiency(1.8, int64_t(43) << 30) / memoryEfficiency(1.0, int64_t(100) << 30), 1.8 / 0.43);
    }

    void fitsMemoryComparesPeakWithCapacity() {
        const Graph g = chainGraph(2, 1, 2, int64_t(1) << 30);
        const Plan plan = pipelinePlan(2, 1, 1, 1, ScheduleKind::OneFOneB);
        QVERIFY(simulatePlan(g, exactCluster(1, 1, int64_t(64) << 30), plan).trace.metrics.fits_memory);
        QVERIFY(!simulatePlan(g, exactCluster(1, 1, int64_t(4) << 30), plan).trace.metrics.fits_memory);
    }

    // The runtime's reserve (CUDA context, what the driver keeps) is no room for tensors: a
    // plan whose peak fits the device's memory but not what the reserve leaves does not fit,
    // and the trace's capacity is what is left.
    void theRuntimesReserveIsNoRoomForTensors() {
        const Graph g = chainGraph(2, 1, 2, int64_t(1) << 30);
        const Plan plan = pipelinePlan(2, 1, 1, 1, ScheduleKind::OneFOneB);
        const int64_t peak = simulatePlan(g, exactCluster(1, 1), plan).trace.metrics.max_peak_memory_bytes;
        Cluster c = exactCluster(1, 1, peak);
        QVERIFY(simulatePlan(g, c, plan).trace.metrics.fits_memory);
        c.nodes[0].device.reserved_bytes = 1;
        const Trace t = simulatePlan(g, c, plan).trace;
        QVERIFY(!t.metrics.fits_memory);
        QCOMPARE(t.capacity_bytes, std::vector<int64_t>{peak - 1});
        QCOMPARE(t.metrics.max_peak_memory_bytes, peak);  // the reserve is not a tensor
    }

    void eventsCoverEveryInstruction() {
        const Graph g = chainGraph(4);
        const Plan plan = pipelinePlan(4, 2, 2, 4, ScheduleKind::Hippie);
        const Program prog = lower(plan, g);
        const Cluster c = exactCluster(1, 4);
        const Trace t = simulate(prog, plan, CostModel(g, c));
        size_t n = 0;
        for (const auto& s : prog.streams) n += s.size();
        QCOMPARE(t.events.size(), n);
        for (const TraceEvent& e : t.events) QVERIFY(e.end_s >= e.start_s);
        SimOptions quiet;
        quiet.record_events = false;
        const Trace q = simulate(prog, plan, CostModel(g, c), quiet);
        QVERIFY(q.events.empty());
        QCOMPARE(q.metrics.iteration_time_s, t.metrics.iteration_time_s);
        // Peaks without the curves they come from.
        QCOMPARE(q.metrics.peak_memory_bytes, t.metrics.peak_memory_bytes);
        QVERIFY(std::all_of(q.memory.begin(), q.memory.end(), [](const auto& curve) { return curve.empty(); }));
        QVERIFY(std::all_of(t.memory.begin(), t.memory.end(), [](const auto& curve) { return !curve.empty(); }));
    }

    // The planning programs' allocator settings are ones glibc accepts (it refuses an mmap
    // threshold above 32 MiB on 64-bit systems, silently for the caller but for this result).
    void plannersKeepFreedMemoryForReuse() {
#if defined(__SANITIZE_ADDRESS__)
        QSKIP("AddressSanitizer's allocator answers mallopt with 0 and keeps its own settings");
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
        QSKIP("AddressSanitizer's allocator answers mallopt with 0 and keeps its own settings");
#endif
#endif
#if defined(__GLIBC__)
        QVERIFY(keepFreedMemoryForReuse());
#else
        QVERIFY(!keepFreedMemoryForReuse());
#endif
    }
};

QTEST_GUILESS_MAIN(TestSimulator)
#include "test_simulator.moc"
