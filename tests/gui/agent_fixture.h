#pragma once
// A hippie-agent for the GUI tests that dispatch to a remote worker: started on 127.0.0.1 at a
// port it picks, with its token file and work directory under the test's directory, running
// ranks with the test's hippie-engine. Stopped when the fixture goes.
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QString>

#include <memory>

#include <nlohmann/json.hpp>

#include "app/jobs/agent_client.h"

namespace hippie::test {

// HIPPIE_BIN_DIR/hippie-agent (the environment's, else the build's), or empty when not built.
inline QString agentBinary() {
    const QByteArray env = qgetenv("HIPPIE_BIN_DIR");
    const QString dir = env.isEmpty() ? QStringLiteral(HIPPIE_BIN_DIR) : QString::fromLocal8Bit(env);
    const QString path = dir + QStringLiteral("/hippie-agent");
    return QFileInfo(path).isExecutable() ? path : QString();
}

class TestAgent {
public:
    static constexpr int kTimeoutMs = 20 * 1000;

    TestAgent() = default;
    TestAgent(const TestAgent&) = delete;
    TestAgent& operator=(const TestAgent&) = delete;
    ~TestAgent() { stop(); }

    // Starts it once (later calls return whether it runs); false when the agent or the engine
    // is missing or it does not say where it listens within kTimeoutMs.
    bool start(const QString& engine, const QString& dir, const QString& token) {
        if (process_) return port_ > 0;
        const QString agent = agentBinary();
        if (agent.isEmpty() || engine.isEmpty()) return false;
        QFile token_file(dir + QStringLiteral("/agent-token"));
        if (!token_file.open(QIODevice::WriteOnly)) return false;
        token_file.write(token.toUtf8() + "\n");
        token_file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
        token_file.close();
        process_ = std::make_unique<QProcess>();
        process_->setProcessChannelMode(QProcess::ForwardedErrorChannel);
        process_->start(agent, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--token-file"),
                                token_file.fileName(), QStringLiteral("--work-dir"), dir + QStringLiteral("/agent"),
                                QStringLiteral("--engine"), engine});
        if (!process_->waitForStarted(kTimeoutMs)) return false;
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < kTimeoutMs) {
            if (!process_->canReadLine() && !process_->waitForReadyRead(1000)) continue;
            const auto j = nlohmann::json::parse(process_->readLine().toStdString(), nullptr, false);
            if (j.is_object() && j.value("event", std::string()) == "listening") {
                port_ = static_cast<quint16>(j.value("port", 0));
                return port_ > 0;
            }
        }
        return false;
    }

    void stop() {
        if (!process_) return;
        process_->terminate();
        if (!process_->waitForFinished(5000)) process_->kill();
        process_.reset();
        port_ = 0;
    }

    // Where a client reaches it, with `token` (right or wrong).
    jobs::AgentAddress address(const QString& token) const {
        jobs::AgentAddress a;
        a.host = QStringLiteral("127.0.0.1");
        a.port = port_;
        a.token = token;
        return a;
    }

private:
    std::unique_ptr<QProcess> process_;
    quint16 port_ = 0;
};

}  // namespace hippie::test
