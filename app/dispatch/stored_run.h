#pragma once
// A run read back from the store with what its views need: the details, and the plan, graph,
// cluster and predicted Trace rebuilt from the stored JSON (re-simulated: the prediction is a
// pure function of them). Read on a worker thread: it opens its own store connection.
#include <QString>

#include <optional>

#include "app/store/run_store.h"
#include "planners/cluster/cluster.h"
#include "planners/cost/calibration.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"

namespace hippie::dispatch {

struct StoredRun {
    QString error;                     // non-empty: the run could not be read
    store::RunDetails details;
    std::optional<Plan> plan;
    std::optional<Graph> graph;        // when the stored model is a graph
    std::optional<Cluster> cluster;    // when the stored cluster is a full cluster
    std::optional<Trace> predicted;
    std::optional<Trace> measured;
    QString prediction_note;           // why there is no prediction
};

StoredRun loadStoredRun(const QString& db_path, qint64 run_id);

// Fits the run's cluster to its measured trace (planners/cost/calibration.h), judged against the
// run's measured mean step time (the one its prediction error is quoted against). Throws
// hippie::Error naming what the run lacks (a read error, no measured trace, no graph or cluster).
CalibrationResult calibrateStoredRun(const StoredRun& run, qint64 run_id);

}  // namespace hippie::dispatch
