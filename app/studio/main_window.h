#pragma once
// The studio's main window: setup panels in a dock, and the comparison, schedule, graph and
// teaching pages in tabs. Selecting a plan in the comparison drives every other page.
#include <optional>

#include <QMainWindow>
#include <QStringList>

#include "planners/algorithms/planner.h"
#include "planners/sim/trace.h"

class QDockWidget;
class QMenu;
class QScrollArea;
class QTabWidget;

namespace hippie::widgets {
class ComparisonModel;
class GraphView;
}  // namespace hippie::widgets

namespace hippie::studio {

class ClusterPanel;
class MessageLabel;
class DispatchUi;
class ComparePage;
class ModelPanel;
class PlannersPanel;
class PlanningController;
class SchedulePage;
class SimulationController;
class StudioSession;
class TeachingPage;

// What the command line asks for; unset fields come from QSettings (or the defaults).
struct StartOptions {
    std::optional<ModelSpec> model;  // a zoo model
    QString graph_file;              // or a graph JSON file
    QString cluster;
    QString plan_file;               // --plan: a plan JSON file with the model and cluster it names
    int global_batch = 0;            // 0: from settings
    std::optional<QStringList> planners;
    bool run_planners = true;
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(bool use_settings = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Loads the model and cluster and, if asked, runs the planners. False when the model or
    // cluster could not be loaded (the message is shown in its panel).
    bool start(const StartOptions& options);
    void runPlanners();
    // Opens a plan file with its model and cluster (`cluster_override`, when given, replaces
    // the plan's cluster), shows it as the selected comparison row and simulates it. On
    // failure returns the message (also shown in the window) and changes nothing.
    QString openPlanFile(const QString& path, const QString& cluster_override = {});
    QString lastError() const { return last_error_; }  // why start() or openPlanFile() failed

    // What File > Export writes; "" on success, else why not.
    enum class Export { SchedulePng, SchedulePdf, ChromeTrace, GraphPng, GraphSvg, GraphDot, WindowPng };
    QString exportTo(Export what, const QString& path);

    // Runs and History exist when the studio is built with dispatch (HIPPIE_WITH_DISPATCH).
    enum class Page { Compare, Schedule, Graph, Teaching, Runs, History };
    void showPage(Page page);
    static std::optional<Page> pageFromName(const QString& name);  // compare|gantt|graph|teaching|runs|history

    // Nothing in flight: planners done, the selected plan simulated, the graph laid out.
    bool isIdle() const;
    bool isPlanning() const;
    widgets::ComparisonModel* comparison() const { return comparison_; }
    const std::optional<Trace>& shownTrace() const { return trace_; }
    StudioSession* session() const { return session_; }
    TeachingPage* teaching() const { return teaching_; }
    ModelPanel* modelPanel() const { return model_panel_; }
    PlannersPanel* plannersPanel() const { return planners_panel_; }
    ComparePage* comparePage() const { return compare_page_; }
    SchedulePage* schedulePage() const { return schedule_page_; }
    widgets::GraphView* graphView() const { return graph_view_; }
    const std::optional<Plan>& selectedPlan() const { return plan_; }
    DispatchUi* dispatchUi() const { return dispatch_; }  // null without dispatch
    QMenu* viewMenu() const { return pages_menu_; }
    QDockWidget* setupDock() const { return setup_dock_; }
    QTabWidget* tabs() const { return tabs_; }
    // A visible error above the pages (the file, what is wrong, what to do); "" hides it.
    void showBanner(const QString& text);
    QString bannerText() const;
    void cyclePage(int step);  // Ctrl+Tab / Ctrl+Shift+Tab
    static QString userGuidePath();  // "" when not installed

signals:
    void planningFinished();
    void traceShown();

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void buildHelpMenu();
    // Gives the Setup dock the height its Model and Cluster panels need, the Workers dock the rest.
    void fitSetupDockToItsPanels();
    void openUserGuide();
    void onRowSelected(int row);
    void onOverrides(ScheduleKind schedule, int micro_batches);
    void onPlanningFinished();
    void onInputsChanged();
    void simulateCurrent();
    void saveSettings() const;

    bool use_settings_;
    StudioSession* session_;
    PlanningController* planning_;
    SimulationController* simulation_;
    widgets::ComparisonModel* comparison_;
    ModelPanel* model_panel_;
    ClusterPanel* cluster_panel_;
    PlannersPanel* planners_panel_;
    QTabWidget* tabs_;
    ComparePage* compare_page_;
    SchedulePage* schedule_page_;
    widgets::GraphView* graph_view_;
    TeachingPage* teaching_;

    std::optional<Plan> plan_;    // the selected plan with the schedule page's overrides
    std::optional<Trace> trace_;  // its simulated trace
    std::optional<Problem> problem_;  // what the last run planned for
    std::optional<PlannerResult> loaded_plan_;  // opened from a file; kept across planner runs
    QString last_error_;
    DispatchUi* dispatch_ = nullptr;
    QDockWidget* setup_dock_ = nullptr;
    QScrollArea* setup_scroll_ = nullptr;
    bool layout_restored_ = false;  // the docks as the user left them (settings)
    QMenu* pages_menu_ = nullptr;
    QMenu* docks_menu_ = nullptr;
    MessageLabel* banner_ = nullptr;
};

}  // namespace hippie::studio
