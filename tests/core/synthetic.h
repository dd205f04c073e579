#pragma once
// Small hand-made graphs and clusters whose timings are known exactly, for schedule and
// simulator tests: on `exactCluster` a layer of `kFlopsPerSecond` forward FLOPs takes 1 s.
#include <string>
#include <tuple>

#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

namespace hippie::test {

inline constexpr double kFlopsPerSecond = 1e12;

// A chain of `layers` layers, one op each, for `batch` samples: forward `fwd_s` seconds,
// backward `bwd_s`, `param_bytes` of weights and `act_bytes` of output per layer.
inline Graph chainGraph(int layers, double fwd_s = 1, double bwd_s = 2, int64_t param_bytes = 1 << 20,
                        int64_t act_bytes = 1 << 20, int batch = 1) {
    Graph g;
    g.name = "chain" + std::to_string(layers);
    g.batch_size = batch;
    g.source.batch_size = batch;
    for (int i = 0; i < layers; ++i) {
        Op op;
        op.name = "layer" + std::to_string(i) + ".linear";
        op.kind = "matmul";
        op.layer = i;
        op.fwd_flops = fwd_s * kFlopsPerSecond;
        op.bwd_flops = bwd_s * kFlopsPerSecond;
        op.param_bytes = param_bytes;
        op.output_bytes = act_bytes;
        g.ops.push_back(op);
        if (i > 0) g.edges.push_back({i - 1, i, act_bytes});
    }
    return g;
}

// A chain of `layers` Megatron-style layers for tensor-parallel tests: in each, a norm
// (replicated, no FLOPs), a column-parallel linear and a row-parallel one, each of half the
// layer's `fwd_s` / `bwd_s` and `param_bytes`, each output `act_bytes`. Under t-way tensor
// parallelism a layer's forward all-reduces the row linear's output and its backward the
// column linear's input gradient: one collective of `act_bytes` each.
inline Graph tensorParallelChain(int layers, double fwd_s = 1, double bwd_s = 2, int64_t param_bytes = 1 << 20,
                                 int64_t act_bytes = 1 << 20, int batch = 1) {
    Graph g;
    g.name = "tp-chain" + std::to_string(layers);
    g.batch_size = batch;
    g.source.batch_size = batch;
    g.tensor_parallel_divisor = 8;
    for (int i = 0; i < layers; ++i) {
        const std::string prefix = "layer" + std::to_string(i) + ".";
        for (const auto& [name, kind, tp] : {std::tuple{"norm", "layernorm", TensorParallel::Replicated},
                                            std::tuple{"fc1", "matmul", TensorParallel::Column},
                                            std::tuple{"fc2", "matmul", TensorParallel::Row}}) {
            Op op;
            op.name = prefix + name;
            op.kind = kind;
            op.layer = i;
            op.tensor_parallel = tp;
            if (tp != TensorParallel::Replicated) {
                op.fwd_flops = fwd_s / 2 * kFlopsPerSecond;
                op.bwd_flops = bwd_s / 2 * kFlopsPerSecond;
                op.param_bytes = param_bytes / 2;
            }
            op.output_bytes = act_bytes;
            const int id = static_cast<int>(g.ops.size());
            if (id > 0) g.edges.push_back({id - 1, id, act_bytes});
            g.ops.push_back(op);
        }
    }
    return g;
}

// `nodes` x `per_node` devices of kFlopsPerSecond at efficiency 1. Links take
// latency + bytes / bandwidth; the defaults make communication free.
inline Cluster exactCluster(int nodes, int per_node, int64_t memory_bytes = int64_t(1) << 40,
                            double bandwidth = 1e30, double latency = 0, double inter_bandwidth = 1e30) {
    Cluster c;
    c.name = "exact";
    for (int n = 0; n < nodes; ++n) {
        Node node;
        node.devices = per_node;
        node.device.type = "unit";
        node.device.peak_flops_fp32 = kFlopsPerSecond;
        node.device.peak_flops_fp16 = kFlopsPerSecond;
        node.device.efficiency = 1.0;
        node.device.memory_bytes = memory_bytes;
        node.intra = {bandwidth, latency};
        c.nodes.push_back(node);
    }
    c.inter = {inter_bandwidth, latency};
    return c;
}

// A pipeline plan cutting `layers` layers into `pp * v` equal stages.
inline Plan pipelinePlan(int layers, int pp, int dp, int m, ScheduleKind kind, int v = 1, int micro_batch = 1) {
    Plan p;
    p.planner = "test";
    const int stages = pp * v;
    for (int s = 0; s < stages; ++s) p.stages.push_back({s * layers / stages, (s + 1) * layers / stages - 1});
    p.dp = dp;
    p.micro_batches = m;
    p.global_batch = dp * m * micro_batch;
    p.schedule = kind;
    p.virtual_stages = v;
    p.optimizer = Optimizer::SGD;
    return p;
}

}  // namespace hippie::test
