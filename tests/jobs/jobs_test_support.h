#pragma once
// Helpers for the job-layer suites: finding the binaries, starting a real hippie-agent on
// 127.0.0.1, making plans with `hippie-engine plan`, and recording an AgentClient's signals.
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/jobs/agent_client.h"
#include "app/jobs/protocol.h"

namespace jobs_test {

using nlohmann::json;
namespace hj = hippie::jobs;

inline QString binDir() { return QStringLiteral(HIPPIE_BIN_DIR); }
inline QString agentPath() { return QDir(binDir()).filePath(QStringLiteral("hippie-agent")); }

// $HIPPIE_ENGINE, else hippie-engine in HIPPIE_BIN_DIR; empty when neither exists.
inline QString enginePath() {
    const QString env = qEnvironmentVariable("HIPPIE_ENGINE");
    if (!env.isEmpty() && QFileInfo(env).isExecutable()) return QFileInfo(env).absoluteFilePath();
    const QString beside = QDir(binDir()).filePath(QStringLiteral("hippie-engine"));
    return QFileInfo(beside).isExecutable() ? beside : QString();
}

#define REQUIRE_ENGINE()                                                                                                   \
    const QString engine = jobs_test::enginePath();                                                                        \
    if (engine.isEmpty())                                                                                                  \
        QSKIP("hippie-engine is not built (needs LibTorch); set HIPPIE_ENGINE to a hippie-engine binary to run this test")

// Waits (running the event loop) until pred() holds or ms pass.
inline bool waitUntil(const std::function<bool()>& pred, int ms) {
    QDeadlineTimer deadline(ms);
    while (!pred()) {
        if (deadline.hasExpired()) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QTest::qSleep(5);
    }
    return true;
}

// A plan from `hippie-engine plan` (a preset such as gpt-tiny, with even stages).
inline json makePlan(const QString& engine, const QStringList& args) {
    QProcess p;
    p.start(engine, QStringList{QStringLiteral("plan")} + args);
    if (!p.waitForFinished(60000) || p.exitCode() != 0) {
        qWarning("hippie-engine plan failed: %s %s", p.readAllStandardOutput().constData(), p.readAllStandardError().constData());
        return {};
    }
    const QByteArray out = p.readAllStandardOutput();
    return json::parse(out.constBegin(), out.constEnd());
}

inline QString openssl() { return QStandardPaths::findExecutable(QStringLiteral("openssl")); }

// A self-signed RSA certificate for an agent on 127.0.0.1, made with the openssl command line.
struct TestCertificate {
    QString cert, key;   // PEM files in the given directory
    QString fingerprint;  // SHA-256, "AB:CD:..." as `openssl x509 -fingerprint` prints it
    QString error;        // what went wrong; empty when the files are there
};

inline TestCertificate makeTestCertificate(const QTemporaryDir& dir) {
    TestCertificate c{dir.filePath(QStringLiteral("cert.pem")), dir.filePath(QStringLiteral("key.pem")), {}, {}};
    QProcess gen;
    gen.start(openssl(), {QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"), QStringLiteral("rsa:2048"),
                          QStringLiteral("-nodes"), QStringLiteral("-subj"), QStringLiteral("/CN=localhost"), QStringLiteral("-days"),
                          QStringLiteral("1"), QStringLiteral("-keyout"), c.key, QStringLiteral("-out"), c.cert});
    if (!gen.waitForFinished(60000) || gen.exitCode() != 0) {
        c.error = QStringLiteral("openssl req failed: ") + QString::fromUtf8(gen.readAllStandardError());
        return c;
    }
    QProcess fp;
    fp.start(openssl(), {QStringLiteral("x509"), QStringLiteral("-noout"), QStringLiteral("-fingerprint"), QStringLiteral("-sha256"),
                         QStringLiteral("-in"), c.cert});
    fp.waitForFinished(20000);
    const QString out = QString::fromUtf8(fp.readAllStandardOutput()).trimmed();
    c.fingerprint = out.mid(out.indexOf(QLatin1Char('=')) + 1);
    if (c.fingerprint.count(QLatin1Char(':')) != 31) c.error = QStringLiteral("no SHA-256 fingerprint in: ") + out;
    return c;
}

inline bool writeFile(const QString& path, const QByteArray& data) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}

// A hippie-agent process on 127.0.0.1 with its own token file and work directory.
class Agent {
public:
    explicit Agent(QString token = QStringLiteral("s3cret-token")) : token_(std::move(token)) {}
    ~Agent() { stop(); }

    QString token() const { return token_; }
    QString workDir() const { return dir_.filePath(QStringLiteral("work")); }
    QString dir() const { return dir_.path(); }
    quint16 port() const { return port_; }
    QProcess& process() { return process_; }
    QString stderrText() { return QString::fromUtf8(process_.readAllStandardError()); }

    // Starts it; extra arguments are appended. engine: passed as --engine when non-empty; with
    // no engine, a copy of the agent runs from a folder of its own and PATH is emptied, so that
    // no engine is found beside it nor on PATH (the build's bin/ may hold one).
    bool start(const QString& engine, const QStringList& extra = {}) {
        writeFile(dir_.filePath(QStringLiteral("token")), token_.toUtf8() + "\n");
        QFile::setPermissions(dir_.filePath(QStringLiteral("token")), QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        QStringList args = {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--token-file"),
                            dir_.filePath(QStringLiteral("token")), QStringLiteral("--work-dir"), workDir()};
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        QString program = agentPath();
        if (!engine.isEmpty()) {
            args << QStringLiteral("--engine") << engine;
        } else {
            env.insert(QStringLiteral("PATH"), dir_.filePath(QStringLiteral("no-such-dir")));
            QDir(dir_.path()).mkpath(QStringLiteral("alone"));
            const QString copy = dir_.filePath(QStringLiteral("alone/hippie-agent"));
            if (!QFileInfo::exists(copy) && !QFile::copy(program, copy)) {
                qWarning("cannot copy %s to %s", qPrintable(program), qPrintable(copy));
                return false;
            }
            program = copy;
        }
        process_.setProcessEnvironment(env);
        process_.start(program, args + extra);
        if (!process_.waitForStarted(10000)) return false;
        QDeadlineTimer deadline(20000);
        while (!process_.canReadLine()) {
            if (deadline.hasExpired() || process_.state() == QProcess::NotRunning) {
                qWarning("hippie-agent did not start: %s", process_.readAllStandardError().constData());
                return false;
            }
            process_.waitForReadyRead(100);
        }
        const QByteArray line = process_.readLine();
        const json j = json::parse(line.constBegin(), line.constEnd(), nullptr, false);
        if (!j.is_object() || j.value("event", "") != "listening") return false;
        port_ = static_cast<quint16>(j.value("port", 0));
        return port_ != 0;
    }

    void stop() {
        if (process_.state() == QProcess::NotRunning) return;
        process_.terminate();
        if (!process_.waitForFinished(15000)) {
            process_.kill();
            process_.waitForFinished(5000);
        }
    }

    hj::AgentAddress address(const QString& token = {}) const {
        hj::AgentAddress a;
        a.host = QStringLiteral("127.0.0.1");
        a.port = port_;
        a.token = token.isNull() ? token_ : token;
        return a;
    }

private:
    QString token_;
    QTemporaryDir dir_;
    QProcess process_;
    quint16 port_ = 0;
};

// A plain socket speaking the protocol by hand, to send what AgentClient never would.
class RawClient {
public:
    bool connectTo(quint16 port) {
        socket_.connectToHost(QStringLiteral("127.0.0.1"), port);
        return socket_.waitForConnected(5000);
    }
    void send(const QByteArray& bytes) {
        socket_.write(bytes);
        socket_.flush();
    }
    void send(const json& m) { send(QByteArray::fromStdString(m.dump()) + '\n'); }
    // The next message, or null when none comes within ms.
    json next(int ms = 10000) {
        QDeadlineTimer deadline(ms);
        while (!socket_.canReadLine()) {
            if (deadline.hasExpired()) return {};
            if (socket_.state() != QAbstractSocket::ConnectedState && socket_.bytesAvailable() == 0) return {};
            socket_.waitForReadyRead(50);
        }
        const QByteArray line = socket_.readLine();
        json m = json::parse(line.constBegin(), line.constEnd(), nullptr, false);
        return m.is_object() ? m : json();  // value() on anything else would throw
    }
    // The next message of this type, skipping heartbeats and the like.
    json nextOf(const std::string& type, int ms = 10000) {
        QDeadlineTimer deadline(ms);
        while (!deadline.hasExpired()) {
            const json m = next(static_cast<int>(std::max<qint64>(1, deadline.remainingTime())));
            if (m.is_null()) return {};
            if (m.is_object() && m.value("type", "") == type) return m;
        }
        return {};
    }
    bool closedWithin(int ms) {
        QDeadlineTimer deadline(ms);
        while (socket_.state() != QAbstractSocket::UnconnectedState) {
            if (deadline.hasExpired()) return false;
            socket_.waitForDisconnected(50);
            socket_.readAll();
        }
        return true;
    }
    bool hello(const QString& token) {
        send(json{{"type", "hello"}, {"token", token.toStdString()}, {"client", "raw"}, {"protocol", hj::kProtocolVersion}});
        const json reply = next();  // null when the agent closed or said nothing
        return reply.is_object() && reply.value("type", "") == "welcome";
    }
    QTcpSocket& socket() { return socket_; }

private:
    QTcpSocket socket_;
};

// Everything an AgentClient said.
struct Recorder {
    explicit Recorder(hj::AgentClient& c) {
        QObject::connect(&c, &hj::AgentClient::ready, [this](const json& w) { welcome = w; ++ready_count; });
        QObject::connect(&c, &hj::AgentClient::refused, [this](const QString& m) { refused << m; });
        QObject::connect(&c, &hj::AgentClient::failed, [this](const QString& m) { failed << m; });
        QObject::connect(&c, &hj::AgentClient::accepted, [this](const QString& j, int port) { accepted << qMakePair(j, port); });
        QObject::connect(&c, &hj::AgentClient::rejected, [this](const QString&, const QString& m) { rejected << m; });
        QObject::connect(&c, &hj::AgentClient::jobEvent, [this](const QString& j, qint64 seq, const json& e) {
            events.push_back({j, seq, e});
        });
        QObject::connect(&c, &hj::AgentClient::jobState, [this](const QString& j, hj::JobState s, const QString& m) {
            states[j] = s;
            messages[j] = m;
        });
        QObject::connect(&c, &hj::AgentClient::status, [this](const json& j) { status = j; });
        QObject::connect(&c, &hj::AgentClient::devices, [this](const json& j) { devices = j; });
        QObject::connect(&c, &hj::AgentClient::agentLost, [this](const QString& m) { lost << m; });
        QObject::connect(&c, &hj::AgentClient::errorMessage, [this](const QString& m) { errors << m; });
    }
    struct Ev {
        QString job;
        qint64 seq;
        json event;
    };
    bool finished(const QString& job) const { return states.contains(job) && hj::isTerminal(states[job]); }
    int count(const QString& job, const std::string& kind) const {
        int n = 0;
        for (const Ev& e : events)
            if (e.job == job && e.event.value("event", "") == kind) ++n;
        return n;
    }
    json firstOf(const QString& job, const std::string& kind) const {
        for (const Ev& e : events)
            if (e.job == job && e.event.value("event", "") == kind) return e.event;
        return {};
    }

    json welcome;
    int ready_count = 0;
    QStringList refused, failed, rejected, lost, errors;
    QList<QPair<QString, int>> accepted;
    std::vector<Ev> events;
    QHash<QString, hj::JobState> states;
    QHash<QString, QString> messages;
    json status, devices;
};

inline QString dumpMessages(const Recorder& r) {
    return QStringLiteral("refused=%1 failed=%2 rejected=%3 errors=%4 lost=%5")
        .arg(r.refused.join(QLatin1Char('|')), r.failed.join(QLatin1Char('|')), r.rejected.join(QLatin1Char('|')),
             r.errors.join(QLatin1Char('|')), r.lost.join(QLatin1Char('|')));
}

}  // namespace jobs_test
