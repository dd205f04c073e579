#include "app/jobs/agent_client.h"

#include <QCryptographicHash>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QSslSocket>

#include "planners/common/error.h"
#include "planners/common/json_read.h"

namespace hippie::jobs {

using nlohmann::json;

namespace {

QString normalizeFingerprint(QString f) {
    f.remove(QLatin1Char(':'));
    f.remove(QLatin1Char(' '));
    return f.toLower();
}

QString str(const json& m, const char* key) {
    const auto it = m.find(key);
    return it != m.end() && it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString();
}

}  // namespace

AgentClient::AgentClient(AgentAddress address, QObject* parent) : QObject(parent), address_(std::move(address)) {
    heartbeat_watch_.setSingleShot(true);
    connect(&heartbeat_watch_, &QTimer::timeout, this, &AgentClient::onHeartbeatMissed);
    connect_timer_.setSingleShot(true);
    connect(&connect_timer_, &QTimer::timeout, this, [this] {
        if (ready_) return;
        closing_ = true;
        dropSocket();
        emit failed(QStringLiteral("%1 did not answer within %2 ms").arg(address_.display()).arg(connect_timeout_ms_));
    });
}

AgentClient::~AgentClient() {
    if (socket_) {
        socket_->disconnect(this);
        socket_->abort();
    }
}

void AgentClient::setHeartbeatTimeoutMs(int ms) {
    heartbeat_timeout_ms_ = ms;
    if (heartbeat_watch_.isActive()) heartbeat_watch_.start(heartbeatTimeoutMs());
}

int AgentClient::heartbeatTimeoutMs() const {
    return heartbeat_timeout_ms_ > 0 ? heartbeat_timeout_ms_ : kMissedHeartbeats * agent_heartbeat_ms_;
}

void AgentClient::dropSocket() {
    if (!socket_) return;
    QSslSocket* s = socket_.release();
    s->disconnect(this);
    s->abort();
    s->deleteLater();  // we may be inside one of its signals
}

void AgentClient::connectToAgent() {
    dropSocket();
    ready_ = false;
    closing_ = false;
    hello_sent_ = false;
    reader_ = LineReader();
    socket_ = std::make_unique<QSslSocket>();
    QSslSocket* s = socket_.get();
    connect(s, &QSslSocket::readyRead, this, &AgentClient::onReadyRead);
    connect(s, &QSslSocket::disconnected, this, &AgentClient::onDisconnected);
    connect(s, &QSslSocket::errorOccurred, this, [this](QAbstractSocket::SocketError) { onSocketError(); });
    connect_timer_.start(connect_timeout_ms_);
    if (address_.fingerprint_sha256.isEmpty()) {
        connect(s, &QSslSocket::connected, this, &AgentClient::onConnected);
        s->connectToHost(address_.host, address_.port);
        return;
    }
    if (!QSslSocket::supportsSsl()) {
        closing_ = true;
        dropSocket();
        emit failed(QStringLiteral("cannot connect to %1 with TLS: Qt found no TLS backend (install libssl3)").arg(address_.display()));
        return;
    }
    // The agent's certificate is self-signed: trust is the pinned fingerprint, not a CA.
    connect(s, &QSslSocket::sslErrors, this, [this, s](const QList<QSslError>& errors) {
        if (pinMatches()) s->ignoreSslErrors(errors);
        else
            refuse(QStringLiteral("the TLS certificate of %1 has SHA-256 fingerprint %2, not the pinned %3")
                       .arg(address_.display(), peerFingerprint(), normalizeFingerprint(address_.fingerprint_sha256)));
    });
    connect(s, &QSslSocket::encrypted, this, [this] {
        if (!pinMatches()) {
            refuse(QStringLiteral("the TLS certificate of %1 has SHA-256 fingerprint %2, not the pinned %3")
                       .arg(address_.display(), peerFingerprint(), normalizeFingerprint(address_.fingerprint_sha256)));
            return;
        }
        onConnected();
    });
    s->connectToHostEncrypted(address_.host, address_.port);
}

QString AgentClient::peerFingerprint() const {
    if (!socket_) return {};
    const QSslCertificate cert = socket_->peerCertificate();
    if (cert.isNull()) return QStringLiteral("(no certificate)");
    return QString::fromLatin1(cert.digest(QCryptographicHash::Sha256).toHex());
}

bool AgentClient::pinMatches() const {
    if (!socket_ || socket_->peerCertificate().isNull()) return false;
    return peerFingerprint() == normalizeFingerprint(address_.fingerprint_sha256);
}

void AgentClient::refuse(const QString& message) {
    closing_ = true;
    ready_ = false;
    connect_timer_.stop();
    dropSocket();
    emit refused(message);
}

void AgentClient::onConnected() {
    hello_sent_ = true;
    write({{"type", "hello"},
           {"token", address_.token.toStdString()},
           {"client", "hippie-jobs AgentClient"},
           {"protocol", kProtocolVersion}});
}

void AgentClient::disconnectFromAgent() {
    closing_ = true;
    ready_ = false;
    heartbeat_watch_.stop();
    connect_timer_.stop();
    if (socket_) {
        socket_->disconnect(this);
        socket_->disconnectFromHost();
        QSslSocket* s = socket_.release();
        if (s->state() == QAbstractSocket::UnconnectedState) s->deleteLater();
        else connect(s, &QSslSocket::disconnected, s, &QObject::deleteLater);
    }
}

void AgentClient::onDisconnected() {
    const bool was_ready = ready_;
    ready_ = false;
    connect_timer_.stop();
    if (closing_) return;
    closing_ = true;
    const QString why = socket_ && socket_->error() != QAbstractSocket::UnknownSocketError ? socket_->errorString() : QString();
    dropSocket();
    // The heartbeat watch keeps running: unless a reconnect succeeds in time, agentLost follows.
    emit failed(was_ready ? QStringLiteral("the connection to %1 dropped%2").arg(address_.display(), why.isEmpty() ? QString() : QStringLiteral(": ") + why)
                          : QStringLiteral("%1 closed the connection before welcoming us%2")
                                .arg(address_.display(), why.isEmpty() ? QString() : QStringLiteral(": ") + why));
}

void AgentClient::onSocketError() {
    if (closing_ || !socket_) return;
    if (socket_->state() == QAbstractSocket::ConnectedState && socket_->error() == QAbstractSocket::SslHandshakeFailedError) {
        // sslErrors already refused when the pin did not match
        return;
    }
    if (socket_->error() == QAbstractSocket::RemoteHostClosedError) return;  // disconnected() reports it
    const QString why = socket_->errorString();
    const bool was_ready = ready_;
    ready_ = false;
    closing_ = true;
    connect_timer_.stop();
    dropSocket();
    emit failed(was_ready ? QStringLiteral("the connection to %1 failed: %2").arg(address_.display(), why)
                          : QStringLiteral("cannot connect to %1: %2").arg(address_.display(), why));
}

void AgentClient::onHeartbeatMissed() {
    const bool had_socket = socket_ != nullptr;
    ready_ = false;
    closing_ = true;
    dropSocket();
    emit agentLost(QStringLiteral("no heartbeat from %1 for %2 ms%3")
                       .arg(address_.display())
                       .arg(heartbeatTimeoutMs())
                       .arg(had_socket ? QString() : QStringLiteral(" (the connection is gone)")));
}

void AgentClient::write(const json& message) {
    if (socket_) socket_->write(frame(message));
}

void AgentClient::send(const json& message) {
    if (!ready_ || !socket_) {
        emit failed(QStringLiteral("not connected to %1: cannot send '%2'")
                        .arg(address_.display(), QString::fromStdString(message.value("type", std::string()))));
        return;
    }
    write(message);
}

void AgentClient::submit(const JobSpec& job) {
    const QString id = QString::fromStdString(job.id);
    if (!last_seq_.contains(id)) last_seq_.insert(id, 0);
    send({{"type", "submit"}, {"job", jobToJson(job)}});
}

void AgentClient::attach(const QString& job, qint64 after_seq) {
    // Never ask for less than what was delivered: those events would be dropped anyway.
    const qint64 from = std::max(after_seq, last_seq_.value(job, 0));
    if (!last_seq_.contains(job)) last_seq_.insert(job, after_seq);
    else if (after_seq > last_seq_.value(job)) last_seq_[job] = after_seq;  // the caller holds these already
    send({{"type", "attach"}, {"job", job.toStdString()}, {"after_seq", from}});
}

void AgentClient::cancel(const QString& job) { send({{"type", "cancel"}, {"job", job.toStdString()}}); }

void AgentClient::requestStatus() { send({{"type", "status"}}); }

void AgentClient::probe() { send({{"type", "probe"}}); }

void AgentClient::onReadyRead() {
    if (!socket_) return;
    reader_.append(socket_->readAll());
    QSslSocket* s = socket_.get();
    for (;;) {
        QByteArray line;
        const LineReader::Status st = reader_.next(&line);
        if (st == LineReader::Status::NeedMore) return;
        if (st == LineReader::Status::TooLong) {
            closing_ = true;
            ready_ = false;
            dropSocket();
            emit failed(QStringLiteral("%1 sent a message longer than %2 bytes").arg(address_.display()).arg(reader_.maxBytes()));
            return;
        }
        if (line.trimmed().isEmpty()) continue;
        // Whatever the agent sends (1e400, a field of the wrong type), a bad message is reported
        // and skipped: no exception leaves this slot, where Qt would abort the process.
        try {
            handle(parseMessage(line));
        } catch (const std::exception& e) {
            emit errorMessage(QStringLiteral("%1 sent a bad message: %2").arg(address_.display(), QString::fromUtf8(e.what())));
        }
        if (socket_.get() != s) return;  // a handler dropped or replaced the connection
    }
}

namespace {

// The fields each reply of the agent carries (agent_server.cpp). Anything else is refused, as
// the agent refuses unknown request fields: a reply is checked before any of it is kept.
void requireKnownReplyFields(const json& m, const std::string& type) {
    const std::string where = "'" + type + "' reply";
    if (type == "welcome") json_read::requireKnownFields(m, {"type", "agent", "protocol", "engine", "jobs", "heartbeat_ms"}, where);
    else if (type == "refused" || type == "error") json_read::requireKnownFields(m, {"type", "message"}, where);
    else if (type == "event") json_read::requireKnownFields(m, {"type", "job", "seq", "event"}, where);
    else if (type == "heartbeat") json_read::requireKnownFields(m, {"type", "time_ms", "jobs"}, where);
    else if (type == "accepted") json_read::requireKnownFields(m, {"type", "job", "master_port"}, where);
    else if (type == "rejected") json_read::requireKnownFields(m, {"type", "job", "message"}, where);
    else if (type == "status") json_read::requireKnownFields(m, {"type", "jobs"}, where);
    else if (type == "devices") json_read::requireKnownFields(m, {"type", "cluster"}, where);
    else if (type == "pong") json_read::requireKnownFields(m, {"type"}, where);
}

}  // namespace

void AgentClient::handle(const json& m) {
    const std::string type = m["type"].get<std::string>();
    if (type == "welcome") {
        // A welcome this client cannot read leaves nothing to talk to: refuse the connection
        // now rather than wait for the connect timeout.
        try {
            requireKnownReplyFields(m, type);
        } catch (const std::exception& e) {
            refuse(QStringLiteral("%1 sent a welcome this client cannot read: %2").arg(address_.display(), QString::fromUtf8(e.what())));
            return;
        }
    } else {
        requireKnownReplyFields(m, type);
    }
    if (ready_) heartbeat_watch_.start(heartbeatTimeoutMs());  // any message shows the agent is alive
    if (type == "welcome") {
        connect_timer_.stop();
        if (const auto hb = m.find("heartbeat_ms"); hb != m.end() && hb->is_number_integer() && hb->get<int>() > 0)
            agent_heartbeat_ms_ = hb->get<int>();
        ready_ = true;
        heartbeat_watch_.start(heartbeatTimeoutMs());
        emit ready(m);
        // Resume every job this client follows from the last event it delivered.
        if (ready_ && socket_)
            for (auto it = last_seq_.cbegin(); it != last_seq_.cend(); ++it)
                if (!ended_.contains(it.key()))
                    write({{"type", "attach"}, {"job", it.key().toStdString()}, {"after_seq", it.value()}});
        return;
    }
    if (type == "refused") {
        refuse(str(m, "message").isEmpty() ? QStringLiteral("%1 refused the connection").arg(address_.display())
                                           : QStringLiteral("%1 refused the connection: %2").arg(address_.display(), str(m, "message")));
        return;
    }
    if (type == "event") {
        const QString job = str(m, "job");
        const auto seq_it = m.find("seq");
        const auto ev = m.find("event");
        if (job.isEmpty() || seq_it == m.end() || !seq_it->is_number_integer() || ev == m.end() || !ev->is_object()) {
            emit errorMessage(QStringLiteral("%1 sent a malformed event message").arg(address_.display()));
            return;
        }
        const qint64 seq = seq_it->get<qint64>();
        const qint64 last = last_seq_.value(job, 0);
        if (seq <= last) return;  // delivered before a reconnect
        if (seq != last + 1) {
            // A gap: ask again from what we hold; the replay brings the missing ones in order.
            write({{"type", "attach"}, {"job", job.toStdString()}, {"after_seq", last}});
            return;
        }
        last_seq_[job] = seq;
        emit jobEvent(job, seq, *ev);
        if (ev->value("event", std::string()) == "job-state") {
            const auto state = jobStateFromString(ev->value("state", std::string()));
            if (state) {
                if (isTerminal(*state)) ended_.insert(job);
                emit jobState(job, *state, str(*ev, "message"));
            }
        }
        return;
    }
    if (type == "heartbeat") return;
    if (type == "accepted") {
        const QString job = str(m, "job");
        if (!last_seq_.contains(job)) last_seq_.insert(job, 0);
        const auto port = m.find("master_port");
        emit accepted(job, port != m.end() && port->is_number_integer() ? port->get<int>() : 0);
        return;
    }
    if (type == "rejected") {
        const QString job = str(m, "job");
        if (last_seq_.value(job, 0) == 0) last_seq_.remove(job);
        emit rejected(job, str(m, "message"));
        return;
    }
    if (type == "status") {
        emit status(m.value("jobs", json::array()));
        return;
    }
    if (type == "devices") {
        emit devices(m.value("cluster", json::object()));
        return;
    }
    if (type == "pong") return;
    if (type == "error") {
        emit errorMessage(str(m, "message"));
        return;
    }
    emit errorMessage(QStringLiteral("%1 sent an unknown message type '%2'").arg(address_.display(), QString::fromStdString(type)));
}

}  // namespace hippie::jobs
