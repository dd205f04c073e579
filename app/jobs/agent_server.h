#pragma once
// AgentServer: the hippie-agent side of the protocol (protocol.h). It listens on TCP (TLS when
// given a certificate and key), accepts nothing before a "hello" with the right token, checks
// every message's size and schema, runs each accepted job with a JobRunner and streams its
// events to the clients attached to it. Jobs outlive connections; heartbeats tell every
// authenticated client the state and last seq of every job.
#include <QByteArray>
#include <QHash>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>
#include <QTimer>

#include <deque>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/jobs/framing.h"
#include "app/jobs/protocol.h"

class QTcpServer;
class QTcpSocket;

namespace hippie::jobs {

class JobRunner;

struct AgentOptions {
    QString host = QStringLiteral("127.0.0.1");
    quint16 port = kDefaultAgentPort;  // 0: any free port (see AgentServer::port())
    QByteArray token;
    QString tls_cert;  // PEM; with tls_key: TLS only
    QString tls_key;
    QString work_dir;  // jobs go to <work_dir>/jobs/<id>/
    int max_jobs = 4;  // jobs running at once; probes count as jobs
    int max_ranks = 0; // engine ranks running at once over all jobs; 0: defaultMaxRanks()
    int max_unauthenticated = 64;  // connections that have not sent their hello yet
    QString engine;    // hippie-engine; empty: jobs are rejected as "not installed"
    int heartbeat_ms = kDefaultHeartbeatMs;
    qint64 max_message_bytes = kMaxMessageBytes;
    int hello_timeout_ms = 10000;  // a connection that does not authenticate in time is closed
    int grace_ms = 5000;           // see JobRunnerOptions
    // Finished jobs held for status and attach (a client coming back for a run's last events);
    // older ones are released, their files staying in <work_dir>/jobs/<id>/. Memory and each
    // heartbeat stay bounded however many jobs a long-lived agent has run.
    int keep_finished = 100;
};

// Constant-time comparison: the time taken depends on the lengths only, not on where the
// first difference is.
bool tokensEqual(const QByteArray& given, const QByteArray& expected);

// One engine rank per CPU core (the CPU engine's device), at least a small multi-GPU host's worth.
int defaultMaxRanks();

// Text from a peer, made fit for one log line: control characters escaped (\n, \x1b) so that
// nothing can forge a line, and cut to max_chars.
QString printableForLog(const QString& text, qsizetype max_chars = 200);

class AgentServer : public QObject {
    Q_OBJECT
public:
    explicit AgentServer(AgentOptions options, QObject* parent = nullptr);
    ~AgentServer() override;

    void listen();  // throws hippie::Error (bad address, port in use, unreadable certificate)
    QString host() const { return options_.host; }
    quint16 port() const;
    bool usesTls() const { return !options_.tls_cert.isEmpty(); }
    int runningJobs() const;
    int runningRanks() const;
    // The most bytes that ever waited in one client's socket after events or replies were written to
    // it: the bound back-pressure keeps (about 1 MiB plus one message), however slowly clients read.
    qint64 peakQueuedBytes() const { return peak_queued_bytes_; }

    // Stops accepting, cancels running jobs; emits stopped() once none runs.
    void shutdown();

signals:
    void stopped();

private:
    struct Client;

    void onNewConnection();
    void onReadyRead(Client& c);
    void handle(Client& c, const nlohmann::json& m);
    void handleHello(Client& c, const nlohmann::json& m);
    void handleSubmit(Client& c, const nlohmann::json& m);
    void handleAttach(Client& c, const nlohmann::json& m);
    void handleCancel(Client& c, const nlohmann::json& m);
    void handleStatus(Client& c, const nlohmann::json& m);
    void handleProbe(Client& c);
    void send(Client& c, const nlohmann::json& m);
    void closeWith(Client& c, const char* type, const std::string& message);
    void dropClient(QTcpSocket* socket);
    void onJobEvent(const QString& job, qint64 seq, const nlohmann::json& event);
    // Writes the events a client has not been sent yet, while its socket has room (back-pressure).
    void pump(Client& c);
    // Handles the lines that have arrived, unless the client has not read our earlier replies
    // (then its requests wait in the socket, which pushes back on the client).
    void processInput(Client& c);
    void sendHeartbeats();
    nlohmann::json jobStatuses() const;
    void log(const QString& line) const;
    void checkStopped();

    AgentOptions options_;
    QTcpServer* server_ = nullptr;
    std::map<QTcpSocket*, std::unique_ptr<Client>> clients_;
    // Releases the oldest finished jobs beyond keep_finished that no client is still reading.
    void releaseFinished();
    // "no job" for an id this agent never held, or one it released (its files named).
    [[noreturn]] void noSuchJob(const char* request, const std::string& id) const;

    std::map<QString, JobRunner*> jobs_;  // running jobs and the newest finished ones, by id
    std::deque<QString> finished_;        // finished jobs still held, oldest first
    QTimer heartbeat_;
    bool stopping_ = false;
    int probes_running_ = 0;
    qint64 peak_queued_bytes_ = 0;
};

}  // namespace hippie::jobs
