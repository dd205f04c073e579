// The oracle `exhaustive`: it simulates exactly the space it documents (counted here
// independently), finds hand-checked optima, applies the throughput floor as defined, refuses
// problems beyond its limits, says why nothing fits, stops when cancelled, and its plans
// lower to valid Programs that fit.
#include <QtTest>

#include <numeric>

#include "planners/algorithms/exhaustive_planner.h"
#include "planners/algorithms/hybrid_candidates.h"
#include "planners/algorithms/registry.h"
#include "planners/model/zoo.h"
#include "error_of.h"
#include "planner_fixtures.h"

using namespace hippie;
using namespace hippie::test;

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kLoose = int64_t(1) << 40;

PlannerResult run(const Problem& problem, double budget_s = 120) {
    PlanContext context(budget_s);
    return ExhaustivePlanner().plan(problem, context);
}

// Plans of the documented space: per (pp, dp, m) and ZeRO stage (0-3 when dp > 1), the splits
// of the layers into pp stages, each stage of two or more layers recomputing or not.
// splits[l][p]: ways for l layers.
int64_t spaceSize(int layers, int devices, int global_batch, const std::vector<int>& tensor_parallel = {1}) {
    const size_t n = static_cast<size_t>(layers);
    std::vector<std::vector<int64_t>> splits(n + 1, std::vector<int64_t>(n + 1, 0));
    splits[0][0] = 1;
    for (size_t l = 1; l <= n; ++l)
        for (size_t p = 1; p <= l; ++p)
            for (size_t last = 1; last <= l; ++last) splits[l][p] += splits[l - last][p - 1] * (last >= 2 ? 2 : 1);
    int64_t total = 0;
    for (int tp : tensor_parallel)
    for (int pp = 1; pp <= std::min(layers, devices / tp); ++pp)
        for (int dp = 1; pp * dp * tp <= devices; ++dp) {
            if (global_batch % dp != 0) continue;
            int micro_batch_counts = 0;
            for (int m = 1; m <= global_batch / dp; ++m) micro_batch_counts += (global_batch / dp) % m == 0;
            const int zero_stages = dp > 1 ? hybrid::kHighestSearchedZeroStage + 1 : 1;
            total += micro_batch_counts * zero_stages * splits[n][static_cast<size_t>(pp)];
        }
    return total;
}

}  // namespace

class TestExhaustive : public QObject {
    Q_OBJECT
private slots:
    void registered() {
        const PlannerInfo* info = findPlanner("exhaustive");
        QVERIFY(info);
        QCOMPARE(info->family, std::string("hybrid"));
    }

    void simulatesTheWholeDocumentedSpace_data() {
        QTest::addColumn<int>("layers");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("batch");
        QTest::newRow("5 layers, 4 devices, batch 4") << 5 << 4 << 4;
        QTest::newRow("6 layers, 3 devices, batch 6") << 6 << 3 << 6;
        QTest::newRow("3 layers, 8 devices, batch 12") << 3 << 8 << 12;
    }
    void simulatesTheWholeDocumentedSpace() {
        QFETCH(int, layers);
        QFETCH(int, devices);
        QFETCH(int, batch);
        const PlannerResult r = run(makeProblem(patternedChain(layers, 0), exactCluster(1, devices), batch));
        QVERIFY(r.feasible);
        const std::string expected = "simulated " + std::to_string(spaceSize(layers, devices, batch)) + " plans";
        QVERIFY2(contains(r.log.front(), expected), (r.log.front() + " / expected " + expected).c_str());
        // Its layers do not split: no per-stage tensor-parallel variant.
        QVERIFY2(contains(r.log.front(), "and 0 variants"), r.log.front().c_str());
    }

    // With layers tensor parallelism splits, the space has every power-of-two degree up to a
    // node's devices (with sequence parallelism): 5 Megatron layers on 1 node of 4 devices take
    // t = 1, 2 and 4; on 2 nodes of 2 devices t = 1 and 2 only.
    void simulatesEveryTensorParallelDegree() {
        const Graph g = tensorParallelChain(5, 1, 2, kMiB, kMiB / 4);
        PlannerResult r = run(makeProblem(g, exactCluster(1, 4), 4));
        QVERIFY(r.feasible);
        std::string expected = "simulated " + std::to_string(spaceSize(5, 4, 4, {1, 2, 4})) + " plans";
        QVERIFY2(contains(r.log.front(), expected), (r.log.front() + " / expected " + expected).c_str());
        // Plans on fewer than 4 devices also run with per-stage degrees on the idle ones.
        QVERIFY2(!contains(r.log.front(), "and 0 variants"), r.log.front().c_str());
        r = run(makeProblem(g, exactCluster(2, 2), 4));
        expected = "simulated " + std::to_string(spaceSize(5, 4, 4, {1, 2})) + " plans";
        QVERIFY2(contains(r.log.front(), expected), (r.log.front() + " / expected " + expected).c_str());
    }

    // Selective recomputation is a dimension of the space where the model has attention cores:
    // every plan runs with and without it. At s = 1024 and h = 64 (4 heads) a block's scores
    // and probabilities (4 a s^2 b bytes at fp16) are 32 times its other activations per head
    // dimension, so the most memory-efficient plan drops them, whatever else it chooses.
    void selectiveRecomputationIsSearched() {
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.batch_size = 2;
        spec.seq_len = 1024;
        spec.precision = Precision::FP16;
        spec.overrides = {{"layers", 2}, {"d_model", 64}, {"heads", 4}, {"vocab", 256}, {"positions", 1024}};
        Problem p = makeProblem(buildZooModel(spec), exactCluster(1, 2), 4, Optimizer::Adam);
        p.objective = Objective::MemoryEfficiency;
        const PlannerResult r = run(p);
        QVERIFY2(r.feasible, r.reason.c_str());
        QVERIFY2(contains(r.log.front(), "each with and without selective recomputation"), r.log.front().c_str());
        QVERIFY(r.plan.selective_recompute);
        QVERIFY(checkFeasiblePlan(p, r).empty());
        // A chain without attention cores has no such dimension.
        const PlannerResult chain = run(makeProblem(patternedChain(3, 0), exactCluster(1, 2), 4));
        QVERIFY2(!contains(chain.log.front(), "selective"), chain.log.front().c_str());
    }

    // Free links: splitting a layer over t devices costs nothing, so for the most memory
    // efficiency the oracle splits over all four (every layer's weights and activations
    // divided by 4, the same samples/s as four replicas).
    void tensorParallelismWinsOnFreeLinks() {
        Problem p = makeProblem(tensorParallelChain(4, 1, 2, 4 * kMiB, kMiB), exactCluster(1, 4), 4, Optimizer::Adam);
        p.objective = Objective::MemoryEfficiency;
        const PlannerResult r = run(p);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(r.plan.tp, 4);
        QVERIFY(r.plan.sequence_parallel);
        QVERIFY(checkFeasiblePlan(p, r).empty());
    }

    void dataParallelIsFastestForTwoEqualLayers() {
        // Two layers of 1 s forward, 2 s backward, no weights, free links: each of two
        // replicas runs one sample in 6 s (1/3 sample/s); any pipeline idles in its bubble.
        Problem p = makeProblem(chainGraph(2, 1, 2, 0, 1 << 10), exactCluster(1, 2), 2);
        p.objective = Objective::Throughput;
        const PlannerResult r = run(p);
        QVERIFY(r.feasible);
        QCOMPARE(r.plan.pipelineDepth(), 1);
        QCOMPARE(r.plan.dp, 2);
        QVERIFY(std::abs(r.metrics.throughput_samples_per_s - 1.0 / 3.0) < 1e-12);
    }

    void memoryForcesAPipeline() {
        // Four layers of 4 MiB weights: Adam keeps 16 bytes a 4-byte parameter, 64 MiB for the
        // model; two devices of 40 MiB hold it only as two stages (32 MiB each).
        const Graph g = unevenChain({1, 1, 1, 1}, std::vector<int64_t>(4, 4 * kMiB), std::vector<int64_t>(4, kMiB / 4));
        Problem p = makeProblem(g, exactCluster(1, 2, 40 * kMiB), 4, Optimizer::Adam);
        p.objective = Objective::Throughput;
        const PlannerResult r = run(p);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(r.plan.pipelineDepth(), 2);
        QCOMPARE(r.plan.stages[0].last_layer, 1);
        QVERIFY(checkFeasiblePlan(p, r).empty());
    }

    void throughputFloorPicksTheLeanestFastEnoughPlan() {
        Problem p = makeProblem(patternedChain(6, 1), slowLinksCluster(2, 2, kLoose), 8, Optimizer::Adam);
        p.objective = Objective::Throughput;
        const PlannerResult fastest = run(p);
        p.objective = Objective::MemoryEfficiency;
        const PlannerResult leanest = run(p);
        p.objective = Objective::MemoryEfficiencyWithThroughputFloor;
        p.throughput_floor = 0.8;
        const PlannerResult floored = run(p);
        QVERIFY(floored.metrics.throughput_samples_per_s >= 0.8 * fastest.metrics.throughput_samples_per_s);
        QVERIFY(floored.metrics.memory_efficiency <= leanest.metrics.memory_efficiency);
        QVERIFY(floored.metrics.memory_efficiency >= fastest.metrics.memory_efficiency);
        // A floor of zero lets every plan in: the leanest wins.
        p.throughput_floor = 0;
        QCOMPARE(run(p).metrics.memory_efficiency, leanest.metrics.memory_efficiency);
    }

    void plansValidateAndFit_data() {
        QTest::addColumn<int>("objective");
        for (Objective o : {Objective::MemoryEfficiency, Objective::Throughput, Objective::MemoryEfficiencyWithThroughputFloor})
            QTest::addRow("%s", toString(o)) << int(o);
    }
    void plansValidateAndFit() {
        QFETCH(int, objective);
        Problem p = makeProblem(patternedChain(7, 2), slowLinksCluster(2, 2, 40 * kMiB), 8, Optimizer::Adam);
        p.objective = static_cast<Objective>(objective);
        const PlannerResult r = run(p);
        QVERIFY2(r.feasible, r.reason.c_str());
        const std::string bad = checkFeasiblePlan(p, r);
        QVERIFY2(bad.empty(), bad.c_str());
        QCOMPARE(r.plan.schedule, ScheduleKind::Hippie);
    }

    void refusesProblemsBeyondItsLimits() {
        const PlannerResult layers = run(makeProblem(patternedChain(13, 0), exactCluster(1, 2), 4));
        QVERIFY(!layers.feasible);
        QVERIFY(layers.skipped);  // not a verdict on the problem
        QVERIFY2(contains(layers.reason, "12 layers") && contains(layers.reason, "13 layers"), layers.reason.c_str());
        const PlannerResult devices = run(makeProblem(patternedChain(4, 0), exactCluster(1, 9), 4));
        QVERIFY(!devices.feasible && devices.skipped);
        QVERIFY2(contains(devices.reason, "8 devices") && contains(devices.reason, "9 devices"), devices.reason.c_str());
    }

    void infeasibleSaysMemory() {
        const Graph g = unevenChain({1, 1, 1}, std::vector<int64_t>(3, 64 * kMiB), std::vector<int64_t>(3, kMiB));
        const PlannerResult r = run(makeProblem(g, exactCluster(1, 3, 100 * kMiB), 4, Optimizer::Adam));
        QVERIFY(!r.feasible);
        QVERIFY(!r.skipped);  // searched, and nothing fits: a verdict
        QVERIFY2(contains(r.reason, "memory") && contains(r.reason, "leanest plan"), r.reason.c_str());
    }

    void cancellationStopsTheEnumeration() {
        const Problem p = makeProblem(patternedChain(12, 0), exactCluster(1, 8), 8);
        PlanContext context(60, [](double, const std::string&) {});
        context.cancel();
        const PlannerResult r = ExhaustivePlanner().plan(p, context);
        QVERIFY2(!r.feasible && contains(r.reason, "cancelled"), r.reason.c_str());
        PlanContext short_budget(0.05);
        const PlannerResult stopped = ExhaustivePlanner().plan(p, short_budget);
        QVERIFY2(contains(stopped.reason, "time budget"), stopped.reason.c_str());
        QVERIFY(stopped.planning_time_s < 1.0);
    }
};

QTEST_GUILESS_MAIN(TestExhaustive)
#include "test_exhaustive.moc"
