#pragma once
// The built-in teaching lessons: small models on small pipelines, each chosen so that one
// idea of parallel training is plain to see in the Gantt chart.
#include <string>
#include <vector>

#include "app/studio/lesson_claims.h"
#include "planners/algorithms/planner.h"

namespace hippie::studio {

// A further lesson a lesson is compared with, and what it shows against that one.
struct LessonComparison {
    int lesson = -1;  // index in lessons()
    std::vector<LessonExpect> expects;
};

struct Lesson {
    std::string title;
    std::string idea;  // what to look for, shown before playing
    ModelSpec model;
    std::string cluster;  // preset
    int pp = 1;
    int dp = 1;
    int virtual_stages = 1;
    int micro_batches = 1;
    int global_batch = 1;
    ScheduleKind schedule = ScheduleKind::OneFOneB;
    int baseline = -1;                  // index of the lesson this one is compared with
    std::vector<LessonExpect> expects;  // what the lesson shows, checked on the simulated trace
    int tp = 1;                         // tensor-parallel degree of every stage (Plan::tp)
    bool sequence_parallel = false;     // Plan::sequence_parallel (tp > 1)
    int zero_stage = 0;                 // ZeRO sharding over the dp replicas (Plan::zero_stage)
    // Plan::device_map; empty: the default one (a tp group on consecutive devices, inside a node).
    std::vector<std::vector<int>> device_map;
    bool recompute_all = false;         // every layer in Plan::recompute_layers (full recomputation)
    bool selective_recompute = false;   // Plan::selective_recompute (the attention cores)
    std::vector<LessonComparison> also_compared;  // after `baseline`, each with its own claims
    // Per-stage replication (Plan::stage_replicas, one count per stage; dp is then the largest)
    // and where the stages after the first begin (empty: stages balanced by FLOPs).
    std::vector<int> stage_replicas;
    std::vector<int> stage_starts;
    // Per-stage tensor-parallel degrees (Plan::stage_tp; tp is then the largest); empty: tp.
    std::vector<int> stage_tp;
};

const std::vector<Lesson>& lessons();

// The lesson's problem and plan (stages balanced by FLOPs, default device map). Throws
// Error if the zoo model or cluster preset is unknown.
struct LessonSetup {
    Problem problem;
    Plan plan;
};
LessonSetup setupLesson(const Lesson& lesson);

// The lesson's trace (simulated with events) and its claims against its baseline lesson, then
// against each of also_compared.
struct LessonRun {
    Trace trace;
    Cluster cluster;
    Plan plan;  // groups the Gantt rows by stage, replica and tensor-parallel rank
    std::vector<LessonClaim> claims;
};
LessonRun runLesson(int index);

}  // namespace hippie::studio
