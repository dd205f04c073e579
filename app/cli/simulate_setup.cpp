#include "app/cli/simulate_setup.h"

#include <algorithm>
#include <cstdint>

#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/schedule/balanced_stages.h"
#include "planners/schedule/plan_json.h"

namespace hippie::cli {

namespace {

// Samples in one micro-batch: the global batch split over replicas and micro-batches.
int microBatchSize(int global_batch, int dp, int micro_batches) {
    const int64_t splits = int64_t{dp} * micro_batches;
    if (global_batch % splits != 0)
        throw Error("global batch " + std::to_string(global_batch) + " does not divide into dp " + std::to_string(dp) +
                    " x " + std::to_string(micro_batches) + " micro-batches (" + std::to_string(splits) +
                    "): the micro-batch size must be a whole number");
    return static_cast<int>(global_batch / splits);
}

void checkDeviceCount(int pp, int dp, int tp, const Cluster& cluster, const std::string& cluster_name) {
    const int64_t devices = int64_t{pp} * dp * tp;
    if (devices > cluster.deviceCount())
        throw Error("pp " + std::to_string(pp) + " x dp " + std::to_string(dp) + (tp > 1 ? " x tp " + std::to_string(tp) : std::string()) +
                    " needs " + std::to_string(devices) + " devices but cluster '" + cluster_name + "' has " +
                    std::to_string(cluster.deviceCount()));
}

void checkStageReplicas(const SimulateOptions& opts, const Cluster& cluster) {
    const auto& r = opts.stage_replicas;
    if (static_cast<int>(r.size()) != opts.pp)
        throw Error("--stage-replicas gives " + std::to_string(r.size()) + " replica counts for --pp " + std::to_string(opts.pp) +
                    " stages (one per stage)");
    const int widest = *std::max_element(r.begin(), r.end());
    if (opts.dp != widest)
        throw Error("--dp " + std::to_string(opts.dp) + ": with --stage-replicas, dp is the widest stage's replicas (" + std::to_string(widest) + ")");
    int64_t devices = 0;
    for (int n : r) devices += n;
    if (devices > cluster.deviceCount())
        throw Error("--stage-replicas needs " + std::to_string(devices) + " devices but cluster '" + opts.cluster + "' has " +
                    std::to_string(cluster.deviceCount()));
}

// --stage-tp: one degree per stage, --tp the largest, and the devices the cluster has.
int stageTpWidest(const SimulateOptions& opts, const Cluster& cluster) {
    const auto& t = opts.stage_tp;
    if (static_cast<int>(t.size()) != opts.pp)
        throw Error("--stage-tp gives " + std::to_string(t.size()) + " degrees for --pp " + std::to_string(opts.pp) + " stages (one per stage)");
    if (!opts.stage_replicas.empty()) throw Error("--stage-tp with --stage-replicas: per-stage replication runs tp 1");
    const int widest = *std::max_element(t.begin(), t.end());
    if (opts.tp != 1 && opts.tp != widest)
        throw Error("--tp " + std::to_string(opts.tp) + ": with --stage-tp, tp is the widest stage's degree (" + std::to_string(widest) + ")");
    int64_t devices = 0;
    for (int n : t) devices += int64_t{opts.dp} * n;
    if (devices > cluster.deviceCount())
        throw Error("dp " + std::to_string(opts.dp) + " x --stage-tp needs " + std::to_string(devices) + " devices but cluster '" + opts.cluster +
                    "' has " + std::to_string(cluster.deviceCount()));
    return widest;
}

void checkTensorParallelFlags(const SimulateOptions& opts, const Graph& graph) {
    if (!opts.stage_tp.empty()) return;  // lowering checks each stage's degree (checkPlan)
    if (opts.sequence_parallel && opts.tp == 1)
        throw Error("--sp needs --tp 2 or more: sequence parallelism splits the sequence over the tensor-parallel ranks");
    if (graph.tensorParallelFits(opts.tp)) return;
    const bool splits = graph.tensor_parallel_divisor > 1;
    throw Error("--tp " + std::to_string(opts.tp) + ": model '" + graph.name + "' " +
                (splits ? "splits only by divisors of " + std::to_string(graph.tensor_parallel_divisor) + " (its attention heads)"
                        : "has no op that tensor parallelism splits (zoo GPT, BERT and Transformer models do); use --tp 1"));
}

// Every layer but the last of each stage: the last one's output is sent on (or is the loss)
// and stays in memory anyway.
std::vector<int> recomputeAllButLast(const std::vector<StageRange>& stages) {
    std::vector<int> layers;
    for (const StageRange& s : stages)
        for (int l = s.first_layer; l < s.last_layer; ++l) layers.push_back(l);
    return layers;
}

}  // namespace

SimulationSetup setupFromFlags(const SimulateOptions& opts) {
    Plan plan;
    plan.planner = "manual";
    plan.cluster = opts.cluster;
    plan.schedule = scheduleFromString(opts.schedule);
    plan.optimizer = optimizerFromString(opts.optimizer);
    plan.dp = opts.dp;
    plan.micro_batches = opts.micro_batches;
    plan.global_batch = opts.global_batch;
    plan.virtual_stages = opts.virtual_stages;
    if (opts.micro_batches > kMaxMicroBatches)
        throw Error("--microbatches " + std::to_string(opts.micro_batches) + ": at most " + std::to_string(kMaxMicroBatches) +
                    " are supported");
    // The cluster bounds pp x dp x tp before anything is sized by them (--dp 1000000000).
    Cluster cluster = loadCluster(opts.cluster);
    plan.tp = opts.tp;
    plan.sequence_parallel = opts.sequence_parallel;
    if (!opts.stage_tp.empty()) {
        plan.tp = stageTpWidest(opts, cluster);
        plan.stage_tp = opts.stage_tp;
        plan.device_map = defaultDeviceMap(opts.dp, opts.stage_tp);
    } else if (opts.stage_replicas.empty()) {
        checkDeviceCount(opts.pp, opts.dp, opts.tp, cluster, opts.cluster);
        plan.device_map = defaultDeviceMap(opts.pp, opts.dp, opts.tp);
    } else {
        checkStageReplicas(opts, cluster);
        plan.stage_replicas = opts.stage_replicas;
        plan.device_map = defaultDeviceMap(opts.stage_replicas);
    }
    // Tensor-parallel ranks share their replica's micro-batches.
    Graph graph = buildGraph(opts.model, microBatchSize(opts.global_batch, opts.dp, opts.micro_batches));
    checkTensorParallelFlags(opts, graph);
    plan.model = graph.source;
    if (int64_t{opts.pp} * opts.virtual_stages > graph.layerCount())
        throw Error("pp " + std::to_string(opts.pp) + " x " + std::to_string(opts.virtual_stages) + " virtual stages is more stages than the " +
                    std::to_string(graph.layerCount()) + " layers of '" + graph.name + "'");
    // Per-stage degrees: a stage of more ranks takes more of the work.
    plan.stages = opts.stage_tp.empty() ? balancedStages(graph, opts.pp * opts.virtual_stages) : balancedStages(graph, opts.stage_tp);
    if (opts.recompute.empty() || opts.recompute == "full") plan.recompute_layers = recomputeAllButLast(plan.stages);
    plan.selective_recompute = opts.recompute == "selective";
    plan.zero_stage = opts.zero_stage;
    return {std::move(plan), std::move(graph), std::move(cluster)};
}

SimulationSetup setupFromPlanFile(const SimulateOptions& opts) {
    Plan plan = loadPlanFile(opts.plan_file);
    if (!opts.cluster.empty()) plan.cluster = opts.cluster;
    if (plan.cluster.empty())
        throw Error(opts.plan_file + ": the plan names no cluster; give one with --cluster");
    Cluster cluster = loadCluster(plan.cluster);
    microBatchSize(plan.global_batch, plan.dp, plan.micro_batches);
    Graph graph = buildGraph(plan.model);
    return {std::move(plan), std::move(graph), std::move(cluster)};
}

}  // namespace hippie::cli
