#include "app/studio/dispatch/stored_run.h"

#include <QObject>

#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/cost/cost_model.h"
#include "planners/model/graph_json.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/sim/simulator.h"
#include "planners/sim/trace_json.h"

namespace hippie::studio {

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

}  // namespace hippie::studio
