// Lowering Plans to Programs: the exact instruction streams of small schedules, derived
// communication, plan checks with their messages, and the validator's verdicts.
#include <QtTest>

#include "planners/common/error.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/validate.h"
#include "error_of.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

namespace {

std::string computeOnly(const Program& p, int stream) {
    std::string out;
    for (const Instr& in : p.streams[static_cast<size_t>(stream)])
        if (isCompute(in.kind) && in.kind != InstrKind::OptimizerStep) out += (out.empty() ? "" : " ") + in.str();
    return out;
}

std::string streamText(const Program& p, int stream) {
    std::string out;
    for (const Instr& in : p.streams[static_cast<size_t>(stream)]) out += (out.empty() ? "" : " ") + in.str();
    return out;
}

int count(const Program& p, InstrKind k) {
    int n = 0;
    for (const auto& s : p.streams)
        for (const Instr& in : s) n += in.kind == k;
    return n;
}

}  // namespace

class TestSchedule : public QObject {
    Q_OBJECT
private slots:
    void oneFOneBStreamsAreExact() {
        const Graph g = chainGraph(2);
        const Program p = lower(pipelinePlan(2, 2, 1, 3, ScheduleKind::OneFOneB), g);
        QCOMPARE(p.str(),
                 std::string("d0: 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0F2 0SEND_F2 0RECV_B1 0B1 0RECV_B2 0B2 OPT\n"
                             "d1: 0RECV_F0 1F0 1B0 0SEND_B0 0RECV_F1 1F1 1B1 0SEND_B1 0RECV_F2 1F2 1B2 0SEND_B2 OPT\n"));
    }

    void gpipeIsFillDrain() {
        const Program p = lower(pipelinePlan(4, 4, 1, 3, ScheduleKind::GPipe), chainGraph(4));
        for (int s = 0; s < 4; ++s) {
            const std::string k = std::to_string(s);
            QCOMPARE(computeOnly(p, s), k + "F0 " + k + "F1 " + k + "F2 " + k + "B2 " + k + "B1 " + k + "B0");
        }
    }

    void oneFOneBWarmUpShrinksDownThePipeline() {
        const Program p = lower(pipelinePlan(4, 4, 1, 6, ScheduleKind::OneFOneB), chainGraph(4));
        QCOMPARE(computeOnly(p, 0), std::string("0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 0B3 0B4 0B5"));
        QCOMPARE(computeOnly(p, 3), std::string("3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 3B4 3F5 3B5"));
    }

    void interleavedFollowsMegatronOrder() {
        // pp 2, 2 chunks per device, 4 micro-batches: device 0 holds stages 0 and 2.
        const Program p = lower(pipelinePlan(4, 2, 1, 4, ScheduleKind::Interleaved, 2), chainGraph(4));
        QCOMPARE(computeOnly(p, 0), std::string("0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3"));
        QCOMPARE(computeOnly(p, 1), std::string("1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3"));
    }

    void zeroBubbleSplitsBackward() {
        const Program p = lower(pipelinePlan(3, 3, 1, 4, ScheduleKind::ZeroBubbleH1), chainGraph(3));
        QCOMPARE(count(p, InstrKind::Backward), 0);
        QCOMPARE(count(p, InstrKind::BackwardInput), 12);
        QCOMPARE(count(p, InstrKind::BackwardWeight), 12);
        // B goes first, F keeps at most pp - i micro-batches between F and B, and W waits
        // (up to pp - 1 behind) for idle slots: the drain is filled with weight gradients.
        QCOMPARE(computeOnly(p, 0), std::string("0F0 0F1 0F2 0I0 0F3 0I1 0W0 0I2 0W1 0W2 0I3 0W3"));
        QCOMPARE(computeOnly(p, 2), std::string("2F0 2I0 2F1 2I1 2F2 2I2 2W0 2F3 2I3 2W1 2W2 2W3"));
    }

    void hippieSplitsLastBackwardIntoBuckets() {
        // 4 layers of 1 MiB weights, buckets of 1 MiB, dp 2: the last micro-batch's backward
        // of each 2-layer stage runs as 2 parts, each followed at once by its all-reduce.
        Plan plan = pipelinePlan(4, 2, 2, 2, ScheduleKind::Hippie);
        plan.bucket_bytes = 1 << 20;
        const Program p = lower(plan, chainGraph(4));
        QCOMPARE(p.buckets.size(), size_t(4));
        QCOMPARE(computeOnly(p, 0), std::string("0F0 0F1 0B0 0B1.0 0B1.1"));
        std::string s0;
        for (const Instr& in : p.streams[0]) s0 += in.str() + " ";
        QVERIFY2(s0.find("0B1.0 AR0 0B1.1 AR1 OPT") != std::string::npos, s0.c_str());
        // 1f1b reduces only after the whole backward.
        plan.schedule = ScheduleKind::OneFOneB;
        const Program base = lower(plan, chainGraph(4));
        std::string s1;
        for (const Instr& in : base.streams[0]) s1 += in.str() + " ";
        QVERIFY2(s1.find("0B1 AR0 AR1 OPT") != std::string::npos, s1.c_str());
    }

    // Tensor-parallel plans are checked naming the field: a model with no op to split, a
    // device map without tp devices a replica, too few devices (test_tensor_parallel lowers them).
    void tensorParallelPlansAreChecked() {
        const Graph g = tensorParallelChain(2);
        Plan plan = pipelinePlan(2, 2, 1, 2, ScheduleKind::OneFOneB);
        plan.tp = 2;
        plan.device_map = defaultDeviceMap(2, 1, 2);
        checkPlan(plan, g, 4);
        std::string msg = errorOf([&] { checkPlan(plan, chainGraph(2), 4); });
        QVERIFY2(msg.find("field 'tp'") != std::string::npos && msg.find("marks no op") != std::string::npos, msg.c_str());
        plan.device_map = defaultDeviceMap(2, 1);  // dp devices a stage, not dp x tp
        msg = errorOf([&] { checkPlan(plan, g, 4); });
        QVERIFY2(msg.find("device_map[0]") != std::string::npos && msg.find("dp x tp") != std::string::npos, msg.c_str());
        plan.device_map.clear();
        msg = errorOf([&] { checkPlan(plan, g, 3); });
        QVERIFY2(msg.find("4 devices (pp 2 x dp 1 x tp 2)") != std::string::npos, msg.c_str());
        Plan sp = pipelinePlan(2, 2, 1, 2, ScheduleKind::OneFOneB);
        sp.sequence_parallel = true;
        msg = errorOf([&] { checkPlan(sp, g, 4); });
        QVERIFY2(msg.find("field 'sequence_parallel'") != std::string::npos && msg.find("tp > 1") != std::string::npos, msg.c_str());
    }

    // ZeRO over dp 2, one stage of 2 layers with 1 MiB buckets (2 buckets), 2 micro-batches.
    void zeroStagesLowerTheirCollectives() {
        const Graph g = chainGraph(2);
        Plan plan = pipelinePlan(2, 1, 2, 2, ScheduleKind::OneFOneB);
        plan.bucket_bytes = 1 << 20;
        // Stage 1: all-reduce as stage 0, the step on the shard, then all-gathers.
        plan.zero_stage = 1;
        Program p = lower(plan, g);
        QCOMPARE(p.zero_stage, 1);
        QCOMPARE(streamText(p, 0), std::string("0F0 0B0 0F1 0B1 AR0 AR1 OPT AG0 AG1"));
        // Stage 2: each micro-batch's gradients reduce-scattered after its backward.
        plan.zero_stage = 2;
        p = lower(plan, g);
        QCOMPARE(streamText(p, 0), std::string("0F0 0B0 RS0@0 RS1@0 0F1 0B1 RS0@1 RS1@1 OPT AG0 AG1"));
        // Stage 3: a bucket per layer, gathered inside each compute (ZeroGather), no all-gather
        // after the step (test_zero_three.cpp has the rest).
        plan.zero_stage = 3;
        p = lower(plan, g);
        QCOMPARE(streamText(p, 0), std::string("0F0 Z3AG0F0 0B0 Z3AG0B0 RS0@0 RS1@0 0F1 Z3AG0F1 0B1 Z3AG0B1 RS0@1 RS1@1 OPT"));
        QVERIFY(validate(p, g).ok);
        // The hippie schedule reduce-scatters the last backward bucket by bucket.
        plan.schedule = ScheduleKind::Hippie;
        plan.zero_stage = 2;
        p = lower(plan, g);
        QCOMPARE(streamText(p, 0), std::string("0F0 0B0 RS0@0 RS1@0 0F1 0B1.0 RS0@1 0B1.1 RS1@1 OPT AG0 AG1"));
        QVERIFY(validate(p, g).ok);
        // dp 1: nothing to shard, the program is stage 0's.
        Plan single = pipelinePlan(2, 1, 1, 2, ScheduleKind::OneFOneB);
        single.zero_stage = 3;
        const Program q = lower(single, g);
        QCOMPARE(q.zero_stage, 0);
        QCOMPARE(streamText(q, 0), std::string("0F0 0B0 0F1 0B1 OPT"));
    }

    void validatorChecksZeroCollectives() {
        const Graph g = chainGraph(2);
        Plan plan = pipelinePlan(2, 1, 2, 1, ScheduleKind::OneFOneB);
        plan.zero_stage = 2;
        auto problems = [&](const Program& p) {
            std::string all;
            for (const std::string& s : validate(p, g).problems) all += s + "\n";
            return all;
        };
        // An all-gather of updated parameters moved before the step.
        Program p = lower(plan, g);
        auto& s0 = p.streams[0];
        const auto opt = std::find_if(s0.begin(), s0.end(), [](const Instr& in) { return in.kind == InstrKind::OptimizerStep; });
        std::iter_swap(opt, opt + 1);
        QVERIFY2(problems(p).find("before the optimizer step") != std::string::npos, problems(p).c_str());
        // A reduce-scatter before the gradients exist.
        p = lower(plan, g);
        auto& t0 = p.streams[0];
        const auto rs = std::find_if(t0.begin(), t0.end(), [](const Instr& in) { return in.kind == InstrKind::ReduceScatter; });
        const Instr moved = *rs;
        t0.erase(rs);
        t0.insert(t0.begin(), moved);
        QVERIFY2(problems(p).find("before its gradients are computed") != std::string::npos, problems(p).c_str());
        // Replicas disagreeing on the sequence of collectives.
        p = lower(plan, g);
        p.streams[1].pop_back();
        QVERIFY2(problems(p).find("different sequence of collectives") != std::string::npos, problems(p).c_str());
        // ZeRO-3 compute without its gathers.
        plan.zero_stage = 3;
        p = lower(plan, g);
        auto& u0 = p.streams[0];
        u0.erase(std::remove_if(u0.begin(), u0.end(), [](const Instr& in) { return in.kind == InstrKind::ZeroGather; }), u0.end());
        QVERIFY2(problems(p).find("are not all-gathered for it") != std::string::npos, problems(p).c_str());
    }

    void checkPlanRefusesBadZeroStages() {
        const Graph g = chainGraph(2);
        Plan plan = pipelinePlan(2, 1, 2, 1, ScheduleKind::OneFOneB);
        plan.zero_stage = 4;
        QVERIFY(errorOf([&] { checkPlan(plan, g, 2); }).find("'zero_stage'") != std::string::npos);
        Plan placed;
        placed.placement = {0, 1};
        placed.schedule = ScheduleKind::GPipe;
        placed.zero_stage = 1;
        QVERIFY(errorOf([&] { checkPlan(placed, g, 2); }).find("placement") != std::string::npos);
    }

    void dataParallelReplicasGetTheirOwnPeers() {
        const Program p = lower(pipelinePlan(4, 2, 2, 2, ScheduleKind::OneFOneB), chainGraph(4));
        // Default map: replica r of stage s on device r * pp + s.
        QCOMPARE(p.devices, (std::vector<int>{0, 2, 1, 3}));
        for (const Instr& in : p.streams[1])
            if (isSend(in.kind) || isRecv(in.kind)) QCOMPARE(in.peer, 3);
        QCOMPARE(p.groups[0], (std::vector<int>{0, 2}));
    }

    void recomputeComesBeforeBackward() {
        Plan plan = pipelinePlan(2, 1, 1, 2, ScheduleKind::OneFOneB);
        plan.recompute_layers = {1};
        const Program p = lower(plan, chainGraph(2));
        QCOMPARE(computeOnly(p, 0), std::string("0F0 0R0 0B0 0F1 0R1 0B1"));
    }

    void placementSendsOnlyAcrossDevices() {
        const Graph g = chainGraph(4);
        Plan plan;
        plan.placement = {0, 0, 1, 1};
        plan.schedule = ScheduleKind::GPipe;
        plan.micro_batches = 2;
        plan.global_batch = 2;
        const Program p = lower(plan, g);
        QCOMPARE(p.segments.size(), size_t(2));
        QCOMPARE(count(p, InstrKind::SendActivation), 2);
        QCOMPARE(count(p, InstrKind::SendGrad), 2);
        QVERIFY(validate(p, g).ok);
    }

    void everyScheduleValidates_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("dp");
        QTest::addColumn<int>("m");
        QTest::addColumn<int>("zero");
        for (ScheduleKind k : allScheduleKinds()) {
            for (int pp : {1, 2, 4})
                for (int dp : {1, 2})
                    for (int m : {1, 4, 8})
                        for (int zero = 0; zero <= (dp > 1 ? kMaxZeroStage : 0); ++zero) {
                            if (k == ScheduleKind::Interleaved && (pp < 2 || m % pp != 0)) continue;
                            QTest::addRow("%s pp%d dp%d m%d z%d", toString(k), pp, dp, m, zero) << int(k) << pp << dp << m << zero;
                        }
        }
    }
    void everyScheduleValidates() {
        QFETCH(int, kind);
        QFETCH(int, pp);
        QFETCH(int, dp);
        QFETCH(int, m);
        QFETCH(int, zero);
        const auto k = static_cast<ScheduleKind>(kind);
        const int v = k == ScheduleKind::Interleaved ? 2 : 1;
        const Graph g = chainGraph(8);
        Plan plan = pipelinePlan(8, pp, dp, m, k, v);
        plan.bucket_bytes = 1 << 20;
        plan.zero_stage = zero;
        plan.recompute_layers = {0, 3};
        checkPlan(plan, g, pp * dp);
        const ValidationResult r = validate(lower(plan, g), g);
        QVERIFY2(r.ok, r.problems.empty() ? "" : r.problems.front().c_str());
    }

    void validatorFindsMissingReceive() {
        const Graph g = chainGraph(2);
        Program p = lower(pipelinePlan(2, 2, 1, 2, ScheduleKind::OneFOneB), g);
        auto& s1 = p.streams[1];
        s1.erase(std::find_if(s1.begin(), s1.end(), [](const Instr& in) { return in.kind == InstrKind::RecvActivation; }));
        const ValidationResult r = validate(p, g);
        QVERIFY(!r.ok);
        QVERIFY(std::any_of(r.problems.begin(), r.problems.end(),
                            [](const std::string& s) { return s.find("sent but never received") != std::string::npos; }));
    }

    void validatorFindsDeadlock() {
        // Stage 0 waits for the gradient of micro-batch 0 before it sends micro-batch 0.
        const Graph g = chainGraph(2);
        Program p = lower(pipelinePlan(2, 2, 1, 1, ScheduleKind::OneFOneB), g);
        auto& s0 = p.streams[0];
        const auto recv = std::find_if(s0.begin(), s0.end(), [](const Instr& in) { return in.kind == InstrKind::RecvGrad; });
        const Instr r = *recv;
        s0.erase(recv);
        s0.insert(s0.begin(), r);
        const ValidationResult res = validate(p, g);
        QVERIFY(!res.ok);
        QVERIFY(std::any_of(res.problems.begin(), res.problems.end(),
                            [](const std::string& s) { return s.find("deadlock") != std::string::npos; }));
    }

    void validatorFindsBackwardBeforeForward() {
        const Graph g = chainGraph(1);
        Program p = lower(pipelinePlan(1, 1, 1, 1, ScheduleKind::OneFOneB), g);
        std::swap(p.streams[0][0], p.streams[0][1]);
        const ValidationResult r = validate(p, g);
        QVERIFY(!r.ok);
        QVERIFY(r.problems.front().find("backward before forward") != std::string::npos);
    }

    void checkPlanNamesTheField() {
        const Graph g = chainGraph(4);
        Plan gap = pipelinePlan(4, 2, 1, 2, ScheduleKind::OneFOneB);
        gap.stages[1].first_layer = 3;
        QVERIFY(errorOf([&] { checkPlan(gap, g, 8); }).find("stages[1]") != std::string::npos);
        Plan short_plan = pipelinePlan(4, 2, 1, 2, ScheduleKind::OneFOneB);
        short_plan.stages[1].last_layer = 2;
        QVERIFY(errorOf([&] { checkPlan(short_plan, g, 8); }).find("the model has 4 layers") != std::string::npos);
        Plan too_big = pipelinePlan(4, 2, 4, 2, ScheduleKind::OneFOneB);
        QVERIFY(errorOf([&] { checkPlan(too_big, g, 4); }).find("needs 8 devices") != std::string::npos);
        Plan uneven = pipelinePlan(4, 2, 1, 3, ScheduleKind::OneFOneB);
        uneven.global_batch = 4;
        QVERIFY(errorOf([&] { checkPlan(uneven, g, 8); }).find("global_batch") != std::string::npos);
        Plan inter = pipelinePlan(4, 2, 1, 3, ScheduleKind::Interleaved, 2);
        QVERIFY(errorOf([&] { checkPlan(inter, g, 8); }).find("micro_batches") != std::string::npos);
        Plan reused = pipelinePlan(4, 2, 1, 2, ScheduleKind::OneFOneB);
        reused.device_map = {{1}, {1}};
        QVERIFY(errorOf([&] { checkPlan(reused, g, 8); }).find("used twice") != std::string::npos);
        Plan recompute = pipelinePlan(4, 2, 1, 2, ScheduleKind::OneFOneB);
        recompute.recompute_layers = {9};
        QVERIFY(errorOf([&] { checkPlan(recompute, g, 8); }).find("recompute_layers") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestSchedule)
#include "test_schedule.moc"
