#include "app/dispatch/lost_runs.h"

#include <signal.h>

#include <QCoreApplication>
#include <QTcpSocket>

#include "app/store/run_store.h"

namespace hippie::dispatch {

using nlohmann::json;

json localWorkerEntry(int first_rank, int rank_count) {
    return {{"host", "local"},
            {"port", 0},
            {"pid", static_cast<long long>(QCoreApplication::applicationPid())},
            {"first_rank", first_rank},
            {"rank_count", rank_count}};
}

json slurmWorkerEntry(const QString& login_host, int first_rank, int rank_count) {
    json w = localWorkerEntry(first_rank, rank_count);
    w["host"] = "slurm";
    w["login"] = login_host.toStdString();
    return w;
}

bool workerReachable(const json& worker, int connect_timeout_ms) {
    if (!worker.is_object()) return false;
    const std::string host = worker.value("host", std::string());
    if (host == "local" || host == "slurm") {
        // The local share's ranks die with the process that started them (PR_SET_PDEATHSIG).
        const long long pid = worker.value("pid", 0LL);
        return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
    }
    const int port = worker.value("port", 0);
    if (host.empty() || port <= 0 || port > 65535) return false;
    QTcpSocket socket;
    socket.connectToHost(QString::fromStdString(host), static_cast<quint16>(port));
    const bool up = socket.waitForConnected(connect_timeout_ms);
    socket.abort();
    return up;
}

int markUnreachableRunsLost(store::RunStore& store, int connect_timeout_ms) {
    return store.markLostRuns([connect_timeout_ms](const store::RunSummary& run) {
        if (!run.workers.is_array()) return false;
        for (const json& w : run.workers)
            if (workerReachable(w, connect_timeout_ms)) return true;
        return false;
    });
}

}  // namespace hippie::dispatch
