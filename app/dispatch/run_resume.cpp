#include "app/dispatch/run_resume.h"

#include <QDir>
#include <QFileInfo>
#include <QObject>
#include <QRegularExpression>

#include <map>
#include <set>

#include "app/dispatch/stored_run.h"
#include "planners/common/error.h"

namespace hippie::dispatch {

using nlohmann::json;

namespace {

std::string str(const QString& s) { return s.toStdString(); }
QString qstr(const std::string& s) { return QString::fromStdString(s); }

std::string runName(qint64 id) { return "run " + std::to_string(id); }

json slurmTargetJson(const SlurmTarget& t) {
    json extra = json::array();
    for (const QString& e : t.extra_sbatch) extra.push_back(str(e));
    return {{"login_host", str(t.login_host)}, {"partition", str(t.partition)},   {"account", str(t.account)},
            {"time_limit", str(t.time_limit)}, {"extra_sbatch", extra},           {"job_dir_root", str(t.job_dir_root)},
            {"engine", str(t.engine)},         {"nodes", t.nodes},                {"tasks_per_node", t.tasks_per_node},
            {"gpus_per_node", t.gpus_per_node}, {"poll_interval_s", t.poll_interval_s}};
}

// `login`: the run's workers entry names the login host (the options keep it too).
SlurmTarget slurmTargetFromJson(const json& j, const std::string& login) {
    SlurmTarget t;
    t.login_host = qstr(login);
    if (!j.is_object()) return t;
    t.partition = qstr(j.value("partition", std::string()));
    t.account = qstr(j.value("account", std::string()));
    t.time_limit = qstr(j.value("time_limit", std::string()));
    if (j.contains("extra_sbatch") && j["extra_sbatch"].is_array())
        for (const json& e : j["extra_sbatch"])
            if (e.is_string()) t.extra_sbatch << qstr(e.get<std::string>());
    t.job_dir_root = qstr(j.value("job_dir_root", std::string()));
    t.engine = qstr(j.value("engine", str(t.engine)));
    t.nodes = j.value("nodes", 0);
    t.tasks_per_node = j.value("tasks_per_node", 0);
    t.gpus_per_node = j.value("gpus_per_node", -1);
    t.poll_interval_s = j.value("poll_interval_s", 1.0);
    return t;
}

// The kind of worker a stored workers entry names: "local", "slurm", or the agent's host:port.
QString workerKind(const json& entry) {
    const std::string host = entry.is_object() ? entry.value("host", std::string()) : std::string();
    if (host == "local" || host == "slurm") return qstr(host);
    return QStringLiteral("%1:%2").arg(qstr(host)).arg(entry.is_object() ? entry.value("port", 0) : 0);
}

std::vector<WorkerTarget> workersOf(const store::RunSummary& run, const ResumeOverrides& overrides) {
    std::vector<WorkerTarget> out;
    for (const json& entry : run.workers) {
        WorkerTarget w;
        const QString kind = workerKind(entry);
        if (kind == u"local") {
            w.local = true;
        } else if (kind == u"slurm") {
            w.slurm.emplace(slurmTargetFromJson(run.options.value("slurm", json::object()), entry.value("login", std::string())));
        } else {
            // An agent: the store keeps its address, never its token.
            const QString host = qstr(entry.value("host", std::string()));
            const int port = entry.value("port", 0);
            if (host.isEmpty() || port <= 0 || port > 65535)
                throw Error(runName(run.id) + ": the store names a worker without a usable address (" + entry.dump() + ")");
            std::optional<jobs::AgentAddress> address =
                overrides.agent ? overrides.agent(host, static_cast<quint16>(port)) : std::optional<jobs::AgentAddress>();
            if (!address || address->token.isEmpty())
                throw Error(runName(run.id) + " ran on the agent " + str(kind) + ": give its token to resume it" +
                            str(overrides.token_hint.isEmpty() ? QString() : QStringLiteral(" (") + overrides.token_hint + QStringLiteral(")")));
            address->host = host;
            address->port = static_cast<quint16>(port);
            w.address = *address;
        }
        w.capacity = entry.value("rank_count", 0);
        out.push_back(w);
    }
    return out;
}

bool seesCheckpointFiles(const std::vector<WorkerTarget>& workers) {
    for (const WorkerTarget& w : workers) {
        if (w.slurm && !w.slurm->login_host.isEmpty()) return false;  // they are on the login host's file system
        if (!w.local && !w.slurm) return false;                        // on the agent's host (it checks them)
    }
    return true;
}

}  // namespace

json runOptionsJson(const RunRequest& request, const QString& local_engine) {
    json o = {{"seed", request.seed}, {"trace_every_step", request.trace_every_step}, {"work_root", str(request.work_root)}};
    if (!local_engine.isEmpty()) o["engine"] = str(local_engine);
    if (!request.data_file.isEmpty()) o["data_file"] = str(request.data_file);
    if (!request.token_dtype.isEmpty()) o["token_dtype"] = str(request.token_dtype);
    for (const WorkerTarget& w : request.workers)
        if (w.slurm) o["slurm"] = slurmTargetJson(*w.slurm);
    return o;
}

QString resumeRefusal(const store::RunSummary& run) {
    const QString name = QObject::tr("run %1").arg(run.id);
    switch (run.state) {
    case store::RunState::Queued:
    case store::RunState::Running:
        return QObject::tr("%1 is still %2: wait for it to end, or cancel it (Ctrl-C in the hippie-plan that dispatched it, or "
                           "Cancel run in the studio), then resume it")
            .arg(name, store::runStateName(run.state));
    case store::RunState::Succeeded:
        return QObject::tr("%1 completed (succeeded): there is nothing to resume").arg(name);
    default:
        break;
    }
    if (run.checkpoint_every <= 0 || run.checkpoint_dir.isEmpty())
        return QObject::tr("%1 was dispatched without --checkpoint-every; nothing to resume from").arg(name);
    return {};
}

std::optional<int> newestCommonCheckpoint(const QString& dir, int world_size) {
    static const QRegularExpression name_re(QStringLiteral("^step-(\\d+)\\.pt$"));
    std::map<int, int> holders;  // step -> ranks that have it
    for (int rank = 0; rank < world_size; ++rank) {
        const QDir rank_dir(QDir(dir).filePath(QStringLiteral("rank-%1").arg(rank)));
        std::set<int> steps;
        for (const QString& f : rank_dir.entryList({QStringLiteral("step-*.pt")}, QDir::Files))
            if (const QRegularExpressionMatch m = name_re.match(f); m.hasMatch()) steps.insert(m.captured(1).toInt());
        for (int s : steps) ++holders[s];
    }
    std::optional<int> newest;
    for (const auto& [step, ranks] : holders)
        if (ranks == world_size) newest = step;
    return newest;
}

RunRequest resumeRequest(const QString& db_path, qint64 run_id, const ResumeOverrides& overrides) {
    const QString db = db_path.isEmpty() ? store::RunStore::defaultPath() : db_path;
    const std::string name = runName(run_id);
    if (run_id <= 0) throw Error(name + ": run ids start at 1 (hippie-plan runs lists them)");
    const StoredRun stored = loadStoredRun(db, run_id);
    if (!stored.error.isEmpty()) {
        if (stored.error.contains(QStringLiteral("there is no run")))
            throw Error(name + ": there is no such run in " + str(db) + " (hippie-plan runs --db " + str(db) + " lists them)");
        throw Error(name + ": " + str(stored.error));
    }
    const store::RunSummary& run = stored.details.summary;
    if (const QString why = resumeRefusal(run); !why.isEmpty()) throw Error(str(why));
    if (!stored.plan) throw Error(name + ": its stored plan cannot be read");

    RunRequest req;
    req.plan = *stored.plan;
    req.graph = stored.graph;
    req.cluster = stored.cluster;
    req.steps = run.steps;
    req.seed = run.options.value("seed", 0ULL);
    req.trace_every_step = run.options.value("trace_every_step", false);
    req.work_root = qstr(run.options.value("work_root", std::string()));
    req.data_file = qstr(run.options.value("data_file", std::string()));  // the data it trained on
    req.token_dtype = qstr(run.options.value("token_dtype", std::string()));
    // The engine the run used when it is still there, else the one found as for a new run.
    const QString used = qstr(run.options.value("engine", std::string()));
    req.engine = !overrides.engine.isEmpty() ? overrides.engine : QFileInfo(used).isExecutable() ? used : QString();
    req.db_path = db;
    req.workers = workersOf(run, overrides);
    req.checkpoint_every = run.checkpoint_every;
    req.checkpoint_dir = run.checkpoint_dir;
    req.resume_run = run_id;
    req.note = QObject::tr("resumed from its checkpoints (attempt %1)").arg(run.attempt + 1);
    if (req.workers.empty()) throw Error(name + ": the store names no workers for it");

    if (seesCheckpointFiles(req.workers)) {
        if (!QFileInfo(run.checkpoint_dir).isDir())
            throw Error(name + "'s checkpoint directory " + str(run.checkpoint_dir) +
                        " is missing (moved or deleted?); nothing to resume from");
        if (!newestCommonCheckpoint(run.checkpoint_dir, req.plan.deviceCount()))
            throw Error(name + " has no checkpoint that all " + std::to_string(req.plan.deviceCount()) + " ranks wrote in " +
                        str(run.checkpoint_dir) + " (it stopped before its first checkpoint, every " +
                        std::to_string(run.checkpoint_every) + " steps); nothing to resume from: dispatch it again");
    }
    return req;
}

}  // namespace hippie::dispatch
