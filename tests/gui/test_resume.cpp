// Resume from the studio with real engine ranks on this machine: a tiny plan dispatched with
// checkpoints every 2 steps whose rank 1 dies at step 5 (HIPPIE_ENGINE_TEST_KILL) ends failed,
// and the Run view's Resume button is enabled; pressing it starts the run's next attempt from
// step 3's checkpoint, which ends succeeded as attempt 2 of the same run, and the button is then
// disabled. A run without checkpoints, reopened from the history, has Resume disabled with the
// reason as its tooltip. Through a hippie-agent: a run with every rank on the agent, cancelled
// once it has written checkpoints, resumes there as attempt 2 of the same run.
//
// Needs hippie-engine (HIPPIE_ENGINE, or HIPPIE_BIN_DIR/hippie-engine), and hippie-agent for the
// agent case; skips without them.
#include <QFileInfo>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <limits>
#include <memory>

#include "app/dispatch/run_controller.h"
#include "app/dispatch/stored_run.h"
#include "app/store/run_store.h"
#include "app/studio/dispatch/dispatch_ui.h"
#include "app/studio/dispatch/run_view.h"
#include "app/studio/dispatch/workers_panel.h"
#include "app/studio/main_window.h"
#include "agent_fixture.h"
#include "planners/schedule/plan_json.h"

using namespace hippie;
using namespace hippie::studio;
using jobs::JobState;

namespace {

constexpr int kRunTimeoutMs = 120 * 1000;
constexpr int kSteps = 6;
constexpr int kCheckpointEvery = 2;
constexpr int kAgentSteps = 300;  // long enough to be cancelled after its first checkpoints
const QString kToken = QStringLiteral("resume-test-token");

QString engineBinary() {
    const QByteArray env = qgetenv("HIPPIE_ENGINE");
    const QString path = env.isEmpty() ? QStringLiteral(HIPPIE_BIN_DIR "/hippie-engine") : QString::fromLocal8Bit(env);
    return QFileInfo(path).isExecutable() ? path : QString();
}

JobState waitFinished(dispatch::RunController* run) {
    if (!run->isFinished()) {
        QSignalSpy spy(run, &dispatch::RunController::finished);
        if (!spy.wait(kRunTimeoutMs)) qWarning("the run did not finish in time");
    }
    return run->state();
}

}  // namespace

class TestResume : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QString engine_;
    std::optional<Plan> plan_;

    QString db() const { return dir_.filePath(QStringLiteral("runs.sqlite")); }

    std::unique_ptr<MainWindow> window() {
        auto w = std::make_unique<MainWindow>(/*use_settings=*/false);
        DispatchUi* ui = w->dispatchUi();
        ui->setDbPath(db());
        ui->setWorkRoot(dir_.filePath(QStringLiteral("work")));
        ui->workers()->setEngine(engine_);
        return w;
    }

    // Presses Resume after `first` ended as `ended`: the run's next attempt succeeds as attempt 2
    // of the same run (no new run is stored), Resume is then disabled, and the store keeps the
    // first attempt's state.
    // Sets the second attempt's first and last step (a failed check leaves them -1).
    void resumeToSuccess(DispatchUi* ui, dispatch::RunController* first, JobState ended, int* first_step, int* last_step) {
        *first_step = *last_step = -1;
        QPushButton* resume = ui->runView()->resumeButton();
        QVERIFY2(resume->isEnabled(), qPrintable(resume->toolTip()));
        const qint64 run_id = first->runId();
        const size_t runs_before = store::RunStore(db()).listRuns().size();
        QSignalSpy started(ui, &DispatchUi::runStarted);
        resume->click();
        QCOMPARE(started.count(), 1);
        dispatch::RunController* second = ui->currentRun();
        QVERIFY(second != first);
        QCOMPARE(waitFinished(second), JobState::Succeeded);
        QCOMPARE(second->runId(), run_id);
        QCOMPARE(second->attempt(), 2);
        QVERIFY(!resume->isEnabled());
        QVERIFY(ui->runView()->lossPoints() > 0);

        const store::RunStore s(db());
        const store::RunDetails d = s.runDetails(run_id);
        QCOMPARE(d.summary.state, JobState::Succeeded);
        QCOMPARE(d.summary.attempt, 2);
        QCOMPARE(d.attempts.size(), size_t{1});
        QCOMPARE(d.attempts.front().state, ended);
        QCOMPARE(s.listRuns().size(), runs_before);  // the same run, not a new one
        int lowest = std::numeric_limits<int>::max(), highest = -1;
        for (const store::StoredEvent& e : d.events)
            if (e.attempt == 2 && e.event.value("event", std::string()) == "step") {
                lowest = std::min(lowest, e.event.value("step", lowest));
                highest = std::max(highest, e.event.value("step", -1));
            }
        QVERIFY(highest >= 0);
        *first_step = lowest;
        *last_step = highest;
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        engine_ = engineBinary();
        if (engine_.isEmpty()) return;
        const QString plan_file = dir_.filePath(QStringLiteral("plan.json"));
        QProcess p;
        p.start(engine_, {QStringLiteral("plan"), QStringLiteral("--model"), QStringLiteral("gpt-tiny"), QStringLiteral("--pp"),
                          QStringLiteral("2"), QStringLiteral("--dp"), QStringLiteral("1"), QStringLiteral("--global-batch"),
                          QStringLiteral("8"), QStringLiteral("--microbatches"), QStringLiteral("2"), QStringLiteral("--out"), plan_file});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        plan_ = loadPlanFile(plan_file.toStdString());
    }

    void failedRunWithCheckpointsResumes() {
        if (engine_.isEmpty()) QSKIP("hippie-engine not found: set HIPPIE_ENGINE or build it (LibTorch) into HIPPIE_BIN_DIR");
        auto w = window();
        DispatchUi* ui = w->dispatchUi();
        QPushButton* resume = ui->runView()->resumeButton();

        qputenv("HIPPIE_ENGINE_TEST_KILL", "1:5");  // the ranks inherit it: rank 1 dies at the start of step 5
        dispatch::RunController* first = ui->dispatchPlan(*plan_, std::nullopt, std::nullopt, {0}, kSteps, 3, false, kCheckpointEvery);
        QVERIFY(first);
        QVERIFY(!resume->isEnabled());
        const JobState ended = waitFinished(first);
        qunsetenv("HIPPIE_ENGINE_TEST_KILL");
        QCOMPARE(ended, JobState::Failed);
        QVERIFY(!first->checkpointDir().isEmpty());
        int first_step = -1, last_step = -1;
        resumeToSuccess(ui, first, JobState::Failed, &first_step, &last_step);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(first_step, 4);  // from the checkpoint of step 3, the newest both ranks wrote
        QCOMPARE(last_step, kSteps - 1);
    }

    void cancelledAgentRunResumesOnTheAgent() {
        if (engine_.isEmpty()) QSKIP("hippie-engine not found: set HIPPIE_ENGINE or build it (LibTorch) into HIPPIE_BIN_DIR");
        hippie::test::TestAgent agent;
        if (!agent.start(engine_, dir_.path(), kToken)) QSKIP("hippie-agent not found or not listening (HIPPIE_BIN_DIR)");
        auto w = window();
        DispatchUi* ui = w->dispatchUi();
        WorkersPanel* workers = ui->workers();
        const int row = workers->addAgent(agent.address(kToken), false);
        QVERIFY2(QTest::qWaitFor([&] { return workers->stateText(row).startsWith(QStringLiteral("ready")); }, hippie::test::TestAgent::kTimeoutMs),
                 qPrintable(workers->stateText(row)));

        dispatch::RunController* first = ui->dispatchPlan(*plan_, std::nullopt, std::nullopt, {row}, kAgentSteps, 3, false, kCheckpointEvery);
        QVERIFY(first);
        // Past step 5 both ranks have written the checkpoints of steps 1 and 3.
        QVERIFY(QTest::qWaitFor([&] { return ui->runView()->lossPoints() > 2 * kCheckpointEvery + 1 || first->isFinished(); }, kRunTimeoutMs));
        QVERIFY2(!first->isFinished(), "the run ended before it could be cancelled");
        first->cancel();
        QCOMPARE(waitFinished(first), JobState::Cancelled);
        int first_step = -1, last_step = -1;
        resumeToSuccess(ui, first, JobState::Cancelled, &first_step, &last_step);
        if (QTest::currentTestFailed()) return;
        // From a checkpoint (not step 0) on to the run's last step.
        QVERIFY2(first_step >= kCheckpointEvery && first_step % kCheckpointEvery == 0, qPrintable(QString::number(first_step)));
        QCOMPARE(last_step, kAgentSteps - 1);
    }

    void runWithoutCheckpointsCannotResume() {
        if (engine_.isEmpty()) QSKIP("hippie-engine not found: set HIPPIE_ENGINE or build it (LibTorch) into HIPPIE_BIN_DIR");
        auto w = window();
        DispatchUi* ui = w->dispatchUi();
        qputenv("HIPPIE_ENGINE_TEST_KILL", "1:0");
        dispatch::RunController* run = ui->dispatchPlan(*plan_, std::nullopt, std::nullopt, {0}, 2, 3);
        const JobState ended = waitFinished(run);
        qunsetenv("HIPPIE_ENGINE_TEST_KILL");
        QCOMPARE(ended, JobState::Failed);
        QPushButton* resume = ui->runView()->resumeButton();
        QVERIFY(!resume->isEnabled());
        // Reopened from the store: the same answer, with the CLI's words.
        const dispatch::StoredRun stored = dispatch::loadStoredRun(db(), run->runId());
        QVERIFY2(stored.error.isEmpty(), qPrintable(stored.error));
        ui->runView()->showStored(stored.details, stored.predicted, stored.cluster, stored.prediction_note);
        QVERIFY(!resume->isEnabled());
        QVERIFY2(resume->toolTip().contains(QStringLiteral("was dispatched without --checkpoint-every; nothing to resume from")),
                 qPrintable(resume->toolTip()));
    }
};

QTEST_MAIN(TestResume)
#include "test_resume.moc"
