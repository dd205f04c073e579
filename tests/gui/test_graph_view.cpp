// The operator graph: Graphviz positions for every node off the GUI thread, the layer view
// above the threshold, and colours by the plan's stage.
#include <QSignalSpy>
#include <QtTest>
#include <cmath>

#include "gui_fixtures.h"
#include "widgets/common/palette.h"
#include "widgets/graph/graph_scene.h"
#include "widgets/graph/graph_view.h"
#include "widgets/graph/graphviz_layouter.h"
#include "widgets/graph/node_colors.h"

using namespace hippie;
using namespace hippie::widgets;

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

    void benchmarkLayout_data() {
        QTest::addColumn<int>("ops");
        QTest::newRow("1000 ops") << 1000;
        QTest::newRow("5000 ops") << 5000;
    }

    void benchmarkLayout() {
        QFETCH(int, ops);
        const LayoutInput in = buildLayoutInput(testing::syntheticGraph(ops, ops / 25), false);
        QElapsedTimer timer;
        timer.start();
        const GraphLayout layout = GraphvizLayouter::layoutBlocking(in);
        qInfo("Graphviz dot layout of %d ops: %lld ms", ops, timer.elapsed());
        QCOMPARE(int(layout.nodes.size()), ops);
    }
};

QTEST_MAIN(TestGraphView)
#include "test_graph_view.moc"
