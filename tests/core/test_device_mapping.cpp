// Topology-aware device mapping: heavy gradients keep each stage's replicas inside a node,
// heavy activations keep each pipeline inside a node, the map is always a set of distinct
// devices of the plan's shape, and it never simulates slower than the default map.
#include <QtTest>

#include <set>

#include "planners/algorithms/device_mapping.h"
#include "planners/common/error.h"
#include "planner_fixtures.h"

using namespace hippie;
using namespace hippie::test;

namespace {

// 2 nodes of 4 devices: fast links inside a node, a slow one between nodes.
constexpr double kIntraBandwidth = 100e9;
constexpr double kInterBandwidth = 1e9;
constexpr double kMicroLoss = 1e-6;  // relative

Cluster twoNodes() { return exactCluster(2, 4, int64_t(1) << 40, kIntraBandwidth, 0, kInterBandwidth); }

// pp = 2 stages of a 4-layer chain, dp = 4 replicas, 4 micro-batches of one sample.
Problem chainProblem(int64_t param_bytes, int64_t act_bytes) {
    return makeProblem(chainGraph(4, 1, 2, param_bytes, act_bytes), twoNodes(), 16);
}

Plan twoStagePlan(ScheduleKind kind = ScheduleKind::Hippie) {
    Plan p = pipelinePlan(4, 2, 4, 4, kind);
    p.global_batch = 16;
    return p;
}

double iterationTime(const Problem& problem, Plan plan, const std::vector<std::vector<int>>& map) {
    plan.device_map = map;
    return evaluate(problem, plan).iteration_time_s;
}

}  // namespace

class TestDeviceMapping : public QObject {
    Q_OBJECT
private slots:
    void heavyGradientsKeepStageReplicasInANode() {
        const Problem problem = chainProblem(int64_t(1) << 30, 1 << 10);
        const Plan plan = twoStagePlan();
        const auto map = mapDevices(problem, plan);
        QVERIFY(mapIsValid(map, 2, 4, 8));
        for (const auto& stage : map)
            for (int d : stage) QCOMPARE(problem.cluster.nodeOf(d), problem.cluster.nodeOf(stage.front()));
        QVERIFY(iterationTime(problem, plan, map) <= iterationTime(problem, plan, defaultDeviceMap(2, 4)));
        // The default map packs pipelines instead: here it is strictly slower.
        QVERIFY(iterationTime(problem, plan, map) < iterationTime(problem, plan, defaultDeviceMap(2, 4)));
    }

    void heavyActivationsKeepPipelinesInANode() {
        const Problem problem = chainProblem(1 << 10, int64_t(1) << 30);
        const Plan plan = twoStagePlan();
        const auto map = mapDevices(problem, plan);
        QVERIFY(mapIsValid(map, 2, 4, 8));
        for (int r = 0; r < 4; ++r) QCOMPARE(problem.cluster.nodeOf(map[0][static_cast<size_t>(r)]), problem.cluster.nodeOf(map[1][static_cast<size_t>(r)]));
        QVERIFY(iterationTime(problem, plan, map) <= iterationTime(problem, plan, defaultDeviceMap(2, 4)));
    }

    void mapHasThePlansShapeAndDistinctDevices_data() {
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("dp");
        for (int pp : {1, 2, 3, 4, 8})
            for (int dp : {1, 2, 3, 4, 8})
                if (pp * dp <= 8) QTest::addRow("pp%d dp%d", pp, dp) << pp << dp;
    }
    void mapHasThePlansShapeAndDistinctDevices() {
        QFETCH(int, pp);
        QFETCH(int, dp);
        const std::pair<int64_t, int64_t> heavy_grads{int64_t(1) << 30, 1 << 10}, heavy_acts{1 << 10, int64_t(1) << 30};
        for (const auto& [params, acts] : {heavy_grads, heavy_acts}) {
            const Problem problem = makeProblem(chainGraph(8, 1, 2, params, acts), twoNodes(), 24 * dp);
            Plan plan = pipelinePlan(8, pp, dp, 4, ScheduleKind::OneFOneB);
            plan.global_batch = 24 * dp;
            const auto map = mapDevices(problem, plan);
            QVERIFY(mapIsValid(map, pp, dp, 8));
            // Fewer devices than the cluster has: the first ones, whole nodes first.
            for (const auto& row : map)
                for (int d : row) QVERIFY(d < pp * dp);
            plan.device_map = map;
            QVERIFY(validate(lower(plan, problem.graph), problem.graph).ok);
            // The estimate cannot tell an all-reduce off the critical path: where moving it
            // inside a node gains nothing, the chosen map may cost microseconds of latency.
            const double chosen = iterationTime(problem, plan, map), fallback = iterationTime(problem, plan, defaultDeviceMap(pp, dp));
            QVERIFY2(chosen <= fallback * (1 + kMicroLoss), qPrintable(QString("chosen %1 s, default %2 s").arg(chosen, 0, 'g', 15).arg(fallback, 0, 'g', 15)));
        }
    }

    // Each tensor-parallel group gets consecutive devices inside one node, whichever traffic
    // dominates; the groups are then arranged like single devices.
    void tensorParallelGroupsStayInsideANode() {
        const std::pair<int64_t, int64_t> heavy_grads{int64_t(1) << 30, 1 << 10}, heavy_acts{1 << 10, int64_t(1) << 30};
        for (const int tp : {2, 4})
            for (const auto& [params, acts] : {heavy_grads, heavy_acts}) {
                const Problem problem = chainProblem(params, acts);
                Plan plan = twoStagePlan();
                plan.dp = 4 / tp;
                plan.tp = tp;
                const auto map = mapDevices(problem, plan);
                QCOMPARE(map.size(), size_t{2});
                std::set<int> used;
                for (const auto& row : map) {
                    QCOMPARE(row.size(), size_t{4});
                    for (size_t r = 0; r * tp < row.size(); ++r)
                        for (int k = 0; k < tp; ++k) {
                            const int d = row[r * tp + k];
                            QCOMPARE(d, row[r * tp] + k);
                            QCOMPARE(problem.cluster.nodeOf(d), problem.cluster.nodeOf(row[r * tp]));
                            used.insert(d);
                        }
                }
                QCOMPARE(used, (std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}));
            }
    }

    void tooManyDevicesIsAnError() {
        {
            const Problem problem = chainProblem(1, 1);
            Plan plan = twoStagePlan();
            plan.tp = 2;  // 2 stages x 4 replicas x 2 ranks on 8 devices
            try {
                mapDevices(problem, plan);
                QFAIL("accepted 16 devices on 8");
            } catch (const Error& e) {
                QVERIFY2(std::string(e.what()).find("16 devices (pp 2 x dp 4 x tp 2)") != std::string::npos, e.what());
            }
        }

        const Problem problem = chainProblem(1, 1);
        const Plan plan = pipelinePlan(4, 4, 4, 4, ScheduleKind::OneFOneB);
        QVERIFY_THROWS_EXCEPTION(Error, mapDevices(problem, plan));
    }
};

QTEST_GUILESS_MAIN(TestDeviceMapping)
#include "test_device_mapping.moc"
