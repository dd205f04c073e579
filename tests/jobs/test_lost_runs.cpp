// Runs a dead studio left open become lost on the next start, and only those: a run stays open
// while the process that ran its local share is alive or one of its agents accepts connections.
#include <QtTest>
#include <QProcess>
#include <QTcpServer>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "app/dispatch/lost_runs.h"
#include "app/store/run_store.h"

using hippie::store::RunState;
using hippie::store::RunStore;
using nlohmann::json;

namespace {

const json kPlan = {{"format", "hippie-plan"}, {"version", 1}, {"model", {{"zoo", "gpt-tiny"}, {"batch_size", 8}}},
                    {"cluster", "cpu-local"}, {"planner", "manual"}, {"micro_batches", 2}, {"global_batch", 8}};

qint64 openRun(RunStore& s, const json& workers, RunState state) {
    hippie::store::NewRun r;
    r.plan_id = s.savePlan(kPlan, 0, 0, json{{"iteration_time_s", 0.01}});
    r.workers = workers;
    r.steps = 3;
    const qint64 id = s.createRun(r);
    if (state != RunState::Queued) s.setRunState(id, RunState::Running);
    if (state != RunState::Queued && state != RunState::Running) s.setRunState(id, state);
    s.appendEvents(id, {{0, 1, {{"event", "step"}, {"rank", 0}, {"step", 0}}}});
    return id;
}

// A pid nobody has any more: a child that already exited and was reaped.
qint64 deadPid() {
    QProcess p;
    p.start(QStringLiteral("true"), {});
    if (!p.waitForStarted(10000)) qFatal("cannot start true");
    const qint64 pid = p.processId();
    p.waitForFinished(10000);
    return pid;
}

quint16 closedPort() {
    QTcpServer s;
    s.listen(QHostAddress::LocalHost, 0);
    const quint16 port = s.serverPort();
    s.close();
    return port;
}

}  // namespace

class TestLostRuns : public QObject {
    Q_OBJECT
private slots:
    void onlyUnreachableOpenRunsBecomeLost() {
        QTemporaryDir dir;
        RunStore s(dir.filePath(QStringLiteral("runs.sqlite")));
        QTcpServer agent;  // something listening stands for a live agent
        QVERIFY(agent.listen(QHostAddress::LocalHost, 0));

        json alive_local = hippie::dispatch::localWorkerEntry(0, 2);  // this process
        json dead_local = alive_local;
        dead_local["pid"] = deadPid();
        const json live_agent = {{"host", "127.0.0.1"}, {"port", agent.serverPort()}, {"first_rank", 0}, {"rank_count", 2}};
        const json gone_agent = {{"host", "127.0.0.1"}, {"port", closedPort()}, {"first_rank", 0}, {"rank_count", 2}};

        const qint64 a = openRun(s, json::array({alive_local}), RunState::Running);
        const qint64 b = openRun(s, json::array({dead_local}), RunState::Running);
        const qint64 c = openRun(s, json::array({live_agent}), RunState::Running);
        const qint64 d = openRun(s, json::array({gone_agent}), RunState::Queued);
        const qint64 e = openRun(s, json::array({dead_local, live_agent}), RunState::Running);  // one reachable is enough
        const qint64 f = openRun(s, json::array({gone_agent}), RunState::Succeeded);          // final: untouched
        const qint64 g = openRun(s, json::array(), RunState::Running);                          // no workers at all

        QCOMPARE(hippie::dispatch::markUnreachableRunsLost(s, 1000), 3);
        const auto state = [&](qint64 id) { return s.runDetails(id).summary.state; };
        QCOMPARE(state(a), RunState::Running);
        QCOMPARE(state(b), RunState::Lost);
        QCOMPARE(state(c), RunState::Running);
        QCOMPARE(state(d), RunState::Lost);
        QCOMPARE(state(e), RunState::Running);
        QCOMPARE(state(f), RunState::Succeeded);
        QCOMPARE(state(g), RunState::Lost);
        // Nothing already stored is dropped: the lost run keeps its events and says why.
        const auto details = s.runDetails(b);
        QCOMPARE(details.events.size(), size_t(1));
        QVERIFY2(details.summary.message.contains(QLatin1String("reachable")), qPrintable(details.summary.message));
        // A second start changes nothing more.
        QCOMPARE(hippie::dispatch::markUnreachableRunsLost(s, 1000), 0);
    }

    // A run whose `hippie-plan dispatch` was killed: `hippie-plan runs` settles it as the studio
    // does, instead of listing it as running forever.
    void cliRunsMarksAbandonedRunsLost() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
        qint64 abandoned = 0;
        {
            RunStore s(db);
            json dead_local = hippie::dispatch::localWorkerEntry(0, 1);
            dead_local["pid"] = deadPid();
            abandoned = openRun(s, json::array({dead_local}), RunState::Running);
        }
        QProcess cli;
        cli.start(QStringLiteral(HIPPIE_BIN_DIR "/hippie-plan"), {QStringLiteral("runs"), QStringLiteral("--db"), db, QStringLiteral("--json")});
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        const json runs = json::parse(cli.readAllStandardOutput().toStdString());
        QCOMPARE(runs.size(), size_t(1));
        QCOMPARE(runs[0].value("id", 0LL), static_cast<long long>(abandoned));
        QCOMPARE(runs[0].value("state", ""), std::string("lost"));
    }

    void workerEntriesThatNameNothingAreUnreachable() {
        QVERIFY(!hippie::dispatch::workerReachable(json(nullptr), 100));
        QVERIFY(!hippie::dispatch::workerReachable(json{{"host", "local"}}, 100));  // no pid recorded
        QVERIFY(!hippie::dispatch::workerReachable(json{{"host", "127.0.0.1"}, {"port", 0}}, 100));
        QVERIFY(!hippie::dispatch::workerReachable(json{{"host", ""}, {"port", 7469}}, 100));
        QVERIFY(hippie::dispatch::workerReachable(hippie::dispatch::localWorkerEntry(0, 1), 100));
    }
};

QTEST_GUILESS_MAIN(TestLostRuns)
#include "test_lost_runs.moc"
