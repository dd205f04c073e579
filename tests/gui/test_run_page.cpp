// The run page and the run history as a user reads them (issue 18, item 10): a run's step axis
// stays readable at 200 steps, legends sit beside the charts, memory in a unit with digits,
// ranks that ran on CPUs read "CPU", a cancelled run keeps what it plotted and says when it was
// cancelled, and Compare two names each metric once with the workers readable.
#include <QLabel>
#include <QtTest>

#include <qcustomplot.h>

#include <cmath>
#include <set>

#include "app/dispatch/step_tally.h"
#include "app/store/run_store.h"
#include "app/studio/dispatch/run_comparison.h"
#include "app/studio/dispatch/dispatch_ui.h"
#include "app/studio/dispatch/run_view.h"
#include "app/studio/main_window.h"
#include "planners/common/warmup.h"
#include "planners/sim/trace_json.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/gantt/schedule_view.h"
#include "widgets/memory/memory_plot.h"

using namespace hippie;
using namespace hippie::studio;
using nlohmann::json;

namespace {

constexpr int kSteps = 200;
constexpr int kRanks = 2;
constexpr double kStepS = 0.05;

// The warm-up steps (planners/common/warmup.h) take longer than the rest, as they do.
double stepSeconds(int step) { return step < kWarmupSteps ? (kWarmupSteps + 1 - step) * kStepS : kStepS; }

json stepEvent(int rank, int step) {
    return {{"event", "step"}, {"rank", rank}, {"step", step}, {"time_s", stepSeconds(step)},
            {"samples_per_s", 8 / stepSeconds(step)}, {"loss", 5.0 - step * 0.01}};
}

// A two-rank trace as the engine sends it: tiny tensors (a few hundred KiB).
Trace tinyTrace() {
    Trace t;
    t.devices = {0, 1};
    t.capacity_bytes = {0, 0};
    for (int d = 0; d < 2; ++d) {
        t.events.push_back({d, 0.0, 0.01, InstrKind::Forward, d, 0, -1, 0});
        t.events.push_back({d, 0.02, 0.04, InstrKind::Backward, d, 0, -1, 0});
        t.memory.push_back({{0.0, 100 * 1024}, {0.01, 300 * 1024}, {0.04, 100 * 1024}});
    }
    t.metrics.iteration_time_s = 0.05;
    t.metrics.peak_memory_bytes = {300 * 1024, 250 * 1024};
    t.metrics.max_peak_memory_bytes = 300 * 1024;
    return t;
}

// A run cancelled after 200 steps on this machine's CPUs, as the store gives it back.
store::RunDetails cancelledCpuRun() {
    store::RunDetails d;
    d.summary.id = 7;
    d.summary.job_id = QStringLiteral("run-20261203-000000-abcdef");
    d.summary.planner = QStringLiteral("hippie");
    d.summary.model = QStringLiteral("gpt-tiny");
    d.summary.cluster = QStringLiteral("dgx-a100-1x8");
    d.summary.state = store::RunState::Cancelled;
    d.summary.message = QStringLiteral("by the user after 200 steps");
    qint64 seq = 0;
    for (int r = 0; r < kRanks; ++r)
        d.events.push_back({0, seq++, json{{"event", "setup"}, {"rank", r}, {"device", "cpu"}}});
    for (int s = 0; s < kSteps; ++s)
        for (int r = 0; r < kRanks; ++r) d.events.push_back({0, seq++, stepEvent(r, s)});
    d.measured_trace = traceToJson(tinyTrace());
    return d;
}

}  // namespace

class TestRunPage : public QObject {
    Q_OBJECT
private slots:
    void cancelledRunKeepsTheMetricsItsStepsMeasured() {
        dispatch::StepTally tally;
        for (int s = 0; s < kSteps; ++s) tally.add(stepEvent(0, s));
        tally.add(json{{"event", "log"}, {"rank", 0}, {"text", "x"}});  // not a step: ignored
        QCOMPARE(tally.steps(), kSteps);
        // The warm-up steps are left out, as the engine's own "done" does.
        QVERIFY(std::abs(*tally.meanStepSeconds() - kStepS) < 1e-12);
        QVERIFY(std::abs(*tally.samplesPerSecond() - 8 / kStepS) < 1e-9);
        QVERIFY(std::abs(*tally.lastLoss() - (5.0 - (kSteps - 1) * 0.01)) < 1e-12);
        const json done = tally.asDoneEvent(0);
        QCOMPARE(done.value("event", ""), std::string("done"));
        QCOMPARE(done.value("steps", 0), kSteps);
        QCOMPARE(done.value("warmup_steps", -1), kWarmupSteps);
        QVERIFY(dispatch::StepTally().asDoneEvent(0).is_null());
        // A run cancelled within its warm-up keeps its last step's time: two steps, the first
        // left out; one step, kept.
        dispatch::StepTally two;
        two.add(stepEvent(0, 0));
        two.add(stepEvent(0, 1));
        QVERIFY(std::abs(*two.meanStepSeconds() - stepSeconds(1)) < 1e-12);
        QCOMPARE(two.asDoneEvent(0).value("warmup_steps", -1), 1);
        dispatch::StepTally one;
        one.add(stepEvent(0, 0));
        QVERIFY(std::abs(*one.meanStepSeconds() - stepSeconds(0)) < 1e-12);
    }

    void cancelledRunIsShownWithItsStepsAndWhen() {
        RunView view;
        view.resize(1400, 900);
        view.show();
        view.showStored(cancelledCpuRun(), std::nullopt, std::nullopt, QStringLiteral("no prediction"));
        QCOMPARE(view.lossPoints(), kSteps * kRanks);
        QVERIFY2(!view.stateText().contains(QStringLiteral("cancelled — cancelled")), qPrintable(view.stateText()));
        QVERIFY2(view.stateText().contains(QStringLiteral("by the user after 200 steps")), qPrintable(view.stateText()));
    }

    void stepAxisStaysReadableAndLegendsAreBesideTheData() {
        RunView view;
        view.resize(1400, 900);
        view.show();
        view.showStored(cancelledCpuRun(), std::nullopt, std::nullopt, QString());
        for (QCustomPlot* p : {view.lossPlot(), view.throughputPlot()}) {
            p->replot();
            const QVector<double> ticks = p->xAxis->tickVector();
            QVERIFY2(ticks.size() >= 3 && ticks.size() <= 12, qPrintable(QString::number(ticks.size())));
            for (double t : ticks) QCOMPARE(t, std::round(t));  // whole steps
            // The legend is a layout element of its own, not an inset over the axis rect.
            QVERIFY(p->legend->visible());
            QVERIFY(!p->axisRect()->insetLayout()->elements(false).contains(p->legend));
            QVERIFY(!p->axisRect()->rect().intersects(p->legend->outerRect()));
        }
    }

    // The run page inside the studio at 1280x800, beside the Setup dock: every chart keeps an
    // axis area a reader can use, its legend beside it, and the step axis its whole-step ticks.
    // With HIPPIE_SCREENSHOT_DIR set the window is saved there (run-stored-1280.png).
    void runPageIsReadableAt1280x800() {
        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.dispatchUi());
        w.showPage(MainWindow::Page::Runs);
        RunView* view = w.dispatchUi()->runView();
        view->showStored(cancelledCpuRun(), tinyTrace(), std::nullopt, QString());
        QCoreApplication::processEvents();
        const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR");
        if (!dir.isEmpty()) QVERIFY(w.grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/run-stored-1280.png")));
        for (QCustomPlot* p : {view->lossPlot(), view->throughputPlot(), view->memoryPlot()}) {
            p->replot(QCustomPlot::rpImmediateRefresh);
            const QRect axes = p->axisRect()->rect();
            QVERIFY2(axes.width() >= 150 && axes.height() >= 80,
                     qPrintable(QStringLiteral("%1: axes %2x%3").arg(p->yAxis->label()).arg(axes.width()).arg(axes.height())));
            QVERIFY(!p->legend->visible() || !axes.intersects(p->legend->outerRect()));
        }
        for (QCustomPlot* p : {view->lossPlot(), view->throughputPlot()}) {
            const QVector<double> ticks = p->xAxis->tickVector();
            QVERIFY2(ticks.size() >= 3 && ticks.size() <= 12, qPrintable(QString::number(ticks.size())));
        }
    }

    // Before any run the page says where runs come from, with no empty charts; a run shows them.
    void emptyPageSaysWhereRunsComeFrom() {
        RunView view;
        view.resize(1000, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(!view.lossPlot()->isVisible());
        QVERIFY(!view.predictedView()->isVisible());
        const QList<QLabel*> labels = view.findChildren<QLabel*>();
        QVERIFY(std::any_of(labels.begin(), labels.end(), [](const QLabel* l) {
            return l->isVisible() && l->text().contains(QStringLiteral("Run ▸ Run selected plan on workers… (Ctrl+Shift+R)"));
        }));
        view.showStored(cancelledCpuRun(), std::nullopt, std::nullopt, QString());
        QVERIFY(view.lossPlot()->isVisible());
        QVERIFY(view.measuredView()->isVisible());
    }

    void memoryIsInAUnitWithDigits() {
        RunView view;
        view.resize(1400, 900);
        view.show();
        view.showStored(cancelledCpuRun(), std::nullopt, std::nullopt, QString());
        QCOMPARE(view.memoryPlot()->yAxis->label(), QStringLiteral("memory (KiB)"));
        const auto* bars = qobject_cast<QCPBars*>(view.memoryPlot()->plottable(0));
        QVERIFY(bars);
        QCOMPARE(bars->data()->at(0)->value, 300.0);  // 300 KiB, not 0.0003 GiB
    }

    void cpuRanksAreLabelledCpu() {
        RunView view;
        view.showStored(cancelledCpuRun(), std::nullopt, std::nullopt, QString());
        const auto ticker = view.measuredView()->gantt()->valueAxis()->ticker().dynamicCast<QCPAxisTickerText>();
        QVERIFY(ticker);
        const QStringList labels = ticker->ticks().values();
        QCOMPARE(labels, (QStringList{QStringLiteral("CPU 0"), QStringLiteral("CPU 1")}));
        QCOMPARE(view.memoryPlot()->plottableCount(), 1);
        QCOMPARE(view.measuredView()->memory()->graph(0)->name(), QStringLiteral("CPU 0"));
    }

    void compareTwoNamesEachMetricOnceWithReadableWorkers() {
        dispatch::StoredRun a, b;
        a.details.summary.id = 1;
        a.details.summary.final_loss = 2.5;
        a.details.summary.workers = json::array({json{{"host", ""}, {"port", 0}, {"first_rank", 0}, {"rank_count", 4}}});
        a.details.metrics = {{QString::fromLatin1(store::kMetricFinalLoss), 2.5},
                             {QString::fromLatin1(store::kMetricStepS), 0.1},
                             {QStringLiteral("step_error_percent"), 3.0},
                             {QStringLiteral("peak_rss_bytes"), 1e9}};
        b.details.summary.id = 2;
        b.details.summary.workers = json::array({json{{"host", "gpu1"}, {"port", 7469}, {"first_rank", 0}, {"rank_count", 2}},
                                                 json{{"host", "gpu2"}, {"port", 7469}, {"first_rank", 2}, {"rank_count", 1}}});
        const std::vector<ComparedRow> rows = compareRuns(a, b);
        std::set<QString> names;
        for (const ComparedRow& r : rows) {
            QVERIFY2(names.insert(r.name).second, qPrintable(QStringLiteral("twice: ") + r.name));
            QVERIFY2(!r.name.contains(QLatin1Char('_')), qPrintable(r.name));
        }
        QVERIFY(names.contains(QStringLiteral("final loss")));
        QVERIFY(names.contains(QStringLiteral("peak rss bytes")));
        QVERIFY(!names.contains(QStringLiteral("step error percent")));  // shown as "error %"
        const auto workers = std::find_if(rows.begin(), rows.end(), [](const ComparedRow& r) { return r.name == QStringLiteral("workers"); });
        QVERIFY(workers != rows.end());
        QCOMPARE(workers->first, QStringLiteral("this machine ranks 0–3"));
        QCOMPARE(workers->second, QStringLiteral("gpu1:7469 ranks 0–1, gpu2:7469 rank 2"));
    }
};

QTEST_MAIN(TestRunPage)
#include "test_run_page.moc"
