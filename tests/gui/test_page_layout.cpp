// The pages with charts as they are seen at 1280x800 and 1600x1000 (issue 18): every chart lies
// wholly in the window, each legend is drawn whole inside its chart (its frame too) and covers no
// axis area, titles and axis labels fit. The Run page is checked for a stored run of four ranks
// and for a run that is live: a stand-in hippie-engine (a shell script given as $HIPPIE_ENGINE)
// replays each rank's events, the first half of the steps, then waits for the test's word before
// its last steps, trace and "done"; each with a prediction and without one (its cluster unknown
// here), the page's charts checked for what it must show in each case. The Schedule and
// Teaching pages with a planned model.
// With HIPPIE_SCREENSHOT_DIR set, the pages are saved there as PNG.
#include <algorithm>

#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QProcess>
#include <QScrollBar>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

#include "app/dispatch/run_controller.h"
#include "app/store/run_store.h"
#include "app/studio/dispatch/dispatch_ui.h"
#include "app/studio/dispatch/run_view.h"
#include "app/studio/compare_page.h"
#include "app/studio/main_window.h"
#include "app/studio/schedule_page.h"
#include "app/studio/teaching_page.h"
#include "engine_fixture.h"
#include "gui_fixtures.h"
#include "widgets/compare/comparison_charts.h"
#include "studio_start.h"
#include "planners/schedule/plan_json.h"
#include "planners/sim/trace_json.h"
#include "widgets/compare/comparison_model.h"
#include "widgets/gantt/schedule_view.h"
#include "widgets/memory/capacity_legend_item.h"

using namespace hippie;
using namespace hippie::studio;
using nlohmann::json;

namespace {

constexpr int kPipeline = 2, kReplicas = 2, kRanks = kPipeline * kReplicas;
constexpr int kSteps = 60;
constexpr int kLiveSteps = kSteps / 2;  // what the stand-in engine sends before it waits
constexpr double kMeasuredSlowdown = 1.3;
constexpr int kRunTimeoutMs = 60 * 1000;
constexpr int kRealRunTimeoutMs = 300 * 1000;  // four LibTorch ranks sharing a loaded CPU
// A cluster no preset names: a run on it has no prediction, and says why.
constexpr const char* kUnknownCluster = "no-such-cluster";
const QString kNoPrediction = QStringLiteral("no prediction: cluster '%1' is not known here").arg(QLatin1String(kUnknownCluster));

testing::Setup pipeline() { return testing::smallPipeline(kPipeline, kReplicas, 4, ScheduleKind::OneFOneB); }

Trace predictedTrace() {
    const testing::Setup s = pipeline();
    return simulateWithEvents(s.problem, s.plan);
}

// What rank `rank` measured in the last step: its device's row of the prediction (the rows are
// in stage order, devices 0, 2, 1, 3), slower.
Trace rankTrace(const Trace& predicted, int rank) {
    const auto row = static_cast<size_t>(std::find(predicted.devices.begin(), predicted.devices.end(), rank) - predicted.devices.begin());
    Trace t;
    t.devices = {rank};
    t.capacity_bytes = {predicted.capacity_bytes[row]};
    for (TraceEvent e : predicted.events)
        if (e.device == rank) {
            e.start_s *= kMeasuredSlowdown;
            e.end_s *= kMeasuredSlowdown;
            t.events.push_back(e);
        }
    std::vector<MemorySample> memory = predicted.memory[row];
    for (MemorySample& m : memory) m.time_s *= kMeasuredSlowdown;
    t.memory.push_back(memory);
    t.metrics.iteration_time_s = predicted.metrics.iteration_time_s * kMeasuredSlowdown;
    t.metrics.peak_memory_bytes = {predicted.metrics.peak_memory_bytes[row]};
    t.metrics.max_peak_memory_bytes = t.metrics.peak_memory_bytes.front();
    return t;
}

json stepEvent(int rank, int step) {
    const double time_s = step == 0 ? 0.4 : 0.1 + 0.001 * rank;
    return {{"event", "step"}, {"rank", rank}, {"step", step}, {"time_s", time_s},
            {"samples_per_s", 16 / time_s}, {"loss", 6.0 - 0.02 * step - 0.01 * rank}};
}

// A run of four GPU ranks that succeeded, as the store gives it back.
store::RunDetails storedRun(const Trace& predicted) {
    store::RunDetails d;
    d.summary.id = 3;
    d.summary.job_id = QStringLiteral("run-20261204-120000-4ranks");
    d.summary.planner = QStringLiteral("hippie");
    d.summary.model = QStringLiteral("gpt2-small");
    d.summary.cluster = QStringLiteral("dgx-a100-1x8");
    d.summary.state = store::RunState::Succeeded;
    d.plan = planToJson(pipeline().plan);  // as the store keeps it: the Gantt rows follow its stages
    qint64 seq = 0;
    for (int r = 0; r < kRanks; ++r)
        d.events.push_back({0, seq++, json{{"event", "setup"}, {"rank", r}, {"device", "cuda:" + std::to_string(r)}}});
    for (int s = 0; s < kSteps; ++s)
        for (int r = 0; r < kRanks; ++r) d.events.push_back({0, seq++, stepEvent(r, s)});
    std::vector<json> traces;
    for (int r = 0; r < kRanks; ++r) traces.push_back(json{{"event", "trace"}, {"rank", r}, {"step", kSteps - 1}, {"trace", traceToJson(rankTrace(predicted, r))}});
    Trace measured = predicted;  // all ranks' rows, in the prediction's row order
    measured.events.clear();
    measured.memory.clear();
    measured.metrics.peak_memory_bytes.clear();
    for (int device : predicted.devices) {
        const Trace t = rankTrace(predicted, device);
        measured.events.insert(measured.events.end(), t.events.begin(), t.events.end());
        measured.memory.push_back(t.memory.front());
        measured.metrics.peak_memory_bytes.push_back(t.metrics.peak_memory_bytes.front());
    }
    measured.metrics.iteration_time_s = predicted.metrics.iteration_time_s * kMeasuredSlowdown;
    d.measured_trace = traceToJson(measured);
    return d;
}

// The stand-in engine: `run ... --rank N ...` prints rank-N-live.jsonl, waits for the file "go",
// then prints rank-N-end.jsonl. It gives up after two minutes so that a failed test leaves no
// process behind.
QString writeStandInEngine(const QDir& dir) {
    const QString path = dir.filePath(QStringLiteral("hippie-engine"));
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(QStringLiteral("#!/bin/sh\n"
                           "cd '%1' || exit 2\n"
                           "rank=\n"
                           "while [ $# -gt 0 ]; do [ \"$1\" = --rank ] && rank=$2; shift; done\n"
                           "cat rank-$rank-live.jsonl\n"
                           "n=0\n"
                           "while [ ! -e go ]; do sleep 0.05; n=$((n+1)); [ $n -gt 2400 ] && exit 1; done\n"
                           "cat rank-$rank-end.jsonl\n")
                .arg(dir.absolutePath())
                .toUtf8());
    f.close();
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
    return path;
}

bool writeLines(const QString& path, const std::vector<json>& events) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return false;
    for (const json& e : events) f.write(QByteArray::fromStdString(e.dump()) + '\n');
    return true;
}

// Each rank's events, split where the stand-in engine waits.
bool writeRankEvents(const QDir& dir, const Trace& predicted) {
    for (int r = 0; r < kRanks; ++r) {
        std::vector<json> live = {json{{"event", "setup"}, {"rank", r}, {"device", "cpu"}}}, end;
        for (int s = 0; s < kSteps; ++s) (s < kLiveSteps ? live : end).push_back(stepEvent(r, s));
        end.push_back(json{{"event", "trace"}, {"rank", r}, {"step", kSteps - 1}, {"trace", traceToJson(rankTrace(predicted, r))}});
        end.push_back(json{{"event", "done"}, {"rank", r}, {"steps", kSteps}, {"mean_step_s", 0.1 + 0.001 * r},
                           {"samples_per_s", 16 / (0.1 + 0.001 * r)}, {"peak_rss_bytes", 300 << 20}, {"loss", 4.8},
                           {"warmup_steps", 3}});
        if (!writeLines(dir.filePath(QStringLiteral("rank-%1-live.jsonl").arg(r)), live) ||
            !writeLines(dir.filePath(QStringLiteral("rank-%1-end.jsonl").arg(r)), end))
            return false;
    }
    return true;
}

// The rectangle QCustomPlot paints a legend's frame in: one pixel past its rect on the right
// and at the bottom.
QRect legendFrame(const QCPLegend* legend) { return legend->outerRect().adjusted(0, 0, 1, 1); }

// The legend's entries: itemCount() counts the cells of its grid, empty ones too.
std::vector<const QCPAbstractLegendItem*> entries(const QCPLegend* legend) {
    std::vector<const QCPAbstractLegendItem*> items;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (const QCPAbstractLegendItem* item = legend->item(i)) items.push_back(item);
    return items;
}
int entryCount(const QCustomPlot* plot) { return static_cast<int>(entries(plot->legend).size()); }

QString describe(const QRect& r) { return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height()); }

// `plot` lies wholly in the window, its legend is shown whole inside it, and covers no axis rect.
void checkChart(QCustomPlot* plot, const QString& name) {
    plot->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY2(plot->isVisible(), qPrintable(name));
    QVERIFY2(plot->visibleRegion() == QRegion(plot->rect()),
             qPrintable(QStringLiteral("%1: shown %2 of %3").arg(name, describe(plot->visibleRegion().boundingRect()), describe(plot->rect()))));
    if (const auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0)))
        QVERIFY2(QFontMetrics(title->font()).horizontalAdvance(title->text()) <= plot->viewport().width(),
                 qPrintable(QStringLiteral("%1: title '%2' wider than the chart").arg(name, title->text())));
    QVERIFY2(plot->legend->visible() && entryCount(plot) > 0, qPrintable(name));
    const QRect frame = legendFrame(plot->legend);
    QVERIFY2(plot->viewport().contains(frame),
             qPrintable(QStringLiteral("%1: legend frame %2 outside the chart's %3").arg(name, describe(frame), describe(plot->viewport()))));
    for (QCPAxisRect* axes : plot->axisRects())
        QVERIFY2(!axes->rect().intersects(frame),
                 qPrintable(QStringLiteral("%1: legend %2 over the axes %3").arg(name, describe(frame), describe(axes->rect()))));
    // Every entry whole inside the frame and at its full size: a legend given less room than it
    // needs squeezes its entries until their names run into each other.
    const std::vector<const QCPAbstractLegendItem*> items = entries(plot->legend);
    for (size_t i = 0; i < items.size(); ++i) {
        const QCPAbstractLegendItem* entry = items[i];
        const QRect item = entry->outerRect();
        const QSize needed = entry->minimumOuterSizeHint();
        QVERIFY2(frame.contains(item), qPrintable(QStringLiteral("%1: entry %2 at %3 outside %4").arg(name).arg(i).arg(describe(item), describe(frame))));
        QVERIFY2(item.width() >= needed.width() && item.height() >= needed.height(),
                 qPrintable(QStringLiteral("%1: entry %2 is %3, needs %4x%5").arg(name).arg(i).arg(describe(item)).arg(needed.width()).arg(needed.height())));
    }
}

// One entry per device in the Gantt rows' order (the plan's 2 stages x 2 replicas: stage 0's
// GPUs 0 and 2, then stage 1's 1 and 3); the capacity, far above these curves, in a legend of
// its own beside theirs, drawn whole inside the chart.
void checkMemoryCurvesLegend(const widgets::ScheduleView* view, const QString& noun) {
    const QCustomPlot* plot = view->plot();
    const std::vector<const QCPAbstractLegendItem*> items = entries(plot->legend);
    QCOMPARE(int(items.size()), kRanks);
    QCOMPARE(int(view->rowLayout().rows.size()), kRanks);
    for (int r = 0; r < kRanks; ++r) {
        const auto* device = qobject_cast<const QCPPlottableLegendItem*>(items[size_t(r)]);
        QVERIFY(device);
        QCOMPARE(const_cast<QCPPlottableLegendItem*>(device)->plottable()->name(),
                 QStringLiteral("%1 %2").arg(noun).arg(view->rowLayout().rows[size_t(r)].device));
    }
    QVERIFY(view->rowLayout().by_stage);  // the run's plan groups the rows
    QCOMPARE(view->rowLayout().rows[1].device, 2);
    const QList<widgets::CapacityLegendItem*> capacities = plot->findChildren<widgets::CapacityLegendItem*>();
    QCOMPARE(capacities.size(), 1);
    // An A100 40GB: what tensors may take, the driver's and the CUDA context's share left out.
    QCOMPARE(capacities[0]->text(), QStringLiteral("capacity 38.97 GiB (off scale)"));
    const QCPLegend* beside = capacities[0]->parentLegend();
    QVERIFY(beside->visible());
    const QRect frame = legendFrame(beside);
    QVERIFY2(plot->viewport().contains(frame), qPrintable(describe(frame)));
    QVERIFY(!frame.intersects(plot->legend->outerRect()));
    QVERIFY(capacities[0]->outerRect().width() >= capacities[0]->minimumOuterSizeHint().width());
}

// A Gantt chart's axes take its whole width, also with nothing to draw yet (an empty legend
// once capped them at 119 of 446 px), and its memory curves are tall enough for their label.
void checkScheduleAxes(widgets::ScheduleView* view, const QString& name) {
    view->plot()->replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(view->plot()->axisRect()->outerRect().width(), view->plot()->viewport().width());
    const QCPAxisRect* memory = view->plot()->axisRects().value(1);
    QVERIFY(memory);
    const QCPAxis* y = memory->axis(QCPAxis::atLeft);
    const int length = QFontMetrics(y->labelFont()).horizontalAdvance(y->label());
    QVERIFY2(length <= memory->rect().height(),
             qPrintable(QStringLiteral("%1: label '%2' is %3 px, the curves %4 px high").arg(name, y->label()).arg(length).arg(memory->rect().height())));
}

// What the Run page has at the moment it is checked: a prediction or not (then its title says
// why), a measured trace or not yet.
struct RunShows {
    bool predicted = false;
    bool measured = false;
    int ranks = kRanks;
};

// A Gantt chart of the Run page with a trace (its memory legend whole) or empty (no legend).
void checkRunGantt(widgets::ScheduleView* view, bool has_trace, const QString& name) {
    checkScheduleAxes(view, name);
    QVERIFY2(view->trace().events.empty() != has_trace, qPrintable(name + (has_trace ? QStringLiteral(": no trace") : QStringLiteral(": a trace"))));
    if (has_trace) {
        checkChart(view->plot(), name + QStringLiteral(" memory curves"));
        return;
    }
    QVERIFY2(!view->plot()->legend->visible(), qPrintable(name + QStringLiteral(": a legend of nothing")));
    // No unit and no numbers on the memory axis of nothing ("memory (B)" from 0 to 1 it read).
    const QCPAxis* memory = view->plot()->axisRects().value(1)->axis(QCPAxis::atLeft);
    QCOMPARE(memory->label(), QStringLiteral("memory"));
    QVERIFY(!memory->tickLabels());
}

void checkRunPage(RunView* view, const QString& when, RunShows shows) {
    checkRunGantt(view->predictedView(), shows.predicted, when + QStringLiteral(" predicted"));
    checkRunGantt(view->measuredView(), shows.measured, when + QStringLiteral(" measured"));
    const QString title = view->predictionTitle();
    QVERIFY2(title.contains(shows.predicted ? QStringLiteral("simulated on") : QStringLiteral("no prediction: ")), qPrintable(when + QStringLiteral(": ") + title));
    checkChart(view->lossPlot(), when + QStringLiteral(" loss"));
    checkChart(view->throughputPlot(), when + QStringLiteral(" throughput"));
    // Peak memory: a bar series for the prediction and one for the measurement, where they are.
    const int series = int(shows.predicted) + int(shows.measured);
    QCOMPARE(entryCount(view->memoryPlot()), series);
    if (series > 0) {
        checkChart(view->memoryPlot(), when + QStringLiteral(" peak memory"));
        return;
    }
    // Nothing to show: a still frame over the ranks (it once widened at every step, to ranks
    // -50..50 and 600000 "memory"), no numbers on its memory axis.
    const QCustomPlot* memory = view->memoryPlot();
    QVERIFY(!memory->legend->visible());
    QCOMPARE(memory->xAxis->range().lower, -0.5);
    QCOMPARE(memory->xAxis->range().upper, shows.ranks - 0.5);
    QCOMPARE(memory->yAxis->range().lower, 0.0);
    QCOMPARE(memory->yAxis->range().upper, 1.0);
    QVERIFY(!memory->yAxis->tickLabels());
}

void saveScreenshot(QWidget& w, const QString& name) {
    const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR");
    if (!dir.isEmpty()) QVERIFY(w.grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + name));
}

QSize sizeOf(const QString& name) { return name == QLatin1String("1280x800") ? QSize(1280, 800) : QSize(1600, 1000); }

}  // namespace

class TestPageLayout : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void storedRunShowsEveryLegendWhole_data() {
        QTest::addColumn<QString>("size");
        QTest::addColumn<bool>("predicted");
        for (const char* size : {"1280x800", "1600x1000"}) {
            QTest::addRow("%s, predicted", size) << QString::fromLatin1(size) << true;
            QTest::addRow("%s, no prediction", size) << QString::fromLatin1(size) << false;
        }
    }
    void storedRunShowsEveryLegendWhole() {
        QFETCH(QString, size);
        QFETCH(bool, predicted);
        MainWindow w(false);
        w.resize(sizeOf(size));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.dispatchUi());
        w.showPage(MainWindow::Page::Runs);
        RunView* view = w.dispatchUi()->runView();
        const testing::Setup s = pipeline();
        const Trace trace = predictedTrace();  // what the stored run measured is made from it
        if (predicted) view->showStored(storedRun(trace), trace, s.problem.cluster, QString());
        else view->showStored(storedRun(trace), std::nullopt, std::nullopt, kNoPrediction);
        QCoreApplication::processEvents();
        QCOMPARE(view->lossPoints(), kSteps * kRanks);
        QCOMPARE(entryCount(view->lossPlot()), kRanks);
        // The rows follow the stored plan in either Gantt chart.
        checkMemoryCurvesLegend(predicted ? view->predictedView() : view->measuredView(), QStringLiteral("GPU"));
        if (!predicted) QVERIFY2(view->predictionTitle().endsWith(kNoPrediction), qPrintable(view->predictionTitle()));
        const QString when = QStringLiteral("stored at %1%2").arg(size, predicted ? QString() : QStringLiteral(" without prediction"));
        checkRunPage(view, when, {.predicted = predicted, .measured = true});
        saveScreenshot(w, QStringLiteral("run-stored-%1%2.png").arg(size, predicted ? QString() : QStringLiteral("-unpredicted")));
    }

    // The Gantt charts of the Schedule page (data-parallel's plan) and of the 1F1B lesson.
    void scheduleAndTeachingShowEveryLegendWhole_data() {
        QTest::addColumn<QString>("size");
        QTest::newRow("1280x800") << QStringLiteral("1280x800");
        QTest::newRow("1600x1000") << QStringLiteral("1600x1000");
    }
    void scheduleAndTeachingShowEveryLegendWhole() {
        QFETCH(QString, size);
        MainWindow w(false);
        w.resize(sizeOf(size));
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QVERIFY(w.start(testing::withPlanners(testing::zooStart("gpt2-small"), QStringList{QStringLiteral("data-parallel")})));
        QTRY_VERIFY_WITH_TIMEOUT(w.shownTrace().has_value() && w.isIdle(), kRunTimeoutMs);
        w.showPage(MainWindow::Page::Schedule);
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        checkChart(w.schedulePage()->view()->plot(), size + QStringLiteral(" schedule"));
        checkScheduleAxes(w.schedulePage()->view(), size + QStringLiteral(" schedule"));
        w.showPage(MainWindow::Page::Teaching);
        QVERIFY(w.teaching()->loadLesson(2));
        w.teaching()->setTime(w.teaching()->endTime());
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        auto* lesson = const_cast<widgets::ScheduleView*>(w.teaching()->view());
        checkChart(lesson->plot(), size + QStringLiteral(" teaching"));
        checkScheduleAxes(lesson, size + QStringLiteral(" teaching"));
    }

    // The Compare table of the guide's example (GPT-3 1.3B on two DGX A100s, batch 512) with
    // the planners whose plans read longest (t, sp and ZeRO in the shape, long reasons)
    // shows every column at 1280x800: no horizontal scroll bar, no column cut at the right edge.
    void compareTableFitsWithoutHorizontalScroll() {
        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const StartOptions o = testing::withPlanners(testing::zooStart("gpt3-1.3b", QStringLiteral("dgx-a100-2x8"), 1, 512),
                                                     QStringList{QStringLiteral("hippie"), QStringLiteral("megatron"),
                                                                 QStringLiteral("deepspeed-3d"), QStringLiteral("zero"),
                                                                 QStringLiteral("data-parallel"), QStringLiteral("gpipe-balance"),
                                                                 QStringLiteral("pipedream")});
        QVERIFY(w.start(o));
        QTRY_VERIFY_WITH_TIMEOUT(w.shownTrace().has_value() && w.isIdle(), kRunTimeoutMs);
        w.showPage(MainWindow::Page::Compare);
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QCoreApplication::processEvents();
        QTableView* table = w.comparePage()->table();
        QCOMPARE(table->model()->rowCount(), int(o.planners->size()));
        QCOMPARE(table->model()->columnCount(), int(widgets::ComparisonModel::ColumnCount));
        QVERIFY2(!table->horizontalScrollBar()->isVisible() && table->horizontalScrollBar()->maximum() == 0,
                 qPrintable(QStringLiteral("scrolls by %1 px").arg(table->horizontalScrollBar()->maximum())));
        const QHeaderView* header = table->horizontalHeader();
        for (int c = 0; c < header->count(); ++c) {
            const QString name = table->model()->headerData(c, Qt::Horizontal).toString();
            QVERIFY2(header->sectionViewportPosition(c) + header->sectionSize(c) <= table->viewport()->width(),
                     qPrintable(name + QStringLiteral(" is cut at the right edge")));
            // Every number is shown whole (only the status, the last column, may be elided).
            if (c == widgets::ComparisonModel::StatusColumn) continue;
            for (int r = 0; r < table->model()->rowCount(); ++r) {
                const QString text = table->model()->index(r, c).data().toString();
                QVERIFY2(table->fontMetrics().horizontalAdvance(text) <= header->sectionSize(c),
                         qPrintable(QStringLiteral("'%1' under %2 is cut").arg(text, name)));
            }
        }
        // The scatter's labels ("planner shape", or the planner alone where that finds no room)
        // cover neither one another nor a dot on this real comparison.
        widgets::ComparisonCharts* charts = w.comparePage()->charts();
        charts->rebuild();
        charts->plot()->replot();
        QCOMPARE(charts->labelOverlaps(), 0);
        QCOMPARE(charts->labelsCoveringDots(), 0);
        saveScreenshot(w, QStringLiteral("compare-1280x800.png"));
    }

    // A run followed live: half its steps plotted while the ranks run, then its end; one with a
    // prediction, one whose cluster is unknown here (no prediction, the charts without it).
    void liveRunShowsEveryLegendWhole_data() {
        QTest::addColumn<bool>("predicted");
        QTest::newRow("predicted") << true;
        QTest::newRow("no prediction") << false;
    }
    void liveRunShowsEveryLegendWhole() {
        QFETCH(bool, predicted);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QDir d(dir.path());
        const QString engine = writeStandInEngine(d);
        QVERIFY(!engine.isEmpty());
        QVERIFY(writeRankEvents(d, predictedTrace()));  // what the ranks measure is made from it
        const testing::EngineForStudio stand_in(engine);

        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        DispatchUi* ui = w.dispatchUi();
        QVERIFY(ui);
        ui->setDbPath(d.filePath(QStringLiteral("runs.sqlite")));
        ui->setWorkRoot(d.filePath(QStringLiteral("work")));
        testing::Setup s = pipeline();
        if (!predicted) s.plan.cluster = kUnknownCluster;
        dispatch::RunController* run = predicted ? ui->dispatchPlan(s.plan, s.problem.graph, s.problem.cluster, {0}, kSteps, 0)
                                                 : ui->dispatchPlan(s.plan, s.problem.graph, std::nullopt, {0}, kSteps, 0);
        QVERIFY(run);
        QSignalSpy finished(run, &dispatch::RunController::finished);
        // What the run said, for a failure's message. The connections end with `listener`,
        // before `said` goes and before the window (and the run) close.
        QStringList said;
        QObject listener;
        QObject::connect(run, &dispatch::RunController::stateChanged, &listener,
                         [&said](jobs::JobState, const QString& m) { said << QStringLiteral("state: ") + m; });
        QObject::connect(run, &dispatch::RunController::workerStateChanged, &listener,
                         [&said](int worker, const QString& t) { said << QStringLiteral("worker %1: %2").arg(worker).arg(t); });
        QObject::connect(run, &dispatch::RunController::logReceived, &listener, [&said](int rank, const QString& stream, const QString& t) {
            said << QStringLiteral("rank %1 %2: %3").arg(rank).arg(stream, t.left(300));
        });
        RunView* view = ui->runView();
        QTRY_VERIFY2_WITH_TIMEOUT(view->lossPoints() == kLiveSteps * kRanks,
                                  qPrintable(QStringLiteral("%1 loss points of %2; the run said:\n").arg(view->lossPoints()).arg(kLiveSteps * kRanks) +
                                             said.join(QLatin1Char('\n'))),
                                  kRunTimeoutMs);
        QCoreApplication::processEvents();
        QVERIFY2(view->stateText().contains(QStringLiteral("running")), qPrintable(view->stateText()));
        QCOMPARE(run->predicted().has_value(), predicted);
        if (!predicted) QVERIFY2(view->predictionTitle().endsWith(kNoPrediction), qPrintable(view->predictionTitle()));
        QCOMPARE(entryCount(view->lossPlot()), kRanks);
        const QString name = predicted ? QString() : QStringLiteral("-unpredicted");
        checkRunPage(view, QStringLiteral("live"), {.predicted = predicted, .measured = false});
        saveScreenshot(w, QStringLiteral("run-live-1280x800%1.png").arg(name));

        QFile go(d.filePath(QStringLiteral("go")));
        QVERIFY(go.open(QIODevice::WriteOnly));
        go.close();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRunTimeoutMs);
        QCoreApplication::processEvents();
        QVERIFY2(view->stateText().contains(QStringLiteral("succeeded")), qPrintable(view->stateText()));
        QVERIFY2(view->errorText().endsWith(QStringLiteral(" · engine processes' peak RSS up to 300.0 MiB")), qPrintable(view->errorText()));
        // The measured mean says which steps it left out, as the ranks' done events do.
        QVERIFY2(view->errorText().contains(QStringLiteral("mean of the steps after the first 3")), qPrintable(view->errorText()));
        QCOMPARE(view->lossPoints(), kSteps * kRanks);
        checkMemoryCurvesLegend(view->measuredView(), QStringLiteral("CPU"));  // the ranks ran on CPUs
        checkRunPage(view, QStringLiteral("finished"), {.predicted = predicted, .measured = true});
        saveScreenshot(w, QStringLiteral("run-finished-1280x800%1.png").arg(name));
    }

    // A real run of hippie-engine on this machine (skipped where none is built): gpt-tiny as two
    // stages of two replicas, four ranks on the CPUs, 30 steps; checked while it runs and at its
    // end. With HIPPIE_SCREENSHOT_DIR set, the pictures of the user guide's run page.
    void realRunShowsEveryLegendWhole() {
        const testing::EngineForStudio engine;
        if (engine.path.isEmpty()) QSKIP(testing::EngineForStudio::kMissing);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString plan_file = dir.filePath(QStringLiteral("plan.json"));
        QProcess planner;
        planner.start(engine.path, {"plan", "--model", "gpt-tiny", "--pp", "2", "--dp", "2", "--global-batch", "16", "--microbatches", "4",
                                    "--out", plan_file});
        QVERIFY(planner.waitForFinished(kRunTimeoutMs));
        QCOMPARE(planner.exitCode(), 0);

        MainWindow w(false);
        w.resize(1280, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        DispatchUi* ui = w.dispatchUi();
        ui->setDbPath(dir.filePath(QStringLiteral("runs.sqlite")));
        ui->setWorkRoot(dir.filePath(QStringLiteral("work")));
        constexpr int kRealSteps = 30, kLossRanks = 2;  // the last stage's two replicas report the loss
        dispatch::RunController* run = ui->dispatchPlan(loadPlanFile(plan_file.toStdString()), std::nullopt, std::nullopt, {0}, kRealSteps, 0);
        QVERIFY(run);
        QSignalSpy finished(run, &dispatch::RunController::finished);
        RunView* view = ui->runView();
        QTRY_VERIFY_WITH_TIMEOUT(view->lossPoints() >= kLossRanks * kRealSteps / 3 || !finished.isEmpty(), kRealRunTimeoutMs);
        // gpt-tiny is gpt2-small at a size override: its graph and cpu-local predict the run.
        QVERIFY2(run->predicted().has_value(), qPrintable(run->predictionNote()));
        constexpr bool predicted = true;
        if (finished.isEmpty()) {
            QCoreApplication::processEvents();
            checkRunPage(view, QStringLiteral("real, live"), {.predicted = predicted, .measured = run->measured().has_value()});
            saveScreenshot(w, QStringLiteral("dispatch-run-live-1280.png"));
        }
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kRealRunTimeoutMs);
        QCoreApplication::processEvents();
        QVERIFY2(view->stateText().contains(QStringLiteral("succeeded")), qPrintable(view->stateText() + view->logText()));
        QCOMPARE(view->lossPoints(), kLossRanks * kRealSteps);
        QVERIFY(run->measured().has_value());  // every rank sent its last step's trace
        checkRunPage(view, QStringLiteral("real, finished"), {.predicted = predicted, .measured = true});
        saveScreenshot(w, QStringLiteral("dispatch-run-1280.png"));
        w.resize(1600, 1000);
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QCoreApplication::processEvents();
        checkRunPage(view, QStringLiteral("real, finished, 1600x1000"), {.predicted = predicted, .measured = true});
        saveScreenshot(w, QStringLiteral("dispatch-run.png"));
    }
};

QTEST_MAIN(TestPageLayout)
#include "test_page_layout.moc"
