#pragma once
// --plan and File > Open plan: a Plan JSON file (as `hippie-plan compare --out` and
// `hippie-plan simulate --save-plan` write it) with the model and cluster it names, checked
// against them and simulated, before anything in the window changes.
#include <QString>

#include "planners/algorithms/planner.h"

namespace hippie::studio {

struct PlanFile {
    QString path;
    Plan plan;
    Graph graph;            // the model the plan names
    Cluster cluster;        // the cluster it names (or the override)
    QString cluster_name;   // preset name or cluster file
    TraceMetrics metrics;   // the plan simulated on them

    // The comparison row: named after the file, "loaded from PATH" as its status.
    PlannerResult result() const;
};

// Throws Error naming the file and what is wrong: unreadable or malformed plan JSON, a model
// or cluster that does not load, a plan that does not fit the model or cluster (stages,
// device map, batch split). A model or cluster file named by a relative path is looked up
// beside the plan file when it is not found from the working directory. A non-empty
// `cluster_override` (preset or file) replaces the plan's cluster, as in `hippie-plan simulate`.
PlanFile readPlanFile(const QString& path, const QString& cluster_override = {});

}  // namespace hippie::studio
