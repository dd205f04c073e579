// The studio following a run on a real Slurm cluster, started by test_slurm.sh (which exports
// SLURM_CONF of its private cluster and keeps its only node busy with another job first): the
// Workers dock gets a Slurm cluster, the plan is dispatched to it with its batch script shown
// first, and the Run view shows it pending with Slurm's reason, then running on the node, then
// succeeded with the measured Gantt chart; the history lists it and reopens it with its Slurm
// job. With HIPPIE_SCREENSHOT_DIR set, the script's dialog and the window at each of the three
// moments are saved (slurm-script.png, slurm-pending.png, slurm-running.png, slurm-done.png).
// HIPPIE_SLURM_BLOCKER: the id of the job that keeps the node busy, cancelled once the run was
// seen pending. Arguments: ENGINE PLAN_FILE WORK_DIR.
#include <QApplication>
#include <QDialogButtonBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QProcess>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#include <algorithm>
#include <memory>

#include "app/dispatch/run_controller.h"
#include "app/studio/dispatch/dispatch_ui.h"
#include "app/studio/dispatch/history_page.h"
#include "app/studio/dispatch/run_view.h"
#include "app/studio/dispatch/workers_panel.h"
#include "app/studio/main_window.h"
#include "planners/schedule/plan_json.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/gantt/schedule_view.h"

using namespace hippie;
using namespace hippie::studio;

namespace {

constexpr int kPendingTimeoutMs = 60 * 1000;
constexpr int kRunTimeoutMs = 240 * 1000;
constexpr int kSteps = 40;
int failures = 0;

void check(bool ok, const QString& what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", qPrintable(what));
    std::fflush(stdout);
    if (!ok) ++failures;
}

void shotOf(QWidget* w, const char* name) {
    const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR");
    if (dir.isEmpty()) return;
    check(w->grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name)), QStringLiteral("saved %1").arg(name));
}

void shot(MainWindow& w, const char* name) {
    if (qEnvironmentVariableIsEmpty("HIPPIE_SCREENSHOT_DIR")) return;
    w.showPage(MainWindow::Page::Runs);
    QTest::qWait(300);
    shotOf(&w, name);
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s ENGINE PLAN_FILE WORK_DIR\n", argv[0]);
        return 2;
    }
    const QString engine = QString::fromLocal8Bit(argv[1]), plan_file = QString::fromLocal8Bit(argv[2]), work = QString::fromLocal8Bit(argv[3]);
    auto w = std::make_unique<MainWindow>(/*use_settings=*/false);
    w->resize(1400, 900);
    w->show();
    DispatchUi* ui = w->dispatchUi();
    ui->setDbPath(work + QStringLiteral("/studio-runs.sqlite"));
    ui->setWorkRoot(work + QStringLiteral("/studio-work"));
    ui->workers()->setEngine(engine);
    dispatch::SlurmTarget cluster;
    cluster.engine = engine;
    cluster.extra_sbatch = {QStringLiteral("--overcommit")};  // 4 tasks on a node that may have fewer CPUs
    const int row = ui->workers()->addSlurm(cluster);
    check(ui->workers()->label(row) == QStringLiteral("Slurm cluster (sbatch here)"), ui->workers()->label(row));

    // The batch script is shown before it is submitted: read it, picture it, submit it.
    QString shown_script;
    QTimer submit_shown;
    submit_shown.setInterval(100);
    QObject::connect(&submit_shown, &QTimer::timeout, [&] {
        QWidget* dialog = QApplication::activeModalWidget();
        auto* text = dialog ? dialog->findChild<QPlainTextEdit*>(QStringLiteral("slurm-script")) : nullptr;
        if (!text) return;
        submit_shown.stop();
        shown_script = text->toPlainText();
        shotOf(dialog, "slurm-script.png");
        auto* buttons = dialog->findChild<QDialogButtonBox*>();
        buttons->button(QDialogButtonBox::Ok)->click();
    });
    submit_shown.start();
    // Enough steps that the running picture is taken while it runs (a step is ~40 ms here).
    dispatch::RunController* run = ui->dispatchPlan(loadPlanFile(plan_file.toStdString()), std::nullopt, std::nullopt, {row}, kSteps, 7,
                                                    /*confirm_scripts=*/true);
    check(run != nullptr && shown_script.contains(QStringLiteral("#SBATCH --ntasks=4")) &&
              shown_script.contains(QStringLiteral("srun --kill-on-bad-exit=1")),
          QStringLiteral("the batch script was shown before submission (%1 lines)").arg(shown_script.count(QLatin1Char('\n'))));
    if (!run) return 1;
    RunView* view = ui->runView();
    const bool pending = QTest::qWaitFor([&] { return view->stateText().contains(QStringLiteral("pending: ")); }, kPendingTimeoutMs);
    check(pending, QStringLiteral("pending with a reason: %1").arg(view->stateText()));
    if (pending) shot(*w, "slurm-pending.png");
    // The job that kept the node busy goes once the wait was seen (test_slurm.sh names it).
    if (const QByteArray blocker = qgetenv("HIPPIE_SLURM_BLOCKER"); !blocker.isEmpty())
        check(QProcess::execute(QStringLiteral("scancel"), {QString::fromLatin1(blocker)}) == 0, QStringLiteral("scancel %1 (the blocker)").arg(QString::fromLatin1(blocker)));
    const bool running = QTest::qWaitFor([&] { return run->state() != jobs::JobState::Queued; }, kRunTimeoutMs);
    check(running && view->stateText().contains(QStringLiteral("Slurm job")), QStringLiteral("running: %1").arg(view->stateText()));
    // While it runs: a few steps of loss, then the picture.
    (void)QTest::qWaitFor([&] { return run->isFinished() || view->lossPoints() >= 4; }, kRunTimeoutMs);
    if (!run->isFinished()) shot(*w, "slurm-running.png");
    (void)QTest::qWaitFor([&] { return run->isFinished(); }, kRunTimeoutMs);
    check(run->state() == jobs::JobState::Succeeded, QStringLiteral("finished: %1").arg(view->stateText()));
    check(run->slurmRecord() && run->slurmRecord()->state == QStringLiteral("COMPLETED"), QStringLiteral("Slurm record COMPLETED"));
    check(view->measuredView()->gantt()->blockCount() > 0, QStringLiteral("measured Gantt: %1 blocks").arg(view->measuredView()->gantt()->blockCount()));
    if (run->measured()) {
        // Both charts share one time axis wide enough for the longer trace.
        const double end_s = std::max(view->measuredView()->endTime(), view->predictedView()->endTime());
        check(view->measuredView()->visibleWindow().upper_s >= end_s && view->predictedView()->visibleWindow().upper_s >= end_s,
              QStringLiteral("the time axes reach the longer trace's end, %1 ms").arg(end_s * 1e3, 0, 'f', 2));
    }
    check(view->predictedView()->gantt()->blockCount() > 0, QStringLiteral("predicted Gantt: %1 blocks").arg(view->predictedView()->gantt()->blockCount()));

    // The history lists it and reopens it with its Slurm job.
    HistoryPage* h = ui->history();
    QSignalSpy refreshed(h, &HistoryPage::refreshed);
    h->refresh();
    refreshed.wait(10000);
    check(h->rowCount() >= 1 && h->runAt(0) == run->runId(), QStringLiteral("history lists run %1").arg(run->runId()));
    QSignalSpy opened(h, &HistoryPage::openRun);
    h->selectRuns({run->runId()});
    h->openSelected();
    opened.wait(10000);
    QTest::qWait(200);
    check(view->measuredView()->gantt()->blockCount() > 0, QStringLiteral("reopened: measured Gantt"));
    shot(*w, "slurm-done.png");
    std::printf("%s\n", failures == 0 ? "all passed" : "failures");
    return failures == 0 ? 0 : 1;
}
