// Calibration against known answers: a "measured" trace simulated on a cluster whose figures
// (FLOP/s, profiled-time scale, link latencies and bandwidths) differ from the model's by known
// factors must be fitted back to exactly those factors, and the calibrated cluster must then
// predict the measured step time. Traces shaped like the engine's (send spans that last until
// their wait, all-reduce members that post at different times) must give the same answer.
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
constexpr double kLatency = 2e-4;
constexpr int64_t kMiB = 1 << 20;

Trace simulateOn(const Graph& g, const Cluster& c, const Plan& plan) {
    const CostModel cost(g, c);
    return simulate(lower(plan, g), plan, cost);
}

// The "true" hardware: `model` with its figures scaled by known factors (speeds for FLOP/s and
// bandwidths, times for the profiled scale and latencies).
struct Factors {
    std::vector<double> flops, profiled;
    double intra_bandwidth = 1, intra_latency = 1, inter_bandwidth = 1, inter_latency = 1;
};

Cluster truth(const Cluster& model, const Factors& f) {
    Cluster c = model;
    for (size_t k = 0; k < c.nodes.size(); ++k) {
        if (k < f.flops.size()) c.nodes[k].device.efficiency *= f.flops[k];
        if (k < f.profiled.size()) c.nodes[k].device.profiled_time_scale *= f.profiled[k];
        c.nodes[k].intra.bandwidth_bytes_per_s *= f.intra_bandwidth;
        c.nodes[k].intra.latency_s *= f.intra_latency;
    }
    c.inter.bandwidth_bytes_per_s *= f.inter_bandwidth;
    c.inter.latency_s *= f.inter_latency;
    return c;
}

bool near(const std::optional<double>& v, double expected) { return v && std::abs(*v - expected) < kTol; }

// 8 layers whose outputs and weights all differ in size (so transfers of several sizes tell
// latency from bandwidth), two of them with profiled times (so stages mix profiled and FLOP time
// in different proportions).
Graph variedGraph() {
    Graph g = chainGraph(8, 0.01, 0.02, kMiB, kMiB, 4);
    for (size_t i = 0; i < g.ops.size(); ++i) {
        g.ops[i].output_bytes = static_cast<int64_t>(i + 1) * kMiB / 2;
        g.ops[i].param_bytes = static_cast<int64_t>(i + 2) * kMiB;
    }
    for (Edge& e : g.edges) e.bytes = g.ops[static_cast<size_t>(e.src)].output_bytes;
    g.ops[1].fwd_time_s = 0.004;
    g.ops[1].bwd_time_s = 0.009;
    g.ops[4].fwd_time_s = 0.03;
    g.ops[4].bwd_time_s = 0.05;
    return g;
}

// The engine's shape of a trace: a send's span lasts until its wait (here: to the step's end),
// a receive is posted before the data leaves, and an all-reduce member that posts early (here
// those on devices below `early_below`) or waits late (the others) shows a longer span than the
// collective took.
Trace engineShaped(Trace t, int early_below) {
    const double end = t.metrics.iteration_time_s;
    for (TraceEvent& e : t.events) {
        if (isSend(e.kind)) e.end_s = end;
        if (isRecv(e.kind)) e.start_s = std::max(0.0, e.start_s - 0.001);
        if (e.kind == InstrKind::AllReduce) {
            if (e.device < early_below) e.start_s = std::max(0.0, e.start_s - 0.002);
            else e.end_s += 0.003;
        }
    }
    return t;
}

}  // namespace

class TestCalibration : public QObject {
    Q_OBJECT
private slots:
    // pp 4 x dp 2 over two nodes (replica r on node r): pipeline transfers inside the nodes,
    // all-reduces across them. Every figure differs from the model's; all are recovered.
    void recoversEveryFactor_data() {
        QTest::addColumn<int>("schedule");
        QTest::addColumn<bool>("engine_shaped");
        for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Hippie, ScheduleKind::ZeroBubbleH1}) {
            QTest::addRow("%s", toString(k)) << static_cast<int>(k) << false;
            QTest::addRow("%s engine-shaped", toString(k)) << static_cast<int>(k) << true;
        }
    }
    void recoversEveryFactor() {
        QFETCH(int, schedule);
        QFETCH(bool, engine_shaped);
        const Graph g = variedGraph();
        Cluster model = exactCluster(2, 4, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        model.inter.latency_s = 2 * kLatency;
        for (Node& n : model.nodes) n.device.efficiency = 0.9;
        Plan plan = pipelinePlan(8, 4, 2, 4, static_cast<ScheduleKind>(schedule), 1, 2);
        plan.device_map = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};  // replica r on node r
        plan.bucket_bytes = 3 * kMiB;

        Factors f;
        f.flops = {0.55, 0.8};
        f.profiled = {1.7, 0.6};
        f.intra_bandwidth = 0.5;
        f.intra_latency = 3.0;
        f.inter_bandwidth = 0.3;
        f.inter_latency = 1.5;
        const Cluster real = truth(model, f);
        Trace measured = simulateOn(g, real, plan);
        if (engine_shaped) measured = engineShaped(measured, 4);

        const CalibrationResult r = calibrateCluster(plan, g, model, measured);
        QVERIFY(r.accepted);
        QVERIFY(r.refusal.empty());
        QVERIFY(r.compute_events > 0);
        QVERIFY(r.communication_events > 0);
        QCOMPARE(r.unmatched_events, 0);
        for (size_t k = 0; k < 2; ++k) {
            QVERIFY2(near(r.compute_factor[k], f.flops[k]), qPrintable(QString::number(r.compute_factor[k].value_or(-1))));
            QVERIFY2(near(r.profiled_factor[k], f.profiled[k]), qPrintable(QString::number(r.profiled_factor[k].value_or(-1))));
        }
        QVERIFY(near(r.intra_bandwidth_factor, f.intra_bandwidth));
        QVERIFY(near(r.intra_latency_factor, f.intra_latency));
        QVERIFY(near(r.inter_bandwidth_factor, f.inter_bandwidth));
        QVERIFY(near(r.inter_latency_factor, f.inter_latency));
        for (size_t k = 0; k < 2; ++k) {
            QVERIFY(std::abs(r.cluster.nodes[k].device.efficiency / real.nodes[k].device.efficiency - 1) < kTol);
            QVERIFY(std::abs(r.cluster.nodes[k].device.profiled_time_scale / real.nodes[k].device.profiled_time_scale - 1) < kTol);
            QVERIFY(std::abs(r.cluster.nodes[k].intra.latency_s / real.nodes[k].intra.latency_s - 1) < kTol);
        }
        QVERIFY(std::abs(r.cluster.inter.bandwidth_bytes_per_s / real.inter.bandwidth_bytes_per_s - 1) < kTol);
        QVERIFY(std::abs(r.cluster.inter.latency_s / real.inter.latency_s - 1) < kTol);
        QVERIFY(r.cluster.name.ends_with("(calibrated)"));
        // The calibrated cluster predicts every event and the step that was measured.
        QVERIFY(r.event_error_before_percent > 10);
        QVERIFY(r.event_error_after_percent < 1e-4);
        QVERIFY(std::abs(r.predicted_step_after_s / simulateOn(g, real, plan).metrics.iteration_time_s - 1) < kTol);
        QVERIFY(std::abs(r.errorAfterPercent()) < 1e-4);
        QVERIFY(std::abs(r.errorBeforePercent()) > 10);
        QCOMPARE(r.describeFactors().size(), size_t{8});
    }

    // Every transfer of one size: latency and bandwidth cannot be told apart and get one factor
    // (the whole link time scales). A truth that scales the link time is recovered exactly.
    void equalSizesTieLatencyAndBandwidth() {
        const Graph g = chainGraph(4, 0.01, 0.02, 8 * kMiB, kMiB, 4);
        const Cluster model = exactCluster(1, 4, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        Plan plan = pipelinePlan(4, 2, 1, 4, ScheduleKind::OneFOneB, 1, 2);
        plan.device_map = defaultDeviceMap(2, 1);
        Factors f;
        f.flops = {0.4};
        f.intra_bandwidth = 1 / 2.5;
        f.intra_latency = 2.5;
        const CalibrationResult r = calibrateCluster(plan, g, model, simulateOn(g, truth(model, f), plan));
        QVERIFY(near(r.compute_factor[0], 0.4));
        QVERIFY(!r.profiled_factor[0]);  // no profiled op: nothing to fit
        QVERIFY(near(r.intra_latency_factor, 2.5));
        QVERIFY(near(r.intra_bandwidth_factor, 1 / 2.5));
        QVERIFY(!r.inter_bandwidth_factor && !r.inter_latency_factor);
        QCOMPARE(r.cluster.inter, model.inter);
        QVERIFY(std::abs(r.errorAfterPercent()) < 1e-4);
    }

    // Transfers whose time does not grow with their size (bandwidth a million times the model's):
    // the free fit would drive the bandwidth term to its bound, so latency and bandwidth are
    // fitted as one, and the prediction still gets closer.
    void termDrivenToABoundIsTiedToItsPartner() {
        const Graph g = variedGraph();
        const Cluster model = exactCluster(1, 4, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        Plan plan = pipelinePlan(8, 4, 1, 4, ScheduleKind::OneFOneB, 1, 2);
        plan.device_map = defaultDeviceMap(4, 1);
        Factors f;
        f.intra_bandwidth = 1e6;
        f.intra_latency = 5;
        const CalibrationResult r = calibrateCluster(plan, g, model, simulateOn(g, truth(model, f), plan));
        QVERIFY(r.intra_latency_factor && r.intra_bandwidth_factor);
        QVERIFY(std::abs(*r.intra_latency_factor * *r.intra_bandwidth_factor - 1) < kTol);  // one factor
        QVERIFY(r.accepted);
        QVERIFY(r.event_error_after_percent < r.event_error_before_percent);
        QVERIFY(std::abs(r.errorAfterPercent()) < std::abs(r.errorBeforePercent()));
    }

    // One node, data parallel only: the all-reduce runs on the intra-node link; no inter events.
    void singleNodeLeavesInterAlone() {
        Graph g = chainGraph(4, 0.01, 0.02, 8 * kMiB, kMiB, 4);
        g.ops[2].param_bytes = 2 * kMiB;  // buckets of two sizes
        const Cluster model = exactCluster(1, 4, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        Plan plan = pipelinePlan(4, 1, 4, 2, ScheduleKind::OneFOneB, 1, 2);
        plan.device_map = defaultDeviceMap(1, 4);
        plan.bucket_bytes = 4 * kMiB;
        Factors f;
        f.flops = {0.4};
        f.intra_bandwidth = 0.7;
        f.intra_latency = 1.3;
        const CalibrationResult r = calibrateCluster(plan, g, model, simulateOn(g, truth(model, f), plan));
        QVERIFY(near(r.compute_factor[0], 0.4));
        QVERIFY(near(r.intra_bandwidth_factor, 0.7));
        QVERIFY(near(r.intra_latency_factor, 1.3));
        QVERIFY(!r.inter_bandwidth_factor);
        QCOMPARE(r.cluster.inter, model.inter);
    }

    // A graph from `hippie-engine profile` predicts from profiled times: their scale is fitted
    // per node, apart from the FLOP part of the ops that have no profile.
    void profiledTimesAreScaled() {
        Graph g = chainGraph(4, 0.01, 0.02, kMiB, kMiB, 4);
        g.ops[1].fwd_time_s = 0.05;
        g.ops[1].bwd_time_s = 0.07;
        const Cluster model = exactCluster(1, 2, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        Plan plan = pipelinePlan(4, 2, 1, 4, ScheduleKind::OneFOneB, 1, 1);
        plan.device_map = defaultDeviceMap(2, 1);
        Factors f;
        f.flops = {0.25};
        f.profiled = {1.8};
        const CalibrationResult r = calibrateCluster(plan, g, model, simulateOn(g, truth(model, f), plan));
        QVERIFY(near(r.compute_factor[0], 0.25));
        QVERIFY(near(r.profiled_factor[0], 1.8));
        QCOMPARE(r.cluster.nodes[0].device.profiled_time_scale, model.nodes[0].device.profiled_time_scale * *r.profiled_factor[0]);
        QVERIFY(std::abs(r.errorAfterPercent()) < 1e-4);
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
        QVERIFY(near(r.compute_factor[0], 3.0));
        QCOMPARE(r.cluster.nodes[0].device.efficiency, 1.0);
        QVERIFY(std::abs(r.cluster.nodes[0].device.achievableFlops(Precision::FP32) / real.nodes[0].device.achievableFlops(Precision::FP32) - 1) < kTol);
        QVERIFY(std::abs(r.predicted_step_after_s / r.measured_step_s - 1) < kTol);
    }

    // The run's own step time (its mean over steps) is what the errors are quoted against; a fit
    // that predicts it worse than the given cluster is not kept.
    void fitThatPredictsTheStepWorseIsNotKept() {
        const Graph g = chainGraph(4, 0.01, 0.02, kMiB, kMiB, 4);
        const Cluster model = exactCluster(1, 2, int64_t(1) << 40, kBandwidth, kLatency, kInterBandwidth);
        Plan plan = pipelinePlan(4, 2, 1, 4, ScheduleKind::OneFOneB);
        plan.device_map = defaultDeviceMap(2, 1);
        Factors f;
        f.flops = {0.5};  // every event twice as long as predicted...
        const Trace measured = simulateOn(g, truth(model, f), plan);
        const double given_step = simulateOn(g, model, plan).metrics.iteration_time_s;

        CalibrationOptions agree;  // ...and the run's mean step says so too: kept
        agree.measured_step_s = measured.metrics.iteration_time_s;
        const CalibrationResult kept = calibrateCluster(plan, g, model, measured, agree);
        QVERIFY(kept.accepted);
        QCOMPARE(kept.measured_step_s, measured.metrics.iteration_time_s);

        CalibrationOptions disagree;  // ...but the run's mean step is what the given cluster says
        disagree.measured_step_s = given_step * 1.01;
        const CalibrationResult r = calibrateCluster(plan, g, model, measured, disagree);
        QVERIFY(!r.accepted);
        QCOMPARE(r.cluster, model);
        QCOMPARE(r.measured_step_s, given_step * 1.01);
        QVERIFY(near(r.compute_factor[0], 0.5));  // the fit is still reported
        QVERIFY(std::abs(r.errorAfterPercent()) > std::abs(r.errorBeforePercent()));
        QVERIFY2(r.refusal.find("worse") != std::string::npos, r.refusal.c_str());
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
