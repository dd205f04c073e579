#include "app/studio/lessons.h"

#include "planners/algorithms/evaluate.h"
#include "planners/cluster/cluster_json.h"
#include "planners/model/zoo.h"
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
constexpr const char* kCluster = "dgx-a100-1x8";
}  // namespace

const std::vector<Lesson>& lessons() {
    static const std::vector<Lesson> all = {
        {"Data parallel",
         "Every GPU holds the whole model and trains on its own slice of the batch. Compute is identical on every "
         "row; at the end the gradients are summed across GPUs with an all-reduce (purple) before the optimizer step.",
         smallGpt(), kCluster, 1, 4, 1, 1, 16, ScheduleKind::OneFOneB},
        {"GPipe",
         "The model is cut into 4 stages, one per GPU. All micro-batches go forward (blue) through the pipeline, then all "
         "come back (orange). The triangles of idle time at the start and end are the pipeline bubble, and every "
         "stage keeps the activations of all micro-batches: watch memory climb to its peak before the first backward.",
         smallGpt(), kCluster, 4, 1, 1, 8, 32, ScheduleKind::GPipe},
        {"1F1B",
         "Same pipeline, but after a short warm-up each stage alternates one forward with one backward. The bubble is "
         "the same as GPipe's, but a stage never holds more micro-batches than its distance to the end of the pipeline: "
         "the memory curves stay flat in the steady phase.",
         smallGpt(), kCluster, 4, 1, 1, 8, 32, ScheduleKind::OneFOneB},
        {"HIPPIE's overlap",
         "Two pipelines side by side (data parallel over a 4-stage pipeline). Gradients are all-reduced in buckets as soon "
         "as the last backward of a stage produces them, so the all-reduce (purple, lower band) runs while the other "
         "stages are still computing instead of after them.",
         smallGpt(), kCluster, 4, 2, 1, 8, 64, ScheduleKind::Hippie},
        {"Interleaving",
         "Each GPU holds two non-adjacent chunks of layers (virtual stages). Micro-batches pass through the devices twice, "
         "in smaller steps, which shortens warm-up and cool-down: the bubble shrinks, at the price of more sends.",
         smallGpt(), kCluster, 4, 1, 2, 8, 32, ScheduleKind::Interleaved},
        {"Zero bubble (zb-h1)",
         "Backward is split into the input gradient B (red), which the previous stage waits for, and the weight gradient "
         "W (teal), which nobody waits for. W fills the holes that 1F1B leaves in cool-down.",
         smallGpt(), kCluster, 4, 1, 1, 8, 32, ScheduleKind::ZeroBubbleH1},
    };
    return all;
}

LessonSetup setupLesson(const Lesson& lesson) {
    LessonSetup s;
    s.problem.graph = buildZooModel(lesson.model);
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

}  // namespace hippie::studio
