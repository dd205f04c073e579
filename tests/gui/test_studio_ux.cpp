// What a user of the studio relies on beyond the pictures: scrolling the Setup dock does not
// change an unfocused spin box; loading another model while planners run leaves no row of
// the previous model; exhaustive is ticked only where it applies; pages cycle with Ctrl+Tab
// and have shortcuts; Right/Space step the teaching page; an error shows in the banner above
// the pages; a failed re-simulation clears the chart; time axes use readable units.
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFile>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QSpinBox>
#include <QTabWidget>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "app/studio/cluster_panel.h"
#include "app/studio/main_window.h"
#include "app/studio/message_label.h"
#include "app/studio/model_panel.h"
#include "app/studio/planner_run_list.h"
#include "app/studio/planners_panel.h"
#include "app/studio/planning_controller.h"
#include "app/studio/schedule_page.h"
#include "app/studio/studio_session.h"
#include "app/studio/teaching_page.h"
#include "planners/algorithms/exhaustive_planner.h"
#include "planners/model/zoo.h"
#include "widgets/common/time_units.h"
#include "widgets/compare/comparison_model.h"
#include "widgets/gantt/schedule_view.h"

#include "studio_start.h"

using namespace hippie;
using namespace hippie::studio;

namespace {
// The Setup dock's scroll area and where `w` lies in its viewport.
QScrollArea* setupScroll(const MainWindow& w) { return qobject_cast<QScrollArea*>(w.setupDock()->widget()); }
QRect inViewport(const QScrollArea* scroll, const QWidget* w) { return {w->mapTo(scroll->viewport(), QPoint(0, 0)), w->size()}; }

void wheelDown(QWidget* w) {
    const QPointF centre = QRectF(w->rect()).center();
    QWheelEvent wheel(centre, w->mapToGlobal(centre), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                      false);
    QApplication::sendEvent(w, &wheel);
}

}  // namespace

class TestStudioUx : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void wheelOverAnUnfocusedSpinBoxDoesNotChangeIt() {
        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        auto* budget = w.plannersPanel()->findChild<QDoubleSpinBox*>();
        QVERIFY(budget);
        const double before = budget->value();
        QVERIFY(!budget->hasFocus());
        const QPoint centre = budget->rect().center();
        QWheelEvent wheel(centre, budget->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(budget, &wheel);
        QCOMPARE(budget->value(), before);
        // Focused, the wheel changes it as usual.
        budget->setFocus();
        QTRY_VERIFY(budget->hasFocus());
        QWheelEvent again(centre, budget->mapToGlobal(centre), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(budget, &again);
        QVERIFY(budget->value() != before);
    }

    // The cluster panel says how much of a device's memory its runtime reserves (the memory
    // field's tooltip), keeps that reserve through edits, and refuses a memory at or below it.
    void clusterPanelKeepsTheRuntimesReserve() {
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small", QStringLiteral("dgx-a100-1x8"))));
        auto* panel = w.findChild<ClusterPanel*>();
        QVERIFY(panel);
        QDoubleSpinBox* memory = nullptr;
        for (QDoubleSpinBox* box : panel->findChildren<QDoubleSpinBox*>())
            if (box->toolTip().contains(QStringLiteral("reserved"))) memory = box;
        QVERIFY(memory);
        QVERIFY2(memory->toolTip().contains(QStringLiteral("1.03 GiB is reserved")), qPrintable(memory->toolTip()));
        QPushButton* apply = nullptr;
        for (QPushButton* b : panel->findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Apply edits")) apply = b;
        QVERIFY(apply);
        const hippie::Cluster before = w.session()->cluster();
        memory->setValue(1.0);
        apply->click();
        auto* message = panel->findChild<MessageLabel*>();
        QVERIFY(message && message->showsError());
        QVERIFY2(message->text().contains(QStringLiteral("1.03 GiB its runtime reserves")), qPrintable(message->text()));
        QCOMPARE(w.session()->cluster(), before);
        memory->setValue(80.0);
        apply->click();
        QVERIFY(!message->showsError());
        QCOMPARE(w.session()->cluster().device(0).memory_bytes, int64_t{80} << 30);
        QCOMPARE(w.session()->cluster().device(0).reserved_bytes, before.device(0).reserved_bytes);
    }

    // At 1280x800 the studio opens with the Setup dock shown, scrolled to its top, Model and
    // Cluster wholly in view (issue 18: they were scrolled out of view at launch).
    void setupDockOpensWithModelAndClusterInView() {
        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        QVERIFY(w.setupDock()->isVisible());
        QScrollArea* scroll = setupScroll(w);
        QVERIFY(scroll);
        QTest::qWait(50);  // the dock layout settles after the first event loop turn
        QCOMPARE(scroll->verticalScrollBar()->value(), 0);
        const QRect viewport = scroll->viewport()->rect();
        const ClusterPanel* cluster = w.findChild<ClusterPanel*>();
        QVERIFY(cluster);
        for (const QGroupBox* panel : {static_cast<const QGroupBox*>(w.modelPanel()), static_cast<const QGroupBox*>(cluster)}) {
            const QRect r = inViewport(scroll, panel);
            QVERIFY2(viewport.contains(r), qPrintable(QStringLiteral("%1 at %2,%3 %4x%5 in a %6x%7 viewport")
                                                          .arg(panel->title())
                                                          .arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())
                                                          .arg(viewport.width()).arg(viewport.height())));
        }
    }

    // The Setup is taller than a 1280x800 window: the wheel scrolls the dock, over a spin box
    // too (which keeps its value), down to the whole Planners panel.
    void setupDockScrollsToThePlannersAt1280x800() {
        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        QScrollArea* scroll = setupScroll(w);
        QScrollBar* bar = scroll->verticalScrollBar();
        QTRY_COMPARE(bar->value(), 0);
        QVERIFY2(bar->maximum() > 0, "the whole Setup fits at 1280x800: nothing to scroll");
        QVERIFY(!scroll->viewport()->rect().contains(inViewport(scroll, w.plannersPanel())));
        auto* batch = w.modelPanel()->findChild<QSpinBox*>();
        QVERIFY(batch && !batch->hasFocus());
        const int batch_before = batch->value();
        for (int i = 0; i < 100 && bar->value() < bar->maximum(); ++i) wheelDown(batch);
        QCOMPARE(bar->value(), bar->maximum());
        QCOMPARE(batch->value(), batch_before);
        QVERIFY(scroll->viewport()->rect().contains(inViewport(scroll, w.plannersPanel())));
    }

    // The zoo combo: a model applies as soon as it is picked (as a cluster preset does); after
    // Graph JSON… the combo names the file, not the previous model, and Load asks for a zoo
    // model instead of reloading that one.
    void modelComboAppliesAtOnceAndNamesAGraphFile() {
        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        auto* combo = w.modelPanel()->findChild<QComboBox*>(QStringLiteral("zoo-model"));
        QVERIFY(combo);
        QCOMPARE(combo->count(), int(zooModels().size()));
        QCOMPARE(combo->currentText(), QStringLiteral("gpt2-small"));
        const QString next = combo->itemText(combo->currentIndex() + 1);
        combo->setFocus();
        QTest::keyClick(combo, Qt::Key_Down);  // the user's pick: no Load needed
        QCOMPARE(combo->currentText(), next);
        QCOMPARE(QString::fromStdString(w.session()->graph().name), next);

        const QString file = QStringLiteral(HIPPIE_SOURCE_DIR "/resources/examples/tiny-mlp.graph.json");
        QVERIFY(w.modelPanel()->openGraphFile(file));
        QCOMPARE(combo->currentIndex(), -1);
        QCOMPARE(combo->placeholderText(), QStringLiteral("file: tiny-mlp.graph.json"));
        const std::string graph = w.session()->graph().name;
        QPushButton* load = nullptr;
        for (QPushButton* b : w.modelPanel()->findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Load")) load = b;
        QVERIFY(load);
        QTest::mouseClick(load, Qt::LeftButton);
        QVERIFY2(w.modelPanel()->message()->text().contains(QStringLiteral("Pick a zoo model first")),
                 qPrintable(w.modelPanel()->message()->text()));
        QCOMPARE(w.session()->graph().name, graph);
    }

    // The steps: gnmt-8 on dgx-a100-1x8, run the planners, load resnet50 meanwhile.
    void anotherModelLeavesNoRowOfThePrevious() {
        MainWindow w(false);
        QVERIFY(w.start(testing::withPlanners(testing::zooStart("gnmt-8"))));
        QVERIFY(w.isPlanning());
        QVERIFY(w.comparison()->rowCount() > 0);
        ModelSpec resnet;
        resnet.zoo = "resnet50";
        resnet.batch_size = 8;
        QVERIFY(w.modelPanel()->loadZoo(resnet));
        // Every planner thread of the gnmt-8 run returns and its queued answer is delivered.
        w.findChild<PlanningController*>()->waitForThreads();
        QTest::qWait(50);
        QCoreApplication::processEvents();
        QCOMPARE(w.comparison()->rowCount(), 0);
        QCOMPARE(w.plannersPanel()->runs()->rowCount(), 0);
        QVERIFY(!w.isPlanning());
    }

    void exhaustiveIsTickedOnlyWhereItApplies() {
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));  // 14 layers > the exhaustive search's 12
        const QString ex = QString::fromLatin1(ExhaustivePlanner::kName);
        QVERIFY(!w.plannersPanel()->isApplicable(ex));
        QVERIFY(!w.plannersPanel()->checkedPlanners().contains(ex));
        ModelSpec mlp;
        mlp.zoo = "mlp";  // 9 layers: exhaustive applies, and it is ticked again (it is a default planner)
        QVERIFY(w.modelPanel()->loadZoo(mlp));
        QVERIFY(w.plannersPanel()->isApplicable(ex));
        QCOMPARE(w.plannersPanel()->checkedPlanners().contains(ex), PlannersPanel::defaultPlanners().contains(ex));
    }

    void pagesCycleAndHaveShortcuts() {
        MainWindow w(false);
        w.show();
        QVERIFY(QTest::qWaitForWindowActive(&w) || true);
        QCOMPARE(w.tabs()->currentIndex(), 0);
        w.cyclePage(1);
        QCOMPARE(w.tabs()->currentIndex(), 1);
        w.cyclePage(-1);
        w.cyclePage(-1);
        QCOMPARE(w.tabs()->currentIndex(), w.tabs()->count() - 1);
        // Every page has a Ctrl+digit in the View menu, and the Setup dock can be reopened there.
        QStringList shortcuts;
        bool setup_listed = false;
        for (QAction* a : w.viewMenu()->actions()) {
            shortcuts << a->shortcut().toString();
            if (a->menu())
                for (QAction* d : a->menu()->actions()) setup_listed = setup_listed || d == w.setupDock()->toggleViewAction();
        }
        for (int i = 1; i <= w.tabs()->count(); ++i) QVERIFY2(shortcuts.contains(QStringLiteral("Ctrl+%1").arg(i)), qPrintable(shortcuts.join(',')));
        QVERIFY(shortcuts.contains(QStringLiteral("Ctrl+Tab")));
        QVERIFY(setup_listed);
        w.setupDock()->close();
        w.setupDock()->toggleViewAction()->trigger();
        QVERIFY(w.setupDock()->isVisible());
    }

    void teachingStepsWithRightAndSpace() {
        TeachingPage page;
        page.show();
        QVERIFY(page.loadLesson(2));
        page.setTime(0);
        QTest::keyClick(&page, Qt::Key_Right);
        const double after_right = page.time();
        QVERIFY(after_right > 0);
        QTest::keyClick(&page, Qt::Key_Space);
        QVERIFY(page.time() > after_right);
        QTest::keyClick(&page, Qt::Key_Left);
        QCOMPARE(page.time(), after_right);
    }

    void aBadGraphFileIsShownAboveThePages() {
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("hostname.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("vm-1234\n");
        f.close();
        QVERIFY(!w.modelPanel()->openGraphFile(bad));
        QVERIFY2(w.bannerText().contains(QStringLiteral("hostname.json")), qPrintable(w.bannerText()));
        // Loading a model that works hides it again.
        ModelSpec ok;
        ok.zoo = "mlp";
        QVERIFY(w.modelPanel()->loadZoo(ok));
        QVERIFY(w.bannerText().isEmpty());
    }

    void aGraphFileErrorNamesTheJsonPathAndWhatToDo() {
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("no-name.json"));
        QFile in(QStringLiteral(HIPPIE_SOURCE_DIR "/resources/examples/tiny-mlp.graph.json"));
        QVERIFY(in.open(QIODevice::ReadOnly));
        nlohmann::json g = nlohmann::json::parse(in.readAll().toStdString());
        QVERIFY(g["ops"].size() > 3);
        g["ops"][3].erase("name");
        QFile out(bad);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QByteArray::fromStdString(g.dump()));
        out.close();
        QVERIFY(!w.modelPanel()->openGraphFile(bad));
        const QString text = w.bannerText();
        QVERIFY2(text.contains(QStringLiteral("no-name.json")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("ops[3]")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("field 'name' is missing")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Fix the file")), qPrintable(text));
    }

    void invalidMicroBatchesInTheWindowClearTheChart() {
        // The whole path: a plan is shown, the user types 999 micro-batches (they do not divide
        // the global batch of 64), and the previous chart must not stay as if it answered.
        MainWindow w(false);
        QVERIFY(w.start(testing::withPlanners(testing::zooStart("gpt2-small"), QStringList{QStringLiteral("data-parallel")})));
        QTRY_VERIFY_WITH_TIMEOUT(w.shownTrace().has_value() && w.isIdle(), 120000);
        QVERIFY(!w.schedulePage()->view()->trace().events.empty());
        auto* micro = w.schedulePage()->findChild<QSpinBox*>();
        QVERIFY(micro);
        micro->setValue(999);
        QTRY_VERIFY_WITH_TIMEOUT(w.schedulePage()->summaryText().contains(QStringLiteral("nothing is drawn")), 60000);
        QCOMPARE(w.schedulePage()->view()->trace().events.size(), size_t(0));
    }

    void aFailedResimulationClearsTheChart() {
        SchedulePage page;
        page.show();
        // A chart is shown, then the new settings fail: it must not look like their answer.
        Trace t;
        t.devices = {0};
        t.events.push_back({0, 0.0, 1e-3, InstrKind::Forward, 0, 0, -1, 0});
        t.metrics.iteration_time_s = 1e-3;
        Plan p;
        p.planner = "test";
        p.stages = {{0, 0}};
        p.dp = 1;
        p.micro_batches = 1;
        page.showTrace(p, t, Cluster{});
        QCOMPARE(page.view()->gantt() != nullptr, true);
        page.showError(QStringLiteral("999 micro-batches do not divide the global batch of 64"));
        QCOMPARE(page.view()->trace().events.size(), size_t(0));
        QVERIFY(page.summaryText().contains(QStringLiteral("nothing is drawn")));
    }

    void timeAxisUsesReadableUnits() {
        QCOMPARE(QString::fromUtf8(widgets::timeUnitFor(0.0008).name), QStringLiteral("µs"));
        QCOMPARE(QString::fromUtf8(widgets::timeUnitFor(0.032).name), QStringLiteral("ms"));
        QCOMPARE(QString::fromUtf8(widgets::timeUnitFor(2.5).name), QStringLiteral("s"));
        QCOMPARE(QString::fromUtf8(widgets::byteUnitFor(0.0002 * 1024 * 1024 * 1024).name), QStringLiteral("KiB"));
        QCOMPARE(QString::fromUtf8(widgets::byteUnitFor(3.0 * 1024 * 1024).name), QStringLiteral("MiB"));
        // The schedule view labels its axis from the visible span, and zooming in changes it.
        Trace t;
        t.devices = {0};
        t.events.push_back({0, 0.0, 0.030, InstrKind::Forward, 0, 0, -1, 0});
        t.metrics.iteration_time_s = 0.030;
        widgets::ScheduleView view;
        view.resize(1000, 500);
        view.setTrace(t, nullptr);
        QCOMPARE(view.timeAxisLabel(), QStringLiteral("time (ms)"));
        for (int i = 0; i < 30; ++i) view.zoomAt(0.015, 0.8);
        QCOMPARE(view.timeAxisLabel(), QStringLiteral("time (µs)"));
        // Zooming out stops at the iteration.
        for (int i = 0; i < 100; ++i) view.zoomAt(0.015, 1.25);
        QCOMPARE(view.visibleWindow().lower_s, 0.0);
        QVERIFY(view.visibleWindow().upper_s <= 0.030 * 1.01 + 1e-12);
        QCOMPARE(view.timeAxisLabel(), QStringLiteral("time (ms)"));
    }
};

QTEST_MAIN(TestStudioUx)
#include "test_studio_ux.moc"
