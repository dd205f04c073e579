#include "app/studio/main_window.h"

#include <functional>
#include <tuple>

#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QShortcut>
#include <QTimer>
#include <QUrl>
#include <QScrollArea>
#include <QScrollBar>
#include <QStatusBar>
#include <QTabWidget>
#include <QVBoxLayout>

#include "app/studio/cluster_panel.h"
#include "app/studio/compare_page.h"
#ifdef HIPPIE_WITH_DISPATCH
#include "app/studio/dispatch/dispatch_ui.h"
#endif
#include "app/studio/message_label.h"
#include "app/studio/model_panel.h"
#include "app/studio/plan_file.h"
#include "app/studio/planner_run_list.h"
#include "app/studio/planners_panel.h"
#include "app/studio/planning_controller.h"
#include "app/studio/schedule_page.h"
#include "app/studio/shortcuts.h"
#include "app/studio/simulation_controller.h"
#include "app/studio/studio_session.h"
#include "app/studio/studio_settings.h"
#include "app/studio/teaching_page.h"
#include "app/studio/wheel_guard.h"
#include "planners/cluster/cluster_json.h"
#include "planners/sim/trace_json.h"
#include "widgets/compare/comparison_model.h"
#include "widgets/gantt/schedule_view.h"
#include "widgets/graph/graph_view.h"

namespace hippie::studio {

namespace {
constexpr int kDefaultWidth = 1500;
constexpr int kDefaultHeight = 950;
// The Setup dock: room under the Cluster panel; the Workers dock below keeps a few rows of its table.
constexpr int kSetupMarginPx = 12;
constexpr int kMinWorkersDockPx = 130;
constexpr int kLayoutPasses = 4;

// Runs `write` and turns an exception into its message.
QString tryWrite(const std::function<bool()>& write, const QString& path) {
    try {
        return write() ? QString() : QObject::tr("could not write %1").arg(path);
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
}
}  // namespace

MainWindow::MainWindow(bool use_settings, QWidget* parent)
    : QMainWindow(parent),
      use_settings_(use_settings),
      session_(new StudioSession(this)),
      planning_(new PlanningController(this)),
      simulation_(new SimulationController(this)),
      comparison_(new widgets::ComparisonModel(this)),
      model_panel_(new ModelPanel(session_)),
      cluster_panel_(new ClusterPanel(session_)),
      planners_panel_(new PlannersPanel),
      tabs_(new QTabWidget(this)),
      compare_page_(new ComparePage(comparison_)),
      schedule_page_(new SchedulePage),
      graph_view_(new widgets::GraphView),
      teaching_(new TeachingPage) {
    setWindowTitle(tr("Hippie Studio"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/hippie-studio.svg")));
    resize(kDefaultWidth, kDefaultHeight);

    auto* setup = new QWidget;
    auto* setup_layout = new QVBoxLayout(setup);
    setup_layout->addWidget(model_panel_);
    setup_layout->addWidget(cluster_panel_);
    setup_layout->addWidget(planners_panel_);
    setup_layout->addStretch(1);
    auto* scroll = new QScrollArea;
    setup_scroll_ = scroll;
    scroll->setWidget(setup);
    scroll->setWidgetResizable(true);
    auto* dock = new QDockWidget(tr("Setup"), this);
    dock->setObjectName(QStringLiteral("setup-dock"));
    dock->setWidget(scroll);
    dock->setMinimumWidth(330);
    addDockWidget(Qt::LeftDockWidgetArea, dock);
    setup_dock_ = dock;
    WheelGuard::install(setup);  // scrolling the dock must not change a spin box under the mouse

    tabs_->addTab(compare_page_, tr("Compare"));
    tabs_->addTab(schedule_page_, tr("Schedule"));
    tabs_->addTab(graph_view_, tr("Operator graph"));
    tabs_->addTab(teaching_, tr("Teaching"));
    // Errors the user must act on, above the pages where they are seen even when the Setup
    // dock is scrolled or closed.
    banner_ = new MessageLabel;
    banner_->setVisible(false);
    banner_->setStyleSheet(QStringLiteral("background: #fdecea; border: 1px solid #e0a0a0; padding: 6px;"));
    auto* central = new QWidget;
    auto* central_layout = new QVBoxLayout(central);
    central_layout->setContentsMargins(0, 0, 0, 0);
    central_layout->addWidget(banner_);
    central_layout->addWidget(tabs_, 1);
    setCentralWidget(central);
    schedule_page_->clear();
    buildMenus();
#ifdef HIPPIE_WITH_DISPATCH
    dispatch_ = new DispatchUi(this, tabs_, session_, use_settings_);  // the Workers dock, Run and Run history tabs, Run menu
    docks_menu_->addAction(dispatch_->dock()->toggleViewAction());
    pages_menu_->addAction(tr("Run"), QKeySequence(Qt::CTRL | Qt::Key_5), this, [this] { showPage(Page::Runs); });
    pages_menu_->addAction(tr("Run history"), QKeySequence(Qt::CTRL | Qt::Key_6), this, [this] { showPage(Page::History); });
#endif
    buildHelpMenu();
    connect(model_panel_, &ModelPanel::errorShown, this, &MainWindow::showBanner);

    connect(session_, &StudioSession::graphChanged, this, [this] {
        graph_view_->setGraph(session_->graph());
        onInputsChanged();
    });
    connect(session_, &StudioSession::clusterChanged, this, &MainWindow::onInputsChanged);
    connect(planners_panel_, &PlannersPanel::runRequested, this, &MainWindow::runPlanners);
    connect(planners_panel_, &PlannersPanel::cancelRequested, planning_, &PlanningController::cancelAll);
    connect(compare_page_, &ComparePage::cancelRequested, planning_, &PlanningController::cancel);
    connect(compare_page_, &ComparePage::modelRowSelected, this, &MainWindow::onRowSelected);
    connect(schedule_page_, &SchedulePage::overridesChanged, this, &MainWindow::onOverrides);

    connect(planning_, &PlanningController::progress, comparison_, &widgets::ComparisonModel::setProgress);
    connect(planning_, &PlanningController::failed, comparison_, &widgets::ComparisonModel::setFailed);
    PlannerRunList* runs = planners_panel_->runs();
    connect(planning_, &PlanningController::started, runs, &PlannerRunList::addRunning);
    connect(planning_, &PlanningController::progress, runs, &PlannerRunList::setProgress);
    connect(planning_, &PlanningController::failed, runs, &PlannerRunList::setFailed);
    connect(runs, &PlannerRunList::cancelRequested, planning_, &PlanningController::cancel);
    connect(planning_, &PlanningController::finished, this, [this](const PlannerResult& r) {
        if (r.skipped)
            planners_panel_->runs()->setSkipped(QString::fromStdString(r.planner), QString::fromStdString(r.reason));
        else
            planners_panel_->runs()->setFinished(QString::fromStdString(r.planner), r.planning_time_s, r.feasible);
        comparison_->setResult(r);
        statusBar()->showMessage(tr("%1 finished in %2 s").arg(QString::fromStdString(r.planner)).arg(r.planning_time_s, 0, 'f', 2));
    });
    connect(planning_, &PlanningController::allFinished, this, &MainWindow::onPlanningFinished);
    connect(simulation_, &SimulationController::traceReady, this, [this](const Plan& plan, const Trace& trace) {
        trace_ = trace;
        schedule_page_->showTrace(plan, trace, session_->cluster());
        emit traceShown();
    });
    connect(simulation_, &SimulationController::failed, schedule_page_, &SchedulePage::showError);

    if (use_settings_) {
        const StudioSettings s = StudioSettings::load();
        if (!s.geometry.isEmpty()) restoreGeometry(s.geometry);
        if (!s.window_state.isEmpty()) restoreState(s.window_state);
        layout_restored_ = !s.window_state.isEmpty();
    }
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("Open plan…"), QKeySequence(QKeySequence::Open), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open plan"), {}, tr("Plan JSON (*.plan.json *.json);;All files (*)"));
        if (!path.isEmpty()) openPlanFile(path);
    });
    file->addAction(tr("Run planners"), QKeySequence(Qt::CTRL | Qt::Key_R), this, &MainWindow::runPlanners);
    QMenu* exports = file->addMenu(tr("&Export"));
    const std::tuple<QString, QString, Export> items[] = {
        {tr("Schedule as PNG…"), tr("PNG image (*.png)"), Export::SchedulePng},
        {tr("Schedule as PDF…"), tr("PDF (*.pdf)"), Export::SchedulePdf},
        {tr("Trace as Chrome JSON…"), tr("Chrome trace (*.json)"), Export::ChromeTrace},
        {tr("Graph as PNG…"), tr("PNG image (*.png)"), Export::GraphPng},
        {tr("Graph as SVG…"), tr("SVG (*.svg)"), Export::GraphSvg},
        {tr("Graph as DOT…"), tr("Graphviz DOT (*.dot *.gv)"), Export::GraphDot},
        {tr("Window as PNG…"), tr("PNG image (*.png)"), Export::WindowPng}};
    for (const auto& [label, filter, what] : items) {
        if (what == Export::GraphPng || what == Export::WindowPng) exports->addSeparator();
        exports->addAction(label, this, [this, title = label, filter = filter, what = what] {
            const QString path = QFileDialog::getSaveFileName(this, QString(title).remove(QChar(0x2026)), {}, filter);
            if (path.isEmpty()) return;
            const QString error = exportTo(what, path);
            statusBar()->showMessage(error.isEmpty() ? tr("Saved %1").arg(path) : tr("Export failed: %1").arg(error));
        });
    }
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence(QKeySequence::Quit), this, &QWidget::close);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    pages_menu_ = view;
    const std::pair<QString, Page> pages[] = {{tr("Compare"), Page::Compare},
                                              {tr("Schedule"), Page::Schedule},
                                              {tr("Operator graph"), Page::Graph},
                                              {tr("Teaching"), Page::Teaching}};
    int key = Qt::Key_1;
    for (const auto& [name, page] : pages)
        view->addAction(name, QKeySequence(Qt::CTRL | (key++)), this, [this, p = page] { showPage(p); });
    // Closed docks come back from here (not only from a hidden right-click menu).
    docks_menu_ = view->addMenu(tr("Panels"));
    docks_menu_->addAction(setup_dock_->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("Next page"), QKeySequence(Qt::CTRL | Qt::Key_Tab), this, [this] { cyclePage(1); });
    view->addAction(tr("Previous page"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Backtab), this, [this] { cyclePage(-1); });
    // Ctrl+Shift+Tab arrives as Backtab with or without Shift, depending on the platform.
    auto* back = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Backtab), this);
    connect(back, &QShortcut::activated, this, [this] { cyclePage(-1); });
    // The tab bar would take Ctrl+Tab itself when it has focus: the window's shortcut wins.
    tabs_->setFocusPolicy(Qt::NoFocus);
}

void MainWindow::buildHelpMenu() {
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("User guide"), QKeySequence(QKeySequence::HelpContents), this, &MainWindow::openUserGuide);
    help->addAction(tr("Keyboard shortcuts"), this, [this] {
        QMessageBox box(QMessageBox::NoIcon, tr("Keyboard shortcuts"), shortcutsHtml(), QMessageBox::Close, this);
        box.setTextFormat(Qt::RichText);
        box.exec();
    });
    help->addSeparator();
    help->addAction(tr("About Hippie Studio"), this, [this] {
        QMessageBox::about(this, tr("About Hippie Studio"),
                           tr("<b>Hippie Studio</b> %1<br>Compare parallelisation plans for DNN training, see their schedules "
                              "and memory, and run them on workers with hippie-engine.<br>Licensed under the terms in "
                              "the LICENSE file.")
                               .arg(QCoreApplication::applicationVersion()));
    });
}

QString MainWindow::userGuidePath() {
    // Installed beside the binary's prefix, or in the source tree of a build.
    const QDir bin(QCoreApplication::applicationDirPath());
    const QStringList candidates = {bin.filePath(QStringLiteral("../share/doc/hippie-studio/user-guide.md")),
                                    QStringLiteral(HIPPIE_STUDIO_SOURCE_DIR "/docs/user-guide.md")};
    for (const QString& c : candidates)
        if (QFileInfo::exists(c)) return QFileInfo(c).absoluteFilePath();
    return {};
}

void MainWindow::openUserGuide() {
    const QString path = userGuidePath();
    if (path.isEmpty() || !QDesktopServices::openUrl(QUrl::fromLocalFile(path)))
        QMessageBox::information(this, tr("User guide"),
                                 path.isEmpty() ? tr("The user guide is not installed (it belongs in "
                                                     "share/doc/hippie-studio/user-guide.md). Help ▸ Keyboard shortcuts lists "
                                                     "the keys.")
                                                : tr("No program opens %1 here: open it with a text editor or a Markdown viewer.").arg(path));
}

QString MainWindow::bannerText() const { return banner_->isHidden() ? QString() : banner_->text(); }

void MainWindow::cyclePage(int step) {
    const int n = tabs_->count();
    if (n > 0) tabs_->setCurrentIndex(((tabs_->currentIndex() + step) % n + n) % n);
}

void MainWindow::showBanner(const QString& text) {
    banner_->showError(text);
    banner_->setVisible(!text.isEmpty());
}

QString MainWindow::exportTo(Export what, const QString& path) {
    switch (what) {
    case Export::SchedulePng:
    case Export::SchedulePdf:
    case Export::ChromeTrace:
        if (!trace_) return tr("No plan is selected: select one in the comparison first.");
        break;
    default:
        if (!session_->hasGraph()) return tr("No model is loaded.");
    }
    return tryWrite(
        [&] {
            switch (what) {
            case Export::SchedulePng: return schedule_page_->view()->savePng(path);
            case Export::SchedulePdf: return schedule_page_->view()->savePdf(path);
            case Export::ChromeTrace: saveChromeTrace(*trace_, path.toStdString(), {}, &session_->cluster()); return true;
            case Export::GraphPng: return graph_view_->exportPng(path);
            case Export::GraphSvg: return graph_view_->exportSvg(path);
            case Export::GraphDot: return graph_view_->exportDot(path);
            case Export::WindowPng: return grab().save(path, "PNG");
            }
            return false;
        },
        path);
}

bool MainWindow::start(const StartOptions& options) {
    const StudioSettings saved = use_settings_ ? StudioSettings::load() : StudioSettings{};
    ModelSpec spec = saved.model;
    if (options.model) spec = *options.model;
    if (spec.zoo.empty() && spec.file.empty()) spec = StudioSettings::defaultModel();
    bool ok = true;
    last_error_.clear();
    if (!options.graph_file.isEmpty()) {
        ok = model_panel_->openGraphFile(options.graph_file);
    } else if (!options.model && !spec.file.empty()) {
        // The last session's graph file may have gone (an imported TorchScript's temporary
        // graph, a moved file): say so and start from the default zoo model instead.
        if (!model_panel_->openGraphFile(QString::fromStdString(spec.file))) {
            model_panel_->loadZoo(StudioSettings::defaultModel());
        }
    } else {
        ok = model_panel_->loadZoo(spec);
    }

    const QString cluster = !options.cluster.isEmpty() ? options.cluster
                            : !saved.cluster.isEmpty() ? saved.cluster
                                                       : StudioSettings{}.cluster;
    const bool is_file = cluster.endsWith(QStringLiteral(".json"));
    ok = (is_file ? cluster_panel_->openFile(cluster) : cluster_panel_->loadPreset(cluster)) && ok;

    planners_panel_->setCheckedPlanners(options.planners ? *options.planners
                                        : !saved.planners.isEmpty() ? saved.planners
                                                                    : PlannersPanel::defaultPlanners());
    planners_panel_->setObjective(saved.objective);
    planners_panel_->setTimeBudgetSeconds(saved.time_budget_s);
    planners_panel_->setGlobalBatch(options.global_batch > 0 ? options.global_batch : saved.global_batch);
    teaching_->loadLesson(0);
    if (!ok) last_error_ = tr("the model or cluster did not load (the Setup panel says why)");
    if (ok && !options.plan_file.isEmpty()) ok = openPlanFile(options.plan_file, options.cluster).isEmpty();
    // A plan opened from the command line is what the user wants to see; planners run beside
    // it only when they are named.
    if (ok && options.run_planners && (options.plan_file.isEmpty() || options.planners)) runPlanners();
    // Model and Cluster first in view: a restored or focused widget lower down must not
    // leave the dock scrolled past them.
    QTimer::singleShot(0, this, [this] {
        fitSetupDockToItsPanels();
        setup_scroll_->verticalScrollBar()->setValue(0);
    });
    return ok;
}

void MainWindow::fitSetupDockToItsPanels() {
    // The Workers dock shares the left column; split evenly at 1280x800 it cut the Cluster panel
    // in half. A layout the user saved is theirs, and is kept.
    if (layout_restored_ || !dispatch_ || !setup_dock_->isVisible() || !dispatch_->dock()->isVisible()) return;
    const auto cluster_bottom = [this] { return cluster_panel_->mapTo(setup_scroll_->widget(), QPoint(0, cluster_panel_->height())).y(); };
    // Wrapped labels (the model's summary) take their height at the dock's width only once laid
    // out, and a label that wraps anew moves what is under it: lay out until nothing moves.
    for (int pass = 0, last = -1; pass < kLayoutPasses && last != cluster_bottom(); ++pass) {
        last = cluster_bottom();
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    }
    // resizeDocks sizes a dock's contents (the scroll area), not its title bar.
    const int chrome = setup_scroll_->height() - setup_scroll_->viewport()->height();
    const int wanted = cluster_bottom() + kSetupMarginPx + chrome;
    const int both = setup_scroll_->height() + dispatch_->dock()->widget()->height();
    const int setup = std::min(wanted, both - kMinWorkersDockPx);
    if (setup <= setup_scroll_->height()) return;
    resizeDocks({setup_dock_, dispatch_->dock()}, {setup, both - setup}, Qt::Vertical);
    // Laid out at once, as above, so that the first paint shows the new split.
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
}

QString MainWindow::openPlanFile(const QString& path, const QString& cluster_override) {
    PlanFile file;
    try {
        file = readPlanFile(path, cluster_override);
    } catch (const std::exception& e) {
        last_error_ = tr("Could not open the plan: %1").arg(QString::fromUtf8(e.what()));
        model_panel_->showError(last_error_ + tr("\nThe current model, cluster and plans stay."));
        showBanner(last_error_ + tr(" The current model, cluster and plans stay."));
        statusBar()->showMessage(last_error_);
        return last_error_;
    }
    last_error_.clear();
    // The plan's model and cluster through the panels, so that their controls show them; each
    // change clears the comparison, which then gets the loaded plan as its one row.
    if (!file.plan.model.zoo.empty())
        model_panel_->loadZoo(file.plan.model);
    else
        model_panel_->openGraphFile(QString::fromStdString(file.plan.model.file));
    if (file.cluster_name.endsWith(QStringLiteral(".json")))
        cluster_panel_->openFile(file.cluster_name);
    else
        cluster_panel_->loadPreset(file.cluster_name);
    planners_panel_->setGlobalBatch(file.plan.global_batch);
    onInputsChanged();
    problem_ = session_->problem(file.plan.global_batch, planners_panel_->objective(), planners_panel_->timeBudgetSeconds());
    comparison_->setObjective(problem_->objective, problem_->throughput_floor);
    loaded_plan_ = file.result();
    comparison_->setResult(*loaded_plan_);
    compare_page_->selectModelRow(comparison_->rowOfPlanner(QString::fromStdString(loaded_plan_->planner)));
    statusBar()->showMessage(tr("Opened plan %1").arg(path));
    return {};
}

void MainWindow::runPlanners() {
    if (!session_->hasGraph() || session_->cluster().nodes.empty()) {
        statusBar()->showMessage(tr("Load a model and a cluster first."));
        return;
    }
    const QStringList names = planners_panel_->checkedPlanners();
    problem_ = session_->problem(planners_panel_->globalBatch(), planners_panel_->objective(),
                                 planners_panel_->timeBudgetSeconds());
    comparison_->clear();
    comparison_->setObjective(problem_->objective, problem_->throughput_floor);
    plan_.reset();
    trace_.reset();
    schedule_page_->clear();
    graph_view_->setPlan(nullptr);
    planners_panel_->runs()->clear();
    if (loaded_plan_) {
        // The opened plan stays in the comparison, selected, while the planners run.
        comparison_->setResult(*loaded_plan_);
        compare_page_->selectModelRow(comparison_->rowOfPlanner(QString::fromStdString(loaded_plan_->planner)));
    }
    for (const QString& n : names) comparison_->addRunning(n);
    planners_panel_->setRunning(!names.isEmpty());
    statusBar()->showMessage(names.isEmpty() ? tr("No planner is ticked.") : tr("Running %1 planners…").arg(names.size()));
    planning_->run(*problem_, names);
}

bool MainWindow::isPlanning() const { return planning_->isRunning(); }

bool MainWindow::isIdle() const {
    return !planning_->isRunning() && !simulation_->isBusy() && !graph_view_->isLayingOut();
}

void MainWindow::onPlanningFinished() {
    planners_panel_->setRunning(false);
    // A row the user (or an opened plan) selected meanwhile stays selected; else the best.
    const int best = problem_ ? comparison_->bestRow(problem_->objective, problem_->throughput_floor)
                              : comparison_->bestRow(Objective::MemoryEfficiency);
    if (best >= 0 && compare_page_->selectedModelRow() < 0) compare_page_->selectModelRow(best);
    statusBar()->showMessage(tr("%1 planners finished").arg(comparison_->finishedCount()));
    if (use_settings_) saveSettings();
    emit planningFinished();
}

void MainWindow::onInputsChanged() {
    // Results were planned for the previous model or cluster: they no longer apply, nor do
    // the late answers of planners still running for them (a "cancelled" row would stay).
    planning_->abandon();
    planners_panel_->runs()->clear();
    planners_panel_->setRunning(false);
    planners_panel_->setProblemSize(session_->graph().layerCount(), session_->cluster().deviceCount());
    showBanner({});
    loaded_plan_.reset();
    comparison_->clear();
    plan_.reset();
    trace_.reset();
    schedule_page_->clear();
    graph_view_->setPlan(nullptr);
}

void MainWindow::onRowSelected(int row) {
    const PlannerResult* r = comparison_->result(row);
    if (!r) return;
    plan_ = r->plan;
    schedule_page_->setPlan(*plan_);
    graph_view_->setPlan(&*plan_);
    simulateCurrent();
}

void MainWindow::onOverrides(ScheduleKind schedule, int micro_batches) {
    if (!plan_) return;
    plan_->schedule = schedule;
    plan_->micro_batches = micro_batches;
    simulateCurrent();
}

void MainWindow::simulateCurrent() {
    if (plan_ && problem_) simulation_->simulate(*problem_, *plan_);
}

void MainWindow::showPage(Page page) { tabs_->setCurrentIndex(static_cast<int>(page)); }

std::optional<MainWindow::Page> MainWindow::pageFromName(const QString& name) {
    if (name == QLatin1String("compare")) return Page::Compare;
    if (name == QLatin1String("gantt") || name == QLatin1String("schedule")) return Page::Schedule;
    if (name == QLatin1String("graph")) return Page::Graph;
    if (name == QLatin1String("teaching")) return Page::Teaching;
#ifdef HIPPIE_WITH_DISPATCH
    if (name == QLatin1String("runs") || name == QLatin1String("run")) return Page::Runs;
    if (name == QLatin1String("history")) return Page::History;
#endif
    return std::nullopt;
}

void MainWindow::saveSettings() const {
    StudioSettings s;
    s.geometry = saveGeometry();
    s.window_state = saveState();
    s.model = session_->graph().source;
    if (s.model.zoo.empty() && s.model.file.empty()) s.model = model_panel_->currentSpec();
    s.cluster = session_->clusterName();
    s.planners = planners_panel_->checkedPlanners();
    s.objective = planners_panel_->objective();
    s.time_budget_s = planners_panel_->timeBudgetSeconds();
    s.global_batch = planners_panel_->globalBatch();
    s.save();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    planning_->cancelAll();
    if (use_settings_) saveSettings();
    QMainWindow::closeEvent(event);
}

}  // namespace hippie::studio
