// Calibration against known answers: a "measured" trace simulated on a cluster whose device
// efficiencies and link bandwidths differ from the model's by known factors must be fitted
// back to exactly those factors, and the calibrated cluster must then predict the measured
// step time.
#include <QtTest>

#include "planners/common/error.h"
#include "planners/cost/calibration.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/sim/simulator.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

namespace {

constexpr double kTol = 1e-6;
constexpr double kBandwidth = 1e9;       // bytes/s inside a node
constexpr double kInterBandwidth = 2e8;  // bytes/s between nodes
constexpr double kLatency = 2e-5;

Trace simulateOn(const Graph& g, const Cluster& c, const Plan& plan) {
    const CostModel cost(g, c);
    return simulate(lower(plan, g), plan, cost);
}

// The "true" hardware: per-node efficiency factors and bandwidth factors applied to `model`.
Cluster truth(const Cluster& model, const std::vector<double>& efficiency_factor, double intra_factor, double inter_factor) {
    Cluster c = model;
    for (size_t k = 0; k < c.nodes.size(); ++k) {
        c.nodes[k].device.efficiency *= efficiency_factor[k];
        c.nodes[k].intra.bandwidth_bytes_per_s *= intra_factor;
    }
    c.inter.bandwidth_bytes_per_s *= inter_factor;
    return c;
}

}  // namespace

class TestCalibration : public QObject {
    Q_OBJECT
private slots:
    // pp 2 x dp 2 over two nodes: pipeline sends inside nodes, all-reduces across them.
    void recoversFactorsAcrossTwoNodes_data() {
        QTest::addColumn<int>("schedule");
        for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Hippie, ScheduleKind::ZeroBubbleH1})
            QTest::addRow("%s", toString(k)) << static_cast<int>(k);
    }
    void recoversFactorsAcrossTwoNodes() {
        QFETCH(int, schedule);
        const Graph g = chainGraph(8, 0.01, 0.02, 4 << 20, 2 << 20, 4);
        Cluster model = exactCluster(2, 2, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        for (Node& n : model.nodes) n.device.efficiency = 0.9;
        Plan plan = pipelinePlan(8, 2, 2, 4, static_cast<ScheduleKind>(schedule), 1, 2);
        plan.device_map = defaultDeviceMap(2, 2);  // replica r on node r: p2p intra, all-reduce inter
        plan.bucket_bytes = 3 << 20;

        const std::vector<double> eff = {0.55, 0.8};
        const Cluster real = truth(model, eff, 0.5, 0.3);
        const Trace measured = simulateOn(g, real, plan);

        const CalibrationResult r = calibrateCluster(plan, g, model, measured);
        QVERIFY(r.compute_events > 0);
        QVERIFY(r.communication_events > 0);
        QCOMPARE(r.unmatched_events, 0);
        QVERIFY(r.compute_factor[0] && r.compute_factor[1]);
        QVERIFY(std::abs(*r.compute_factor[0] - eff[0]) < kTol);
        QVERIFY(std::abs(*r.compute_factor[1] - eff[1]) < kTol);
        QVERIFY(r.intra_bandwidth_factor && std::abs(*r.intra_bandwidth_factor - 0.5) < kTol);
        QVERIFY(r.inter_bandwidth_factor && std::abs(*r.inter_bandwidth_factor - 0.3) < kTol);
        for (size_t k = 0; k < 2; ++k) {
            QVERIFY(std::abs(r.cluster.nodes[k].device.efficiency - real.nodes[k].device.efficiency) < kTol);
            QVERIFY(std::abs(r.cluster.nodes[k].intra.bandwidth_bytes_per_s / real.nodes[k].intra.bandwidth_bytes_per_s - 1) < kTol);
            QCOMPARE(r.cluster.nodes[k].intra.latency_s, model.nodes[k].intra.latency_s);
        }
        QVERIFY(std::abs(r.cluster.inter.bandwidth_bytes_per_s / real.inter.bandwidth_bytes_per_s - 1) < kTol);
        // The calibrated cluster predicts what was measured; the given one did not.
        QVERIFY(std::abs(r.predicted_step_after_s / r.measured_step_s - 1) < kTol);
        QVERIFY(std::abs(r.errorAfterPercent()) < 1e-4);
        QVERIFY(std::abs(r.errorBeforePercent()) > 10);
    }

    // One node, data parallel only: the all-reduce runs on the intra-node link; no inter events.
    void singleNodeLeavesInterAlone() {
        const Graph g = chainGraph(4, 0.01, 0.02, 8 << 20, 1 << 20, 4);
        const Cluster model = exactCluster(1, 4, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        Plan plan = pipelinePlan(4, 1, 4, 2, ScheduleKind::OneFOneB, 1, 2);
        plan.device_map = defaultDeviceMap(1, 4);
        const Cluster real = truth(model, {0.4}, 0.7, 1.0);
        const CalibrationResult r = calibrateCluster(plan, g, model, simulateOn(g, real, plan));
        QVERIFY(r.compute_factor[0] && std::abs(*r.compute_factor[0] - 0.4) < kTol);
        QVERIFY(r.intra_bandwidth_factor && std::abs(*r.intra_bandwidth_factor - 0.7) < kTol);
        QVERIFY(!r.inter_bandwidth_factor);
        QCOMPARE(r.cluster.inter, model.inter);
    }

    // Profiled op times do not depend on the device: only the FLOP part is fitted.
    void profiledTimesStayFixed() {
        Graph g = chainGraph(4, 0.01, 0.02, 1 << 20, 1 << 20, 4);
        g.ops[1].fwd_time_s = 0.05;
        g.ops[1].bwd_time_s = 0.07;
        const Cluster model = exactCluster(1, 2, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        Plan plan = pipelinePlan(4, 2, 1, 4, ScheduleKind::OneFOneB, 1, 1);
        plan.device_map = defaultDeviceMap(2, 1);
        const Cluster real = truth(model, {0.25}, 0.9, 1.0);
        const CalibrationResult r = calibrateCluster(plan, g, model, simulateOn(g, real, plan));
        QVERIFY(r.compute_factor[0] && std::abs(*r.compute_factor[0] - 0.25) < kTol);
        QVERIFY(r.intra_bandwidth_factor && std::abs(*r.intra_bandwidth_factor - 0.9) < kTol);
    }

    // Faster than the model's peak x efficiency allows: efficiency capped at 1, peak raised.
    void fasterThanPeakRaisesPeak() {
        const Graph g = chainGraph(4, 0.01, 0.02, 1 << 20, 1 << 20, 4);
        Cluster model = exactCluster(1, 2, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        model.nodes[0].device.efficiency = 0.5;
        Plan plan = pipelinePlan(4, 2, 1, 2, ScheduleKind::GPipe);
        plan.device_map = defaultDeviceMap(2, 1);
        Cluster real = model;
        real.nodes[0].device.peak_flops_fp32 *= 3;  // 1.5x the model's peak, at efficiency 1
        const CalibrationResult r = calibrateCluster(plan, g, model, simulateOn(g, real, plan));
        QVERIFY(r.compute_factor[0] && std::abs(*r.compute_factor[0] - 3.0) < kTol);
        QCOMPARE(r.cluster.nodes[0].device.efficiency, 1.0);
        QVERIFY(std::abs(r.cluster.nodes[0].device.achievableFlops(Precision::FP32) / real.nodes[0].device.achievableFlops(Precision::FP32) - 1) < kTol);
        QVERIFY(std::abs(r.predicted_step_after_s / r.measured_step_s - 1) < kTol);
    }

    void traceOfAnotherPlanIsRefused() {
        const Graph g = chainGraph(4);
        const Cluster model = exactCluster(1, 4);
        Plan plan = pipelinePlan(4, 2, 1, 2, ScheduleKind::GPipe);
        plan.device_map = defaultDeviceMap(2, 1);
        Trace other;
        other.devices = {3};
        other.events.push_back({3, 0.0, 1.0, InstrKind::Forward, 7, 9, -1, 0});
        other.metrics.iteration_time_s = 1;
        QVERIFY_THROWS_EXCEPTION(hippie::Error, calibrateCluster(plan, g, model, other));
        Trace empty;
        QVERIFY_THROWS_EXCEPTION(hippie::Error, calibrateCluster(plan, g, model, empty));
    }
};

QTEST_GUILESS_MAIN(TestCalibration)
#include "test_calibration.moc"
