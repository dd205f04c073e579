#pragma once
// Plan: what runs where. Either a pipeline (contiguous layer ranges, each stage replicated
// `dp` times for data parallelism) or an operator -> device placement.
#include <string>
#include <vector>

#include "planners/model/graph.h"

namespace hippie {

enum class ScheduleKind {
    GPipe,        // fill-drain: all forwards, then all backwards
    OneFOneB,     // PipeDream-flush: warm-up forwards, then one forward one backward
    Hippie,       // 1F1B with bucketed gradient all-reduce overlapping the last backward
    Interleaved,  // Megatron 1F1B with `virtual_stages` model chunks per device
    ZeroBubbleH1  // zb-h1: backward split into input (B) and weight (W) gradients
};
const char* toString(ScheduleKind k);              // "gpipe", "1f1b", "hippie", "interleaved", "zb-h1"
ScheduleKind scheduleFromString(const std::string& s);  // throws Error naming the value
std::vector<ScheduleKind> allScheduleKinds();

enum class Optimizer { SGD, SGDMomentum, Adam, AdamW };  // AdamW: Adam with decoupled weight decay
const char* toString(Optimizer o);  // "sgd", "sgd-momentum", "adam", "adamw"
Optimizer optimizerFromString(const std::string& s);

// ZeRO sharding stage of the data-parallel groups (Rajbhandari et al. 2020): what each of
// the dp replicas of a pipeline stage keeps only a 1/dp shard of. 0: nothing (plain data
// parallelism); 1: optimizer state (and fp32 master weights); 2: + gradients; 3: +
// parameters, gathered before each use (FSDP).
constexpr int kMaxZeroStage = 3;
const char* zeroStageMeaning(int stage);  // "optimizer state sharded", ...

struct StageRange {
    int first_layer = 0;  // inclusive
    int last_layer = 0;   // inclusive
};

struct Plan {
    ModelSpec model;
    std::string cluster;    // preset name or file the plan was made for
    std::string planner;    // who made it ("manual" from the CLI flags)

    // Pipeline plans: stages in order; every stage has `dp` replicas, or stage_replicas[s].
    std::vector<StageRange> stages;
    int dp = 1;
    // Per-stage replication (PipeDream, Narayanan et al. 2019): stage s runs on
    // stage_replicas[s] devices, and micro-batch m of the iteration on its replica m mod
    // stage_replicas[s] (round-robin). dp is then the widest stage's replicas: the iteration
    // runs dp x micro_batches micro-batches of global_batch / (dp x micro_batches) samples,
    // which each stage's replica count divides. Empty: every stage has dp replicas. Only with
    // tp 1, no ZeRO and the gpipe, 1f1b or hippie schedule.
    std::vector<int> stage_replicas;
    // Placement plans (non-empty instead of `stages`): device of each op, by op id.
    std::vector<int> placement;
    // Placement plans, optional: a topological order of all op ids that each device follows
    // (a list scheduler's start-time order). Empty: the graph's topological order.
    std::vector<int> placement_order;

    int micro_batches = 1;   // per pipeline per iteration
    int global_batch = 1;    // samples per iteration over all replicas
    ScheduleKind schedule = ScheduleKind::OneFOneB;
    int virtual_stages = 1;  // chunks per device for Interleaved (stages.size() = pp * v)
    Optimizer optimizer = Optimizer::Adam;
    std::vector<int> recompute_layers;  // layers whose activations are recomputed in backward
    // Selective recomputation (Korthikanti et al. 2022, section 4.2): the attention core of
    // every block not in recompute_layers (scores Q K^T and softmax, attentionCoreOps()) keeps
    // no output for backward; its block's backward recomputes them from Q and K, which stay
    // stored. Only graphs with attention cores accept it.
    bool selective_recompute = false;
    int64_t bucket_bytes = 25 * 1024 * 1024;  // gradient all-reduce bucket size (DDP's default)
    int zero_stage = 0;  // ZeRO sharding over each stage's dp replicas (0..kMaxZeroStage); pipeline plans only
    // Tensor parallelism (Megatron-LM, Shoeybi et al. 2019): each replica of a stage runs on
    // `tp` devices that split the graph's splittable ops (Op::tensor_parallel) between them.
    // With stage_tp, the widest stage's degree. Pipeline plans only.
    int tp = 1;
    // Per-stage tensor-parallel degrees: each replica of stage s runs on stage_tp[s] devices.
    // Where two adjacent stages differ, rank k of a stage receives its input (activations
    // forward, gradients backward) from rank k mod t of the other stage, and so sends to every
    // rank of the other whose k' mod (its own t) is k (the boundary tensors are whole on every
    // tp rank). Empty: every stage has tp. Only with 1f1b, gpipe, hippie or zb-h1, without
    // sequence parallelism or per-stage replication, and with equal degrees on stages that
    // share a tied weight.
    std::vector<int> stage_tp;
    // Sequence parallelism (Korthikanti et al. 2022): the ops tensor parallelism replicates
    // (LayerNorm, dropout, residual adds) split the sequence over the tp ranks instead, and
    // each all-reduce of tensor parallelism becomes a reduce-scatter plus an all-gather.
    // Only meaningful with tp > 1.
    bool sequence_parallel = false;

    // device_map[pipeline stage][r * t + k] = global device id of tensor-parallel rank k of
    // replica r, t the stage's degree (with t = 1: device_map[stage][replica]). For interleaved plans the pipeline
    // stages are the first pp entries of `stages`; chunk c of device position i is
    // stages[c * pp + i].
    std::vector<std::vector<int>> device_map;

    bool isPlacement() const { return !placement.empty(); }
    int pipelineDepth() const;   // pp: devices in one pipeline
    int deviceCount() const;     // pp * dp * tp (the stages' replicas and tp ranks summed), or distinct devices of a placement
    // Whether stages have replica counts of their own (stage_replicas set).
    bool perStageReplication() const { return !stage_replicas.empty(); }
    int replicasOf(int stage) const;  // stage_replicas[stage], or dp
    std::string dpText() const;       // "8", or per stage "(3,1)"
    // Whether stages have tensor-parallel degrees of their own (stage_tp set).
    bool perStageTp() const { return !stage_tp.empty(); }
    int tpOf(int stage) const;   // stage_tp[stage] (a pipeline position's for interleaved), or tp
    std::string tpText() const;  // "2", or per stage "(2,1,2)"
    double microBatchSize() const;  // global_batch / (dp * micro_batches): tp ranks share a micro-batch

    // Process groups the engine creates, derived from device_map.
    // One per (replica, tp rank k of the widest stage), replica-major: its devices in stage
    // order, rank k mod t of each stage (the ranks that pass k's tensors along).
    std::vector<std::vector<int>> pipelineGroups() const;
    // Data-parallel groups, one per (pipeline stage, tp rank), stage-major: the replicas.
    std::vector<std::vector<int>> stageGroups() const;
    // Tensor-parallel groups, one per (pipeline stage, replica), stage-major: the tp ranks.
    // Empty for placement plans.
    std::vector<std::vector<int>> tpGroups() const;

private:
    std::vector<std::vector<int>> pipelineMap() const;  // device_map, or the default one when empty
    size_t rowTp(size_t row) const;                     // tpOf(row), at least 1
};

// Default device map: rank k of replica r of stage s on device (r * pp + s) * tp + k: a
// tensor-parallel group is contiguous (inside one node when tp divides the node's devices)
// and pipelines are packed inside nodes after it. Planners replace it with a
// topology-aware one.
std::vector<std::vector<int>> defaultDeviceMap(int pp, int dp, int tp = 1);
// Per-stage tensor-parallel degrees: the same packing, replica r's pipeline on the devices
// r * sum(t) onwards, stage s's ranks after the stages before it.
std::vector<std::vector<int>> defaultDeviceMap(int dp, const std::vector<int>& stage_tp);
// Per-stage replication: stage s on the next replicas[s] devices, stage after stage, so that a
// stage's replicas share a node where they fit.
std::vector<std::vector<int>> defaultDeviceMap(const std::vector<int>& replicas);
// A plan's default map: by stage_replicas when set, else by pp, dp and tp.
std::vector<std::vector<int>> defaultDeviceMap(const Plan& plan);

}  // namespace hippie
