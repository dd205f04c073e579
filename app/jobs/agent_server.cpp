#include "app/jobs/agent_server.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QProcess>
#include <QSslCertificate>
#include <QSslCipher>
#include <QSslConfiguration>
#include <QSslKey>
#include <QSslServer>
#include <QSslSocket>
#include <QSysInfo>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "app/jobs/job_runner.h"
#include "planners/common/error.h"
#include "planners/common/json_read.h"

namespace hippie::jobs {

using nlohmann::json;
namespace jr = hippie::json_read;

namespace {

constexpr int kProbeTimeoutMs = 120000;
// Events are written to a client only while less than this waits in its socket's buffers; the rest
// waits in the job's event log (on disk) until the client reads. A slow or stalled client costs the
// agent this much memory, not its jobs' event history.
constexpr qint64 kClientHighWaterBytes = 1 << 20;
// Qt reads from the network only this far ahead of us; past it the client's sends wait in TCP.
constexpr qint64 kSocketReadAheadBytes = 256 * 1024;
// A smallest multi-GPU host: the rank limit's floor on hosts with few cores.
constexpr int kMinDefaultRanks = 8;
// Longest log line; a peer's text is cut well before this (printableForLog).
constexpr qsizetype kMaxLogLineChars = 2000;
// What a peer sent, quoted in a log line or an answer: enough to recognise it.
constexpr qsizetype kMaxQuotedChars = 80;

QString peerText(const std::string& text) {
    return printableForLog(QString::fromStdString(text.substr(0, static_cast<size_t>(kMaxQuotedChars) * 4)), kMaxQuotedChars);
}

// TLS 1.2 suites with forward secrecy (ECDHE) and authenticated encryption (GCM, ChaCha20-Poly1305);
// TLS 1.3 suites all qualify.
QList<QSslCipher> forwardSecretAeadCiphers() {
    QList<QSslCipher> out;
    for (const QSslCipher& c : QSslConfiguration::supportedCiphers()) {
        if (c.protocol() == QSsl::TlsV1_3) {
            out.append(c);
            continue;
        }
        const QString name = c.name();
        const bool ecdhe = name.startsWith(QLatin1String("ECDHE-"));
        const bool aead = name.contains(QLatin1String("-GCM-")) || name.contains(QLatin1String("CHACHA20-POLY1305"));
        if (c.protocol() == QSsl::TlsV1_2 && ecdhe && aead) out.append(c);
    }
    return out;
}

// The fields each request may carry (protocol.h). Anything else is refused before a handler
// reads, copies or logs the message; an unknown type is the handler table's to name.
void requireKnownMessageFields(const json& m, const std::string& type) {
    const std::string where = "message '" + peerText(type).toStdString() + "'";
    if (type == "hello") jr::requireKnownFields(m, {"type", "token", "client", "protocol"}, where);
    else if (type == "submit") jr::requireKnownFields(m, {"type", "job"}, where);
    else if (type == "attach") jr::requireKnownFields(m, {"type", "job", "after_seq"}, where);
    else if (type == "cancel" || type == "status") jr::requireKnownFields(m, {"type", "job"}, where);
    else if (type == "probe" || type == "ping") jr::requireKnownFields(m, {"type"}, where);
}

qint64 queuedBytes(const QTcpSocket* socket) {
    qint64 n = socket->bytesToWrite();
    if (const auto* ssl = qobject_cast<const QSslSocket*>(socket)) n += ssl->encryptedBytesToWrite();
    return n;
}

QHostAddress parseHost(const QString& host) {
    if (host == QLatin1String("localhost")) return QHostAddress(QHostAddress::LocalHost);
    if (host == QLatin1String("*") || host == QLatin1String("0.0.0.0")) return QHostAddress(QHostAddress::AnyIPv4);
    if (host == QLatin1String("::")) return QHostAddress(QHostAddress::AnyIPv6);
    return QHostAddress(host);
}

QByteArray readFile(const QString& path, const char* what) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw Error(std::string("cannot read the TLS ") + what + " '" + path.toStdString() + "': " + f.errorString().toStdString());
    return f.readAll();
}

}  // namespace

int defaultMaxRanks() { return std::max(QThread::idealThreadCount(), kMinDefaultRanks); }

QString printableForLog(const QString& text, qsizetype max_chars) {
    QString out;
    out.reserve(std::min(text.size(), max_chars) + 8);
    for (const QChar ch : text) {
        if (out.size() >= max_chars) {
            out += QStringLiteral("...(%1 chars)").arg(text.size());
            break;
        }
        const char16_t u = ch.unicode();
        if (u == '\n') out += QLatin1String("\\n");
        else if (u == '\r') out += QLatin1String("\\r");
        else if (u == '\t') out += QLatin1String("\\t");
        else if (u < 0x20 || u == 0x7f || (u >= 0x80 && u < 0xa0) || u == 0x2028 || u == 0x2029)
            out += QStringLiteral("\\x%1").arg(static_cast<unsigned>(u), 2, 16, QLatin1Char('0'));
        else out += ch;
    }
    return out;
}

bool tokensEqual(const QByteArray& given, const QByteArray& expected) {
    unsigned diff = static_cast<unsigned>(given.size() ^ expected.size());
    const qsizetype n = expected.size();
    for (qsizetype i = 0; i < n; ++i) {
        const char g = i < given.size() ? given[i] : '\0';
        diff |= static_cast<unsigned char>(g ^ expected[i]);
    }
    return diff == 0 && !expected.isEmpty();
}

struct AgentServer::Client {
    QTcpSocket* socket = nullptr;
    LineReader reader;
    bool authenticated = false;
    bool closing = false;
    std::map<QString, qint64> sent;  // attached jobs: the last seq written to this client
    bool pumping = false;            // pump() is not re-entered (a write that signalled at once)
    QString peer;
    QTimer hello_timer;
    bool input_paused = false;       // replies wait unread: requests wait too (processInput)
    Client() : reader(kMaxHelloBytes) {}
};

AgentServer::AgentServer(AgentOptions options, QObject* parent) : QObject(parent), options_(std::move(options)) {
    connect(&heartbeat_, &QTimer::timeout, this, &AgentServer::sendHeartbeats);
}

AgentServer::~AgentServer() {
    for (auto& [socket, c] : clients_) socket->disconnect(this);
}

quint16 AgentServer::port() const { return server_ ? server_->serverPort() : 0; }

int AgentServer::runningJobs() const {
    int n = 0;
    for (const auto& [id, job] : jobs_)
        if (!isTerminal(job->state())) ++n;
    return n;
}

int AgentServer::runningRanks() const {
    int n = 0;
    for (const auto& [id, job] : jobs_)
        if (!isTerminal(job->state())) n += job->spec().rank_count;
    return n;
}

void AgentServer::log(const QString& line) const {
    const QString stamp = QDateTime::currentDateTime().toString(Qt::ISODateWithMs);
    // Peers' text is in many lines: escaped here, so no line can forge another.
    std::fprintf(stderr, "%s hippie-agent: %s\n", qPrintable(stamp), qPrintable(printableForLog(line, kMaxLogLineChars)));
    std::fflush(stderr);
}

void AgentServer::listen() {
    const QHostAddress address = parseHost(options_.host);
    if (address.isNull())
        throw Error("--listen: '" + options_.host.toStdString() + "' is not an IP address (use e.g. 127.0.0.1, 0.0.0.0 or ::)");
    if (options_.token.isEmpty()) throw Error("the token is empty");
    if (options_.tls_cert.isEmpty() != options_.tls_key.isEmpty())
        throw Error("TLS needs both --tls-cert and --tls-key");
    if (!options_.tls_cert.isEmpty()) {
        if (!QSslSocket::supportsSsl())
            throw Error("TLS is not available: Qt found no TLS backend (install libssl3)");
        const QByteArray cert_pem = readFile(options_.tls_cert, "certificate");
        const QList<QSslCertificate> certs = QSslCertificate::fromData(cert_pem, QSsl::Pem);
        if (certs.isEmpty() || certs.first().isNull())
            throw Error("--tls-cert '" + options_.tls_cert.toStdString() + "' holds no PEM certificate");
        const QByteArray key_pem = readFile(options_.tls_key, "key");
        QSslKey key;
        for (QSsl::KeyAlgorithm alg : {QSsl::Rsa, QSsl::Ec, QSsl::Dsa}) {
            key = QSslKey(key_pem, alg, QSsl::Pem, QSsl::PrivateKey);
            if (!key.isNull()) break;
        }
        if (key.isNull())
            throw Error("--tls-key '" + options_.tls_key.toStdString() + "' holds no unencrypted PEM private key (RSA, EC or DSA)");
        QSslConfiguration conf = QSslConfiguration::defaultConfiguration();
        conf.setProtocol(QSsl::TlsV1_2OrLater);
        conf.setCiphers(forwardSecretAeadCiphers());
        conf.setLocalCertificate(certs.first());
        conf.setPrivateKey(key);
        conf.setPeerVerifyMode(QSslSocket::VerifyNone);
        auto* ssl = new QSslServer(this);
        ssl->setSslConfiguration(conf);
        ssl->setHandshakeTimeout(options_.hello_timeout_ms);
        connect(ssl, &QSslServer::errorOccurred, this, [this](QSslSocket* s, QAbstractSocket::SocketError) {
            log(QStringLiteral("TLS connection from %1 failed: %2").arg(s->peerAddress().toString(), s->errorString()));
        });
        server_ = ssl;
    } else {
        server_ = new QTcpServer(this);
    }
    connect(server_, &QTcpServer::pendingConnectionAvailable, this, &AgentServer::onNewConnection);
    if (!server_->listen(address, options_.port)) {
        const QString why = server_->errorString();
        const bool in_use = server_->serverError() == QAbstractSocket::AddressInUseError;
        throw Error("cannot listen on " + options_.host.toStdString() + ":" + std::to_string(options_.port) + ": " +
                    why.toStdString() + (in_use ? " (another program uses this port; choose another with --listen HOST:PORT)" : ""));
    }
    if (!QDir().mkpath(options_.work_dir))
        throw Error("cannot create the work directory '" + options_.work_dir.toStdString() + "' (--work-dir)");
    heartbeat_.start(options_.heartbeat_ms);
    if (options_.max_ranks <= 0) options_.max_ranks = defaultMaxRanks();
    if (!usesTls() && !address.isLoopback())
        log(QStringLiteral("WARNING: listening on %1 without TLS: the token and every plan cross the network in clear text, "
                           "readable and replayable by anyone on the path; give --tls-cert and --tls-key")
                .arg(options_.host));
    log(QStringLiteral("listening on %1:%2%3, work directory %4, engine %5")
            .arg(options_.host)
            .arg(port())
            .arg(usesTls() ? QStringLiteral(" (TLS)") : QString())
            .arg(options_.work_dir, options_.engine.isEmpty() ? QStringLiteral("not installed") : options_.engine));
}

void AgentServer::onNewConnection() {
    while (server_->hasPendingConnections()) {
        QTcpSocket* socket = server_->nextPendingConnection();
        if (!socket) break;
        if (stopping_) {
            socket->abort();
            socket->deleteLater();
            continue;
        }
        int unauthenticated = 0;
        for (const auto& [s, other] : clients_)
            if (!other->authenticated && !other->closing) ++unauthenticated;
        if (unauthenticated >= options_.max_unauthenticated) {
            log(QStringLiteral("connection from %1 refused: %2 connections have not authenticated yet")
                    .arg(socket->peerAddress().toString())
                    .arg(unauthenticated));
            socket->abort();
            socket->deleteLater();
            continue;
        }
        auto c = std::make_unique<Client>();
        c->socket = socket;
        socket->setReadBufferSize(kSocketReadAheadBytes);
        c->peer = socket->peerAddress().toString() + QLatin1Char(':') + QString::number(socket->peerPort());
        Client* cp = c.get();
        c->hello_timer.setSingleShot(true);
        connect(&c->hello_timer, &QTimer::timeout, this,
                [this, cp] { closeWith(*cp, "refused", "no hello within " + std::to_string(options_.hello_timeout_ms) + " ms"); });
        c->hello_timer.start(options_.hello_timeout_ms);
        connect(socket, &QTcpSocket::readyRead, this, [this, cp] { onReadyRead(*cp); });
        connect(socket, &QTcpSocket::bytesWritten, this, [this, cp] { pump(*cp); });
        if (auto* ssl = qobject_cast<QSslSocket*>(socket))
            connect(ssl, &QSslSocket::encryptedBytesWritten, this, [this, cp] { pump(*cp); });
        connect(socket, &QTcpSocket::disconnected, this, [this, socket] { dropClient(socket); });
        clients_[socket] = std::move(c);
        log(QStringLiteral("connection from %1").arg(cp->peer));
        if (socket->bytesAvailable() > 0) onReadyRead(*cp);
    }
}

void AgentServer::dropClient(QTcpSocket* socket) {
    const auto it = clients_.find(socket);
    if (it == clients_.end()) return;
    log(QStringLiteral("%1 disconnected").arg(it->second->peer));
    socket->disconnect(this);
    socket->deleteLater();
    // We may be inside one of the client's own signals (its hello timer): delete it later.
    Client* client = it->second.release();
    clients_.erase(it);
    QMetaObject::invokeMethod(this, [client] { delete client; }, Qt::QueuedConnection);
}

void AgentServer::send(Client& c, const json& m) {
    if (c.closing) return;
    c.socket->write(frame(m));
    peak_queued_bytes_ = std::max(peak_queued_bytes_, queuedBytes(c.socket));
}

void AgentServer::closeWith(Client& c, const char* type, const std::string& message) {
    if (c.closing) return;
    log(QStringLiteral("%1: %2 %3, closing").arg(c.peer, QString::fromLatin1(type), QString::fromStdString(message)));
    send(c, {{"type", type}, {"message", message}});
    c.closing = true;
    c.hello_timer.stop();
    c.socket->disconnectFromHost();  // after the pending bytes are written
}

void AgentServer::onReadyRead(Client& c) {
    if (c.closing) {
        c.socket->readAll();
        return;
    }
    processInput(c);
}

void AgentServer::processInput(Client& c) {
    QTcpSocket* socket = c.socket;
    for (;;) {
        // A client that does not read our replies gets no more until it does: its requests stay
        // unread in the socket (bounded by kSocketReadAheadBytes), and TCP pushes back on it.
        c.input_paused = queuedBytes(socket) >= kClientHighWaterBytes;
        if (c.input_paused) return;
        QByteArray line;
        LineReader::Status st = c.reader.next(&line);
        if (st == LineReader::Status::NeedMore) {
            if (socket->bytesAvailable() <= 0) return;
            c.reader.append(socket->read(kSocketReadAheadBytes));
            continue;
        }
        if (st == LineReader::Status::TooLong) {
            closeWith(c, "error",
                      "message longer than " + std::to_string(c.reader.maxBytes()) + " bytes; closing the connection");
            return;
        }
        if (line.trimmed().isEmpty()) continue;
        json m;
        try {
            m = parseMessage(line);
        } catch (const std::exception& e) {
            if (!c.authenticated) {
                closeWith(c, "refused", std::string("expected a hello message first: ") + e.what());
                return;
            }
            send(c, {{"type", "error"}, {"message", e.what()}});
            continue;
        }
        handle(c, m);
        // handle() may have closed the connection (refused); the socket lives until deleteLater.
        if (clients_.find(socket) == clients_.end() || c.closing) return;
    }
}

void AgentServer::handle(Client& c, const json& m) {
    const std::string type = m["type"].get<std::string>();
    if (!c.authenticated) {
        if (type != "hello") {
            closeWith(c, "refused", "the first message must be a hello with the token (got '" + peerText(type).toStdString() + "')");
            return;
        }
        try {
            requireKnownMessageFields(m, type);
            handleHello(c, m);
        } catch (const std::exception& e) {
            closeWith(c, "refused", std::string("bad hello: ") + e.what());
        }
        return;
    }
    try {
        if (type == "hello") throw Error("already authenticated: hello is only the first message");
        requireKnownMessageFields(m, type);
        if (type == "submit") handleSubmit(c, m);
        else if (type == "attach") handleAttach(c, m);
        else if (type == "cancel") handleCancel(c, m);
        else if (type == "status") handleStatus(c, m);
        else if (type == "probe") handleProbe(c);
        else if (type == "ping") send(c, {{"type", "pong"}});
        else throw Error("unknown message type '" + peerText(type).toStdString() + "' (hello, submit, attach, cancel, status, probe, ping)");
    } catch (const std::exception& e) {
        // Error: the message was wrong; anything else (a type a handler did not expect) still
        // concerns this message only: the connection and the agent carry on.
        send(c, {{"type", "error"}, {"message", e.what()}});
    }
}

void AgentServer::handleHello(Client& c, const json& m) {
    const auto token = m.find("token");
    if (token == m.end() || !token->is_string()) {
        closeWith(c, "refused", "hello without a token (field 'token')");
        return;
    }
    if (!tokensEqual(QByteArray::fromStdString(token->get<std::string>()), options_.token)) {
        closeWith(c, "refused", "wrong token");
        return;
    }
    const auto protocol = m.find("protocol");
    if (protocol == m.end() || !protocol->is_number_integer() || protocol->get<long long>() != kProtocolVersion) {
        closeWith(c, "refused",
                  "this agent speaks protocol version " + std::to_string(kProtocolVersion) + " (field 'protocol' is " +
                      (protocol == m.end() ? std::string("missing") : jr::describe(*protocol)) + ")");
        return;
    }
    c.authenticated = true;
    c.hello_timer.stop();
    c.reader.setMaxBytes(options_.max_message_bytes);
    const auto client = m.find("client");
    log(QStringLiteral("%1 authenticated (%2)")
            .arg(c.peer, client != m.end() && client->is_string() ? peerText(client->get<std::string>())
                                                                  : QStringLiteral("unnamed client")));
    send(c, {{"type", "welcome"},
             {"agent", QSysInfo::machineHostName().toStdString()},
             {"protocol", kProtocolVersion},
             {"engine", options_.engine.isEmpty() ? json(nullptr) : json(options_.engine.toStdString())},
             {"jobs", jobStatuses()},
             {"heartbeat_ms", options_.heartbeat_ms}});
}

void AgentServer::handleSubmit(Client& c, const json& m) {
    const json& raw = jr::requireObject(m, "job", "submit");
    std::string id;
    if (const auto it = raw.find("id"); it != raw.end() && it->is_string()) id = it->get<std::string>();
    const auto reject = [&](const std::string& message) {
        log(QStringLiteral("%1: job '%2' rejected: %3").arg(c.peer, peerText(id), QString::fromStdString(message)));
        send(c, {{"type", "rejected"}, {"job", id}, {"message", message}});
    };
    if (stopping_) return reject("the agent is shutting down");
    JobSpec spec;
    try {
        spec = jobFromJson(raw);
    } catch (const Error& e) {
        return reject(e.what());
    }
    const QString qid = QString::fromStdString(spec.id);
    if (jobs_.count(qid)) return reject("job '" + spec.id + "' already exists on this agent; every job needs a new id");
    if (runningJobs() + probes_running_ >= options_.max_jobs)
        return reject("this agent already runs " + std::to_string(runningJobs()) + " job(s) and " + std::to_string(probes_running_) +
                      " probe(s), its limit (--max-jobs " + std::to_string(options_.max_jobs) + "); try again when one ends");
    if (spec.rank_count > options_.max_ranks)
        return reject("job '" + spec.id + "' asks for " + std::to_string(spec.rank_count) + " ranks on this agent, more than its " +
                      std::to_string(options_.max_ranks) + " (--max-ranks); spread the job over more agents");
    if (runningRanks() + spec.rank_count > options_.max_ranks)
        return reject("this agent already runs " + std::to_string(runningRanks()) + " rank(s); " +
                      std::to_string(spec.rank_count) + " more would pass its limit (--max-ranks " +
                      std::to_string(options_.max_ranks) + "); try again when a job ends");
    JobRunnerOptions ro;
    ro.work_root = options_.work_dir;
    ro.engine = options_.engine;
    ro.port_host = options_.host;
    ro.grace_ms = options_.grace_ms;
    if (spec.checkpoint_every > 0 || spec.resume) {
        // The key was checked as a job id (letters, digits, '_', '-'): it stays inside the work directory.
        const QString key = QString::fromStdString(spec.checkpoint_key);
        for (const auto& [other_id, other] : jobs_)
            if (!isTerminal(other->state()) && other->spec().checkpoint_key == spec.checkpoint_key)
                return reject("job '" + other_id.toStdString() + "' still writes the checkpoints '" + spec.checkpoint_key +
                              "' on this agent; resume when it has ended");
        ro.checkpoint_dir = QDir(QDir(options_.work_dir).absolutePath()).filePath(QStringLiteral("checkpoints/") + key);
        ro.checkpoint_every = spec.checkpoint_every;
        ro.resume = spec.resume;
        if (spec.resume && !QFileInfo(ro.checkpoint_dir).isDir())
            return reject("job '" + spec.id + "' resumes from the checkpoints '" + spec.checkpoint_key +
                          "', which this agent does not have (were its ranks on another agent, or was its work directory cleared?)");
    }
    auto* runner = new JobRunner(spec, ro, this);
    try {
        runner->prepare();
    } catch (const Error& e) {
        delete runner;
        return reject(e.what());
    }
    jobs_[qid] = runner;
    c.sent[qid] = 0;
    connect(runner, &JobRunner::jobEvent, this, &AgentServer::onJobEvent);
    connect(runner, &JobRunner::finished, this, [this, qid](JobState state, const QString& message) {
        log(QStringLiteral("job '%1' %2: %3").arg(qid, QString::fromLatin1(toString(state)), message));
        finished_.push_back(qid);
        releaseFinished();
        checkStopped();
    });
    send(c, {{"type", "accepted"}, {"job", spec.id}, {"master_port", runner->masterPort()}});
    log(QStringLiteral("%1: job '%2' accepted: ranks %3..%4 of %5, rendezvous %6:%7")
            .arg(c.peer, qid)
            .arg(spec.first_rank)
            .arg(spec.first_rank + spec.rank_count - 1)
            .arg(spec.world_size)
            .arg(QString::fromStdString(spec.master_addr))
            .arg(runner->masterPort()));
    try {
        runner->start();
    } catch (const Error& e) {
        log(QStringLiteral("job '%1' could not start: %2").arg(qid, QString::fromUtf8(e.what())));
    }
}

void AgentServer::handleAttach(Client& c, const json& m) {
    const std::string id = jr::requireString(m, "job", "attach");
    const int64_t after = jr::requireInt64(m, "after_seq", "attach", jr::Bound::NonNegative);
    const QString qid = QString::fromStdString(id);
    const auto it = jobs_.find(qid);
    if (it == jobs_.end()) noSuchJob("attach", id);
    c.sent[qid] = std::min<qint64>(after, it->second->lastSeq());
    pump(c);
}

void AgentServer::pump(Client& c) {
    if (!c.authenticated || c.closing || c.pumping) return;
    c.pumping = true;
    for (auto& [job, last] : c.sent) {
        const auto it = jobs_.find(job);
        if (it == jobs_.end()) continue;
        const JobRunner* runner = it->second;
        // {"type":"event","job":ID,"seq":N,"event":LINE}: the stored line as it is, no re-parse. Job ids
        // are letters, digits, '_' and '-' (checked on submit): nothing to escape.
        const QByteArray head = QByteArrayLiteral("{\"type\":\"event\",\"job\":\"") + job.toUtf8() + QByteArrayLiteral("\",\"seq\":");
        while (last < runner->lastSeq() && queuedBytes(c.socket) < kClientHighWaterBytes) {
            const std::string line = runner->eventLine(last + 1);
            if (line.empty()) {  // unreadable: say so in its place rather than stall the stream
                c.socket->write(frame({{"type", "event"}, {"job", job.toStdString()}, {"seq", last + 1},
                                       {"event", {{"event", "log"}, {"rank", -1}, {"stream", "agent"},
                                                  {"text", "event " + std::to_string(last + 1) + " could not be read back"}}}}));
            } else {
                c.socket->write(head + QByteArray::number(last + 1) + QByteArrayLiteral(",\"event\":") +
                                QByteArray::fromStdString(line) + QByteArrayLiteral("}\n"));
            }
            ++last;
        }
        peak_queued_bytes_ = std::max(peak_queued_bytes_, queuedBytes(c.socket));
    }
    c.pumping = false;
    if (c.input_paused && queuedBytes(c.socket) < kClientHighWaterBytes) {
        // Deferred: processInput may close or drop the client, and we may be inside its socket's signal.
        QPointer<QTcpSocket> socket = c.socket;
        QMetaObject::invokeMethod(this, [this, socket] {
            if (!socket) return;
            const auto it = clients_.find(socket.data());
            if (it != clients_.end() && !it->second->closing) processInput(*it->second);
        }, Qt::QueuedConnection);
    }
}

void AgentServer::handleCancel(Client& c, const json& m) {
    const std::string id = jr::requireString(m, "job", "cancel");
    const auto it = jobs_.find(QString::fromStdString(id));
    if (it == jobs_.end()) noSuchJob("cancel", id);
    log(QStringLiteral("%1: cancel job '%2'").arg(c.peer, QString::fromStdString(id)));
    it->second->cancel();
}

void AgentServer::handleStatus(Client& c, const json& m) {
    const auto id = jr::optionalString(m, "job", "status");
    if (!id) {
        send(c, {{"type", "status"}, {"jobs", jobStatuses()}});
        return;
    }
    const auto it = jobs_.find(QString::fromStdString(*id));
    if (it == jobs_.end()) noSuchJob("status", *id);
    send(c, {{"type", "status"}, {"jobs", json::array({it->second->statusJson()})}});
}

void AgentServer::handleProbe(Client& c) {
    if (options_.engine.isEmpty()) throw Error("probe: " + engineMissingMessage().toStdString());
    if (stopping_) throw Error("probe: the agent is shutting down");
    // A probe is an engine process like a job's rank: it counts against --max-jobs.
    if (runningJobs() + probes_running_ >= options_.max_jobs)
        throw Error("probe: this agent already runs " + std::to_string(runningJobs()) + " job(s) and " +
                    std::to_string(probes_running_) + " probe(s), its limit (--max-jobs " + std::to_string(options_.max_jobs) +
                    "); try again when one ends");
    ++probes_running_;
    auto* p = new QProcess(this);
    QPointer<QTcpSocket> socket = c.socket;
    p->setProgram(options_.engine);
    p->setArguments({QStringLiteral("probe")});
    p->setStandardInputFile(QProcess::nullDevice());
    connect(p, &QObject::destroyed, this, [this] { --probes_running_; });
    auto* timeout = new QTimer(p);
    timeout->setSingleShot(true);
    connect(timeout, &QTimer::timeout, p, [p] { p->kill(); });
    const auto answer = [this, socket](const json& m) {
        if (!socket) return;
        const auto it = clients_.find(socket.data());
        if (it != clients_.end()) send(*it->second, m);
    };
    connect(p, &QProcess::finished, this, [p, answer](int code, QProcess::ExitStatus status) {
        const QByteArray out = p->readAllStandardOutput();
        const QByteArray err = p->readAllStandardError();
        p->deleteLater();
        json cluster;
        try {
            cluster = json::parse(out.constBegin(), out.constEnd());
        } catch (const json::exception&) {
            // Not one JSON document: the last line may still be an error event.
            const QList<QByteArray> lines = out.trimmed().split('\n');
            if (!lines.isEmpty()) cluster = json::parse(lines.last().constBegin(), lines.last().constEnd(), nullptr, false);
        }
        if (status == QProcess::NormalExit && code == 0 && cluster.is_object() && !cluster.contains("event")) {
            answer({{"type", "devices"}, {"cluster", cluster}});
            return;
        }
        std::string why = cluster.is_object() && cluster.contains("message") && cluster["message"].is_string()
                              ? cluster["message"].get<std::string>()
                              : (status == QProcess::CrashExit ? std::string("it crashed or was stopped")
                                                               : "exit code " + std::to_string(code));
        if (!err.trimmed().isEmpty()) why += "; stderr: " + err.trimmed().right(1000).toStdString();
        answer({{"type", "error"}, {"message", "probe: hippie-engine probe failed: " + why}});
    });
    connect(p, &QProcess::errorOccurred, this, [p, answer](QProcess::ProcessError e) {
        if (e != QProcess::FailedToStart) return;
        answer({{"type", "error"}, {"message", "probe: cannot start hippie-engine: " + p->errorString().toStdString()}});
        p->deleteLater();
    });
    timeout->start(kProbeTimeoutMs);
    p->start();
}

void AgentServer::releaseFinished() {
    while (static_cast<int>(finished_.size()) > std::max(options_.keep_finished, 0)) {
        const QString id = finished_.front();
        const auto it = jobs_.find(id);
        if (it != jobs_.end()) {
            // A client still behind on this job's events keeps it (it is released after a later job ends).
            for (const auto& [socket, c] : clients_) {
                const auto sent = c->sent.find(id);
                if (sent != c->sent.end() && sent->second < it->second->lastSeq()) return;
            }
            for (auto& [socket, c] : clients_) c->sent.erase(id);
            it->second->deleteLater();
            jobs_.erase(it);
        }
        finished_.pop_front();
    }
}

void AgentServer::noSuchJob(const char* request, const std::string& id) const {
    // Ids are checked on submit (letters, digits, '_' and '-'); anything else was never a job here.
    const bool plain = !id.empty() && std::all_of(id.begin(), id.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
    });
    if (plain && !options_.work_dir.isEmpty() &&
        QFileInfo::exists(options_.work_dir + QStringLiteral("/jobs/") + QString::fromStdString(id)))
        throw Error(std::string(request) + ": job '" + id + "' finished and is no longer held by this agent (it keeps the " +
                    std::to_string(options_.keep_finished) + " newest finished jobs, --keep-finished); its events are in " +
                    "jobs/" + id + "/events.jsonl under the agent's work directory");
    throw Error(std::string(request) + ": no job '" + id + "' on this agent");
}

void AgentServer::onJobEvent(const QString& job, qint64, const json&) {
    for (auto& [socket, c] : clients_)
        if (c->sent.count(job)) pump(*c);
}

json AgentServer::jobStatuses() const {
    json out = json::array();
    for (const auto& [id, job] : jobs_) out.push_back(job->statusJson());
    return out;
}

void AgentServer::sendHeartbeats() {
    json jobs = json::array();
    for (const auto& [id, job] : jobs_)
        jobs.push_back({{"id", job->spec().id}, {"state", toString(job->state())}, {"last_seq", job->lastSeq()}});
    const QByteArray bytes = frame({{"type", "heartbeat"}, {"time_ms", QDateTime::currentMSecsSinceEpoch()}, {"jobs", jobs}});
    // A client that reads nothing gets no heartbeats piling up either (it misses them and drops us).
    for (auto& [socket, c] : clients_)
        if (c->authenticated && !c->closing && queuedBytes(socket) < kClientHighWaterBytes) socket->write(bytes);
}

void AgentServer::shutdown() {
    if (stopping_) return;
    stopping_ = true;
    if (server_) server_->close();
    log(QStringLiteral("shutting down: cancelling %1 running job(s)").arg(runningJobs()));
    for (auto& [id, job] : jobs_)
        if (!isTerminal(job->state())) job->cancel();
    checkStopped();
}

void AgentServer::checkStopped() {
    if (!stopping_ || runningJobs() > 0) return;
    for (auto& [socket, c] : clients_) socket->flush();
    emit stopped();
}

}  // namespace hippie::jobs
