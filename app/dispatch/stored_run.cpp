#include "app/dispatch/stored_run.h"

#include <QObject>

#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/model/graph_json.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/sim/simulator.h"
#include "planners/sim/trace_json.h"

namespace hippie::dispatch {

StoredRun loadStoredRun(const QString& db_path, qint64 run_id) {
    StoredRun r;
    try {
        const store::RunStore s(db_path);
        r.details = s.runDetails(run_id);
    } catch (const std::exception& e) {
        r.error = QString::fromUtf8(e.what());
        return r;
    }
    const std::string where = "run " + std::to_string(run_id);
    try {
        r.plan = planFromJson(r.details.plan, where + " plan");
        if (r.details.model.is_object() && r.details.model.value("format", std::string()) == "hippie-graph")
            r.graph = graphFromJson(r.details.model, where + " model");
        if (r.details.cluster.is_object() && r.details.cluster.contains("nodes"))
            r.cluster = clusterFromJson(r.details.cluster, where + " cluster");
        if (!r.details.measured_trace.is_null()) r.measured = traceFromJson(r.details.measured_trace, where + " measured trace");
        if (r.plan && r.graph && r.cluster) {
            const CostModel cost(*r.graph, *r.cluster);
            r.predicted = simulate(lower(*r.plan, *r.graph), *r.plan, cost);
        } else {
            r.prediction_note = !r.graph ? QObject::tr("no prediction: the run stored no graph of its model")
                                         : QObject::tr("no prediction: the run stored no cluster description");
        }
    } catch (const Error& e) {
        r.prediction_note = QObject::tr("no prediction: %1").arg(QString::fromUtf8(e.what()));
    }
    return r;
}

CalibrationResult calibrateStoredRun(const StoredRun& r, qint64 run_id) {
    const std::string where = "run " + std::to_string(run_id);
    if (!r.error.isEmpty()) throw Error(where + ": " + r.error.toStdString());
    if (!r.measured) {
        const std::string why = r.details.measured_trace_error.isEmpty() ? "did it finish?" : r.details.measured_trace_error.toStdString();
        throw Error(where + " has no measured trace (" + why + ")");
    }
    if (!r.plan || !r.graph || !r.cluster) throw Error(where + ": " + r.prediction_note.toStdString());
    CalibrationOptions options;
    options.measured_step_s = r.details.summary.measured_step_s;
    return calibrateCluster(*r.plan, *r.graph, *r.cluster, *r.measured, options);
}

}  // namespace hippie::dispatch
