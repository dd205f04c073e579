// The schedule view draws one block per trace event with one plottable, and memory curves
// equal to the simulator's.
#include <set>

#include <QRegularExpression>
#include <QtTest>
#include <qcustomplot.h>

#include "gui_fixtures.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/gantt/schedule_view.h"
#include "widgets/memory/memory_plot.h"

using namespace hippie;
using namespace hippie::widgets;

namespace {

void reverseDevices(Trace& trace) {
    std::reverse(trace.devices.begin(), trace.devices.end());
    std::reverse(trace.memory.begin(), trace.memory.end());
    std::reverse(trace.capacity_bytes.begin(), trace.capacity_bytes.end());
}

// Hovers the first compute block of every row: the tooltip names the block's device and the
// memory its curve shows at that time.
void checkTooltipMemoryPerRow(ScheduleView& view, const Trace& trace) {
    view.plot()->toPixmap(1400, 800);
    QCPAxisRect* rect = view.plot()->axisRect(0);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    const QRegularExpression memory(QStringLiteral("memory ([0-9.]+) ([KMG]iB|B) of"));
    std::set<int> rows_checked;
    for (const GanttBlock& b : view.gantt()->blocks()) {
        if (!isCompute(b.kind) || rows_checked.count(b.row)) continue;
        const double t = (b.start_s + b.end_s) / 2;
        const QPointF pos(x->coordToPixel(t), y->coordToPixel((b.y_top + b.y_bottom) / 2));
        const QString text = view.describeAt(pos);
        const int device = trace.events[size_t(b.event)].device;
        QCOMPARE(view.rowLayout().rows[size_t(b.row)].device, device);
        QVERIFY2(text.contains(QStringLiteral("GPU %1:").arg(device)), qPrintable(text));
        const QRegularExpressionMatch m = memory.match(text);
        QVERIFY2(m.hasMatch(), qPrintable(text));
        // The curve drawn for this device, read at the same time.
        const QCPGraph* curve = nullptr;
        for (int i = 0; i < view.memory()->graphCount(); ++i)
            if (view.memory()->graph(i)->name() == QStringLiteral("GPU %1").arg(device)) curve = view.memory()->graph(i);
        QVERIFY(curve);
        auto it = curve->data()->findBegin(t, false);
        if (it != curve->data()->constBegin() && it->key > t) --it;
        while (it + 1 != curve->data()->constEnd() && (it + 1)->key <= t) ++it;
        QCOMPARE(m.captured(1), QString::number(it->value, 'f', 2));
        QCOMPARE(m.captured(2), view.memory()->unitName());
        rows_checked.insert(b.row);
    }
    QCOMPARE(int(rows_checked.size()), int(trace.devices.size()));
}

}  // namespace

class TestScheduleView : public QObject {
    Q_OBJECT
private slots:
    void drawsOneBlockPerEvent() {
        const testing::Setup s = testing::smallPipeline(4, 2, 8, ScheduleKind::OneFOneB);
        const Trace trace = simulateWithEvents(s.problem, s.plan);
        int compute = 0;
        for (const TraceEvent& e : trace.events) compute += isCompute(e.kind) ? 1 : 0;
        QVERIFY(compute > 0);

        ScheduleView view;
        view.resize(1200, 700);
        view.setTrace(trace, &s.problem.cluster);
        QCOMPARE(view.gantt()->blockCount(), int(trace.events.size()));
        int compute_blocks = 0;
        for (const GanttBlock& b : view.gantt()->blocks()) compute_blocks += isCompute(b.kind) ? 1 : 0;
        QCOMPARE(compute_blocks, compute);
        QCOMPARE(int(view.rowLayout().rows.size()), int(trace.devices.size()));

        // One paint pass over the whole time range draws every block.
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        view.plot()->toPixmap(1200, 700);
        QCOMPARE(view.gantt()->lastDrawnCount(), int(trace.events.size()));
        // Only one plottable for all the blocks: the rest are memory graphs.
        QCOMPARE(view.plot()->plottableCount(), 1 + view.memory()->graphCount());
    }

    void memoryCurvesEqualTheSimulators() {
        const testing::Setup s = testing::smallPipeline(2, 1, 4, ScheduleKind::GPipe);
        const Trace trace = simulateWithEvents(s.problem, s.plan);
        ScheduleView view;
        view.setTrace(trace, &s.problem.cluster);
        QCOMPARE(view.memory()->graphCount(), int(trace.devices.size()));
        for (int row = 0; row < int(trace.devices.size()); ++row) {
            const QCPGraph* g = view.memory()->graph(row);
            const auto& samples = trace.memory[size_t(row)];
            QVERIFY(g->dataCount() >= int(samples.size()));
            for (int i = 0; i < int(samples.size()); ++i) {
                QCOMPARE(g->data()->at(i)->key, samples[size_t(i)].time_s);
                QCOMPARE(g->data()->at(i)->value, double(samples[size_t(i)].bytes) / (1024.0 * 1024.0 * 1024.0));
            }
            QCOMPARE(view.memory()->curves()[size_t(row)].peak_gib,
                     double(trace.metrics.peak_memory_bytes[size_t(row)]) / (1024.0 * 1024.0 * 1024.0));
        }
    }

    // The tooltip over a block names the memory of that block's device, equal to its curve,
    // for every row, also when the trace lists its devices in another order than the rows.
    void tooltipMemoryIsTheRowsDevice() {
        const testing::Setup s = testing::smallPipeline(4, 1, 8, ScheduleKind::OneFOneB);
        Trace trace = simulateWithEvents(s.problem, s.plan);
        reverseDevices(trace);
        ScheduleView view;
        view.resize(1400, 800);
        view.setTrace(trace, &s.problem.cluster);
        checkTooltipMemoryPerRow(view, trace);
    }

    // The same with rows grouped by stage, replica and tensor-parallel rank (t2 x pp2 x dp2):
    // the row order is neither the trace's nor the devices'.
    void tooltipMemoryIsTheRowsDeviceWhenGroupedByStage() {
        testing::Setup s = testing::smallPipeline(2, 2, 4, ScheduleKind::OneFOneB);
        s.plan.tp = 2;
        s.plan.device_map = defaultDeviceMap(2, 2, 2);
        Trace trace = simulateWithEvents(s.problem, s.plan);
        QCOMPARE(int(trace.devices.size()), 8);
        reverseDevices(trace);
        ScheduleView view;
        view.resize(1400, 800);
        view.setTrace(trace, &s.problem.cluster, &s.plan);
        QVERIFY(view.rowLayout().by_stage);
        // Stage 0's replicas and ranks first: devices 0, 1 (replica 0) and 4, 5 (replica 1).
        const std::vector<int> order{0, 1, 4, 5, 2, 3, 6, 7};
        for (size_t i = 0; i < order.size(); ++i) QCOMPARE(view.rowLayout().rows[i].device, order[i]);
        QCOMPARE(view.rowText(2), QStringLiteral("S0 r1 t0 · GPU 4"));
        QCOMPARE(view.rowText(7), QStringLiteral("S1 r1 t1 · GPU 7"));
        QCOMPARE(view.rowLayout().group_separators.size(), size_t(1));
        // The memory legend reads as the rows do.
        for (int i = 0; i < view.memory()->graphCount(); ++i)
            QCOMPARE(view.memory()->graph(i)->name(), QStringLiteral("GPU %1").arg(order[size_t(i)]));
        checkTooltipMemoryPerRow(view, trace);
        // Collapsing a stage keeps its devices' blocks on one row.
        view.setGroupCollapsed(1, true);
        QCOMPARE(int(view.rowLayout().rows.size()), 5);
        QCOMPARE(view.rowText(4), QStringLiteral("S1 · 4 devices ▸"));
        QCOMPARE(view.gantt()->blockCount(), int(trace.events.size()));
    }

    void revealTimeHidesTheFuture() {
        const testing::Setup s = testing::smallPipeline(2, 1, 4, ScheduleKind::OneFOneB);
        const Trace trace = simulateWithEvents(s.problem, s.plan);
        ScheduleView view;
        view.resize(900, 600);
        view.setTrace(trace, &s.problem.cluster);
        view.setRevealTime(view.endTime() / 3);
        view.plot()->toPixmap(900, 600);
        QVERIFY(view.gantt()->lastDrawnCount() > 0);
        QVERIFY(view.gantt()->lastDrawnCount() < view.gantt()->blockCount());
    }

    void replotsTenThousandBlocksQuickly() {
        Trace t;
        constexpr int kDevices = 16;
        constexpr int kPerDevice = 640;  // 10,240 blocks
        for (int d = 0; d < kDevices; ++d) t.devices.push_back(d);
        for (int d = 0; d < kDevices; ++d)
            for (int i = 0; i < kPerDevice; ++i)
                t.events.push_back({d, i * 1e-3, i * 1e-3 + 0.8e-3, i % 2 ? InstrKind::Backward : InstrKind::Forward, 0, i / 2, -1, 0});
        ScheduleView view;
        view.resize(1400, 800);
        view.setTrace(t, nullptr);
        QElapsedTimer timer;
        timer.start();
        constexpr int kReplots = 10;
        for (int i = 0; i < kReplots; ++i) view.plot()->toPixmap(1400, 800);
        const double ms = double(timer.elapsed()) / kReplots;
        qInfo("Gantt replot with %d blocks: %.1f ms", view.gantt()->blockCount(), ms);
        QCOMPARE(view.gantt()->lastDrawnCount(), kDevices * kPerDevice);
        QVERIFY2(ms < 1000, "a replot of 10,000 blocks must stay interactive");
    }
};

QTEST_MAIN(TestScheduleView)
#include "test_schedule_view.moc"
