#pragma once
// What `hippie-plan simulate` simulates: a Plan with its Graph and Cluster, made either from
// the shape flags or from a plan file.
#include <string>
#include <vector>

#include "app/cli/model_options.h"
#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

namespace hippie::cli {

struct SimulateOptions {
    ModelOptions model;
    std::string cluster;    // preset or cluster JSON file; with --plan it overrides the plan's
    std::string plan_file;  // --plan: replaces every shape flag below
    int pp = 0;
    int dp = 0;
    int micro_batches = 0;
    int global_batch = 0;
    std::string schedule;
    int virtual_stages = 1;
    // --recompute [full|selective]: "none" when absent; "" (the flag alone) or "full": every
    // layer but the last of each stage; "selective": the attention cores of every layer.
    std::string recompute = "none";
    std::string optimizer = "adam";
    int zero_stage = 0;  // --zero: ZeRO sharding stage of the data-parallel groups
    int tp = 1;          // --tp: tensor-parallel degree of every stage
    std::vector<int> stage_replicas;  // --stage-replicas: replicas of each stage (PipeDream); --dp is the largest
    std::vector<int> stage_tp;        // --stage-tp: tensor-parallel degree of each stage; --tp is the largest
    bool sequence_parallel = false;  // --sp
    // Outputs.
    std::string trace_file;
    std::string chrome_trace_file;
    std::string save_plan_file;
    bool program = false;
    bool json = false;
};

struct SimulationSetup {
    Plan plan;
    Graph graph;
    Cluster cluster;
};

// Pipeline stages balanced by forward FLOPs, default device map, "manual" planner. Throws
// Error for unknown names, a batch that does not split into whole micro-batches, or a model
// with fewer layers than stages.
SimulationSetup setupFromFlags(const SimulateOptions& opts);

// The plan file as written; opts.cluster, when given, replaces the plan's cluster.
SimulationSetup setupFromPlanFile(const SimulateOptions& opts);

}  // namespace hippie::cli
