// The operator-placement planners (m-topo, m-etf, m-sct, tga, sgp) through the registry:
// plans that fit when they say so and lower to valid programs, infeasibility with a reason,
// the one-device plan, m-ETF against one device, m-ETF and m-SCT running their list schedule as
// scheduled, TGA's seeding and convergence, cancellation,
// and SGP: its cut on a chain and its spread of parallel branches (exact), memory caps, its
// segments' dependence on the device count and their refinement where memory binds, its step
// estimate against the simulator, its step time against TGA's on zoo graphs, and its scale;
// its memory count against placementMemory and its fit on the benchmark's graphs; the
// one-device memory count; planning time without the final scoring of the returned plan.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/placement/placement_common.h"
#include "planners/algorithms/placement/random_dag.h"
#include "planners/algorithms/placement/sgp.h"
#include "planners/algorithms/placement/tga.h"
#include "planners/algorithms/registry.h"
#include "planners/algorithms/side_by_side.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/validate.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::placement;
using namespace hippie::test;

namespace {

const std::vector<std::string> kPlanners = {"m-topo", "m-etf", "m-sct", "tga", "sgp"};
constexpr int64_t kGiB = int64_t{1} << 30;

Problem problemOf(Graph g, Cluster c, int global_batch, double budget_s = 3) {
    Problem p;
    p.graph = std::move(g);
    p.cluster = std::move(c);
    p.cluster_name = p.cluster.name;
    p.global_batch = global_batch;
    p.time_budget_s = budget_s;
    return p;
}

Graph zoo(const std::string& name, int batch) {
    ModelSpec spec;
    spec.zoo = name;
    spec.batch_size = batch;
    return buildZooModel(spec);
}

// The first `devices` devices of one DGX A100 (40 GiB each).
Cluster dgx(int devices) {
    Cluster c = buildClusterPreset("dgx-a100-1x8");
    c.nodes[0].devices = devices;
    return c;
}

PlannerResult planWith(const std::string& name, const Problem& p) {
    PlanContext ctx(p.time_budget_s);
    return makePlanner(name)->plan(p, ctx);
}

// Everything a placement result promises: the plan is a placement of every op, lowers to a
// valid program, and fits each device when it says it is feasible.
void checkPlacementResult(const Problem& p, const PlannerResult& r) {
    QVERIFY2(r.feasible, qPrintable(QString::fromStdString(r.planner + ": " + r.reason)));
    const Plan& plan = r.plan;
    QVERIFY(plan.isPlacement());
    QCOMPARE(plan.placement.size(), p.graph.ops.size());
    QCOMPARE(plan.dp, 1);
    QVERIFY(plan.micro_batches >= 1);
    QCOMPARE(plan.schedule, ScheduleKind::GPipe);
    QCOMPARE(plan.planner, r.planner);
    checkPlan(plan, p.graph, p.cluster.deviceCount());
    const ValidationResult v = validate(lower(plan, p.graph), p.graph);
    QVERIFY2(v.ok, qPrintable(QString::fromStdString(v.problems.empty() ? "" : v.problems.front())));
    const auto memory = placementMemory(p, plan);
    for (size_t d = 0; d < memory.size(); ++d)
        QVERIFY2(memory[d] <= p.cluster.device(static_cast<int>(d)).usableBytes(),
                 qPrintable(QString("%1: device %2 needs %3 bytes").arg(QString::fromStdString(r.planner)).arg(d).arg(memory[d])));
    const TraceMetrics m = evaluate(p, plan);
    QVERIFY(m.fits_memory);
    QCOMPARE(m.iteration_time_s, r.metrics.iteration_time_s);
    QVERIFY(r.planning_time_s >= 0);
}

// SGP's segment counts from its log line "sgp: 12 segment(s) (8 for 4 devices, 4 more for
// memory), ...": those the device count asks for and all of them.
struct SgpSegments {
    int by_devices = -1, total = -1;
};
SgpSegments sgpSegments(const PlannerResult& r) {
    SgpSegments s;
    for (const std::string& line : r.log) {
        int total = 0, by_devices = 0, devices = 0, more = 0;
        if (std::sscanf(line.c_str(), "sgp: %d segment(s) (%d for %d devices, %d more", &total, &by_devices, &devices, &more) == 4) {
            s.total = total;
            s.by_devices = by_devices;
        }
    }
    return s;
}

void addPlannerRows() {
    QTest::addColumn<QString>("planner");
    for (const std::string& n : kPlanners) QTest::addRow("%s", n.c_str()) << QString::fromStdString(n);
}

// Rows of zoo models, each at its global batch.
void modelsAtBatches(const std::vector<std::pair<const char*, int>>& rows) {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("batch");
    for (const auto& [m, b] : rows) QTest::addRow("%s", m) << QString(m) << b;
}

// Every op on device 0, as the placement planners' one-device comparison makes it.
Plan oneDevicePlan(const Problem& p) {
    Plan single = basePlan(p, "one");
    single.placement.assign(p.graph.ops.size(), 0);
    single.micro_batches = kPlacementMicroBatches;
    single.schedule = ScheduleKind::GPipe;
    return single;
}

}  // namespace

class TestPlacementPlanners : public QObject {
    Q_OBJECT
private slots:
    void registryListsThePlacementFamily() {
        std::vector<std::string> names;
        for (const PlannerInfo& info : placementPlanners()) {
            QCOMPARE(info.family, std::string("placement"));
            QVERIFY(!info.description.empty());
            QCOMPARE(info.make()->name(), info.name);
            names.push_back(info.name);
        }
        QCOMPARE(names, kPlanners);
        for (const std::string& n : kPlanners) QVERIFY(findPlanner(n));
    }

    // The model needs about two devices' memory: every planner must split it and fit.
    void plansFitAndLowerUnderMemoryPressure_data() {
        QTest::addColumn<QString>("planner");
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("batch");
        for (const std::string& n : kPlanners)
            for (const auto& [m, b] : std::vector<std::pair<const char*, int>>{{"inception-v3", 512}, {"gnmt-8", 2944}, {"resnet50", 512}})
                QTest::addRow("%s %s", n.c_str(), m) << QString::fromStdString(n) << QString(m) << b;
    }
    void plansFitAndLowerUnderMemoryPressure() {
        QFETCH(QString, planner);
        QFETCH(QString, model);
        QFETCH(int, batch);
        const Problem p = problemOf(zoo(model.toStdString(), batch), dgx(4), batch);
        const PlannerResult r = planWith(planner.toStdString(), p);
        checkPlacementResult(p, r);
        QVERIFY2(r.plan.deviceCount() >= 2, "one device cannot hold the model");
    }

    void branchyGraphsUseSeveralDevices_data() { addPlannerRows(); }
    void branchyGraphsUseSeveralDevices() {
        QFETCH(QString, planner);
        const Problem p = problemOf(zoo("inception-v3", 32), dgx(4), 32);
        const PlannerResult r = planWith(planner.toStdString(), p);
        checkPlacementResult(p, r);
    }

    // m-TOPO fills devices in turn up to an even share of the memory, grown step by step
    // while ops are left over, and fills to capacity only when no share up to a device's
    // capacity fits. Inception-v3 at batch 512 does not fit one A100 (so the one-device plan
    // cannot replace m-TOPO's placement): on 4 devices an even share, grown a little, fits and
    // every device is used, with nothing to say. On 8 its largest op alone (what a micro-batch
    // keeps of it, its imports and workspace) is more than twice an even share: the share grows
    // to the least that fits, 5 of the 8 devices get ops, and the note says so; filled to
    // capacity instead (what the share's old cap of 3x led to) it ran on 2.
    void mTopoUsesEveryDeviceItCan_data() {
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("used");
        QTest::addRow("4 devices") << 4 << 4;
        QTest::addRow("8 devices") << 8 << 5;
    }
    void mTopoUsesEveryDeviceItCan() {
        QFETCH(int, devices);
        QFETCH(int, used);
        const Problem p = problemOf(zoo("inception-v3", 512), dgx(devices), 512);
        const PlannerResult r = planWith("m-topo", p);
        checkPlacementResult(p, r);
        const std::set<int> on(r.plan.placement.begin(), r.plan.placement.end());
        QCOMPARE(static_cast<int>(on.size()), used);
        std::vector<std::string> expected;
        if (used < devices) expected.push_back("uses " + std::to_string(used) + " of " + std::to_string(devices) + " devices; the others stay idle");
        QCOMPARE(r.notes, expected);
    }

    void oneDeviceGivesTheSingleDevicePlan_data() { addPlannerRows(); }
    void oneDeviceGivesTheSingleDevicePlan() {
        QFETCH(QString, planner);
        const Problem p = problemOf(zoo("inception-v3", 32), dgx(1), 32);
        const PlannerResult r = planWith(planner.toStdString(), p);
        checkPlacementResult(p, r);
        QCOMPARE(r.plan.placement, std::vector<int>(p.graph.ops.size(), 0));
        // Too big for the one device: infeasible, with the sizes in the reason.
        const Problem big = problemOf(zoo("inception-v3", 512), dgx(1), 512);
        const PlannerResult none = planWith(planner.toStdString(), big);
        QVERIFY(!none.feasible);
        QVERIFY2(none.reason.find("GiB") != std::string::npos, none.reason.c_str());
    }

    void anOpLargerThanEveryDeviceIsInfeasible_data() { addPlannerRows(); }
    void anOpLargerThanEveryDeviceIsInfeasible() {
        QFETCH(QString, planner);
        Graph g = chainGraph(6);
        g.ops[3].param_bytes = 2 * kGiB;  // with Adam: 8 GiB of weights, gradients and moments
        const Problem p = problemOf(g, exactCluster(1, 4, 4 * kGiB), 1);
        const PlannerResult r = planWith(planner.toStdString(), p);
        QVERIFY(!r.feasible);
        QVERIFY2(r.reason.find(g.ops[3].name) != std::string::npos, r.reason.c_str());
    }

    void aModelLargerThanAllDevicesIsInfeasible_data() { addPlannerRows(); }
    void aModelLargerThanAllDevicesIsInfeasible() {
        QFETCH(QString, planner);
        const Problem p = problemOf(chainGraph(16, 1, 2, kGiB / 4, kGiB / 4), exactCluster(1, 4, 3 * kGiB), 1);
        const PlannerResult r = planWith(planner.toStdString(), p);
        QVERIFY(!r.feasible);
        QVERIFY2(r.reason.find("together") != std::string::npos, r.reason.c_str());
    }

    // Devices of unlimited memory: m-ETF never does worse than everything on one device.
    // m-ETF's own placement (before the planner's "keep one device when that is faster"
    // guard) must beat one device where the graph has parallel branches and memory is
    // plentiful: the result then spans several devices, is strictly faster than one device
    // and has no fallback note. Elsewhere the planner may keep one device, and must say so.
    void metfBeatsOneDeviceOnBranchyGraphsOrSaysItKeptOne_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("devices");
        QTest::addColumn<bool>("branchy");
        for (const char* m : {"inception-v3", "random"})
            for (int d : {2, 4}) QTest::addRow("%s d%d", m, d) << QString(m) << d << true;
        for (const char* m : {"gnmt-8", "transformer-big", "resnet50"}) QTest::addRow("%s d4", m) << QString(m) << 4 << false;
    }
    void metfBeatsOneDeviceOnBranchyGraphsOrSaysItKeptOne() {
        QFETCH(QString, model);
        QFETCH(int, devices);
        QFETCH(bool, branchy);
        RandomDagOptions small;
        small.ops = 2000;
        small.width = 40;
        Cluster c = dgx(devices);
        c.nodes[0].device.memory_bytes = int64_t{1} << 50;
        const Graph g = model == "random" ? randomLayeredDag(small) : zoo(model.toStdString(), 64);
        const Problem p = problemOf(g, c, 64);
        const PlannerResult r = planWith("m-etf", p);
        checkPlacementResult(p, r);
        Plan one = basePlan(p, "one");
        one.placement.assign(p.graph.ops.size(), 0);
        one.schedule = ScheduleKind::GPipe;
        const double one_s = evaluate(p, one).iteration_time_s;
        const bool kept_one = std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) { return n.find("kept one device") != std::string::npos; });
        if (branchy) {
            QVERIFY2(!kept_one && r.plan.deviceCount() > 1, "m-ETF's placement lost to one device");
            QVERIFY(r.metrics.iteration_time_s < one_s);
        } else {
            QCOMPARE(kept_one, r.plan.deviceCount() == 1);
        }
    }

    void metfUsesBranchParallelism() {
        Cluster c = dgx(4);
        c.nodes[0].device.memory_bytes = int64_t{1} << 50;
        const Problem p = problemOf(zoo("inception-v3", 256), c, 256);
        const PlannerResult r = planWith("m-etf", p);
        Plan one = basePlan(p, "one");
        one.placement.assign(p.graph.ops.size(), 0);
        one.schedule = ScheduleKind::GPipe;
        QVERIFY(r.metrics.iteration_time_s < 0.9 * evaluate(p, one).iteration_time_s);
    }

    // m-ETF and m-SCT hand the lowering an order that runs their list schedule as scheduled:
    // their simulated step is their list schedule's makespan within 1% on Inception-v3 (in
    // start-time order, whose runs on one device wait for every input of the run, it was 6.3%
    // slower), and the log says which order was taken.
    void baechiRunsItsListScheduleAsScheduled_data() {
        QTest::addColumn<QString>("planner");
        QTest::newRow("m-etf") << QString("m-etf");
        QTest::newRow("m-sct") << QString("m-sct");
    }
    void baechiRunsItsListScheduleAsScheduled() {
        QFETCH(QString, planner);
        const Problem p = problemOf(zoo("inception-v3", 512), dgx(4), 512, 10);
        const PlannerResult r = planWith(planner.toStdString(), p);
        QVERIFY(r.feasible);
        double makespan_s = -1;
        bool order_logged = false;
        for (const std::string& line : r.log) {
            if (const auto at = line.find("estimated makespan "); at != std::string::npos) makespan_s = std::stod(line.substr(at + 19));
            order_logged = order_logged || line.find("in start-time order") != std::string::npos;
        }
        QVERIFY(makespan_s > 0 && order_logged);
        const double step_s = r.metrics.iteration_time_s;
        QVERIFY2(std::abs(step_s - makespan_s) < 0.01 * makespan_s,
                 qPrintable(QString("simulated %1 s against the list schedule's %2 s").arg(step_s).arg(makespan_s)));
    }

    void tgaIsSeededAndRecordsConvergence() {
        const Problem p = problemOf(zoo("inception-v3", 512), dgx(4), 512, 30);
        TgaOptions o;
        o.max_generations = 40;
        PlanContext c1(p.time_budget_s), c2(p.time_budget_s);
        const PlannerResult a = TgaPlanner(o).plan(p, c1);
        const PlannerResult b = TgaPlanner(o).plan(p, c2);
        checkPlacementResult(p, a);
        QCOMPARE(a.plan.placement, b.plan.placement);
        QCOMPARE(a.convergence, b.convergence);
        QCOMPARE(a.convergence.size(), size_t(40));
        for (size_t i = 1; i < a.convergence.size(); ++i) QVERIFY(a.convergence[i] <= a.convergence[i - 1]);
        Problem other = p;
        other.seed = 99;
        PlanContext c3(p.time_budget_s);
        QVERIFY(TgaPlanner(o).plan(other, c3).convergence != a.convergence);
    }

    void tgaIsAtLeastAsGoodAsBaechi() {
        const Problem p = problemOf(zoo("inception-v3", 512), dgx(4), 512, 30);
        TgaOptions o;
        o.max_generations = 100;
        PlanContext ctx(p.time_budget_s);
        const double tga = TgaPlanner(o).plan(p, ctx).metrics.iteration_time_s;
        for (const char* baechi : {"m-topo", "m-etf", "m-sct"}) QVERIFY(tga <= planWith(baechi, p).metrics.iteration_time_s);
    }

    // A budget spent before the search starts (the seeds alone take longer than a microsecond):
    // no generation runs, and TGA still returns the best of its seeds, a placement that fits.
    // Deterministic where a wall-clock bound on the whole run is not (it failed under ASan).
    void tgaStopsAtItsTimeBudget() {
        RandomDagOptions o;
        o.ops = 500;
        const Problem p = problemOf(randomLayeredDag(o), dgx(4), 4, 1e-6);
        const PlannerResult r = planWith("tga", p);
        checkPlacementResult(p, r);
        QVERIFY2(r.convergence.empty(), qPrintable(QString::number(r.convergence.size()) + " generations ran"));
    }

    void cancelledPlannersStopEarly_data() { addPlannerRows(); }
    void cancelledPlannersStopEarly() {
        QFETCH(QString, planner);
        const Problem p = problemOf(zoo("inception-v3", 512), dgx(4), 512, 30);
        PlanContext ctx(p.time_budget_s);
        ctx.cancel();
        const PlannerResult r = makePlanner(planner.toStdString())->plan(p, ctx);
        QVERIFY(r.planning_time_s < 10);
        // Either nothing (the list schedulers stop at once) or the best so far, said so.
        QVERIFY2(r.reason.find("cancel") != std::string::npos, r.reason.c_str());
    }

    void progressIsReported_data() { addPlannerRows(); }
    void progressIsReported() {
        QFETCH(QString, planner);
        const Problem p = problemOf(zoo("gnmt-8", 2048), dgx(4), 2048);
        std::vector<double> seen;
        PlanContext ctx(p.time_budget_s, [&](double f, const std::string&) { seen.push_back(f); });
        makePlanner(planner.toStdString())->plan(p, ctx);
        QVERIFY(seen.size() >= 2);
        for (double f : seen) QVERIFY(f >= 0.0 && f <= 1.0);
        QCOMPARE(seen.back(), 1.0);
    }

    void coplacementCanBeSwitchedOff() {
        RandomDagOptions o;
        o.ops = 3000;
        const Problem p = problemOf(randomLayeredDag(o), dgx(4), 4);
        PlacementOptions off;
        off.coplacement.enabled = false;
        const PlacementModel grouped(p, PlacementOptions{}.coplacement), plain(p, off.coplacement);
        QVERIFY(grouped.units() < plain.units());
        QCOMPARE(plain.units(), 3000);
        PlanContext ctx(p.time_budget_s);
        checkPlacementResult(p, makePlanner("m-etf")->plan(p, ctx));
    }

    // A chain of 48 layers about one and a half times as large as one device, on 4 devices:
    // 8 segments (two per device) at equal shares of cost (6 layers each), each cut moved
    // within its window (one layer) to the fewest crossing bytes: the one before layer 25
    // (the smallest tensor) instead of 24. Memory needs two devices: the chain stays on device
    // 0 while it holds no more than half the model and a quarter of a segment (25 layers), and
    // moves to device 1 exactly there, where the smallest tensor crosses. Communication is
    // free, so no layer leaves its home; devices 2 and 3 stay idle.
    void sgpCutsAChainWhereTheSmallestTensorCrosses() {
        Graph g = chainGraph(48, 1, 2, 64 << 20, 16 << 20);
        g.ops[24].output_bytes = 1 << 20;
        g.edges[24].bytes = 1 << 20;
        const Problem p = problemOf(g, exactCluster(1, 4, 9 * kGiB), 1);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        std::vector<int> expected(48, 1);
        std::fill(expected.begin(), expected.begin() + 25, 0);
        QCOMPARE(r.plan.placement, expected);
        QCOMPARE(sgpSegments(r).total, 8);
        int cut = 0;
        for (const Edge& e : p.graph.edges) cut += r.plan.placement[static_cast<size_t>(e.src)] != r.plan.placement[static_cast<size_t>(e.dst)];
        QCOMPARE(cut, 1);
    }

    // Four branches of 3 s between a fork and a join: with 1 ms transfers each branch runs on
    // its own device, in device order, the fork with the first. The segments (fork and two
    // branches, the third branch, the fourth, the join) are homed on devices 0, 0, 1, 1 by
    // earliest finish (a segment's outputs count as ready when the whole segment ends), and
    // the join stays home on device 1. With transfers longer than the branches nothing
    // leaves device 0.
    void sgpSpreadsParallelBranchesOnlyWhereTransfersPay_data() {
        QTest::addColumn<double>("bandwidth");
        QTest::addColumn<QVector<int>>("placement");
        QTest::addRow("cheap transfers") << 1e9 << QVector<int>{0, 0, 1, 2, 3, 1};
        QTest::addRow("dear transfers") << 1e3 << QVector<int>{0, 0, 0, 0, 0, 0};
    }
    void sgpSpreadsParallelBranchesOnlyWhereTransfersPay() {
        QFETCH(double, bandwidth);
        QFETCH(QVector<int>, placement);
        Graph g = chainGraph(6, 1, 2, 1 << 20, 1 << 20);
        g.ops[0].fwd_flops = g.ops[5].fwd_flops = 0.01 * kFlopsPerSecond;
        g.ops[0].bwd_flops = g.ops[5].bwd_flops = 0.02 * kFlopsPerSecond;
        g.edges = {{0, 1, 1 << 20}, {0, 2, 1 << 20}, {0, 3, 1 << 20}, {0, 4, 1 << 20},
                   {1, 5, 1 << 20}, {2, 5, 1 << 20}, {3, 5, 1 << 20}, {4, 5, 1 << 20}};
        const Problem p = problemOf(g, exactCluster(1, 4, int64_t{1} << 40, bandwidth), 1);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        QCOMPARE(r.plan.placement, std::vector<int>(placement.begin(), placement.end()));
        if (placement.count(0) < placement.size()) {
            // Parallel: one branch's time plus fork, join and two transfers, not four branches.
            QVERIFY2(r.metrics.iteration_time_s < 3.2, qPrintable(QString::number(r.metrics.iteration_time_s)));
        } else {
            const bool home = std::any_of(r.log.begin(), r.log.end(), [](const std::string& l) { return l.find("; 0 ops off their home") != std::string::npos; });
            QVERIFY2(home, "SGP moved a branch although its transfers cost more than it saves");
        }
    }

    // Sixteen layers of about 1 GiB on devices of 5 GiB: at least four home segments; SGP
    // fits every device by exact accounting, and says so when even all devices cannot.
    void sgpRespectsMemoryCaps() {
        const Problem p = problemOf(chainGraph(16, 1, 2, 256 << 20, 64 << 20), exactCluster(1, 6, 5 * kGiB), 1);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);  // every device within its memory
        QVERIFY(r.plan.deviceCount() >= 4);
        const Problem tight = problemOf(chainGraph(16, 1, 2, 256 << 20, 64 << 20), exactCluster(1, 3, 5 * kGiB), 1);
        const PlannerResult none = planWith("sgp", tight);
        QVERIFY(!none.feasible);
        QVERIFY2(none.reason.find("GiB") != std::string::npos, none.reason.c_str());
    }

    // SGP's segments follow the device count: two per device where memory does not bind
    // (Inception-v3 at a batch one 40 GiB device holds), on 2, 4 and 8 devices alike.
    void sgpSegmentsFollowTheDeviceCount_data() {
        QTest::addColumn<int>("devices");
        for (int d : {2, 4, 8}) QTest::addRow("%d devices", d) << d;
    }
    void sgpSegmentsFollowTheDeviceCount() {
        QFETCH(int, devices);
        const Problem p = problemOf(zoo("inception-v3", 64), dgx(devices), 64);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        const SgpSegments s = sgpSegments(r);
        QCOMPARE(s.by_devices, SgpOptions{}.segments_per_device * devices);
        QCOMPARE(s.total, s.by_devices);  // none added for memory
    }

    // Where memory binds, segments are refined: a chain whose first eight layers hold the
    // computation (10 s forward each, 1 MiB of weights) and whose last eight hold the memory
    // (256 MiB of weights, about 1 GiB with gradients and Adam's state each, 0.01 s), on D
    // devices of 4.5 GiB (D = 2) or 2.25 GiB (D = 4), so that the model needs about nine
    // tenths of all memory. The 2 x D segments at equal shares of cost put the memory layers
    // in D segments of 8 / D layers, each more than a device's home budget (85% of it): each
    // is cut again where a device's room ends. The plan fits every device by exact accounting
    // (checkPlacementResult) and uses all of them.
    void sgpRefinesSegmentsWhereMemoryBinds_data() {
        QTest::addColumn<int>("devices");
        QTest::addColumn<double>("memory_gib");
        QTest::addRow("2 x 4.5 GiB") << 2 << 4.5;
        QTest::addRow("4 x 2.25 GiB") << 4 << 2.25;
    }
    void sgpRefinesSegmentsWhereMemoryBinds() {
        QFETCH(int, devices);
        QFETCH(double, memory_gib);
        Graph g = chainGraph(16, 0.01, 0.02, 256 << 20, 16 << 20);
        for (int i = 0; i < 8; ++i) {
            g.ops[static_cast<size_t>(i)].fwd_flops = 10 * kFlopsPerSecond;
            g.ops[static_cast<size_t>(i)].bwd_flops = 20 * kFlopsPerSecond;
            g.ops[static_cast<size_t>(i)].param_bytes = 1 << 20;
        }
        const Problem p = problemOf(g, exactCluster(1, devices, static_cast<int64_t>(memory_gib * static_cast<double>(kGiB))), 1);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        const SgpSegments s = sgpSegments(r);
        QCOMPARE(s.by_devices, SgpOptions{}.segments_per_device * devices);
        QVERIFY2(s.total > s.by_devices, qPrintable(QString("%1 segments").arg(s.total)));
        QCOMPARE(r.plan.deviceCount(), devices);
    }

    // SGP runs no step estimate: its balancing pass's own timing (the makespan of its
    // earliest-finish pass over typical links) tracks the simulator's step within 5% on the
    // zoo graphs.
    void sgpStepEstimateTracksTheSimulator_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("devices");
        for (const auto& [m, b] : std::vector<std::pair<const char*, int>>{{"inception-v3", 512}, {"gnmt-8", 2048}, {"transformer-big", 128}, {"resnet50", 512}})
            for (int d : {4, 8}) QTest::addRow("%s d%d", m, d) << QString(m) << b << d;
    }
    void sgpStepEstimateTracksTheSimulator() {
        QFETCH(QString, model);
        QFETCH(int, batch);
        QFETCH(int, devices);
        const Problem p = problemOf(zoo(model.toStdString(), batch), dgx(devices), batch);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        double estimate = -1;
        for (const std::string& line : r.log)
            if (line.rfind(kSgpEstimatePrefix, 0) == 0) estimate = std::stod(line.substr(std::string(kSgpEstimatePrefix).size()));
        QVERIFY2(estimate > 0, "no step estimate in the log");
        const double simulated = r.metrics.iteration_time_s;
        QVERIFY2(std::abs(estimate - simulated) < 0.05 * simulated, qPrintable(QString("estimate %1 s, simulated %2 s").arg(estimate).arg(simulated)));
    }

    // A quality check, not a timing one: on zoo graphs SGP's simulated step is within 10% of
    // TGA's full search (seeded with the best of Baechi's three).
    void sgpIsWithinTenPercentOfTga_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("devices");
        for (const auto& [m, b] : std::vector<std::pair<const char*, int>>{{"inception-v3", 512}, {"gnmt-8", 2048}, {"transformer-big", 128}, {"resnet50", 512}})
            QTest::addRow("%s d4", m) << QString(m) << b << 4;
        QTest::addRow("inception-v3 d8") << QString("inception-v3") << 512 << 8;
    }
    void sgpIsWithinTenPercentOfTga() {
        QFETCH(QString, model);
        QFETCH(int, batch);
        QFETCH(int, devices);
        const Problem p = problemOf(zoo(model.toStdString(), batch), dgx(devices), batch, 60);
        const PlannerResult sgp = planWith("sgp", p);
        const PlannerResult tga = planWith("tga", p);
        checkPlacementResult(p, sgp);
        checkPlacementResult(p, tga);
        QVERIFY2(sgp.metrics.iteration_time_s <= 1.10 * tga.metrics.iteration_time_s,
                 qPrintable(QString("sgp %1 s, tga %2 s").arg(sgp.metrics.iteration_time_s).arg(tga.metrics.iteration_time_s)));
        for (const char* baechi : {"m-topo", "m-etf", "m-sct"})
            QVERIFY2(tga.metrics.iteration_time_s <= planWith(baechi, p).metrics.iteration_time_s, baechi);
    }

    // The benchmark's graphs (bench_placement's workloads) at 4 and 8 devices of a DGX A100:
    // SGP plans the ops themselves (no co-placement), its placement fits every device as the
    // simulator counts it (checkPlacementResult: placementMemory and the simulation), and the
    // O(ops + edges) count it plans by (sgpMemory) is exactly placementMemory's, for its own
    // plan and for m-ETF's (another placement and order).
    void sgpFitsTheBenchmarkGraphsAsTheSimulatorCounts_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("devices");
        for (const auto& [m, b] : std::vector<std::pair<const char*, int>>{
                 {"inception-v3", 512}, {"gnmt-8", 2048}, {"transformer-big", 128}, {"resnet50", 512}, {"random-dag-20000", 4}})
            for (int d : {4, 8}) QTest::addRow("%s d%d", m, d) << QString(m) << b << d;
    }
    void sgpFitsTheBenchmarkGraphsAsTheSimulatorCounts() {
        QFETCH(QString, model);
        QFETCH(int, batch);
        QFETCH(int, devices);
        const Graph g = model == "random-dag-20000" ? randomLayeredDag() : zoo(model.toStdString(), batch);
        const Problem p = problemOf(g, dgx(devices), batch, 60);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        QVERIFY(!r.log.empty());
        QCOMPARE(r.log.front(), "placing " + std::to_string(g.ops.size()) + " ops on " + std::to_string(devices) + " devices (no co-placement)");
        QCOMPARE(sgpMemory(p, r.plan.placement, r.plan.placement_order), placementMemory(p, r.plan));
        const PlannerResult metf = planWith("m-etf", p);
        QVERIFY(metf.feasible);
        QCOMPARE(sgpMemory(p, metf.plan.placement, metf.plan.placement_order), placementMemory(p, metf.plan));
    }

    // The one-device plan's memory counted in O(ops), which decides whether the one-device
    // comparison runs, is placementMemory's for that plan.
    void oneDeviceMemoryIsPlacementMemorys_data() { modelsAtBatches({{"inception-v3", 512}, {"gnmt-8", 2048}, {"transformer-big", 128}, {"resnet50", 64}}); }
    void oneDeviceMemoryIsPlacementMemorys() {
        QFETCH(QString, model);
        QFETCH(int, batch);
        const Problem p = problemOf(zoo(model.toStdString(), batch), dgx(4), batch);
        QCOMPARE(oneDeviceMemory(p), placementMemory(p, oneDevicePlan(p))[0]);
    }

    // The one-device plan's simulated step is at least its ops' forwards and backwards one
    // after another: the bound by which a placement planner skips simulating it when the
    // plan it returns is faster.
    void oneDeviceStepIsAtLeastItsComputation_data() { modelsAtBatches({{"inception-v3", 64}, {"gnmt-8", 256}, {"transformer-big", 16}, {"resnet50", 64}}); }
    void oneDeviceStepIsAtLeastItsComputation() {
        QFETCH(QString, model);
        QFETCH(int, batch);
        const Problem p = problemOf(zoo(model.toStdString(), batch), dgx(4), batch);
        const Plan single = oneDevicePlan(p);
        const CostModel cost(p.graph, p.cluster);
        double computation = 0;
        for (int op = 0; op < static_cast<int>(p.graph.ops.size()); ++op)
            computation += cost.fwdTime(op, batch, 0) + cost.bwdTime(op, batch, 0);
        const double step = evaluate(p, single).iteration_time_s;
        QVERIFY2(step >= computation, qPrintable(QString("step %1 s, computation %2 s").arg(step).arg(computation)));
    }

    // Planning time is each planner's own CPU time without the final scoring (lowering and
    // simulating) of the plan it returns: every placement planner reports that scoring's CPU
    // time as evaluation_time_s (positive: it simulated), and every runner subtracts it the
    // same way (planningSeconds); a hybrid planner, whose metrics come from its own search,
    // reports none.
    void planningTimeLeavesOutTheFinalScoring() {
        PlannerResult scored;
        scored.evaluation_time_s = 0.25;
        QCOMPARE(planningSeconds(1.0, scored), 0.75);
        QCOMPARE(planningSeconds(0.125, scored), 0.0);  // never negative
        const Problem p = problemOf(zoo("inception-v3", 512), dgx(4), 512, 1);
        for (const PlannerResult& r : runSideBySide(p, {"m-topo", "m-etf", "m-sct", "tga", "sgp"})) {
            QVERIFY2(r.feasible, r.planner.c_str());
            QVERIFY2(r.evaluation_time_s > 0, r.planner.c_str());
            QVERIFY2(r.planning_time_s >= 0, r.planner.c_str());
        }
        const std::vector<PlannerResult> hybrid = runSideBySide(problemOf(zoo("gpt3-1.3b", 64), buildClusterPreset("dgx-a100-1x8"), 64), {"data-parallel"});
        QCOMPARE(hybrid.front().evaluation_time_s, 0.0);
    }

    // A fork, 70 branches of 3 s and a join, numbered join first (no edge goes from a lower
    // number to a higher one: SGP orders the ops itself), on 72 devices (more than its 64-bit
    // import masks hold): with 1 ms transfers the branches spread over more than 64 devices,
    // the plan fits, and SGP's memory count is placementMemory's.
    void sgpPlansGraphsNotNumberedInOrderOnManyDevices() {
        constexpr int kBranches = 70;
        Graph g = chainGraph(kBranches + 2, 1, 2, 1 << 20, 1 << 20);
        g.edges.clear();
        const int join = 0, fork = kBranches + 1;
        for (int b = 1; b <= kBranches; ++b) {
            g.edges.push_back({fork, b, 1 << 20});
            g.edges.push_back({b, join, 1 << 20});
        }
        g.ops[join].fwd_flops = g.ops[fork].fwd_flops = 0.01 * kFlopsPerSecond;
        g.ops[join].bwd_flops = g.ops[fork].bwd_flops = 0.02 * kFlopsPerSecond;
        const Problem p = problemOf(g, exactCluster(1, 72, int64_t{1} << 40, 1e9), 1);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        const std::set<int> used(r.plan.placement.begin(), r.plan.placement.end());
        QVERIFY2(used.size() > 64, qPrintable(QString::number(used.size())));
        QVERIFY2(r.metrics.iteration_time_s < 3.5, qPrintable(QString::number(r.metrics.iteration_time_s)));
        QCOMPARE(sgpMemory(p, r.plan.placement, r.plan.placement_order), placementMemory(p, r.plan));
    }

    // Its speed is bench_placement's to measure; here, that the 20,000-op DAG is planned, fits,
    // and uses more than one device (its branches are wide enough to pay for transfers).
    void sgpPlansTwentyThousandOps() {
        const Problem p = problemOf(randomLayeredDag(), dgx(4), 4, 60);
        const PlannerResult r = planWith("sgp", p);
        checkPlacementResult(p, r);
        QVERIFY(r.feasible);
        const std::set<int> used(r.plan.placement.begin(), r.plan.placement.end());
        QVERIFY2(used.size() > 1, qPrintable(QString::number(used.size())));
    }
};

QTEST_GUILESS_MAIN(TestPlacementPlanners)
#include "test_placement_planners.moc"
