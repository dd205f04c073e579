// Per-stage tensor-parallel degrees (Plan::stage_tp): the exact program of a t(1,2,1) pipeline
// (rank k of a stage takes its tensors from rank k mod t of the other), its simulated times,
// the default device map and process groups, the checks that refuse what is not built, and the
// plan file (format version 7).
#include <QtTest>

#include <nlohmann/json.hpp>

#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/model/zoo.h"
#include "planners/algorithms/hybrid_candidates.h"
#include "planners/schedule/balanced_stages.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/schedule/validate.h"
#include "planners/sim/simulator.h"
#include "error_of.h"
#include "planner_fixtures.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

namespace {

// `layers` layers in as many stages, with these degrees.
Plan stageTpPlan(const std::vector<int>& degrees, int dp, int m, ScheduleKind kind) {
    Plan p = pipelinePlan(static_cast<int>(degrees.size()), static_cast<int>(degrees.size()), dp, m, kind);
    p.stage_tp = degrees;
    p.tp = *std::max_element(degrees.begin(), degrees.end());
    p.device_map = defaultDeviceMap(p);
    return p;
}

// Each stream's point-to-point instructions as "0SEND_F0>2" (peer after '>').
std::string peers(const Program& p, size_t stream) {
    std::string out;
    for (const Instr& in : p.streams[stream])
        if (in.peer >= 0) out += (out.empty() ? "" : " ") + in.str() + ">" + std::to_string(in.peer);
    return out;
}

std::string firstProblem(const ValidationResult& r) { return r.problems.empty() ? std::string() : r.problems.front(); }

// Stages as "0-1 2-5 6-7".
std::string ranges(const std::vector<StageRange>& stages) {
    std::string out;
    for (const StageRange& r : stages) out += (out.empty() ? "" : " ") + std::to_string(r.first_layer) + "-" + std::to_string(r.last_layer);
    return out;
}

}  // namespace

class TestStageTp : public QObject {
    Q_OBJECT

private slots:
    // t(1,2,1), 2 micro-batches, 1F1B, on devices 0 | 1 2 | 3. Both ranks of stage 1 take
    // their input from stage 0's one rank (k mod 1 = 0), so device 0 sends each activation
    // twice; device 0 takes its gradients from stage 1's rank 0 mod 2 = 0 alone. Stage 2's one
    // rank takes from stage 1's rank 0 (rank 1 sends nothing onward) and sends each gradient
    // to both ranks of stage 1.
    void programRoutesRankKFromKModT() {
        const Graph g = tensorParallelChain(3);
        const Plan plan = stageTpPlan({1, 2, 1}, 1, 2, ScheduleKind::OneFOneB);
        QCOMPARE(plan.device_map, (std::vector<std::vector<int>>{{0}, {1, 2}, {3}}));
        QCOMPARE(plan.deviceCount(), 4);
        checkPlan(plan, g, 4);
        const Program p = lower(plan, g);
        QCOMPARE(p.str(), std::string("d0: 0F0 0SEND_F0 0SEND_F0 0F1 0SEND_F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 OPT\n"
                                      "d1: 0RECV_F0 1F0 TPAR1F0 1SEND_F0 0RECV_F1 1F1 TPAR1F1 1SEND_F1 1RECV_B0 1B0 TPAR1B0 0SEND_B0 1RECV_B1 1B1 TPAR1B1 0SEND_B1 OPT\n"
                                      "d2: 0RECV_F0 1F0 TPAR1F0 0RECV_F1 1F1 TPAR1F1 1RECV_B0 1B0 TPAR1B0 1RECV_B1 1B1 TPAR1B1 OPT\n"
                                      "d3: 1RECV_F0 2F0 2B0 1SEND_B0 1SEND_B0 1RECV_F1 2F1 2B1 1SEND_B1 1SEND_B1 OPT\n"));
        QCOMPARE(peers(p, 0), std::string("0SEND_F0>1 0SEND_F0>2 0SEND_F1>1 0SEND_F1>2 0RECV_B0>1 0RECV_B1>1"));
        QCOMPARE(peers(p, 2), std::string("0RECV_F0>0 0RECV_F1>0 1RECV_B0>3 1RECV_B1>3"));
        QCOMPARE(peers(p, 3), std::string("1RECV_F0>1 1SEND_B0>1 1SEND_B0>2 1RECV_F1>1 1SEND_B1>1 1SEND_B1>2"));
        for (const auto& stream : p.streams)
            for (const Instr& in : stream)
                if (in.peer >= 0) QCOMPARE(in.bytes, int64_t{1} << 20);  // whole on every rank: each sends it all
        // One data-parallel group per (segment, rank), then stage 1's one tp group.
        QCOMPARE(p.groups, (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}, {1, 2}}));
        QCOMPARE(p.tpOf(0), 1);
        QCOMPARE(p.tpOf(1), 2);
        QCOMPARE(p.replicasOf(1), 1);
        QCOMPARE(p.buckets[1].bytes, int64_t{1} << 19);  // a stage-1 rank's half of its layer's 1 MiB
        QCOMPARE(p.buckets[0].bytes, int64_t{1} << 20);
        const ValidationResult r = validate(p, g);
        QVERIFY2(r.ok, firstProblem(r).c_str());
        // The wider stage on the other side: t(2,1), rank 1 sends nothing, and takes its
        // gradient from the one rank of stage 1 as rank 0 does.
        const Program q = lower(stageTpPlan({2, 1}, 1, 1, ScheduleKind::OneFOneB), tensorParallelChain(2));
        QCOMPARE(peers(q, 0), std::string("0SEND_F0>2 0RECV_B0>2"));
        QCOMPARE(peers(q, 1), std::string("0RECV_B0>2"));
        QCOMPARE(peers(q, 2), std::string("0RECV_F0>0 0SEND_B0>0 0SEND_B0>1"));
        QVERIFY(validate(q, tensorParallelChain(2)).ok);
    }

    // Every schedule it supports, with replicas and ZeRO, validates and simulates.
    void supportedShapesValidate_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("dp");
        QTest::addColumn<int>("zero");
        for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Hippie, ScheduleKind::ZeroBubbleH1})
            for (int dp : {1, 2})
                for (int zero : {0, 1, 2, 3}) {
                    if (dp == 1 && zero > 0) continue;
                    const std::string name = std::string(toString(k)) + " dp" + std::to_string(dp) + " z" + std::to_string(zero);
                    QTest::newRow(name.c_str()) << static_cast<int>(k) << dp << zero;
                }
    }
    void supportedShapesValidate() {
        QFETCH(int, kind);
        QFETCH(int, dp);
        QFETCH(int, zero);
        const Graph g = tensorParallelChain(3);
        for (const std::vector<int>& degrees : {std::vector<int>{1, 2, 1}, std::vector<int>{2, 1, 4}, std::vector<int>{4, 2, 1}}) {
            Plan plan = stageTpPlan(degrees, dp, 4, static_cast<ScheduleKind>(kind));
            plan.zero_stage = zero;
            checkPlan(plan, g, 32);
            const Program p = lower(plan, g);
            const ValidationResult r = validate(p, g);
            QVERIFY2(r.ok, firstProblem(r).c_str());
            const Trace t = simulate(p, plan, CostModel(g, exactCluster(1, 32)));
            QVERIFY(t.metrics.iteration_time_s > 0);
        }
    }

    // t(1,2), one micro-batch of one sample, 1 s forward and 2 s backward a layer, links of B
    // bytes/s and L s latency: stage 0 computes its forward alone (1 s), sends A bytes to both
    // ranks of stage 1 (A / B + L each, on their own links); each of those computes half the
    // layer (0.5 s) followed by one all-reduce of A over 2 ranks (A / B + 2 L).
    void widerStageComputesItsShare() {
        const int64_t A = 1 << 20;
        const double B = 1e9, L = 1e-5;
        const Graph g = tensorParallelChain(2);
        const Plan plan = stageTpPlan({1, 2}, 1, 1, ScheduleKind::OneFOneB);
        const Trace t = simulate(lower(plan, g), plan, CostModel(g, exactCluster(1, 3, int64_t{1} << 40, B, L)));
        const double send = static_cast<double>(A) / B + L, ar = static_cast<double>(A) / B + 2 * L;
        int checked = 0;
        for (const TraceEvent& e : t.events) {
            if (e.kind != InstrKind::Forward) continue;
            if (e.device == 0) {
                QCOMPARE(e.start_s, 0.0);
                QVERIFY(std::abs(e.end_s - 1.0) < 1e-12);
            } else {
                QVERIFY2(std::abs(e.start_s - (1.0 + send)) < 1e-12, std::to_string(e.start_s).c_str());
                QVERIFY2(std::abs(e.end_s - (1.0 + send + 0.5 + ar)) < 1e-12, std::to_string(e.end_s).c_str());
            }
            ++checked;
        }
        QCOMPARE(checked, 3);
    }

    void unsupportedCombinationsAreNamed() {
        const Graph g = tensorParallelChain(3);
        const Plan p = stageTpPlan({1, 2, 1}, 1, 2, ScheduleKind::OneFOneB);
        auto message = [&](const Plan& plan, const Graph& graph) { return errorOf([&] { checkPlan(plan, graph, 16); }); };
        QCOMPARE(message(p, g), std::string());
        Plan sp = p;
        sp.sequence_parallel = true;
        QVERIFY(contains(message(sp, g), "'sequence_parallel': sequence parallelism (stage boundaries carry 1/t of the sequence) is not built"));
        Plan interleaved = stageTpPlan({1, 2, 1, 2}, 1, 2, ScheduleKind::Interleaved);
        interleaved.virtual_stages = 2;
        QVERIFY(contains(message(interleaved, tensorParallelChain(4)), "'schedule': the interleaved schedule is not built"));
        Plan short_list = p;
        short_list.stage_tp = {1, 2};
        QVERIFY(contains(message(short_list, g), "'stage_tp': has 2 entries for 3 stages"));
        Plan wrong_tp = p;
        wrong_tp.tp = 4;
        QVERIFY(contains(message(wrong_tp, g), "'tp': is 4 but the widest stage of stage_tp has 2"));
        Plan odd = p;
        odd.stage_tp = {1, 3, 1};
        odd.tp = 3;
        QVERIFY(contains(message(odd, g), "'stage_tp[1]': is 3 but model 'tp-chain3' splits only by divisors of 8"));
        Plan too_many = stageTpPlan({4, 8, 4}, 1, 2, ScheduleKind::OneFOneB);
        too_many.device_map.clear();
        QVERIFY(contains(errorOf([&] { checkPlan(too_many, g, 15); }), "plan needs 16 devices (dp 1 x its stages' tp (4,8,4)) but the cluster has 15"));
        // A column-split output (1/t on each rank) may not cross into a stage of another degree.
        Graph cut = tensorParallelChain(2);
        for (Op& op : cut.ops)
            if (op.name == "layer0.fc2") op.layer = 1;
        QVERIFY(contains(message(stageTpPlan({2, 1}, 1, 1, ScheduleKind::OneFOneB), cut),
                         "op 'layer0.fc1' of stage 0 (tp 2) splits its output over its tp ranks, and stage 1 (tp 1) reads it"));
        // GPT's embedding table is its LM head's weight, split by vocabulary: both need one degree.
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.overrides = {{"layers", 1}, {"d_model", 64}, {"heads", 4}, {"vocab", 96}};
        spec.seq_len = 16;
        const Graph gpt = buildZooModel(spec);
        QCOMPARE(gpt.layerCount(), 3);
        QVERIFY(contains(message(stageTpPlan({2, 2, 1}, 1, 2, ScheduleKind::OneFOneB), gpt),
                         "'stage_tp': stages 0 and 2 share a tied weight (layer 0's, reused by layer 2, split by vocabulary over the tp "
                         "ranks) but have tp 2 and 1; give them the same degree"));
        QCOMPARE(message(stageTpPlan({1, 2, 1}, 1, 2, ScheduleKind::OneFOneB), gpt), std::string());
    }

    // Stages cut by the degrees: a stage of 2 ranks takes twice the work of one of 1.
    void stagesCutByTheDegrees() {
        const Graph g = chainGraph(8);
        QCOMPARE(ranges(balancedStages(g, std::vector<int>{1, 2, 1})), std::string("0-1 2-5 6-7"));
        QCOMPARE(ranges(balancedStages(g, std::vector<int>{2, 1, 1})), std::string("0-3 4-5 6-7"));
        QCOMPARE(ranges(balancedStages(g, std::vector<int>{1, 1})), ranges(balancedStages(g, 2)));
        QVERIFY(contains(errorOf([&] { balancedStages(g, std::vector<int>{1, 0}); }), "0 shares"));
    }

    // The planners' variants of a plan that leaves devices idle: pp 3 on 3 of 4 devices gives
    // each stage in turn the fourth device, the stages cut again by the degrees; the old ranks
    // keep their devices. With no device idle, none.
    void idleDevicesGoToOneStage() {
        const Graph g = tensorParallelChain(6);
        Problem problem = makeProblem(g, exactCluster(1, 4), 4, Optimizer::SGD);
        Plan p = pipelinePlan(6, 3, 1, 4, ScheduleKind::Hippie);
        p.device_map = defaultDeviceMap(p);
        const std::vector<Plan> variants = hybrid::perStageDegreeVariants(problem, p);
        QCOMPARE(variants.size(), size_t(3));
        QCOMPARE(variants[1].stage_tp, (std::vector<int>{1, 2, 1}));
        QCOMPARE(variants[1].tp, 2);
        QCOMPARE(ranges(variants[1].stages), std::string("0-0 1-3 4-5"));  // a quarter, a half, a quarter of 6 layers (ties stay short)
        QCOMPARE(variants[1].device_map, (std::vector<std::vector<int>>{{0}, {1, 3}, {2}}));
        QCOMPARE(variants[0].device_map, (std::vector<std::vector<int>>{{0, 3}, {1}, {2}}));
        QCOMPARE(variants[2].stage_tp, (std::vector<int>{1, 1, 2}));
        for (const Plan& v : variants) QVERIFY(validate(lower(v, g), g).ok);
        Plan full = pipelinePlan(6, 4, 1, 4, ScheduleKind::Hippie);
        full.device_map = defaultDeviceMap(full);
        QVERIFY(hybrid::perStageDegreeVariants(problem, full).empty());
        Plan sp = p;
        sp.tp = 1;
        sp.sequence_parallel = true;
        QVERIFY(hybrid::perStageDegreeVariants(problem, sp).empty());
    }

    void planFileKeepsStageTp() {
        Plan p = stageTpPlan({1, 2, 1}, 2, 2, ScheduleKind::OneFOneB);
        p.model.zoo = "gpt2-small";
        // Replica r's pipeline on devices 4r onwards, stage after stage.
        QCOMPARE(p.device_map, (std::vector<std::vector<int>>{{0, 4}, {1, 2, 5, 6}, {3, 7}}));
        QCOMPARE(p.deviceCount(), 8);
        QCOMPARE(p.tpGroups(), (std::vector<std::vector<int>>{{0}, {4}, {1, 2}, {5, 6}, {3}, {7}}));
        QCOMPARE(p.stageGroups(), (std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
        // The path of tp rank k: rank k mod t of each stage.
        QCOMPARE(p.pipelineGroups(), (std::vector<std::vector<int>>{{0, 1, 3}, {0, 2, 3}, {4, 5, 7}, {4, 6, 7}}));
        QCOMPARE(p.tpText(), std::string("(1,2,1)"));
        const nlohmann::json j = planToJson(p);
        QCOMPARE(j.at("version").get<int>(), 7);
        QCOMPARE(j.at("stage_tp"), nlohmann::json({1, 2, 1}));
        const Plan back = planFromJson(j, "plan.json");
        QCOMPARE(back.stage_tp, p.stage_tp);
        QCOMPARE(back.device_map, p.device_map);
        QCOMPARE(back.tp, 2);
        // Without tp, the widest stage gives it; a plan without stage_tp writes no such key.
        nlohmann::json no_tp = j;
        no_tp.erase("tp");
        no_tp.erase("device_map");
        QCOMPARE(planFromJson(no_tp, "plan.json").tp, 2);
        QCOMPARE(planFromJson(no_tp, "plan.json").device_map, p.device_map);
        QVERIFY(!planToJson(pipelinePlan(4, 2, 2, 2, ScheduleKind::OneFOneB)).contains("stage_tp"));
        nlohmann::json bad = j;
        bad["stage_tp"] = {1, 2};
        QVERIFY(contains(errorOf([&] { planFromJson(bad, "plan.json"); }), "field 'stage_tp' has 2 entries for 3 stages"));
        bad = j;
        bad["tp"] = 4;
        QVERIFY(contains(errorOf([&] { planFromJson(bad, "plan.json"); }), "field 'tp' is 4 but the widest stage of 'stage_tp' has 2"));
        bad = j;
        bad["device_map"] = {{0, 4}, {1, 5}, {3, 7}};
        QVERIFY(contains(errorOf([&] { planFromJson(bad, "plan.json"); }), "has 2 devices but 'dp' is 2 and 'stage_tp' 2"));
    }
};

QTEST_GUILESS_MAIN(TestStageTp)
#include "test_stage_tp.moc"
