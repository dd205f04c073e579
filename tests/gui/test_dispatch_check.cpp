// "Run on workers" refuses what cannot run and says what will happen: the engine must train
// the plan's model, more ranks than devices is said and must be agreed to, no engine is said.
// The dialog is driven with a stand-in engine (a script answering `models`) so that the
// refusal is tested without LibTorch; with the real engine (HIPPIE_BIN_DIR/hippie-engine) its
// own model list is checked too.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "app/studio/dispatch/dispatch_check.h"
#ifdef HIPPIE_WITH_DISPATCH
#include "app/studio/dispatch/dispatch_dialog.h"
#include "app/studio/dispatch/workers_panel.h"
#endif

using namespace hippie;
using namespace hippie::studio;

namespace {

Plan pipelinePlan(const std::string& model, int pp, int dp) {
    Plan p;
    p.planner = "hippie";
    p.model.zoo = model;
    for (int s = 0; s < pp; ++s) p.stages.push_back({s, s});
    p.dp = dp;
    p.micro_batches = 4;
    p.global_batch = 16;
    p.device_map = defaultDeviceMap(pp, dp);
    return p;
}

EngineInfo tinyEngine() {
    EngineInfo e;
    e.path = QStringLiteral("/opt/hippie/bin/hippie-engine");
    e.models = QStringList{QStringLiteral("gpt-tiny"), QStringLiteral("mlp-tiny")};
    return e;
}

// A stand-in hippie-engine: answers `models` with two JSON lines, anything else fails.
QString writeFakeEngine(const QTemporaryDir& dir) {
    const QString path = dir.filePath(QStringLiteral("hippie-engine"));
    QFile f(path);
    f.open(QIODevice::WriteOnly);
    f.write("#!/bin/sh\nif [ \"$1\" = models ]; then\n"
            "echo '{\"name\":\"gpt-tiny\",\"family\":\"gpt\"}'\necho '{\"name\":\"mlp-tiny\",\"family\":\"mlp\"}'\nexit 0\nfi\nexit 2\n");
    f.close();
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
    return path;
}

}  // namespace

class TestDispatchCheck : public QObject {
    Q_OBJECT
private slots:
    // The case: 32 ranks of inception-v3 on this machine with an engine that trains only presets.
    void refusesAModelTheEngineDoesNotTrain() {
        const DispatchCheck c = checkDispatch(pipelinePlan("inception-v3", 4, 8), std::nullopt,
                                              {{QStringLiteral("This machine"), true, 1}}, tinyEngine(), 5);
        QVERIFY(!c.canRun(true));
        QCOMPARE(c.blockers.size(), 1);
        QVERIFY2(c.blockers[0].contains(QStringLiteral("cannot train 'inception-v3'")), qPrintable(c.blockers[0]));
        QVERIFY2(c.blockers[0].contains(QStringLiteral("gpt-tiny, mlp-tiny")), qPrintable(c.blockers[0]));
        // and it says the ranks would share the one device
        QVERIFY(c.shares_devices);
        QVERIFY2(c.steps.join(QLatin1Char('\n')).contains(QStringLiteral("ranks 0–31 on 1 device(s): up to 32 ranks share each device")),
                 qPrintable(c.steps.join(QLatin1Char('\n'))));
    }

    void sharingDevicesNeedsConsent() {
        const DispatchCheck c = checkDispatch(pipelinePlan("gpt-tiny", 4, 1), std::nullopt, {{QStringLiteral("This machine"), true, 2}},
                                              tinyEngine(), 5);
        QVERIFY(c.blockers.isEmpty());
        QVERIFY(c.shares_devices);
        QVERIFY(!c.canRun(false));
        QVERIFY(c.canRun(true));
        QVERIFY(c.steps.join(QLatin1Char('\n')).contains(QStringLiteral("up to 2 ranks share each device")));
    }

    void enoughDevicesRunsOneRankPerDevice() {
        const DispatchCheck c = checkDispatch(pipelinePlan("gpt-tiny", 2, 2), std::nullopt,
                                              {{QStringLiteral("a:7070"), false, 2}, {QStringLiteral("This machine"), true, 2}},
                                              tinyEngine(), 7);
        QVERIFY(c.canRun(false));
        QVERIFY(!c.shares_devices);
        const QString text = c.steps.join(QLatin1Char('\n'));
        QVERIFY2(text.contains(QStringLiteral("a:7070: ranks 0–1 on 2 of its 2 device(s), one rank each")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("This machine: ranks 2–3 on 2 of its 2 device(s)")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("Train 7 step(s)")));
    }

    // A data file: the plan of what happens names it; this machine's ranks need it here, an
    // agent's read it on their host (not checked here).
    void trainingDataIsNamedAndMustExistHere() {
        QTemporaryDir dir;
        const QString tokens = dir.filePath(QStringLiteral("train.bin"));
        QFile f(tokens);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        const Plan plan = pipelinePlan("gpt-tiny", 2, 1);
        const std::vector<DispatchWorker> here = {{QStringLiteral("This machine"), true, 2}};
        QVERIFY(checkDispatch(plan, std::nullopt, here, tinyEngine(), 5).steps.join(QLatin1Char('\n')).contains(
            QStringLiteral("Train 5 step(s) on synthetic data")));
        DispatchCheck c = checkDispatch(plan, std::nullopt, here, tinyEngine(), 5, tokens);
        QVERIFY2(c.blockers.isEmpty(), qPrintable(c.blockers.join(QLatin1Char('\n'))));
        QVERIFY2(c.steps.join(QLatin1Char('\n')).contains(QStringLiteral("Train 5 step(s) on %1 (every rank reads it where it runs)").arg(tokens)),
                 qPrintable(c.steps.join(QLatin1Char('\n'))));
        const QString missing = dir.filePath(QStringLiteral("nothere.bin"));
        c = checkDispatch(plan, std::nullopt, here, tinyEngine(), 5, missing);
        QCOMPARE(c.blockers.size(), 1);
        QVERIFY2(c.blockers[0].contains(missing + QStringLiteral(" is not a file on this machine")), qPrintable(c.blockers[0]));
        QVERIFY(checkDispatch(plan, std::nullopt, {{QStringLiteral("gpu1:7469"), false, 2}}, tinyEngine(), 5, missing).blockers.isEmpty());
    }

    // The engine trains tensor parallelism of the zoo's transformers only (their presets too,
    // as gpt-tiny is gpt2-small): an MLP's is refused before anything starts, on this machine
    // and on agents alike.
    void tensorParallelPlansAreRefused() {
        for (const bool local : {true, false}) {
            Plan p = pipelinePlan("mlp-tiny", 2, 1);
            p.tp = 2;
            p.sequence_parallel = true;
            p.device_map = defaultDeviceMap(2, 1, 2);
            const DispatchCheck c = checkDispatch(p, std::nullopt, {{QStringLiteral("w"), local, 4}}, tinyEngine(), 5);
            QVERIFY(!c.canRun(true));
            QCOMPARE(c.blockers.size(), 1);
            QCOMPARE(c.blockers[0], QStringLiteral("The hippie plan cannot run: tensor parallelism (tp 2, sequence parallel) is "
                                                   "trained by this engine for the zoo's transformer models (gpt, bert, transformer), "
                                                   "not 'mlp-tiny'; plan with tp 1 to train."));
            Plan gpt = pipelinePlan("gpt-tiny", 2, 1);
            gpt.tp = 2;
            gpt.device_map = defaultDeviceMap(2, 1, 2);
            QVERIFY(checkDispatch(gpt, std::nullopt, {{QStringLiteral("w"), local, 4}}, tinyEngine(), 5).blockers.isEmpty());
        }
    }

    void noEngineIsABlocker() {
        const DispatchCheck c = checkDispatch(pipelinePlan("gpt-tiny", 2, 1), std::nullopt, {{QStringLiteral("This machine"), true, 2}},
                                              EngineInfo{}, 5);
        QVERIFY(!c.canRun(true));
        QVERIFY(c.blockers[0].contains(QStringLiteral("No hippie-engine was found")));
    }

    void noWorkerIsABlocker() {
        const DispatchCheck c = checkDispatch(pipelinePlan("gpt-tiny", 2, 1), std::nullopt, {}, tinyEngine(), 5);
        QVERIFY(!c.canRun(true));
    }

    void askEngineReadsTheModelList() {
        QTemporaryDir dir;
        const EngineInfo e = askEngine(writeFakeEngine(dir));
        QVERIFY2(e.models.has_value(), qPrintable(e.error));
        QCOMPARE(*e.models, (QStringList{QStringLiteral("gpt-tiny"), QStringLiteral("mlp-tiny")}));
        const EngineInfo missing = askEngine(dir.filePath(QStringLiteral("nothing-here")));
        QVERIFY(!missing.models);
    }

    void realEngineTrainsWhatItLists() {
        const QString engine = QStringLiteral(HIPPIE_BIN_DIR "/hippie-engine");
        if (!QFileInfo(engine).isExecutable()) QSKIP("hippie-engine is not built (LibTorch not found)");
        const EngineInfo e = askEngine(engine);
        QVERIFY2(e.models && e.models->contains(QStringLiteral("gpt-tiny")), qPrintable(e.error));
        QVERIFY(checkDispatch(pipelinePlan("gpt-tiny", 2, 1), std::nullopt, {{QStringLiteral("This machine"), true, 2}}, e, 5)
                    .canRun(false));
        // The engine trains every zoo model now: a zoo plan passes the check too.
        QVERIFY(checkDispatch(pipelinePlan("inception-v3", 2, 1), std::nullopt, {{QStringLiteral("This machine"), true, 2}}, e, 5)
                    .canRun(false));
    }

#ifdef HIPPIE_WITH_DISPATCH
    // The dialog: Run is disabled and the reason shown for a model the engine does not train;
    // enabled for one it trains.
    void dialogRefusesAndExplains() {
        QTemporaryDir dir;
        WorkersPanel workers(/*use_settings=*/false);
        workers.setEngine(writeFakeEngine(dir));
        {
            DispatchDialog d(pipelinePlan("inception-v3", 2, 1), std::nullopt, &workers);
            QVERIFY(!d.canRun());
            QVERIFY2(d.whatWillHappen().contains(QStringLiteral("Cannot run: The engine")), qPrintable(d.whatWillHappen()));
            QVERIFY(d.whatWillHappen().contains(QStringLiteral("cannot train 'inception-v3'")));
        }
        {
            DispatchDialog d(pipelinePlan("gpt-tiny", 2, 1), std::nullopt, &workers);
            QVERIFY2(d.check().blockers.isEmpty(), qPrintable(d.whatWillHappen()));
            QVERIFY2(d.whatWillHappen().contains(QStringLiteral("Start 2 hippie-engine ranks")), qPrintable(d.whatWillHappen()));
            QCOMPARE(d.canRun(), !d.check().shares_devices);  // unprobed: devices unknown, no consent needed
            d.setChecked(0, false);
            QVERIFY(!d.canRun());  // no worker ticked
        }
    }
#endif
};

QTEST_MAIN(TestDispatchCheck)
#include "test_dispatch_check.moc"
