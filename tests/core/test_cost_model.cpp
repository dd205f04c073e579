// The cost model's formulas on numbers worked out by hand.
#include <QtTest>

#include "planners/cost/cost_model.h"
#include "planners/model/zoo.h"
#include "synthetic.h"

using namespace hippie;
using namespace hippie::test;

class TestCostModel : public QObject {
    Q_OBJECT
private slots:
    void computeTimeScalesWithSamples() {
        const Graph g = chainGraph(1, 1, 2, 1 << 20, 0, 4);  // costs given for 4 samples
        const Cluster c = exactCluster(1, 1);
        const CostModel cost(g, c);
        QCOMPARE(cost.fwdTime(0, 4, 0), 1.0);
        QCOMPARE(cost.fwdTime(0, 1, 0), 0.25);
        QCOMPARE(cost.bwdTime(0, 2, 0), 1.0);
        QCOMPARE(cost.bwdWeightTime(0, 2, 0), 0.5);  // weighted op: half of backward
        QCOMPARE(cost.bwdInputTime(0, 2, 0), 0.5);
    }

    void profiledTimesWinOverFlops() {
        Graph g = chainGraph(1);
        g.ops[0].fwd_time_s = 0.125;
        const Cluster c = exactCluster(1, 1);
        QCOMPARE(CostModel(g, c).fwdTime(0, 1, 0), 0.125);
        QCOMPARE(CostModel(g, c).bwdTime(0, 1, 0), 2.0);
    }

    // A device's profiled-time scale (fitted by calibration) multiplies profiled times only.
    void profiledTimeScaleScalesProfiledOpsOnly() {
        Graph g = chainGraph(1);
        g.ops[0].fwd_time_s = 0.125;
        Cluster c = exactCluster(1, 1);
        c.nodes[0].device.profiled_time_scale = 3;
        QCOMPARE(CostModel(g, c).fwdTime(0, 2, 0), 0.75);  // 0.125 x 2 samples x 3
        QCOMPARE(CostModel(g, c).bwdTime(0, 1, 0), 2.0);   // from FLOPs: unchanged
    }

    void efficiencyAndPrecisionPickTheRate() {
        Graph g = chainGraph(1);
        Cluster c = exactCluster(1, 1);
        c.nodes[0].device.peak_flops_fp16 = 4 * kFlopsPerSecond;
        c.nodes[0].device.efficiency = 0.5;
        QCOMPARE(CostModel(g, c).fwdTime(0, 1, 0), 2.0);
        g.source.precision = Precision::BF16;
        QCOMPARE(CostModel(g, c).fwdTime(0, 1, 0), 0.5);
    }

    // One op of 1 GFLOP and 100 MB of activation traffic a sample on a device of 1 TFLOP/s
    // that reaches half its rate at 4 GFLOP a kernel, with 10 us a launch:
    // t(b) = max((1e9 b + 4e9) / 1e12, 1e8 b / bandwidth) + 1e-5.
    void computeTimeGrowsSubLinearlyThenLinearlyWithTheBatch() {
        Graph g = chainGraph(1, 1e-3, 2e-3, 0);
        g.ops[0].moved_bytes = 100'000'000;
        Cluster c = exactCluster(1, 1);
        DeviceSpec& d = c.nodes[0].device;
        d.half_rate_flops = 4e9;
        d.launch_overhead_s = 1e-5;
        d.memory_bandwidth_bytes_per_s = 1e11;  // 1e-3 s a sample: below compute
        const CostModel cost(g, c);
        const auto near = [](double a, double b) { return std::abs(a - b) < 1e-12; };
        QVERIFY(near(cost.fwdTime(0, 1, 0), 0.005 + 1e-5));
        QVERIFY(near(cost.fwdTime(0, 2, 0), 0.006 + 1e-5));    // twice the samples, 1.2x the time
        QVERIFY(near(cost.fwdTime(0, 4, 0), 0.008 + 1e-5));
        QVERIFY(near(cost.fwdTime(0, 64, 0), 0.068 + 1e-5));
        QVERIFY(near(cost.fwdTime(0, 128, 0), 0.132 + 1e-5));  // then each sample adds 1/rate
        QVERIFY(cost.fwdTime(0, 2, 0) < 1.5 * cost.fwdTime(0, 1, 0));
        QVERIFY(cost.fwdTime(0, 128, 0) > 1.9 * cost.fwdTime(0, 64, 0));
        // Backward of a weight-free op: one kernel, twice the FLOPs and twice the traffic.
        QVERIFY(near(cost.bwdTime(0, 1, 0), (2e9 + 4e9) / 1e12 + 1e-5));
        // A slow memory makes the op memory bound: 1e8 bytes a sample at 1e10 B/s.
        d.memory_bandwidth_bytes_per_s = 1e10;
        QVERIFY(near(CostModel(g, c).fwdTime(0, 8, 0), 0.08 + 1e-5));
        // Profiled times still win.
        g.ops[0].fwd_time_s = 0.5;
        QCOMPARE(CostModel(g, c).fwdTime(0, 2, 0), 1.0);
    }

    // A convolution runs at conv_efficiency of the matmul rate, forward and backward; other
    // kinds of op do not, and the memory bound and launch are untouched.
    void convolutionsRunAtTheirEfficiency() {
        Graph g = chainGraph(2, 1e-3, 2e-3, 0);
        g.ops[0].kind = "conv2d";
        g.ops[1].kind = "matmul";
        Cluster c = exactCluster(1, 1);
        DeviceSpec& d = c.nodes[0].device;
        d.half_rate_flops = 4e9;
        d.launch_overhead_s = 1e-5;
        d.conv_efficiency = 0.4;
        const CostModel cost(g, c);
        const auto near = [](double a, double b) { return std::abs(a - b) < 1e-12; };
        // 1 GFLOP + 4 GFLOP of half-rate at 0.4 TFLOP/s.
        QVERIFY(near(cost.fwdTime(0, 1, 0), (1e9 + 4e9) / 4e11 + 1e-5));
        QVERIFY(near(cost.bwdTime(0, 1, 0), (2e9 + 4e9) / 4e11 + 1e-5));
        QVERIFY(near(cost.fwdTime(1, 1, 0), (1e9 + 4e9) / 1e12 + 1e-5));
        // A memory-bound convolution stays at the memory bandwidth.
        g.ops[0].moved_bytes = 1'000'000'000;
        d.memory_bandwidth_bytes_per_s = 1e10;
        QVERIFY(near(CostModel(g, c).fwdTime(0, 1, 0), 0.1 + 1e-5));
    }

    // A kind the device measured (DeviceSpec::kernels) moves its bytes at its own rate and
    // pays its own overhead, forward and backward, instead of the memory bandwidth and the
    // launch overhead per kernel; a kind's half-rate size replaces the device's. Kinds
    // without an entry keep the device's figures.
    void measuredKernelsUseTheirOwnRateAndOverhead() {
        Graph g = chainGraph(3, 1e-3, 2e-3, 0);
        g.ops[0].kind = "gelu";
        g.ops[1].kind = "conv2d";
        g.ops[2].kind = "relu";
        for (Op& o : g.ops) {
            o.fwd_flops = 1e6;  // 1 us at 1 TFLOP/s: below every memory term here
            o.bwd_flops = 1e6;
            o.moved_bytes = 1'000'000;
            o.param_bytes = 0;
        }
        g.ops[1].fwd_flops = 1e9;
        g.ops[1].bwd_flops = 2e9;
        g.ops[1].param_bytes = 1000;  // weighted: two backward kernels
        Cluster c = exactCluster(1, 1);
        DeviceSpec& d = c.nodes[0].device;
        d.memory_bandwidth_bytes_per_s = 1e10;
        d.launch_overhead_s = 1e-6;
        d.half_rate_flops = 0;
        d.kernels["gelu"] = KernelTiming{2e9, 5e9, 3e-6, 7e-6, 0};
        d.kernels["conv2d"] = KernelTiming{0, 0, 4e-6, 9e-6, 1e9};
        const CostModel cost(g, c);
        const auto near = [](double a, double b) { return std::abs(a - b) < 1e-15; };
        // GELU: 1 MB forward at 2 GB/s plus 3 us; backward moves 2 MB at 5 GB/s plus 7 us.
        QVERIFY(near(cost.fwdTime(0, 1, 0), 1e6 / 2e9 + 3e-6));
        QVERIFY(near(cost.bwdTime(0, 1, 0), 2e6 / 5e9 + 7e-6));
        // The convolution keeps the device's bandwidth (no rate of its own) and is compute
        // bound at its own half-rate size: (1 GFLOP + 1 GFLOP) / 1 TFLOP/s + 4 us; backward
        // two kernels, (2 + 2 x 1) GFLOP + 9 us.
        QVERIFY(near(cost.fwdTime(1, 1, 0), 2e9 / 1e12 + 4e-6));
        QVERIFY(near(cost.bwdTime(1, 1, 0), 4e9 / 1e12 + 9e-6));
        // ReLU has no entry: the device's bandwidth and one launch per kernel.
        QVERIFY(near(cost.fwdTime(2, 1, 0), 1e6 / 1e10 + 1e-6));
        QVERIFY(near(cost.bwdTime(2, 1, 0), 2e6 / 1e10 + 1e-6));
        // Half the samples: half the bytes, the same overhead.
        QVERIFY(near(cost.fwdTime(0, 0.5, 0), 0.5e6 / 2e9 + 3e-6));
    }

    // The probe's fit inverts the cost model: passes timed by passSeconds' own formula at two
    // sizes give back the kind's rate and overhead; a kind whose large size is compute bound,
    // or that may not have a rate of its own, gets rate 0 and the overhead beyond its FLOPs.
    void kernelPassFitRecoversRateAndOverhead() {
        constexpr double rate = 2.5e9, overhead = 4e-6, flops_per_s = 1e11;
        const auto timed = [&](double bytes, double flops) { return KernelPassTime{bytes, flops, overhead + std::max(flops / flops_per_s, bytes / rate)}; };
        const KernelPassTime small = timed(2048, 1e3), large = timed(8 << 20, 8e6);
        const KernelPassFit fit = fitKernelPass(small, large, flops_per_s, true);
        QVERIFY2(std::abs(fit.bytes_per_s / rate - 1) < 1e-9, qPrintable(QString::number(fit.bytes_per_s)));
        QVERIFY(std::abs(fit.overhead_s - overhead) < 1e-15);
        // Not allowed a rate of its own: the overhead is the small size's time beyond its FLOPs.
        const KernelPassFit no_rate = fitKernelPass(small, large, flops_per_s, false);
        QCOMPARE(no_rate.bytes_per_s, 0.0);
        QVERIFY(std::abs(no_rate.overhead_s - (small.seconds - 1e3 / flops_per_s)) < 1e-15);
        // Compute bound at the large size (its FLOPs take longer than its bytes would): no rate.
        const KernelPassTime heavy = timed(8 << 20, 1e10);
        const KernelPassFit compute_bound = fitKernelPass(small, heavy, flops_per_s, true);
        QCOMPARE(compute_bound.bytes_per_s, 0.0);
        // A large size no slower than the small one (noise) gives no rate either.
        QCOMPARE(fitKernelPass(large, small, flops_per_s, true).bytes_per_s, 0.0);
    }

    // The half-rate size is quoted at the FP16 peak: at a peak 4x lower a kernel fills the
    // device at a quarter of the FLOPs (the same fill time).
    void halfRateScalesWithThePrecisionsPeak() {
        Graph g = chainGraph(1, 1e-3, 2e-3, 0);
        Cluster c = exactCluster(1, 1);
        DeviceSpec& d = c.nodes[0].device;
        d.peak_flops_fp16 = 4 * kFlopsPerSecond;
        d.half_rate_flops = 4e9;
        QCOMPARE(d.halfRateFlops(Precision::FP32), 1e9);
        QVERIFY(std::abs(CostModel(g, c).fwdTime(0, 1, 0) - (1e9 + 1e9) / 1e12) < 1e-15);
    }

    void pointToPoint() {
        const Graph g = chainGraph(1);
        const Cluster c = exactCluster(2, 2, int64_t(1) << 40, 100e9, 1e-6, 10e9);
        const CostModel cost(g, c);
        QCOMPARE(cost.p2pTime(1'000'000, 0, 0), 0.0);
        QVERIFY(std::abs(cost.p2pTime(1'000'000, 0, 1) - (1e-6 + 1e-5)) < 1e-15);
        QVERIFY(std::abs(cost.p2pTime(1'000'000, 1, 2) - (1e-6 + 1e-4)) < 1e-15);
    }

    void ringAllReduceInsideANode() {
        const Graph g = chainGraph(1);
        const Cluster c = exactCluster(1, 4, int64_t(1) << 40, 1e10, 1e-5);
        const std::vector<int> group{0, 1, 2, 3};
        // 2(n-1)/n * B / bw + 2(n-1) * latency = 1.5 * 0.1 + 6e-5
        QVERIFY(std::abs(CostModel(g, c).allReduceTime(1'000'000'000, group) - (0.15 + 6e-5)) < 1e-12);
        QCOMPARE(CostModel(g, c).allReduceTime(1'000'000'000, std::vector<int>{2}), 0.0);
    }

    void hierarchicalAllReduceAcrossNodes() {
        const Graph g = chainGraph(1);
        const Cluster c = exactCluster(2, 4, int64_t(1) << 40, 1e11, 0, 1e10);
        const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
        // Reduce-scatter and all-gather inside: 2 * 3/4 * 1e9 / 1e11; across 2 nodes each
        // local rank all-reduces a quarter: 2 * 1/2 * 2.5e8 / 1e10.
        const double expected = 2 * 0.75 * 1e9 / 1e11 + 2 * 0.5 * 2.5e8 / 1e10;
        QVERIFY(std::abs(CostModel(g, c).allReduceTime(1'000'000'000, group) - expected) < 1e-12);
        // One device per node: a plain ring over the inter-node links.
        const std::vector<int> spread{0, 4};
        QVERIFY(std::abs(CostModel(g, c).allReduceTime(1'000'000'000, spread) - 1e9 / 1e10) < 1e-12);
    }

    // 4 servers of 4 devices. With one port per device the 4 rings across servers (one per
    // local rank) each have a port; with one shared port each ring gets a quarter of it,
    // so the inter-node part takes exactly k = 4 times longer.
    void oneSharedPortMakesTheAllReduceAcrossNodesKTimesSlower() {
        const Graph g = chainGraph(1);
        Cluster per_gpu = exactCluster(4, 4, int64_t(1) << 40, 1e11, 0, 1.25e9);
        for (Node& n : per_gpu.nodes) n.ports = {4, 1.25e9};
        Cluster shared = per_gpu;
        for (Node& n : shared.nodes) n.ports = {1, 1.25e9};
        std::vector<int> all(16);
        for (int i = 0; i < 16; ++i) all[static_cast<size_t>(i)] = i;
        const int64_t bytes = 553'000'000;
        const double local = 2 * 0.75 * 553e6 / 1e11;
        const double across_per_gpu = 2 * 0.75 * (553e6 / 4) / 1.25e9;
        const auto near = [](double a, double b) { return std::abs(a - b) < 1e-9; };
        QVERIFY(near(CostModel(g, per_gpu).allReduceTime(bytes, all), local + across_per_gpu));
        QVERIFY(near(CostModel(g, shared).allReduceTime(bytes, all), local + 4 * across_per_gpu));
        // The shared port alone: 2 (3/4) 553 MB / 1.25 GB/s = 0.6636 s, as the issue works out.
        QVERIFY(near(4 * across_per_gpu, 2 * 0.75 * 553e6 / 1.25e9));
        // Without declared ports each device has its own: the per-GPU figure.
        Cluster undeclared = exactCluster(4, 4, int64_t(1) << 40, 1e11, 0, 1.25e9);
        QVERIFY(near(CostModel(g, undeclared).allReduceTime(bytes, all), local + across_per_gpu));
        // Two groups leaving the same servers at once halve each other's share.
        QVERIFY(near(CostModel(g, per_gpu).allReduceTime(bytes, all, 2), local + 2 * across_per_gpu));
        // A send across servers shares the port with the other sends leaving the server.
        QVERIFY(near(CostModel(g, shared).p2pTime(125'000'000, 0, 4, 4), 0.4));
        QVERIFY(near(CostModel(g, per_gpu).p2pTime(125'000'000, 0, 4, 4), 0.1));
    }

    void staticMemoryIsSixteenBytesAParameterForMixedAdam() {
        Graph g = chainGraph(1, 1, 2, 2'000'000);  // 1M parameters in fp16
        g.source.precision = Precision::FP16;
        const Cluster c = exactCluster(1, 1);
        const std::vector<int> ops{0};
        const StaticMemory m = CostModel(g, c).staticMemory(ops, Optimizer::Adam, 1, 25 << 20, 0);
        QCOMPARE(m.params, int64_t(2'000'000));
        QCOMPARE(m.grads, int64_t(2'000'000));
        QCOMPARE(m.master_params, int64_t(4'000'000));
        QCOMPARE(m.optimizer_state, int64_t(8'000'000));
        QCOMPARE(m.total(), int64_t(16'000'000));
    }

    // ZeRO over N_d = 4 replicas of P = 1M parameters, Adam, mixed precision (Rajbhandari et
    // al. 2020, figure 1): 2P + 2P + 12P/N_d (stage 1), 2P + 14P/N_d (stage 2), 16P/N_d (stage
    // 3, plus the parameters gathered for use), each with the gradient buckets in flight.
    void zeroMemoryFollowsThePaper() {
        Graph g = chainGraph(1, 1, 2, 2'000'000);  // P = 1M parameters in fp16
        g.source.precision = Precision::FP16;
        const Cluster c = exactCluster(1, 4);
        const std::vector<int> ops{0};
        const CostModel cost(g, c);
        const int64_t P = 1'000'000, buckets = 2'000'000;  // two 1 MB buckets of fp16 gradients in flight
        auto states = [&](int zero, int64_t gathered) {
            return cost.staticMemory(ops, Optimizer::Adam, 4, 1'000'000, 0, zero, gathered).total() - buckets;
        };
        QCOMPARE(states(0, 0), 16 * P);
        QCOMPARE(states(1, 0), 2 * P + 2 * P + 12 * P / 4);
        QCOMPARE(states(2, 0), 2 * P + 14 * P / 4);
        QCOMPARE(states(3, 0), 16 * P / 4);
        QCOMPARE(states(3, 2 * P), 16 * P / 4 + 2 * P);  // one layer's fp16 parameters gathered
        const StaticMemory m = cost.staticMemory(ops, Optimizer::Adam, 4, 1'000'000, 0, 2, 0);
        QCOMPARE(m.grads, 2 * P / 4);
        QCOMPARE(m.optimizer_state, 8 * P / 4);
        QCOMPARE(m.master_params, 4 * P / 4);
        // One replica: nothing to shard.
        QCOMPARE(cost.staticMemory(ops, Optimizer::Adam, 1, 1'000'000, 0, 3, 0).total(), 16 * P);
    }

    // With t-way tensor parallelism a rank holds 1/t of the split parameters and all of the
    // replicated ones; ZeRO's formulas then hold for that rank's P: split P_s = 2M and
    // replicated P_r = 1M parameters, t = 2, N_d = 4, so P = 1M + 1M.
    void zeroMemoryWithTensorParallelism() {
        Graph g = chainGraph(2, 1, 2, 2'000'000);
        g.source.precision = Precision::FP16;
        g.ops[0].param_bytes = 4'000'000;  // 2M parameters, split
        g.ops[0].tensor_parallel = TensorParallel::Column;
        const Cluster c = exactCluster(1, 8);
        const std::vector<int> ops{0, 1};
        const CostModel cost(g, c, TensorSplit{2, false});
        QCOMPARE(cost.rankParamBytes(0), int64_t(2'000'000));
        QCOMPARE(cost.rankParamBytes(1), int64_t(2'000'000));
        const int64_t P = 2'000'000, buckets = 2'000'000;
        auto states = [&](int zero) { return cost.staticMemory(ops, Optimizer::Adam, 4, 1'000'000, 0, zero, 0).total() - buckets; };
        QCOMPARE(states(0), 16 * P);
        QCOMPARE(states(1), 2 * P + 2 * P + 12 * P / 4);
        QCOMPARE(states(2), 2 * P + 14 * P / 4);
        QCOMPARE(states(3), 16 * P / 4);
        // Sequence parallelism splits activations, not parameters.
        QCOMPARE(CostModel(g, c, TensorSplit{2, true}).staticMemory(ops, Optimizer::Adam, 1, 1'000'000, 0).total(), 16 * P);
        QCOMPARE(CostModel(g, c).staticMemory(ops, Optimizer::Adam, 1, 1'000'000, 0).total(), int64_t{16} * 3'000'000);
    }

    // One GPT block (s = 128, b = 2, h = 64, fp16) under t = 4 (Megatron-LM, section 3): two
    // all-reduces of s*b*h elements forward (after the attention's output projection and the
    // MLP's second linear) and two backward (into the QKV projection's and the first
    // linear's inputs); sequence parallelism moves the same bytes as reduce-scatter plus
    // all-gather and divides the LayerNorms' activations by t too.
    void tensorParallelBlockTraffic() {
        ModelSpec spec;
        spec.zoo = "gpt2-small";
        spec.batch_size = 2;
        spec.seq_len = 128;
        spec.precision = Precision::FP16;
        spec.overrides = {{"layers", 1}, {"d_model", 64}, {"heads", 4}};
        const Graph g = buildZooModel(spec);
        const Cluster c = exactCluster(1, 4);
        std::vector<int> block;
        for (size_t op = 0; op < g.ops.size(); ++op)
            if (g.ops[op].layer == 1) block.push_back(static_cast<int>(op));
        const int64_t sbh = int64_t{128} * 2 * 64 * 2;  // bytes of one s x b x h fp16 tensor
        for (const bool sp : {false, true}) {
            const CostModel cost(g, c, TensorSplit{4, sp});
            const TensorParallelTraffic t = cost.tensorParallelTraffic(block, 2);
            QCOMPARE(t.forward, (std::vector<int64_t>{sbh, sbh}));
            QCOMPARE(t.backward, (std::vector<int64_t>{sbh, sbh}));
            QCOMPARE(cost.tensorParallelTraffic(block, 1).forward, (std::vector<int64_t>{sbh / 2, sbh / 2}));
            // The per-op table (one pass for all ops) sums to the same.
            const std::vector<OpTensorParallelTraffic> by_op = tensorParallelTrafficByOp(g, TensorSplit{4, sp}, 2);
            OpTensorParallelTraffic sum;
            for (int op : block) {
                const OpTensorParallelTraffic& o = by_op[static_cast<size_t>(op)];
                sum.forward += o.forward;
                sum.backward += o.backward;
                sum.forward_bytes += o.forward_bytes;
                sum.backward_bytes += o.backward_bytes;
            }
            QCOMPARE(sum.forward, 2);
            QCOMPARE(sum.backward, 2);
            QCOMPARE(sum.forward_bytes, 2 * sbh);
            QCOMPARE(sum.backward_bytes, 2 * sbh);
        }
        QVERIFY(CostModel(g, c).tensorParallelTraffic(block, 2).forward.empty());
        const std::vector<int> all{0, 1, 2, 3};
        const CostModel cost(g, c, TensorSplit{4, true});
        QVERIFY(std::abs(cost.reduceScatterTime(sbh, all) + cost.allGatherTime(sbh, all) - cost.allReduceTime(sbh, all)) < 1e-15);
        for (int op : block) {
            const Op& o = g.ops[static_cast<size_t>(op)];
            const bool split = o.tensor_parallel != TensorParallel::Replicated;
            // What backward keeps of the op's output (Op::keptBytes), split as the output is.
            QCOMPARE(CostModel(g, c, TensorSplit{4, false}).activationBytes(op, 2), split ? o.keptBytes() / 4 : o.keptBytes());
            QCOMPARE(CostModel(g, c, TensorSplit{4, true}).activationBytes(op, 2), o.keptBytes() / 4);
            if (o.kind == "layernorm") QCOMPARE(CostModel(g, c, TensorSplit{4, true}).activationBytes(op, 2), sbh / 4);
            // A rank runs 1/t of a split op's FLOPs: compute-bound time falls with them.
            if (split && o.fwd_flops > 0)
                QVERIFY(CostModel(g, c, TensorSplit{4, false}).fwdTime(op, 2, 0) < CostModel(g, c).fwdTime(op, 2, 0));
        }
    }

    // A ring reduce-scatter and a ring all-gather are each half an all-reduce, inside a node
    // and hierarchically across nodes.
    void reduceScatterAndAllGatherAreHalfAnAllReduce() {
        const Graph g = chainGraph(1);
        const Cluster one(exactCluster(1, 4, int64_t(1) << 40, 1e10, 1e-5));
        const std::vector<int> group{0, 1, 2, 3};
        // (n-1)/n * B / bw + (n-1) * latency = 0.75 * 0.1 + 3e-5
        QVERIFY(std::abs(CostModel(g, one).reduceScatterTime(1'000'000'000, group) - (0.075 + 3e-5)) < 1e-12);
        QVERIFY(std::abs(CostModel(g, one).allGatherTime(1'000'000'000, group) - (0.075 + 3e-5)) < 1e-12);
        const Cluster two = exactCluster(2, 4, int64_t(1) << 40, 1e11, 0, 1e10);
        const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
        const double half = 0.75 * 1e9 / 1e11 + 0.5 * 2.5e8 / 1e10;
        const CostModel cost(g, two);
        QVERIFY(std::abs(cost.reduceScatterTime(1'000'000'000, all) - half) < 1e-12);
        QVERIFY(std::abs(cost.allGatherTime(1'000'000'000, all) - half) < 1e-12);
        QVERIFY(std::abs(cost.reduceScatterTime(1'000'000'000, all) + cost.allGatherTime(1'000'000'000, all) -
                         cost.allReduceTime(1'000'000'000, all)) < 1e-12);
    }

    void staticMemoryFp32() {
        const Graph g = chainGraph(1, 1, 2, 4'000'000);  // 1M parameters in fp32
        const Cluster c = exactCluster(1, 1);
        const std::vector<int> ops{0};
        const CostModel cost(g, c);
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGD, 1, 25 << 20, 0).total(), int64_t(8'000'000));
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGDMomentum, 1, 25 << 20, 0).total(), int64_t(12'000'000));
        QCOMPARE(cost.staticMemory(ops, Optimizer::Adam, 1, 25 << 20, 0).total(), int64_t(16'000'000));
        // Data parallelism adds gradient buckets in flight, never more than the gradients.
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGD, 2, 1'000'000, 0).comm_buffers, int64_t(2'000'000));
        QCOMPARE(cost.staticMemory(ops, Optimizer::SGD, 2, 25 << 20, 0).comm_buffers, int64_t(4'000'000));
    }
};

QTEST_GUILESS_MAIN(TestCostModel)
#include "test_cost_model.moc"
