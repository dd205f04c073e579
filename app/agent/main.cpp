// hippie-agent: the worker daemon on a GPU host. It authenticates the studio, starts
// hippie-engine ranks for accepted jobs and streams their events back (app/jobs/protocol.h).
// Prints {"event":"listening","host","port"} on stdout when ready; logs go to stderr.
#include <sys/socket.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSocketNotifier>
#include <QStandardPaths>
#include <QTimer>

#include <csignal>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/jobs/agent_server.h"
#include "app/jobs/launcher.h"
#include "planners/common/error.h"

namespace {

using hippie::Error;
namespace hj = hippie::jobs;

int g_signal_fds[2] = {-1, -1};

void onSignal(int) {
    const char c = 1;
    [[maybe_unused]] const ssize_t n = ::write(g_signal_fds[0], &c, 1);
}

// "HOST:PORT", "[V6]:PORT" or ":PORT" (127.0.0.1).
std::pair<QString, quint16> parseListen(const std::string& text) {
    const QString s = QString::fromStdString(text);
    QString host, port;
    if (s.startsWith(QLatin1Char('['))) {
        const qsizetype close = s.indexOf(QLatin1String("]:"));
        if (close < 0) throw Error("--listen '" + text + "': expected [IPV6]:PORT");
        host = s.mid(1, close - 1);
        port = s.mid(close + 2);
    } else {
        const qsizetype colon = s.lastIndexOf(QLatin1Char(':'));
        if (colon < 0) throw Error("--listen '" + text + "': expected HOST:PORT, e.g. 127.0.0.1:7469");
        host = s.left(colon);
        port = s.mid(colon + 1);
    }
    if (host.isEmpty()) host = QStringLiteral("127.0.0.1");
    bool ok = false;
    const uint p = port.toUInt(&ok);
    if (!ok || p > 65535) throw Error("--listen '" + text + "': the port must be a number 0..65535 (0: any free port)");
    return {host, static_cast<quint16>(p)};
}

QByteArray readToken(const std::string& path) {
    QFile f(QString::fromStdString(path));
    if (!f.exists())
        throw Error("--token-file '" + path + "' does not exist; write a secret to it, e.g. `(umask 077; openssl rand -hex 32 > " + path + ")`");
    // As ssh does with private keys: a secret others can read is no secret.
    const QFileDevice::Permissions others = QFileDevice::ReadGroup | QFileDevice::WriteGroup | QFileDevice::ExeGroup |
                                            QFileDevice::ReadOther | QFileDevice::WriteOther | QFileDevice::ExeOther;
    if (f.permissions() & others)
        throw Error("--token-file '" + path + "' is accessible by group or others; make it private with `chmod 600 " + path + "`");
    if (!f.open(QIODevice::ReadOnly)) throw Error("cannot read --token-file '" + path + "': " + f.errorString().toStdString());
    const QByteArray token = f.readAll().trimmed();
    if (token.isEmpty()) throw Error("--token-file '" + path + "' is empty; write a secret to it, e.g. `openssl rand -hex 32 > " + path + "`");
    if (token.contains('\n')) throw Error("--token-file '" + path + "' must hold one line (the token)");
    return token;
}

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("hippie-agent"));

    CLI::App cli{"hippie-agent: runs hippie-engine ranks for Hippie Studio on this host"};
    std::string listen = "127.0.0.1:" + std::to_string(hj::kDefaultAgentPort);
    std::string token_file, tls_cert, tls_key, work_dir, engine;
    int max_jobs = 4, max_ranks = hj::defaultMaxRanks(), heartbeat_ms = hj::kDefaultHeartbeatMs, keep_finished = 100;
    cli.add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:7469; port 0: any free one)");
    cli.add_option("--token-file", token_file, "file holding the token clients must present")->required();
    cli.add_option("--tls-cert", tls_cert, "PEM certificate: serve TLS (clients pin its SHA-256 fingerprint)");
    cli.add_option("--tls-key", tls_key, "PEM private key of --tls-cert");
    cli.add_option("--work-dir", work_dir, "where job directories go (default: ~/.local/share/hippie-agent)");
    cli.add_option("--max-jobs", max_jobs, "jobs (and device probes) running at once; more are rejected (default 4)")
        ->check(CLI::Range(1, 1000));
    cli.add_option("--max-ranks", max_ranks,
                   "engine ranks running at once over all jobs; a job asking more is rejected (default: one per CPU core, at least 8)")
        ->check(CLI::Range(1, 100000));
    cli.add_option("--keep-finished", keep_finished,
                   "finished jobs held for status and attach; older ones are released, their files kept (default 100)")
        ->check(CLI::Range(0, 1000000));
    cli.add_option("--engine", engine, "hippie-engine binary (default: beside this binary, else on PATH)");
    cli.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval")->check(CLI::Range(50, 600000));
    cli.set_version_flag("--version", HIPPIE_VERSION);
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli.exit(e);
    }

    hj::AgentOptions o;
    try {
        std::tie(o.host, o.port) = parseListen(listen);
        o.token = readToken(token_file);
        o.tls_cert = QString::fromStdString(tls_cert);
        o.tls_key = QString::fromStdString(tls_key);
        o.max_jobs = max_jobs;
        o.max_ranks = max_ranks;
        o.keep_finished = keep_finished;
        o.heartbeat_ms = heartbeat_ms;
        if (!engine.empty()) {
            o.engine = hj::findEngine(QString::fromStdString(engine));
            if (o.engine.isEmpty()) throw Error("--engine '" + engine + "' is not an executable file");
        } else {
            o.engine = hj::findEngine();
        }
        o.work_dir = work_dir.empty()
                         ? QDir(QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation)).filePath(QStringLiteral("hippie-agent"))
                         : QFileInfo(QString::fromStdString(work_dir)).absoluteFilePath();
    } catch (const Error& e) {
        std::cerr << "hippie-agent: " << e.what() << "\n";
        return 2;
    }
    if (o.engine.isEmpty()) std::cerr << "hippie-agent: warning: " << hj::engineMissingMessage().toStdString() << "; jobs will be rejected\n";

    hj::AgentServer server(o);
    try {
        server.listen();
    } catch (const Error& e) {
        std::cerr << "hippie-agent: " << e.what() << "\n";
        return 2;
    }

    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signal_fds) != 0) {
        std::cerr << "hippie-agent: cannot create the signal socket pair\n";
        return 1;
    }
    QSocketNotifier notifier(g_signal_fds[1], QSocketNotifier::Read);
    QObject::connect(&notifier, &QSocketNotifier::activated, &server, [&] {
        char c = 0;
        [[maybe_unused]] const ssize_t n = ::read(g_signal_fds[1], &c, 1);
        notifier.setEnabled(false);
        server.shutdown();
        // Jobs get a few seconds to stop (SIGTERM, then SIGKILL); then we leave regardless.
        QTimer::singleShot(10000, &app, [] { QCoreApplication::exit(0); });
    });
    QObject::connect(&server, &hj::AgentServer::stopped, &app, [] {
        std::cerr << "hippie-agent: stopped\n";
        QCoreApplication::exit(0);
    });
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    std::cout << nlohmann::json{{"event", "listening"}, {"host", o.host.toStdString()}, {"port", server.port()},
                                {"tls", server.usesTls()}}
                     .dump()
              << std::endl;
    return app.exec();
}
