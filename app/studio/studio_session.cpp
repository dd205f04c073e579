#include "app/studio/studio_session.h"

#include <exception>

#include "planners/cluster/cluster_json.h"
#include "planners/model/graph_json.h"
#include "planners/model/zoo.h"

namespace hippie::studio {

namespace {
// Runs `load`, returning "" or the error's message (which names the file or field).
template <class Fn>
QString attempt(Fn&& load) {
    try {
        load();
        return {};
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
}
}  // namespace

StudioSession::StudioSession(QObject* parent) : QObject(parent) {}

void StudioSession::setGraph(Graph graph) {
    graph_ = std::move(graph);
    emit graphChanged();
}

QString StudioSession::loadZooModel(const ModelSpec& spec) {
    Graph g;
    const QString error = attempt([&] { g = buildZooModel(spec); });
    if (error.isEmpty()) setGraph(std::move(g));
    return error;
}

QString StudioSession::loadGraphFile(const QString& path) {
    Graph g;
    const QString error = attempt([&] {
        g = hippie::loadGraphFile(path.toStdString());
        if (g.source.file.empty() && g.source.zoo.empty()) g.source.file = path.toStdString();
    });
    if (error.isEmpty()) setGraph(std::move(g));
    return error;
}

QString StudioSession::loadClusterPreset(const QString& name) {
    Cluster c;
    const QString error = attempt([&] { c = buildClusterPreset(name.toStdString()); });
    if (error.isEmpty()) setCluster(c, name);
    return error;
}

QString StudioSession::loadClusterFile(const QString& path) {
    Cluster c;
    const QString error = attempt([&] { c = hippie::loadClusterFile(path.toStdString()); });
    if (error.isEmpty()) setCluster(c, path);
    return error;
}

QString StudioSession::saveClusterFile(const QString& path) const {
    return attempt([&] { hippie::saveClusterFile(cluster_, path.toStdString()); });
}

void StudioSession::setCluster(const Cluster& cluster, const QString& name) {
    cluster_ = cluster;
    cluster_name_ = name;
    emit clusterChanged();
}

Problem StudioSession::problem(int global_batch, Objective objective, double time_budget_s) const {
    Problem p;
    p.graph = graph_;
    p.cluster = cluster_;
    p.cluster_name = cluster_name_.toStdString();
    p.global_batch = global_batch;
    p.objective = objective;
    p.time_budget_s = time_budget_s;
    return p;
}

}  // namespace hippie::studio
