#include "app/studio/plan_file.h"

#include <exception>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include "planners/algorithms/evaluate.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/zoo.h"
#include "planners/schedule/plan_json.h"

namespace hippie::studio {

namespace {

// A relative path as given, or beside the plan file when it is not found from here.
std::string resolveBeside(const std::string& file, const QString& plan_path) {
    const QString f = QString::fromStdString(file);
    if (QFileInfo(f).isAbsolute() || QFileInfo::exists(f)) return file;
    const QString beside = QFileInfo(plan_path).absoluteDir().filePath(f);
    return QFileInfo::exists(beside) ? beside.toStdString() : file;
}

bool isClusterFile(const std::string& name) { return name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0; }

}  // namespace

PlannerResult PlanFile::result() const {
    PlannerResult r;
    r.planner = QFileInfo(path).fileName().toStdString();
    r.plan = plan;
    r.metrics = metrics;
    r.feasible = metrics.fits_memory;
    r.reason = "loaded from " + path.toStdString() + (metrics.fits_memory ? "" : "; does not fit device memory");
    if (!plan.planner.empty()) r.log.push_back("planned by " + plan.planner);
    return r;
}

PlanFile readPlanFile(const QString& path, const QString& cluster_override) {
    PlanFile out;
    out.path = path;
    const std::string where = path.toStdString();
    out.plan = loadPlanFile(where);  // its Error names the file and the field

    // The rest names the plan file too: the model or cluster it points at may be what is wrong.
    try {
        Plan& plan = out.plan;
        if (!plan.model.zoo.empty()) {
            out.graph = buildZooModel(plan.model);
        } else if (!plan.model.file.empty()) {
            plan.model.file = resolveBeside(plan.model.file, path);
            out.graph = loadModel(plan.model.file, plan.model.batch_size, plan.model.seq_len, plan.model.precision);
            if (out.graph.source.file.empty() && out.graph.source.zoo.empty()) out.graph.source = plan.model;
        } else {
            throw Error("the plan names no model (model.zoo or model.file)");
        }

        if (!cluster_override.isEmpty()) plan.cluster = cluster_override.toStdString();
        if (plan.cluster.empty()) throw Error("the plan names no cluster");
        if (isClusterFile(plan.cluster)) {
            plan.cluster = resolveBeside(plan.cluster, path);
            out.cluster = loadClusterFile(plan.cluster);
        } else {
            out.cluster = buildClusterPreset(plan.cluster);
        }
        out.cluster_name = QString::fromStdString(plan.cluster);

        Problem problem;
        problem.graph = out.graph;
        problem.cluster = out.cluster;
        problem.cluster_name = plan.cluster;
        problem.global_batch = plan.global_batch;
        problem.optimizer = plan.optimizer;
        out.metrics = evaluate(problem, plan);  // checkPlan: stages, device map, batch split
    } catch (const std::exception& e) {
        throw Error(where + ": " + e.what());
    }
    return out;
}

}  // namespace hippie::studio
