// The operator graph: Graphviz positions for every node off the GUI thread, the layered layout
// of large graphs, the layer view above the threshold, and colours by the plan's stage. (Layout
// time is measured by tests/bench/bench_graph_layout, not here.)
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "gui_fixtures.h"
#include "widgets/common/palette.h"
#include "widgets/graph/graph_scene.h"
#include "widgets/graph/graph_view.h"
#include "widgets/graph/graphviz_layouter.h"
#include "widgets/graph/layered_coordinates.h"
#include "widgets/graph/node_colors.h"
#include "widgets/graph/zoomable_view.h"

using namespace hippie;
using namespace hippie::widgets;

namespace {
// On the outline of the box (within rounding).
bool onBoundary(const NodeGeometry& box, std::pair<double, double> p) {
    constexpr double eps = 1e-6;
    const double dx = std::abs(p.first - box.x), dy = std::abs(p.second - box.y);
    const bool inside = dx <= box.width / 2 + eps && dy <= box.height / 2 + eps;
    return inside && (std::abs(dx - box.width / 2) < eps || std::abs(dy - box.height / 2) < eps);
}
}  // namespace

class TestGraphView : public QObject {
    Q_OBJECT
private slots:
    void laysOutEveryNodeOfA300OpGraph() {
        const Graph g = testing::syntheticGraph(300, 10);
        const LayoutInput in = buildLayoutInput(g, false);
        QCOMPARE(int(in.nodes.size()), 300);
        GraphvizLayouter layouter;
        QSignalSpy spy(&layouter, &GraphvizLayouter::layoutReady);
        const quint64 id = layouter.requestLayout(in);
        QVERIFY(spy.wait(60000));
        QCOMPARE(spy.first().at(0).toULongLong(), id);
        const GraphLayout layout = spy.first().at(1).value<GraphLayout>();
        QVERIFY(layout.error.empty());
        QCOMPARE(int(layout.nodes.size()), 300);
        QCOMPARE(layout.edges.size(), in.edges.size());
        for (const NodeGeometry& n : layout.nodes) {
            QVERIFY(std::isfinite(n.x) && std::isfinite(n.y));
            QVERIFY(n.x >= 0 && n.x <= layout.width + 1);
            QVERIFY(n.y >= 0 && n.y <= layout.height + 1);
            QVERIFY(n.width > 0);
        }
        // dot puts a chain top to bottom: op 0 above op 299.
        QVERIFY(layout.nodes[0].y < layout.nodes[299].y);
        for (const EdgeGeometry& e : layout.edges) QVERIFY(e.bezier.size() >= 4);
    }

    void collapsesToLayersAboveTheThreshold() {
        const Graph small = testing::syntheticGraph(300, 10);
        const Graph big = testing::syntheticGraph(301, 10);
        QVERIFY(!shouldCollapse(small));
        QVERIFY(shouldCollapse(big));
        const LayoutInput layers = buildLayoutInput(big, true);
        QCOMPARE(int(layers.nodes.size()), 10);
        QCOMPARE(int(layers.edges.size()), 9);  // chain of layers, parallel edges merged
        for (const LayoutNode& n : layers.nodes) QCOMPARE(n.op, -1);
        const LayoutInput one_open = buildLayoutInput(big, true, {3});
        int ops_of_layer3 = 0;
        for (const Op& op : big.ops) ops_of_layer3 += op.layer == 3 ? 1 : 0;
        QCOMPARE(int(one_open.nodes.size()), 9 + ops_of_layer3);

        GraphView view;
        view.resize(800, 600);
        QSignalSpy done(&view, &GraphView::layoutFinished);
        view.setGraph(big);
        QVERIFY(view.isCollapsed());
        QVERIFY(done.wait(60000));
        QCOMPARE(view.scene()->nodeItemCount(), 10);
        view.expandLayer(3);
        QVERIFY(done.wait(60000));
        QCOMPARE(view.scene()->nodeItemCount(), 9 + ops_of_layer3);
    }

    // Search finds ops inside collapsed layers, expands the current match's layer, counts
    // matches and steps through them; the properties panel shows the current op.
    void searchFindsOpsInsideCollapsedLayers() {
        const Graph big = testing::syntheticGraph(301, 10);
        GraphView view;
        view.resize(800, 600);
        QSignalSpy done(&view, &GraphView::layoutFinished);
        view.setGraph(big);
        QVERIFY(done.wait(60000));
        QCOMPARE(view.scene()->nodeItemCount(), 10);
        view.search(QStringLiteral("OP25"));  // op25 and op250..op259: any case
        QCOMPARE(view.opSearch().count(), 11);
        QCOMPARE(view.opSearch().currentOp(), 25);
        QVERIFY(done.wait(60000));  // its layer laid out again, expanded
        QVERIFY(view.expandedLayers().count(big.ops[25].layer));
        QCOMPARE(view.searchStatus(), QStringLiteral("1 of 11"));
        QVERIFY2(view.propertiesText().startsWith(QStringLiteral("op25 (")), qPrintable(view.propertiesText()));
        view.nextMatch();
        QCOMPARE(view.opSearch().currentOp(), 250);
        if (big.ops[250].layer != big.ops[25].layer) QVERIFY(done.wait(60000));
        QVERIFY(view.expandedLayers().count(big.ops[250].layer));
        QCOMPARE(view.searchStatus(), QStringLiteral("2 of 11"));
        view.previousMatch();
        view.previousMatch();  // wraps to the last
        QCOMPARE(view.opSearch().currentOp(), 259);
        view.search(QStringLiteral("no-such-op"));
        QCOMPARE(view.searchStatus(), QStringLiteral("no match"));
    }

    void legendAndPropertiesNameStagesAndDevices() {
        // 12 stages, each named in the legend with its colour; colours stay distinct past 12.
        testing::Setup s = testing::smallPipeline(12, 1, 12, ScheduleKind::OneFOneB);
        GraphView view;
        view.resize(900, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QSignalSpy done(&view, &GraphView::layoutFinished);
        view.setGraph(s.problem.graph);
        QVERIFY(done.wait(60000));
        view.setPlan(&s.plan);
        const QString legend = view.legendText();
        std::set<QString> colours;
        for (int stage = 0; stage < 12; ++stage) {
            QVERIFY2(legend.contains(QStringLiteral("stage&nbsp;%1").arg(stage)), qPrintable(legend));
            QVERIFY(legend.contains(categoryColor(stage).name()));
            colours.insert(categoryColor(stage).name());
        }
        QCOMPARE(int(colours.size()), 12);
        for (int i = 12; i < 32; ++i) QVERIFY(!colours.count(categoryColor(i).name()) && colours.insert(categoryColor(i).name()).second);
        // The properties panel of a search result: kind, FLOPs, parameters, activation, the
        // stage under the plan, inputs and outputs with their bytes.
        const Op& last = s.problem.graph.ops.back();
        view.search(QString::fromStdString(last.name));
        if (view.isLayingOut()) QVERIFY(done.wait(60000));  // its layer expanded first
        const QString props = view.propertiesText();
        QVERIFY2(props.startsWith(QString::fromStdString(last.name + " (" + last.kind + ")")), qPrintable(props));
        for (const char* part : {"forward ", "backward ", "params ", "activation (output) ", "stage 11", "inputs:", "outputs:"})
            QVERIFY2(props.contains(QLatin1String(part)), qPrintable(QStringLiteral("%1 missing from: %2").arg(QLatin1String(part), props)));
        // The match is in view, wherever it lies in the graph (this one at its end), once the
        // window is laid out with the legend the plan gave it.
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        int node = -1;
        for (size_t i = 0; i < view.layoutInput().nodes.size(); ++i)
            if (view.layoutInput().nodes[i].op == int(s.problem.graph.ops.size()) - 1) node = int(i);
        QVERIFY(node >= 0);
        QVERIFY2(view.visibleSceneRect().contains(view.scene()->nodeRect(node)), "the search result is out of view");
        // With HIPPIE_SCREENSHOT_DIR set, the view as the user guide shows it.
        if (const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR"); !dir.isEmpty())
            QVERIFY(view.grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/graph-properties.png")));
    }

    void coloursNodesByStage() {
        const testing::Setup s = testing::smallPipeline(4, 1, 4, ScheduleKind::OneFOneB);
        GraphView view;
        QSignalSpy done(&view, &GraphView::layoutFinished);
        view.setGraph(s.problem.graph);
        QVERIFY(done.wait(60000));
        QCOMPARE(view.scene()->nodeItemCount(), int(s.problem.graph.ops.size()));
        view.setPlan(&s.plan);
        const std::vector<int> cat = opCategories(s.problem.graph, &s.plan, ColorBy::Stage);
        for (int i = 0; i < view.scene()->nodeItemCount(); ++i) {
            const int op = view.layoutInput().nodes[size_t(i)].op;
            QCOMPARE(view.scene()->nodeColor(i), categoryColor(cat[size_t(op)]));
        }
        QCOMPARE(cat.front(), 0);
        QCOMPARE(cat.back(), 3);
        const std::vector<int> devices = opCategories(s.problem.graph, &s.plan, ColorBy::Device);
        QCOMPARE(devices.back(), s.plan.device_map[3][0]);
    }

    // With tp > 1 the ops tensor parallelism splits get a double border and a "col/t2" or
    // "row/t2" badge, named in the legend; a layer box counts its split ops; tp = 1 marks none.
    void marksTheOpsTensorParallelismSplits() {
        testing::Setup s = testing::smallPipeline(2, 1, 4, ScheduleKind::OneFOneB);
        s.plan.tp = 2;
        s.plan.device_map = defaultDeviceMap(2, 1, 2);
        const Graph& g = s.problem.graph;
        int column = 0, row = 0;
        for (const Op& op : g.ops) {
            column += op.tensor_parallel == TensorParallel::Column ? 1 : 0;
            row += op.tensor_parallel == TensorParallel::Row ? 1 : 0;
        }
        QVERIFY(column > 0 && row > 0);
        GraphView view;
        view.resize(900, 700);
        QSignalSpy done(&view, &GraphView::layoutFinished);
        view.setGraph(g);
        QVERIFY(done.wait(60000));
        QVERIFY(!view.isCollapsed());
        view.setPlan(&s.plan);
        QCOMPARE(view.scene()->splitMarkCount(), column + row);
        for (int i = 0; i < view.scene()->nodeItemCount(); ++i) {
            const Op& op = g.ops[size_t(view.layoutInput().nodes[size_t(i)].op)];
            const QString expected = op.tensor_parallel == TensorParallel::Column ? QStringLiteral("col/t2")
                                     : op.tensor_parallel == TensorParallel::Row  ? QStringLiteral("row/t2")
                                                                                  : QString();
            QCOMPARE(view.scene()->splitTag(i), expected);
        }
        QVERIFY2(view.legendText().contains(QStringLiteral("col/t2")) && view.legendText().contains(QStringLiteral("row/t2")),
                 qPrintable(view.legendText()));
        QVERIFY(view.legendText().contains(QStringLiteral("stage&nbsp;1")));  // still coloured by stage
        // The properties panel says how an op is split.
        view.search(QStringLiteral("block0.mlp_fc1"));
        QVERIFY2(view.propertiesText().contains(QStringLiteral("tensor parallel: column-parallel")), qPrintable(view.propertiesText()));
        view.search(QStringLiteral("block0.mlp_fc2"));
        QVERIFY2(view.propertiesText().contains(QStringLiteral("tensor parallel: row-parallel")), qPrintable(view.propertiesText()));
        view.search(QStringLiteral("block0.ln1"));
        QVERIFY(!view.propertiesText().contains(QStringLiteral("tensor parallel")));
        // With HIPPIE_SCREENSHOT_DIR set, the first block at a readable size (the user guide's picture).
        if (const QByteArray dir = qgetenv("HIPPIE_SCREENSHOT_DIR"); !dir.isEmpty()) {
            view.show();
            QVERIFY(QTest::qWaitForWindowExposed(&view));
            view.search(QStringLiteral("block0.attn_context"));  // centred at a readable scale
            view.search(QString());                              // the match's red outline cleared
            QVERIFY(view.grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/graph-tp.png")));
        }
        // The layer view: each layer's box counts what its ops' boxes showed.
        view.setCollapsed(true);
        QVERIFY(done.wait(60000));
        for (int i = 0; i < view.scene()->nodeItemCount(); ++i) {
            const int layer = view.layoutInput().nodes[size_t(i)].layer;
            int c = 0, r = 0;
            for (const Op& op : g.ops)
                if (op.layer == layer) {
                    c += op.tensor_parallel == TensorParallel::Column ? 1 : 0;
                    r += op.tensor_parallel == TensorParallel::Row ? 1 : 0;
                }
            QString expected;
            if (c + r > 0) {
                expected = QStringLiteral("t2:");
                if (c > 0) expected += QStringLiteral(" %1 col").arg(c);
                if (r > 0) expected += QStringLiteral(" %1 row").arg(r);
            }
            QCOMPARE(view.scene()->splitTag(i), expected);
        }
        // Per-stage degrees: a layer is marked with its own stage's degree, none on a stage of 1.
        s.plan.stage_tp = {1, 2};
        s.plan.device_map = defaultDeviceMap(1, s.plan.stage_tp);
        view.setPlan(&s.plan);
        int marked = 0;
        for (int i = 0; i < view.scene()->nodeItemCount(); ++i) {
            const int layer = view.layoutInput().nodes[size_t(i)].layer;
            const QString tag = view.scene()->splitTag(i);
            if (layer <= s.plan.stages[0].last_layer) QVERIFY2(tag.isEmpty(), qPrintable(tag));
            else if (!tag.isEmpty()) {
                QVERIFY2(tag.startsWith(QStringLiteral("t2:")), qPrintable(tag));
                ++marked;
            }
        }
        QVERIFY(marked > 0);
        QVERIFY2(view.legendText().contains(QStringLiteral("per&nbsp;stage (1,2)")), qPrintable(view.legendText()));
        s.plan.stage_tp.clear();
        // Without tensor parallelism nothing is marked.
        s.plan.tp = 1;
        s.plan.device_map = defaultDeviceMap(2, 1, 1);
        view.setPlan(&s.plan);
        QCOMPARE(view.scene()->splitMarkCount(), 0);
        QVERIFY(!view.legendText().contains(QStringLiteral("col/t")));
    }

    // A graph laid out while its page was hidden is shown whole when the page opens, and stays
    // fitted as the window is resized until the user zooms; Fit brings that back.
    void fitsTheWholeGraphWhenFirstShown() {
        const testing::Setup s = testing::smallPipeline(2, 1, 4, ScheduleKind::OneFOneB);
        GraphView view;
        view.resize(900, 700);
        QSignalSpy done(&view, &GraphView::layoutFinished);
        view.setGraph(s.problem.graph);
        QVERIFY(done.wait(60000));
        QVERIFY(!view.isVisible());
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCoreApplication::processEvents();
        const QRectF whole = view.scene()->sceneRect();
        auto shownWhole = [&] {
            const QRectF visible = view.visibleSceneRect().adjusted(-1, -1, 1, 1);
            return visible.contains(whole);
        };
        QVERIFY2(shownWhole(), qPrintable(QStringLiteral("visible %1,%2 %3x%4 of %5x%6")
                                              .arg(view.visibleSceneRect().x()).arg(view.visibleSceneRect().y())
                                              .arg(view.visibleSceneRect().width()).arg(view.visibleSceneRect().height())
                                              .arg(whole.width()).arg(whole.height())));
        // Not fitted into a corner: the graph's centre is the view's.
        QVERIFY(std::abs(view.visibleSceneRect().center().y() - whole.center().y()) < whole.height() * 0.05 + 2);
        QVERIFY(view.keepsFitted());
        // A long chain fitted whole is small: the status line says how to read it.
        QVERIFY2(view.statusText().contains(QStringLiteral("shown whole at")) && view.statusText().contains(QStringLiteral("scroll to zoom in")),
                 qPrintable(view.statusText()));
        view.resize(1300, 500);
        QCoreApplication::processEvents();
        QVERIFY(shownWhole());
        // A wheel zoom makes the view the user's: a resize no longer refits.
        auto* zoomable = view.findChild<ZoomableGraphicsView*>();
        QVERIFY(zoomable);
        const QPointF centre(zoomable->viewport()->width() / 2.0, zoomable->viewport()->height() / 2.0);
        QWheelEvent wheel(centre, zoomable->viewport()->mapToGlobal(centre), QPoint(), QPoint(0, 360), Qt::NoButton, Qt::NoModifier,
                          Qt::NoScrollPhase, false);
        QApplication::sendEvent(zoomable->viewport(), &wheel);
        QVERIFY(!view.keepsFitted());
        QVERIFY(!shownWhole());
        view.resize(1000, 700);
        QCoreApplication::processEvents();
        QVERIFY(!shownWhole());
        view.fit();
        QVERIFY(view.keepsFitted());
        QVERIFY(shownWhole());
    }

    void layeredCoordinatesCentreADiamond() {
        // 0 on top, 1 and 2 beside each other, 3 below: 0 and 3 centred over 1 and 2.
        LayeredInput in;
        in.ranks = {{0}, {1, 2}, {3}};
        in.width = {50, 40, 60, 50};
        in.height = {20, 30, 20, 20};
        in.is_bend = {false, false, false, false};
        in.links = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
        const LayeredCoordinates c = assignLayeredCoordinates(in);
        QCOMPARE(c.x[2] - c.x[1], (40 + 60) / 2 + in.node_sep);
        QVERIFY(std::abs(c.x[0] - (c.x[1] + c.x[2]) / 2) < 1e-6);
        QVERIFY(std::abs(c.x[3] - c.x[0]) < 1e-6);
        QCOMPARE(c.x[1] - 20, 0.0);  // the leftmost box touches x = 0
        QCOMPARE(c.width, c.x[2] + 30);
        QCOMPARE(c.y[0], 10.0);
        QCOMPARE(c.y[1], 20 + in.rank_sep + 15);
        QCOMPARE(c.y[2], c.y[1]);
        QCOMPARE(c.y[3], 20 + in.rank_sep + 30 + in.rank_sep + 10);
        QCOMPARE(c.height, 20 + in.rank_sep + 30 + in.rank_sep + 20);
    }

    void layeredCoordinatesKeepOrderAndSeparation() {
        // Three boxes all pulled to the same x by one box above: order and gaps still hold.
        LayeredInput in;
        in.ranks = {{0}, {1, 2, 3}};
        in.width = {30, 30, 30, 30};
        in.height = {10, 10, 10, 10};
        in.is_bend = {false, false, false, false};
        in.links = {{0, 1}, {0, 2}, {0, 3}};
        const LayeredCoordinates c = assignLayeredCoordinates(in);
        QCOMPARE(c.x[2] - c.x[1], 30 + in.node_sep);
        QCOMPARE(c.x[3] - c.x[2], 30 + in.node_sep);
        QVERIFY(std::abs(c.x[0] - c.x[2]) < 1e-6);
    }

    void laysOutLargeGraphsInLayers() {
        // Above kLayeredLayoutNodes boxes: dot's ranks and order, our coordinates.
        const int ops = kLayeredLayoutNodes + 200;
        const LayoutInput in = buildLayoutInput(testing::syntheticGraph(ops, ops / 25), false);
        const GraphLayout layout = GraphvizLayouter::layoutBlocking(in);
        QVERIFY2(layout.error.empty(), layout.error.c_str());
        QCOMPARE(int(layout.nodes.size()), ops);
        QCOMPARE(layout.edges.size(), in.edges.size());
        const GraphLayout layered = GraphvizLayouter::layoutBlocking(in, LayoutMethod::Layered);
        for (size_t i = 0; i < layout.nodes.size(); ++i) {
            QCOMPARE(layout.nodes[i].x, layered.nodes[i].x);  // Auto chose Layered, deterministically
            QCOMPARE(layout.nodes[i].y, layered.nodes[i].y);
        }
        // Every box inside the drawing, sized as asked, none overlapping another of its rank.
        std::map<double, std::vector<const NodeGeometry*>> rows;
        for (size_t i = 0; i < layout.nodes.size(); ++i) {
            const NodeGeometry& n = layout.nodes[i];
            QCOMPARE(n.width, in.nodes[i].width_pt);
            QCOMPARE(n.height, in.nodes[i].height_pt);
            QVERIFY(n.x - n.width / 2 >= -1e-6 && n.x + n.width / 2 <= layout.width + 1e-6);
            QVERIFY(n.y - n.height / 2 >= -1e-6 && n.y + n.height / 2 <= layout.height + 1e-6);
            rows[n.y].push_back(&n);
        }
        for (auto& [y, row] : rows) {
            std::sort(row.begin(), row.end(), [](auto* a, auto* b) { return a->x < b->x; });
            for (size_t k = 1; k < row.size(); ++k) QVERIFY(row[k]->x - row[k - 1]->x >= (row[k]->width + row[k - 1]->width) / 2);
        }
        // Edges flow downwards as polylines that leave the tail's box and end in an arrowhead
        // on the head's box.
        for (const EdgeGeometry& e : layout.edges) {
            const NodeGeometry& a = layout.nodes[size_t(e.src)];
            const NodeGeometry& b = layout.nodes[size_t(e.dst)];
            QVERIFY(a.y < b.y);
            QVERIFY(e.bezier.size() >= 4 && (e.bezier.size() - 1) % 3 == 0);
            QVERIFY(e.has_arrow);
            QVERIFY(onBoundary(a, e.bezier.front()) && e.bezier.front().second > a.y);  // leaves through the bottom half
            QVERIFY(onBoundary(b, e.arrow_tip) && e.arrow_tip.second < b.y);          // arrives from above
        }
    }

    void layeredLayoutDrawsLikeDot() {
        // On a graph dot lays out quickly, the layered placement looks like dot's own: the
        // chain steps straight down as often, and the drawing is about as wide and as tall.
        const int ops = 600;
        const LayoutInput in = buildLayoutInput(testing::syntheticGraph(ops, ops / 25), false);
        const GraphLayout dot = GraphvizLayouter::layoutBlocking(in, LayoutMethod::Dot);
        const GraphLayout layered = GraphvizLayouter::layoutBlocking(in, LayoutMethod::Layered);
        auto straightSteps = [&](const GraphLayout& l) {
            int n = 0;
            for (int i = 0; i + 1 < ops; ++i) n += std::abs(l.nodes[size_t(i)].x - l.nodes[size_t(i + 1)].x) < 1 ? 1 : 0;
            return n;
        };
        const int dot_straight = straightSteps(dot), layered_straight = straightSteps(layered);
        QVERIFY2(dot_straight > 0 && layered_straight >= dot_straight * 9 / 10,
                 qPrintable(QString("%1 vs dot's %2").arg(layered_straight).arg(dot_straight)));
        QVERIFY2(layered.width <= dot.width * 1.25, qPrintable(QString("%1 vs dot's %2").arg(layered.width).arg(dot.width)));
        QVERIFY(std::abs(layered.height - dot.height) <= dot.height * 0.01);
        for (int i = 0; i < ops; ++i) QCOMPARE(layered.nodes[size_t(i)].y < layered.nodes[size_t(ops - 1)].y, i < ops - 1);
    }

    void laysOutFiveThousandOpsWithoutBlocking() {
        const Graph g = testing::syntheticGraph(5000, 200);
        GraphView view;
        view.resize(800, 600);
        view.show();
        QSignalSpy done(&view, &GraphView::layoutFinished);
        view.setGraph(g);
        QVERIFY(view.isCollapsed());  // the layer view first
        QVERIFY(done.wait(60000));
        QCOMPARE(view.scene()->nodeItemCount(), 200);
        QElapsedTimer gui;
        gui.start();
        view.setCollapsed(false);  // every op: the layout runs on the Graphviz thread
        QVERIFY2(gui.elapsed() < 1000, "asking for a layout must not wait for it");
        QVERIFY(view.isLayingOut());
        QVERIFY(done.wait(120000));
        QCOMPARE(view.scene()->nodeItemCount(), 5000);
    }
};

QTEST_MAIN(TestGraphView)
#include "test_graph_view.moc"
