#include "app/studio/dispatch/dispatch_ui.h"
#include "app/studio/dispatch/slurm_cluster_dialog.h"

#include <QDockWidget>
#include <QFileDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>

#include "app/dispatch/run_controller.h"
#include "app/dispatch/run_resume.h"
#include "app/studio/dispatch/dispatch_dialog.h"
#include "app/studio/dispatch/history_page.h"
#include "app/studio/dispatch/run_view.h"
#include "app/dispatch/stored_run.h"
#include "app/studio/dispatch/workers_panel.h"
#include "app/studio/main_window.h"
#include "app/studio/studio_session.h"
#include "planners/common/error.h"
#include "planners/schedule/plan_json.h"

namespace hippie::studio {

DispatchUi::DispatchUi(MainWindow* window, QTabWidget* tabs, StudioSession* session, bool use_settings)
    : QObject(window), window_(window), tabs_(tabs), session_(session), workers_(new WorkersPanel(use_settings)),
      run_view_(new RunView), history_(new HistoryPage), dock_(new QDockWidget(QObject::tr("Workers"), window)) {
    dock_->setObjectName(QStringLiteral("workers-dock"));
    dock_->setWidget(workers_);
    window->addDockWidget(Qt::LeftDockWidgetArea, dock_);
    tabs->addTab(run_view_, tr("Run"));
    tabs->addTab(history_, tr("Run history"));

    QMenu* menu = window->menuBar()->addMenu(tr("&Run"));
    menu->addAction(tr("Run selected plan on workers…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R), this, &DispatchUi::runSelectedPlan);
    menu->addAction(tr("Run plan file on workers…"), this, &DispatchUi::runPlanFile);
    menu->addSeparator();
    menu->addAction(tr("Cancel the current run"), this, [this] {
        if (current_) current_->cancel();
    });
    menu->addAction(tr("Show workers"), this, [this] {
        dock_->show();
        dock_->raise();
    });

    connect(workers_, &WorkersPanel::useAsCluster, this, [this](const Cluster& c, const QString& name) { session_->setCluster(c, name); });
    connect(history_, &HistoryPage::useCluster, this, [this](const Cluster& c, const QString& name) { session_->setCluster(c, name); });
    connect(history_, &HistoryPage::openRun, this, &DispatchUi::showStoredRun);
    connect(run_view_, &RunView::resumeRequested, this, &DispatchUi::resumeRun);
    connect(tabs, &QTabWidget::currentChanged, this, [this](int index) {
        if (tabs_->widget(index) == history_) history_->refresh();
    });
}

QWidget* DispatchUi::runPage() const { return run_view_; }

void DispatchUi::setDbPath(const QString& path) {
    db_path_ = path;
    history_->setDbPath(path);
}

dispatch::RunController* DispatchUi::dispatchPlan(const Plan& plan, const std::optional<Graph>& graph, const std::optional<Cluster>& cluster,
                                                  const std::vector<int>& workers, int steps, unsigned long long seed,
                                                  bool confirm_scripts, int checkpoint_every, const QString& data_file) {
    dispatch::RunRequest req;
    req.plan = plan;
    req.graph = graph;
    req.cluster = cluster;
    req.steps = steps;
    req.seed = seed;
    req.checkpoint_every = checkpoint_every;
    req.data_file = data_file;
    for (int w : workers) req.workers.push_back(workers_->target(w));
    req.engine = workers_->engineForRuns();
    req.work_root = work_root_;
    req.db_path = db_path_.isEmpty() ? history_->dbPath() : db_path_;
    auto* run = new dispatch::RunController(req, this);
    if (confirm_scripts && req.workers.size() == 1 && req.workers.front().slurm) {
        QString script;
        try {
            script = run->slurmScript();
        } catch (const Error& e) {
            QMessageBox::warning(window_, tr("Run on %1").arg(req.workers.front().label()), QString::fromUtf8(e.what()));
            delete run;
            return nullptr;
        }
        if (!confirmSlurmScript(window_, req.workers.front().label(), run->slurmJobDir(), script)) {
            delete run;
            return nullptr;
        }
    }
    return startRun(run);
}

dispatch::RunController* DispatchUi::resumeRun(qint64 run_id) {
    const QString db = db_path_.isEmpty() ? history_->dbPath() : db_path_;
    dispatch::RunRequest req;
    try {
        dispatch::ResumeOverrides o;
        o.engine = workers_->engineForRuns();
        o.agent = [this](const QString& host, quint16 port) { return workers_->agentAt(host, port); };
        o.token_hint = tr("add the agent with its token under Workers");
        req = dispatch::resumeRequest(db, run_id, o);
    } catch (const Error& e) {
        QMessageBox::warning(window_, tr("Resume run #%1").arg(run_id), QString::fromUtf8(e.what()));
        history_->refresh();
        return nullptr;
    }
    return startRun(new dispatch::RunController(req, this));
}

dispatch::RunController* DispatchUi::startRun(dispatch::RunController* run) {
    current_ = run;
    connect(run, &dispatch::RunController::workerStateChanged, this, [this, run](int worker, const QString& text) {
        if (current_ == run) window_->statusBar()->showMessage(tr("%1: %2").arg(run->request().workers[static_cast<size_t>(worker)].label(), text));
    });
    connect(run, &dispatch::RunController::finished, this, [this, run](jobs::JobState s, const QString& m) {
        window_->statusBar()->showMessage(tr("Run %1 %2%3").arg(run->jobId(), QString::fromLatin1(jobs::toString(s)),
                                                                 m.isEmpty() ? QString() : QStringLiteral(": ") + m));
        history_->refresh();
        emit runFinished(run);
    });
    run->start();
    run_view_->showLive(run);
    tabs_->setCurrentWidget(run_view_);
    emit runStarted(run);
    return run;
}

void DispatchUi::askAndRun(const Plan& plan, const std::optional<Graph>& graph, const std::optional<Cluster>& cluster) {
    DispatchDialog d(plan, graph, workers_, window_);
    if (d.exec() != QDialog::Accepted) return;
    dispatchPlan(plan, graph, cluster, d.chosenWorkers(), d.steps(), d.seed(), /*confirm_scripts=*/true, d.checkpointEvery(), d.dataFile());
}

void DispatchUi::runSelectedPlan() {
    const std::optional<Plan>& plan = window_->selectedPlan();
    if (!plan) {
        QMessageBox::information(window_, tr("Run on workers"), tr("Select a plan in the comparison first."));
        return;
    }
    // The session's graph is the plan's model unless the plan came from a file for another model.
    const ModelSpec& m = plan->model;
    const ModelSpec& g = session_->graph().source;
    const bool same_model = session_->hasGraph() && m.zoo == g.zoo && m.file == g.file;
    const std::optional<Graph> graph = same_model ? std::optional<Graph>(session_->graph()) : std::nullopt;
    askAndRun(*plan, graph, session_->cluster());
}

void DispatchUi::runPlanFile() {
    const QString path = QFileDialog::getOpenFileName(window_, tr("Run a plan file"), {}, tr("Plan JSON (*.json)"));
    if (path.isEmpty()) return;
    try {
        askAndRun(loadPlanFile(path.toStdString()), std::nullopt, std::nullopt);
    } catch (const Error& e) {
        QMessageBox::warning(window_, tr("Run a plan file"), QString::fromUtf8(e.what()));
    }
}

void DispatchUi::showStoredRun(const StoredRun& run) {
    run_view_->showStored(run.details, run.predicted, run.cluster, run.prediction_note);
    tabs_->setCurrentWidget(run_view_);
}

}  // namespace hippie::studio
