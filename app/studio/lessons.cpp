#include "app/studio/lessons.h"

#include <optional>

#include "planners/algorithms/evaluate.h"
#include "planners/common/error.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"
#include "planners/model/zoo_builder.h"
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

constexpr const char* kCluster = "dgx-a100-1x8";
constexpr int kPipelineSamples = 2048;  // 8 micro-batches of 256 samples: compute outweighs the sends
constexpr int kGpipe = 1, kOneFOneB = 2;
using E = LessonExpect;
}  // namespace

const std::vector<Lesson>& lessons() {
    static const std::vector<Lesson> all = {
        {"Data parallel",
         "Every GPU holds the whole model and trains on its own slice of the batch. Compute is identical on every "
         "row; at the end the gradients are summed across GPUs with an all-reduce (purple) before the optimizer step.",
         smallGpt(), kCluster, 1, 4, 1, 1, 16, ScheduleKind::OneFOneB, -1, {E::BalancedStages}},
        {"GPipe",
         "The model (an MLP of eight layers that all cost the same) is cut into 4 equal stages, one per GPU. All micro-batches go "
         "forward (blue) through the pipeline, then all come back (orange). The triangles of idle time at the start and "
         "end are the pipeline bubble, and every stage keeps the activations of all micro-batches: watch memory climb to "
         "its peak before the first backward.",
         uniformMlp(), kCluster, 4, 1, 1, 8, kPipelineSamples, ScheduleKind::GPipe, -1, {E::BalancedStages}},
        {"1F1B",
         "Same pipeline, but after a short warm-up each stage alternates one forward with one backward. The bubble is "
         "the same as GPipe's, so the iteration takes as long, but a stage never holds more micro-batches than its "
         "distance to the end of the pipeline: peak memory is lower.",
         uniformMlp(), kCluster, 4, 1, 1, 8, kPipelineSamples, ScheduleKind::OneFOneB, kGpipe,
         {E::SameIteration, E::LowerPeakMemory}},
        {"HIPPIE's overlap",
         "Two pipelines side by side (data parallel over a 4-stage pipeline). Gradients are all-reduced in buckets as soon "
         "as the last backward of a stage produces them, so the all-reduce (purple, lower band) runs while the other "
         "stages are still computing instead of after them.",
         uniformMlp(), kCluster, 4, 2, 1, 8, 2 * kPipelineSamples, ScheduleKind::Hippie, -1, {E::HiddenAllReduce}},
        {"Interleaving",
         "Each GPU holds two non-adjacent chunks of layers (virtual stages). Micro-batches pass through the devices twice, "
         "in smaller steps, which shortens warm-up and cool-down: the bubble shrinks against 1F1B's, at the price of more "
         "sends.",
         uniformMlp(), kCluster, 4, 1, 2, 8, kPipelineSamples, ScheduleKind::Interleaved, kOneFOneB,
         {E::SmallerBubble, E::ShorterIteration}},
        {"Zero bubble (zb-h1)",
         "Backward is split into the input gradient B (red), which the previous stage waits for, and the weight gradient "
         "W (teal), which nobody waits for. W fills the holes that 1F1B leaves in cool-down.",
         uniformMlp(), kCluster, 4, 1, 1, 8, kPipelineSamples, ScheduleKind::ZeroBubbleH1, kOneFOneB,
         {E::SmallerBubble, E::ShorterIteration}},
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
    s.plan.dp = lesson.dp;
    s.plan.virtual_stages = lesson.virtual_stages;
    s.plan.micro_batches = lesson.micro_batches;
    s.plan.schedule = lesson.schedule;
    s.plan.device_map = defaultDeviceMap(lesson.pp, lesson.dp);
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
    std::optional<Trace> baseline;
    std::string baseline_title;
    if (lesson.baseline >= 0 && lesson.baseline != index) {
        const Lesson& b = all[static_cast<size_t>(lesson.baseline)];
        const LessonSetup base = setupLesson(b);
        baseline = simulateWithEvents(base.problem, base.plan);
        baseline_title = b.title;
    }
    run.claims = lessonClaims(run.trace, baseline ? &*baseline : nullptr, baseline_title, lesson.expects);
    return run;
}

}  // namespace hippie::studio
