#pragma once
// Everything dispatch adds to the main window: the Workers dock, the Run and Run history pages,
// and the Run menu ("Run on workers…" for the comparison's selected plan, or for a plan file).
// Runs keep going when another run is shown; each is recorded in the run store.
#include <QObject>
#include <QString>

#include <optional>
#include <vector>

#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"

class QDockWidget;
class QMenu;
class QTabWidget;

namespace hippie::dispatch {
class RunController;
struct StoredRun;
}  // namespace hippie::dispatch

namespace hippie::studio {

class HistoryPage;
class MainWindow;
class RunView;
class StudioSession;
class WorkersPanel;
using dispatch::StoredRun;

class DispatchUi : public QObject {
    Q_OBJECT
public:
    DispatchUi(MainWindow* window, QTabWidget* tabs, StudioSession* session, bool use_settings);

    WorkersPanel* workers() const { return workers_; }
    RunView* runView() const { return run_view_; }
    HistoryPage* history() const { return history_; }
    QWidget* runPage() const;
    QDockWidget* dock() const { return dock_; }

    // Overrides for tests: the run store and the local jobs' directory.
    void setDbPath(const QString& path);
    void setWorkRoot(const QString& path) { work_root_ = path; }

    // Starts a run of `plan` on the workers panel's rows `workers` (rank 0 on the first) and
    // shows it. `graph` and `cluster` are for the prediction (see RunController). With
    // confirm_scripts, a Slurm run's batch script is shown first and nothing starts (nullptr)
    // unless the user submits it. checkpoint_every > 0: the ranks write checkpoints, so that the
    // run can be resumed (resumeRun). `data_file`: what every rank trains on (empty: synthetic).
    dispatch::RunController* dispatchPlan(const Plan& plan, const std::optional<Graph>& graph, const std::optional<Cluster>& cluster,
                                          const std::vector<int>& workers, int steps, unsigned long long seed,
                                          bool confirm_scripts = false, int checkpoint_every = 0, const QString& data_file = {});
    // Starts the next attempt of stored run `run_id` from its checkpoints, as `hippie-plan dispatch
    // --resume` does, and shows it; nullptr (after saying why) when it cannot be resumed.
    dispatch::RunController* resumeRun(qint64 run_id);
    dispatch::RunController* currentRun() const { return current_; }

    void runSelectedPlan();   // the dialog, for the comparison's selected plan
    void runPlanFile();       // a plan JSON chosen in a file dialog

signals:
    void runStarted(hippie::dispatch::RunController* run);
    void runFinished(hippie::dispatch::RunController* run);

private:
    void askAndRun(const Plan& plan, const std::optional<Graph>& graph, const std::optional<Cluster>& cluster);
    void showStoredRun(const StoredRun& run);
    dispatch::RunController* startRun(dispatch::RunController* run);  // follows and shows it

    MainWindow* window_;
    QTabWidget* tabs_;
    StudioSession* session_;
    WorkersPanel* workers_;
    RunView* run_view_;
    HistoryPage* history_;
    QDockWidget* dock_;
    QString db_path_;
    QString work_root_;
    dispatch::RunController* current_ = nullptr;
};

}  // namespace hippie::studio
