// The pipeline + data-parallel baselines: PipeDream's program on chains whose best
// configuration is known by hand, DeepSpeed's and Megatron's partitions, DDP's memory limits,
// torchgpipe's balance, and on zoo models: every plan lowers to a valid Program and fits
// memory when the planner says so, infeasible results say why, and cancellation is prompt.
#include <QtTest>

#include <chrono>
#include <limits>

#include "planners/algorithms/device_mapping.h"
#include "planners/algorithms/layer_costs.h"
#include "planners/algorithms/partition.h"
#include "planners/algorithms/pipeline_search.h"
#include "planners/algorithms/registry.h"
#include "planners/algorithms/tensor_pipeline.h"
#include "planners/cost/cost_model.h"
#include "planners/schedule/plan_json.h"
#include "error_of.h"
#include "planner_fixtures.h"

using namespace hippie;
using namespace hippie::test;

namespace {

const std::vector<std::string> kBaselines = {"data-parallel", "equal-params", "uniform", "pipedream", "gpipe-balance", "zero",
                                             "megatron", "deepspeed-3d"};

PlannerResult run(const std::string& planner, const Problem& problem, double budget_s = 60) {
    PlanContext context(budget_s);
    return makePlanner(planner)->plan(problem, context);
}

using Ranges = std::vector<std::pair<int, int>>;

Ranges ranges(const std::vector<StageRange>& stages) {
    Ranges out;
    for (const StageRange& s : stages) out.emplace_back(s.first_layer, s.last_layer);
    return out;
}
Ranges ranges(const Plan& p) { return ranges(p.stages); }

// Six layers of 1 s forward: params p p p p 2p 2p (p = 1 GiB, fp32, SGD: weights + gradients)
// on two 12 GiB devices. The whole model needs 16 GiB: only a two-stage pipeline fits.
Problem twoStageMemoryProblem() {
    const std::vector<int64_t> params{kGiB, kGiB, kGiB, kGiB, 2 * kGiB, 2 * kGiB};
    return makeProblem(layeredChain(std::vector<double>(6, 1.0), params, 1 << 10), exactCluster(1, 2, 12 * kGiB), 4);
}

// Four layers of 1 GiB fp32 weights (P = 1 Gi parameters), no activations, Adam (16 bytes a
// parameter: weights 4, gradients 4, exp_avg and exp_avg_sq 8), four devices of `memory`.
Problem shardingProblem(int64_t memory) {
    const std::vector<int64_t> params(4, kGiB);
    return makeProblem(layeredChain(std::vector<double>(4, 1.0), params, 0), exactCluster(1, 4, memory), 4, Optimizer::Adam);
}

// Four Megatron layers (tensorParallelChain: norm, column and row linears) of 1 GiB fp32
// weights each (P = 1 Gi parameters in all), Adam, 1 MiB activations, 8 samples, on 2 nodes of
// 4 devices of `memory`. Per device with ZeRO-1 over d replicas: weights and gradients 2 x
// 4 GiB / (t p) plus Adam's 8 GiB / (t p d): t 1 (d 8) 9 GiB, t 2 (d 4) 5 GiB, t 4 (d 2)
// 3 GiB, t 4 x p 2 (d 1, no ZeRO) 2 GiB; plus two 25 MiB buckets when d > 1.
Problem tensorParallelProblem(int64_t memory) {
    return makeProblem(tensorParallelChain(4, 1, 2, kGiB, 1 << 20), exactCluster(2, 4, memory), 8, Optimizer::Adam);
}

int layers(const Problem& p) { return p.graph.layerCount(); }

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const std::string& l : lines) s += l + "\n";
    return s;
}

}  // namespace

class TestBaselines : public QObject {
    Q_OBJECT
private slots:
    // The pipeline planners' search over micro-batch counts rests on these: exact for small
    // numbers, and at 2^31 - 1 (a prime) quick and without counting past INT_MAX (it divided by
    // zero there: SIGFPE in compare --global-batch 2147483647).
    void divisorsAndMicroBatchCounts() {
        QCOMPARE(hippie::divisorsOf(36), (std::vector<int>{1, 2, 3, 4, 6, 9, 12, 18, 36}));
        QCOMPARE(hippie::divisorsOf(49), (std::vector<int>{1, 7, 49}));
        QCOMPARE(hippie::divisorsOf(1), std::vector<int>{1});
        QCOMPARE(hippie::divisorsOf(2147483647), (std::vector<int>{1, 2147483647}));
        QCOMPARE(hippie::divisorsOf(1 << 30).size(), size_t{31});
        // A plan holds at most kMaxMicroBatches (65,536): one replica of 2^20 samples may split
        // into 1, 2, 4, ... 2^16 micro-batches, not 2^17 .. 2^20.
        Problem p = twoStageMemoryProblem();
        p.global_batch = 1 << 20;
        std::vector<int> powers;
        for (int m = 1; m <= (1 << 16); m *= 2) powers.push_back(m);
        QCOMPARE(hippie::microBatchCounts(p, 1), powers);
    }

    void registryListsTheBaselines() {
        for (const std::string& name : kBaselines) {
            const PlannerInfo* info = findPlanner(name);
            QVERIFY2(info, name.c_str());
            QCOMPARE(info->family, std::string("hybrid"));
            QVERIFY(!info->description.empty());
            QCOMPARE(makePlanner(name)->name(), name);
        }
    }

    // Per sample, forward + backward of the layers take 1, 2, 3 and 4 s; 4 samples on two
    // devices: [4, 8, 12, 16] s. Split after layer 2: max(24, 16) = 24 s. Replicating the
    // whole model: 40 / 2 = 20 s plus the all-reduce of its weights: 4 x 2 GiB over a 1 GB/s
    // link, 8.6 s, so 28.6 s. PipeDream splits [0-2 | 3].
    void pipeDreamSplitsWhenWeightsAreExpensiveToSynchronise() {
        const std::vector<double> fwd{1.0 / 3, 2.0 / 3, 1.0, 4.0 / 3};
        const Problem problem = makeProblem(layeredChain(fwd, std::vector<int64_t>(4, 2 * kGiB), 1 << 10),
                                            exactCluster(1, 2, int64_t(1) << 40, 1e9), 4);
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 2}, {3, 3}}));
        QCOMPARE(r.plan.dp, 1);
        QCOMPARE(r.plan.schedule, ScheduleKind::Hippie);  // 1F1B with the all-reduce overlapped, as the other baselines
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    // The chain above with 8 GiB of weights a layer and 16 samples: replicating the model
    // costs 80 s and a 34 s all-reduce, the [0-2 | 3] pipeline 96 s. The memory constraint
    // assumes micro-batches of 16 / (4 x 2) = 2 samples, 8 micro-batches, which fit; on this
    // cluster (compute linear in samples) 16 of one sample shrink the pipeline's fill and
    // drain: swept under the throughput objective, the plan takes 16 (it used to stop at the
    // first count that fits, 8).
    void pipeDreamSweepsItsMicroBatchCount() {
        const std::vector<double> fwd{1.0 / 3, 2.0 / 3, 1.0, 4.0 / 3};
        Problem problem = makeProblem(layeredChain(fwd, std::vector<int64_t>(4, 8 * kGiB), 1 << 10),
                                      exactCluster(1, 2, int64_t(1) << 40, 1e9), 16);
        problem.objective = Objective::Throughput;
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 2}, {3, 3}}));
        QCOMPARE(r.plan.micro_batches, 16);
        QVERIFY2(contains(joined(r.log), ", m 8,"), joined(r.log).c_str());
        Plan fewer = r.plan;
        fewer.micro_batches = 8;
        QVERIFY(r.metrics.throughput_samples_per_s > evaluate(problem, fewer).throughput_samples_per_s);
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    // The same chain with 1 KiB of weights: replication costs 20 s and nothing else, less
    // than the 24 s of the best split: PipeDream replicates the whole model (data parallel).
    void pipeDreamReplicatesWhenWeightsAreCheap() {
        const std::vector<double> fwd{1.0 / 3, 2.0 / 3, 1.0, 4.0 / 3};
        const Problem problem = makeProblem(layeredChain(fwd, std::vector<int64_t>(4, 1 << 10), 1 << 10),
                                            exactCluster(1, 2, int64_t(1) << 40, 1e9), 4);
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 3}}));
        QCOMPARE(r.plan.dp, 2);
    }

    // Three devices; per sample the layers take 2 s and 1 s, 12 samples: [24, 12] s. Only
    // layer 1 has weights, 1e9 bytes on a 1 GB/s link. PipeDream's optimum replicates layer 0
    // twice and layer 1 once: max(24 / 2, 12) = 12 s in the program, 14 s simulated (the 2-1
    // plan below: the pipeline fills and drains). The best uniform replication, the whole
    // model on three devices, takes 36 / 3 s plus the all-reduce, 2 x 2/3 x 1 s = 13.3 s:
    // simulated, uniform is the better, and the plan.
    void pipeDreamKeepsUniformWhenItSimulatesBetter() {
        const Problem problem = makeProblem(layeredChain({2.0 / 3, 1.0 / 3}, {0, 1'000'000'000}, 1 << 10),
                                            exactCluster(1, 3, int64_t(1) << 40, 1e9), 12);
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        const std::string log = joined(r.log);
        QVERIFY2(contains(log, "PipeDream's optimum: 0-0 x2 | 1-1 x1"), log.c_str());
        QVERIFY2(contains(log, "restricted to uniform replication, the best is 0-1 x3"), log.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 1}}));
        QCOMPARE(r.plan.dp, 3);
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    // The chain above with 1e10 bytes of weights in layer 1: uniform replication now pays
    // 13.3 s for the all-reduce alone (25.3 s), and PipeDream's optimum is the plan: layer 0 on
    // two devices, layer 1 on one, 12 micro-batches of one sample round-robin. Layer 1's device
    // runs them back to back (1 s each) from the first forward on, 2/3 s, to 12.67 s; the
    // backward of micro-batch 11 on its layer-0 replica (4/3 s) ends at 14 s.
    void pipeDreamPlansPerStageReplication() {
        const Problem problem = makeProblem(layeredChain({2.0 / 3, 1.0 / 3}, {0, 10'000'000'000}, 1 << 10),
                                            exactCluster(1, 3, int64_t(1) << 40, 1e9), 12);
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 0}, {1, 1}}));
        QCOMPARE(r.plan.stage_replicas, (std::vector<int>{2, 1}));
        QCOMPARE(r.plan.dp, 2);
        QCOMPARE(r.plan.micro_batches, 6);
        QCOMPARE(r.plan.device_map, (std::vector<std::vector<int>>{{0, 1}, {2}}));
        QVERIFY2(std::abs(r.metrics.iteration_time_s - 14.0) < 1e-3, std::to_string(r.metrics.iteration_time_s).c_str());
        QVERIFY2(contains(joined(r.log), "per-stage replication is the better"), joined(r.log).c_str());
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    // The same plan with 24 samples: the memory constraint assumes micro-batches of 2
    // samples, 6 per replica of the widest stage; swept under the throughput objective the
    // per-stage plan takes 12 of one sample, which shorten the fill and drain (it used to
    // stop at 6).
    void pipeDreamSweepsPerStageReplication() {
        Problem problem = makeProblem(layeredChain({2.0 / 3, 1.0 / 3}, {0, 10'000'000'000}, 1 << 10),
                                      exactCluster(1, 3, int64_t(1) << 40, 1e9), 24);
        problem.objective = Objective::Throughput;
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(r.plan.stage_replicas, (std::vector<int>{2, 1}));
        QCOMPARE(r.plan.micro_batches, 12);
        QVERIFY2(contains(joined(r.log), "(2,1), m 6,"), joined(r.log).c_str());
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    // The same chain and devices with 9 samples: no count of equal micro-batches goes
    // round-robin over the optimum's 2 and 1 replicas (their multiple, 2, does not divide 9),
    // so the program runs again with replica counts that divide 9, and the plan is built from
    // that optimum: the whole model on the three devices.
    void pipeDreamKeepsReplicaCountsThatDealTheBatch() {
        const Problem problem = makeProblem(layeredChain({2.0 / 3, 1.0 / 3}, {0, 10'000'000'000}, 1 << 10),
                                            exactCluster(1, 3, int64_t(1) << 40, 1e9), 9);
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        const std::string log = joined(r.log);
        QVERIFY2(contains(log, "PipeDream's optimum: 0-0 x2 | 1-1 x1"), log.c_str());
        QVERIFY2(contains(log, "its replicas do not divide the global batch of 9"), log.c_str());
        QVERIFY(!r.plan.perStageReplication());
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    // Two nodes of two GPUs; 4 layers of 1 s per sample, 8 samples (8 s a layer); 1e8 bytes
    // of weights and of activations per sample and layer. Inside a node (1 TB/s) a pipeline
    // [0-1 | 2-3] takes max(16, 16) = 16 s, slightly less than replicating (16 s plus an
    // all-reduce). Across nodes (100 MB/s) a pipeline would move 2 x 8 x 1e8 bytes over the
    // cut, 16 s, while replicating the node's pipeline on both nodes takes 16 / 2 = 8 s plus
    // each GPU's share (2e8 bytes) all-reduced across nodes, 2 s: 10 s. So: pipelines inside
    // nodes, replicated across nodes.
    void pipeDreamIsHierarchical() {
        const std::vector<double> fwd(4, 1.0 / 3);
        const Cluster cluster = exactCluster(2, 2, int64_t(1) << 40, 1e12, 0, 1e8);
        const Problem problem = makeProblem(layeredChain(fwd, std::vector<int64_t>(4, 100'000'000), 100'000'000), cluster, 8);
        const PlannerResult r = run("pipedream", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 1}, {2, 3}}));
        QCOMPARE(r.plan.dp, 2);
        for (int rep = 0; rep < 2; ++rep)  // each pipeline inside one node
            QVERIFY(cluster.sameNode(r.plan.device_map[0][static_cast<size_t>(rep)], r.plan.device_map[1][static_cast<size_t>(rep)]));
        QVERIFY(contains(joined(r.log), "PipeDream's optimum: 0-1 x2 | 2-3 x2"));
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    void equalParamsSplitsParametersEqually() {
        const Problem problem = twoStageMemoryProblem();
        const PlannerResult r = run("equal-params", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 3}, {4, 5}}));  // 4 GiB | 4 GiB
        QCOMPARE(r.plan.dp, 1);
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    void uniformSplitsLayersEqually() {
        const Problem problem = twoStageMemoryProblem();
        const PlannerResult r = run("uniform", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(ranges(r.plan), (Ranges{{0, 2}, {3, 5}}));  // 3 GiB | 5 GiB of weights
        QCOMPARE(r.plan.dp, 1);
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    void shallowestPipelineThatFitsIsChosen() {
        // With 20 GiB devices the whole model fits: no pipeline.
        Problem problem = twoStageMemoryProblem();
        problem.cluster = exactCluster(1, 2, 20 * kGiB);
        const PlannerResult r = run("uniform", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(r.plan.pipelineDepth(), 1);
        QCOMPARE(r.plan.dp, 2);
    }

    // Four layers of three ops (outputs of 0.5 GiB a sample each), two samples on two devices.
    // Without recomputation every plan stashes 6 GiB on some device (one sample's 12 ops, or
    // stage 0's two micro-batches of 6 ops); recomputing every layer a device keeps the layers'
    // outputs (their checkpoints, 0.5 GiB each) and rebuilds one layer (1.5 GiB) at a time:
    // 3.5 GiB.
    void recomputationOnlyWhenNothingElseFits() {
        const Graph g = tensorParallelChain(4, 1, 2, 1 << 20, kGiB / 2);
        const PlannerResult tight = run("uniform", makeProblem(g, exactCluster(1, 2, kGiB * 9 / 2), 2));
        QVERIFY2(tight.feasible, (tight.reason + "\n" + joined(tight.log)).c_str());
        QCOMPARE(tight.plan.recompute_layers, (std::vector<int>{0, 1, 2, 3}));
        QVERIFY(contains(joined(tight.log), "recomputed"));
        const PlannerResult roomy = run("uniform", makeProblem(g, exactCluster(1, 2, 8 * kGiB), 2));
        QVERIFY2(roomy.feasible, roomy.reason.c_str());
        QVERIFY(roomy.plan.recompute_layers.empty());
    }

    // The Megatron-style baselines try tensor parallelism first, up to a node's devices the
    // model splits by, then pipeline stages of that degree: gpt2-small's 12 heads cap it at 4 on
    // 8-GPU nodes; a model without split ops gets pipelines only.
    void modelParallelSizesInMegatronsOrder() {
        using Order = std::vector<std::pair<int, int>>;
        auto order = [](const Problem& p) {
            Order out;
            for (const ModelParallelShape& s : modelParallelOrder(p)) out.emplace_back(s.tp, s.pp);
            return out;
        };
        const Problem gpt = zooProblem("gpt2-small", "dgx-a100-2x8", 64);
        QCOMPARE(nodeTensorParallelDegree(gpt), 4);
        QCOMPARE(order(gpt), (Order{{1, 1}, {2, 1}, {4, 1}, {4, 2}, {4, 4}}));
        const Problem chain = twoStageMemoryProblem();  // 6 layers, 2 devices, nothing split
        QCOMPARE(nodeTensorParallelDegree(chain), 1);
        QCOMPARE(order(chain), (Order{{1, 1}, {1, 2}}));
        QCOMPARE(nodeTensorParallelDegree(tensorParallelProblem(kGiB)), 4);
    }

    // tensorParallelProblem: on 4 GiB devices t 1 and t 2 do not fit and t 4 over 2 replicas
    // does: both baselines take it (megatron with sequence parallelism, ZeRO-1 over the two
    // replicas, one stage: the hippie schedule's overlapped all-reduce).
    void tensorParallelBaselinesTakeTheSmallestSizeThatFits() {
        const Problem problem = tensorParallelProblem(4 * kGiB);
        for (const std::string& name : {std::string("megatron"), std::string("deepspeed-3d")}) {
            const PlannerResult r = run(name, problem);
            QVERIFY2(r.feasible, (name + ": " + r.reason + "\n" + joined(r.log)).c_str());
            QCOMPARE(r.plan.tp, 4);
            QCOMPARE(r.plan.sequence_parallel, name == "megatron");
            QCOMPARE(r.plan.pipelineDepth(), 1);
            QCOMPARE(r.plan.dp, 2);
            QCOMPARE(r.plan.zero_stage, 1);
            QVERIFY(r.plan.recompute_layers.empty());
            QCOMPARE(r.plan.schedule, name == "megatron" ? ScheduleKind::Hippie : ScheduleKind::OneFOneB);
            QCOMPARE(checkFeasiblePlan(problem, r), std::string());
            QVERIFY2(contains(joined(r.log), "pp 1 x dp 4 x tp 2"), joined(r.log).c_str());  // tried, did not fit
        }
    }

    // On 2.5 GiB devices only t 4 x p 2 fits (2 GiB): megatron runs it interleaved, two chunks
    // a device of one layer each (equal layers); deepspeed-3d runs 1F1B with its equal-parameter
    // stages of two layers.
    void tensorParallelBaselinesAddStagesAfterANode() {
        const Problem problem = tensorParallelProblem(5 * kGiB / 2);
        const PlannerResult m = run("megatron", problem);
        QVERIFY2(m.feasible, (m.reason + "\n" + joined(m.log)).c_str());
        QCOMPARE(m.plan.tp, 4);
        QCOMPARE(m.plan.pipelineDepth(), 2);
        QCOMPARE(m.plan.dp, 1);
        QCOMPARE(m.plan.zero_stage, 0);
        QCOMPARE(m.plan.schedule, ScheduleKind::Interleaved);
        QCOMPARE(m.plan.virtual_stages, 2);
        QCOMPARE(ranges(m.plan), (Ranges{{0, 0}, {1, 1}, {2, 2}, {3, 3}}));
        QCOMPARE(m.plan.micro_batches % 2, 0);
        QCOMPARE(checkFeasiblePlan(problem, m), std::string());
        const PlannerResult d = run("deepspeed-3d", problem);
        QVERIFY2(d.feasible, (d.reason + "\n" + joined(d.log)).c_str());
        QCOMPARE(d.plan.tp, 4);
        QVERIFY(!d.plan.sequence_parallel);
        QCOMPARE(d.plan.schedule, ScheduleKind::OneFOneB);
        QCOMPARE(ranges(d.plan), (Ranges{{0, 1}, {2, 3}}));
        QCOMPARE(checkFeasiblePlan(problem, d), std::string());
    }

    void dataParallelIsInfeasibleWhenTheModelDoesNotFit() {
        const PlannerResult r = run("data-parallel", twoStageMemoryProblem());
        QVERIFY(!r.feasible);
        QVERIFY2(contains(r.reason, "memory") && contains(r.reason, "16.0 GiB") && contains(r.reason, "12.0 GiB"), r.reason.c_str());
    }

    // The predicted peak of pure data parallelism over 4 replicas under each ZeRO stage, from
    // the formulas (fp32 Adam, 4 GiB of weights): 16 GiB unsharded; stage 1: weights 4 +
    // gradients 4 + states 8 / 4 = 10 GiB; stage 2: 4 + (4 + 8) / 4 = 7 GiB; stage 3: (4 + 4 +
    // 8) / 4 + two 1 GiB layers gathered at once (one in use, the next prefetched) = 6 GiB;
    // each plus two 25 MiB gradient buckets in flight.
    void zeroMemoryPerStageIsExact() {
        const Problem problem = shardingProblem(64 * kGiB);
        Plan plan = basePlan(problem, "test");
        plan.stages = {{0, 3}};
        plan.dp = 4;
        plan.micro_batches = 1;
        plan.schedule = ScheduleKind::Hippie;
        const int64_t buckets = 2 * (int64_t(25) << 20);
        const std::vector<int64_t> expected{16 * kGiB, 10 * kGiB, 7 * kGiB, 6 * kGiB};
        for (int zero = 0; zero <= 3; ++zero) {
            plan.zero_stage = zero;
            QCOMPARE(evaluate(problem, plan).max_peak_memory_bytes, expected[static_cast<size_t>(zero)] + buckets);
        }
    }

    // `zero` takes the lowest stage that fits: none needed on 20 GiB devices, stage 1 on 12
    // GiB (16 GiB unsharded does not fit), stage 2 on 9 GiB (stage 1's 10 GiB does not), and
    // nothing on 6 GiB (stage 2 needs 7, stage 3 8).
    void zeroPicksTheLowestStageThatFits() {
        const std::vector<std::pair<int64_t, int>> cases{{20 * kGiB, 0}, {12 * kGiB, 1}, {9 * kGiB, 2}};
        for (const auto& [memory, stage] : cases) {
            const Problem problem = shardingProblem(memory);
            const PlannerResult r = run("zero", problem);
            QVERIFY2(r.feasible, r.reason.c_str());
            QCOMPARE(r.plan.zero_stage, stage);
            QCOMPARE(r.plan.dp, 4);
            QCOMPARE(r.plan.pipelineDepth(), 1);
            QCOMPARE(checkFeasiblePlan(problem, r), std::string());
            QVERIFY2(contains(joined(r.log), "ZeRO stage " + std::to_string(stage) + " is the lowest that fits"), joined(r.log).c_str());
        }
        const PlannerResult none = run("zero", shardingProblem(6 * kGiB));
        QVERIFY(!none.feasible);
        QVERIFY2(contains(none.reason, "ZeRO stage 3"), none.reason.c_str());
    }

    // The runtime's reserve (DeviceSpec::reserved_bytes) is no room for model states: 20 GiB
    // devices with 11 GiB reserved take the stage 9 GiB devices take, and data parallelism
    // says what is left.
    void baselinesCountTheRuntimesReserve() {
        Problem problem = shardingProblem(20 * kGiB);
        for (hippie::Node& n : problem.cluster.nodes) n.device.reserved_bytes = 11 * kGiB;
        const PlannerResult r = run("zero", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(r.plan.zero_stage, 2);
        const PlannerResult dp = run("data-parallel", problem);
        QVERIFY(!dp.feasible);
        QVERIFY2(contains(dp.reason, "9.0 GiB"), dp.reason.c_str());
    }

    // Data parallelism sweeps its micro-batch count (gradient accumulation) under the
    // problem's objective: of the counts whose activations fit, the one the objective ranks
    // first, checked against every count simulated here.
    void dataParallelSweepsMicroBatchesUnderTheObjective() {
        // 256 MiB of activations per sample and layer: 8 samples a replica need 8 GiB at once.
        Problem problem = makeProblem(chainGraph(4, 1, 2, 1 << 20, int64_t(256) << 20), exactCluster(1, 2, 3 * kGiB), 16);
        for (Objective o : {Objective::MemoryEfficiency, Objective::Throughput, Objective::MemoryEfficiencyWithThroughputFloor}) {
            problem.objective = o;
            const PlannerResult r = run("data-parallel", problem);
            QVERIFY2(r.feasible, r.reason.c_str());
            QCOMPARE(r.plan.dp, 2);
            QCOMPARE(r.plan.pipelineDepth(), 1);
            QCOMPARE(r.plan.schedule, ScheduleKind::Hippie);
            QCOMPARE(checkFeasiblePlan(problem, r), std::string());
            double best_throughput = 0;
            std::vector<TraceMetrics> fits;
            for (int m : {1, 2, 4, 8}) {
                Plan p = r.plan;
                p.micro_batches = m;
                const TraceMetrics t = evaluate(problem, p);
                if (t.fits_memory) fits.push_back(t);
                if (t.fits_memory) best_throughput = std::max(best_throughput, t.throughput_samples_per_s);
            }
            QVERIFY(!fits.empty());
            // The fastest plan of its sweep, whichever it chose: a comparison holds every
            // planner to the floor of the fastest plan any of them simulated.
            QCOMPARE(r.fastest_throughput, best_throughput);
            for (const TraceMetrics& t : fits) {
                if (o == Objective::Throughput) QVERIFY(r.metrics.throughput_samples_per_s >= t.throughput_samples_per_s);
                else if (o == Objective::MemoryEfficiency || t.throughput_samples_per_s >= 0.9 * best_throughput)
                    QVERIFY(r.metrics.memory_efficiency >= t.memory_efficiency);
            }
        }
        // 8 GiB of activations with the replica's 8 samples in one micro-batch: that does not fit.
        problem.objective = Objective::Throughput;
        Plan one = run("data-parallel", problem).plan;
        one.micro_batches = 1;
        QVERIFY(!evaluate(problem, one).fits_memory);
    }

    void gpipeBalanceUsesTorchgpipesBlockPartition() {
        // The last layer is 5x slower; weights and gradients of the whole model, 12 GiB, do not
        // fit a 10 GiB device: two stages.
        const std::vector<double> fwd{1, 1, 1, 1, 1, 5};
        const Problem problem = makeProblem(layeredChain(fwd, std::vector<int64_t>(6, kGiB), 1 << 10), exactCluster(1, 2, 10 * kGiB), 4);
        const PlannerResult r = run("gpipe-balance", problem);
        QVERIFY2(r.feasible, r.reason.c_str());
        QCOMPARE(r.plan.schedule, ScheduleKind::GPipe);
        QCOMPARE(r.plan.recompute_layers.size(), size_t(6));
        const LayerCosts costs(problem);
        QCOMPARE(ranges(r.plan), ranges(blockPartition(costs.computePerLayer(1.0), 2)));
        QVERIFY(contains(joined(r.log), "balance_by_time") && contains(joined(r.log), "balance_by_size"));
        QCOMPARE(checkFeasiblePlan(problem, r), std::string());
    }

    // gpipeStashFloors, on which the baselines hippie seeds from skip GPipe plans unsimulated,
    // is under the simulated peak of every device of each stage, recomputing or not.
    void gpipeStashFloorIsUnderTheSimulatedPeak() {
        const Problem problem = zooProblem("gpt3-1.3b", "dgx-a100-2x8", 256);
        const CostModel cost(problem.graph, problem.cluster);
        struct Shape {
            int pp, dp, m;
            bool recompute;
        };
        double closest = 0;  // the largest floor / peak
        for (const Shape& sh : {Shape{2, 8, 4, false}, Shape{2, 8, 32, true}, Shape{4, 4, 16, false}, Shape{4, 2, 64, true},
                                Shape{8, 2, 16, true}, Shape{16, 1, 128, true}, Shape{16, 1, 8, false}}) {
            Plan plan = basePlan(problem, "test");
            plan.schedule = ScheduleKind::GPipe;
            plan.dp = sh.dp;
            plan.micro_batches = sh.m;
            const int layers = problem.graph.layerCount();
            for (int s = 0; s < sh.pp; ++s) plan.stages.push_back({s * layers / sh.pp, (s + 1) * layers / sh.pp - 1});
            if (sh.recompute) plan.recompute_layers = allLayers(problem);
            plan.device_map = mapDevices(problem, plan);
            const std::optional<std::vector<int64_t>> floors = gpipeStashFloors(problem, plan, cost);
            QVERIFY(floors && floors->size() == plan.stages.size());
            const Trace t = simulateWithEvents(problem, plan);
            for (size_t s = 0; s < plan.stages.size(); ++s)
                for (int d : plan.device_map[s]) {
                    const auto stream = static_cast<size_t>(std::find(t.devices.begin(), t.devices.end(), d) - t.devices.begin());
                    QVERIFY(stream < t.devices.size());
                    const int64_t peak = t.metrics.peak_memory_bytes[stream];
                    QVERIFY2((*floors)[s] > 0 && (*floors)[s] <= peak,
                             (describePlan(plan) + ": stage " + std::to_string(s) + " floor " + std::to_string((*floors)[s]) + " peak " +
                              std::to_string(peak)).c_str());
                    closest = std::max(closest, static_cast<double>((*floors)[s]) / static_cast<double>(peak));
                }
        }
        QVERIFY2(closest > 0.6, std::to_string(closest).c_str());  // a floor, not a guess far below (0.74 when written)
        // Outside what the argument covers, no floor.
        Plan zero = basePlan(problem, "test");
        zero.schedule = ScheduleKind::GPipe;
        zero.dp = 8;
        zero.micro_batches = 4;
        zero.zero_stage = 1;
        zero.stages = {{0, layers(problem) / 2 - 1}, {layers(problem) / 2, layers(problem) - 1}};
        zero.device_map = mapDevices(problem, zero);
        QVERIFY(!gpipeStashFloors(problem, zero, cost));
    }

    // gpipe-balance where only plans that fit matter (as hippie runs it) skips plans on the
    // floor and chooses the same plan, with the same metrics, as when it simulates them all.
    void gpipeBalanceSkipsOnlyPlansThatDoNotFit() {
        struct Case {
            const char* model;
            const char* cluster;
            int batch;
        };
        int skipped = 0, skipped_and_found = 0;
        // fp32, as `hippie-plan compare` plans by default: GPipe's stashes outgrow the devices.
        for (const Case& c : {Case{"gpt3-13b", "dgx-a100-4x8", 1024}, Case{"gpt3-13b", "dgx-h100-2x8", 1024}, Case{"gpt3-1.3b", "v100-4x4", 1024},
                              Case{"gpt3-1.3b", "v100-4x4", 8192}}) {
            ModelSpec spec;
            spec.zoo = c.model;
            spec.batch_size = 1;
            spec.precision = Precision::FP32;
            const Problem problem = makeProblem(buildZooModel(spec), buildClusterPreset(c.cluster), c.batch, Optimizer::Adam);
            PlanContext all(60), only_fits(60);
            only_fits.setOnlyFitsMatter(true);
            const PlannerResult a = makePlanner("gpipe-balance")->plan(problem, all);
            const PlannerResult b = makePlanner("gpipe-balance")->plan(problem, only_fits);
            const std::string name = std::string(c.model) + " " + c.cluster + " " + std::to_string(c.batch);
            QVERIFY2(!contains(joined(a.log), "not simulated"), name.c_str());
            QCOMPARE(b.feasible, a.feasible);
            QCOMPARE(planToJson(b.plan).dump(), planToJson(a.plan).dump());
            QCOMPARE(b.metrics.throughput_samples_per_s, a.metrics.throughput_samples_per_s);
            QCOMPARE(b.metrics.max_peak_memory_bytes, a.metrics.max_peak_memory_bytes);
            QCOMPARE(b.metrics.peak_memory_bytes, a.metrics.peak_memory_bytes);
            QCOMPARE(b.fastest_throughput, a.fastest_throughput);
            if (contains(joined(b.log), "not simulated")) ++skipped;
            if (a.feasible && contains(joined(b.log), "not simulated")) ++skipped_and_found;
            qInfo("%s: %s, %s", name.c_str(), a.feasible ? "feasible" : "infeasible",
                  contains(joined(b.log), "not simulated") ? "plans skipped" : "none skipped");
        }
        qInfo("skipped in %d problems, %d of them feasible", skipped, skipped_and_found);
        QVERIFY(skipped > 0);  // the skipping is exercised
    }

    void infeasibleWhenNothingFits() {
        Problem problem = twoStageMemoryProblem();
        problem.cluster = exactCluster(1, 2, 2 * kGiB);
        for (const std::string& name : kBaselines) {
            const PlannerResult r = run(name, problem);
            QVERIFY2(!r.feasible, name.c_str());
            QVERIFY2(contains(r.reason, "GiB"), (name + ": " + r.reason).c_str());
        }
    }

    void zooPlansValidateAndFit_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("cluster");
        QTest::addColumn<int>("batch");
        for (const char* cluster : {"dgx-a100-1x8", "v100-4x4"}) {
            QTest::addRow("gpt2-small %s", cluster) << "gpt2-small" << cluster << 128;
            QTest::addRow("bert-base %s", cluster) << "bert-base" << cluster << 128;
            QTest::addRow("resnet50 %s", cluster) << "resnet50" << cluster << 256;
        }
    }
    void zooPlansValidateAndFit() {
        QFETCH(QString, model);
        QFETCH(QString, cluster);
        QFETCH(int, batch);
        const Problem problem = zooProblem(model.toStdString(), cluster.toStdString(), batch);
        for (const std::string& name : kBaselines) {
            const PlannerResult r = run(name, problem);
            const std::string what = name + " on " + model.toStdString() + ": ";
            QVERIFY2(!r.log.empty(), (what + "no log").c_str());
            if (!r.feasible) {
                QVERIFY2(!r.reason.empty(), (what + "infeasible without a reason").c_str());
                continue;
            }
            QCOMPARE(r.plan.planner, name);
            QVERIFY2(checkFeasiblePlan(problem, r).empty(), (what + checkFeasiblePlan(problem, r)).c_str());
        }
        // Small models fit every device whole.
        QVERIFY(run("data-parallel", problem).feasible);
    }

    void cancelledPlanningReturnsPromptly() {
        const Problem problem = zooProblem("gpt3-1.3b", "dgx-a100-2x8", 512);
        for (const std::string& name : kBaselines) {
            PlanContext context(60);
            context.cancel();
            const auto start = std::chrono::steady_clock::now();
            const PlannerResult r = makePlanner(name)->plan(problem, context);
            QVERIFY(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
            QVERIFY2(!r.feasible && contains(r.reason, "cancelled"), (name + ": " + r.reason).c_str());
        }
    }

    void cancelFromProgressStopsTheSearch() {
        const Problem problem = zooProblem("gpt3-1.3b", "dgx-a100-2x8", 512);
        for (const std::string& name : kBaselines) {
            PlanContext* self = nullptr;
            std::vector<double> fractions;
            PlanContext context(60, [&](double f, const std::string&) {
                fractions.push_back(f);
                self->cancel();  // as the studio's cancel button would, on the first report
            });
            self = &context;
            const PlannerResult r = makePlanner(name)->plan(problem, context);
            QVERIFY2(!r.feasible && contains(r.reason, "cancelled"), (name + ": " + r.reason).c_str());
            QVERIFY(!fractions.empty());
            for (double f : fractions) QVERIFY(f >= 0 && f <= 1);
        }
    }

    void timeBudgetStopsTheSearch() {
        const Problem problem = zooProblem("gpt3-1.3b", "dgx-a100-2x8", 512);
        for (const std::string& name : kBaselines) {
            const PlannerResult r = run(name, problem, 0.0);
            QVERIFY2(!r.feasible && contains(r.reason, "time budget"), (name + ": " + r.reason).c_str());
        }
    }

    // evaluateCandidate() judges a plan of more than kMemoryProbeMicroBatches micro-batches by two pipeline
    // rounds (64 rounded) of the same size first (issue 17: a global batch of 2^30 simulated
    // 65,536 micro-batches a plan in every sweep). For the 1F1B-like schedules the probe's peak
    // is the plan's; GPipe's grows with the micro-batches, so the probe is a lower bound there.
    void memoryProbeJudgesLongPlans() {
        Problem problem = zooProblem("gpt3-1.3b", "dgx-a100-2x8", 8 * 512);
        auto planOf = [&](ScheduleKind kind, int pp, int dp, int m) {
            Plan plan = basePlan(problem, "test");
            plan.schedule = kind;
            plan.dp = dp;
            plan.micro_batches = m;
            const int layers = problem.graph.layerCount();
            for (int s = 0; s < pp; ++s) plan.stages.push_back({s * layers / pp, (s + 1) * layers / pp - 1});
            plan.device_map = mapDevices(problem, plan);
            return plan;
        };
        // dp 8 x 512 micro-batches of one sample: the probe has 64 (two rounds of pp 2 at least).
        const Plan hippie_plan = planOf(ScheduleKind::Hippie, 2, 8, 512);
        QCOMPARE(memoryProbePlan(hippie_plan)->micro_batches, kMemoryProbeMicroBatches);
        QCOMPARE(memoryProbePlan(hippie_plan)->global_batch, 8 * kMemoryProbeMicroBatches);
        QVERIFY(!memoryProbePlan(planOf(ScheduleKind::Hippie, 2, 8, 64)));  // no more than the probe: simulated at once
        const TraceMetrics probe = evaluate(problem, *memoryProbePlan(hippie_plan));
        TraceMetrics full = evaluateCandidate(problem, hippie_plan);  // fits: simulated whole
        QVERIFY(probe.fits_memory && full.fits_memory && !full.peak_is_lower_bound);
        QCOMPARE(full.max_peak_memory_bytes, probe.max_peak_memory_bytes);
        QVERIFY(full.iteration_time_s > 4 * probe.iteration_time_s);  // the whole plan's time, not the probe's
        // Without the memory it needs, the plan is judged by its probe: over memory, its peak a bound.
        const double capacity = static_cast<double>(problem.cluster.device(0).memory_bytes);
        problem.memory_headroom = 1 - 0.999 * static_cast<double>(probe.max_peak_memory_bytes) / capacity;
        const TraceMetrics over = evaluateCandidate(problem, hippie_plan);
        QVERIFY(!over.fits_memory && over.peak_is_lower_bound);
        QCOMPARE(over.max_peak_memory_bytes, probe.max_peak_memory_bytes);
        QCOMPARE(over.iteration_time_s, 0.0);
        QCOMPARE(over.throughput_samples_per_s, 0.0);
        // evaluate() is the plan's own, for those who show it (the studio's plan files).
        const TraceMetrics whole = evaluate(problem, hippie_plan);
        QVERIFY(!whole.fits_memory && !whole.peak_is_lower_bound);
        QCOMPARE(whole.iteration_time_s, full.iteration_time_s);
        QCOMPARE(whole.max_peak_memory_bytes, full.max_peak_memory_bytes);
        // GPipe holds every micro-batch's activations: the probe's peak is below the plan's.
        problem.memory_headroom = 0;
        const Problem small = zooProblem("mlp", "dgx-a100-2x8", 8 * 128);
        Plan gpipe = basePlan(small, "test");
        gpipe.schedule = ScheduleKind::GPipe;
        gpipe.dp = 8;
        gpipe.micro_batches = 128;
        gpipe.stages = {{0, 4}, {5, 8}};
        gpipe.device_map = mapDevices(small, gpipe);
        const TraceMetrics gpipe_probe = evaluate(small, *memoryProbePlan(gpipe)), gpipe_full = evaluateCandidate(small, gpipe);
        QVERIFY(gpipe_full.fits_memory && !gpipe_full.peak_is_lower_bound);
        QVERIFY(gpipe_full.max_peak_memory_bytes > gpipe_probe.max_peak_memory_bytes);
        // A micro-batch no device could hold is over memory without a simulation (and no
        // arithmetic past int64): 2^30 samples in one micro-batch of gpt3-1.3b.
        problem.global_batch = 1 << 30;
        const Plan one = planOf(ScheduleKind::Hippie, 1, 1, 1);
        QVERIFY(microBatchBeyondAnyMemory(problem.graph, one.microBatchSize()));
        QVERIFY(!microBatchBeyondAnyMemory(problem.graph, 1024));
        const TraceMetrics beyond = evaluateCandidate(problem, one);
        QVERIFY(!beyond.fits_memory && beyond.peak_is_lower_bound);
        QCOMPARE(beyond.max_peak_memory_bytes, std::numeric_limits<int64_t>::max());
    }

    void progressEndsAtOne() {
        const Problem problem = zooProblem("gpt2-small", "dgx-a100-1x8", 64);
        for (const std::string& name : kBaselines) {
            double last = -1;
            PlanContext context(60, [&](double f, const std::string&) { last = f; });
            const PlannerResult r = makePlanner(name)->plan(problem, context);
            QVERIFY2(r.feasible, (name + ": " + r.reason).c_str());
            QCOMPARE(last, 1.0);
            QVERIFY(r.planning_time_s >= 0 && r.planning_time_s < 10);
        }
    }
};

QTEST_GUILESS_MAIN(TestBaselines)
#include "test_baselines.moc"
