#pragma once
// The workers panel: this machine (always listed; runs through JobRunner) and remote
// hippie-agents (host, port, token, optional pinned TLS fingerprint), each with its state
// (connecting, ready, refused: why, unreachable or lost: why, tried again every 10 s) and the
// devices its probe found. Agents are kept
// in QSettings; a token only when the user ticks "remember". "Use as cluster" turns the probed
// workers into one Cluster for the planners.
#include <QWidget>

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/dispatch/run_controller.h"
#include "app/jobs/agent_client.h"
#include "planners/cluster/cluster.h"

class QLabel;
class QProcess;
class QPushButton;
class QTimer;
class QTreeWidget;

namespace hippie::studio {

class WorkersPanel : public QWidget {
    Q_OBJECT
public:
    // `use_settings`: load and save the agents list in QSettings (off in tests and screenshots).
    explicit WorkersPanel(bool use_settings, QWidget* parent = nullptr);
    ~WorkersPanel() override;

    int count() const { return static_cast<int>(workers_.size()); }
    bool isLocal(int i) const { return workers_[static_cast<size_t>(i)].local; }
    bool isSlurm(int i) const { return workers_[static_cast<size_t>(i)].slurm.has_value(); }
    QString label(int i) const;
    QString stateText(int i) const { return workers_[static_cast<size_t>(i)].state; }
    const nlohmann::json& devices(int i) const { return workers_[static_cast<size_t>(i)].devices; }
    dispatch::WorkerTarget target(int i) const;
    // The agent at host:port as this panel knows it (its token, its TLS pin); nullopt when it is
    // not in the list.
    std::optional<jobs::AgentAddress> agentAt(const QString& host, quint16 port) const;

    int addAgent(const jobs::AgentAddress& address, bool remember);  // connects and probes at once
    int addSlurm(const dispatch::SlurmTarget& cluster);              // Workers ▸ Add Slurm cluster…
    void removeWorker(int i);                                        // not the local machine
    void probe(int i);
    void setEngine(const QString& engine);                           // for the local machine; empty: findEngine()
    QString engine() const;
    // What runs are given: the engine set with setEngine even where it is missing (the run then
    // fails naming it rather than falling back to $HIPPIE_ENGINE), else engine().
    QString engineForRuns() const { return engine_.isEmpty() ? engine() : engine_; }
    // Unreachable and lost agents are connected again every `ms` (10 s by default).
    void setRetryInterval(int ms);
    bool isRetrying(int i) const;

    // The probed workers `rows` as one Cluster: each worker's nodes in order; between workers the
    // slowest link any of them measured (a guess until measured, and said so in `source`).
    std::optional<Cluster> clusterOf(const std::vector<int>& rows, QString* error) const;

signals:
    void workerChanged(int row);
    void useAsCluster(const hippie::Cluster& cluster, const QString& name);

private:
    void say(const QString& message);  // the line under the buttons, hidden while empty
    struct Worker {
        bool local = false;
        jobs::AgentAddress address;
        bool remember = false;
        QString state;
        nlohmann::json devices;  // Cluster JSON, null until probed
        jobs::AgentClient* client = nullptr;
        std::optional<dispatch::SlurmTarget> slurm;  // a Slurm cluster: no connection, sbatch at dispatch
    };

    void connectAgent(int i, bool retry = false);
    void retryUnreachable();
    void probeLocal();
    void setState(int i, const QString& state);
    void refreshRow(int i);
    void onAddClicked();
    void onAddSlurmClicked();
    void onUseClicked();
    void load();
    void save() const;
    int rowOfClient(const jobs::AgentClient* c) const;

    bool use_settings_;
    QString engine_;
    std::vector<Worker> workers_;
    QTreeWidget* list_;
    QPushButton* remove_;
    QPushButton* probe_;
    QPushButton* use_;
    QLabel* message_;
    QProcess* local_probe_ = nullptr;
    QTimer* retry_ = nullptr;
};

}  // namespace hippie::studio
