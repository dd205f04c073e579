// A job's event stream when it is long or its client is slow: the events are kept in the job's
// work directory (events.jsonl), not in memory, nothing is lost when that file cannot be written
// (a full disk), and an agent writes to a client that does not read only up to a bound, then
// delivers every event, in order, once the client reads again.
#include <QFile>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include "app/jobs/agent_server.h"
#include "app/jobs/event_log.h"
#include "app/jobs/framing.h"
#include "app/jobs/job_runner.h"
#include "jobs_test_support.h"

using namespace jobs_test;

namespace {

constexpr int kEvents = 20000;
constexpr int kPadBytes = 1000;

json padded(int i) { return {{"event", "step"}, {"step", i}, {"pad", std::string(kPadBytes, 'x')}}; }

json wellFormedPlan() {
    return {{"format", "hippie-plan"}, {"version", 1}, {"model", {{"zoo", "mlp-tiny"}, {"batch_size", 4}}},
            {"cluster", "cpu-local"}, {"planner", "manual"}, {"stages", {{{"first_layer", 0}, {"last_layer", 3}}}},
            {"dp", 1}, {"micro_batches", 1}, {"global_batch", 4}, {"schedule", "1f1b"}, {"optimizer", "sgd"},
            {"device_map", {{0}}}};
}

// Stands in for hippie-engine: prints kEvents step events of about 1 KB each, then "done".
QString floodingEngine(const QTemporaryDir& dir) {
    const QString path = dir.filePath(QStringLiteral("flood-engine.sh"));
    const QByteArray script = QByteArrayLiteral("#!/bin/sh\nexec awk 'BEGIN { pad = sprintf(\"%") + QByteArray::number(kPadBytes) +
                              QByteArrayLiteral("s\", \"\"); gsub(/ /, \"x\", pad);\n"
                                                "  for (i = 0; i < ") +
                              QByteArray::number(kEvents) +
                              QByteArrayLiteral("; i++) printf(\"{\\\"event\\\":\\\"step\\\",\\\"step\\\":%d,\\\"pad\\\":\\\"%s\\\"}\\n\", i, pad);\n"
                                                "  print \"{\\\"event\\\":\\\"done\\\"}\" }'\n");
    writeFile(path, script);
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return path;
}

}  // namespace

class TestEventStream : public QObject {
    Q_OBJECT
private slots:
    // 20,000 events of 1 KB: 20 MB in the file, a few hundred KB of offsets in memory; every line
    // reads back exactly.
    void eventsLiveInTheFile() {
        QTemporaryDir dir;
        hj::EventLog log;
        QVERIFY(log.openFile(dir.filePath(QStringLiteral("events.jsonl"))));
        for (int i = 0; i < kEvents; ++i) QCOMPARE(log.append(padded(i)), qint64(i + 1));
        QCOMPARE(log.size(), qint64(kEvents));
        QVERIFY(log.spilling());
        QVERIFY2(log.memoryBytes() <= qint64(kEvents) * 32, qPrintable(QString::number(log.memoryBytes())));  // offsets only
        QVERIFY(QFileInfo(log.fileName()).size() > qint64(kEvents) * kPadBytes);
        for (int seq : {1, 2, 777, kEvents}) QVERIFY(log.at(seq) == padded(seq - 1));
        QCOMPARE(log.line(kEvents), padded(kEvents - 1).dump());
        QVERIFY(log.line(0).empty());
        QVERIFY(log.line(kEvents + 1).empty());
        // The file is what an operator reads: one JSON object a line.
        QFile f(log.fileName());
        QVERIFY(f.open(QIODevice::ReadOnly));
        int lines = 0;
        while (!f.atEnd()) {
            const QByteArray l = f.readLine();
            QVERIFY(json::parse(l.constBegin(), l.constEnd()) == padded(lines));
            ++lines;
        }
        QCOMPARE(lines, kEvents);
    }

    // A finished job's log gives its descriptor back (the agent keeps every job it ran) and still
    // replays every line from the file.
    void closedLogStillReplays() {
        QTemporaryDir dir;
        hj::EventLog log;
        QVERIFY(log.openFile(dir.filePath(QStringLiteral("events.jsonl"))));
        for (int i = 0; i < 3; ++i) log.append(padded(i));
        log.closeFile();
        QVERIFY(!log.spilling());
        QCOMPARE(log.size(), qint64(3));
        for (int seq : {1, 2, 3}) QCOMPARE(log.line(seq), padded(seq - 1).dump());
        QVERIFY(log.line(4).empty());
        QVERIFY(QFile::remove(log.fileName()));
        QVERIFY(log.line(2).empty());  // removed under us: empty, as documented, not a crash
    }

    // A file that cannot be written (a full disk: /dev/full answers every write with ENOSPC), or
    // none at all: the events stay in memory, none is lost.
    void aFullDiskLosesNothing() {
        if (!QFileInfo::exists(QStringLiteral("/dev/full"))) QSKIP("no /dev/full on this system");
        hj::EventLog full;
        full.openFile(QStringLiteral("/dev/full"));
        for (int i = 0; i < 100; ++i) full.append(padded(i));
        QVERIFY(!full.spilling());
        for (int seq = 1; seq <= 100; ++seq) QVERIFY(full.at(seq) == padded(seq - 1));

        QTemporaryDir dir;
        hj::EventLog none;
        QVERIFY(!none.openFile(dir.filePath(QStringLiteral("no/such/dir/events.jsonl"))));
        none.append(padded(0));
        QVERIFY(none.at(1) == padded(0));
    }

    // The agent writes to a client that does not read only up to its bound (1 MiB) while the
    // job's 20 MB of events go to disk; once the client reads, it gets all of them, in order.
    void slowClientGetsEverythingWithBoundedBuffers() {
        const QString awk = QStandardPaths::findExecutable(QStringLiteral("awk"));
        if (awk.isEmpty()) QSKIP("awk not found");
        QTemporaryDir dir;
        hj::AgentOptions o;
        o.port = 0;
        o.token = "flood-token";
        o.work_dir = dir.filePath(QStringLiteral("work"));
        o.engine = floodingEngine(dir);
        o.heartbeat_ms = 200;
        hj::AgentServer agent(o);
        agent.listen();

        QTcpSocket client;
        client.setReadBufferSize(64 * 1024);  // a slow reader: the rest waits in the kernel, then in the agent
        client.connectToHost(QStringLiteral("127.0.0.1"), agent.port());
        QVERIFY(client.waitForConnected(5000));
        hj::JobSpec spec;
        spec.id = "flood";
        spec.plan = wellFormedPlan();
        spec.world_size = 1;
        spec.rank_count = 1;
        spec.steps = 1;
        client.write(hj::frame({{"type", "hello"}, {"token", "flood-token"}, {"client", "test"}, {"protocol", hj::kProtocolVersion}}));
        client.write(hj::frame({{"type", "submit"}, {"job", hj::jobToJson(spec)}}));
        // The job runs to its end while the client reads nothing.
        QVERIFY(waitUntil([&] { return agent.runningJobs() == 0 && QFile::exists(o.work_dir + QStringLiteral("/jobs/flood/events.jsonl")); }, 60000));
        QTest::qWait(500);
        const qint64 bound = (1 << 20) + 2 * kPadBytes;
        QVERIFY2(agent.peakQueuedBytes() <= bound, qPrintable(QString::number(agent.peakQueuedBytes())));
        QVERIFY2(agent.peakQueuedBytes() > bound / 2, "the client's buffers filled: the bound was reached");
        QVERIFY2(QFileInfo(o.work_dir + QStringLiteral("/jobs/flood/events.jsonl")).size() > qint64(kEvents) * kPadBytes,
                 "the events are in the job's work directory");

        // Now read: every event once, seq 1.. without a gap, the engine's steps in order, then the end.
        hj::LineReader reader(hj::kMaxMessageBytes);
        qint64 last_seq = 0;
        int steps = 0;
        std::string final_state;
        client.setReadBufferSize(0);
        QVERIFY(waitUntil(
            [&] {
                reader.append(client.readAll());
                QByteArray line;
                while (reader.next(&line) == hj::LineReader::Status::Line) {
                    const json m = json::parse(line.constBegin(), line.constEnd());
                    if (m.value("type", "") != "event") continue;
                    const qint64 seq = m["seq"].get<qint64>();
                    if (seq != last_seq + 1) qFatal("seq %lld after %lld", static_cast<long long>(seq), static_cast<long long>(last_seq));
                    last_seq = seq;
                    const json& e = m["event"];
                    if (e.value("event", "") == "step") {
                        if (e["step"].get<int>() != steps) qFatal("step %d where %d was due", e["step"].get<int>(), steps);
                        ++steps;
                    }
                    if (e.value("event", "") == "job-state") final_state = e.value("state", "");
                }
                return final_state == "succeeded" || final_state == "failed";
            },
            60000));
        QCOMPARE(final_state, std::string("succeeded"));
        QCOMPARE(steps, kEvents);
        QVERIFY(agent.peakQueuedBytes() <= bound);
    }
};

QTEST_GUILESS_MAIN(TestEventStream)
#include "test_event_stream.moc"
