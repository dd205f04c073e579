#include "app/dispatch/run_controller.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QThreadPool>
#include <QTimer>

#include <algorithm>
#include <cmath>

#include "app/dispatch/lost_runs.h"
#include "app/dispatch/run_resume.h"
#include "app/dispatch/slurm_job.h"
#include "app/jobs/job_runner.h"
#include "app/jobs/launcher.h"
#include "app/store/event_writer.h"
#include "app/store/measured_trace.h"
#include "app/store/run_store.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/model/zoo.h"
#include "planners/schedule/lower.h"
#include "planners/schedule/plan_json.h"
#include "planners/sim/simulator.h"
#include "planners/sim/trace_json.h"

namespace hippie::dispatch {

using nlohmann::json;
using jobs::JobState;

namespace {

constexpr int kReconnectDelayMs = 1000;
constexpr int kMaxReconnects = 5;

QString str(const std::string& s) { return QString::fromStdString(s); }

std::optional<double> numberAt(const json& j, const char* key) {
    if (!j.is_object()) return std::nullopt;
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
}

// The Graph of a plan's model: the zoo's (a preset's too) or a graph file here. Throws Error
// for a model it cannot build.
std::optional<Graph> graphOfPlan(const Plan& plan) {
    const ModelSpec& m = plan.model;
    if (!m.file.empty() && QFileInfo(str(m.file)).isFile()) return loadGraphFile(m.file);
    if (!m.zoo.empty()) return buildZooModel(m);
    return std::nullopt;
}

std::optional<Cluster> clusterOfPlan(const Plan& plan) {
    if (plan.cluster.empty()) return std::nullopt;
    try {
        return loadCluster(plan.cluster);
    } catch (const Error&) {
        return std::nullopt;
    }
}

}  // namespace

QString WorkerTarget::label() const {
    if (slurm) return slurm->label();
    return local ? QStringLiteral("local") : address.display();
}

QString newJobId() {
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss"));
    return QStringLiteral("run-%1-%2").arg(stamp).arg(QRandomGenerator::global()->bounded(0x1000000), 6, 16, QLatin1Char('0'));
}

RunController::RunController(RunRequest request, QObject* parent) : QObject(parent), request_(std::move(request)) {
    job_id_ = request_.job_id.isEmpty() ? newJobId() : request_.job_id;
    pool_.setMaxThreadCount(1);  // stores, Slurm records and the last flush happen in the order they were asked
    if (request_.work_root.isEmpty())
        request_.work_root = QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(QStringLiteral("work"));
    db_path_ = request_.db_path.isEmpty() ? store::RunStore::defaultPath() : request_.db_path;
    graph_ = request_.graph;
    cluster_ = request_.cluster ? request_.cluster : clusterOfPlan(request_.plan);
    // Known before start(), so that the Slurm script shown for confirmation is the one submitted.
    if (request_.resume_run > 0) checkpoint_dir_ = request_.checkpoint_dir;
    else if (request_.checkpoint_every > 0) checkpoint_dir_ = chooseCheckpointDir();
}

RunController::~RunController() {
    pool_.waitForDone();  // the store thread and the last flush use this object's writer
    delete writer_;  // flushes what is left
}

QString RunController::slurmJobDir() const {
    for (const WorkerTarget& w : request_.workers) {
        if (!w.slurm) continue;
        if (!w.slurm->login_host.isEmpty())  // relative paths are relative to the login's home
            return (w.slurm->job_dir_root.isEmpty() ? QStringLiteral("hippie-runs") : w.slurm->job_dir_root) + QLatin1Char('/') + job_id_;
        const QString root = w.slurm->job_dir_root.isEmpty() ? QDir(request_.work_root).filePath(QStringLiteral("slurm")) : w.slurm->job_dir_root;
        return QDir(QDir(root).absolutePath()).filePath(job_id_);
    }
    return {};
}

QString RunController::slurmScript() const {
    for (const WorkerTarget& w : request_.workers) {
        if (!w.slurm) continue;
        SlurmScriptInput in;
        in.job_name = job_id_;
        in.job_dir = slurmJobDir();
        in.layout = slurmLayout(request_.plan, cluster_, *w.slurm);
        in.world_size = request_.plan.deviceCount();
        in.steps = request_.steps;
        in.seed = request_.seed;
        in.trace_every_step = request_.trace_every_step;
        in.checkpoint_dir = checkpoint_dir_;
        in.checkpoint_every = request_.checkpoint_every;
        in.resume = request_.resume_run > 0;
        in.data_file = request_.data_file;
        in.token_dtype = request_.token_dtype;
        SlurmTarget t = *w.slurm;
        // Tasks start in the job's directory: an engine path relative to here would not be found.
        if (t.login_host.isEmpty() && t.engine.contains(QLatin1Char('/')) && QDir::isRelativePath(t.engine))
            t.engine = QFileInfo(t.engine).absoluteFilePath();
        return slurmBatchScript(t, in);
    }
    return {};
}

std::optional<double> RunController::measuredStepSeconds() const {
    std::optional<double> slowest;
    for (const auto& [rank, d] : done_)
        if (const auto s = numberAt(d, "mean_step_s"); s && (!slowest || *s > *slowest)) slowest = s;
    return slowest;
}

std::optional<double> RunController::predictedStepSeconds() const {
    if (!predicted_) return std::nullopt;
    return predicted_->metrics.iteration_time_s;
}

std::optional<double> RunController::errorPercent() const {
    const auto m = measuredStepSeconds(), p = predictedStepSeconds();
    if (!m || !p || *p <= 0) return std::nullopt;
    return (*m - *p) / *p * 100.0;
}

void RunController::fail(const QString& message) {
    // Delivered from the event loop so that callers connect first.
    QTimer::singleShot(0, this, [this, message] {
        state_ = JobState::Failed;
        message_ = message;
        finished_ = true;
        emit stateChanged(state_, message_);
        emit finished(state_, message_);
    });
}

void RunController::start() {
    const Plan& plan = request_.plan;
    if (plan.isPlacement()) {
        fail(tr("the engine runs pipeline plans (stages x replicas); this plan is an operator placement from %1")
                 .arg(str(plan.planner)));
        return;
    }
    const int world = plan.deviceCount();
    std::vector<int> capacities;
    bool any_local = false, remote_not_loopback = false;
    for (const WorkerTarget& w : request_.workers) {
        capacities.push_back(w.capacity);
        any_local = any_local || w.local;
        remote_not_loopback = remote_not_loopback || (!w.local && !isLoopbackHost(w.address.host));
    }
    try {
        shares_ = splitRanks(world, capacities);
    } catch (const Error& e) {
        fail(QString::fromUtf8(e.what()));
        return;
    }
    if (any_local) {
        engine_ = jobs::findEngine(request_.engine);
        if (engine_.isEmpty()) {
            fail(tr("hippie-engine is not built/installed: %1")
                     .arg(request_.engine.isEmpty() ? tr("none next to this program or on PATH (build with LibTorch, install the "
                                                         "hippie-engine package, or set HIPPIE_ENGINE)")
                                                    : tr("'%1' is not an executable file").arg(request_.engine)));
            return;
        }
    }
    if (any_local && !request_.data_file.isEmpty()) {
        // Local ranks start in their job's directory: a relative path is this process's.
        request_.data_file = QFileInfo(request_.data_file).absoluteFilePath();
        if (!QFileInfo(request_.data_file).isFile()) {
            fail(tr("the training data %1: no such file on this machine (its local ranks read it)").arg(request_.data_file));
            return;
        }
    }
    const bool any_slurm = std::any_of(request_.workers.begin(), request_.workers.end(), [](const WorkerTarget& w) { return w.slurm.has_value(); });
    if (any_slurm && request_.workers.size() != 1) {
        fail(tr("a Slurm cluster runs all of a plan's ranks itself: choose it as the only worker"));
        return;
    }
    if (request_.checkpoint_every > 0 || request_.resume_run > 0) {
        if (const QString why = checkpointRefusal(); !why.isEmpty()) {
            fail(why);
            return;
        }
    }
    if (any_slurm) {
        try {
            (void)slurmScript();
        } catch (const Error& e) {
            fail(QString::fromUtf8(e.what()));
            return;
        }
    }
    const WorkerTarget& first = request_.workers.front();
    if (first.local && remote_not_loopback) {
        fail(tr("rank 0 would run on this machine, which remote agents cannot reach as 127.0.0.1: put a remote agent first"));
        return;
    }
    master_addr_ = first.local ? QStringLiteral("127.0.0.1") : first.address.host;
    for (size_t i = 0; i < request_.workers.size(); ++i) {
        Worker w;
        w.target = request_.workers[i];
        w.share = shares_[i];
        workers_.push_back(w);
    }
    prepareGraph();
}

QString RunController::checkpointRefusal() const {
    if (request_.checkpoint_every < 0) return tr("--checkpoint-every must not be negative");
    if (request_.resume_run > 0 && request_.checkpoint_dir.isEmpty())
        return tr("run %1 has no checkpoint directory to resume from").arg(request_.resume_run);
    if (!checkpoint_dir_.isEmpty() && !jobs::isValidJobId(QFileInfo(checkpoint_dir_).fileName().toStdString()))
        for (const WorkerTarget& w : request_.workers)
            if (!w.local && !w.slurm)
                return tr("the agent %1 names checkpoints by the run's first job id, and %2 does not end in one")
                    .arg(w.label(), checkpoint_dir_);
    return {};
}

QString RunController::chooseCheckpointDir() const {
    for (const WorkerTarget& w : request_.workers)
        if (w.slurm) return slurmJobDir() + QStringLiteral("/checkpoints");  // beside the job's files, on the shared file system
    return QDir(QDir(request_.work_root).absolutePath()).filePath(QStringLiteral("checkpoints/") + job_id_);
}

void RunController::prepareGraph() {
    if (!graph_) {
        try {
            graph_ = graphOfPlan(request_.plan);
        } catch (const Error& e) {
            prediction_note_ = tr("no prediction: %1").arg(QString::fromUtf8(e.what()));
        }
        if (!graph_ && prediction_note_.isEmpty())
            prediction_note_ = tr("no prediction: the graph of model '%1' is not known here").arg(str(request_.plan.model.zoo));
    }
    predict();
}

void RunController::predict() {
    if (graph_ && cluster_) {
        try {
            const Program program = lower(request_.plan, *graph_);
            const CostModel cost(*graph_, *cluster_);
            predicted_ = simulate(program, request_.plan, cost);
            prediction_note_.clear();
        } catch (const Error& e) {
            prediction_note_ = tr("no prediction: %1").arg(QString::fromUtf8(e.what()));
        }
    } else if (graph_ && !cluster_) {
        prediction_note_ = tr("no prediction: cluster '%1' is not known here").arg(str(request_.plan.cluster));
    }
    emit predictionReady();
    if (cancelled_) {
        fail(tr("cancelled before it started"));
        return;
    }
    storeRun();
}

void RunController::storeRun() {
    json workers = json::array();
    for (const Worker& w : workers_)
        workers.push_back(w.target.slurm ? slurmWorkerEntry(w.target.slurm->login_host, w.share.first_rank, w.share.rank_count)
                          : w.target.local ? localWorkerEntry(w.share.first_rank, w.share.rank_count)
                                         : json{{"host", w.target.address.host.toStdString()},
                                                {"port", w.target.address.port},
                                                {"first_rank", w.share.first_rank},
                                                {"rank_count", w.share.rank_count}});
    const json plan = planToJson(request_.plan);
    const json model = graph_ ? graphToJson(*graph_) : plan.value("model", json::object());
    const json cluster = cluster_ ? clusterToJson(*cluster_) : json{{"name", request_.plan.cluster}};
    const json predicted = predicted_ ? metricsToJson(predicted_->metrics) : json(nullptr);
    store::NewRun run;
    run.job_id = job_id_;
    run.workers = workers;
    run.steps = request_.steps;
    run.note = !request_.note.isEmpty() ? request_.note
                                        : QStringLiteral("dispatched by %1").arg(QCoreApplication::applicationName().isEmpty()
                                                                                     ? QStringLiteral("hippie")
                                                                                     : QCoreApplication::applicationName());
    run.checkpoint_dir = checkpoint_dir_;
    run.checkpoint_every = checkpoint_dir_.isEmpty() ? 0 : request_.checkpoint_every;
    run.options = runOptionsJson(request_, engine_);
    const QString db = db_path_;
    const qint64 resume_run = request_.resume_run;
    QPointer<RunController> self(this);
    pool_.start([self, db, plan, model, cluster, predicted, run, resume_run]() mutable {
        qint64 id = 0;
        int attempt = 1;
        QString error;
        try {
            store::RunStore s(db);
            if (resume_run > 0) {
                attempt = s.startNextAttempt(resume_run, run.job_id, run.workers);
                id = resume_run;
            } else {
                const qint64 model_id = s.saveModel(model);
                const qint64 cluster_id = s.saveCluster(cluster);
                run.plan_id = s.savePlan(plan, model_id, cluster_id, predicted);
                id = s.createRun(run);
            }
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(QCoreApplication::instance(), [self, id, attempt, error] {
            if (self) self->onStored(id, attempt, error);
        }, Qt::QueuedConnection);
    });
}

void RunController::onStored(qint64 run_id, int attempt, const QString& error) {
    if (!error.isEmpty()) {
        fail(request_.resume_run > 0 ? tr("run %1 could not start its next attempt, so nothing was started: %2").arg(request_.resume_run).arg(error)
                                     : tr("the run could not be stored, so it was not started: %1").arg(error));
        return;
    }
    run_id_ = run_id;
    attempt_ = attempt;
    writer_ = new store::EventWriter(db_path_);
    connect(writer_, &store::EventWriter::writeFailed, this, [this](const QString& m) {
        emit logReceived(-1, QStringLiteral("store"), tr("writing the run failed (will retry): %1").arg(m));
    });
    emit stored(run_id_);
    if (request_.resume_run > 0) {
        // The store moved it back to running; the engine says from which step once it starts.
        state_ = JobState::Running;
        message_ = tr("attempt %1, from its checkpoints").arg(attempt_);
        emit stateChanged(state_, message_);
    }
    if (cancelled_) {
        setState(JobState::Cancelled, tr("cancelled before it started"));
        finish();
        return;
    }
    connectWorkers();
}

void RunController::connectWorkers() {
    for (size_t i = 0; i < workers_.size(); ++i) {
        Worker& w = workers_[i];
        const int index = static_cast<int>(i);
        if (w.target.local || w.target.slurm) {
            w.ready = true;
            emit workerStateChanged(index, tr("ready"));
            continue;
        }
        w.client = new jobs::AgentClient(w.target.address, this);
        connect(w.client, &jobs::AgentClient::ready, this, [this, index](const json&) { onWorkerReady(index); });
        connect(w.client, &jobs::AgentClient::refused, this, [this, index](const QString& m) {
            emit workerStateChanged(index, tr("refused: %1").arg(m));
            workerEnded(index, JobState::Failed, m);  // the client's message names the agent already
        });
        connect(w.client, &jobs::AgentClient::failed, this, [this, index](const QString& m) {
            Worker& wk = workers_[static_cast<size_t>(index)];
            if (wk.ended) return;
            wk.ready = false;
            if (wk.submitted && wk.reconnects < kMaxReconnects) {
                // The job goes on over there; reconnect and resume its stream.
                ++wk.reconnects;
                emit workerStateChanged(index, tr("reconnecting (%1)").arg(m));
                QTimer::singleShot(kReconnectDelayMs, this, [this, index] {
                    Worker& again = workers_[static_cast<size_t>(index)];
                    if (!again.ended && again.client) again.client->connectToAgent();
                });
                return;
            }
            emit workerStateChanged(index, tr("failed: %1").arg(m));
            workerEnded(index, wk.submitted ? JobState::Lost : JobState::Failed, m);
        });
        connect(w.client, &jobs::AgentClient::agentLost, this, [this, index](const QString& m) {
            emit workerStateChanged(index, tr("lost: %1").arg(m));
            workerEnded(index, JobState::Lost, m);
        });
        connect(w.client, &jobs::AgentClient::accepted, this, [this, index](const QString& job, int port) {
            if (job != job_id_) return;
            emit workerStateChanged(index, tr("accepted"));
            if (workers_[static_cast<size_t>(index)].share.first_rank == 0) {
                master_port_ = port;
                for (size_t k = 0; k < workers_.size(); ++k)
                    if (!workers_[k].submitted) submit(static_cast<int>(k));
            }
        });
        connect(w.client, &jobs::AgentClient::rejected, this, [this, index](const QString& job, const QString& m) {
            if (job != job_id_) return;
            workerEnded(index, JobState::Failed, tr("%1 rejected the job: %2").arg(workers_[static_cast<size_t>(index)].target.label(), m));
        });
        connect(w.client, &jobs::AgentClient::jobEvent, this, [this, index](const QString& job, qint64 seq, const json& ev) {
            if (job == job_id_) onEvent(index, seq, ev);
        });
        emit workerStateChanged(index, tr("connecting"));
        w.client->connectToAgent();
    }
    if (std::all_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.ready; })) onWorkerReady(0);
}

void RunController::onWorkerReady(int worker) {
    Worker& w = workers_[static_cast<size_t>(worker)];
    w.ready = true;
    if (!w.target.local) emit workerStateChanged(worker, tr("ready"));
    if (w.submitted && w.client && !w.ended) {
        w.client->attach(job_id_, w.client->lastSeq(job_id_));  // after a reconnect
        return;
    }
    if (finishing_ || cancelled_) return;
    for (const Worker& x : workers_)
        if (!x.ready) return;
    // Everyone is there: rank 0's host first; the others once its port is known.
    if (!workers_.front().submitted) submit(0);
}

jobs::JobSpec RunController::specFor(int worker) const {
    const Worker& w = workers_[static_cast<size_t>(worker)];
    jobs::JobSpec s;
    s.id = job_id_.toStdString();
    s.plan = planToJson(request_.plan);
    if (!request_.plan.model.file.empty() && graph_) s.graph = graphToJson(*graph_);
    s.steps = request_.steps;
    s.seed = request_.seed;
    s.world_size = request_.plan.deviceCount();
    s.first_rank = w.share.first_rank;
    s.rank_count = w.share.rank_count;
    s.master_addr = master_addr_.toStdString();
    s.master_port = master_port_;
    s.trace_every_step = request_.trace_every_step;
    if (!checkpoint_dir_.isEmpty() && !w.target.local && !w.target.slurm) {
        // The agent keeps them under its own work directory, by the key of the run's first
        // attempt (the last part of the run's checkpoint directory, its first job id).
        s.checkpoint_every = request_.checkpoint_every;
        s.checkpoint_key = QFileInfo(checkpoint_dir_).fileName().toStdString();
        s.resume = request_.resume_run > 0;
    }
    s.data_file = request_.data_file.toStdString();
    s.token_dtype = request_.token_dtype.toStdString();
    return s;
}

void RunController::submit(int worker) {
    Worker& w = workers_[static_cast<size_t>(worker)];
    if (w.submitted || w.ended) return;
    w.submitted = true;
    if (w.target.slurm) {
        submitSlurm(worker);
        return;
    }
    if (!w.target.local) {
        w.client->submit(specFor(worker));
        emit workerStateChanged(worker, tr("submitted"));
        return;
    }
    jobs::JobRunnerOptions o;
    o.work_root = request_.work_root;
    o.engine = engine_;
    o.checkpoint_dir = checkpoint_dir_;
    o.checkpoint_every = request_.checkpoint_every;
    o.resume = request_.resume_run > 0;
    w.runner = new jobs::JobRunner(specFor(worker), o, this);
    connect(w.runner, &jobs::JobRunner::jobEvent, this, [this, worker](const QString&, qint64 seq, const json& ev) { onEvent(worker, seq, ev); });
    connect(w.runner, &jobs::JobRunner::finished, this, [this, worker](JobState s, const QString& m) { workerEnded(worker, s, m); });
    try {
        w.runner->prepare();
        if (w.share.first_rank == 0) master_port_ = w.runner->masterPort();
        w.runner->start();
    } catch (const std::exception& e) {
        workerEnded(worker, JobState::Failed, tr("the local machine could not start the job: %1").arg(QString::fromUtf8(e.what())));
        return;
    }
    emit workerStateChanged(worker, tr("running"));
    if (w.share.first_rank == 0)
        for (size_t k = 0; k < workers_.size(); ++k)
            if (!workers_[k].submitted) submit(static_cast<int>(k));
}

void RunController::submitSlurm(int worker) {
    Worker& w = workers_[static_cast<size_t>(worker)];
    QString script;
    try {
        script = slurmScript();
    } catch (const Error& e) {
        workerEnded(worker, JobState::Failed, QString::fromUtf8(e.what()));
        return;
    }
    jobs::JobSpec spec = specFor(worker);
    if (!spec.graph.is_null()) {
        // The nodes have no copy of the model's graph file: it travels inside the plan's directory.
        workerEnded(worker, JobState::Failed, tr("a plan whose model is a graph file cannot run on Slurm yet: use a zoo model or preset"));
        return;
    }
    w.slurm_job = new SlurmJob(spec, *w.target.slurm, script, slurmJobDir(), this);
    connect(w.slurm_job, &SlurmJob::jobEvent, this, [this, worker](qint64 seq, const json& ev) {
        if (ev.value("event", std::string()) == "job-state" && ev.value("state", std::string()) == "queued")
            emit workerStateChanged(worker, str(ev.value("message", std::string())));
        onEvent(worker, seq, ev);
    });
    connect(w.slurm_job, &SlurmJob::infoChanged, this, &RunController::storeSlurmRecord);
    connect(w.slurm_job, &SlurmJob::finished, this, [this, worker](JobState s, const QString& m) { workerEnded(worker, s, m); });
    storeSlurmRecord();
    emit workerStateChanged(worker, tr("submitting"));
    w.slurm_job->start();
}

void RunController::storeSlurmRecord() {
    const SlurmJob* job = nullptr;
    for (const Worker& w : workers_)
        if (w.slurm_job) job = w.slurm_job;
    if (!job) return;
    const SlurmJobInfo& i = job->info();
    store::SlurmRecord r;
    r.login_host = i.login_host;
    r.job_dir = i.job_dir;
    r.slurm_job_id = i.slurm_job_id;
    r.script = i.script;
    r.state = i.state;
    r.reason = i.reason;
    r.node_list = i.node_list;
    r.exit_code = i.exit_code;
    r.tasks = i.tasks;
    slurm_record_ = r;
    emit slurmChanged();
    const QString db = db_path_;
    const qint64 run = run_id_;
    QPointer<RunController> self(this);
    pool_.start([self, db, run, r] {
        try {
            store::RunStore s(db);
            s.saveSlurmJob(run, r);
        } catch (const std::exception& e) {
            const QString m = QString::fromUtf8(e.what());
            QMetaObject::invokeMethod(QCoreApplication::instance(), [self, m] {
                if (self) emit self->logReceived(-1, QStringLiteral("store"), tr("storing the Slurm job failed: %1").arg(m));
            }, Qt::QueuedConnection);
        }
    });
}

void RunController::onEvent(int worker, qint64 seq, const json& ev) {
    if (writer_) writer_->postEvent(run_id_, store::StoredEvent{worker, seq, ev, attempt_});
    const std::string kind = ev.is_object() && ev.contains("event") && ev["event"].is_string() ? ev["event"].get<std::string>() : "";
    const int rank = ev.is_object() && ev.contains("rank") && ev["rank"].is_number_integer() ? ev["rank"].get<int>() : -1;
    if (kind == "job-state") {
        const std::string s = ev.value("state", std::string());
        const QString m = str(ev.value("message", std::string()));
        const auto st = jobs::jobStateFromString(s);
        if (st == JobState::Queued && !m.isEmpty() && state_ == JobState::Queued) {
            // A scheduler's queue (Slurm): why it waits, as it changes.
            message_ = m;
            emit stateChanged(state_, message_);
        } else if (st == JobState::Running) {
            workers_[static_cast<size_t>(worker)].state = JobState::Running;
            emit workerStateChanged(worker, tr("running"));
            if (state_ == JobState::Queued) setState(JobState::Running, m);
        } else if (st && jobs::isTerminal(*st)) {
            workerEnded(worker, *st, m);
        }
    } else if (kind == "log") {
        const QString stream = str(ev.value("stream", std::string("stderr")));
        const QString text = str(ev.value("text", std::string()));
        if (writer_) writer_->postLog(run_id_, rank, stream, text);
        if (stream == QLatin1String("stderr")) stderr_[rank] += text;
        emit logReceived(rank, stream, text);
    } else if (kind == "trace" && rank >= 0) {
        traces_[rank] = ev;
        std::vector<json> all;
        for (const auto& [r, t] : traces_) all.push_back(t);
        try {
            const json merged = store::mergeRankTraces(all, "run " + job_id_.toStdString());
            if (!merged.is_null()) {
                measured_ = traceFromJson(merged, "measured trace");
                emit measuredTraceChanged();
            }
        } catch (const Error& e) {
            emit logReceived(rank, QStringLiteral("studio"), tr("a trace could not be read: %1").arg(QString::fromUtf8(e.what())));
        }
    } else if (kind == "step" && rank >= 0) {
        steps_[rank].add(ev);
    } else if (kind == "done" && rank >= 0) {
        done_[rank] = ev;
    } else if (kind == "error" && rank >= 0) {
        stderr_[rank] += str(ev.value("message", std::string())) + QLatin1Char('\n');
    }
    emit engineEvent(worker, seq, ev);
}

void RunController::workerEnded(int worker, JobState state, const QString& message) {
    Worker& w = workers_[static_cast<size_t>(worker)];
    if (w.ended) return;
    w.ended = true;
    w.state = state;
    w.message = message;
    emit workerStateChanged(worker, message.isEmpty() ? tr(jobs::toString(state)) : QStringLiteral("%1: %2").arg(tr(jobs::toString(state)), message));
    if (state != JobState::Succeeded && !cancelled_) {
        // The others cannot finish without these ranks.
        for (size_t k = 0; k < workers_.size(); ++k) {
            Worker& o = workers_[k];
            if (o.ended) continue;
            if (!o.submitted) {
                o.ended = true;
                o.state = JobState::Cancelled;
                continue;
            }
            if (o.runner) o.runner->cancel();
            if (o.slurm_job) o.slurm_job->cancel();
            if (o.client && o.client->isReady()) o.client->cancel(job_id_);
        }
    }
    for (const Worker& x : workers_)
        if (!x.ended) return;
    // The run's state: a failure explains the most, then a lost agent, then a cancel.
    JobState final_state = JobState::Succeeded;
    QString final_message;
    for (JobState s : {JobState::Failed, JobState::Lost, JobState::Cancelled}) {
        for (const Worker& x : workers_)
            if (x.state == s && final_state == JobState::Succeeded) {
                final_state = s;
                final_message = workers_.size() > 1 ? QStringLiteral("%1: %2").arg(x.target.label(), x.message) : x.message;
            }
    }
    if (cancelled_ && final_state != JobState::Succeeded) {
        final_state = JobState::Cancelled;
        // The state already says "cancelled": the message says when.
        int steps = 0;
        for (const auto& [rank, tally] : steps_) steps = std::max(steps, tally.steps());
        final_message = steps > 0 ? tr("by the user after %n step(s)", nullptr, steps) : tr("by the user before the first step");
    }
    setState(final_state, final_message);
    finish();
}

void RunController::setState(JobState state, const QString& message) {
    if (state_ == state || jobs::isTerminal(state_)) return;
    state_ = state;
    message_ = message;
    if (writer_) writer_->postState(run_id_, state, message);
    emit stateChanged(state, message);
}

void RunController::cancel() {
    if (finished_ || cancelled_) return;
    cancelled_ = true;
    if (!writer_) return;  // not stored yet: predict()/onStored() end it
    bool any_submitted = false;
    for (size_t k = 0; k < workers_.size(); ++k) {
        Worker& w = workers_[k];
        if (w.ended) continue;
        if (!w.submitted) {
            workerEnded(static_cast<int>(k), JobState::Cancelled, tr("cancelled"));
            continue;
        }
        any_submitted = true;
        if (w.runner) w.runner->cancel();
        if (w.slurm_job) w.slurm_job->cancel();
        if (w.client && w.client->isReady()) w.client->cancel(job_id_);
        else if (w.client) workerEnded(static_cast<int>(k), JobState::Cancelled, tr("cancelled while disconnected"));
    }
    (void)any_submitted;
}

void RunController::finish() {
    if (finishing_) return;
    finishing_ = true;
    for (Worker& w : workers_)
        if (w.client) w.client->disconnectFromAgent();
    // A cancelled run's ranks stop before "done": the run keeps what their steps measured (a
    // failed run does not: its last steps may be what went wrong).
    if (state_ == JobState::Cancelled)
        for (const auto& [rank, tally] : steps_)
            if (!done_.contains(rank))
                if (json done = tally.asDoneEvent(rank); !done.is_null()) done_[rank] = std::move(done);
    if (writer_) {
        if (const auto step = measuredStepSeconds()) {
            writer_->postMetric(run_id_, QString::fromLatin1(store::kMetricStepS), *step);
            for (const auto& [rank, d] : done_)
                if (numberAt(d, "mean_step_s") == step)
                    if (const auto sps = numberAt(d, "samples_per_s")) writer_->postMetric(run_id_, QString::fromLatin1(store::kMetricSamplesPerS), *sps);
        }
        double loss_sum = 0;
        int losses = 0;
        for (const auto& [rank, d] : done_)
            if (const auto l = numberAt(d, "loss")) {
                loss_sum += *l;
                ++losses;
            }
        if (losses > 0) writer_->postMetric(run_id_, QString::fromLatin1(store::kMetricFinalLoss), loss_sum / losses);
        if (const auto e = errorPercent()) writer_->postMetric(run_id_, QStringLiteral("step_error_percent"), *e);
        // Tell the world only once everything is committed, so the history shows it at once.
        QPointer<RunController> self(this);
        store::EventWriter* writer = writer_;
        pool_.start([self, writer] {
            writer->flush();
            QMetaObject::invokeMethod(QCoreApplication::instance(), [self] {
                if (!self) return;
                self->finished_ = true;
                emit self->finished(self->state_, self->message_);
            }, Qt::QueuedConnection);
        });
        return;
    }
    finished_ = true;
    emit finished(state_, message_);
}

}  // namespace hippie::dispatch
