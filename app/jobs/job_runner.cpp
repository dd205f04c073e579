#include "app/jobs/job_runner.h"

#include <QDir>
#include <QFile>
#include <QHostAddress>
#include <QTcpServer>

#include <filesystem>

#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/schedule/engine_support.h"
#include "planners/schedule/plan_json.h"

namespace hippie::jobs {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPlanFile = "plan.json";
constexpr const char* kGraphFile = "model-graph.json";
constexpr const char* kEventsFile = "events.jsonl";

std::string jobWhere(const JobSpec& s) { return "job '" + s.id + "'"; }

bool isInside(const fs::path& child, const fs::path& parent) {
    const fs::path rel = child.lexically_normal().lexically_relative(parent.lexically_normal());
    if (rel.empty() || rel == "." || rel.is_absolute()) return false;
    return *rel.begin() != "..";
}

}  // namespace

JobRunner::JobRunner(JobSpec spec, JobRunnerOptions options, QObject* parent)
    : QObject(parent), spec_(std::move(spec)), options_(std::move(options)) {}

JobRunner::~JobRunner() = default;

void JobRunner::checkSpec(const JobSpec& s) {
    if (!isValidJobId(s.id))
        throw Error("job id '" + s.id + "' must be 1 to 64 letters, digits, '_' or '-'");
    const std::string where = jobWhere(s);
    if (s.steps < 1) throw Error(where + ": field 'steps' must be at least 1");
    if (s.world_size < 1) throw Error(where + ": field 'world_size' must be at least 1");
    if (s.first_rank < 0 || s.rank_count < 1 || static_cast<long long>(s.first_rank) + s.rank_count > s.world_size)
        throw Error(where + ": ranks " + std::to_string(s.first_rank) + ".." + std::to_string(s.first_rank + s.rank_count - 1) +
                    " (fields 'first_rank', 'rank_count') are not inside world_size " + std::to_string(s.world_size));
    if (s.master_port < 0 || s.master_port > 65535) throw Error(where + ": field 'master_port' must be a TCP port 0..65535");
    if (s.master_port == 0 && s.first_rank != 0)
        throw Error(where + ": field 'master_port' is 0 but this share does not host rank 0; give the port that rank 0's agent "
                            "answered in \"accepted\"");
    Plan plan;
    try {
        plan = planFromJson(s.plan, where + ": plan");
    } catch (const Error& e) {
        throw Error(e.what());
    }
    if (plan.isPlacement())
        throw Error(where + ": the plan is an operator placement; the engine runs pipeline plans (stages)");
    if (const std::string why = untrainedParallelism(plan); !why.empty()) throw Error(where + ": " + why);
    if (plan.deviceCount() != s.world_size)
        throw Error(where + ": the plan needs " + std::to_string(plan.deviceCount()) + " ranks (pp " +
                    std::to_string(plan.pipelineDepth()) + " x dp " + plan.dpText() + ") but field 'world_size' is " +
                    std::to_string(s.world_size));
    if (plan.model.zoo.empty()) {
        if (s.graph.is_null())
            throw Error(where + ": the plan's model is the file '" + plan.model.file +
                        "', which is not on this agent; send the graph with the job (field 'graph')");
        graphFromJson(s.graph, where + ": graph");
    }
}

int JobRunner::freePort(const QString& host) {
    QHostAddress address;
    if (host == QLatin1String("localhost")) address = QHostAddress::LocalHost;
    else if (!address.setAddress(host)) address = QHostAddress::Any;
    QTcpServer probe;
    if (!probe.listen(address, 0) && !probe.listen(QHostAddress::Any, 0)) return 0;
    return probe.serverPort();
}

QString JobRunner::resolveInsideWorkDir(const std::string& relative, const char* field) const {
    const std::string where = jobWhere(spec_);
    if (relative.empty()) throw Error(where + ": field '" + field + "' is empty");
    fs::path p(relative);
    if (p.is_absolute())
        throw Error(where + ": field '" + field + "' ('" + relative + "') must be relative to the job's work directory");
    std::string probe = relative;  // "{rank}" becomes digits: it cannot leave the directory
    for (size_t at; (at = probe.find("{rank}")) != std::string::npos;) probe.replace(at, 6, "0");
    std::error_code ec;
    const fs::path dir = fs::weakly_canonical(fs::path(work_dir_.toStdString()), ec);
    const fs::path target = fs::weakly_canonical(dir / probe, ec);
    if (ec || !isInside(target, dir))
        throw Error(where + ": field '" + field + "' ('" + relative + "') leaves the job's work directory " + dir.string());
    return QDir(work_dir_).filePath(QString::fromStdString(relative));
}

void JobRunner::prepare() {
    if (prepared_) return;
    checkSpec(spec_);
    const std::string where = jobWhere(spec_);
    QDir root(options_.work_root);
    if (options_.work_root.isEmpty() || !root.mkpath(QStringLiteral("jobs")))
        throw Error("cannot create the work directory '" + options_.work_root.toStdString() + "/jobs'");
    work_dir_ = QDir(root.absoluteFilePath(QStringLiteral("jobs"))).absoluteFilePath(id());
    if (QFileInfo::exists(work_dir_))
        throw Error(where + ": its work directory " + work_dir_.toStdString() +
                    " already exists on this machine; every job needs a new id");
    if (!spec_.dump_params.empty()) dump_params_ = resolveInsideWorkDir(spec_.dump_params, "dump_params");
    // A graph measured from a TorchScript file names it; the engine would look for it, and its
    // answer ("not there", "not a module") would tell the client what exists on this host.
    Graph graph;
    if (!spec_.graph.is_null()) {
        graph = graphFromJson(spec_.graph, where + ": graph");
        if (fs::path(graph.source.file).extension() == ".pt")
            throw Error(where + ": the graph was measured from the TorchScript file '" + graph.source.file +
                        "' (field 'graph.source.file'); an agent trains graphs of the engine's built-in models only");
    }
    if (options_.engine.isEmpty()) throw Error(engineMissingMessage().toStdString());

    if (spec_.first_rank == 0 && spec_.master_port == 0) {
        const QString host = options_.port_host.isEmpty() ? QString::fromStdString(spec_.master_addr) : options_.port_host;
        spec_.master_port = freePort(host);
        if (spec_.master_port == 0)
            throw Error(where + ": no free TCP port on " + host.toStdString() + " for the rendezvous (field 'master_addr')");
    }

    if (!QDir().mkpath(work_dir_)) throw Error("cannot create the work directory " + work_dir_.toStdString());
    log_.openFile(QDir(work_dir_).filePath(QString::fromLatin1(kEventsFile)));  // memory if it cannot be written
    if (!dump_params_.isEmpty()) QDir().mkpath(QFileInfo(dump_params_).absolutePath());
    // Written as read (planToJson of the Plan, not the message's JSON): unknown fields, however
    // large or deep, never reach the disk.
    json plan = planToJson(planFromJson(spec_.plan, where + ": plan"));
    if (!spec_.graph.is_null()) {
        QFile g(QDir(work_dir_).filePath(QString::fromLatin1(kGraphFile)));
        if (!g.open(QIODevice::WriteOnly) || g.write(QByteArray::fromStdString(graphToJson(graph).dump())) < 0)
            throw Error("cannot write " + g.fileName().toStdString() + ": " + g.errorString().toStdString());
        if (plan.contains("model") && plan["model"].is_object()) plan["model"]["file"] = kGraphFile;
    }
    QFile f(QDir(work_dir_).filePath(QString::fromLatin1(kPlanFile)));
    if (!f.open(QIODevice::WriteOnly) || f.write(QByteArray::fromStdString(plan.dump(2))) < 0)
        throw Error("cannot write " + f.fileName().toStdString() + ": " + f.errorString().toStdString());
    prepared_ = true;
}

void JobRunner::start() {
    prepare();
    if (launcher_ || isTerminal(state_)) return;  // started already, or cancelled before it started
    LaunchSpec ls;
    ls.engine = options_.engine;
    ls.plan_file = QDir(work_dir_).filePath(QString::fromLatin1(kPlanFile));
    ls.work_dir = work_dir_;
    ls.world_size = spec_.world_size;
    ls.first_rank = spec_.first_rank;
    ls.rank_count = spec_.rank_count;
    ls.master_addr = QString::fromStdString(spec_.master_addr);
    ls.master_port = spec_.master_port;
    ls.steps = spec_.steps;
    ls.seed = spec_.seed;
    ls.lr = spec_.lr;
    ls.op_timeout_s = spec_.op_timeout_s;
    ls.trace_every_step = spec_.trace_every_step;
    ls.dump_params = dump_params_;
    ls.checkpoint_dir = options_.checkpoint_dir;
    ls.checkpoint_every = options_.checkpoint_every;
    ls.resume = options_.resume;
    ls.data_file = QString::fromStdString(spec_.data_file);
    ls.token_dtype = QString::fromStdString(spec_.token_dtype);
    ls.grace_ms = options_.grace_ms;
    ls.kill_ms = options_.kill_ms;

    launcher_ = new EngineLauncher(this);
    connect(launcher_, &EngineLauncher::allStarted, this, [this](const json& ranks) {
        append({{"event", "job-state"},
                {"state", "running"},
                {"message", "started ranks " + std::to_string(spec_.first_rank) + ".." +
                                std::to_string(spec_.first_rank + spec_.rank_count - 1) + " of " + std::to_string(spec_.world_size)},
                {"ranks", ranks},
                {"master_port", spec_.master_port},
                {"work_dir", work_dir_.toStdString()}});
    });
    connect(launcher_, &EngineLauncher::line, this, [this](int, const json& ev) { append(ev); });
    connect(launcher_, &EngineLauncher::output, this, [this](int rank, const QString& stream, const QString& text) {
        append({{"event", "log"}, {"rank", rank}, {"stream", stream.toStdString()}, {"text", text.toStdString()}});
    });
    connect(launcher_, &EngineLauncher::finished, this, &JobRunner::onLauncherFinished);
    state_ = JobState::Running;
    launcher_->start(ls);
}

void JobRunner::cancel() {
    if (isTerminal(state_)) return;
    if (launcher_) {
        launcher_->cancel();
        return;
    }
    onLauncherFinished(JobState::Cancelled, QStringLiteral("cancelled before it started"));
}

void JobRunner::onLauncherFinished(JobState state, const QString& message) {
    state_ = state;
    message_ = message;
    append({{"event", "job-state"}, {"state", toString(state)}, {"message", message.toStdString()}});
    // The agent keeps every job it ran (status, attach): what a finished job no longer needs goes
    // now, so that its memory and descriptors do not grow with the number of jobs (the soak test's
    // RSS curve). The launcher is deleted later: this runs inside its signal.
    log_.closeFile();
    if (launcher_) {
        launcher_->deleteLater();
        launcher_ = nullptr;
    }
    emit finished(state, message);
}

void JobRunner::append(json ev) {
    const qint64 seq = log_.append(ev);
    emit jobEvent(id(), seq, ev);
}

std::vector<std::pair<qint64, json>> JobRunner::eventsAfter(qint64 after_seq) const {
    std::vector<std::pair<qint64, json>> out;
    for (qint64 s = std::max<qint64>(after_seq, 0) + 1; s <= log_.size(); ++s) out.emplace_back(s, log_.at(s));
    return out;
}

json JobRunner::statusJson() const {
    return {{"id", spec_.id}, {"state", toString(state_)}, {"last_seq", lastSeq()}, {"message", message_.toStdString()}};
}

}  // namespace hippie::jobs
