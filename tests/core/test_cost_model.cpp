// The cost model's formulas on numbers worked out by hand.
#include <QtTest>

#include "planners/cost/cost_model.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

class TestCostModel : public QObject {
    Q_OBJECT
private slots:
    void computeTimeScalesWithSamples() {
        const Graph g = chainGraph(1, 1, 2, 1 << 20, 0, 4);  // costs given for 4 samples
        const Cluster c = exactCluster(1, 1);
        const CostModel cost(g, c);
        QCOMPARE(cost.fwdTime(0, 4, 0), 1.0);
        QCOMPARE(cost.fwdTime(0, 1, 0), 0.25);
        QCOMPARE(cost.bwdTime(0, 2, 0), 1.0);
        QCOMPARE(cost.bwdWeightTime(0, 2, 0), 0.5);  // weighted op: half of backward
        QCOMPARE(cost.bwdInputTime(0, 2, 0), 0.5);
    }

    void profiledTimesWinOverFlops() {
        Graph g = chainGraph(1);
        g.ops[0].fwd_time_s = 0.125;
        const Cluster c = exactCluster(1, 1);
        QCOMPARE(CostModel(g, c).fwdTime(0, 1, 0), 0.125);
        QCOMPARE(CostModel(g, c).bwdTime(0, 1, 0), 2.0);
    }

    // A device's profiled-time scale (fitted by calibration) multiplies profiled times only.
    void profiledTimeScaleScalesProfiledOpsOnly() {
        Graph g = chainGraph(1);
        g.ops[0].fwd_time_s = 0.125;
        Cluster c = exactCluster(1, 1);
        c.nodes[0].device.profiled_time_scale = 3;
        QCOMPARE(CostModel(g, c).fwdTime(0, 2, 0), 0.75);  // 0.125 x 2 samples x 3
        QCOMPARE(CostModel(g, c).bwdTime(0, 1, 0), 2.0);   // from FLOPs: unchanged
    }

    void efficiencyAndPrecisionPickTheRate() {
        Graph g = chainGraph(1);
        Cluster c = exactCluster(1, 1);
        c.nodes[0].device.peak_flops_fp16 = 4 * kFlopsPerSecond;
        c.nodes[0].device.efficiency = 0.5;
        QCOMPARE(CostModel(g, c).fwdTime(0, 1, 0), 2.0);
        g.source.precision = Precision::BF16;
        QCOMPARE(CostModel(g, c).fwdTime(0, 1, 0), 0.5);
    }

    void pointToPoint() {
        const Graph g = chainGraph(1);
        const Cluster c = exactCluster(2, 2, int64_t(1) << 40, 100e9, 1e-6, 10e9);
        const CostModel cost(g, c);
        QCOMPARE(cost.p2pTime(1'000'000, 0, 0), 0.0);
        QVERIFY(std::abs(cost.p2pTime(1'000'000, 0, 1) - (1e-6 + 1e-5)) < 1e-15);
        QVERIFY(std::abs(cost.p2pTime(1'000'000, 1, 2) - (1e-6 + 1e-4)) < 1e-15);
    }

    void ringAllReduceInsideANode() {
        const Graph g = chainGraph(1);
        const Cluster c = exactCluster(1, 4, int64_t(1) << 40, 1e10, 1e-5);
        const std::vector<int> group{0, 1, 2, 3};
        // 2(n-1)/n * B / bw + 2(n-1) * latency = 1.5 * 0.1 + 6e-5
        QVERIFY(std::abs(CostModel(g, c).allReduceTime(1'000'000'000, group) - (0.15 + 6e-5)) < 1e-12);
        QCOMPARE(CostModel(g, c).allReduceTime(1'000'000'000, std::vector<int>{2}), 0.0);
    }

    void hierarchicalAllReduceAcrossNodes() {
        const Graph g = chainGraph(1);
        const Cluster c = exactCluster(2, 4, int64_t(1) << 40, 1e11, 0, 1e10);
        const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
        // Reduce-scatter and all-gather inside: 2 * 3/4 * 1e9 / 1e11; across 2 nodes each
        // local rank all-reduces a quarter: 2 * 1/2 * 2.5e8 / 1e10.
        const double expected = 2 * 0.75 * 1e9 / 1e11 + 2 * 0.5 * 2.5e8 / 1e10;
        QVERIFY(std::abs(CostModel(g, c).allReduceTime(1'000'000'000, group) - expected) < 1e-12);
        // One device per node: a plain ring over the inter-node links.
        const std::vector<int> spread{0, 4};
        QVERIFY(std::abs(CostModel(g, c).allReduceTime(1'000'000'000, spread) - 1e9 / 1e10) < 1e-12);
    }

    void staticMemoryIsSixteenBytesAParameterForMixedAdam() {
        Graph g = chainGraph(1, 1, 2, 2'000'000);  // 1M parameters in fp16
        g.source.precision = Precision::FP16;
        const Cluster c = exactCluster(1, 1);
        const std::vector<int> ops{0};
        const StaticMemory m = CostModel(g, c).staticMemory(ops, Optimizer::Adam, 1, 25 << 20, 0);
        QCOMPARE(m.params, int64_t(2'000'000));
        QCOMPARE(m.grads, int64_t(2'000'000));
        QCOMPARE(m.master_params, int64_t(4'000'000));
        QCOMPARE(m.optimizer_state, int64_t(8'000'000));
        QCOMPARE(m.total(), int64_t(16'000'000));
    }

    void staticMemoryFp32() {
        const Graph g = chainGraph(1, 1, 2, 4'000'000);  // 1M parameters in fp32
        const Cluster c = exactCluster(1, 1);
        const std::vector<int> ops{0};
        const CostModel cost(g, c);
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGD, 1, 25 << 20, 0).total(), int64_t(8'000'000));
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGDMomentum, 1, 25 << 20, 0).total(), int64_t(12'000'000));
        QCOMPARE(cost.staticMemory(ops, Optimizer::Adam, 1, 25 << 20, 0).total(), int64_t(16'000'000));
        // Data parallelism adds gradient buckets in flight, never more than the gradients.
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGD, 2, 1'000'000, 0).comm_buffers, int64_t(2'000'000));
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGD, 2, 25 << 20, 0).comm_buffers, int64_t(4'000'000));
    }
};

QTEST_GUILESS_MAIN(TestCostModel)
#include "test_cost_model.moc"
