// Lowering Plans to Programs: the exact instruction streams of small schedules, derived
// communication, plan checks with their messages, and the validator's verdicts.
#include <QtTest>

#include "planners/common/error.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/validate.h"
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

int count(const Program& p, InstrKind k) {
    int n = 0;
    for (const auto& s : p.streams)
        for (const Instr& in : s) n += in.kind == k;
    return n;
}

std::string expectThrow(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
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
        for (ScheduleKind k : allScheduleKinds()) {
            for (int pp : {1, 2, 4})
                for (int dp : {1, 2})
                    for (int m : {1, 4, 8}) {
                        if (k == ScheduleKind::Interleaved && (pp < 2 || m % pp != 0)) continue;
                        QTest::addRow("%s pp%d dp%d m%d", toString(k), pp, dp, m) << int(k) << pp << dp << m;
                    }
        }
    }
    void everyScheduleValidates() {
        QFETCH(int, kind);
        QFETCH(int, pp);
        QFETCH(int, dp);
        QFETCH(int, m);
        const auto k = static_cast<ScheduleKind>(kind);
        const int v = k == ScheduleKind::Interleaved ? 2 : 1;
        const Graph g = chainGraph(8);
        Plan plan = pipelinePlan(8, pp, dp, m, k, v);
        plan.bucket_bytes = 1 << 20;
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
        QVERIFY(expectThrow([&] { checkPlan(gap, g, 8); }).find("stages[1]") != std::string::npos);
        Plan short_plan = pipelinePlan(4, 2, 1, 2, ScheduleKind::OneFOneB);
        short_plan.stages[1].last_layer = 2;
        QVERIFY(expectThrow([&] { checkPlan(short_plan, g, 8); }).find("the model has 4 layers") != std::string::npos);
        Plan too_big = pipelinePlan(4, 2, 4, 2, ScheduleKind::OneFOneB);
        QVERIFY(expectThrow([&] { checkPlan(too_big, g, 4); }).find("needs 8 devices") != std::string::npos);
        Plan uneven = pipelinePlan(4, 2, 1, 3, ScheduleKind::OneFOneB);
        uneven.global_batch = 4;
        QVERIFY(expectThrow([&] { checkPlan(uneven, g, 8); }).find("global_batch") != std::string::npos);
        Plan inter = pipelinePlan(4, 2, 1, 3, ScheduleKind::Interleaved, 2);
        QVERIFY(expectThrow([&] { checkPlan(inter, g, 8); }).find("micro_batches") != std::string::npos);
        Plan reused = pipelinePlan(4, 2, 1, 2, ScheduleKind::OneFOneB);
        reused.device_map = {{1}, {1}};
        QVERIFY(expectThrow([&] { checkPlan(reused, g, 8); }).find("used twice") != std::string::npos);
        Plan recompute = pipelinePlan(4, 2, 1, 2, ScheduleKind::OneFOneB);
        recompute.recompute_layers = {9};
        QVERIFY(expectThrow([&] { checkPlan(recompute, g, 8); }).find("recompute_layers") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestSchedule)
#include "test_schedule.moc"
