// The shared pieces of the placement planners: the execution order of placement plans, the
// exact memory accounting against the simulator, the step estimate, the co-placement grouper,
// the random DAG generator and m-SCT's linear program.
#include <QtTest>

#include <numeric>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/placement/coplacement.h"
#include "planners/algorithms/placement/list_scheduler.h"
#include "planners/algorithms/placement/m_sct.h"
#include "planners/algorithms/placement/placement_common.h"
#include "planners/algorithms/placement/random_dag.h"
#include "planners/algorithms/placement/step_estimate.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/model/zoo.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/schedule/validate.h"
#include "planners/sim/simulator.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::placement;
using namespace hippie::test;

namespace {

Problem problemOf(Graph g, Cluster c, int global_batch) {
    Problem p;
    p.graph = std::move(g);
    p.cluster = std::move(c);
    p.cluster_name = p.cluster.name;
    p.global_batch = global_batch;
    p.time_budget_s = 5;
    return p;
}

// `blocks` fork-joins of `branches` chains of `depth` ops: the shape of inception blocks.
Graph forkJoinGraph(int blocks, int branches, int depth) {
    Graph g;
    g.name = "forkjoin";
    auto add = [&](int layer, const std::string& name, std::initializer_list<int> inputs) {
        Op op;
        op.name = name;
        op.kind = "matmul";
        op.layer = layer;
        op.fwd_flops = kFlopsPerSecond;
        op.bwd_flops = 2 * kFlopsPerSecond;
        op.param_bytes = 1 << 20;
        op.output_bytes = 1 << 20;
        op.temp_bytes = 1 << 18;
        g.ops.push_back(op);
        const int id = static_cast<int>(g.ops.size()) - 1;
        for (int in : inputs) g.edges.push_back({in, id, op.output_bytes});
        return id;
    };
    int head = add(0, "input", {});
    for (int b = 0; b < blocks; ++b) {
        std::vector<int> tails;
        for (int k = 0; k < branches; ++k) {
            int prev = head;
            for (int i = 0; i < depth; ++i) prev = add(b, "b" + std::to_string(b) + ".br" + std::to_string(k) + "." + std::to_string(i), {prev});
            tails.push_back(prev);
        }
        head = add(b, "b" + std::to_string(b) + ".concat", {});
        for (int t : tails) g.edges.push_back({t, head, 1 << 20});
    }
    return g;
}

bool groupsAreAcyclic(const Grouping& gr) {
    std::vector<int> indegree(static_cast<size_t>(gr.groups()), 0);
    std::vector<std::vector<int>> out(static_cast<size_t>(gr.groups()));
    for (const Edge& e : gr.edges) {
        out[static_cast<size_t>(e.src)].push_back(e.dst);
        ++indegree[static_cast<size_t>(e.dst)];
    }
    std::vector<int> ready;
    for (int g = 0; g < gr.groups(); ++g)
        if (indegree[static_cast<size_t>(g)] == 0) ready.push_back(g);
    int seen = 0;
    while (!ready.empty()) {
        const int g = ready.back();
        ready.pop_back();
        ++seen;
        for (int h : out[static_cast<size_t>(g)])
            if (--indegree[static_cast<size_t>(h)] == 0) ready.push_back(h);
    }
    return seen == gr.groups();
}

// A random placement and a random topological order of the graph's ops.
Plan randomPlacementPlan(const Problem& p, int devices, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Plan plan = basePlan(p, "test");
    plan.schedule = ScheduleKind::GPipe;
    plan.placement.resize(p.graph.ops.size());
    for (int& d : plan.placement) d = std::uniform_int_distribution<int>(0, devices - 1)(rng);
    std::vector<int> indegree(p.graph.ops.size(), 0);
    std::vector<std::vector<int>> out(p.graph.ops.size());
    for (const Edge& e : p.graph.edges) {
        out[static_cast<size_t>(e.src)].push_back(e.dst);
        ++indegree[static_cast<size_t>(e.dst)];
    }
    std::vector<int> ready;
    for (size_t op = 0; op < indegree.size(); ++op)
        if (indegree[op] == 0) ready.push_back(static_cast<int>(op));
    while (!ready.empty()) {
        const size_t i = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
        const int op = ready[i];
        ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(i));
        plan.placement_order.push_back(op);
        for (int v : out[static_cast<size_t>(op)])
            if (--indegree[static_cast<size_t>(v)] == 0) ready.push_back(v);
    }
    return plan;
}

// Peak per device as the simulator reports it, by device id.
std::vector<int64_t> simulatedPeaks(const Problem& p, const Plan& plan) {
    const CostModel cost(p.graph, p.cluster);
    const Program prog = lower(plan, p.graph);
    const Trace t = simulate(prog, plan, cost, SimOptions{false, 0.0});
    std::vector<int64_t> out(static_cast<size_t>(p.cluster.deviceCount()), 0);
    for (size_t row = 0; row < t.devices.size(); ++row) out[static_cast<size_t>(t.devices[row])] = t.metrics.peak_memory_bytes[row];
    return out;
}

}  // namespace

class TestPlacement : public QObject {
    Q_OBJECT
private slots:
    void placementOrderDecidesSegments() {
        const Graph g = chainGraph(4);
        Plan plan;
        plan.placement = {0, 1, 0, 1};
        plan.schedule = ScheduleKind::GPipe;
        QCOMPARE(lower(plan, g).segments.size(), size_t(4));
        // Two independent ops between a source and a sink can run in either order.
        Graph diamond = chainGraph(1);
        diamond.ops.resize(4, diamond.ops[0]);
        diamond.edges = {{0, 1, 1 << 20}, {0, 2, 1 << 20}, {1, 3, 1 << 20}, {2, 3, 1 << 20}};
        plan.placement = {0, 0, 1, 0};
        plan.placement_order = {0, 2, 1, 3};
        const Program prog = lower(plan, diamond);
        QCOMPARE(prog.segments.size(), size_t(3));
        QCOMPARE(prog.segments[0].ops, std::vector<int>{0});
        QCOMPARE(prog.segments[2].ops, (std::vector<int>{1, 3}));
        QVERIFY(validate(prog, diamond).ok);
    }

    // Between two groups, a tensor counts once at its largest edge: op 0's output reaches
    // group B on two edges (4 and 6 MiB), op 3's on one (1 MiB): 7 MiB, not 11.
    void groupEdgesCountEachTensorOnce() {
        Graph g = chainGraph(1);
        g.ops.resize(4, g.ops[0]);
        g.edges = {{0, 1, 4 << 20}, {0, 2, 6 << 20}, {3, 2, 1 << 20}};
        const Grouping gr = groupByLabel(g, {0, 1, 1, 0});
        QCOMPARE(gr.groups(), 2);
        QCOMPARE(gr.edges.size(), size_t(1));
        QCOMPARE(gr.edges[0].src, 0);
        QCOMPARE(gr.edges[0].dst, 1);
        QCOMPARE(gr.edges[0].bytes, int64_t(7) << 20);
    }

    void placementOrderIsChecked() {
        const Graph g = chainGraph(3);
        Plan plan;
        plan.placement = {0, 0, 1};
        plan.schedule = ScheduleKind::GPipe;
        plan.placement_order = {0, 2, 1};
        QVERIFY_THROWS_EXCEPTION(Error, checkPlan(plan, g, 2));
        plan.placement_order = {0, 1, 1};
        QVERIFY_THROWS_EXCEPTION(Error, checkPlan(plan, g, 2));
        plan.placement_order = {0, 1};
        QVERIFY_THROWS_EXCEPTION(Error, checkPlan(plan, g, 2));
        plan.placement_order = {0, 1, 2};
        checkPlan(plan, g, 2);
    }

    void placementOrderTravelsInPlanJson() {
        Plan plan;
        plan.model.zoo = "gnmt-8";
        plan.planner = "m-etf";
        plan.placement = {0, 1, 0};
        plan.placement_order = {0, 2, 1};
        plan.schedule = ScheduleKind::GPipe;
        const Plan back = planFromJson(planToJson(plan), "test");
        QCOMPARE(back.placement_order, plan.placement_order);
        plan.placement_order.clear();
        QVERIFY(planFromJson(planToJson(plan), "test").placement_order.empty());
    }

    void exactMemoryIsTheSimulatedPeak_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("devices");
        for (const char* m : {"inception-v3", "gnmt-8", "resnet50"})
            for (int d : {1, 3}) QTest::addRow("%s d%d", m, d) << QString(m) << d;
    }
    void exactMemoryIsTheSimulatedPeak() {
        QFETCH(QString, model);
        QFETCH(int, devices);
        ModelSpec spec;
        spec.zoo = model.toStdString();
        spec.batch_size = 8;
        const Problem p = problemOf(buildZooModel(spec), exactCluster(1, devices), 8);
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            const Plan plan = randomPlacementPlan(p, devices, seed);
            const auto mine = placementMemory(p, plan);
            const auto sim = simulatedPeaks(p, plan);
            for (size_t d = 0; d < mine.size(); ++d)
                QVERIFY2(mine[d] == sim[d], qPrintable(QString("device %1: %2 vs simulated %3").arg(d).arg(mine[d]).arg(sim[d])));
        }
    }

    void trackerMatchesExactMemoryForOneSegmentPerDevice() {
        ModelSpec spec;
        spec.zoo = "resnet50";
        spec.batch_size = 16;
        const Problem p = problemOf(buildZooModel(spec), exactCluster(1, 3), 16);
        const PlacementModel m(p, CoplacementOptions{false});
        std::vector<int> device(static_cast<size_t>(m.units()));
        for (int i = 0; i < m.units(); ++i) device[static_cast<size_t>(m.topoOrder()[static_cast<size_t>(i)])] = i * 3 / m.units();
        const auto loads = deviceLoads(m, device);
        const auto exact = placementMemory(p, placementPlan(m, Assignment{device, {}}, "test"));
        // The tracker reserves one output's gradient where the plan may receive a few at once.
        for (size_t d = 0; d < loads.size(); ++d)
            QVERIFY2(std::abs(static_cast<double>(loads[d] - exact[d])) < 0.05 * static_cast<double>(exact[d]),
                     qPrintable(QString("device %1: %2 vs %3").arg(d).arg(loads[d]).arg(exact[d])));
    }

    void stepEstimateFollowsTheSimulator_data() {
        QTest::addColumn<QString>("model");
        for (const char* m : {"inception-v3", "transformer-big", "gnmt-8"}) QTest::addRow("%s", m) << QString(m);
    }
    void stepEstimateFollowsTheSimulator() {
        QFETCH(QString, model);
        ModelSpec spec;
        spec.zoo = model.toStdString();
        spec.batch_size = 64;
        const Problem p = problemOf(buildZooModel(spec), buildClusterPreset("dgx-a100-1x8"), 64);
        const PlacementModel m(p, CoplacementOptions{});
        PlanContext ctx(10);
        const ScheduleOutcome s = listSchedule(m, m.capacities(), SchedulingRule{}, ctx);
        QVERIFY(s.schedule);
        const Assignment& a = s.schedule->assignment;
        const StepEstimate e = estimateStep(m, a.device, a.order);
        const Plan plan = placementPlan(m, a, "test");
        const double simulated = evaluate(p, plan).iteration_time_s;
        // The simulator adds the optimizer step and shares links; both are small here.
        QVERIFY2(std::abs(e.step_s - simulated) < 0.05 * simulated, qPrintable(QString("%1 vs %2").arg(e.step_s).arg(simulated)));
        const auto exact = placementMemory(p, plan);
        for (size_t d = 0; d < exact.size(); ++d) QCOMPARE(e.memory[d], exact[d]);
    }

    void coplacementKeepsGroupsAcyclicAndShrinks() {
        RandomDagOptions o;
        o.ops = 3000;
        o.width = 50;
        o.seed = 7;
        const Graph g = randomLayeredDag(o);
        GroupingWeights w;
        w.seconds.assign(g.ops.size(), 1.0);
        w.bytes.assign(g.ops.size(), 1);
        const Grouping gr = coplace(g, w, 4, CoplacementOptions{});
        QVERIFY(gr.groups() < static_cast<int>(g.ops.size()));
        QVERIFY(groupsAreAcyclic(gr));
        // Every op in exactly one group, members in topological order, caps respected.
        std::vector<int> position(g.ops.size());
        const auto topo = g.topologicalOrder();
        for (size_t i = 0; i < topo.size(); ++i) position[static_cast<size_t>(topo[i])] = static_cast<int>(i);
        size_t members = 0;
        const double cap = CoplacementOptions{}.max_group_share / 4 * static_cast<double>(g.ops.size());
        for (int k = 0; k < gr.groups(); ++k) {
            const auto& ms = gr.members[static_cast<size_t>(k)];
            members += ms.size();
            QVERIFY(static_cast<double>(ms.size()) <= cap);
            for (size_t i = 0; i < ms.size(); ++i) {
                QCOMPARE(gr.group_of[static_cast<size_t>(ms[i])], k);
                if (i > 0) QVERIFY(position[static_cast<size_t>(ms[i - 1])] < position[static_cast<size_t>(ms[i])]);
            }
        }
        QCOMPARE(members, g.ops.size());
    }

    void coplacementMergesChainsAndFanOuts() {
        const Graph g = forkJoinGraph(2, 3, 4);
        GroupingWeights w;
        w.seconds.assign(g.ops.size(), 1.0);
        w.bytes.assign(g.ops.size(), 1);
        CoplacementOptions o;
        o.min_ops = 0;
        o.max_group_share = 100;  // no caps: each block collapses onto its input
        const Grouping all = coplace(g, w, 1, o);
        QVERIFY(groupsAreAcyclic(all));
        QCOMPARE(all.groups(), 1);
        o.fuse_chains = false;  // branches join their concat, the fan-out op stays alone
        const Grouping chains = coplace(g, w, 1, o);
        QVERIFY(groupsAreAcyclic(chains));
        QCOMPARE(chains.groups(), 3);
        o.enabled = false;
        QCOMPARE(coplace(g, w, 1, o).groups(), static_cast<int>(g.ops.size()));
        // Expansion maps back to every op.
        std::vector<int> dev(static_cast<size_t>(chains.groups()));
        std::iota(dev.begin(), dev.end(), 0);
        const auto placement = chains.expandPlacement(dev);
        QCOMPARE(placement.size(), g.ops.size());
        QCOMPARE(chains.expandOrder({0, 1, 2}).size(), g.ops.size());
    }

    void randomDagIsLayeredAndDeterministic() {
        RandomDagOptions o;
        o.ops = 2000;
        o.width = 40;
        const Graph a = randomLayeredDag(o);
        const Graph b = randomLayeredDag(o);
        QCOMPARE(a.ops.size(), size_t(2000));
        QCOMPARE(a.edges.size(), b.edges.size());
        for (size_t i = 0; i < a.edges.size(); ++i) QVERIFY(a.edges[i].src == b.edges[i].src && a.edges[i].dst == b.edges[i].dst);
        o.seed = 2;
        QVERIFY(randomLayeredDag(o).edges.size() != a.edges.size() || randomLayeredDag(o).ops[5].fwd_flops != a.ops[5].fwd_flops);
        std::vector<int> in(a.ops.size(), 0), out(a.ops.size(), 0);
        for (const Edge& e : a.edges) {
            QVERIFY(e.src < e.dst);  // numbered level by level
            QVERIFY(a.ops[static_cast<size_t>(e.src)].layer < a.ops[static_cast<size_t>(e.dst)].layer);
            ++out[static_cast<size_t>(e.src)];
            ++in[static_cast<size_t>(e.dst)];
        }
        QCOMPARE(std::count(in.begin(), in.end(), 0), std::ptrdiff_t(1));   // one input
        QCOMPARE(std::count(out.begin(), out.end(), 0), std::ptrdiff_t(1));  // one loss
        QCOMPARE(randomLayeredDag().ops.size(), size_t(20000));
    }

    void sctFavouritesFollowAChain() {
        const Problem p = problemOf(chainGraph(6), exactCluster(1, 2, int64_t(1) << 40, 1e9, 1e-3), 1);
        const PlacementModel m(p, CoplacementOptions{false});
        const Favourites f = favouriteChildren(m, 10);
        QVERIFY(f.solved);
        for (int u = 0; u + 1 < m.units(); ++u) QCOMPARE(f.child[static_cast<size_t>(m.topoOrder()[static_cast<size_t>(u)])], m.topoOrder()[static_cast<size_t>(u + 1)]);
        // On a chain every transfer can be avoided: the bound is the sum of the op times.
        QVERIFY(std::abs(f.lp_makespan_s - 6 * 3.0) < 1e-6);
    }

    void sctGivesAtMostOneFavouriteEachWay() {
        const Problem p = problemOf(forkJoinGraph(3, 4, 2), exactCluster(1, 4, int64_t(1) << 40, 1e9, 1e-3), 1);
        const PlacementModel m(p, CoplacementOptions{false});
        const Favourites f = favouriteChildren(m, 10);
        QVERIFY(f.solved);
        int pairs = 0;
        for (int u = 0; u < m.units(); ++u) {
            const int c = f.child[static_cast<size_t>(u)];
            if (c < 0) continue;
            ++pairs;
            QCOMPARE(f.parent[static_cast<size_t>(c)], u);
            bool is_successor = false;
            for (const Arc& a : m.succs(u)) is_successor = is_successor || a.unit == c;
            QVERIFY(is_successor);
        }
        QVERIFY(pairs > 0);
        // Every start time follows its producers: at least the longest chain of op times.
        QVERIFY(f.lp_makespan_s >= (1 + 3 * 3) * 3.0 - 1e-6);
    }
};

QTEST_GUILESS_MAIN(TestPlacement)
#include "test_placement.moc"
