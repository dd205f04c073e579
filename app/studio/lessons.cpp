#include "app/studio/lessons.h"

#include <algorithm>
#include <optional>

#include "planners/algorithms/evaluate.h"
#include "planners/common/error.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"
#include "planners/model/zoo_builder.h"
#include "planners/algorithms/pipeline_search.h"
#include "planners/schedule/balanced_stages.h"

namespace hippie::studio {

namespace {
ModelSpec smallGpt() {
    ModelSpec m;
    m.zoo = "gpt2-small";
    m.batch_size = 1;
    m.seq_len = 512;
    m.precision = Precision::FP16;
    return m;
}
// The pipeline lessons are about the bubble and memory, so their model has layers of equal
// cost: every stage takes the same time, and the idle time one sees is the schedule's, not a
// heavy last stage's (a GPT's LM head made GPU 3 the bottleneck). The zoo's MLP is nearly
// that, but its first and last layers are a quarter of the others, which no 4-way cut
// balances; this one is eight 4096-wide ReLU layers and a loss.
constexpr const char* kUniformModel = "uniform-mlp-8";
constexpr int kUniformLayers = 8;
constexpr int64_t kUniformWidth = 4096;
constexpr double kReluFlopsPerElement = 1.0;

ModelSpec uniformMlp() {
    ModelSpec m;
    m.zoo = kUniformModel;
    m.batch_size = 1;
    m.precision = Precision::FP16;
    return m;
}

Graph buildUniformMlp(const ModelSpec& spec) {
    ModelSpec s = spec;
    s.zoo.clear();
    zoo::GraphBuilder g(kUniformModel, s);
    zoo::Tensor x;
    for (int i = 0; i < kUniformLayers; ++i) {
        g.beginLayer("fc" + std::to_string(i));
        const zoo::OpCost fc = zoo::linearCost(g.batch(), kUniformWidth, kUniformWidth, true);
        x = i == 0 ? g.add("linear", fc) : g.add("linear", fc, {x});
        x = i + 1 < kUniformLayers ? g.add("relu", zoo::elementwiseCost("relu", x.elements, kReluFlopsPerElement), {x})
                                   : g.add("loss", zoo::crossEntropyCost(g.batch(), kUniformWidth), {x});
    }
    return g.finish();
}

// The whole GPT-2 medium (355M parameters, 24 blocks of 16 heads, 1024 tokens), in mixed
// precision. The ZeRO lessons train it with one sample a GPU, so that the model state (16 bytes
// a parameter under Adam in mixed precision) is most of the memory. The recomputation lessons
// train it on a 4-stage 1F1B pipeline in micro-batches of 4 samples, so that the activations
// kept for backward (the attention's probabilities and their dropout grow with the square of the sequence)
// outweigh the model state; there the first stage keeps several micro-batches' activations and
// full recomputation at most one micro-batch's, so that its peak is below selective recomputation's.
// PipeDream's VGG-16 at its published size, fp32 as on the V100s of PipeDream's Cluster-A.
ModelSpec vgg16() {
    ModelSpec m;
    m.zoo = "vgg16";
    m.batch_size = 1;
    m.precision = Precision::FP32;
    return m;
}

ModelSpec gptMedium() {
    ModelSpec m;
    m.zoo = "gpt2-medium";
    m.batch_size = 1;
    m.precision = Precision::FP16;
    return m;
}
// The tensor-parallel lessons: a GPT whose 16 heads and widths 8 ranks divide, cut to 4 blocks
// so that the collectives of each block are not lost among 24 of them, 8 samples a step.
ModelSpec tensorParallelGpt() {
    ModelSpec m = gptMedium();
    m.overrides = {{"layers", 4}};
    return m;
}

constexpr const char* kCluster = "dgx-a100-1x8";
constexpr const char* kTwoNodes = "dgx-a100-2x8";  // two nodes of 8: NVLink inside, InfiniBand between
constexpr int kPipelineSamples = 2048;  // 8 micro-batches of 256 samples: compute outweighs the sends
constexpr int kTensorParallel = 8;      // a whole DGX node
constexpr int kTensorParallelSamples = 8;
constexpr int kZeroReplicas = 8;
constexpr int kZeroSamples = kZeroReplicas;  // one sample a GPU
constexpr int kRecomputeStages = 4;
constexpr int kRecomputeMicroBatches = 8;
constexpr int kRecomputeSamples = 4 * kRecomputeMicroBatches;  // micro-batches of four samples
constexpr int kStageTpStages = 3;  // three stages do not divide the node's 8 GPUs
constexpr const char* kFourServers = "v100-4x4";  // PipeDream's Cluster-A: PCIe inside a server, 10 Gb/s Ethernet between
constexpr int kPerStageSamples = 768;              // 12 micro-batches of 64 images
// Lessons others are compared with, by their index in the list below.
constexpr int kGpipe = 1, kOneFOneB = 2, kTpInNode = 6, kZero0 = 9, kZero1 = 10, kZero2 = 11, kNoRecompute = 13,
              kFullRecompute = 14, kOneDegree = 17;
// The t8 group over two nodes: ranks 0-3 on node 0, ranks 4-7 on node 1 (devices 8-11).
const std::vector<std::vector<int>> kTpAcrossNodes = {{0, 1, 2, 3, 8, 9, 10, 11}};
// One lesson's schedule and claims (the tensor-parallel and ZeRO settings left at none).
Lesson lesson(std::string title, std::string idea, ModelSpec model, std::string cluster, int pp, int dp, int virtual_stages,
              int micro_batches, int global_batch, ScheduleKind schedule, int baseline, std::vector<LessonExpect> expects) {
    Lesson l;
    l.title = std::move(title);
    l.idea = std::move(idea);
    l.model = std::move(model);
    l.cluster = std::move(cluster);
    l.pp = pp;
    l.dp = dp;
    l.virtual_stages = virtual_stages;
    l.micro_batches = micro_batches;
    l.global_batch = global_batch;
    l.schedule = schedule;
    l.baseline = baseline;
    l.expects = std::move(expects);
    return l;
}

Lesson tensorParallel(Lesson l, int tp, bool sequence_parallel, std::vector<std::vector<int>> device_map = {}) {
    l.tp = tp;
    l.sequence_parallel = sequence_parallel;
    l.device_map = std::move(device_map);
    return l;
}

Lesson sharded(Lesson l, int zero_stage) {
    l.zero_stage = zero_stage;
    return l;
}

// Stages cut before the layers `starts`, each stage with its own tensor-parallel degree.
Lesson tensorParallelPerStage(Lesson l, std::vector<int> starts, std::vector<int> degrees) {
    l.stage_starts = std::move(starts);
    l.stage_tp = std::move(degrees);
    l.tp = *std::max_element(l.stage_tp.begin(), l.stage_tp.end());
    return l;
}

// Stages cut before the layers `starts`, each stage with its own replicas (PipeDream).
Lesson replicatedPerStage(Lesson l, std::vector<int> starts, std::vector<int> replicas) {
    l.stage_starts = std::move(starts);
    l.stage_replicas = std::move(replicas);
    return l;
}

Lesson recomputing(Lesson l, bool all_layers, bool selective, std::vector<LessonComparison> also_compared = {}) {
    l.recompute_all = all_layers;
    l.selective_recompute = selective;
    l.also_compared = std::move(also_compared);
    return l;
}

using E = LessonExpect;
}  // namespace

const std::vector<Lesson>& lessons() {
    static const std::vector<Lesson> all = {
        lesson("Data parallel",
         "Every GPU holds the whole model and trains on its own slice of the batch. Compute is identical on every "
         "row; at the end the gradients are summed across GPUs with an all-reduce (purple) before the optimizer step.",
         smallGpt(), kCluster, 1, 4, 1, 1, 16, ScheduleKind::OneFOneB, -1, {E::BalancedStages}),
        lesson("GPipe",
         "The model (an MLP of eight layers that all cost the same) is cut into 4 equal stages, one per GPU. All micro-batches go "
         "forward (blue) through the pipeline, then all come back (orange). The triangles of idle time at the start and "
         "end are the pipeline bubble, and every stage keeps the activations of all micro-batches: watch memory climb to "
         "its peak before the first backward.",
         uniformMlp(), kCluster, 4, 1, 1, 8, kPipelineSamples, ScheduleKind::GPipe, -1, {E::BalancedStages}),
        lesson("1F1B",
         "Same pipeline, but after a short warm-up each stage alternates one forward with one backward. The bubble is "
         "the same as GPipe's, so the iteration takes as long, but a stage never holds more micro-batches than its "
         "distance to the end of the pipeline: peak memory is lower.",
         uniformMlp(), kCluster, 4, 1, 1, 8, kPipelineSamples, ScheduleKind::OneFOneB, kGpipe,
         {E::SameIteration, E::LowerPeakMemory}),
        lesson("HIPPIE's overlap",
         "Two pipelines side by side (data parallel over a 4-stage pipeline). Gradients are all-reduced in buckets as soon "
         "as the last backward of a stage produces them, so the all-reduce (purple, lower band) runs while the other "
         "stages are still computing instead of after them.",
         uniformMlp(), kCluster, 4, 2, 1, 8, 2 * kPipelineSamples, ScheduleKind::Hippie, -1, {E::HiddenAllReduce}),
        lesson("Interleaving",
         "Each GPU holds two non-adjacent chunks of layers (virtual stages). Micro-batches pass through the devices twice, "
         "in smaller steps, which shortens warm-up and cool-down: the bubble shrinks against 1F1B's, at the price of more "
         "sends.",
         uniformMlp(), kCluster, 4, 1, 2, 8, kPipelineSamples, ScheduleKind::Interleaved, kOneFOneB,
         {E::SmallerBubble, E::ShorterIteration}),
        lesson("Zero bubble (zb-h1)",
         "Backward is split into the input gradient B (red), which the previous stage waits for, and the weight gradient "
         "W (teal), which nobody waits for. W fills the holes that 1F1B leaves in cool-down.",
         uniformMlp(), kCluster, 4, 1, 1, 8, kPipelineSamples, ScheduleKind::ZeroBubbleH1, kOneFOneB,
         {E::SmallerBubble, E::ShorterIteration}),
        tensorParallel(lesson("Tensor parallelism in a node",
                              "GPT-2 medium (cut to 4 blocks) split over the 8 GPUs of one node (t8): each GPU holds an eighth "
                              "of every block (attention by heads, the MLP's first linear by columns, its second by rows) and "
                              "all 8 work on the same samples, so their rows are alike. After each attention and each MLP, "
                              "forward and backward, the partial results are summed by an all-reduce over NVLink (the cyan "
                              "bars on the communication row under the compute): the next block waits for them.",
                              tensorParallelGpt(), kTwoNodes, 1, 1, 1, 1, kTensorParallelSamples, ScheduleKind::OneFOneB, -1,
                              {E::BalancedStages}),
                       kTensorParallel, false),
        tensorParallel(lesson("Tensor parallelism across nodes",
                              "The same t8 group spread over two nodes: ranks t0-t3 on node 0, t4-t7 on node 1 (the dashed "
                              "line between the rows). Every all-reduce of every block now crosses InfiniBand, 25 GB/s a node "
                              "against NVLink's 300 GB/s inside it, and nothing hides it: each block waits. This is why a "
                              "tensor-parallel group stays inside one node, and pipeline stages or data-parallel replicas go "
                              "across nodes.",
                              tensorParallelGpt(), kTwoNodes, 1, 1, 1, 1, kTensorParallelSamples, ScheduleKind::OneFOneB,
                              kTpInNode, {E::LongerIteration}),
                       kTensorParallel, false, kTpAcrossNodes),
        tensorParallel(lesson("Sequence parallelism",
                              "The in-node t8 group with sequence parallelism: the LayerNorms and dropouts, which tensor "
                              "parallelism alone runs whole on every GPU, are split along the sequence instead, and each "
                              "all-reduce becomes a reduce-scatter before them and an all-gather after them: the same bytes "
                              "over NVLink. Each GPU keeps only its eighth of those activations, so the memory curves peak "
                              "lower, and the iteration takes no longer (each GPU normalises an eighth of the tokens).",
                              tensorParallelGpt(), kTwoNodes, 1, 1, 1, 1, kTensorParallelSamples, ScheduleKind::OneFOneB,
                              kTpInNode, {E::LowerPeakMemory, E::NoLongerIteration}),
                       kTensorParallel, true),
        // ZeRO stages, each compared with the one before: the memory curves fall stage by stage.
        sharded(lesson("ZeRO-0: plain data parallel",
                       "GPT-2 medium (355M parameters) trained data parallel on 8 GPUs, one sample each, with Adam in mixed "
                       "precision. Every GPU keeps the whole model state: fp16 weights and gradients (2 + 2 bytes a "
                       "parameter) and Adam's fp32 master weights, momentum and variance (12 bytes): most of its memory, "
                       "the same on every GPU. The next lessons shard it over the 8 replicas.",
                       gptMedium(), kCluster, 1, kZeroReplicas, 1, 1, kZeroSamples, ScheduleKind::OneFOneB, -1,
                       {E::BalancedStages}),
                0),
        sharded(lesson("ZeRO-1: optimizer state sharded",
                       "Each GPU keeps Adam's state (12 bytes a parameter) only for its eighth of the parameters and "
                       "updates only that shard; the updated shards are then all-gathered (after the optimizer step) so "
                       "that every GPU has all the fp16 weights again. The memory curves start and peak lower than "
                       "ZeRO-0's.",
                       gptMedium(), kCluster, 1, kZeroReplicas, 1, 1, kZeroSamples, ScheduleKind::OneFOneB, kZero0,
                       {E::LowerPeakMemory}),
                1),
        sharded(lesson("ZeRO-2: gradients sharded too",
                       "The gradients are reduce-scattered instead of all-reduced: each GPU keeps only the gradient shard "
                       "it updates. Memory falls again, by less than from ZeRO-0 to ZeRO-1: the gradients were 2 bytes a "
                       "parameter, the optimizer state 12.",
                       gptMedium(), kCluster, 1, kZeroReplicas, 1, 1, kZeroSamples, ScheduleKind::OneFOneB, kZero1,
                       {E::LowerPeakMemory}),
                2),
        sharded(lesson("ZeRO-3: parameters sharded too (FSDP)",
                       "Now each GPU keeps only its eighth of the fp16 weights as well. Inside every forward and "
                       "backward, each layer's weights are all-gathered just before the layer runs (the next layer's "
                       "while this one computes) and freed after it: the dark purple tick under each compute is those "
                       "gathers. Only two layers are whole at any time, so the memory curves fall again; the weights "
                       "now cross NVLink twice a micro-batch, forward and backward, and no all-gather follows the step.",
                       gptMedium(), kCluster, 1, kZeroReplicas, 1, 1, kZeroSamples, ScheduleKind::OneFOneB, kZero2,
                       {E::LowerPeakMemory}),
                3),
        // Activation recomputation: the same training keeping every activation, recomputing every
        // block, recomputing only the attention cores. The text says what happens; how much
        // memory and time it costs is in the claims, computed from the traces.
        lesson("No recomputation",
               "GPT-2 medium (24 blocks) on a 4-stage 1F1B pipeline, 8 micro-batches of four samples of 1024 tokens. "
               "Each forward (blue) keeps every activation its backward (orange) will need, and a stage keeps them for "
               "every micro-batch it has started and not yet finished, up to four on the first stage: the memory "
               "curves climb through the warm-up. The largest of those activations are each block's attention "
               "probabilities, their dropout mask and the dropped probabilities, which grow with the square of the "
               "sequence. The next two lessons recompute activations "
               "instead of keeping them.",
               gptMedium(), kCluster, kRecomputeStages, 1, 1, kRecomputeMicroBatches, kRecomputeSamples,
               ScheduleKind::OneFOneB, -1, {E::BalancedStages}),
        recomputing(lesson("Full recomputation",
                           "The same pipeline with every block recomputed (activation checkpointing): a forward "
                           "keeps only each block's output, which the next block reads, and frees the rest. Once a "
                           "micro-batch's gradient has arrived, its backward runs each block's forward again just "
                           "before that block's backward, so one block's activations of one micro-batch are "
                           "rebuilt at a time (the chart draws those rebuilds as one brown R block before the "
                           "backward). The memory curves stay low; every block's forward runs twice an iteration.",
                           gptMedium(), kCluster, kRecomputeStages, 1, 1, kRecomputeMicroBatches, kRecomputeSamples,
                           ScheduleKind::OneFOneB, kNoRecompute, {E::LowerPeakMemory, E::LongerIteration}),
                    true, false),
        recomputing(lesson("Selective recomputation",
                           "Only each block's attention core is recomputed (Korthikanti et al. 2022): the scores QK^T, "
                           "their softmax and its dropout, the activations with the most bytes for the fewest FLOPs; every other "
                           "activation is kept. Each block's backward first rebuilds its core from Q and K, which stay "
                           "stored (the short brown recompute blocks). Its iteration is compared with full "
                           "recomputation's, its memory and time with no recomputation's.",
                           gptMedium(), kCluster, kRecomputeStages, 1, 1, kRecomputeMicroBatches, kRecomputeSamples,
                           ScheduleKind::OneFOneB, kFullRecompute, {E::ShorterIteration}),
                    false, true, {{kNoRecompute, {E::LowerPeakMemory, E::LongerIteration}}}),
        // PipeDream's per-stage replication: the busy stage gets more GPUs.
        replicatedPerStage(
            lesson("Per-stage replication (PipeDream)",
                   "VGG-16 cut where its weights are: the first nine convolutions (three quarters of the FLOPs, few "
                   "weights) on three GPUs, the last four convolutions and the three fully connected layers "
                   "(most of the 138 M weights) on one. Micro-batches go round-robin over the first stage's "
                   "replicas: GPU 0 runs micro-batches 0, 3, 6 and 9, GPU 1 runs 1, 4, 7 and 10, and GPU 2 the "
                   "rest, while GPU 3 runs all twelve, one forward and one backward at a time. Each GPU is busy "
                   "about as long as the others: the replicas share the heavy stage as PipeDream's planner "
                   "meant. Only the three small replicas all-reduce their gradients at the end; the large "
                   "layers have a single copy and synchronise nothing.",
                   vgg16(), kFourServers, 2, 3, 1, 4, kPerStageSamples, ScheduleKind::OneFOneB, -1, {E::BalancedStages}),
            {9}, {3, 1}),
        // Per-stage tensor-parallel degrees: three stages on one node of eight GPUs.
        tensorParallel(lesson("Three stages, one tensor-parallel degree",
                              "GPT-2 medium (24 blocks) on a 3-stage 1F1B pipeline, each stage split over 2 GPUs by tensor "
                              "parallelism, 8 micro-batches of four samples. That is 6 of the node's 8 GPUs: with one degree "
                              "for every stage, three stages use 3, 6 or 12 GPUs, never 8, and two GPUs stay idle. The next "
                              "lesson gives each stage a degree of its own.",
                              gptMedium(), kCluster, kStageTpStages, 1, 1, kRecomputeMicroBatches, kRecomputeSamples,
                              ScheduleKind::OneFOneB, -1, {E::BalancedStages}),
                       2, false),
        tensorParallelPerStage(
            lesson("A tensor-parallel degree per stage",
                   "The same GPT on all 8 GPUs: the middle stage split over 4 (rows S1 t0 to t3), the first and the last "
                   "over 2 each (the embedding and the LM head share one table, so their stages need one degree). The "
                   "middle stage takes twice the blocks, 12 against 6 and 6, for twice the GPUs, so every GPU has about "
                   "the same work and the iteration is shorter. Rank k of a stage takes its activations from rank k mod t "
                   "of the stage before: each of stage 0's two ranks feeds two of stage 1's four, and stage 2's ranks take "
                   "from stage 1's ranks 0 and 1, while ranks 2 and 3 send nothing on; the gradients come back the same way.",
                   gptMedium(), kCluster, kStageTpStages, 1, 1, kRecomputeMicroBatches, kRecomputeSamples, ScheduleKind::OneFOneB,
                   kOneDegree, {E::ShorterIteration, E::BalancedStages}),
            {7, 19}, {2, 4, 2}),
    };
    return all;
}

LessonSetup setupLesson(const Lesson& lesson) {
    LessonSetup s;
    s.problem.graph = lesson.model.zoo == kUniformModel ? buildUniformMlp(lesson.model) : buildZooModel(lesson.model);
    s.problem.cluster = buildClusterPreset(lesson.cluster);
    s.problem.cluster_name = lesson.cluster;
    s.problem.global_batch = lesson.global_batch;
    s.plan = basePlan(s.problem, "lesson");
    s.plan.stages = balancedStages(s.problem.graph, lesson.pp * lesson.virtual_stages);
    if (!lesson.stage_starts.empty()) {
        s.plan.stages.clear();
        int first = 0;
        for (int start : lesson.stage_starts) {
            s.plan.stages.push_back({first, start - 1});
            first = start;
        }
        s.plan.stages.push_back({first, s.problem.graph.layerCount() - 1});
    }
    s.plan.dp = lesson.dp;
    s.plan.stage_replicas = lesson.stage_replicas;
    s.plan.virtual_stages = lesson.virtual_stages;
    s.plan.micro_batches = lesson.micro_batches;
    s.plan.schedule = lesson.schedule;
    s.plan.tp = lesson.tp;
    s.plan.stage_tp = lesson.stage_tp;
    s.plan.sequence_parallel = lesson.sequence_parallel;
    s.plan.zero_stage = lesson.zero_stage;
    s.plan.device_map = !lesson.device_map.empty() ? lesson.device_map : defaultDeviceMap(s.plan);
    if (lesson.recompute_all) s.plan.recompute_layers = allLayers(s.problem);
    s.plan.selective_recompute = lesson.selective_recompute;
    return s;
}

LessonRun runLesson(int index) {
    const std::vector<Lesson>& all = lessons();
    if (index < 0 || index >= static_cast<int>(all.size())) throw Error("no lesson " + std::to_string(index));
    const Lesson& lesson = all[static_cast<size_t>(index)];
    const LessonSetup setup = setupLesson(lesson);
    LessonRun run;
    run.trace = simulateWithEvents(setup.problem, setup.plan);
    run.cluster = setup.problem.cluster;
    run.plan = setup.plan;
    // The claims against one other lesson (none: those that need no baseline).
    const auto compare = [&](int other, const std::vector<LessonExpect>& expects) {
        std::optional<Trace> baseline;
        std::string baseline_title;
        if (other >= 0 && other != index) {
            const Lesson& b = all.at(static_cast<size_t>(other));
            const LessonSetup base = setupLesson(b);
            baseline = simulateWithEvents(base.problem, base.plan);
            baseline_title = b.title;
        }
        const std::vector<LessonClaim> claims = lessonClaims(run.trace, baseline ? &*baseline : nullptr, baseline_title, expects);
        run.claims.insert(run.claims.end(), claims.begin(), claims.end());
    };
    compare(lesson.baseline, lesson.expects);
    for (const LessonComparison& c : lesson.also_compared) compare(c.lesson, c.expects);
    return run;
}

}  // namespace hippie::studio
