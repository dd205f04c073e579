// The studio's files: each kind of model (zoo, graph JSON, TorchScript through hippie-engine),
// bad files that leave the previous model loaded, plan files (--plan and File > Open plan),
// the exports, the settings a second window restores, and the per-planner progress rows.
#include <QDockWidget>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>
#include <qcustomplot.h>

#include "app/studio/main_window.h"
#include "app/studio/message_label.h"
#include "app/studio/model_panel.h"
#include "app/studio/override_edit.h"
#include "app/studio/planner_run_list.h"
#include "app/studio/planners_panel.h"
#include "app/studio/schedule_page.h"
#include "app/studio/studio_session.h"
#include "engine_fixture.h"
#include "gui_fixtures.h"
#include "studio_start.h"
#include "planners/algorithms/registry.h"
#include "planners/model/graph_json.h"
#include "planners/schedule/plan_json.h"
#include "widgets/compare/comparison_model.h"
#include "widgets/gantt/schedule_view.h"
#include "widgets/graph/graph_scene.h"
#include "widgets/graph/graph_view.h"

using namespace hippie;
using namespace hippie::studio;
using hippie::testing::EngineForStudio;
using hippie::testing::EnvGuard;
using widgets::ComparisonModel;

namespace {

const QString kExampleGraph = QStringLiteral(HIPPIE_SOURCE_DIR "/resources/examples/tiny-mlp.graph.json");

void writeFile(const QString& path, const QByteArray& text) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(text), qint64(text.size()));
}

QByteArray readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// gpt2-small on one DGX A100 as a 4-stage 1F1B pipeline, written as hippie-plan writes plans.
QString writePlan(const QTemporaryDir& dir) {
    const testing::Setup s = testing::smallPipeline(4, 1, 4, ScheduleKind::OneFOneB);
    const QString path = dir.filePath("gpt2-4x1.plan.json");
    savePlanFile(s.plan, path.toStdString());
    return path;
}

}  // namespace

class TestStudioFiles : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        // Settings go to a test location (~/.qttest), never the user's own.
        QStandardPaths::setTestModeEnabled(true);
        QSettings(QStringLiteral("hippie"), QStringLiteral("hippie-studio")).clear();
    }
    void cleanupTestCase() { QSettings(QStringLiteral("hippie"), QStringLiteral("hippie-studio")).clear(); }

    void loadsZooModelsAndGraphFiles() {
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("resnet50")));
        QCOMPARE(w.session()->graph().name, std::string("resnet50"));
        QCOMPARE(w.session()->graph().source.zoo, std::string("resnet50"));
        QVERIFY(!w.modelPanel()->message()->showsError());
        QVERIFY(w.modelPanel()->message()->text().startsWith("resnet50:"));

        const Graph expected = loadGraphFile(kExampleGraph.toStdString());
        QVERIFY(w.modelPanel()->openGraphFile(kExampleGraph));
        QCOMPARE(w.session()->graph().name, std::string("tiny-mlp"));
        QCOMPARE(w.session()->graph().ops.size(), expected.ops.size());
        QCOMPARE(w.session()->graph().edges.size(), expected.edges.size());
        QVERIFY(!w.modelPanel()->message()->showsError());
        QVERIFY(w.modelPanel()->message()->text().contains(QString("%1 ops").arg(expected.ops.size())));
    }

    // The Model panel's Overrides line: Load builds the scaled model, a key the model does not
    // accept keeps the previous one and says which key; loading a spec shows its overrides.
    void modelPanelOverrides() {
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        auto* overrides = w.modelPanel()->findChild<OverrideEdit*>();
        QVERIFY(overrides);
        QVERIFY2(overrides->toolTip().contains("d_model=768"), qPrintable(overrides->toolTip()));
        QPushButton* load = nullptr;
        for (auto* b : w.modelPanel()->findChildren<QPushButton*>())
            if (b->text() == "Load") load = b;
        QVERIFY(load);
        overrides->setText("layers=2,d_model=64,heads=4,seq_len=32");
        load->click();
        QVERIFY2(!w.modelPanel()->message()->showsError(), qPrintable(w.modelPanel()->message()->text()));
        QCOMPARE(w.session()->graph().name, std::string("gpt2-small[layers=2,d_model=64,heads=4,seq_len=32]"));
        QCOMPARE(w.session()->graph().layerCount(), 4);
        QCOMPARE(w.session()->graph().source.seq_len, 32);

        overrides->setText("blocks1=2");
        load->click();
        QVERIFY(w.modelPanel()->message()->showsError());
        QVERIFY2(w.modelPanel()->message()->text().contains("'blocks1'"), qPrintable(w.modelPanel()->message()->text()));
        QCOMPARE(w.session()->graph().layerCount(), 4);
        overrides->setText("layers=two");
        load->click();
        QVERIFY2(w.modelPanel()->message()->text().contains("two"), qPrintable(w.modelPanel()->message()->text()));

        ModelSpec cnn;
        cnn.zoo = "resnet50";
        cnn.batch_size = 2;
        cnn.overrides = {{"width_mult", 0.5}, {"image_size", 64}};
        QVERIFY(w.modelPanel()->loadZoo(cnn));
        QCOMPARE(overrides->text(), QString("width_mult=0.5,image_size=64"));
        QCOMPARE(w.session()->graph().source.overrides, cnn.overrides);
        QVERIFY(overrides->toolTip().contains("blocks3=6"));
    }

    void badGraphFilesKeepThePreviousModel_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("says");
        QTest::newRow("malformed JSON") << QByteArray("{ \"format\": \"hippie-graph\", ") << "JSON";
        QTest::newRow("cyclic graph") << QByteArray(R"({"format":"hippie-graph","version":1,"name":"loop","batch_size":1,
            "ops":[{"id":0,"name":"a","kind":"matmul","layer":0,"fwd_flops":1,"bwd_flops":2,"param_bytes":4,"output_bytes":4,"temp_bytes":0},
                   {"id":1,"name":"b","kind":"matmul","layer":0,"fwd_flops":1,"bwd_flops":2,"param_bytes":4,"output_bytes":4,"temp_bytes":0}],
            "edges":[{"src":0,"dst":1,"bytes":4},{"src":1,"dst":0,"bytes":4}]})") << "acyclic";
        QTest::newRow("wrong schema") << QByteArray(R"({"format":"hippie-cluster","version":1,"nodes":[]})") << "hippie-graph";
        QTest::newRow("missing field") << QByteArray(R"({"format":"hippie-graph","version":1,"name":"x","batch_size":1,"edges":[]})") << "ops";
    }

    void badGraphFilesKeepThePreviousModel() {
        QFETCH(QByteArray, text);
        QFETCH(QString, says);
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        const size_t ops = w.session()->graph().ops.size();
        QSignalSpy changed(w.session(), &StudioSession::graphChanged);
        QTemporaryDir dir;
        const QString path = dir.filePath("broken.graph.json");
        writeFile(path, text);
        QVERIFY(!w.modelPanel()->openGraphFile(path));
        const MessageLabel* message = w.modelPanel()->message();
        QVERIFY(message->showsError());
        QVERIFY2(message->text().contains("broken.graph.json"), qPrintable(message->text()));
        QVERIFY2(message->text().contains(says), qPrintable(message->text()));
        QVERIFY(message->text().contains("previous model stays loaded"));
        QCOMPARE(changed.count(), 0);
        QCOMPARE(w.session()->graph().name, std::string("gpt2-small"));
        QCOMPARE(w.session()->graph().ops.size(), ops);
    }

    void torchScriptWithoutTheEngineSaysSo() {
        EnvGuard guard("HIPPIE_ENGINE");
        qputenv("HIPPIE_ENGINE", "/nonexistent/hippie-engine");
        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        QSignalSpy finished(w.modelPanel(), &ModelPanel::torchScriptFinished);
        QSignalSpy changed(w.session(), &StudioSession::graphChanged);
        w.modelPanel()->importTorchScript("/tmp/model.pt", "8,32");
        QTRY_COMPARE(finished.count(), 1);
        QCOMPARE(finished.first().first().toBool(), false);
        const QString text = w.modelPanel()->message()->text();
        QVERIFY(w.modelPanel()->message()->showsError());
        QVERIFY2(text.contains("model.pt") && text.contains("hippie-engine inspect") && text.contains("/nonexistent/hippie-engine"),
                 qPrintable(text));
        QVERIFY(text.contains("stays loaded"));
        QCOMPARE(changed.count(), 0);
        QCOMPARE(w.session()->graph().name, std::string("gpt2-small"));
    }

    void importsTorchScriptThroughTheEngine() {
        const EngineForStudio for_studio;
        if (for_studio.path.isEmpty()) QSKIP(EngineForStudio::kMissing);
        const QString& engine = for_studio.path;
        QTemporaryDir dir;
        const QString pt = dir.filePath("mlp.pt");
        QProcess exporter;
        exporter.start(engine, {"export-script", "--model", "mlp-tiny", "--out", pt});
        QVERIFY(exporter.waitForFinished(120000));
        QVERIFY2(exporter.exitCode() == 0, exporter.readAll().constData());

        MainWindow w(false);
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        QSignalSpy finished(w.modelPanel(), &ModelPanel::torchScriptFinished);
        w.modelPanel()->importTorchScript(pt, "8,32");
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);
        QVERIFY2(finished.first().first().toBool(), qPrintable(w.modelPanel()->message()->text()));
        // mlp-tiny: four hidden layers and the classifier, each a child module, each a layer,
        // with the engine's measured times and the modules' parameters (32*64+64, 3 x
        // (64*64+64), 64*10+10 fp32 values).
        const Graph& g = w.session()->graph();
        QCOMPARE(g.layerCount(), 5);
        int64_t param_bytes = 0;
        for (const Op& op : g.ops) {
            param_bytes += op.param_bytes;
            QVERIFY2(op.fwd_time_s && *op.fwd_time_s > 0, op.name.c_str());
        }
        QCOMPARE(param_bytes, int64_t(4) * ((32 * 64 + 64) + 3 * (64 * 64 + 64) + (64 * 10 + 10)));

        // A file LibTorch cannot load: the engine's message, the MLP stays.
        const QString junk = dir.filePath("junk.pt");
        writeFile(junk, "not a module");
        w.modelPanel()->importTorchScript(junk, "8,32");
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 2, 120000);
        QCOMPARE(finished.last().first().toBool(), false);
        QVERIFY2(w.modelPanel()->message()->text().contains("junk.pt"), qPrintable(w.modelPanel()->message()->text()));
        QCOMPARE(w.session()->graph().layerCount(), 5);
    }

    // The plan `hippie-engine plan` writes for one of its test models opens like any other
    // (issue 18: it was refused as "unknown zoo model 'gpt-tiny'"): gpt-tiny is a preset, the
    // plan records gpt2-small at its overrides, and the plan is selected and simulated.
    void opensAPlanTheEngineWrote() {
        const EngineForStudio for_studio;
        if (for_studio.path.isEmpty()) QSKIP(EngineForStudio::kMissing);
        const QString& engine = for_studio.path;
        QTemporaryDir dir;
        const QString plan_path = dir.filePath("gpt-tiny.plan.json");
        QProcess planner;
        planner.start(engine, {"plan", "--model", "gpt-tiny", "--pp", "2", "--dp", "1", "--microbatches", "2", "--global-batch", "8",
                               "--out", plan_path});
        QVERIFY(planner.waitForFinished(120000));
        QVERIFY2(planner.exitCode() == 0, planner.readAllStandardError().constData());
        MainWindow w(false);
        w.resize(1400, 900);
        w.show();
        QVERIFY(w.start(testing::zooStart("gpt2-small")));
        QSignalSpy shown(&w, &MainWindow::traceShown);
        const QString error = w.openPlanFile(plan_path);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(w.session()->graph().name, std::string("gpt2-small[layers=4,d_model=32,heads=2,d_ff=128,vocab=64,positions=16,seq_len=16]"));
        QCOMPARE(w.comparison()->rowCount(), 1);
        QCOMPARE(w.comparison()->state(0), ComparisonModel::State::Done);
        QVERIFY(w.shownTrace() || shown.wait(120000));
        QCOMPARE(int(w.shownTrace()->devices.size()), 2);
    }

    void opensAPlanSelectedAndSimulated() {
        QTemporaryDir dir;
        const QString plan_path = writePlan(dir);
        const Plan plan = loadPlanFile(plan_path.toStdString());
        MainWindow w(false);
        w.resize(1400, 900);
        w.show();
        QVERIFY(w.start(testing::zooStart("resnet50", QStringLiteral("v100-4x4"))));  // what the plan replaces
        QSignalSpy shown(&w, &MainWindow::traceShown);
        QCOMPARE(w.openPlanFile(plan_path), QString());
        QVERIFY(!w.isPlanning());
        QCOMPARE(w.session()->graph().name, std::string("gpt2-small"));
        QCOMPARE(w.session()->clusterName(), QString("dgx-a100-1x8"));
        QCOMPARE(w.comparison()->rowCount(), 1);
        const int row = w.comparison()->rowOfPlanner("gpt2-4x1.plan.json");
        QCOMPARE(row, 0);
        QCOMPARE(w.comparison()->state(row), ComparisonModel::State::Done);
        QCOMPARE(w.comparison()->index(row, ComparisonModel::StatusColumn).data().toString(), "loaded from " + plan_path);
        QCOMPARE(w.comparison()->index(row, ComparisonModel::ShapeColumn).data().toString(), QString("4×1"));
        QVERIFY(w.shownTrace() || shown.wait(60000));
        QCOMPARE(int(w.shownTrace()->devices.size()), 4);
        QCOMPARE(w.shownTrace()->metrics.iteration_time_s, w.comparison()->result(row)->metrics.iteration_time_s);
        QCOMPARE(w.comparison()->result(row)->plan.stages.size(), plan.stages.size());

        // A bad plan: a message naming the file, and the plan above stays, selected.
        const QString bad = dir.filePath("bad.plan.json");
        writeFile(bad, "{\"format\": \"hippie-plan\", \"version\": 1, ");
        const QString error = w.openPlanFile(bad);
        QVERIFY2(error.contains("bad.plan.json"), qPrintable(error));
        QVERIFY(w.modelPanel()->message()->showsError());
        QCOMPARE(w.comparison()->rowCount(), 1);
        QCOMPARE(w.session()->graph().name, std::string("gpt2-small"));
        QVERIFY(w.shownTrace().has_value());

        // A plan that does not fit its model: six stages of a model with fewer layers.
        Plan wrong = plan;
        wrong.model.zoo = "tiny-mlp-does-not-exist";
        const QString unknown_model = dir.filePath("unknown-model.plan.json");
        savePlanFile(wrong, unknown_model.toStdString());
        QVERIFY(w.openPlanFile(unknown_model).contains("unknown-model.plan.json"));
        wrong = plan;
        wrong.stages.back().last_layer += 1000;
        const QString too_deep = dir.filePath("too-deep.plan.json");
        savePlanFile(wrong, too_deep.toStdString());
        QVERIFY(w.openPlanFile(too_deep).contains("too-deep.plan.json"));
        QCOMPARE(w.comparison()->rowCount(), 1);
        QCOMPARE(w.session()->clusterName(), QString("dgx-a100-1x8"));

        // --cluster with --plan: the plan on another cluster.
        QCOMPARE(w.openPlanFile(plan_path, "v100-4x4"), QString());
        QCOMPARE(w.session()->clusterName(), QString("v100-4x4"));
        QCOMPARE(w.comparison()->rowCount(), 1);
    }

    void planOnTheCommandLine() {
        QTemporaryDir dir;
        const QString plan_path = writePlan(dir);
        const QString png = dir.filePath("plan.png");
        QProcess studio;
        studio.start(QStringLiteral(HIPPIE_BIN_DIR "/hippie-studio"), {"--plan", plan_path, "--view", "gantt", "--screenshot", png});
        QVERIFY(studio.waitForFinished(300000));
        QVERIFY2(studio.exitCode() == 0, studio.readAllStandardError().constData());
        QVERIFY(QImage(png).width() >= 800);

        const QString bad = dir.filePath("missing.plan.json");
        const QString png2 = dir.filePath("bad.png");
        studio.start(QStringLiteral(HIPPIE_BIN_DIR "/hippie-studio"), {"--plan", bad, "--screenshot", png2});
        QVERIFY(studio.waitForFinished(300000));
        QCOMPARE(studio.exitCode(), 2);
        QVERIFY(studio.readAllStandardError().contains("missing.plan.json"));
        QVERIFY(!QFileInfo::exists(png2));
    }

    void exportsEveryFormat() {
        QTemporaryDir dir;
        MainWindow w(false);
        w.resize(1400, 900);
        w.show();
        StartOptions o;
        o.plan_file = writePlan(dir);
        QVERIFY(w.start(o));
        QTRY_VERIFY_WITH_TIMEOUT(w.shownTrace().has_value() && w.isIdle(), 60000);
        w.showPage(MainWindow::Page::Schedule);
        QTest::qWait(50);
        const Trace trace = *w.shownTrace();

        const QString gantt_png = dir.filePath("gantt.png");
        QCOMPARE(w.exportTo(MainWindow::Export::SchedulePng, gantt_png), QString());
        const QImage gantt(gantt_png);
        QCOMPARE(gantt.size(), w.schedulePage()->view()->plot()->size());
        const QString pdf = dir.filePath("gantt.pdf");
        QCOMPARE(w.exportTo(MainWindow::Export::SchedulePdf, pdf), QString());
        QVERIFY(readFile(pdf).startsWith("%PDF-"));
        QVERIFY(QFileInfo(pdf).size() > 1000);

        const QString chrome = dir.filePath("trace.json");
        QCOMPARE(w.exportTo(MainWindow::Export::ChromeTrace, chrome), QString());
        const QJsonArray events = QJsonDocument::fromJson(readFile(chrome)).object().value("traceEvents").toArray();
        int complete = 0;
        for (const QJsonValue& e : events) complete += e.toObject().value("ph").toString() == "X" ? 1 : 0;
        QCOMPARE(complete, int(trace.events.size()));

        w.showPage(MainWindow::Page::Graph);
        QTRY_VERIFY_WITH_TIMEOUT(!w.graphView()->isLayingOut(), 60000);
        const QRectF scene = w.graphView()->scene()->sceneRect();
        const QString graph_png = dir.filePath("graph.png");
        QCOMPARE(w.exportTo(MainWindow::Export::GraphPng, graph_png), QString());
        const double scale = std::min(2.0, 8000 / std::max(scene.width(), scene.height()));
        QCOMPARE(QImage(graph_png).size(), (scene.size() * scale).toSize());
        const QString svg = dir.filePath("graph.svg");
        QCOMPARE(w.exportTo(MainWindow::Export::GraphSvg, svg), QString());
        QVERIFY(readFile(svg).contains("<svg"));
        const QString dot = dir.filePath("graph.dot");
        QCOMPARE(w.exportTo(MainWindow::Export::GraphDot, dot), QString());
        const QByteArray dot_text = readFile(dot);
        QVERIFY(dot_text.startsWith("digraph"));
        for (const Op& op : w.session()->graph().ops) QVERIFY2(dot_text.contains(QByteArray::fromStdString(op.name)), op.name.c_str());

        QVERIFY(w.exportTo(MainWindow::Export::GraphPng, "/nonexistent-dir/graph.png").contains("/nonexistent-dir/graph.png"));
    }

    void settingsRoundTrip() {
        QStringList two;
        for (const char* name : {"data-parallel", "uniform"})
            if (hasPlanner(name)) two << name;
        {
            MainWindow first(true);
            first.resize(1234, 777);
            first.show();
            StartOptions o = testing::zooStart("resnet50", QStringLiteral("v100-4x4"));
            o.planners = two;  // ticked and kept in the settings, not run
            QVERIFY(first.start(o));
            auto* dock = first.findChild<QDockWidget*>("setup-dock");
            QVERIFY(dock);
            first.addDockWidget(Qt::RightDockWidgetArea, dock);
            first.plannersPanel()->setTimeBudgetSeconds(42);
            first.close();
        }
        MainWindow second(true);
        StartOptions nothing;
        nothing.run_planners = false;
        QVERIFY(second.start(nothing));
        QCOMPARE(second.session()->graph().name, std::string("resnet50"));
        QCOMPARE(second.session()->graph().source.batch_size, 8);
        QCOMPARE(second.session()->clusterName(), QString("v100-4x4"));
        QCOMPARE(second.plannersPanel()->checkedPlanners(), two);
        QCOMPARE(second.plannersPanel()->timeBudgetSeconds(), 42.0);
        QCOMPARE(second.plannersPanel()->globalBatch(), 64);
        QCOMPARE(second.size(), QSize(1234, 777));
        QCOMPARE(second.dockWidgetArea(second.findChild<QDockWidget*>("setup-dock")), Qt::RightDockWidgetArea);
    }

    void plannerRowsShowProgressAndCancelOneByOne() {
        if (!hasPlanner("exhaustive") || !hasPlanner("data-parallel")) QSKIP("needs the exhaustive and data-parallel planners");
        MainWindow w(false);
        w.show();
        // GNMT-8 (11 layers) on 8 GPUs is inside the exhaustive search's limits and takes it seconds
        // (9 s on the 2-core machine), so the click below lands while it runs.
        const StartOptions o = testing::withPlanners(testing::zooStart("gnmt-8"), QStringList{"exhaustive", "data-parallel"});
        QSignalSpy finished(&w, &MainWindow::planningFinished);
        QVERIFY(w.start(o));
        PlannerRunList* runs = w.plannersPanel()->runs();
        QCOMPARE(runs->rowCount(), 2);
        QProgressBar* slow = runs->progressBar("exhaustive");
        QVERIFY(slow && runs->cancelButton("exhaustive"));
        QVERIFY(runs->cancelButton("exhaustive")->isEnabled());
        QCOMPARE(slow->maximum(), 1000);
        QTest::mouseClick(runs->cancelButton("exhaustive"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);
        QCOMPARE(w.comparison()->state(w.comparison()->rowOfPlanner("exhaustive")), ComparisonModel::State::Cancelled);
        QCOMPARE(w.comparison()->state(w.comparison()->rowOfPlanner("data-parallel")), ComparisonModel::State::Done);
        QCOMPARE(slow->format(), QString("cancelled"));
        QVERIFY(!runs->cancelButton("exhaustive")->isEnabled());
        QProgressBar* done = runs->progressBar("data-parallel");
        QCOMPARE(done->value(), 1000);
        QVERIFY2(done->format().startsWith("done") || done->format().startsWith("no feasible"), qPrintable(done->format()));
        QVERIFY(!runs->cancelButton("data-parallel")->isEnabled());

        // A new run starts new rows.
        w.plannersPanel()->setCheckedPlanners({"data-parallel"});
        w.runPlanners();
        QCOMPARE(runs->rowCount(), 1);
        QVERIFY(runs->isRunning("data-parallel"));
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 2, 120000);
        QVERIFY(!runs->isRunning("data-parallel"));
    }

private:
    static bool hasPlanner(const char* name) {
        for (const PlannerInfo& p : plannerRegistry())
            if (p.name == name) return true;
        return false;
    }
};

QTEST_MAIN(TestStudioFiles)
#include "test_studio_files.moc"
