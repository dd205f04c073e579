// hippie-agent and its client against hostile peers (the reproducers of issue 17): what one line,
// a deep or huge message, many idle connections or a client that never reads can do. Each case
// used to kill the agent, stall it or grow it without bound; now a bad message concerns its own
// connection only, and every resource a peer can claim has a limit.
#include <utility>

#include <QDeadlineTimer>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>

#include "app/jobs/agent_server.h"
#include "app/jobs/framing.h"
#include "jobs_test_support.h"

using namespace jobs_test;

namespace {

// The nesting that crashed the agent when it copied the plan (100,000 arrays: a 200 KB line).
constexpr int kDeepNesting = 100000;
// Idle connections an agent accepts before a hello (AgentOptions::max_unauthenticated).
constexpr int kMaxUnauthenticated = 64;
// Requests a client sends without reading any reply: their replies are far more than the
// kernel's socket buffers hold, so without back-pressure they pile up in the agent.
constexpr int kUnreadRequests = 100000;
constexpr qint64 kClientHighWaterBytes = 1 << 20;  // agent_server.cpp

json wellFormedPlan() {
    return {{"format", "hippie-plan"}, {"version", 1}, {"model", {{"zoo", "mlp-tiny"}, {"batch_size", 4}}},
            {"cluster", "cpu-local"}, {"planner", "manual"}, {"stages", {{{"first_layer", 0}, {"last_layer", 3}}}},
            {"dp", 1}, {"micro_batches", 1}, {"global_batch", 4}, {"schedule", "1f1b"}, {"optimizer", "sgd"},
            {"device_map", {{0}}}};
}

json submitOf(const std::string& id, const json& plan, int ranks) {
    return {{"type", "submit"},
            {"job", {{"id", id}, {"plan", plan}, {"steps", 1}, {"world_size", ranks}, {"first_rank", 0}, {"rank_count", ranks}}}};
}

// A stand-in agent on 127.0.0.1 that answers whatever a client first sends with `reply`.
class FakeAgent {
public:
    explicit FakeAgent(QByteArray reply) {
        server_.listen(QHostAddress::LocalHost, 0);
        QObject::connect(&server_, &QTcpServer::newConnection, [this, reply] {
            QTcpSocket* s = server_.nextPendingConnection();
            QObject::connect(s, &QTcpSocket::readyRead, s, [s, reply] {
                s->readAll();
                s->write(reply);
            });
        });
    }
    bool listening() const { return server_.isListening(); }
    hj::AgentAddress address() const {
        hj::AgentAddress a;
        a.host = QStringLiteral("127.0.0.1");
        a.port = server_.serverPort();
        a.token = QStringLiteral("t");
        return a;
    }

private:
    QTcpServer server_;
};

bool agentAlive(Agent& agent) {
    if (agent.process().state() != QProcess::Running) return false;
    RawClient raw;
    if (!raw.connectTo(agent.port()) || !raw.hello(agent.token())) return false;
    raw.send(json{{"type", "ping"}});
    const json reply = raw.nextOf("pong");  // null when nothing came
    return reply.is_object() && reply.value("type", "") == "pong";
}

QByteArray deepArray(int depth) { return QByteArray(depth, '[') + QByteArray(depth, ']'); }

// What `openssl s_client` offering a single TLS 1.2 suite gets from the agent.
struct Handshake {
    bool established = false;
    QString output;  // s_client's -brief report (stderr and stdout)
};

Handshake handshakeOffering(quint16 port, const QString& suite) {
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(openssl(), {QStringLiteral("s_client"), QStringLiteral("-connect"), QStringLiteral("127.0.0.1:%1").arg(port),
                        QStringLiteral("-tls1_2"), QStringLiteral("-cipher"), suite, QStringLiteral("-brief")});
    p.closeWriteChannel();  // s_client ends after the handshake instead of waiting for input
    p.waitForFinished(30000);
    Handshake h;
    h.output = QString::fromUtf8(p.readAll());
    h.established = h.output.contains(QLatin1String("CONNECTION ESTABLISHED"));
    return h;
}

}  // namespace

class TestAgentHostile : public QObject {
    Q_OBJECT
private slots:
    // "1e400" is valid JSON syntax whose number nlohmann refuses with out_of_range, not
    // parse_error: before a hello it used to abort the agent; now it is refused like any garbage.
    void outOfRangeNumberBeforeAndAfterHello() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        {
            RawClient raw;
            QVERIFY(raw.connectTo(agent.port()));
            raw.send(QByteArray("1e400\n"));
            const json m = raw.next();
            QCOMPARE(m.value("type", ""), std::string("refused"));
            QVERIFY2(m.value("message", "").find("malformed JSON") != std::string::npos, m.dump().c_str());
            QVERIFY(raw.closedWithin(5000));
        }
        QVERIFY(agentAlive(agent));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        raw.send(QByteArray("1e400\n"));
        QVERIFY(raw.nextOf("error").value("message", "").find("malformed JSON") != std::string::npos);
        raw.send(QByteArray("{\"type\":\"attach\",\"job\":\"x\",\"after_seq\":1e400}\n"));
        QVERIFY(!raw.nextOf("error").is_null());
        raw.send(json{{"type", "ping"}});
        QCOMPARE(raw.nextOf("pong").value("type", ""), std::string("pong"));
        QVERIFY(agentAlive(agent));
    }

    // A plan with a field nested 100,000 arrays deep: refused at depth 64 before anything copies
    // or writes it; nothing reaches the work directory.
    void deepNestingIsRefused() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        const QByteArray plan = QByteArray::fromStdString(wellFormedPlan().dump());
        const QByteArray deep_plan = plan.left(plan.size() - 1) + ",\"x\":" + deepArray(kDeepNesting) + "}";
        raw.send("{\"type\":\"submit\",\"job\":{\"id\":\"deep\",\"plan\":" + deep_plan + "}}\n");
        const json m = raw.nextOf("error");
        QVERIFY2(m.value("message", "").find("nested more than 64") != std::string::npos, m.dump().c_str());
        raw.send(json{{"type", "ping"}});
        QCOMPARE(raw.nextOf("pong").value("type", ""), std::string("pong"));
        QVERIFY(!QFileInfo::exists(agent.workDir() + QStringLiteral("/jobs/deep")));
        QVERIFY(agentAlive(agent));
    }

    // Every object of a request holds only the fields the protocol defines (protocol.h): an
    // unknown one, in the message, the job or the plan inside it, is refused by name before the
    // job is stored, copied or written, and the connection carries on.
    void unknownFieldsAreRefused() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));

        raw.send(json{{"type", "ping"}, {"padding", std::string(1000, 'p')}});
        std::string message = raw.nextOf("error").value("message", "");
        QVERIFY2(message.starts_with("message 'ping': unknown field \"padding\" (known fields: type)"), message.c_str());

        json submit = submitOf("extra-job-field", wellFormedPlan(), 1);
        submit["job"]["priority"] = 1;
        raw.send(submit);
        message = raw.nextOf("rejected").value("message", "");
        QVERIFY2(message.starts_with("job 'extra-job-field': unknown field \"priority\""), message.c_str());

        json plan = wellFormedPlan();
        plan["model"]["comment"] = json::array({json::array({json::array({1, 2, 3})})});
        raw.send(submitOf("extra-plan-field", plan, 1));
        message = raw.nextOf("rejected").value("message", "");
        QVERIFY2(message.starts_with("job 'extra-plan-field': plan.model: unknown field \"comment\" (known fields: zoo, file,"),
                 message.c_str());
        for (const char* id : {"extra-job-field", "extra-plan-field"})
            QVERIFY(!QFileInfo::exists(agent.workDir() + QStringLiteral("/jobs/") + QLatin1String(id)));
        raw.send(json{{"type", "ping"}});
        QCOMPARE(raw.nextOf("pong").value("type", ""), std::string("pong"));

        RawClient stranger;  // before authentication the hello is held to its four fields too
        QVERIFY(stranger.connectTo(agent.port()));
        stranger.send(json{{"type", "hello"}, {"token", agent.token().toStdString()}, {"protocol", hj::kProtocolVersion},
                           {"x", json::array({1})}});
        const json refused = stranger.next();
        QCOMPARE(refused.value("type", ""), std::string("refused"));
        QVERIFY2(refused.value("message", "").find("unknown field \"x\"") != std::string::npos, refused.dump().c_str());
        QVERIFY(agentAlive(agent));
    }

    // TLS 1.2 is held to suites with forward secrecy (ECDHE) and authenticated encryption (GCM,
    // ChaCha20-Poly1305): a client that offers only RSA key exchange or only CBC gets no session.
    void tls12OffersOnlyForwardSecretAeadSuites() {
        if (openssl().isEmpty()) QSKIP("openssl is not installed (packaging/debian-packages.txt: build openssl)");
        QTemporaryDir dir;
        const TestCertificate tls = makeTestCertificate(dir);
        QVERIFY2(tls.error.isEmpty(), qPrintable(tls.error));
        Agent agent;
        QVERIFY(agent.start(enginePath(), {QStringLiteral("--tls-cert"), tls.cert, QStringLiteral("--tls-key"), tls.key}));
        for (const QString& suite : {QStringLiteral("ECDHE-RSA-AES128-GCM-SHA256"), QStringLiteral("ECDHE-RSA-AES256-GCM-SHA384"),
                                    QStringLiteral("ECDHE-RSA-CHACHA20-POLY1305")}) {
            const Handshake h = handshakeOffering(agent.port(), suite);
            QVERIFY2(h.established, qPrintable(suite + QLatin1String(": ") + h.output));
            QVERIFY2(h.output.contains(QLatin1String("Ciphersuite: ") + suite), qPrintable(h.output));
        }
        // RSA key exchange (no forward secrecy) with CBC and with GCM; ECDHE with CBC (no AEAD).
        for (const QString& suite : {QStringLiteral("AES128-SHA"), QStringLiteral("AES128-GCM-SHA256"), QStringLiteral("AES256-SHA256"),
                                    QStringLiteral("ECDHE-RSA-AES128-SHA"), QStringLiteral("ECDHE-RSA-AES256-SHA384")}) {
            const Handshake h = handshakeOffering(agent.port(), suite);
            QVERIFY2(!h.established, qPrintable(suite + QLatin1String(" was accepted: ") + h.output));
            // The agent said no (a handshake alert), not the client (an unknown suite name).
            QVERIFY2(h.output.contains(QLatin1String("handshake failure")), qPrintable(suite + QLatin1String(": ") + h.output));
        }
        QCOMPARE(agent.process().state(), QProcess::Running);
    }

    // Before its hello a connection may send a few KiB, not 16 MiB.
    void preHelloLineIsCapped() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        raw.send(QByteArray(64 * 1024, 'a'));
        const json m = raw.next();
        QCOMPARE(m.value("type", ""), std::string("error"));
        QVERIFY2(m.value("message", "").find("longer than " + std::to_string(hj::kMaxHelloBytes)) != std::string::npos, m.dump().c_str());
        QVERIFY(raw.closedWithin(5000));
        QVERIFY(agentAlive(agent));
    }

    // Connections that never say hello are limited in number; authenticated work goes on.
    void unauthenticatedConnectionsAreCapped() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        std::vector<std::unique_ptr<RawClient>> idle;
        for (int i = 0; i < kMaxUnauthenticated; ++i) {
            idle.push_back(std::make_unique<RawClient>());
            QVERIFY(idle.back()->connectTo(agent.port()));
        }
        QTest::qWait(300);  // the agent accepts them
        RawClient one_more;
        QVERIFY(one_more.connectTo(agent.port()));
        QVERIFY2(one_more.closedWithin(5000), "a connection past the limit is closed at once");
        QString log;
        QVERIFY(waitUntil(
            [&] {
                log += agent.stderrText();
                return log.contains(QLatin1String("have not authenticated yet"));
            },
            5000));
        idle.pop_back();  // one leaves: room for a client that authenticates
        QVERIFY(waitUntil([&] { return agentAlive(agent); }, 5000));
    }

    // A newline in the client name used to forge an "authenticated" log line; a long type made a
    // line as long. Now control characters are escaped and a peer's text is cut.
    void logLinesAreEscapedAndCut() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        {
            RawClient raw;
            QVERIFY(raw.connectTo(agent.port()));
            raw.send(json{{"type", "hello"},
                          {"token", agent.token().toStdString()},
                          {"client", "evil\n2026-01-01T00:00:00.000 hippie-agent: 10.0.0.1:1 authenticated (forged)"},
                          {"protocol", hj::kProtocolVersion}});
            QCOMPARE(raw.next().value("type", ""), std::string("welcome"));
        }
        {
            RawClient raw;
            QVERIFY(raw.connectTo(agent.port()));
            raw.send(json{{"type", "\x1b[2J\r" + std::string(3000, 'T')}});
            QCOMPARE(raw.next().value("type", ""), std::string("refused"));
        }
        QTest::qWait(300);
        const QString log = agent.stderrText();
        QVERIFY2(log.contains(QLatin1String("evil\\n2026-01-01")), qPrintable(log));
        for (const QString& line : log.split(QLatin1Char('\n'))) {
            QVERIFY2(!line.startsWith(QLatin1String("2026-01-01T00:00:00.000")), qPrintable(line));
            QVERIFY2(line.size() < 1000, qPrintable(line.left(200)));
            QVERIFY2(!line.contains(QChar(0x1b)), qPrintable(line.left(200)));
        }
    }

    // One job asked for 256 ranks and got 256 engines with --max-jobs 1: ranks are bounded too.
    void ranksAreBounded() {
        Agent agent;
        QVERIFY(agent.start(enginePath(), {QStringLiteral("--max-ranks"), QStringLiteral("2")}));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        raw.send(submitOf("many", wellFormedPlan(), 256));
        const json m = raw.nextOf("rejected");
        QVERIFY2(m.value("message", "").find("--max-ranks") != std::string::npos, m.dump().c_str());
        QVERIFY(!QFileInfo::exists(agent.workDir() + QStringLiteral("/jobs/many")));
    }

    // dp 1e9 made the agent build a device map until bad_alloc; it is refused before.
    void hugeDpIsRefusedBeforeAllocating() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        json plan = wellFormedPlan();
        plan["dp"] = 1000000000;
        plan["global_batch"] = 2000000000;
        plan.erase("device_map");
        raw.send(submitOf("wide", plan, 1));
        const json m = raw.nextOf("rejected", 5000);
        QVERIFY2(m.value("message", "").find("'dp'") != std::string::npos, m.dump().c_str());
        QVERIFY(agentAlive(agent));
    }

    // Probes are engine processes: they count against --max-jobs (30 ran at once).
    void probesCountAsJobs() {
        REQUIRE_ENGINE();
        Agent agent;
        QVERIFY(agent.start(engine, {QStringLiteral("--max-jobs"), QStringLiteral("1")}));
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        raw.send(QByteArray::fromStdString(json{{"type", "probe"}}.dump() + "\n" + json{{"type", "probe"}}.dump() + "\n"));
        const json m = raw.nextOf("error");
        QVERIFY2(m.value("message", "").find("--max-jobs 1") != std::string::npos, m.dump().c_str());
        QVERIFY(!raw.nextOf("devices", 120000).is_null());
    }

    // A graph naming a TorchScript file anywhere on the host is refused with the same words
    // whether or not the file exists: the answer reveals nothing about the agent's disk.
    void graphsNamingHostFilesRevealNothing() {
        Agent agent;
        QVERIFY(agent.start(enginePath()));
        QFile pt(agent.dir() + QStringLiteral("/exists.pt"));
        QVERIFY(pt.open(QIODevice::WriteOnly));
        pt.close();
        const QString example = QStringLiteral(HIPPIE_SOURCE_DIR "/resources/examples/tiny-mlp.graph.json");
        QFile gf(example);
        QVERIFY(gf.open(QIODevice::ReadOnly));
        json graph = json::parse(gf.readAll().toStdString());
        json plan = wellFormedPlan();
        plan["model"] = {{"file", "tiny-mlp.graph.json"}, {"batch_size", 32}};
        plan["global_batch"] = 32;
        RawClient raw;
        QVERIFY(raw.connectTo(agent.port()));
        QVERIFY(raw.hello(agent.token()));
        std::vector<std::string> answers;
        for (const QString& file : {pt.fileName(), agent.dir() + QStringLiteral("/missing.pt")}) {
            graph["source"] = {{"file", file.toStdString()}, {"batch_size", 32}};
            json submit = submitOf("pt" + std::to_string(answers.size()), plan, 1);
            submit["job"]["graph"] = graph;
            raw.send(submit);
            const json rejected = raw.nextOf("rejected");
            if (!rejected.is_object()) { QTest::qWait(500); QVERIFY2(false, qPrintable(agent.stderrText())); }
            std::string message = rejected.value("message", "");
            QVERIFY2(message.find("TorchScript") != std::string::npos, message.c_str());
            message.replace(message.find(file.toStdString()), static_cast<size_t>(file.size()), "FILE");
            message.replace(message.find("'pt"), 4, "'ptN");
            answers.push_back(message);
        }
        QCOMPARE(answers[0], answers[1]);
    }

    // Replies obey the same back-pressure as events: a client that sends requests and reads
    // nothing gets at most about 1 MiB queued in the agent (it grew to 183 MB); once it reads,
    // every reply arrives.
    void repliesRespectBackPressure() {
        QTemporaryDir dir;
        hj::AgentOptions o;
        o.port = 0;
        o.token = "pressure-token";
        o.work_dir = dir.filePath(QStringLiteral("work"));
        o.heartbeat_ms = 60000;
        hj::AgentServer agent(o);
        agent.listen();
        QTcpSocket client;
        client.setReadBufferSize(4096);  // reads next to nothing: the rest waits in the kernel, then the agent
        client.connectToHost(QStringLiteral("127.0.0.1"), agent.port());
        QVERIFY(client.waitForConnected(5000));
        client.write(hj::frame({{"type", "hello"}, {"token", "pressure-token"}, {"client", "test"}, {"protocol", hj::kProtocolVersion}}));
        const QByteArray request = hj::frame({{"type", std::string(70, 'x')}});  // answered by a ~200-byte error
        QByteArray all;
        for (int i = 0; i < kUnreadRequests; ++i) all += request;
        client.write(all);
        QTest::qWait(3000);
        const qint64 bound = kClientHighWaterBytes + 1024;
        QVERIFY2(agent.peakQueuedBytes() <= bound, qPrintable(QString::number(agent.peakQueuedBytes())));
        QVERIFY2(agent.peakQueuedBytes() > bound / 2, "the client's buffers filled: the bound was reached");
        client.setReadBufferSize(0);
        hj::LineReader reader;
        int errors = 0;
        QVERIFY(waitUntil(
            [&] {
                reader.append(client.readAll());
                QByteArray line;
                while (reader.next(&line) == hj::LineReader::Status::Line)
                    if (hj::parseMessage(line).value("type", "") == "error") ++errors;
                return errors == kUnreadRequests;
            },
            60000));
        QCOMPARE(errors, kUnreadRequests);
        QVERIFY(agent.peakQueuedBytes() <= bound);
    }

    // The client side of the same flaw: an agent answering 1e400 made `dispatch` exit 1. Now the
    // bad message is reported and the next one is read.
    void clientSurvivesOutOfRangeNumbers() {
        FakeAgent fake("1e400\n{\"type\":\"event\",\"job\":\"j\",\"seq\":1,\"event\":{\"event\":7}}\n"
                       "{\"type\":\"refused\",\"message\":\"bye\"}\n");
        QVERIFY(fake.listening());
        hj::AgentClient c(fake.address());
        Recorder r(c);
        c.connectToAgent();
        QVERIFY(waitUntil([&] { return !r.refused.isEmpty(); }, 10000));
        QVERIFY2(r.errors.size() >= 2, qPrintable(dumpMessages(r)));
        QVERIFY2(r.errors.first().contains(QLatin1String("bad message")), qPrintable(dumpMessages(r)));
        QVERIFY(r.refused.first().contains(QLatin1String("bye")));
    }

    // Replies are held to the protocol's fields as requests are: an event carrying a field the
    // protocol does not have is reported, not delivered, and the next message is read; a welcome
    // with one refuses the connection at once, naming the field.
    void clientRefusesUnknownReplyFields() {
        {
            FakeAgent fake("{\"type\":\"welcome\",\"protocol\":1,\"heartbeat_ms\":1000}\n"
                           "{\"type\":\"event\",\"job\":\"j\",\"seq\":1,\"event\":{\"event\":\"log\"},\"extra\":[[[1]]]}\n"
                           "{\"type\":\"event\",\"job\":\"j\",\"seq\":1,\"event\":{\"event\":\"log\"}}\n"
                           "{\"type\":\"refused\",\"message\":\"bye\"}\n");
            QVERIFY(fake.listening());
            hj::AgentClient c(fake.address());
            Recorder r(c);
            c.connectToAgent();
            QVERIFY(waitUntil([&] { return !r.refused.isEmpty(); }, 10000));
            QVERIFY2(r.errors.size() == 1, qPrintable(dumpMessages(r)));
            QVERIFY2(r.errors.first().contains(QLatin1String("'event' reply")) && r.errors.first().contains(QLatin1String("extra")),
                     qPrintable(dumpMessages(r)));
            QCOMPARE(r.events.size(), size_t(1));  // the well-formed copy of event 1, once
            QCOMPARE(r.events.front().seq, qint64(1));
        }
        {
            FakeAgent fake("{\"type\":\"welcome\",\"protocol\":1,\"admin\":true}\n");
            QVERIFY(fake.listening());
            hj::AgentClient c(fake.address());
            Recorder r(c);
            c.connectToAgent();
            QVERIFY(waitUntil([&] { return !r.refused.isEmpty(); }, 10000));
            QVERIFY2(r.refused.first().contains(QLatin1String("welcome")) && r.refused.first().contains(QLatin1String("admin")),
                     qPrintable(dumpMessages(r)));
        }
    }

    // A token file others can read is no secret: refused as ssh refuses such keys.
    void tokenFileMustBePrivate() {
        QTemporaryDir dir;
        const QString token = dir.filePath(QStringLiteral("token"));
        QVERIFY(writeFile(token, "secret\n"));
        QVERIFY(QFile::setPermissions(token, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup |
                                                 QFileDevice::ReadOther));
        QProcess p;
        p.start(agentPath(), {QStringLiteral("--token-file"), token, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                              QStringLiteral("--work-dir"), dir.filePath(QStringLiteral("work"))});
        QVERIFY(p.waitForFinished(20000));
        QCOMPARE(p.exitCode(), 2);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains(QLatin1String("chmod 600")), qPrintable(err));
    }

    // Without TLS beyond loopback the token and every plan cross the network in clear text: the
    // agent says so loudly when it starts (and not on 127.0.0.1, where nothing crosses a wire).
    void plainTextBeyondLoopbackIsWarned() {
        QTemporaryDir dir;
        const QString token = dir.filePath(QStringLiteral("token"));
        QVERIFY(writeFile(token, "secret\n"));
        QVERIFY(QFile::setPermissions(token, QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        for (const auto& [listen, warned] : {std::pair{QStringLiteral("0.0.0.0:0"), true}, std::pair{QStringLiteral("127.0.0.1:0"), false}}) {
            QProcess p;
            p.start(agentPath(), {QStringLiteral("--token-file"), token, QStringLiteral("--listen"), listen,
                                  QStringLiteral("--work-dir"), dir.filePath(QStringLiteral("work"))});
            QVERIFY(p.waitForStarted(10000));
            QDeadlineTimer deadline(20000);
            while (!p.canReadLine() && !deadline.hasExpired() && p.state() == QProcess::Running) p.waitForReadyRead(100);
            QVERIFY2(p.readLine().contains("\"listening\""), qPrintable(listen));
            p.terminate();
            QVERIFY(p.waitForFinished(15000));
            const QString err = QString::fromUtf8(p.readAllStandardError());
            QCOMPARE(err.contains(QLatin1String("WARNING: listening on 0.0.0.0 without TLS")), warned);
            QCOMPARE(err.contains(QLatin1String("WARNING")), warned);
        }
    }

    // The man page promised a --max-jobs default the binary did not have: every "(default N)" of
    // the agent's --help is the man page's.
    void manPageDefaultsAreTheBinarys() {
        QProcess p;
        p.start(agentPath(), {QStringLiteral("--help")});
        QVERIFY(p.waitForFinished(20000));
        const QString help = QString::fromUtf8(p.readAllStandardOutput());
        QFile page(QStringLiteral(HIPPIE_SOURCE_DIR "/packaging/man/hippie-agent.1"));
        QVERIFY(page.open(QIODevice::ReadOnly));
        QString man = QString::fromUtf8(page.readAll());
        man.replace(QLatin1String("\\-"), QLatin1String("-")).replace(QRegularExpression(QStringLiteral("\\s+")), QStringLiteral(" "));
        int checked = 0;
        for (const QString& option : {QStringLiteral("--max-jobs"), QStringLiteral("--keep-finished")}) {
            const QRegularExpression in_help(QRegularExpression::escape(option) + QStringLiteral(" [\\s\\S]*?\\(default (\\d+)\\)"));
            const QRegularExpressionMatch h = in_help.match(help);
            QVERIFY2(h.hasMatch(), qPrintable(option + QLatin1String(" has no default in --help:\n") + help));
            const int at = man.indexOf(QLatin1String(".BI ") + option);
            QVERIFY2(at >= 0, qPrintable(option + QLatin1String(" is not in the man page")));
            const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("[Dd]efault (\\d+)")).match(man, at);
            QVERIFY2(m.hasMatch() && m.capturedStart() < man.indexOf(QLatin1String(".TP"), at),
                     qPrintable(option + QLatin1String(": the man page gives no default")));
            QCOMPARE(m.captured(1), h.captured(1));
            ++checked;
        }
        QCOMPARE(checked, 2);
    }
};

QTEST_GUILESS_MAIN(TestAgentHostile)
#include "test_agent_hostile.moc"
