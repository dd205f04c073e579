// Dispatch from the studio with real processes on 127.0.0.1: a tiny engine plan run on this
// machine (JobRunner) ends succeeded in the run store with metrics and a measured trace, the run
// view draws the predicted and measured Gantt charts on one time scale, and the history lists it;
// the same plan through a real hippie-agent, and split between the agent (rank 0) and this
// machine; a wrong token is shown as refused in the workers panel; no engine gives the message.
//
// Needs hippie-engine (HIPPIE_ENGINE, or HIPPIE_BIN_DIR/hippie-engine) and hippie-agent
// (HIPPIE_BIN_DIR); the tests that need one skip with a message when it is missing. With
// HIPPIE_SCREENSHOT_DIR set, the history page is saved there as PNG.
#include <QFile>

#include <memory>
#include <set>

#include <QProcess>
#include <QSignalSpy>
#include <cmath>
#include <QApplication>
#include <QPushButton>
#include <QTcpServer>
#include <QTimer>
#include <QTemporaryDir>
#include <QtEndian>
#include <QtTest>
#include <qcustomplot.h>

#include "app/dispatch/run_controller.h"
#include "app/store/run_store.h"
#include "app/studio/dispatch/dispatch_dialog.h"
#include "app/studio/dispatch/dispatch_ui.h"
#include "app/studio/dispatch/history_page.h"
#include "app/studio/dispatch/run_view.h"
#include "app/studio/dispatch/workers_panel.h"
#include "app/studio/main_window.h"
#include "app/studio/studio_session.h"
#include "planners/cluster/cluster_json.h"
#include "planners/schedule/plan_json.h"
#include "agent_fixture.h"
#include "studio_start.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/gantt/schedule_view.h"

using namespace hippie;
using namespace hippie::studio;
using jobs::JobState;
using hippie::test::agentBinary;

namespace {

constexpr int kRunTimeoutMs = 240 * 1000;
constexpr int kAgentTimeoutMs = 20 * 1000;
const QString kToken = QStringLiteral("s3cret-token-for-tests");

QString binDir() {
    const QByteArray env = qgetenv("HIPPIE_BIN_DIR");
    return env.isEmpty() ? QStringLiteral(HIPPIE_BIN_DIR) : QString::fromLocal8Bit(env);
}

QString engineBinary() {
    const QByteArray env = qgetenv("HIPPIE_ENGINE");
    const QString path = env.isEmpty() ? binDir() + QStringLiteral("/hippie-engine") : QString::fromLocal8Bit(env);
    return QFileInfo(path).isExecutable() ? path : QString();
}

// Waits for the run to finish; returns its final state.
JobState waitFinished(dispatch::RunController* run) {
    if (!run->isFinished()) {
        QSignalSpy spy(run, &dispatch::RunController::finished);
        if (!spy.wait(kRunTimeoutMs)) qWarning("the run did not finish in time");
    }
    return run->state();
}

}  // namespace

class TestDispatch : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QString engine_;
    QString plan_file_;
    hippie::test::TestAgent agent_;

    QString db() const { return dir_.filePath(QStringLiteral("runs.sqlite")); }

    std::unique_ptr<MainWindow> window() {
        auto w = std::make_unique<MainWindow>(/*use_settings=*/false);
        w->resize(1600, 1000);
        DispatchUi* ui = w->dispatchUi();
        ui->setDbPath(db());
        ui->setWorkRoot(dir_.filePath(QStringLiteral("work")));
        ui->workers()->setEngine(engine_);
        return w;
    }

    bool startAgent() { return agent_.start(engine_, dir_.path(), kToken); }

    int addAgent(MainWindow& w, const QString& token) { return w.dispatchUi()->workers()->addAgent(agent_.address(token), false); }

    // With HIPPIE_SCREENSHOT_DIR set: the page as the docs show it.
    static void saveScreenshot(MainWindow& w, MainWindow::Page page, const char* name) {
        const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR");
        if (dir.isEmpty()) return;
        w.showPage(page);
        QTest::qWait(300);
        QVERIFY(w.grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name)));
    }

    static bool waitState(WorkersPanel* p, int row, const QString& prefix) {
        return QTest::qWaitFor([&] { return p->stateText(row).startsWith(prefix); }, kAgentTimeoutMs);
    }

    void checkSucceededInStore(dispatch::RunController* run) {
        const store::RunStore s(db());
        const store::RunDetails d = s.runDetails(run->runId());
        QCOMPARE(d.summary.state, JobState::Succeeded);
        QVERIFY(d.summary.measured_step_s.has_value());
        QVERIFY(d.summary.predicted_step_s.has_value());
        QVERIFY(!d.metrics.empty());
        QVERIFY(!d.measured_trace.is_null());
        QVERIFY(d.events.size() > 4);
        for (size_t i = 1; i < d.events.size(); ++i)
            if (d.events[i].source == d.events[i - 1].source) QCOMPARE(d.events[i].seq, d.events[i - 1].seq + 1);
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        engine_ = engineBinary();
        if (engine_.isEmpty()) return;
        plan_file_ = dir_.filePath(QStringLiteral("plan.json"));
        QProcess p;
        p.start(engine_, {QStringLiteral("plan"), QStringLiteral("--model"), QStringLiteral("gpt-tiny"), QStringLiteral("--pp"),
                          QStringLiteral("2"), QStringLiteral("--dp"), QStringLiteral("1"), QStringLiteral("--global-batch"),
                          QStringLiteral("8"), QStringLiteral("--microbatches"), QStringLiteral("2"), QStringLiteral("--out"), plan_file_});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
    }

    void cleanupTestCase() {
        agent_.stop();
    }

    void withoutEngineSaysSo() {
        auto w = window();
        w->dispatchUi()->workers()->setEngine(dir_.filePath(QStringLiteral("no-such/hippie-engine")));
        Plan plan;
        plan.model.zoo = "gpt-tiny";
        plan.stages = {{0, 2}, {3, 5}};
        plan.device_map = defaultDeviceMap(2, 1);
        dispatch::RunController* run = w->dispatchUi()->dispatchPlan(plan, std::nullopt, std::nullopt, {0}, 2, 0);
        QCOMPARE(waitFinished(run), JobState::Failed);
        QVERIFY2(run->message().startsWith(QStringLiteral("hippie-engine is not built/installed")), qPrintable(run->message()));
        QCOMPARE(run->runId(), qint64(0));  // nothing ran, nothing stored
        QVERIFY(w->dispatchUi()->runView()->stateText().contains(QStringLiteral("hippie-engine is not built/installed")));
    }

    void localRunIsStoredAndShown() {
        if (engine_.isEmpty()) QSKIP("hippie-engine not found: set HIPPIE_ENGINE or build it (LibTorch) into HIPPIE_BIN_DIR");
        auto w = window();
        w->show();
        DispatchUi* ui = w->dispatchUi();
        // Predicted on cpu-local with 5x its FLOP/s, so that the fit below has something to
        // correct whatever the load on this machine.
        Cluster too_fast = buildClusterPreset("cpu-local");
        too_fast.name = "cpu-local-too-fast";
        for (Node& n : too_fast.nodes) {
            n.device.peak_flops_fp32 *= 5;
            n.device.peak_flops_fp16 *= 5;
        }
        const double too_fast_flops = too_fast.nodes.at(0).device.achievableFlops(Precision::FP32);
        dispatch::RunController* run = ui->dispatchPlan(loadPlanFile(plan_file_.toStdString()), std::nullopt, too_fast, {0}, 4, 7);
        QCOMPARE(waitFinished(run), JobState::Succeeded);
        checkSucceededInStore(run);
        QVERIFY(run->predicted().has_value());
        QVERIFY(run->measured().has_value());
        QVERIFY(run->errorPercent().has_value());

        RunView* view = ui->runView();
        QVERIFY(view->lossPoints() >= 4);
        QVERIFY(view->predictedView()->gantt()->blockCount() > 0);
        QVERIFY(view->measuredView()->gantt()->blockCount() > 0);
        const QCPRange a = view->predictedView()->gantt()->keyAxis()->range();
        const QCPRange b = view->measuredView()->gantt()->keyAxis()->range();
        QCOMPARE(a.lower, b.lower);
        QCOMPARE(a.upper, b.upper);
        // Zooming one chart moves the other.
        view->predictedView()->gantt()->keyAxis()->setRange(0, a.upper / 2);
        QCOMPARE(view->measuredView()->gantt()->keyAxis()->range().upper, a.upper / 2);
        view->predictedView()->gantt()->keyAxis()->setRange(a);
        QVERIFY(view->errorText().contains(QStringLiteral("error")));

        HistoryPage* h = ui->history();
        QSignalSpy refreshed(h, &HistoryPage::refreshed);
        h->refresh();
        QVERIFY(refreshed.wait(10000));
        QVERIFY(h->rowCount() >= 1);
        QCOMPARE(h->runAt(0), run->runId());
        QCOMPARE(h->cellText(0, HistoryPage::kColumnState), QStringLiteral("succeeded"));
        QVERIFY(h->cellText(0, HistoryPage::kColumnError) != QStringLiteral("–"));

        // Reopened from the store, the run shows the same two charts again.
        QSignalSpy opened(h, &HistoryPage::openRun);
        h->selectRuns({run->runId()});
        h->openSelected();
        QVERIFY(opened.wait(10000));
        QVERIFY(view->measuredView()->gantt()->blockCount() > 0);
        QVERIFY(view->predictedView()->gantt()->blockCount() > 0);
        QCOMPARE(view->predictedView()->gantt()->keyAxis()->range().upper, view->measuredView()->gantt()->keyAxis()->range().upper);

        // (The guide's picture of a run comes from test_page_layout's longer one.)

        // Fit cost model: the run's cluster is calibrated to its measured trace and must bring the
        // step prediction closer to what was measured. The result dialog is closed as a user would.
        QSignalSpy calibrated(h, &HistoryPage::calibrated);
        QSignalSpy not_kept(h, &HistoryPage::fitNotKept);
        QString calibrated_name;
        double fitted_flops = 0;
        QObject::connect(h, &HistoryPage::calibrated, h, [&](const hippie::Cluster& c, double, double) {
            calibrated_name = QString::fromStdString(c.name);
            fitted_flops = c.nodes.at(0).device.achievableFlops(Precision::FP32);
        });
        QTimer closer;
        QObject::connect(&closer, &QTimer::timeout, [] {
            if (QWidget* modal = QApplication::activeModalWidget()) {
                if (const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR"); !dir.isEmpty())
                    modal->grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/fit-cost-model.png"));
                for (QPushButton* button : modal->findChildren<QPushButton*>())  // "Use it", as a user would
                    if (button->text() == QStringLiteral("Use it")) button->click();
            }
        });
        closer.start(200);
        h->selectRuns({run->runId()});
        h->fitSelected();
        QTRY_VERIFY_WITH_TIMEOUT(!calibrated.isEmpty() || !not_kept.isEmpty(), 30000);
        closer.stop();
        QVERIFY2(not_kept.isEmpty(), qPrintable(not_kept.isEmpty() ? QString() : not_kept.first().at(0).toString()));
        const double before = calibrated.first().at(1).toDouble();
        const double after = calibrated.first().at(2).toDouble();
        QVERIFY2(std::abs(after) < std::abs(before) / 2, qPrintable(QStringLiteral("step error %1 % before, %2 % after").arg(before).arg(after)));
        QVERIFY2(calibrated_name.contains(QLatin1String("calibrated")), qPrintable(calibrated_name));
        QVERIFY2(fitted_flops < too_fast_flops / 2, qPrintable(QStringLiteral("%1 FLOP/s fitted, %2 before").arg(fitted_flops).arg(too_fast_flops)));
        // "Use it" hands the calibrated cluster to the planners.
        QTRY_COMPARE_WITH_TIMEOUT(w->session()->clusterName(), calibrated_name, 5000);
        QCOMPARE(w->session()->cluster().nodes.at(0).device.achievableFlops(Precision::FP32), fitted_flops);
    }

    // A zoo model at a size override, as a user picks it after planning: the plan records the
    // overrides and every rank trains that size (GPT: embedding and tied head on two stages).
    void zooModelWithOverridesRuns() {
        if (engine_.isEmpty()) QSKIP("hippie-engine not found: set HIPPIE_ENGINE or build it (LibTorch) into HIPPIE_BIN_DIR");
        const QString file = dir_.filePath(QStringLiteral("zoo-plan.json"));
        QProcess p;
        p.start(engine_, {QStringLiteral("plan"), QStringLiteral("--model"), QStringLiteral("gpt2-small"), QStringLiteral("--override"),
                          QStringLiteral("layers=2,d_model=32,heads=2,vocab=128"), QStringLiteral("--seq-len"), QStringLiteral("16"),
                          QStringLiteral("--pp"), QStringLiteral("2"), QStringLiteral("--dp"), QStringLiteral("1"),
                          QStringLiteral("--global-batch"), QStringLiteral("8"), QStringLiteral("--microbatches"), QStringLiteral("2"),
                          QStringLiteral("--out"), file});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const Plan plan = loadPlanFile(file.toStdString());
        QCOMPARE(plan.model.zoo, std::string("gpt2-small"));
        QCOMPARE(plan.model.overrides.at("layers"), 2.0);
        auto w = window();
        dispatch::RunController* run = w->dispatchUi()->dispatchPlan(plan, std::nullopt, std::nullopt, {0}, 3, 1);
        QCOMPARE(waitFinished(run), JobState::Succeeded);
        checkSucceededInStore(run);
        QVERIFY(run->measured().has_value());

        // The same plan on a token-id file, as the dialog's Training data gives it: every rank
        // reads the file (another loss than the synthetic data's) and the run keeps its path.
        const QString tokens = dir_.filePath(QStringLiteral("tokens.bin"));
        {
            QFile f(tokens);
            QVERIFY(f.open(QIODevice::WriteOnly));
            for (int i = 0; i < 2 * 8 * 16 + 1; ++i) {
                const quint16 id = qToLittleEndian(static_cast<quint16>((i * 37 + 11) % 128));
                f.write(reinterpret_cast<const char*>(&id), sizeof id);
            }
        }
        DispatchDialog dialog(plan, std::nullopt, w->dispatchUi()->workers(), w.get());
        QVERIFY(dialog.dataFile().isEmpty());  // synthetic unless asked
        dialog.setDataFile(QStringLiteral("  %1 ").arg(tokens));
        dispatch::RunController* on_file =
            w->dispatchUi()->dispatchPlan(plan, std::nullopt, std::nullopt, {0}, 3, 1, false, 0, dialog.dataFile());
        QCOMPARE(waitFinished(on_file), JobState::Succeeded);
        const store::RunStore s(db());
        const store::RunSummary synthetic = s.runDetails(run->runId()).summary, on_tokens = s.runDetails(on_file->runId()).summary;
        QCOMPARE(QString::fromStdString(on_tokens.options.value("data_file", std::string())), tokens);
        QVERIFY(!synthetic.options.contains("data_file"));
        QVERIFY(synthetic.final_loss && on_tokens.final_loss);
        QVERIFY2(*synthetic.final_loss != *on_tokens.final_loss, qPrintable(QString::number(*on_tokens.final_loss)));
    }

    void wrongTokenIsRefused() {
        if (!startAgent()) QSKIP("hippie-agent or hippie-engine not found (HIPPIE_BIN_DIR, HIPPIE_ENGINE)");
        auto w = window();
        const int row = addAgent(*w, QStringLiteral("not-the-token"));
        QVERIFY2(waitState(w->dispatchUi()->workers(), row, QStringLiteral("refused")), qPrintable(w->dispatchUi()->workers()->stateText(row)));
    }

    // An agent that goes away shows why, and comes back to "ready" by itself once it runs again
    // (on the same port), without the user doing anything.
    void agentThatComesBackIsReadyAgain() {
        const QString agent = agentBinary();
        if (agent.isEmpty() || engine_.isEmpty()) QSKIP("hippie-agent or hippie-engine not found (HIPPIE_BIN_DIR, HIPPIE_ENGINE)");
        QTcpServer probe;  // a free port to come back on
        QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
        const quint16 port = probe.serverPort();
        probe.close();
        QFile token(dir_.filePath(QStringLiteral("token-restart")));
        QVERIFY(token.open(QIODevice::WriteOnly));
        token.write(kToken.toUtf8() + "\n");
        token.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        token.close();
        const QStringList args = {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(port), QStringLiteral("--token-file"),
                                  token.fileName(), QStringLiteral("--work-dir"), dir_.filePath(QStringLiteral("agent-restart")),
                                  QStringLiteral("--engine"), engine_, QStringLiteral("--heartbeat-ms"), QStringLiteral("200")};
        auto startOne = [&](QProcess& p) {
            p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
            p.start(agent, args);
            return p.waitForStarted(kAgentTimeoutMs) && p.waitForReadyRead(kAgentTimeoutMs);  // its "listening" line
        };
        QProcess first;
        QVERIFY(startOne(first));

        auto w = window();
        WorkersPanel* panel = w->dispatchUi()->workers();
        panel->setRetryInterval(300);
        jobs::AgentAddress a;
        a.host = QStringLiteral("127.0.0.1");
        a.port = port;
        a.token = kToken;
        const int row = panel->addAgent(a, false);
        QVERIFY2(waitState(panel, row, QStringLiteral("ready")), qPrintable(panel->stateText(row)));

        first.kill();
        first.waitForFinished(5000);
        QVERIFY2(QTest::qWaitFor([&] { return panel->isRetrying(row); }, kAgentTimeoutMs), qPrintable(panel->stateText(row)));
        QVERIFY2(panel->stateText(row).contains(QLatin1String("trying again")), qPrintable(panel->stateText(row)));

        QProcess second;
        QVERIFY(startOne(second));
        QVERIFY2(waitState(panel, row, QStringLiteral("ready")), qPrintable(panel->stateText(row)));
        second.terminate();
        second.waitForFinished(5000);
    }

    void remoteRunSucceeds() {
        if (!startAgent()) QSKIP("hippie-agent or hippie-engine not found (HIPPIE_BIN_DIR, HIPPIE_ENGINE)");
        auto w = window();
        WorkersPanel* p = w->dispatchUi()->workers();
        const int row = addAgent(*w, kToken);
        QVERIFY2(waitState(p, row, QStringLiteral("ready")), qPrintable(p->stateText(row)));
        dispatch::RunController* run =
            w->dispatchUi()->dispatchPlan(loadPlanFile(plan_file_.toStdString()), std::nullopt, std::nullopt, {row}, 3, 1);
        QCOMPARE(waitFinished(run), JobState::Succeeded);
        checkSucceededInStore(run);
    }

    // Rank 0 on the agent, rank 1 on this machine: the agent's port reaches the local rank.
    void splitRunSucceeds() {
        if (!startAgent()) QSKIP("hippie-agent or hippie-engine not found (HIPPIE_BIN_DIR, HIPPIE_ENGINE)");
        auto w = window();
        WorkersPanel* p = w->dispatchUi()->workers();
        const int row = addAgent(*w, kToken);
        QVERIFY2(waitState(p, row, QStringLiteral("ready")), qPrintable(p->stateText(row)));
        dispatch::RunController* run =
            w->dispatchUi()->dispatchPlan(loadPlanFile(plan_file_.toStdString()), std::nullopt, std::nullopt, {row, 0}, 3, 1);
        QCOMPARE(waitFinished(run), JobState::Succeeded);
        QCOMPARE(run->shares().size(), size_t(2));
        QCOMPARE(run->shares()[0].first_rank, 0);
        QCOMPARE(run->shares()[1].first_rank, 1);
        checkSucceededInStore(run);
        const store::RunStore s(db());
        std::set<int> sources;
        for (const store::StoredEvent& e : s.runDetails(run->runId()).events) sources.insert(e.source);
        QVERIFY(sources == (std::set<int>{0, 1}));
    }

    // Last: every run of this suite is in the history, newest first; filters narrow it.
    void historyListsEveryRun() {
        if (engine_.isEmpty()) QSKIP("hippie-engine not found: no runs were made");
        auto w = window();
        QVERIFY(w->start(testing::zooStart("gpt2-small", QStringLiteral("cpu-local"))));
        w->show();
        HistoryPage* h = w->dispatchUi()->history();
        QSignalSpy refreshed(h, &HistoryPage::refreshed);
        h->refresh();
        QVERIFY(refreshed.wait(10000));
        const int all = h->rowCount();
        QVERIFY(all >= (agentBinary().isEmpty() ? 1 : 3));
        for (int r = 1; r < all; ++r) QVERIFY(h->runAt(r - 1) > h->runAt(r));
        h->selectRuns({h->runAt(0)});
        QVERIFY(QTest::qWaitFor([&] { return !h->isBusy(); }, 10000));
        saveScreenshot(*w, MainWindow::Page::History, "run-history.png");
    }
};

QTEST_MAIN(TestDispatch)
#include "test_dispatch.moc"
