// Gantt navigation as in Perfetto and Nsight Systems (issue 18, items 5 and 6): W/S zoom at the
// cursor, A/D pan, Home and 0 fit, Shift+W/S zoom the memory axis; a clicked block
// shows its details and outlines what it waits on and what waits on it; a drag along the time
// axis measures a span; sub-pixel blocks are drawn in the neutral colour; a memory legend entry
// highlights its device's curve and Gantt row; nodes collapse to one row for 16 devices.
#include <QtTest>
#include <qcustomplot.h>

#include "gui_fixtures.h"
#include "widgets/common/palette.h"
#include "widgets/common/units.h"
#include "widgets/gantt/dependencies.h"
#include "widgets/gantt/gantt_plottable.h"
#include "widgets/gantt/schedule_view.h"
#include "widgets/memory/memory_plot.h"

using namespace hippie;
using namespace hippie::widgets;

namespace {

int findEvent(const Trace& t, int device, InstrKind kind, int mb) {
    for (size_t i = 0; i < t.events.size(); ++i)
        if (t.events[i].device == device && t.events[i].kind == kind && t.events[i].mb == mb) return static_cast<int>(i);
    return -1;
}

// With HIPPIE_SCREENSHOT_DIR set, the view as the test left it goes there (user guide images).
void saveScreenshot(ScheduleView& w, const char* name) {
    const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR");
    if (dir.isEmpty()) return;
    w.plot()->replot(QCustomPlot::rpImmediateRefresh);  // the selection and span are queued replots
    QVERIFY(w.grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name)));
}

void sendMouse(QWidget* w, QEvent::Type type, QPointF pos, Qt::MouseButtons buttons) {
    QMouseEvent e(type, pos, w->mapToGlobal(pos), Qt::LeftButton, buttons, Qt::NoModifier);
    QApplication::sendEvent(w, &e);
}

// W zooms to 80% of the span and S to 125%, both keeping the anchor where it is; A/D move by
// a fifth of the span (schedule_view.cpp's steps), worked out here by hand.
TimeWindow zoomedBy(TimeWindow w, double anchor_s, double factor) {
    return {anchor_s - (anchor_s - w.lower_s) * factor, anchor_s + (w.upper_s - anchor_s) * factor};
}
TimeWindow pannedBy(TimeWindow w, double fraction) {
    const double shift = w.span() * fraction;
    return {w.lower_s + shift, w.upper_s + shift};
}

// A two-stage pipeline drawn at 1200x600, with the whole iteration in view.
struct NavigationView {
    testing::Setup setup = testing::smallPipeline(2, 1, 4, ScheduleKind::OneFOneB);
    Trace trace = simulateWithEvents(setup.problem, setup.plan);
    ScheduleView view;

    bool show() {
        view.resize(1200, 600);
        view.show();
        if (!QTest::qWaitForWindowExposed(&view)) return false;
        view.setTrace(trace, &setup.problem.cluster);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        return true;
    }
    QCPAxis* timeAxis() const { return view.gantt()->keyAxis(); }
    // Moves the mouse over the rows to the pixel nearest `t_s`; returns the time under it.
    double hover(double t_s) {
        const double px = std::round(timeAxis()->coordToPixel(t_s));
        const double y = timeAxis()->axisRect()->rect().center().y();
        sendMouse(view.plot(), QEvent::MouseMove, QPointF(px, y), Qt::NoButton);
        return timeAxis()->pixelToCoord(px);
    }
};

#define COMPARE_WINDOW(actual, expected)                                                                             \
    do {                                                                                                             \
        const TimeWindow a_ = (actual), e_ = (expected);                                                             \
        QVERIFY2(std::abs(a_.lower_s - e_.lower_s) <= 1e-12 && std::abs(a_.upper_s - e_.upper_s) <= 1e-12,          \
                 qPrintable(QStringLiteral("[%1, %2] instead of [%3, %4]")                                           \
                                .arg(a_.lower_s, 0, 'g', 15).arg(a_.upper_s, 0, 'g', 15)                             \
                                .arg(e_.lower_s, 0, 'g', 15).arg(e_.upper_s, 0, 'g', 15)));                          \
    } while (false)

}  // namespace

class TestGanttInteraction : public QObject {
    Q_OBJECT
private slots:
    void forwardWaitsOnTheActivationSentToIt() {
        // 4 stages on GPUs 0-3, 4 micro-batches, 1F1B.
        const testing::Setup s = testing::smallPipeline(4, 1, 4, ScheduleKind::OneFOneB);
        const Trace t = simulateWithEvents(s.problem, s.plan);
        const int d0 = s.plan.device_map[0][0], d1 = s.plan.device_map[1][0];
        const int f1 = findEvent(t, d1, InstrKind::Forward, 2);
        QVERIFY(f1 >= 0);
        const EventDependencies deps = dependenciesOf(t, f1);
        // It waits on the activation of micro-batch 2 sent from stage 0 to its device ...
        int send_in = -1;
        for (int e : deps.waits_on)
            if (t.events[size_t(e)].kind == InstrKind::SendActivation) send_in = e;
        QVERIFY(send_in >= 0);
        QCOMPARE(t.events[size_t(send_in)].device, d0);
        QCOMPARE(t.events[size_t(send_in)].peer, d1);
        QCOMPARE(t.events[size_t(send_in)].mb, 2);
        QVERIFY(t.events[size_t(send_in)].end_s <= t.events[size_t(f1)].start_s + 1e-12);
        // ... which waits on stage 0's forward of micro-batch 2, and is waited on by f1.
        const EventDependencies send_deps = dependenciesOf(t, send_in);
        QCOMPARE(send_deps.waits_on, std::vector<int>{findEvent(t, d0, InstrKind::Forward, 2)});
        QCOMPARE(send_deps.waited_by, std::vector<int>{f1});
        // f1 passes its own activation on to stage 2.
        bool sends_on = false;
        for (int e : deps.waited_by)
            sends_on |= t.events[size_t(e)].kind == InstrKind::SendActivation && t.events[size_t(e)].mb == 2;
        QVERIFY(sends_on);
    }

    void clickingABlockSelectsItAndOutlinesItsDependencies() {
        const testing::Setup s = testing::smallPipeline(4, 1, 4, ScheduleKind::OneFOneB);
        const Trace t = simulateWithEvents(s.problem, s.plan);
        ScheduleView view;
        view.resize(1400, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setTrace(t, &s.problem.cluster);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const int d1 = s.plan.device_map[1][0];
        const int event = findEvent(t, d1, InstrKind::Forward, 2);
        int block = -1;
        for (int b = 0; b < view.gantt()->blockCount(); ++b)
            if (view.gantt()->blocks()[size_t(b)].event == event) block = b;
        QVERIFY(block >= 0);
        const GanttBlock& b = view.gantt()->blocks()[size_t(block)];
        const QPointF centre(view.gantt()->keyAxis()->coordToPixel((b.start_s + b.end_s) / 2),
                             view.gantt()->valueAxis()->coordToPixel((b.y_top + b.y_bottom) / 2));
        QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::NoModifier, centre.toPoint());
        QCOMPARE(view.selectedBlock(), block);
        QVERIFY2(view.selectedDetails().contains(QStringLiteral("micro-batch: 2")), qPrintable(view.selectedDetails()));
        QVERIFY2(view.selectedDetails().contains(QStringLiteral("waits on")), qPrintable(view.selectedDetails()));
        QVERIFY(!view.waitsOnBlocks().empty());
        QVERIFY(!view.waitedByBlocks().empty());
        for (int w : view.waitsOnBlocks()) QVERIFY(view.gantt()->blocks()[size_t(w)].start_s <= b.start_s);
        view.measureSpan(t.events[size_t(event)].start_s, t.events[size_t(event)].end_s);
        saveScreenshot(view, "gantt-dependencies.png");
        view.measureSpan(0, 0);
        QTest::keyClick(&view, Qt::Key_Escape);
        QCOMPARE(view.selectedBlock(), -1);
        QVERIFY(view.waitsOnBlocks().empty());
    }

    // W/S zoom at the mouse: the time under the cursor stays under it; zooming out stops at the
    // iteration.
    void wAndSZoomAtTheCursor() {
        NavigationView n;
        QVERIFY(n.show());
        const TimeWindow full = n.view.fullWindow();
        COMPARE_WINDOW(n.view.visibleWindow(), full);
        const double anchor = n.hover(full.upper_s * 0.25);
        const double anchor_px = n.timeAxis()->coordToPixel(anchor);
        QTest::keyClick(&n.view, Qt::Key_W);
        const TimeWindow in = zoomedBy(full, anchor, 0.8);
        COMPARE_WINDOW(n.view.visibleWindow(), in);
        QVERIFY(std::abs(n.timeAxis()->coordToPixel(anchor) - anchor_px) < 1e-6);
        QTest::keyClick(&n.view, Qt::Key_W);
        COMPARE_WINDOW(n.view.visibleWindow(), zoomedBy(in, anchor, 0.8));
        QTest::keyClick(&n.view, Qt::Key_S);
        COMPARE_WINDOW(n.view.visibleWindow(), in);
        QTest::keyClick(&n.view, Qt::Key_S);
        COMPARE_WINDOW(n.view.visibleWindow(), full);
        QTest::keyClick(&n.view, Qt::Key_S);  // already the whole iteration: nothing further
        COMPARE_WINDOW(n.view.visibleWindow(), full);
    }

    // Without the mouse over the chart, W/S zoom about the middle of the view.
    void zoomWithoutTheMouseKeepsTheCentre() {
        NavigationView n;
        QVERIFY(n.show());
        const TimeWindow full = n.view.fullWindow();
        sendMouse(n.view.plot(), QEvent::MouseMove, QPointF(1, 1), Qt::NoButton);  // the corner: outside both charts
        QTest::keyClick(&n.view, Qt::Key_W);
        COMPARE_WINDOW(n.view.visibleWindow(), zoomedBy(full, full.upper_s / 2, 0.8));
    }

    // A/D pan by a fifth of the view and stop at either end of the iteration, keeping the zoom.
    void aAndDPanWithinTheIteration() {
        NavigationView n;
        QVERIFY(n.show());
        const TimeWindow full = n.view.fullWindow();
        const double anchor = n.hover(full.upper_s * 0.5);
        QTest::keyClick(&n.view, Qt::Key_W);
        QTest::keyClick(&n.view, Qt::Key_W);
        const TimeWindow zoomed = zoomedBy(zoomedBy(full, anchor, 0.8), anchor, 0.8);  // 64% of the iteration, centred
        COMPARE_WINDOW(n.view.visibleWindow(), zoomed);
        QTest::keyClick(&n.view, Qt::Key_D);
        COMPARE_WINDOW(n.view.visibleWindow(), pannedBy(zoomed, 0.2));
        QTest::keyClick(&n.view, Qt::Key_A);
        COMPARE_WINDOW(n.view.visibleWindow(), zoomed);
        // 18% of the iteration lies before the view and 12.8% is one step: two steps reach 0.
        QTest::keyClick(&n.view, Qt::Key_A);
        COMPARE_WINDOW(n.view.visibleWindow(), pannedBy(zoomed, -0.2));
        QTest::keyClick(&n.view, Qt::Key_A);
        COMPARE_WINDOW(n.view.visibleWindow(), (TimeWindow{0, zoomed.span()}));
        for (int i = 0; i < 5; ++i) QTest::keyClick(&n.view, Qt::Key_D);
        COMPARE_WINDOW(n.view.visibleWindow(), (TimeWindow{full.upper_s - zoomed.span(), full.upper_s}));
    }

    // Home and 0 fit the whole iteration again, however far the view was zoomed and panned.
    void homeAndZeroFitTheIteration() {
        NavigationView n;
        QVERIFY(n.show());
        const TimeWindow full = n.view.fullWindow();
        for (const Qt::Key fit : {Qt::Key_Home, Qt::Key_0}) {
            n.hover(full.upper_s * 0.8);
            for (int i = 0; i < 6; ++i) QTest::keyClick(&n.view, Qt::Key_W);
            QTest::keyClick(&n.view, Qt::Key_A);
            QVERIFY(n.view.visibleWindow().span() < full.span() / 3);
            QTest::keyClick(&n.view, fit);
            COMPARE_WINDOW(n.view.visibleWindow(), full);
        }
    }

    // Shift+W / Shift+S zoom the memory curves vertically (from 0), leaving the time axis alone.
    void shiftWAndSZoomTheMemoryAxis() {
        NavigationView n;
        QVERIFY(n.show());
        QVERIFY(n.view.memory()->graphCount() > 0);
        const QCPAxis* bytes = n.view.memory()->graph(0)->valueAxis();
        const double top = bytes->range().upper;
        QVERIFY(top > 0);
        const TimeWindow before = n.view.visibleWindow();
        QTest::keyClick(&n.view, Qt::Key_W, Qt::ShiftModifier);
        QCOMPARE(bytes->range().lower, 0.0);
        QCOMPARE(bytes->range().upper, top * 0.8);
        QTest::keyClick(&n.view, Qt::Key_S, Qt::ShiftModifier);
        QCOMPARE(bytes->range().upper, top * 0.8 * 1.25);
        COMPARE_WINDOW(n.view.visibleWindow(), before);
    }

    void dragOnTheTimeAxisMeasuresASpan() {
        const testing::Setup s = testing::smallPipeline(2, 1, 4, ScheduleKind::OneFOneB);
        const Trace t = simulateWithEvents(s.problem, s.plan);
        ScheduleView view;
        view.resize(1200, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setTrace(t, &s.problem.cluster);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        QCPAxis* x = view.gantt()->keyAxis();
        const double t0 = t.metrics.iteration_time_s * 0.2, t1 = t.metrics.iteration_time_s * 0.6;
        // Just under the rows, on the axis's tick labels.
        const QRect rows = x->axisRect()->rect();
        const double y = rows.bottom() + 8;
        sendMouse(view.plot(), QEvent::MouseButtonPress, QPointF(x->coordToPixel(t0), y), Qt::LeftButton);
        sendMouse(view.plot(), QEvent::MouseMove, QPointF(x->coordToPixel(t1), y), Qt::LeftButton);
        sendMouse(view.plot(), QEvent::MouseButtonRelease, QPointF(x->coordToPixel(t1), y), Qt::NoButton);
        // Pixel rounding of both ends: within two pixels' worth of time.
        const double px_s = (x->range().upper - x->range().lower) / rows.width();
        QVERIFY2(std::abs(view.measuredSeconds() - (t1 - t0)) <= 2 * px_s, qPrintable(QString::number(view.measuredSeconds())));
        QCOMPARE(view.measuredText(), formatSeconds(view.measuredSeconds()));
        // The time range did not move: the drag measured, it did not pan.
        QVERIFY(x->range().lower <= t0 && x->range().upper >= t1);
        view.measureSpan(0, 0);
        QVERIFY(view.measuredText().isEmpty());
    }

    void subPixelBlocksAreDrawnNeutral() {
        const testing::Setup s = testing::smallPipeline(4, 2, 8, ScheduleKind::OneFOneB);
        const Trace t = simulateWithEvents(s.problem, s.plan);
        ScheduleView view;
        view.resize(300, 400);  // the whole iteration in a couple of hundred pixels
        view.setTrace(t, &s.problem.cluster);
        view.plot()->toPixmap(300, 400);
        QVERIFY(view.gantt()->lastSubPixelCount() > 0);
        QVERIFY(GanttPlottable::subPixelColor() != instrColor(InstrKind::AllReduce));
        for (int k = 0; k <= int(InstrKind::OptimizerStep); ++k) QVERIFY(GanttPlottable::subPixelColor() != instrColor(InstrKind(k)));
    }

    void legendEntryHighlightsTheDevice() {
        const testing::Setup s = testing::smallPipeline(4, 1, 4, ScheduleKind::OneFOneB);
        const Trace t = simulateWithEvents(s.problem, s.plan);
        ScheduleView view;
        view.setTrace(t, &s.problem.cluster);
        QCOMPARE(view.memory()->graph(2)->name(), QStringLiteral("GPU %1").arg(t.devices[2]));
        view.highlightDevice(t.devices[2]);
        QCOMPARE(view.highlightedDevice(), t.devices[2]);
        QVERIFY(view.memory()->graph(2)->pen().widthF() > view.memory()->graph(0)->pen().widthF());
        QVERIFY(view.memory()->graph(0)->pen().color().alpha() < 255);
    }

    void sixteenDevicesCollapseByNode() {
        // 16 GPUs on two DGX nodes: 8 stages x 2 replicas.
        testing::Setup s = testing::smallPipeline(8, 2, 8, ScheduleKind::OneFOneB);
        s.problem.cluster = buildClusterPreset("dgx-a100-2x8");
        const Trace t = simulateWithEvents(s.problem, s.plan);
        QCOMPARE(int(t.devices.size()), 16);
        ScheduleView view;
        view.resize(1200, 700);
        view.setTrace(t, &s.problem.cluster);
        QCOMPARE(view.groupCount(), 2);
        QCOMPARE(int(view.rowLayout().rows.size()), 16);
        view.setGroupCollapsed(1, true);
        QCOMPARE(int(view.rowLayout().rows.size()), 9);  // 8 rows of node 0, one for node 1
        const GanttRow& node1 = view.rowLayout().rows.back();
        QCOMPARE(node1.device_count, 8);
        // Every block is still drawn, node 1's on its one row.
        QCOMPARE(view.gantt()->blockCount(), int(t.events.size()));
        for (int d = 8; d < 16; ++d) QCOMPARE(view.rowLayout().rowOfDevice(d), 8);
        // One memory curve for node 1: its fullest device's.
        QCOMPARE(view.memory()->graphCount(), 9);
        view.show();
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        saveScreenshot(view, "gantt-collapsed.png");
        view.setAllGroupsCollapsed(true);
        QCOMPARE(int(view.rowLayout().rows.size()), 2);
        QCOMPARE(view.memory()->graphCount(), 2);
        view.setAllGroupsCollapsed(false);
        QCOMPARE(int(view.rowLayout().rows.size()), 16);
        QCOMPARE(view.memory()->graphCount(), 16);
    }
};

QTEST_MAIN(TestGanttInteraction)
#include "test_gantt_interaction.moc"
