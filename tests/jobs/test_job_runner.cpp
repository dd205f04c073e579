// JobRunner on its own, as the studio uses it for runs on the local machine: work directory,
// event log with seq numbers, rank failures with their stderr, cancel.
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "app/jobs/job_runner.h"
#include "jobs_test_support.h"
#include "planners/common/error.h"

using namespace jobs_test;

namespace {

struct RunnerLog {
    explicit RunnerLog(hj::JobRunner& r) {
        QObject::connect(&r, &hj::JobRunner::jobEvent, [this](const QString&, qint64 seq, const json& e) { events.push_back({seq, e}); });
        QObject::connect(&r, &hj::JobRunner::finished, [this](hj::JobState s, const QString& m) {
            state = s;
            message = m;
            done = true;
        });
    }
    int count(const std::string& kind) const {
        int n = 0;
        for (const auto& [seq, e] : events)
            if (e.value("event", "") == kind) ++n;
        return n;
    }
    QString text(const std::string& stream) const {
        QString t;
        for (const auto& [seq, e] : events)
            if (e.value("event", "") == "log" && e.value("stream", "") == stream) t += QString::fromStdString(e.value("text", ""));
        return t;
    }
    std::vector<std::pair<qint64, json>> events;
    hj::JobState state = hj::JobState::Queued;
    QString message;
    bool done = false;
};

json planFor(const QString& engine, int pp) {
    return makePlan(engine, {QStringLiteral("--model"), QStringLiteral("mlp-tiny"), QStringLiteral("--pp"), QString::number(pp),
                             QStringLiteral("--dp"), QStringLiteral("1"), QStringLiteral("--microbatches"), QStringLiteral("2"),
                             QStringLiteral("--global-batch"), QStringLiteral("4")});
}

json wellFormedPlan() {  // for runs whose "engine" is not hippie-engine
    return {{"format", "hippie-plan"}, {"version", 1}, {"model", {{"zoo", "mlp-tiny"}, {"batch_size", 4}}},
            {"cluster", "cpu-local"}, {"planner", "manual"}, {"stages", {{{"first_layer", 0}, {"last_layer", 3}}}},
            {"dp", 1}, {"micro_batches", 1}, {"global_batch", 4}, {"schedule", "1f1b"}, {"optimizer", "sgd"},
            {"device_map", {{0}}}};
}

hj::JobSpec spec(const QString& id, const json& plan, int ranks, int steps) {
    hj::JobSpec s;
    s.id = id.toStdString();
    s.plan = plan;
    s.world_size = ranks;
    s.rank_count = ranks;
    s.steps = steps;
    return s;
}

void checkSeqs(const RunnerLog& log, const hj::JobRunner& runner) {
    for (size_t i = 0; i < log.events.size(); ++i) QCOMPARE(log.events[i].first, static_cast<qint64>(i + 1));
    QCOMPARE(runner.lastSeq(), static_cast<qint64>(log.events.size()));
    const auto replay = runner.eventsAfter(0);
    QCOMPARE(replay.size(), log.events.size());
    for (size_t i = 0; i < replay.size(); ++i) QVERIFY(replay[i] == log.events[i]);
    const auto tail = runner.eventsAfter(runner.lastSeq() - 1);
    QCOMPARE(tail.size(), size_t(1));
    QCOMPARE(tail.front().first, runner.lastSeq());
    QVERIFY(runner.eventsAfter(runner.lastSeq()).empty());
}

}  // namespace

class TestJobRunner : public QObject {
    Q_OBJECT
private slots:
    // A rank that exits non-zero fails the job; its stderr is kept, in the log events and the
    // message. (`ls` stands in for a broken engine binary: it rejects the run arguments.)
    void failingRankKeepsItsStderr() {
        const QString ls = QStandardPaths::findExecutable(QStringLiteral("ls"));
        if (ls.isEmpty()) QSKIP("ls not found");
        QTemporaryDir root;
        hj::JobRunner runner(spec(QStringLiteral("broken"), wellFormedPlan(), 1, 1), {root.path(), ls, {}, 500, 1000});
        RunnerLog log(runner);
        runner.start();
        QCOMPARE(runner.state(), hj::JobState::Running);
        QVERIFY(waitUntil([&] { return log.done; }, 20000));
        QCOMPARE(log.state, hj::JobState::Failed);
        QVERIFY2(log.message.startsWith(QLatin1String("rank 0 exited with code 2 without reporting an error")), qPrintable(log.message));
        QVERIFY2(log.message.contains(QLatin1String("its stderr ends with")), qPrintable(log.message));
        QVERIFY(!log.text("stderr").isEmpty());
        QVERIFY(log.message.contains(log.text("stderr").trimmed().right(40)));
        QCOMPARE(log.events.front().second.value("state", ""), std::string("running"));
        QVERIFY(log.events.front().second["ranks"][0].value("pid", 0) > 0);
        QCOMPARE(log.events.back().second.value("state", ""), std::string("failed"));
        checkSeqs(log, runner);
        QCOMPARE(runner.statusJson().value("state", ""), std::string("failed"));
    }

    void engineThatCannotStartFailsTheJob() {
        QTemporaryDir root;
        const QString not_executable = root.filePath(QStringLiteral("engine.txt"));
        writeFile(not_executable, "not a program");
        hj::JobRunner runner(spec(QStringLiteral("nostart"), wellFormedPlan(), 1, 1), {root.path(), not_executable, {}, 500, 1000});
        RunnerLog log(runner);
        runner.start();
        QVERIFY(waitUntil([&] { return log.done; }, 20000));
        QCOMPARE(log.state, hj::JobState::Failed);
        QVERIFY2(log.message.contains(QLatin1String("could not start")), qPrintable(log.message));
    }

    void cancelBeforeStart() {
        QTemporaryDir root;
        hj::JobRunner runner(spec(QStringLiteral("early"), wellFormedPlan(), 1, 1), {root.path(), QStringLiteral("/bin/true"), {}, 500, 1000});
        RunnerLog log(runner);
        runner.cancel();
        QVERIFY(log.done);
        QCOMPARE(log.state, hj::JobState::Cancelled);
        QCOMPARE(runner.lastSeq(), qint64(1));
    }

    void localRunSucceeds() {
        REQUIRE_ENGINE();
        QTemporaryDir root;
        hj::JobSpec s = spec(QStringLiteral("local-ok"), planFor(engine, 2), 2, 3);
        s.trace_every_step = true;
        hj::JobRunner runner(s, {root.path(), engine, {}, 5000, 3000});
        RunnerLog log(runner);
        runner.start();
        QVERIFY(runner.masterPort() > 0);
        QVERIFY2(waitUntil([&] { return log.done; }, 120000), "the local run did not end");
        QCOMPARE(log.state, hj::JobState::Succeeded);
        QCOMPARE(log.count("step"), 6);
        QCOMPARE(log.count("trace"), 6);
        QCOMPARE(log.count("done"), 2);
        checkSeqs(log, runner);
        QVERIFY(QFile::exists(runner.workDir() + QStringLiteral("/plan.json")));
    }

    void localRunCancels() {
        REQUIRE_ENGINE();
        QTemporaryDir root;
        hj::JobRunner runner(spec(QStringLiteral("local-cancel"), planFor(engine, 2), 2, 100000), {root.path(), engine, {}, 5000, 3000});
        RunnerLog log(runner);
        runner.start();
        QVERIFY(waitUntil([&] { return log.count("step") > 0 || log.done; }, 60000));
        QVERIFY(!log.done);
        QElapsedTimer t;
        t.start();
        runner.cancel();
        QVERIFY(waitUntil([&] { return log.done; }, 10000));
        QCOMPARE(log.state, hj::JobState::Cancelled);
        QVERIFY(t.elapsed() < 5000);
        checkSeqs(log, runner);
    }
};

QTEST_GUILESS_MAIN(TestJobRunner)
#include "test_job_runner.moc"
