// The Gantt chart's timeline maths and memory series, without a window.
#include <QtTest>

#include "planners/algorithms/evaluate.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"
#include "widgets/gantt/timeline.h"
#include "widgets/memory/memory_series.h"

using namespace hippie;
using namespace hippie::widgets;

class TestGanttTimeline : public QObject {
    Q_OBJECT
private slots:
    void mapsTimeToPixelsAndBack() {
        const TimeAxisMapping m{2.0, 4.0, 100.0, 500.0};
        QCOMPARE(m.pixelsPerSecond(), 200.0);
        QCOMPARE(m.toPixel(2.0), 100.0);
        QCOMPARE(m.toPixel(3.0), 300.0);
        QCOMPARE(m.toPixel(4.0), 500.0);
        QCOMPARE(m.toTime(300.0), 3.0);
        QCOMPARE(m.toTime(m.toPixel(3.7)), 3.7);
        const TimeAxisMapping empty{1.0, 1.0, 0.0, 10.0};
        QCOMPARE(empty.pixelsPerSecond(), 0.0);
        QCOMPARE(empty.toTime(5.0), 1.0);
    }

    void groupsRowsByNodeWithGaps() {
        // Devices given out of order, two nodes of two devices.
        const GanttRowLayout l = GanttRowLayout::build({3, 0, 2, 1}, [](int d) { return d / 2; }, 0.5);
        QCOMPARE(int(l.rows.size()), 4);
        QCOMPARE(l.rows[0].device, 0);
        QCOMPARE(l.rows[1].device, 1);
        QCOMPARE(l.rows[2].device, 2);
        QCOMPARE(l.rows[3].device, 3);
        QCOMPARE(l.rows[0].y, 0.0);
        QCOMPARE(l.rows[1].y, 1.0);
        QCOMPARE(l.rows[2].y, 2.5);  // the node gap
        QCOMPARE(l.rows[3].y, 3.5);
        QCOMPARE(int(l.group_separators.size()), 1);
        QVERIFY(l.group_separators[0] > 1.5 && l.group_separators[0] < 2.0);
        QCOMPARE(l.rowOfDevice(2), 2);
        QCOMPARE(l.rowOfDevice(9), -1);
        QCOMPARE(l.top(), -0.5);
        QCOMPARE(l.bottom(), 4.0);
    }

    // A t2 x pp2 x dp2 plan with the default device map (device (r * pp + s) * tp + k): rows by
    // stage, then replica, then tp rank, one group per stage, and node boundaries inside a stage.
    void groupsRowsByStageReplicaAndRank() {
        Plan plan;
        plan.stages = {{0, 0}, {1, 1}};
        plan.dp = 2;
        plan.tp = 2;
        plan.device_map = defaultDeviceMap(2, 2, 2);
        const std::map<int, DeviceRole> roles = deviceRoles(plan);
        QCOMPARE(int(roles.size()), 8);
        QCOMPARE(roles.at(5).stage, 0);
        QCOMPARE(roles.at(5).replica, 1);
        QCOMPARE(roles.at(5).tp_rank, 1);
        QCOMPARE(roles.at(2).stage, 1);
        // Two nodes of four devices: stage 0 holds devices 0, 1 (node 0) and 4, 5 (node 1).
        const GanttRowLayout l = GanttRowLayout::build({7, 6, 5, 4, 3, 2, 1, 0}, [](int d) { return d / 4; }, 0.5, {}, roles);
        QVERIFY(l.by_stage);
        const std::vector<int> order{0, 1, 4, 5, 2, 3, 6, 7};
        QCOMPARE(int(l.rows.size()), 8);
        for (size_t i = 0; i < order.size(); ++i) {
            QCOMPARE(l.rows[i].device, order[i]);
            QCOMPARE(l.rowOfDevice(order[i]), int(i));
            QVERIFY(l.rows[i].role.has_value());
            QCOMPARE(l.rows[i].group, i < 4 ? 0 : 1);
        }
        QCOMPARE(roleLabel(*l.rows[2].role, true, true), std::string("S0 r1 t0"));
        QCOMPARE(roleLabel(*l.rows[5].role, false, true), std::string("S1 t1"));
        QCOMPARE(int(l.group_separators.size()), 1);
        QVERIFY(l.group_separators[0] > l.rows[3].y && l.group_separators[0] < l.rows[4].y);
        QCOMPARE(l.rows[4].y - l.rows[3].y, 1.5);  // the stage gap
        // Inside each stage replica 1 is on the other node.
        QCOMPARE(int(l.node_boundaries.size()), 2);
        QCOMPARE(l.node_boundaries[0], 1.5);
        // Collapsing stage 1 puts its four devices on one row.
        const GanttRowLayout c = GanttRowLayout::build({0, 1, 2, 3, 4, 5, 6, 7}, [](int d) { return d / 4; }, 0.5, {1}, roles);
        QCOMPARE(int(c.rows.size()), 5);
        QCOMPARE(c.rows.back().device_count, 4);
        QCOMPARE(c.rowOfDevice(7), 4);
        // One stage over two nodes (8 replicas of t2, hippie's shape): ordered by replica and
        // rank, grouped (and collapsed) by node, still labelled by role.
        Plan wide;
        wide.stages = {{0, 1}};
        wide.dp = 4;
        wide.tp = 2;
        wide.device_map = {{4, 5, 0, 1, 6, 7, 2, 3}};  // replica 0 on devices 4 and 5
        const std::map<int, DeviceRole> wide_roles = deviceRoles(wide);
        QVERIFY(!GanttRowLayout::groupsByStage(wide_roles));
        const GanttRowLayout w = GanttRowLayout::build({0, 1, 2, 3, 4, 5, 6, 7}, [](int d) { return d / 4; }, 0.5, {}, wide_roles);
        QVERIFY(!w.by_stage);
        const std::vector<int> wide_order{0, 1, 2, 3, 4, 5, 6, 7};  // node 0: replicas 1 and 3; node 1: replicas 0 and 2
        for (size_t i = 0; i < wide_order.size(); ++i) QCOMPARE(w.rows[i].device, wide_order[i]);
        QCOMPARE(w.rows[0].role->replica, 1);
        QCOMPARE(w.rows[2].role->replica, 3);
        QCOMPARE(w.rows[4].role->replica, 0);
        QCOMPARE(w.rows[4].group, 1);  // node 1
        QCOMPARE(int(w.group_separators.size()), 1);
        // Plain pipelines and placements keep device order.
        plan.dp = 1;
        plan.tp = 1;
        plan.device_map = defaultDeviceMap(2, 1, 1);
        QVERIFY(deviceRoles(plan).empty());
    }

    // Per-stage replication (3-1, PipeDream's shape): a row for each of stage 0's three
    // replicas and one for stage 1, grouped by stage and labelled by replica.
    void perStageReplicasGetARowEach() {
        Plan plan;
        plan.stages = {{0, 0}, {1, 1}};
        plan.dp = 3;
        plan.stage_replicas = {3, 1};
        plan.device_map = defaultDeviceMap(plan);
        const std::map<int, DeviceRole> roles = deviceRoles(plan);
        QCOMPARE(int(roles.size()), 4);
        const GanttRowLayout l = GanttRowLayout::build({0, 1, 2, 3}, [](int) { return 0; }, 0.5, {}, roles);
        QVERIFY(l.by_stage);
        QCOMPARE(int(l.rows.size()), 4);
        const std::vector<std::string> labels{"S0 r0", "S0 r1", "S0 r2", "S1 r0"};
        for (size_t i = 0; i < labels.size(); ++i) QCOMPARE(roleLabel(*l.rows[i].role, true, false), labels[i]);
        QCOMPARE(int(l.group_separators.size()), 1);
        QVERIFY(l.group_separators[0] > l.rows[2].y && l.group_separators[0] < l.rows[3].y);
    }

    // A simulated t2 x pp2 x dp2 ZeRO-1 plan of a small GPT: its tensor-parallel collectives,
    // gradient all-reduces and the ZeRO all-gathers after the step are drawn in the
    // communication band of their device's row, under its compute.
    void collectivesRunInTheCommunicationLane() {
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.batch_size = 2;
        spec.seq_len = 64;
        spec.precision = Precision::FP16;
        spec.overrides = {{"layers", 2}, {"d_model", 64}, {"heads", 4}, {"vocab", 512}};
        Problem problem;
        problem.graph = buildZooModel(spec);
        problem.cluster = buildClusterPreset("dgx-a100-1x8");
        problem.cluster_name = "dgx-a100-1x8";
        problem.global_batch = 8;
        Plan plan;
        plan.model = spec;
        plan.stages = {{0, 1}, {2, 3}};
        plan.dp = 2;
        plan.tp = 2;
        plan.zero_stage = 1;
        plan.micro_batches = 2;
        plan.global_batch = 8;
        plan.schedule = ScheduleKind::OneFOneB;
        plan.device_map = defaultDeviceMap(plan);
        const Trace t = simulateWithEvents(problem, plan);
        const GanttRowLayout l = GanttRowLayout::build(t.devices, [](int) { return 0; }, 0.5, {}, deviceRoles(plan));
        std::map<InstrKind, int> seen;
        for (const GanttBlock& b : placeBlocks(t, l)) {
            if (b.kind != InstrKind::TensorParallel && b.kind != InstrKind::AllReduce && b.kind != InstrKind::AllGather) continue;
            ++seen[b.kind];
            QCOMPARE(laneOf(b.kind), GanttLane::Communication);
            const double centre = l.rows[static_cast<size_t>(b.row)].y;
            QVERIFY2(b.y_top >= centre && b.y_bottom <= centre + 0.5, qPrintable(QString::fromStdString(toString(b.kind))));
        }
        QVERIFY(seen[InstrKind::TensorParallel] > 0);
        QVERIFY(seen[InstrKind::AllReduce] > 0);
        QCOMPARE(seen[InstrKind::AllGather], int(t.devices.size()));  // one a device: a stage's parameters fill one 25 MiB bucket
    }

    void placesBlocksInTheirRowAndLane() {
        Trace t;
        t.devices = {0, 1};
        t.events = {{0, 0.0, 1.0, InstrKind::Forward, 0, 0, -1, 0},
                    {1, 1.0, 2.0, InstrKind::Forward, 1, 0, -1, 0},
                    {0, 1.0, 1.2, InstrKind::SendActivation, 0, 0, 1, 100},
                    {7, 0.0, 1.0, InstrKind::Forward, 0, 0, -1, 0}};  // a device without a row
        const GanttRowLayout l = GanttRowLayout::build(t.devices, [](int) { return 0; });
        const std::vector<GanttBlock> blocks = placeBlocks(t, l);
        QCOMPARE(int(blocks.size()), 3);
        QCOMPARE(blocks[0].row, 0);
        QCOMPARE(blocks[1].row, 1);
        QVERIFY(blocks[1].y_top > blocks[0].y_bottom);  // row 1 is below row 0
        // Communication sits in the lower band of its row, under compute.
        QCOMPARE(blocks[2].row, 0);
        QVERIFY(blocks[2].y_top >= blocks[0].y_bottom);
        QVERIFY(blocks[2].y_bottom <= l.rows[0].y + 0.5);
        QCOMPARE(blockLabel(blocks[0]), std::string("F0"));
        QCOMPARE(blocks[2].event, 2);
    }

    void memorySeriesFollowTheTrace() {
        Trace t;
        t.devices = {4};
        t.capacity_bytes = {int64_t{40} << 30};
        t.memory = {{{0.0, int64_t{1} << 30}, {1.0, int64_t{3} << 30}, {2.0, int64_t{2} << 30}}};
        const std::vector<MemoryCurve> curves = memoryCurves(t, 5.0);
        QCOMPARE(int(curves.size()), 1);
        QCOMPARE(curves[0].device, 4);
        QCOMPARE(curves[0].capacity_gib, 40.0);
        QCOMPARE(curves[0].peak_gib, 3.0);
        QCOMPARE(curves[0].time_s.back(), 5.0);  // held to the end
        QCOMPARE(memoryAt(curves[0], -1.0), 0.0);
        QCOMPARE(memoryAt(curves[0], 0.5), 1.0);
        QCOMPARE(memoryAt(curves[0], 1.0), 3.0);
        QCOMPARE(memoryAt(curves[0], 4.0), 2.0);
        const MemoryCurve cut = truncated(curves[0], 1.5);
        QCOMPARE(cut.time_s.back(), 1.5);
        QCOMPARE(cut.gib.back(), 3.0);
    }
    void zoomKeepsTheAnchorAndStopsAtTheIteration() {
        const TimeWindow full{0.0, 10.0};
        // Zoom in at t = 2 with 20% of a 10 s window left of it: 2 s stays at 20%.
        const TimeWindow in = zoomWindow(full, 2.0, 0.5, full, 1e-3);
        QCOMPARE(in.span(), 5.0);
        QCOMPARE((2.0 - in.lower_s) / in.span(), 0.2);
        // Zooming out past the iteration stops at it.
        const TimeWindow out = zoomWindow(in, 2.0, 8.0, full, 1e-3);
        QCOMPARE(out.lower_s, 0.0);
        QCOMPARE(out.upper_s, 10.0);
        // Never narrower than the minimum span.
        QCOMPARE(zoomWindow(full, 5.0, 1e-9, full, 0.01).span(), 0.01);
        // Panning stops at either end.
        const TimeWindow right = panWindow({6.0, 9.0}, 0.5, full, 1e-3);
        QCOMPARE(right.lower_s, 7.0);
        QCOMPARE(right.upper_s, 10.0);
        const TimeWindow left = panWindow({1.0, 4.0}, -1.0, full, 1e-3);
        QCOMPARE(left.lower_s, 0.0);
        QCOMPARE(left.upper_s, 3.0);
    }

    void curvesAreFoundByDeviceNotRow() {
        std::vector<MemoryCurve> curves(3);
        curves[0].device = 5;
        curves[1].device = 1;
        curves[2].device = 3;
        QCOMPARE(curveOfDevice(curves, 3), &curves[2]);
        QCOMPARE(curveOfDevice(curves, 1), &curves[1]);
        QVERIFY(curveOfDevice(curves, 0) == nullptr);
    }
};

QTEST_APPLESS_MAIN(TestGanttTimeline)
#include "test_gantt_timeline.moc"
