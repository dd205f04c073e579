#pragma once
// What the studio is working on: the model's Graph and the Cluster, each replaced only when
// the new one loads; a failed load leaves the previous one in place and says why.
#include <QObject>
#include <QString>

#include "planners/algorithms/planner.h"

namespace hippie::studio {

class StudioSession : public QObject {
    Q_OBJECT
public:
    explicit StudioSession(QObject* parent = nullptr);

    // Each returns an empty string on success, else the message to show.
    QString loadZooModel(const ModelSpec& spec);
    QString loadGraphFile(const QString& path);
    QString loadClusterPreset(const QString& name);
    QString loadClusterFile(const QString& path);
    QString saveClusterFile(const QString& path) const;
    void setCluster(const Cluster& cluster, const QString& name);

    bool hasGraph() const { return !graph_.ops.empty(); }
    const Graph& graph() const { return graph_; }
    const Cluster& cluster() const { return cluster_; }
    const QString& clusterName() const { return cluster_name_; }

    Problem problem(int global_batch, Objective objective, double time_budget_s) const;

signals:
    void graphChanged();
    void clusterChanged();

private:
    void setGraph(Graph graph);

    Graph graph_;
    Cluster cluster_;
    QString cluster_name_;
};

}  // namespace hippie::studio
