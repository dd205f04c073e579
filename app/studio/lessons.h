#pragma once
// The built-in teaching lessons: small models on small pipelines, each chosen so that one
// idea of parallel training is plain to see in the Gantt chart.
#include <string>
#include <vector>

#include "planners/algorithms/planner.h"

namespace hippie::studio {

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
};

const std::vector<Lesson>& lessons();

// The lesson's problem and plan (stages balanced by FLOPs, default device map). Throws
// Error if the zoo model or cluster preset is unknown.
struct LessonSetup {
    Problem problem;
    Plan plan;
};
LessonSetup setupLesson(const Lesson& lesson);

}  // namespace hippie::studio
