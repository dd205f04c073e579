// The main window runs the registered planners without blocking and fills the table; the
// selected plan reaches the schedule page; bad files leave the previous model loaded;
// teaching mode steps; --screenshot writes a PNG.
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/main_window.h"
#include "app/studio/studio_settings.h"
#include "app/studio/studio_session.h"
#include "app/studio/teaching_narrative.h"
#include "app/studio/teaching_page.h"
#include "planners/algorithms/registry.h"
#include "widgets/compare/comparison_model.h"

#include "studio_start.h"

using namespace hippie;
using namespace hippie::studio;

namespace {
}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void runsPlannersWithoutBlocking() {
        QStringList hybrid;
        for (const PlannerInfo& p : plannerRegistry())
            if (p.family == "hybrid") hybrid << QString::fromStdString(p.name);
        // exhaustive is not ticked for gpt2-small (14 layers, beyond its 12): it does not run.
        hybrid.removeAll(QStringLiteral("exhaustive"));
        if (hybrid.isEmpty()) QSKIP("no hybrid planner is registered in this build");

        MainWindow w(false);
        w.show();
        QSignalSpy finished(&w, &MainWindow::planningFinished);
        QElapsedTimer timer;
        timer.start();
        QVERIFY(w.start(testing::withPlanners(testing::zooStart("gpt2-small"))));
        QVERIFY2(timer.elapsed() < 2000, "start() must hand planning to the background");
        // Rows appear at once, one per planner, while the planners run.
        QCOMPARE(w.comparison()->rowCount(), hybrid.size());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 300000);
        QCOMPARE(w.comparison()->rowCount(), hybrid.size());
        QCOMPARE(w.comparison()->finishedCount(), hybrid.size());
        // The best plan is selected and simulated with events for the schedule page.
        QTRY_VERIFY_WITH_TIMEOUT(w.shownTrace().has_value(), 60000);
        QVERIFY(!w.shownTrace()->events.empty());
        QTRY_VERIFY_WITH_TIMEOUT(w.isIdle(), 60000);
    }

    // A window that keeps no settings (screenshots, tests) opens on what a first start opens
    // on: gpt2-small at a batch of 8 in fp16 on dgx-a100-1x8 (it used to take ModelSpec's own
    // defaults, a batch of 1 in fp32, so screenshots showed what no user sees).
    void withoutSettingsOpensOnTheFirstStartDefaults() {
        MainWindow w(false);
        StartOptions nothing;
        nothing.run_planners = false;
        QVERIFY(w.start(nothing));
        const ModelSpec& shown = w.session()->graph().source;
        QCOMPARE(shown.zoo, std::string("gpt2-small"));
        QCOMPARE(shown.batch_size, 8);
        QCOMPARE(shown.precision, Precision::FP16);
        QCOMPARE(w.session()->clusterName(), QString("dgx-a100-1x8"));
        QCOMPARE(StudioSettings{}.model.batch_size, shown.batch_size);
        QCOMPARE(StudioSettings{}.model.precision, shown.precision);
    }

    void badFileKeepsThePreviousModel() {
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        const std::string before = w.session()->graph().name;
        QTemporaryDir dir;
        const QString bad = dir.filePath("bad.json");
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{ not json");
        f.close();
        QVERIFY(!w.session()->loadGraphFile(bad).isEmpty());
        QVERIFY(w.session()->loadGraphFile(bad).contains("bad.json"));
        QCOMPARE(w.session()->graph().name, before);
        QVERIFY(!w.session()->loadClusterFile(dir.filePath("missing.json")).isEmpty());
        QCOMPARE(w.session()->clusterName(), QString("dgx-a100-1x8"));
    }

    void teachingModeSteps() {
        TeachingPage page;
        QVERIFY(page.lessonCount() >= 6);
        for (int i = 0; i < page.lessonCount(); ++i) QVERIFY2(page.loadLesson(i), qPrintable(QString::number(i)));
        QVERIFY(page.loadLesson(2));  // 1F1B
        QCOMPARE(page.time(), 0.0);
        page.step();
        const double t1 = page.time();
        QVERIFY(t1 > 0);
        page.step();
        QVERIFY(page.time() > t1);
        page.stepBack();
        QCOMPARE(page.time(), t1);
        QVERIFY(page.explanation().contains("warm-up"));
        page.setTime(page.endTime() * 0.5);
        QVERIFY(page.explanation().contains("GPU"));
        page.setTime(page.endTime());
        QVERIFY(!page.explanation().contains("warm-up"));
    }

    void screenshotWritesAPng() {
        QTemporaryDir dir;
        const QString png = dir.filePath("studio.png");
        QProcess studio;
        studio.start(QStringLiteral(HIPPIE_BIN_DIR "/hippie-studio"),
                     {"--model", "gpt2-small", "--cluster", "dgx-a100-1x8", "--global-batch", "64", "--screenshot", png});
        QVERIFY(studio.waitForFinished(300000));
        QCOMPARE(studio.exitCode(), 0);
        QVERIFY(QFileInfo(png).size() > 0);
        const QImage image(png);
        QVERIFY(!image.isNull());
        QVERIFY(image.width() >= 800);
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
