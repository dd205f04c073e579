#include "app/studio/command_line.h"

#include <exception>

#include <QCommandLineParser>
#include <QCoreApplication>

#include "app/studio/lessons.h"
#include "planners/model/overrides.h"

namespace hippie::studio {

CommandLine parseCommandLine(const QCoreApplication& app) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Hippie Studio: compare parallelisation plans for DNN training."));
    p.addHelpOption();
    p.addVersionOption();
    const QCommandLineOption model({QStringLiteral("m"), QStringLiteral("model")}, QStringLiteral("zoo model or graph JSON file"), QStringLiteral("M"));
    const QCommandLineOption cluster({QStringLiteral("c"), QStringLiteral("cluster")}, QStringLiteral("cluster preset or JSON file"), QStringLiteral("C"));
    const QCommandLineOption batch(QStringLiteral("global-batch"), QStringLiteral("samples per iteration"), QStringLiteral("B"));
    const QCommandLineOption precision(QStringLiteral("precision"), QStringLiteral("fp32, fp16 or bf16"), QStringLiteral("P"), QStringLiteral("fp16"));
    const QCommandLineOption seq_len(QStringLiteral("seq-len"), QStringLiteral("sequence length (0: the model's)"), QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption overrides(QStringLiteral("override"),
                                       QStringLiteral("size overrides of the zoo model, e.g. layers=2,seq_len=128 "
                                                      "(keys: hippie-plan models --json)"),
                                       QStringLiteral("K=V,..."));
    const QCommandLineOption planners({QStringLiteral("run-planners"), QStringLiteral("planners")},
                                      QStringLiteral("comma-separated planners to run (default: the hybrid ones)"), QStringLiteral("LIST"));
    const QCommandLineOption plan(QStringLiteral("plan"),
                                  QStringLiteral("open a plan JSON file (hippie-plan compare/simulate) with the model and cluster it "
                                                 "names, selected and simulated; --cluster replaces its cluster; planners run only "
                                                 "when --planners is given"),
                                  QStringLiteral("FILE"));
    const QCommandLineOption no_run(QStringLiteral("no-run"), QStringLiteral("load, but do not run planners"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"), QStringLiteral("save the window as PNG after planning and exit"), QStringLiteral("FILE"));
    const QCommandLineOption view(QStringLiteral("view"), QStringLiteral("page to show: compare, gantt, graph, teaching, runs or history"), QStringLiteral("V"), QStringLiteral("compare"));
    const QCommandLineOption screenshot_size(QStringLiteral("screenshot-size"), QStringLiteral("window size for --screenshot"),
                                             QStringLiteral("WxH"), QStringLiteral("1600x1000"));
    const QCommandLineOption lesson(QStringLiteral("lesson"),
                                    QStringLiteral("open teaching lesson N (1 = the first listed) on the Teaching page; with "
                                                   "--screenshot, its whole iteration is shown"),
                                    QStringLiteral("N"));
    p.addOptions({model, cluster, batch, precision, seq_len, overrides, planners, plan, no_run, screenshot, screenshot_size, view, lesson});
    p.process(app);

    CommandLine cl;
    if (p.isSet(model)) {
        const QString m = p.value(model);
        if (m.endsWith(QStringLiteral(".json"))) {
            cl.start.graph_file = m;
        } else {
            ModelSpec spec;
            spec.zoo = m.toStdString();
            spec.seq_len = p.value(seq_len).toInt();
            try {
                spec.precision = precisionFromString(p.value(precision).toStdString());
                const int seq = spec.seq_len;
                applyOverrideText(spec, p.value(overrides).toStdString());
                if (seq > 0 && spec.seq_len != seq)
                    cl.error = QStringLiteral("--seq-len and --override seq_len= disagree; give the sequence length once");
            } catch (const std::exception& e) {
                cl.error = QString::fromUtf8(e.what());
            }
            cl.start.model = spec;
        }
    }
    cl.start.cluster = p.value(cluster);
    cl.start.plan_file = p.value(plan);
    if (p.isSet(overrides) && (!p.isSet(model) || !cl.start.graph_file.isEmpty()))
        cl.error = QStringLiteral("--override goes with --model and a zoo model");
    if (p.isSet(plan) && p.isSet(model)) cl.error = QStringLiteral("--plan names its model; leave out --model");
    if (p.isSet(batch)) {
        bool ok = false;
        cl.start.global_batch = p.value(batch).toInt(&ok);
        if (!ok || cl.start.global_batch <= 0) cl.error = QStringLiteral("--global-batch must be a positive integer, not '%1'").arg(p.value(batch));
    }
    if (p.isSet(planners)) cl.start.planners = p.value(planners).split(QLatin1Char(','), Qt::SkipEmptyParts);
    cl.start.run_planners = !p.isSet(no_run);
    cl.screenshot = p.value(screenshot);
    cl.view = p.value(view);
    const QStringList size = p.value(screenshot_size).split(QLatin1Char('x'));
    const int w = size.size() == 2 ? size[0].toInt() : 0, h = size.size() == 2 ? size[1].toInt() : 0;
    if (w > 0 && h > 0) cl.screenshot_size = QSize(w, h);
    else cl.error = QStringLiteral("--screenshot-size must be WIDTHxHEIGHT, e.g. 1280x800, not '%1'").arg(p.value(screenshot_size));
    if (p.isSet(lesson)) {
        bool ok = false;
        const int n = p.value(lesson).toInt(&ok);
        if (!ok || n < 1 || n > static_cast<int>(lessons().size()))
            cl.error = QStringLiteral("--lesson must be 1 to %1 (the Teaching page's list), not '%2'").arg(lessons().size()).arg(p.value(lesson));
        else
            cl.lesson = n - 1;
        if (!p.isSet(view)) cl.view = QStringLiteral("teaching");
    }
    if (!MainWindow::pageFromName(cl.view)) cl.error = QStringLiteral("--view must be compare, gantt, graph or teaching, not '%1'").arg(cl.view);
    return cl;
}

}  // namespace hippie::studio
