#pragma once
// The client side of the agent protocol (protocol.h), used by the studio and `hippie-plan
// dispatch`. One AgentClient talks to one agent. It authenticates, submits jobs, and delivers
// each job's events exactly once and in seq order: after a reconnect it attaches with the last
// seq it delivered, and drops anything it already delivered. Missed heartbeats make it report
// the agent lost. Lives in the thread that created it (Qt event loop needed).
#include <QAbstractSocket>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QTimer>

#include <memory>

#include "app/jobs/framing.h"
#include "app/jobs/protocol.h"

class QSslSocket;

namespace hippie::jobs {

struct AgentAddress {
    QString host = QStringLiteral("127.0.0.1");
    quint16 port = kDefaultAgentPort;
    QString token;
    QString fingerprint_sha256;  // hex (colons allowed); non-empty: connect with TLS and pin it
    QString display() const { return host + QLatin1Char(':') + QString::number(port); }
};

class AgentClient : public QObject {
    Q_OBJECT
public:
    explicit AgentClient(AgentAddress address, QObject* parent = nullptr);
    ~AgentClient() override;

    const AgentAddress& address() const { return address_; }
    void connectToAgent();       // -> ready(welcome) | refused(message) | failed(message)
    void disconnectFromAgent();  // jobs keep running on the agent
    bool isReady() const { return ready_; }

    void submit(const JobSpec& job);                  // -> accepted | rejected
    void attach(const QString& job, qint64 after_seq);  // resume a job's event stream
    void cancel(const QString& job);
    void requestStatus();                             // -> status(jobs)
    void probe();                                     // -> devices(cluster)

    qint64 lastSeq(const QString& job) const { return last_seq_.value(job, 0); }
    void setHeartbeatTimeoutMs(int ms);  // default: kMissedHeartbeats x the agent's heartbeat_ms
    int heartbeatTimeoutMs() const;
    void setConnectTimeoutMs(int ms) { connect_timeout_ms_ = ms; }  // default 10 s

signals:
    void ready(const nlohmann::json& welcome);
    void refused(const QString& message);        // bad token, wrong protocol version, TLS pin mismatch
    void failed(const QString& message);         // cannot connect, connection dropped, protocol error
    void accepted(const QString& job, int master_port);
    void rejected(const QString& job, const QString& message);
    void jobEvent(const QString& job, qint64 seq, const nlohmann::json& event);  // exactly once, in order
    void jobState(const QString& job, hippie::jobs::JobState state, const QString& message);
    void status(const nlohmann::json& jobs);
    void devices(const nlohmann::json& cluster);
    void agentLost(const QString& message);      // heartbeats stopped
    void errorMessage(const QString& message);   // the agent's "error" answers

private:
    void send(const nlohmann::json& message);  // only when ready; otherwise failed()
    void write(const nlohmann::json& message);
    void onReadyRead();
    void handle(const nlohmann::json& message);
    void onConnected();
    void onDisconnected();
    void onSocketError();
    void onHeartbeatMissed();
    void refuse(const QString& message);
    bool pinMatches() const;
    QString peerFingerprint() const;
    void dropSocket();

    AgentAddress address_;
    std::unique_ptr<QSslSocket> socket_;
    LineReader reader_;
    bool ready_ = false;
    bool closing_ = false;      // disconnectFromAgent() or a refusal: no failed() for the close
    bool hello_sent_ = false;
    QHash<QString, qint64> last_seq_;  // jobs this client follows, and the last seq delivered
    QSet<QString> ended_;              // jobs whose terminal job-state was delivered
    QTimer heartbeat_watch_;
    QTimer connect_timer_;
    int heartbeat_timeout_ms_ = 0;  // set by setHeartbeatTimeoutMs; 0: from the welcome
    int agent_heartbeat_ms_ = kDefaultHeartbeatMs;
    int connect_timeout_ms_ = 10000;
};

}  // namespace hippie::jobs
