#pragma once
// Problems for planner tests: hand-made chains with per-layer costs (on synthetic.h's exact
// cluster a layer of kFlopsPerSecond forward FLOPs takes 1 s), zoo models on presets, and the
// checks every planner's plan must pass.
#include <set>
#include <string>
#include <vector>

#include "planners/algorithms/evaluate.h"
#include "planners/algorithms/planner.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/validate.h"
#include "synthetic.h"

namespace hippie::test {

inline constexpr int64_t kGiB = int64_t(1) << 30;

// A chain of layers, one op each, for one sample: forward fwd_s[i] seconds, backward twice
// that, params[i] bytes of weights (fp32) and act_bytes of output per layer.
inline Graph layeredChain(const std::vector<double>& fwd_s, const std::vector<int64_t>& params, int64_t act_bytes) {
    Graph g = chainGraph(static_cast<int>(fwd_s.size()), 1, 2, 0, act_bytes);
    for (size_t i = 0; i < fwd_s.size(); ++i) {
        g.ops[i].fwd_flops = fwd_s[i] * kFlopsPerSecond;
        g.ops[i].bwd_flops = 2 * fwd_s[i] * kFlopsPerSecond;
        g.ops[i].param_bytes = params[i];
    }
    return g;
}

inline Problem makeProblem(const Graph& g, const Cluster& c, int global_batch, Optimizer o = Optimizer::SGD) {
    Problem p;
    p.graph = g;
    p.cluster = c;
    p.cluster_name = c.name;
    p.global_batch = global_batch;
    p.optimizer = o;
    return p;
}

inline Problem zooProblem(const std::string& model, const std::string& cluster, int global_batch) {
    ModelSpec spec;
    spec.zoo = model;
    spec.batch_size = 1;
    spec.precision = Precision::FP16;
    return makeProblem(buildZooModel(spec), buildClusterPreset(cluster), global_batch, Optimizer::Adam);
}

// Every device of the map distinct and in the cluster; pp rows of dp replicas (x tp ranks).
inline bool mapIsValid(const std::vector<std::vector<int>>& map, int pp, int dp, int devices) {
    if (static_cast<int>(map.size()) != pp) return false;
    std::set<int> seen;
    for (const auto& row : map) {
        if (static_cast<int>(row.size()) != dp) return false;
        for (int d : row)
            if (d < 0 || d >= devices || !seen.insert(d).second) return false;
    }
    return true;
}

// What must hold for every feasible planner result: the plan lowers to a valid Program on the
// problem's cluster, has a valid device map, and fits memory when simulated again. Returns the
// problems found (empty: fine).
inline std::string checkFeasiblePlan(const Problem& problem, const PlannerResult& r) {
    std::string bad;
    const Plan& plan = r.plan;
    if (plan.perStageReplication()) {
        // Row s holds stage s's replicas' devices, every device once.
        std::set<int> all;
        for (size_t s = 0; s < plan.device_map.size(); ++s) {
            if (static_cast<int>(plan.device_map[s].size()) != plan.replicasOf(static_cast<int>(s))) bad += "bad device map; ";
            for (int d : plan.device_map[s])
                if (d < 0 || d >= problem.cluster.deviceCount() || !all.insert(d).second) bad += "bad device map; ";
        }
        if (plan.device_map.size() != plan.stages.size()) bad += "bad device map; ";
    } else if (!mapIsValid(plan.device_map, plan.pipelineDepth(), plan.dp * plan.tp, problem.cluster.deviceCount())) {
        bad += "bad device map; ";
    }
    const ValidationResult v = validate(lower(plan, problem.graph), problem.graph);
    for (const std::string& s : v.problems) bad += s + "; ";
    const TraceMetrics again = evaluate(problem, plan);
    if (!again.fits_memory || !r.metrics.fits_memory) bad += "does not fit memory; ";
    if (again.max_peak_memory_bytes != r.metrics.max_peak_memory_bytes) bad += "reported metrics differ from a fresh simulation; ";
    if (plan.global_batch != problem.global_batch) bad += "global batch changed; ";
    return bad;
}

// ---- Small problems with an exhaustively known optimum (added for the adaptive planner) ----

// A chain whose layers differ in every cost: forward fwd_s[i] seconds (backward twice that)
// on synthetic.h's exact cluster, params[i] bytes of weights, acts[i] bytes of output (each
// layer's output is the next layer's input).
inline Graph unevenChain(const std::vector<double>& fwd_s, const std::vector<int64_t>& params, const std::vector<int64_t>& acts) {
    Graph g = layeredChain(fwd_s, params, 1);
    for (size_t i = 0; i < acts.size(); ++i) g.ops[i].output_bytes = acts[i];
    for (Edge& e : g.edges) e.bytes = acts[static_cast<size_t>(e.src)];
    return g;
}

// `layers` layers with uneven costs from a fixed pattern (different per `variant`): forward
// 0.5..2.5 s, 1..4 MiB of weights, 1..3 MiB of activations.
inline Graph patternedChain(int layers, int variant) {
    std::vector<double> fwd;
    std::vector<int64_t> params, acts;
    for (int i = 0; i < layers; ++i) {
        fwd.push_back(0.5 + 0.5 * ((i * 7 + variant * 3) % 5));
        params.push_back(int64_t{1 + (i * 5 + variant) % 4} << 20);
        acts.push_back(int64_t{1 + (i * 3 + variant * 2) % 3} << 20);
    }
    return unevenChain(fwd, params, acts);
}

// Exact-timing clusters of `nodes` x `per_node` devices with `memory_bytes` each: free
// communication, or links slow enough to matter (100 MB/s, 100 us inside a node; 20 MB/s
// between nodes).
inline Cluster freeLinksCluster(int nodes, int per_node, int64_t memory_bytes) { return exactCluster(nodes, per_node, memory_bytes); }
inline Cluster slowLinksCluster(int nodes, int per_node, int64_t memory_bytes) {
    return exactCluster(nodes, per_node, memory_bytes, 1e8, 1e-4, 2e7);
}

}  // namespace hippie::test
