// Tensor parallelism (Megatron-LM) from plan to trace: the collectives each compute
// instruction runs, the lowered streams, the validator's verdicts, simulated times and
// per-rank memory, each against numbers worked out by hand.
#include <QtTest>

#include <numeric>

#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/model/zoo.h"
#include "planners/schedule/execute.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/validate.h"
#include "planners/sim/simulator.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

namespace {

Plan tensorParallelPlan(int layers, int pp, int dp, int tp, int m, ScheduleKind kind, int v = 1) {
    Plan p = pipelinePlan(layers, pp, dp, m, kind, v);
    p.tp = tp;
    return p;
}

std::vector<const Instr*> tensorParallelOf(const Program& p, int stream) {
    std::vector<const Instr*> out;
    for (const Instr& in : p.streams[static_cast<size_t>(stream)])
        if (in.kind == InstrKind::TensorParallel) out.push_back(&in);
    return out;
}

bool mentions(const ValidationResult& r, const std::string& what) {
    return std::any_of(r.problems.begin(), r.problems.end(), [&](const std::string& s) { return s.find(what) != std::string::npos; });
}

std::string firstProblem(const ValidationResult& r) { return r.problems.empty() ? std::string() : r.problems.front(); }

// gpt2-small cut down to one block of s = 128, h = 64 (4 heads), fp16, for 2 samples.
Graph oneGptBlock() {
    ModelSpec spec;
    spec.zoo = "gpt2-small";
    spec.batch_size = 2;
    spec.seq_len = 128;
    spec.precision = Precision::FP16;
    spec.overrides = {{"layers", 1}, {"d_model", 64}, {"heads", 4}};
    return buildZooModel(spec);
}

// Stages [embed], [block0], [head] of oneGptBlock: segment 1 is the block alone.
Plan blockStages(int tp, bool sp) {
    Plan p = tensorParallelPlan(3, 3, 1, tp, 2, ScheduleKind::OneFOneB);
    p.global_batch = 4;  // micro-batches of 2 samples
    p.sequence_parallel = sp;
    return p;
}

}  // namespace

class TestTensorParallel : public QObject {
    Q_OBJECT
private slots:
    // Megatron-LM, section 3: a transformer block at t = 2 all-reduces s*b*h elements twice
    // forward (after the attention's output projection and the MLP's second linear) and twice
    // backward (into the QKV projection's and the first linear's inputs): 4 a micro-batch.
    // Sequence parallelism moves the same bytes as reduce-scatter + all-gather pairs.
    void oneBlockAllReducesFourTimesAMicroBatch() {
        const Graph g = oneGptBlock();
        const int64_t sbh = int64_t{128} * 2 * 64 * 2;  // one s x b x h fp16 tensor, b = 2
        for (const bool sp : {false, true}) {
            const Plan plan = blockStages(2, sp);
            checkPlan(plan, g, 6);
            const Program p = lower(plan, g);
            QCOMPARE(p.tp, 2);
            QCOMPARE(p.sequence_parallel, sp);
            const int stream = p.streamOf(p.segment_devices[1][0]);
            QVERIFY(stream >= 0);
            std::string text;
            int64_t bytes = 0;
            int collectives = 0;
            for (const Instr* in : tensorParallelOf(p, stream)) {
                text += (text.empty() ? "" : " ") + in->str();
                QCOMPARE(in->bytes, 2 * sbh);
                QCOMPARE(in->count, 2);
                QCOMPARE(in->sequence_parallel, sp);
                if (in->mb == 0) {
                    bytes += in->bytes;
                    collectives += in->count;
                }
            }
            const std::string k = sp ? "TPSP" : "TPAR";
            QCOMPARE(text, k + "1F0 " + k + "1F1 " + k + "1B0 " + k + "1B1");
            QCOMPARE(collectives, 4);
            QCOMPARE(bytes, 4 * sbh);
            const ValidationResult r = validate(p, g);
            QVERIFY2(r.ok, firstProblem(r).c_str());
        }
    }

    // A t2 x pp2 plan of two Megatron layers, 2 micro-batches, 1F1B: each rank of a stage runs
    // the same stream, its compute followed by its layer's one all-reduce, sending to the
    // same rank of the other stage. Devices (r * pp + s) * tp + k; tp groups 4 and 5 after
    // the four data-parallel groups (one per stage and rank).
    void programTextIsExact() {
        const Graph g = tensorParallelChain(2);
        const Plan plan = tensorParallelPlan(2, 2, 1, 2, 2, ScheduleKind::OneFOneB);
        checkPlan(plan, g, 4);
        const Program p = lower(plan, g);
        QCOMPARE(p.str(), std::string("d0: 0F0 TPAR0F0 0SEND_F0 0F1 TPAR0F1 0SEND_F1 0RECV_B0 0B0 TPAR0B0 0RECV_B1 0B1 TPAR0B1 OPT\n"
                                      "d1: 0F0 TPAR0F0 0SEND_F0 0F1 TPAR0F1 0SEND_F1 0RECV_B0 0B0 TPAR0B0 0RECV_B1 0B1 TPAR0B1 OPT\n"
                                      "d2: 0RECV_F0 1F0 TPAR1F0 1B0 TPAR1B0 0SEND_B0 0RECV_F1 1F1 TPAR1F1 1B1 TPAR1B1 0SEND_B1 OPT\n"
                                      "d3: 0RECV_F0 1F0 TPAR1F0 1B0 TPAR1B0 0SEND_B0 0RECV_F1 1F1 TPAR1F1 1B1 TPAR1B1 0SEND_B1 OPT\n"));
        QCOMPARE(p.groups, (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}, {0, 1}, {2, 3}}));
        QCOMPARE(p.segment_devices, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
        for (const Instr& in : p.streams[0]) {
            if (in.kind == InstrKind::TensorParallel) {
                QCOMPARE(in.group, 4);
                QCOMPARE(in.count, 1);
                QCOMPARE(in.bytes, int64_t{1} << 20);
            }
            if (in.kind == InstrKind::SendActivation) QCOMPARE(in.peer, 2);  // rank 0 to rank 0
            if (in.kind == InstrKind::SendActivation) QCOMPARE(in.bytes, int64_t{1} << 20);  // each rank sends it whole
        }
        for (const Instr& in : p.streams[1])
            if (in.kind == InstrKind::SendActivation) QCOMPARE(in.peer, 3);
        QCOMPARE(p.buckets[0].bytes, int64_t{1} << 19);  // one rank's half of the layer's 1 MiB
        const ValidationResult r = validate(p, g);
        QVERIFY2(r.ok, firstProblem(r).c_str());
        // Sequence parallelism: each rank sends its 1/t sequence slice.
        Plan sp = plan;
        sp.sequence_parallel = true;
        const Program q = lower(sp, g);
        for (const Instr& in : q.streams[0])
            if (in.kind == InstrKind::SendActivation) QCOMPARE(in.bytes, int64_t{1} << 19);
        QVERIFY(q.str().find("TPSP0F0") != std::string::npos);
    }

    // Recompute repeats the forward's all-reduces; zb-h1's input-gradient pass carries the
    // backward's, its weight-gradient pass none; hippie's bucket parts each carry their ops'.
    void everyComputeKindCarriesItsCollectives() {
        const Graph g = tensorParallelChain(2);
        Plan plan = tensorParallelPlan(2, 1, 1, 2, 1, ScheduleKind::ZeroBubbleH1);
        plan.recompute_layers = {1};
        Program p = lower(plan, g);
        std::string s;
        for (const Instr& in : p.streams[0]) s += in.str() + " ";
        QCOMPARE(s, std::string("0F0 TPAR0F0 0R0 TPAR0R0 0I0 TPAR0I0 0W0 OPT "));
        QCOMPARE(tensorParallelOf(p, 0)[0]->count, 2);  // two layers forward
        QCOMPARE(tensorParallelOf(p, 0)[1]->count, 1);  // layer 1 recomputed
        QCOMPARE(tensorParallelOf(p, 0)[2]->count, 2);
        QVERIFY2(validate(p, g).ok, firstProblem(validate(p, g)).c_str());
        // Hippie, dp 2, buckets of one layer's rank share: the last backward in parts, each
        // followed by its ops' collectives, then its bucket's all-reduce.
        plan = tensorParallelPlan(2, 1, 2, 2, 2, ScheduleKind::Hippie);
        plan.bucket_bytes = 1 << 19;
        p = lower(plan, g);
        s.clear();
        for (const Instr& in : p.streams[0]) s += in.str() + " ";
        // (The third part, layer 0's norm, has neither parameters nor collectives.)
        QCOMPARE(s, std::string("0F0 TPAR0F0 0B0 TPAR0B0 0F1 TPAR0F1 0B1.0 TPAR0B1 AR0 0B1.1 TPAR0B1 AR1 0B1.2 OPT "));
        QCOMPARE(p.devices, (std::vector<int>{0, 1, 2, 3}));
        QCOMPARE(p.streams[0][8].str(), std::string("AR0"));
        QCOMPARE(p.streams[0][8].group, 0);  // rank 0's data-parallel group {0, 2}
        QCOMPARE(p.streams[1][8].group, 1);  // rank 1's {1, 3}
        QCOMPARE(p.groups[0], (std::vector<int>{0, 2}));
        QCOMPARE(p.groups[2], (std::vector<int>{0, 1}));  // tp group of replica 0
        QVERIFY2(validate(p, g).ok, firstProblem(validate(p, g)).c_str());
    }

    void everyScheduleValidates_data() {
        QTest::addColumn<int>("kind");
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("dp");
        QTest::addColumn<int>("zero");
        QTest::addColumn<bool>("sp");
        for (ScheduleKind k : allScheduleKinds())
            for (int pp : {1, 2})
                for (int dp : {1, 2})
                    for (int zero = 0; zero <= (dp > 1 ? kMaxZeroStage : 0); ++zero)
                        for (bool sp : {false, true}) {
                            if (k == ScheduleKind::Interleaved && pp < 2) continue;
                            QTest::addRow("%s pp%d dp%d z%d%s", toString(k), pp, dp, zero, sp ? " sp" : "") << int(k) << pp << dp << zero << sp;
                        }
    }
    // Every schedule, ZeRO stage and recomputation lowers at t = 2 to a program the validator
    // accepts and the simulator runs, on GPT (tied embedding across stages) and the chain.
    void everyScheduleValidates() {
        QFETCH(int, kind);
        QFETCH(int, pp);
        QFETCH(int, dp);
        QFETCH(int, zero);
        QFETCH(bool, sp);
        const auto k = static_cast<ScheduleKind>(kind);
        const int v = k == ScheduleKind::Interleaved ? 2 : 1;
        const Cluster c = exactCluster(2, 4);
        for (const Graph& g : {tensorParallelChain(8), oneGptBlock()}) {
            const int layers = g.layerCount();
            if (layers < pp * v) continue;
            Plan plan = tensorParallelPlan(layers, pp, dp, 2, 4, k, v);
            plan.bucket_bytes = 1 << 18;
            plan.zero_stage = zero;
            plan.sequence_parallel = sp;
            plan.recompute_layers = {0, layers - 1};
            checkPlan(plan, g, c.deviceCount());
            const Program p = lower(plan, g);
            const ValidationResult r = validate(p, g);
            QVERIFY2(r.ok, (g.name + ": " + firstProblem(r)).c_str());
            const CostModel cost(g, c);
            const Trace t = simulate(p, plan, cost);
            QVERIFY(t.metrics.iteration_time_s > 0);
        }
    }

    // checkPlan takes tp > 1 now, for graphs that split by it.
    void checkPlanNamesWhatDoesNotSplit() {
        Plan plan = tensorParallelPlan(2, 1, 1, 2, 1, ScheduleKind::OneFOneB);
        const std::string none = [&] {
            try {
                checkPlan(plan, chainGraph(2), 2);
            } catch (const Error& e) {
                return std::string(e.what());
            }
            return std::string();
        }();
        QVERIFY2(none.find("field 'tp'") != std::string::npos && none.find("marks no op") != std::string::npos, none.c_str());
        plan.tp = 3;
        const std::string odd = [&] {
            try {
                checkPlan(plan, tensorParallelChain(2), 3);
            } catch (const Error& e) {
                return std::string(e.what());
            }
            return std::string();
        }();
        QVERIFY2(odd.find("divisors of 8") != std::string::npos, odd.c_str());
        plan.tp = 2;
        checkPlan(plan, tensorParallelChain(2), 2);
    }

    // The validator's rules for TensorParallel instructions, one broken at a time.
    void validatorChecksTensorParallel() {
        const Graph g = tensorParallelChain(2);
        const Program good = lower(tensorParallelPlan(2, 2, 1, 2, 2, ScheduleKind::OneFOneB), g);
        QVERIFY(validate(good, g).ok);
        auto tpAt = [](Program& p, int stream, int nth) -> Instr& {
            int seen = 0;
            for (Instr& in : p.streams[static_cast<size_t>(stream)])
                if (in.kind == InstrKind::TensorParallel && seen++ == nth) return in;
            throw Error("no such instruction");
        };
        auto positionOf = [](const Program& p, int stream, const Instr& which) {
            const auto& s = p.streams[static_cast<size_t>(stream)];
            return static_cast<size_t>(&which - s.data());
        };
        {  // moved away from its compute
            Program p = good;
            auto& s = p.streams[0];
            const size_t i = positionOf(p, 0, tpAt(p, 0, 0));
            std::swap(s[i], s[i + 1]);  // TPAR0F0 after 0SEND_F0
            const ValidationResult r = validate(p, g);
            QVERIFY(mentions(r, "does not follow its compute instruction (forward of segment 0 micro-batch 0); it follows 0SEND_F0"));
            QVERIFY(mentions(r, "0F0): its ops have 1 tensor-parallel collective(s) of 1048576 bytes, but no TensorParallel instruction follows it"));
        }
        {  // wrong group: a data-parallel group of one device
            Program p = good;
            tpAt(p, 0, 0).group = 0;
            QVERIFY(mentions(validate(p, g), "group 0 is not a tensor-parallel group of this device (2 devices including 0)"));
        }
        {  // the other member skips one: sequences differ (and its compute lacks it)
            Program p = good;
            auto& s = p.streams[1];
            s.erase(s.begin() + static_cast<std::ptrdiff_t>(positionOf(p, 1, tpAt(p, 1, 2))));
            const ValidationResult r = validate(p, g);
            QVERIFY2(mentions(r, "group 4: device 1 runs a different sequence of tensor-parallel collectives or ZeRO-3 gathers (3) than device 0 (4)"),
                     firstProblem(r).c_str());
        }
        {  // bytes that are not its ops'
            Program p = good;
            tpAt(p, 2, 0).bytes = 12;
            tpAt(p, 3, 0).bytes = 12;
            QVERIFY(mentions(validate(p, g), "lists 1 collective(s) of 12 bytes; the ops of 1F0 have 1 of 1048576 bytes"));
        }
        {  // all-reduces where the program is sequence-parallel
            Program p = good;
            p.sequence_parallel = true;
            QVERIFY(mentions(validate(p, g), "all-reduces in a sequence-parallel program"));
        }
        {  // in a program without tensor parallelism
            Program p = lower(tensorParallelPlan(2, 2, 1, 1, 2, ScheduleKind::OneFOneB), g);
            Program copy = good;
            Instr in = tpAt(copy, 0, 0);
            in.group = 0;
            p.streams[0].insert(p.streams[0].begin() + 1, in);
            QVERIFY(mentions(validate(p, g), "tensor-parallel collectives in a program without tensor parallelism (tp 1)"));
        }
        {  // after a weight-gradient pass
            Program p = good;
            tpAt(p, 0, 0).of = InstrKind::BackwardWeight;
            QVERIFY(mentions(validate(p, g), "belongs to a backward-weight, which runs no tensor-parallel collectives"));
        }
    }

    // t = 2, one layer, one micro-batch of one sample on links of B bytes/s and L s latency:
    // the layer's 1 s forward and 2 s backward (half in fc1, half in fc2) take half on each
    // rank, 0.25 + 0.25 s forward and 0.5 + 0.5 s backward, each pass followed by one ring
    // all-reduce of A bytes over 2 devices: 2 (1/2 A / B + L) = A / B + 2 L. The SGD step
    // updates the rank's P / 2 bytes = P / 8 fp32 parameters at 2 FLOPs each.
    void iterationTimeIsTheFormula() {
        const int64_t P = 1 << 20, A = 1 << 20;
        const double B = 1e9, L = 1e-5;
        const Graph g = tensorParallelChain(1, 1, 2, P, A);
        const Cluster c = exactCluster(1, 2, int64_t{1} << 40, B, L);
        const Plan plan = tensorParallelPlan(1, 1, 1, 2, 1, ScheduleKind::OneFOneB);
        const Program p = lower(plan, g);
        const Trace t = simulate(p, plan, CostModel(g, c));
        const double ar = static_cast<double>(A) / B + 2 * L;
        const double step = static_cast<double>(P / 8) * 2 / kFlopsPerSecond;
        QVERIFY2(std::abs(t.metrics.iteration_time_s - (0.25 + 0.25 + ar + 0.5 + 0.5 + ar + step)) < 1e-12,
                 std::to_string(t.metrics.iteration_time_s).c_str());
        // The forward's event spans its collectives; they are drawn inside it.
        const TraceEvent* fwd = nullptr;
        const TraceEvent* fwd_tp = nullptr;
        for (const TraceEvent& e : t.events)
            if (e.device == 1 && e.kind == InstrKind::Forward) fwd = &e;
            else if (e.device == 1 && e.kind == InstrKind::TensorParallel && !fwd_tp) fwd_tp = &e;
        QVERIFY(fwd && fwd_tp);
        QCOMPARE(fwd->start_s, 0.0);
        QVERIFY(std::abs(fwd->end_s - (0.5 + ar)) < 1e-12);
        QVERIFY(std::abs(fwd_tp->start_s - 0.5) < 1e-12);
        QCOMPARE(fwd_tp->end_s, fwd->end_s);
        QCOMPARE(fwd_tp->bytes, A);
        // Sequence parallelism: a reduce-scatter and an all-gather, each (1/2 A / B + L): the same.
        Plan sp = plan;
        sp.sequence_parallel = true;
        const Trace u = simulate(lower(sp, g), sp, CostModel(g, c));
        QVERIFY(std::abs(u.metrics.iteration_time_s - t.metrics.iteration_time_s) < 1e-12);
    }

    // A slower member holds its whole group: the collectives start when the last rank has
    // finished the compute before them, and every member's compute ends with them.
    void collectivesWaitForTheWholeGroup() {
        const Graph g = tensorParallelChain(1);
        const Program p = lower(tensorParallelPlan(1, 1, 1, 2, 1, ScheduleKind::OneFOneB), g);
        // Rank 1's forward takes 3 s, rank 0's 1 s (as on a slower device).
        ExecutionDurations d;
        d.compute = [](int s, const Instr& in) { return in.kind == InstrKind::Forward ? (s == 1 ? 3.0 : 1.0) : 0.0; };
        d.transfer = [](const Instr&, int, int) { return 0.0; };
        d.collective = [](int, const Instr&) { return 0.0; };
        d.tensor_parallel = [](int, const Instr&) { return 0.25; };
        const ExecutionResult r = execute(p, d);
        QVERIFY(r.finished);
        // Rank 0's forward ends when the group's all-reduce does: at 3 + 0.25.
        QCOMPARE(r.timing[0][0].start, 0.0);
        QCOMPARE(r.timing[0][0].end, 3.25);
        QCOMPARE(r.timing[0][1].start, 3.0);
        QCOMPARE(r.timing[1][0].end, 3.25);
    }

    // Per rank at t = 2 (fp32, Adam, one micro-batch): the split linears' parameters, gradients
    // and Adam state halve, and so do their activations; the norms' stay whole.
    // 2 layers of P bytes of weights and outputs of A bytes (3 ops each): t = 1 holds
    // 4 x 2P (weights, gradients, 2 Adam states) + 6A; t = 2 holds 4P + 2(A + A/2 + A/2).
    void memoryPerRankHalvesTheSplitOps() {
        const int64_t P = 1 << 20, A = 1 << 18;
        const Graph g = tensorParallelChain(2, 1, 2, P, A);
        const Cluster c = exactCluster(1, 2);
        Plan plan = tensorParallelPlan(2, 1, 1, 2, 1, ScheduleKind::OneFOneB);
        plan.optimizer = Optimizer::Adam;
        const Trace t2 = simulate(lower(plan, g), plan, CostModel(g, c));
        plan.tp = 1;
        const Trace t1 = simulate(lower(plan, g), plan, CostModel(g, c));
        QCOMPARE(t1.metrics.peak_memory_bytes[0], 8 * P + 6 * A);
        QCOMPARE(t2.metrics.peak_memory_bytes, (std::vector<int64_t>{4 * P + 4 * A, 4 * P + 4 * A}));
        // ... which is what the cost model says of one rank.
        const CostModel half(g, c, TensorSplit{2, false});
        std::vector<int> ops(g.ops.size());
        std::iota(ops.begin(), ops.end(), 0);
        int64_t activations = 0;
        for (int op : ops) activations += half.activationBytes(op, 1);
        QCOMPARE(t2.metrics.peak_memory_bytes[0], half.staticMemory(ops, Optimizer::Adam, 1, plan.bucket_bytes, 0).total() + activations);
        // Sequence parallelism splits the norms' activations too: 4P + 2(3A/2).
        plan.tp = 2;
        plan.sequence_parallel = true;
        QCOMPARE(simulate(lower(plan, g), plan, CostModel(g, c)).metrics.peak_memory_bytes[0], 4 * P + 3 * A);
    }

    // ZeRO over dp 2 of a t = 2 plan, Adam in mixed precision, P the rank's parameters
    // (Rajbhandari et al. 2020): 2P + 2P + 12P/Nd, 2P + 14P/Nd, 16P/Nd (+ 2P gathered for
    // use), beside the gradient buckets in flight and the activations.
    void zeroMemoryOfATensorParallelRank() {
        const int64_t bytes = 1 << 22, A = 1 << 16;
        Graph g = tensorParallelChain(1, 1, 2, bytes, A);
        g.source.precision = Precision::FP16;
        const int64_t P = bytes / 2 / 2;  // the rank's fp16 parameters: half of the layer's
        const Cluster c = exactCluster(1, 4);
        for (int zero = 0; zero <= 3; ++zero) {
            Plan plan = tensorParallelPlan(1, 1, 2, 2, 1, ScheduleKind::OneFOneB);
            plan.optimizer = Optimizer::Adam;
            plan.zero_stage = zero;
            plan.bucket_bytes = 1 << 18;
            const Trace t = simulate(lower(plan, g), plan, CostModel(g, c));
            const int64_t buckets = 2 * plan.bucket_bytes, activations = A + A / 2 + A / 2;
            const int64_t states = t.metrics.peak_memory_bytes[0] - buckets - activations;
            const int64_t expected[] = {16 * P, 2 * P + 2 * P + 12 * P / 2, 2 * P + 14 * P / 2, 16 * P / 2 + 2 * P};
            QCOMPARE(states, expected[zero]);
        }
    }
};

QTEST_GUILESS_MAIN(TestTensorParallel)
#include "test_tensor_parallel.moc"
