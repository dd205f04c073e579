// hippie-agent over 127.0.0.1 with real processes: authentication, message checks, dispatch,
// failures, lost agents, resuming a stream, TLS with a pinned certificate, two agents.
#include <signal.h>

#include <QDir>
#include <QDirIterator>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QTest>

#include "jobs_test_support.h"

using namespace jobs_test;

namespace {

bool isDirEmpty(const QString& path) {
    return !QFileInfo::exists(path) || QDir(path).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).isEmpty();
}

json tinyPlanJson(const QString& engine, int pp = 2, const QString& model = QStringLiteral("gpt-tiny")) {
    return makePlan(engine, {QStringLiteral("--model"), model, QStringLiteral("--pp"), QString::number(pp), QStringLiteral("--dp"),
                             QStringLiteral("1"), QStringLiteral("--microbatches"), QStringLiteral("2"),
                             QStringLiteral("--global-batch"), QStringLiteral("4")});
}

hj::JobSpec jobFor(const QString& id, const json& plan, int steps) {
    hj::JobSpec s;
    s.id = id.toStdString();
    s.plan = plan;
    s.steps = steps;
    s.seed = 7;
    s.world_size = 2;
    s.first_rank = 0;
    s.rank_count = 2;
    return s;
}

bool connectClient(hj::AgentClient& c, Recorder& r, int ms = 10000) {
    c.connectToAgent();
    return waitUntil([&] { return r.ready_count > 0 || !r.refused.isEmpty() || !r.failed.isEmpty(); }, ms) && r.ready_count > 0;
}

// Kills the given engine pids if they still run (after an agent was killed under them).
void killPids(const json& running_event) {
    if (!running_event.is_object() || !running_event.contains("ranks")) return;
    for (const json& r : running_event["ranks"]) ::kill(static_cast<pid_t>(r.value("pid", 0)), SIGKILL);
}

}  // namespace

class TestAgent : public QObject {
    Q_OBJECT
private slots:
    void wrongTokenIsRefusedAndNothingRuns() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        // The submit right behind the bad hello must not run.
        raw.send(QByteArray::fromStdString(
                     json{{"type", "hello"}, {"token", "wrong"}, {"protocol", hj::kProtocolVersion}}.dump() + "\n" +
                     json{{"type", "submit"}, {"job", {{"id", "sneaky"}, {"plan", json::object()}}}}.dump()) +
                 '\n');
        const json m = raw.next();
        QCOMPARE(m.value("type", ""), std::string("refused"));
        QVERIFY(m.value("message", "").find("wrong token") != std::string::npos);
        QVERIFY(raw.closedWithin(5000));
        QVERIFY(isDirEmpty(agent.workDir() + QStringLiteral("/jobs")));

        // Through AgentClient: refused(), never ready().
        hj::AgentClient client(agent.address(QStringLiteral("not-the-token")));
        Recorder r(client);
        client.connectToAgent();
        QVERIFY(waitUntil([&] { return !r.refused.isEmpty(); }, 10000));
        QCOMPARE(r.ready_count, 0);
        QVERIFY(r.refused.first().contains(QLatin1String("wrong token")));
    }

    void missingTokenOrNoHelloIsRefused() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        {
            RawClient raw;
            QVERIFY(raw.connectTo(agent.port()));
            raw.send(json{{"type", "hello"}, {"protocol", hj::kProtocolVersion}});
            const json m = raw.next();
            QCOMPARE(m.value("type", ""), std::string("refused"));
            QVERIFY(m.value("message", "").find("token") != std::string::npos);
            QVERIFY(raw.closedWithin(5000));
        }
        {
            RawClient raw;
            QVERIFY(raw.connectTo(agent.port()));
            raw.send(json{{"type", "status"}});
            QCOMPARE(raw.next().value("type", ""), std::string("refused"));
            QVERIFY(raw.closedWithin(5000));
        }
        {
            RawClient raw;
            QVERIFY(raw.connectTo(agent.port()));
            raw.send(QByteArray("this is not json\n"));
            QCOMPARE(raw.next().value("type", ""), std::string("refused"));
            QVERIFY(raw.closedWithin(5000));
        }
        {  // the right token but another protocol version
            RawClient raw;
            QVERIFY(raw.connectTo(agent.port()));
            raw.send(json{{"type", "hello"}, {"token", agent.token().toStdString()}, {"protocol", 99}});
            const json m = raw.next();
            QCOMPARE(m.value("type", ""), std::string("refused"));
            QVERIFY(m.value("message", "").find("protocol") != std::string::npos);
        }
        QVERIFY(isDirEmpty(agent.workDir() + QStringLiteral("/jobs")));
    }

    void badMessagesGetAnErrorAndTheConnectionStays() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        raw.send(QByteArray("{\"type\":\"submit\", \"job\": {\n"));
        json m = raw.nextOf("error");
        QVERIFY2(m.value("message", "").find("malformed JSON") != std::string::npos, m.dump().c_str());
        raw.send(json{{"type", "launch-missiles"}});
        m = raw.nextOf("error");
        QVERIFY(m.value("message", "").find("unknown message type 'launch-missiles'") != std::string::npos);
        raw.send(json{{"type", "attach"}, {"job", "x"}});
        m = raw.nextOf("error");
        QVERIFY2(m.value("message", "").find("'after_seq'") != std::string::npos, m.dump().c_str());
        raw.send(json{{"type", "attach"}, {"job", "nope"}, {"after_seq", 0}});
        m = raw.nextOf("error");
        QVERIFY(m.value("message", "").find("no job 'nope'") != std::string::npos);
        raw.send(json{{"type", "submit"}});
        m = raw.nextOf("error");
        QVERIFY(m.value("message", "").find("'job'") != std::string::npos);
        raw.send(json{{"type", "ping"}});
        QCOMPARE(raw.nextOf("pong").value("type", ""), std::string("pong"));
        raw.send(json{{"type", "status"}});
        m = raw.nextOf("status");
        QVERIFY(m["jobs"] == json::array());
    }

    void badJobsAreRejectedWithAMessage() {
        const QString engine = enginePath();
        Agent agent;
        QVERIFY(agent.start(engine));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        json plan;
        if (!engine.isEmpty()) plan = tinyPlanJson(engine);
        else {  // any well-formed plan will do: these jobs are refused before the engine matters
            plan = {{"format", "hippie-plan"},  {"version", 1},       {"model", {{"zoo", "mlp-tiny"}, {"batch_size", 4}}},
                    {"cluster", "cpu-local"},   {"planner", "manual"}, {"stages", {{{"first_layer", 0}, {"last_layer", 0}}, {{"first_layer", 1}, {"last_layer", 1}}}},
                    {"dp", 1},                  {"micro_batches", 2},  {"global_batch", 4},
                    {"schedule", "1f1b"},       {"optimizer", "sgd"},  {"device_map", {{0}, {1}}}};
        }
        json job = hj::jobToJson(jobFor(QStringLiteral("bad-1"), plan, 1));
        const auto rejected = [&](const json& j) {
            raw.send(json{{"type", "submit"}, {"job", j}});
            return QString::fromStdString(raw.nextOf("rejected").value("message", "<no rejected message>"));
        };
        json outside = job;
        outside["dump_params"] = "../../escape-{rank}.json";
        QString m = rejected(outside);
        QVERIFY2(m.contains(QLatin1String("'dump_params'")) && m.contains(QLatin1String("leaves")), qPrintable(m));
        json absolute = job;
        absolute["dump_params"] = "/tmp/params.json";
        m = rejected(absolute);
        QVERIFY2(m.contains(QLatin1String("'dump_params'")), qPrintable(m));
        json bad_id = job;
        bad_id["id"] = "../x";
        m = rejected(bad_id);
        QVERIFY2(m.contains(QLatin1String("'id'")), qPrintable(m));
        json bad_steps = job;
        bad_steps["steps"] = "many";
        m = rejected(bad_steps);
        QVERIFY2(m.contains(QLatin1String("'steps'")), qPrintable(m));
        json bad_world = job;
        bad_world["world_size"] = 3;
        bad_world["rank_count"] = 3;
        m = rejected(bad_world);
        QVERIFY2(m.contains(QLatin1String("world_size")), qPrintable(m));
        json bad_plan = job;
        bad_plan["plan"]["stages"] = 5;
        m = rejected(bad_plan);
        QVERIFY2(m.contains(QLatin1String("plan")), qPrintable(m));
        QVERIFY(isDirEmpty(agent.workDir() + QStringLiteral("/jobs")));
        raw.send(json{{"type", "ping"}});
        QVERIFY(!raw.nextOf("pong").is_null());
    }

    void oversizedMessageIsRefusedAndClosed() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        QByteArray big = "{\"type\":\"submit\",\"job\":{\"id\":\"big\",\"plan\":{\"pad\":\"";
        big.append(QByteArray(hj::kMaxMessageBytes + 1024, 'x'));
        big.append("\"}}}\n");
        raw.socket().write(big);
        const json m = raw.nextOf("error", 30000);
        QVERIFY2(m.value("message", "").find("longer than") != std::string::npos, m.dump().c_str());
        QVERIFY(raw.closedWithin(10000));
        QVERIFY(isDirEmpty(agent.workDir() + QStringLiteral("/jobs")));
    }

    void missingEngineIsSaid() {
        Agent agent;
        QVERIFY(agent.start(QString()));  // no --engine, empty PATH, none beside the agent
        hj::AgentClient client(agent.address());
        Recorder r(client);
        QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
        QVERIFY(r.welcome["engine"].is_null());
        json plan = {{"format", "hippie-plan"}, {"version", 1}, {"model", {{"zoo", "mlp-tiny"}, {"batch_size", 4}}},
                     {"cluster", "cpu-local"}, {"planner", "manual"}, {"stages", {{{"first_layer", 0}, {"last_layer", 3}}}},
                     {"dp", 1}, {"micro_batches", 1}, {"global_batch", 4}, {"schedule", "1f1b"}, {"optimizer", "sgd"},
                     {"device_map", {{0}}}};
        hj::JobSpec s = jobFor(QStringLiteral("no-engine"), plan, 1);
        s.world_size = 1;
        s.rank_count = 1;
        client.submit(s);
        QVERIFY(waitUntil([&] { return !r.rejected.isEmpty(); }, 10000));
        QVERIFY2(r.rejected.first().contains(QLatin1String("hippie-engine is not installed on this agent")), qPrintable(r.rejected.first()));
        client.probe();
        QVERIFY(waitUntil([&] { return !r.errors.isEmpty(); }, 10000));
        QVERIFY(r.errors.first().contains(QLatin1String("not installed")));
    }

    void agentCommandLineErrors() {
        QTemporaryDir dir;
        const auto run = [&](const QStringList& args) {
            QProcess p;
            p.start(agentPath(), args);
            p.waitForFinished(20000);
            return qMakePair(p.exitCode(), QString::fromUtf8(p.readAllStandardError()));
        };
        auto res = run({QStringLiteral("--token-file"), dir.filePath(QStringLiteral("missing")), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")});
        QVERIFY(res.first != 0);
        QVERIFY2(res.second.contains(QLatin1String("does not exist")), qPrintable(res.second));
        writeFile(dir.filePath(QStringLiteral("empty")), "\n");
        QFile::setPermissions(dir.filePath(QStringLiteral("empty")), QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        res = run({QStringLiteral("--token-file"), dir.filePath(QStringLiteral("empty")), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")});
        QVERIFY(res.first != 0);
        QVERIFY2(res.second.contains(QLatin1String("is empty")), qPrintable(res.second));
        writeFile(dir.filePath(QStringLiteral("token")), "abc\n");
        QFile::setPermissions(dir.filePath(QStringLiteral("token")), QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        res = run({QStringLiteral("--token-file"), dir.filePath(QStringLiteral("token")), QStringLiteral("--listen"), QStringLiteral("nohost")});
        QVERIFY(res.first != 0);
        QVERIFY2(res.second.contains(QLatin1String("HOST:PORT")), qPrintable(res.second));
        res = run({QStringLiteral("--token-file"), dir.filePath(QStringLiteral("token")), QStringLiteral("--listen"), QStringLiteral("not-an-ip:7000")});
        QVERIFY(res.first != 0);
        QVERIFY2(res.second.contains(QLatin1String("not an IP address")), qPrintable(res.second));
        // A port in use.
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        res = run({QStringLiteral("--token-file"), dir.filePath(QStringLiteral("token")), QStringLiteral("--listen"),
                   QStringLiteral("127.0.0.1:%1").arg(agent.port()), QStringLiteral("--work-dir"), dir.filePath(QStringLiteral("w"))});
        QVERIFY(res.first != 0);
        QVERIFY2(res.second.contains(QLatin1String("cannot listen")) && res.second.contains(QLatin1String("another program")), qPrintable(res.second));
    }

    void sigtermStopsTheAgentCleanly() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        ::kill(static_cast<pid_t>(agent.process().processId()), SIGTERM);
        QVERIFY(agent.process().waitForFinished(15000));
        QCOMPARE(agent.process().exitStatus(), QProcess::NormalExit);
        QCOMPARE(agent.process().exitCode(), 0);
    }

    void killedAgentIsReportedLost() {
        const QString engine = enginePath();
        Agent agent;
        QVERIFY(agent.start(engine, {QStringLiteral("--heartbeat-ms"), QStringLiteral("200")}));
        hj::AgentClient client(agent.address());
        Recorder r(client);
        QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
        QCOMPARE(client.heartbeatTimeoutMs(), hj::kMissedHeartbeats * 200);
        json running;
        if (!engine.isEmpty()) {  // mid-run when an engine is there
            client.submit(jobFor(QStringLiteral("lost-1"), tinyPlanJson(engine), 100000));
            QVERIFY2(waitUntil([&] { return r.count(QStringLiteral("lost-1"), "step") > 0 || r.finished(QStringLiteral("lost-1")); }, 60000),
                     qPrintable(dumpMessages(r)));
            running = r.firstOf(QStringLiteral("lost-1"), "job-state");
        }
        // Heartbeats keep it alive while nothing else is said.
        QTest::qWait(3 * 200 * hj::kMissedHeartbeats / 2);
        QVERIFY(r.lost.isEmpty());
        QElapsedTimer t;
        t.start();
        agent.process().kill();
        QVERIFY(waitUntil([&] { return !r.lost.isEmpty(); }, 10000));
        const qint64 lost_after = t.elapsed();
        // The ranks die with their agent instead of training on as orphans.
        bool ranks_gone = true;
        if (running.is_object())
            for (const json& rk : running["ranks"]) {
                const QString proc = QStringLiteral("/proc/%1").arg(rk.value("pid", 0));
                ranks_gone = waitUntil([&] { return !QFileInfo::exists(proc); }, 5000) && ranks_gone;
            }
        killPids(running);
        QVERIFY(ranks_gone);
        QVERIFY2(lost_after <= client.heartbeatTimeoutMs() + 1000, qPrintable(QString::number(lost_after)));
        QVERIFY(r.lost.first().contains(QLatin1String("no heartbeat")));
    }

    void tlsWithPinnedFingerprint() {
        if (openssl().isEmpty()) QSKIP("openssl is not installed (packaging/debian-packages.txt: build openssl)");
        QTemporaryDir dir;
        const TestCertificate tls = makeTestCertificate(dir);
        QVERIFY2(tls.error.isEmpty(), qPrintable(tls.error));
        const QString& fingerprint = tls.fingerprint;

        Agent agent;
        QVERIFY(agent.start(enginePath(), {QStringLiteral("--tls-cert"), tls.cert, QStringLiteral("--tls-key"), tls.key}));
        {
            hj::AgentAddress a = agent.address();
            a.fingerprint_sha256 = fingerprint;
            hj::AgentClient client(a);
            Recorder r(client);
            QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
            client.requestStatus();
            QVERIFY(waitUntil([&] { return r.status.is_array(); }, 5000));
        }
        {
            hj::AgentAddress a = agent.address();
            a.fingerprint_sha256 = QString(64, QLatin1Char('0'));
            hj::AgentClient client(a);
            Recorder r(client);
            client.connectToAgent();
            QVERIFY(waitUntil([&] { return !r.refused.isEmpty() || r.ready_count > 0 || !r.failed.isEmpty(); }, 10000));
            QCOMPARE(r.ready_count, 0);
            QVERIFY2(!r.refused.isEmpty() && r.refused.first().contains(QLatin1String("fingerprint")), qPrintable(dumpMessages(r)));
        }
        {  // a client without TLS does not get in either
            hj::AgentClient client(agent.address());
            Recorder r(client);
            client.setConnectTimeoutMs(3000);
            client.connectToAgent();
            QVERIFY(waitUntil([&] { return !r.refused.isEmpty() || r.ready_count > 0 || !r.failed.isEmpty(); }, 15000));
            QCOMPARE(r.ready_count, 0);
        }
        {  // the right token with the wrong pin never reaches the agent's hello
            hj::AgentAddress a = agent.address(QStringLiteral("wrong"));
            a.fingerprint_sha256 = fingerprint.toLower();  // case and colons do not matter
            hj::AgentClient client(a);
            Recorder r(client);
            client.connectToAgent();
            QVERIFY(waitUntil([&] { return !r.refused.isEmpty() || r.ready_count > 0; }, 10000));
            QVERIFY2(!r.refused.isEmpty() && r.refused.first().contains(QLatin1String("wrong token")), qPrintable(dumpMessages(r)));
        }
    }

    // ---- with the engine ----

    void dispatchedPlanSucceeds() {
        REQUIRE_ENGINE();
        Agent agent;
        QVERIFY(agent.start(engine));
        hj::AgentClient client(agent.address());
        Recorder r(client);
        QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
        QCOMPARE(QString::fromStdString(r.welcome.value("engine", "")), engine);
        hj::JobSpec s = jobFor(QStringLiteral("ok-1"), tinyPlanJson(engine), 3);
        s.dump_params = "params-{rank}.json";
        client.submit(s);
        QVERIFY(waitUntil([&] { return !r.accepted.isEmpty() || !r.rejected.isEmpty(); }, 10000));
        QVERIFY2(r.rejected.isEmpty(), qPrintable(dumpMessages(r)));
        QVERIFY(r.accepted.first().second > 0);  // rank 0's rendezvous port
        QVERIFY2(waitUntil([&] { return r.finished(QStringLiteral("ok-1")); }, 120000), qPrintable(dumpMessages(r)));
        QCOMPARE(r.states[QStringLiteral("ok-1")], hj::JobState::Succeeded);
        QCOMPARE(r.count(QStringLiteral("ok-1"), "step"), 2 * 3);
        QCOMPARE(r.count(QStringLiteral("ok-1"), "trace"), 2);
        QCOMPARE(r.count(QStringLiteral("ok-1"), "done"), 2);
        QCOMPARE(r.count(QStringLiteral("ok-1"), "setup"), 2);
        // seqs 1..N with no gap, the first a job-state running that lists the ranks' pids
        for (size_t i = 0; i < r.events.size(); ++i) QCOMPARE(r.events[i].seq, static_cast<qint64>(i + 1));
        QCOMPARE(r.events.front().event.value("state", ""), std::string("running"));
        QCOMPARE(r.events.front().event["ranks"].size(), size_t(2));
        QCOMPARE(r.events.back().event.value("state", ""), std::string("succeeded"));
        const QString work = agent.workDir() + QStringLiteral("/jobs/ok-1/");
        QVERIFY(QFile::exists(work + QStringLiteral("plan.json")));
        QVERIFY(QFile::exists(work + QStringLiteral("params-0.json")));
        QVERIFY(QFile::exists(work + QStringLiteral("params-1.json")));
        // The same id again is rejected.
        client.submit(s);
        QVERIFY(waitUntil([&] { return !r.rejected.isEmpty(); }, 10000));
        QVERIFY(r.rejected.first().contains(QLatin1String("already exists")));
    }

    void maxJobsAndCancel() {
        REQUIRE_ENGINE();
        Agent agent;
        QVERIFY(agent.start(engine, {QStringLiteral("--max-jobs"), QStringLiteral("1")}));
        hj::AgentClient client(agent.address());
        Recorder r(client);
        QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
        const json plan = tinyPlanJson(engine);
        client.submit(jobFor(QStringLiteral("long-1"), plan, 100000));
        QVERIFY(waitUntil([&] { return r.accepted.size() == 1; }, 10000));
        client.submit(jobFor(QStringLiteral("long-2"), plan, 1));
        QVERIFY(waitUntil([&] { return !r.rejected.isEmpty(); }, 10000));
        QVERIFY2(r.rejected.first().contains(QLatin1String("--max-jobs 1")), qPrintable(r.rejected.first()));
        QVERIFY(waitUntil([&] { return r.count(QStringLiteral("long-1"), "step") > 0; }, 60000));
        const json running = r.firstOf(QStringLiteral("long-1"), "job-state");
        client.cancel(QStringLiteral("long-1"));
        QVERIFY(waitUntil([&] { return r.finished(QStringLiteral("long-1")); }, 20000));
        QCOMPARE(r.states[QStringLiteral("long-1")], hj::JobState::Cancelled);
        for (const json& rk : running["ranks"]) {  // the ranks are gone (the agent reaped them)
            const QString proc = QStringLiteral("/proc/%1").arg(rk.value("pid", 0));
            QVERIFY2(waitUntil([&] { return !QFileInfo::exists(proc); }, 5000), qPrintable(proc));
        }
        client.requestStatus();
        QVERIFY(waitUntil([&] { return r.status.is_array(); }, 5000));
        QCOMPARE(r.status.size(), size_t(1));
        QCOMPARE(r.status[0].value("state", ""), std::string("cancelled"));
        // Room again for a new job.
        client.submit(jobFor(QStringLiteral("after-cancel"), plan, 1));
        QVERIFY(waitUntil([&] { return r.accepted.size() == 2 || r.rejected.size() > 1; }, 10000));
        QCOMPARE(r.accepted.size(), 2);
        QVERIFY(waitUntil([&] { return r.finished(QStringLiteral("after-cancel")); }, 120000));
        QCOMPARE(r.states[QStringLiteral("after-cancel")], hj::JobState::Succeeded);
    }

    void killedRankFailsTheJobWithItsLog() {
        REQUIRE_ENGINE();
        Agent agent;
        QVERIFY(agent.start(engine));
        hj::AgentClient client(agent.address());
        Recorder r(client);
        QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
        hj::JobSpec s = jobFor(QStringLiteral("kill-1"), tinyPlanJson(engine), 100000);
        s.op_timeout_s = 5;
        client.submit(s);
        QVERIFY2(waitUntil([&] { return r.count(QStringLiteral("kill-1"), "step") >= 2 || r.finished(QStringLiteral("kill-1")); }, 60000),
                 qPrintable(dumpMessages(r)));
        const json running = r.firstOf(QStringLiteral("kill-1"), "job-state");
        qint64 pid1 = 0;
        for (const json& rk : running["ranks"])
            if (rk.value("rank", -1) == 1) pid1 = rk.value("pid", 0);
        QVERIFY(pid1 > 0);
        QVERIFY(QFile::exists(QStringLiteral("/proc/%1").arg(pid1)));
        ::kill(static_cast<pid_t>(pid1), SIGKILL);
        QVERIFY(waitUntil([&] { return r.finished(QStringLiteral("kill-1")); }, 60000));
        QCOMPARE(r.states[QStringLiteral("kill-1")], hj::JobState::Failed);
        const QString message = r.messages[QStringLiteral("kill-1")];
        QVERIFY2(message.startsWith(QLatin1String("rank 1 was killed")), qPrintable(message));
        // Every byte a rank wrote to stderr is in the log events, in order.
        QString stderr0;
        for (const auto& e : r.events)
            if (e.event.value("event", "") == "log" && e.event.value("stream", "") == "stderr" && e.event.value("rank", -1) == 0)
                stderr0 += QString::fromStdString(e.event.value("text", ""));
        qInfo("job message: %s; rank 0's stderr: %s", qPrintable(message), qPrintable(stderr0.left(300)));
        // The same events are there for a client that attaches afterwards.
        hj::AgentClient late(agent.address());
        Recorder lr(late);
        QVERIFY(connectClient(late, lr));
        late.attach(QStringLiteral("kill-1"), 0);
        QVERIFY(waitUntil([&] { return lr.finished(QStringLiteral("kill-1")); }, 10000));
        QCOMPARE(lr.events.size(), r.events.size());
    }

    void reconnectResumesWithoutLossOrDoubles() {
        REQUIRE_ENGINE();
        Agent agent;
        QVERIFY(agent.start(engine));
        hj::AgentClient client(agent.address());
        Recorder r(client);
        QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
        hj::JobSpec s = jobFor(QStringLiteral("resume-1"), tinyPlanJson(engine), 150);
        s.trace_every_step = true;
        client.submit(s);
        QVERIFY(waitUntil([&] { return r.count(QStringLiteral("resume-1"), "step") >= 4 || r.finished(QStringLiteral("resume-1")); }, 60000));
        int rounds = 0;
        for (int round = 0; round < 3 && !r.finished(QStringLiteral("resume-1")); ++round, ++rounds) {
            const qint64 before = client.lastSeq(QStringLiteral("resume-1"));
            client.disconnectFromAgent();
            QTest::qWait(300);  // events go on while nobody listens
            r.ready_count = 0;
            QVERIFY2(connectClient(client, r), qPrintable(dumpMessages(r)));
            QVERIFY(waitUntil([&] { return client.lastSeq(QStringLiteral("resume-1")) > before || r.finished(QStringLiteral("resume-1")); }, 30000));
        }
        QVERIFY2(waitUntil([&] { return r.finished(QStringLiteral("resume-1")); }, 120000), qPrintable(dumpMessages(r)));
        QCOMPARE(r.states[QStringLiteral("resume-1")], hj::JobState::Succeeded);
        QVERIFY2(rounds >= 2, "the job ended before the client could reconnect twice; give it more steps");
        QCOMPARE(r.ready_count, 1);  // the last reconnect's welcome

        // A fresh client's full replay is the reference.
        hj::AgentClient replay(agent.address());
        Recorder rr(replay);
        QVERIFY(connectClient(replay, rr));
        replay.attach(QStringLiteral("resume-1"), 0);
        QVERIFY(waitUntil([&] { return rr.finished(QStringLiteral("resume-1")); }, 10000));
        QCOMPARE(r.events.size(), rr.events.size());
        for (size_t i = 0; i < r.events.size(); ++i) {
            QCOMPARE(r.events[i].seq, static_cast<qint64>(i + 1));
            QCOMPARE(r.events[i].seq, rr.events[i].seq);
            QVERIFY(r.events[i].event == rr.events[i].event);
        }
        QCOMPARE(r.count(QStringLiteral("resume-1"), "step"), 2 * 150);
    }

    void oneJobAcrossTwoAgents() {
        REQUIRE_ENGINE();
        Agent a, b;
        QVERIFY(a.start(engine));
        QVERIFY(b.start(engine));
        hj::AgentClient ca(a.address()), cb(b.address());
        Recorder ra(ca), rb(cb);
        QVERIFY(connectClient(ca, ra));
        QVERIFY(connectClient(cb, rb));
        hj::JobSpec s = jobFor(QStringLiteral("span-1"), tinyPlanJson(engine), 3);
        s.rank_count = 1;
        s.master_port = 0;
        ca.submit(s);
        QVERIFY(waitUntil([&] { return !ra.accepted.isEmpty() || !ra.rejected.isEmpty(); }, 10000));
        QVERIFY2(ra.rejected.isEmpty(), qPrintable(dumpMessages(ra)));
        s.first_rank = 1;
        s.master_port = ra.accepted.first().second;
        cb.submit(s);
        QVERIFY(waitUntil([&] { return !rb.accepted.isEmpty() || !rb.rejected.isEmpty(); }, 10000));
        QVERIFY2(rb.rejected.isEmpty(), qPrintable(dumpMessages(rb)));
        QCOMPARE(rb.accepted.first().second, s.master_port);
        QVERIFY2(waitUntil([&] { return ra.finished(QStringLiteral("span-1")) && rb.finished(QStringLiteral("span-1")); }, 120000),
                 qPrintable(dumpMessages(ra) + dumpMessages(rb)));
        QCOMPARE(ra.states[QStringLiteral("span-1")], hj::JobState::Succeeded);
        QCOMPARE(rb.states[QStringLiteral("span-1")], hj::JobState::Succeeded);
        QCOMPARE(ra.count(QStringLiteral("span-1"), "done"), 1);
        QCOMPARE(rb.count(QStringLiteral("span-1"), "done"), 1);
        QCOMPARE(ra.firstOf(QStringLiteral("span-1"), "done").value("rank", -1), 0);
        QCOMPARE(rb.firstOf(QStringLiteral("span-1"), "done").value("rank", -1), 1);
    }
};

QTEST_GUILESS_MAIN(TestAgent)
#include "test_agent.moc"
