#pragma once
// Small problems, plans and traces shared by the GUI suites.
#include "planners/algorithms/evaluate.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"
#include "planners/schedule/balanced_stages.h"

namespace hippie::testing {

struct Setup {
    Problem problem;
    Plan plan;
};

// gpt2-small on one DGX A100, pp x dp pipeline with balanced stages.
inline Setup smallPipeline(int pp, int dp, int micro_batches, ScheduleKind schedule) {
    Setup s;
    ModelSpec spec;
    spec.zoo = "gpt2-small";
    spec.batch_size = 1;
    spec.precision = Precision::FP16;
    s.problem.graph = buildZooModel(spec);
    s.problem.cluster = buildClusterPreset("dgx-a100-1x8");
    s.problem.cluster_name = "dgx-a100-1x8";
    s.problem.global_batch = micro_batches * dp * 2;
    s.plan = basePlan(s.problem, "test");
    s.plan.stages = balancedStages(s.problem.graph, pp);
    s.plan.dp = dp;
    s.plan.micro_batches = micro_batches;
    s.plan.schedule = schedule;
    s.plan.device_map = defaultDeviceMap(pp, dp);
    return s;
}

// A synthetic graph of `ops` ops in `layers` layers: a chain with a skip edge every third op.
inline Graph syntheticGraph(int ops, int layers) {
    Graph g;
    g.name = "synthetic";
    for (int i = 0; i < ops; ++i) {
        Op op;
        op.name = "op" + std::to_string(i);
        op.kind = i % 3 == 0 ? "matmul" : "add";
        op.layer = i * layers / ops;
        op.fwd_flops = 1e9;
        op.bwd_flops = 2e9;
        op.output_bytes = 1 << 20;
        g.ops.push_back(op);
        if (i > 0) g.edges.push_back({i - 1, i, 1 << 20});
        if (i > 2 && i % 3 == 0) g.edges.push_back({i - 3, i, 1 << 20});
    }
    return g;
}

}  // namespace hippie::testing
