// Per-stage replication (Plan::stage_replicas, PipeDream's plans): round-robin orders, the
// exact program and iteration time of a 3-1 plan, deadlock freedom over replica patterns, the
// checks that reject what is not built, and the plan file.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/schedule/schedule_orders.h"
#include "planners/schedule/validate.h"
#include "planners/sim/simulator.h"
#include "error_of.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

namespace {

// Stages of `layers` per stage of a chain, each stage replicated as `replicas` says.
Plan replicatedPlan(const std::vector<int>& layers, const std::vector<int>& replicas, int micro_batches, ScheduleKind kind) {
    Plan p;
    p.planner = "test";
    int first = 0;
    for (int n : layers) {
        p.stages.push_back({first, first + n - 1});
        first += n;
    }
    p.stage_replicas = replicas;
    p.dp = *std::max_element(replicas.begin(), replicas.end());
    p.micro_batches = micro_batches;
    p.global_batch = p.dp * micro_batches;
    p.schedule = kind;
    p.optimizer = Optimizer::SGD;
    return p;
}

std::string orderText(const std::vector<Instr>& order) {
    std::string out;
    for (const Instr& in : order) out += (out.empty() ? "" : " ") + in.str();
    return out;
}

}  // namespace

class TestStageReplicas : public QObject {
    Q_OBJECT
private slots:
    // With one replica count for every stage, round-robin is 1F1B per pipeline: replica j runs
    // the pipeline's micro-batch k as the iteration's k * dp + j, in 1F1B's order.
    void equalReplicasAreOneFOneBPerPipeline() {
        const int pp = 3, dp = 2, m = 5;
        const auto rr = roundRobinOrders(ScheduleKind::OneFOneB, std::vector<int>(pp, dp), dp * m);
        const auto one = pipelineOrders(ScheduleKind::OneFOneB, pp, 1, m);
        for (int s = 0; s < pp; ++s)
            for (int j = 0; j < dp; ++j) {
                std::vector<Instr> expected = one[static_cast<size_t>(s)];
                for (Instr& in : expected) in.mb = in.mb * dp + j;
                QCOMPARE(orderText(rr[static_cast<size_t>(s)][static_cast<size_t>(j)]), orderText(expected));
            }
    }

    // PipeDream's shape: a compute-heavy first stage on three devices feeding one device. Each
    // first-stage replica keeps one micro-batch in flight ahead of its backward (G_0 = 3).
    void threeOneProgramIsExact() {
        const Graph g = chainGraph(4);
        const Program p = lower(replicatedPlan({3, 1}, {3, 1}, 2, ScheduleKind::OneFOneB), g);
        QVERIFY(p.round_robin);
        QCOMPARE(p.str(), std::string("d0: 0F0 0SEND_F0 0F3 0SEND_F3 0RECV_B0 0B0 0RECV_B3 0B3 AR0 OPT\n"
                                      "d1: 0F1 0SEND_F1 0F4 0SEND_F4 0RECV_B1 0B1 0RECV_B4 0B4 AR0 OPT\n"
                                      "d2: 0F2 0SEND_F2 0F5 0SEND_F5 0RECV_B2 0B2 0RECV_B5 0B5 AR0 OPT\n"
                                      "d3: 0RECV_F0 1F0 1B0 0SEND_B0 0RECV_F1 1F1 1B1 0SEND_B1 0RECV_F2 1F2 1B2 0SEND_B2 "
                                      "0RECV_F3 1F3 1B3 0SEND_B3 0RECV_F4 1F4 1B4 0SEND_B4 0RECV_F5 1F5 1B5 0SEND_B5 OPT\n"));
        const ValidationResult v = validate(p, g);
        QVERIFY2(v.ok, v.problems.empty() ? "" : v.problems.front().c_str());
        QCOMPARE(p.groups.front(), (std::vector<int>{0, 1, 2}));  // stage 0's replicas all-reduce
    }

    // The 3-1 plan timed by hand (forward 1 s and backward 2 s a layer, free links): the single
    // second-stage device runs its six micro-batches back to back from t = 3 (F 1 s, B 2 s);
    // replica j of the first stage (F 3 s, B 6 s) runs the backward of micro-batch j when its
    // gradient arrives at 6 + 3j, and that of micro-batch j + 3 at 15 + 3j: the last, replica
    // 2's micro-batch 5, ends at 21 + 6 = 27 s.
    void threeOneIterationTimeIsExact() {
        const Graph g = chainGraph(4);
        const Plan plan = replicatedPlan({3, 1}, {3, 1}, 2, ScheduleKind::OneFOneB);
        const Trace t = simulate(lower(plan, g), plan, CostModel(g, exactCluster(1, 4)));
        // (the optimizer step over 4 MiB of weights adds its microseconds)
        QVERIFY2(std::abs(t.metrics.iteration_time_s - 27.0) < 1e-5, std::to_string(t.metrics.iteration_time_s).c_str());
        QVERIFY(std::abs(t.metrics.throughput_samples_per_s - 6.0 / t.metrics.iteration_time_s) < 1e-12);
    }

    // No replica pattern deadlocks, under any schedule per-stage replication runs: every
    // pattern of 1..4 replicas over two and three stages lowers to a valid program.
    void everyReplicaPatternValidates() {
        const Graph g = chainGraph(6);
        int checked = 0;
        for (const ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Hippie})
            for (int pp = 2; pp <= 3; ++pp) {
                const int patterns = pp == 2 ? 16 : 64;
                for (int code = 0; code < patterns; ++code) {
                    std::vector<int> replicas;
                    for (int s = 0, c = code; s < pp; ++s, c /= 4) replicas.push_back(c % 4 + 1);
                    const int widest = *std::max_element(replicas.begin(), replicas.end());
                    // micro-batches per widest replica: the least that every stage divides, times 2
                    int m = 1;
                    while (std::any_of(replicas.begin(), replicas.end(), [&](int r) { return (widest * m) % r != 0; })) ++m;
                    m *= 2;
                    const Plan plan = replicatedPlan(std::vector<int>(static_cast<size_t>(pp), 6 / pp), replicas, m, kind);
                    const Program p = lower(plan, g);
                    const ValidationResult v = validate(p, g);
                    const std::string what = std::string(toString(kind)) + " " + std::to_string(replicas[0]) + "-" +
                                             std::to_string(replicas[1]) + (pp > 2 ? "-" + std::to_string(replicas[2]) : "") + ": " +
                                             (v.problems.empty() ? "" : v.problems.front());
                    QVERIFY2(v.ok, what.c_str());
                    ++checked;
                }
            }
        QCOMPARE(checked, 3 * (16 + 64));
    }

    // A stage of one replica has no data-parallel peer: no all-reduce, and no gradient bucket
    // buffer in its memory; the replicated stage all-reduces over its replicas.
    void singleReplicaStageReducesNothing() {
        const Graph g = chainGraph(4);
        const Program p = lower(replicatedPlan({2, 2}, {2, 1}, 2, ScheduleKind::Hippie), g);
        for (size_t s = 0; s < p.streams.size(); ++s) {
            const bool reduces = std::any_of(p.streams[s].begin(), p.streams[s].end(), [](const Instr& in) { return in.kind == InstrKind::AllReduce; });
            QCOMPARE(reduces, p.devices[s] != 2);
        }
    }

    void unsupportedCombinationsAreNamed() {
        const Graph g = tensorParallelChain(4);
        Plan p = replicatedPlan({2, 2}, {2, 1}, 2, ScheduleKind::OneFOneB);
        auto message = [&](const Plan& plan) { return errorOf([&] { checkPlan(plan, g, 16); }); };
        QCOMPARE(message(p), std::string());
        Plan tp = p;
        tp.tp = 2;
        QVERIFY(message(tp).find("'tp': tensor parallelism is not built with per-stage replication") != std::string::npos);
        Plan zero = p;
        zero.zero_stage = 1;
        QVERIFY(message(zero).find("'zero_stage': ZeRO sharding is not built") != std::string::npos);
        Plan zb = p;
        zb.schedule = ScheduleKind::ZeroBubbleH1;
        QVERIFY(message(zb).find("the zb-h1 schedule is not built") != std::string::npos);
        Plan wrong_dp = p;
        wrong_dp.dp = 3;
        wrong_dp.global_batch = 6;
        QVERIFY(message(wrong_dp).find("'dp': is 3 but the widest stage has 2 replicas") != std::string::npos);
        Plan uneven = replicatedPlan({2, 2}, {2, 3}, 1, ScheduleKind::OneFOneB);
        QCOMPARE(message(uneven), std::string("plan: field 'micro_batches': the iteration's dp 3 x 1 micro-batches do not go round-robin "
                                              "evenly over stage 0's 2 replicas; use a multiple of 2 micro-batches"));
        Plan short_list = p;
        short_list.stage_replicas = {2};
        QVERIFY(message(short_list).find("has 1 entries for 2 stages") != std::string::npos);
        Plan too_many = replicatedPlan({2, 2}, {12, 6}, 12, ScheduleKind::OneFOneB);
        QVERIFY(message(too_many).find("plan needs 18 devices (its stages' replicas) but the cluster has 16") != std::string::npos);
    }

    void planFileKeepsStageReplicas() {
        Plan p = replicatedPlan({3, 1}, {3, 1}, 2, ScheduleKind::OneFOneB);
        p.model.zoo = "mlp";
        p.device_map = defaultDeviceMap(p);
        QCOMPARE(p.device_map, (std::vector<std::vector<int>>{{0, 1, 2}, {3}}));
        QCOMPARE(p.deviceCount(), 4);
        const nlohmann::json j = planToJson(p);
        QCOMPARE(j.at("version").get<int>(), 6);
        QCOMPARE(j.at("stage_replicas"), nlohmann::json({3, 1}));
        // The devices each micro-batch meets: m mod 3 of the first stage, then the one of the second.
        QCOMPARE(p.pipelineGroups(), (std::vector<std::vector<int>>{{0, 3}, {1, 3}, {2, 3}}));
        QCOMPARE(j.at("groups").at("pipelines"), nlohmann::json({{0, 3}, {1, 3}, {2, 3}}));
        const Plan back = planFromJson(j, "plan.json");
        QCOMPARE(back.stage_replicas, p.stage_replicas);
        QCOMPARE(back.device_map, p.device_map);
        QCOMPARE(back.dp, 3);
        // Without dp, the widest stage gives it; a plan without stage_replicas writes no such key.
        nlohmann::json no_dp = j;
        no_dp.erase("dp");
        no_dp.erase("device_map");
        QCOMPARE(planFromJson(no_dp, "plan.json").dp, 3);
        QVERIFY(!planToJson(pipelinePlan(4, 2, 2, 2, ScheduleKind::OneFOneB)).contains("stage_replicas"));
        nlohmann::json bad = j;
        bad["stage_replicas"] = {3, 1, 1};
        const std::string three = errorOf([&] { planFromJson(bad, "plan.json"); });
        QVERIFY2(three.find("stage_replicas") != std::string::npos && three.find("has 3 entries for 2 stages") != std::string::npos, three.c_str());
        bad = j;
        bad["dp"] = 2;
        const std::string dp = errorOf([&] { planFromJson(bad, "plan.json"); });
        QVERIFY2(dp.find("is 2 but the widest stage") != std::string::npos, dp.c_str());
        bad = j;
        bad["device_map"] = {{0, 1}, {3}};
        QVERIFY(errorOf([&] { planFromJson(bad, "plan.json"); }).find("'stage_replicas' gives stage 0 3") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestStageReplicas)
#include "test_stage_replicas.moc"
