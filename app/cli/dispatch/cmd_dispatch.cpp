// hippie-plan dispatch --plan FILE --worker HOST:PORT|local [--worker ...] [--token-file F] [--db FILE]
//                      [--steps N] [--seed S] [--checkpoint-every N] [--data FILE [--token-dtype T]] [--progress]
// hippie-plan dispatch --resume RUN [--db FILE] [--engine PATH] [--token-file F] [--progress]
// hippie-plan dispatch --plan FILE --slurm [--login HOST] [--partition P --account A --time T
//                      --extra-sbatch '...'] [--show-script]
#include "app/cli/dispatch/cmd_dispatch.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <csignal>
#include <limits>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/dispatch/interrupt_notifier.h"
#include "app/dispatch/run_controller.h"
#include "app/dispatch/run_resume.h"
#include "app/jobs/launcher.h"
#include "app/jobs/protocol.h"
#include "planners/cluster/cluster_json.h"
#include "planners/common/error.h"
#include "planners/model/graph_json.h"
#include "planners/schedule/plan_json.h"

namespace hippie::cli {

namespace {

using nlohmann::json;

struct DispatchOptions {
    std::string plan_file;
    std::vector<std::string> workers;
    std::string token_file;
    std::string fingerprint;
    std::string db;
    std::string engine;
    std::string work_dir;
    std::string graph_file;
    std::string cluster;
    int steps = 5;
    unsigned long long seed = 0;
    int checkpoint_every = 0;
    long long resume_run = 0;
    std::string data_file, token_dtype;
    bool progress = false;
    // A Slurm cluster instead of workers.
    bool slurm = false;
    std::string login, partition, account, time_limit, slurm_dir, slurm_engine;
    std::vector<std::string> extra_sbatch;
    int nodes = 0, tasks_per_node = 0, gpus_per_node = -1;
    bool show_script = false;
};

dispatch::WorkerTarget slurmWorker(const DispatchOptions& o) {
    dispatch::SlurmTarget t;
    t.login_host = QString::fromStdString(o.login);
    t.partition = QString::fromStdString(o.partition);
    t.account = QString::fromStdString(o.account);
    t.time_limit = QString::fromStdString(o.time_limit);
    for (const std::string& e : o.extra_sbatch)
        for (const QString& part : QString::fromStdString(e).split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            if (!part.startsWith(QLatin1Char('-')))
                throw Error("--extra-sbatch '" + e + "': '" + part.toStdString() + "' is not an sbatch option (they start with -)");
            t.extra_sbatch << part;
        }
    t.job_dir_root = QString::fromStdString(o.slurm_dir);
    // On the nodes: the given path; with no login host the cluster shares this machine's files, so
    // the engine found here; else hippie-engine on the nodes' PATH.
    if (!o.login.empty() && o.slurm_engine.find('/') != std::string::npos && o.slurm_engine.front() != '/')
        throw Error("--slurm-engine " + o.slurm_engine + ": give an absolute path on the nodes, or a name on their PATH (tasks start in "
                    "the job's directory)");
    if (!o.slurm_engine.empty()) t.engine = QString::fromStdString(o.slurm_engine);
    else if (o.login.empty()) {
        const QString here = jobs::findEngine(QString::fromStdString(o.engine));
        if (!here.isEmpty()) t.engine = here;
    }
    t.nodes = o.nodes;
    t.tasks_per_node = o.tasks_per_node;
    t.gpus_per_node = o.gpus_per_node;
    dispatch::WorkerTarget w;
    w.slurm = t;
    return w;
}

std::string readToken(const std::string& path) {
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly)) throw Error("--token-file " + path + ": cannot read it (" + f.errorString().toStdString() + ")");
    const QByteArray token = f.readAll().trimmed();
    if (token.isEmpty()) throw Error("--token-file " + path + ": the file is empty; put the agent's token in it");
    return token.toStdString();
}

// "local", "HOST:PORT" or "[V6]:PORT"; an agent's token is read once every --worker is checked.
dispatch::WorkerTarget parseWorker(const std::string& text, const std::string& fingerprint) {
    dispatch::WorkerTarget w;
    if (text == "local") {
        w.local = true;
        return w;
    }
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        throw Error("--worker '" + text + "': expected HOST:PORT or local");
    std::string host = text.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    bool ok = false;
    const int port = QString::fromStdString(text.substr(colon + 1)).toInt(&ok);
    if (!ok || port < 1 || port > 65535) throw Error("--worker '" + text + "': the port must be 1..65535");
    w.address.host = QString::fromStdString(host);
    w.address.port = static_cast<quint16>(port);
    w.address.fingerprint_sha256 = QString::fromStdString(fingerprint);
    return w;
}

std::string stepLine(const json& ev) {
    std::string line = "rank " + std::to_string(ev.value("rank", -1)) + " step " + std::to_string(ev.value("step", -1));
    if (ev.contains("time_s") && ev["time_s"].is_number()) line += "  " + std::to_string(ev["time_s"].get<double>()) + " s";
    if (ev.contains("samples_per_s") && ev["samples_per_s"].is_number())
        line += "  " + std::to_string(ev["samples_per_s"].get<double>()) + " samples/s";
    if (ev.contains("loss") && ev["loss"].is_number()) line += "  loss " + std::to_string(ev["loss"].get<double>());
    return line;
}

// A new run of --plan on --worker or --slurm.
dispatch::RunRequest newRunRequest(const DispatchOptions& o) {
    if (o.plan_file.empty()) throw Error("give --plan FILE (a plan to run) or --resume RUN (a stored run to continue)");
    dispatch::RunRequest req;
    req.plan = loadPlanFile(o.plan_file);
    if (!o.graph_file.empty()) req.graph = loadGraphFile(o.graph_file);
    if (!o.cluster.empty()) req.cluster = loadCluster(o.cluster);
    req.steps = o.steps;
    req.seed = o.seed;
    req.engine = QString::fromStdString(o.engine);
    req.work_root = QString::fromStdString(o.work_dir);
    req.db_path = QString::fromStdString(o.db);
    req.note = QStringLiteral("hippie-plan dispatch");
    if (o.slurm && !o.workers.empty()) throw Error("--slurm runs every rank on the cluster: drop --worker");
    if (!o.slurm && o.workers.empty()) throw Error("give --worker HOST:PORT|local (repeat) or --slurm");
    if (!o.slurm && (!o.login.empty() || !o.partition.empty() || !o.account.empty() || !o.time_limit.empty() || !o.extra_sbatch.empty()))
        throw Error("--login, --partition, --account, --time and --extra-sbatch are for --slurm");
    if (o.slurm) req.workers.push_back(slurmWorker(o));
    for (const std::string& w : o.workers) req.workers.push_back(parseWorker(w, o.fingerprint));
    for (dispatch::WorkerTarget& w : req.workers) {
        if (w.local || w.slurm) continue;
        if (o.token_file.empty()) throw Error("--worker " + w.address.display().toStdString() + " is an agent: give its token with --token-file");
        w.address.token = QString::fromStdString(readToken(o.token_file));
    }
    req.checkpoint_every = o.checkpoint_every;
    if (!o.data_file.empty()) {
        // A relative path is this directory's: local ranks start in their job directory, and
        // agents and Slurm nodes see the same absolute path on a shared file system.
        req.data_file = QFileInfo(QString::fromStdString(o.data_file)).absoluteFilePath();
    }
    if (!o.token_dtype.empty() && o.data_file.empty()) throw Error("--token-dtype is for a token-id --data file");
    req.token_dtype = QString::fromStdString(o.token_dtype);
    return req;
}

int runDispatch(const DispatchOptions& o) {
    const bool resuming = o.resume_run != 0;
    std::optional<dispatch::RunRequest> fresh;
    if (!resuming) fresh = newRunRequest(o);

    int argc = 1;
    char name[] = "hippie-plan";
    char* argv[] = {name, nullptr};
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("hippie-studio"));  // the studio's data directory and run store
    QCoreApplication::setOrganizationName(QStringLiteral("hippie"));

    // The store's default path needs the application's name: a resumed run is read from it now.
    dispatch::ResumeOverrides overrides;
    overrides.engine = QString::fromStdString(o.engine);
    overrides.token_hint = QStringLiteral("--token-file");
    if (resuming && !o.token_file.empty()) {
        jobs::AgentAddress agent;
        agent.token = QString::fromStdString(readToken(o.token_file));
        agent.fingerprint_sha256 = QString::fromStdString(o.fingerprint);
        overrides.agent = [agent](const QString&, quint16) { return std::optional<jobs::AgentAddress>(agent); };
    }
    const dispatch::RunRequest req = resuming ? dispatch::resumeRequest(QString::fromStdString(o.db), o.resume_run, overrides) : *fresh;
    const bool slurm = std::any_of(req.workers.begin(), req.workers.end(), [](const dispatch::WorkerTarget& w) { return w.slurm.has_value(); });
    if (o.show_script && !slurm) throw Error("--show-script is for runs on a Slurm cluster");

    dispatch::RunController run(req);
    int exit_code = kExitInternal;
    const bool progress = o.progress;
    if (slurm) {
        // The script is shown before it is submitted (and kept with the run).
        const QString script = run.slurmScript();
        if (o.show_script) {
            std::cout << script.toStdString();
            return kExitOk;
        }
        if (progress) std::cout << "Slurm batch script (" << run.slurmJobDir().toStdString() << "/job.sbatch):\n" << script.toStdString() << std::endl;
        else std::cout << json{{"event", "slurm-script"}, {"dir", run.slurmJobDir().toStdString()}, {"script", script.toStdString()}}.dump() << std::endl;
    }
    QObject::connect(&run, &dispatch::RunController::stored, [&](qint64 id) {
        const json line = {{"event", "stored"}, {"run", id}, {"job", run.jobId().toStdString()}, {"db", run.dbPath().toStdString()},
                           {"predicted_step_s", run.predictedStepSeconds() ? json(*run.predictedStepSeconds()) : json(nullptr)},
                           {"prediction_note", run.predictionNote().toStdString()}};
        json out = line;
        if (resuming) out["attempt"] = run.attempt();
        if (!run.checkpointDir().isEmpty()) out["checkpoint_dir"] = run.checkpointDir().toStdString();
        if (!progress) std::cout << out.dump() << std::endl;
        else if (resuming)
            std::cout << "run " << id << " resumed (attempt " << run.attempt() << ", job " << run.jobId().toStdString()
                      << ") from the checkpoints in " << run.checkpointDir().toStdString() << std::endl;
        else std::cout << "run " << id << " (job " << run.jobId().toStdString() << ") stored in " << run.dbPath().toStdString() << std::endl;
    });
    QObject::connect(&run, &dispatch::RunController::engineEvent, [&](int worker, qint64 seq, const json& ev) {
        if (!progress) {
            std::cout << json{{"worker", worker}, {"seq", seq}, {"event", ev}}.dump() << std::endl;
            return;
        }
        const std::string kind = ev.value("event", std::string());
        if (kind == "step") std::cout << stepLine(ev) << std::endl;
        else if (kind == "slurm-submitted") std::cout << "Slurm job " << ev.value("job_id", std::string()) << " submitted" << std::endl;
        else if (kind == "job-state") std::cout << "worker " << worker << ": " << ev.value("state", std::string()) << " " << ev.value("message", std::string()) << std::endl;
        else if (kind == "error") std::cout << "rank " << ev.value("rank", -1) << " error: " << ev.value("message", std::string()) << std::endl;
    });
    // What the controller says about the store itself (a write that failed) goes to stderr.
    QObject::connect(&run, &dispatch::RunController::logReceived, [](int rank, const QString& stream, const QString& text) {
        if (rank < 0 && stream == QLatin1String("store")) std::cerr << "hippie-plan: " << text.toStdString() << "\n";
    });
    QObject::connect(&run, &dispatch::RunController::finished, [&](jobs::JobState state, const QString& message) {
        json line = {{"event", "finished"}, {"state", jobs::toString(state)}, {"message", message.toStdString()}, {"run", run.runId()}};
        if (const auto m = run.measuredStepSeconds()) line["measured_step_s"] = *m;
        if (const auto p = run.predictedStepSeconds()) line["predicted_step_s"] = *p;
        if (const auto e = run.errorPercent()) line["step_error_percent"] = *e;
        if (progress) {
            std::cout << "run " << run.runId() << ": " << jobs::toString(state) << (message.isEmpty() ? "" : ": ") << message.toStdString();
            if (line.contains("measured_step_s")) std::cout << "  measured " << line["measured_step_s"].get<double>() << " s/step";
            if (line.contains("step_error_percent")) std::cout << "  prediction error " << line["step_error_percent"].get<double>() << " %";
            std::cout << std::endl;
        } else {
            std::cout << line.dump() << std::endl;
        }
        if (state != jobs::JobState::Succeeded) std::cerr << "hippie-plan: dispatch " << jobs::toString(state) << ": " << message.toStdString() << "\n";
        exit_code = state == jobs::JobState::Succeeded ? kExitOk : run.runId() == 0 ? kExitUsage : kExitRunFailed;
        QCoreApplication::exit(0);
    });
    // Ctrl-C or SIGTERM: cancel the run (scancel for Slurm), which is then recorded cancelled; a
    // second one leaves at once, saying what may still run.
    InterruptNotifier interrupt([&](int count, int signal_number) {
        const std::string what = signal_number == SIGTERM ? "SIGTERM" : "SIGINT";
        const std::string slurm_id = run.slurmRecord() ? run.slurmRecord()->slurm_job_id.toStdString() : std::string();
        if (count == 1) {
            std::string how;
            if (slurm) how = slurm_id.empty() ? " (its Slurm job is cancelled as soon as sbatch answers)" : " (scancel " + slurm_id + ")";
            std::cerr << "hippie-plan: " << what << ": cancelling the run" << how
                      << "; it will be recorded cancelled. Interrupt again to leave without waiting.\n";
            run.cancel();
            return;
        }
        std::cerr << "hippie-plan: " << what << " again: leaving without waiting";
        if (!slurm_id.empty()) std::cerr << "; Slurm job " << slurm_id << " may still be queued or running: check with squeue -j " << slurm_id
                                         << ", stop it with scancel " << slurm_id;
        std::cerr << "\n";
        exit_code = kExitRunFailed;
        QCoreApplication::exit(0);
    });
    run.start();
    QCoreApplication::exec();
    return exit_code;
}

}  // namespace

Command addDispatchCommand(CLI::App& app) {
    auto opts = std::make_shared<DispatchOptions>();
    CLI::App* cmd = app.add_subcommand("dispatch", "Run a plan on local and remote workers and record the run");
    CLI::Option* plan = cmd->add_option("--plan", opts->plan_file, "plan JSON file (or --resume)")->check(CLI::ExistingFile);
    cmd->add_option("--worker", opts->workers, "HOST:PORT of a hippie-agent, or local (repeat; rank 0 on the first)");
    cmd->add_option("--token-file", opts->token_file, "file holding the agents' token");
    cmd->add_option("--fingerprint", opts->fingerprint, "SHA-256 fingerprint of the agents' TLS certificate (pins it)");
    cmd->add_option("--db", opts->db, "run store (default: the studio's runs.sqlite)");
    cmd->add_option("--steps", opts->steps, "training steps")->check(CLI::Range(1, 1000000));
    cmd->add_option("--seed", opts->seed, "seed of parameters and data");
    cmd->add_option("--engine", opts->engine, "hippie-engine for local workers (default: beside hippie-plan, then PATH)");
    cmd->add_option("--work-dir", opts->work_dir, "work directory of local jobs");
    cmd->add_option("--graph", opts->graph_file, "the plan's model graph, for the prediction")->check(CLI::ExistingFile);
    cmd->add_option("--cluster", opts->cluster, "cluster preset or file for the prediction (default: the plan's)");
    CLI::Option* every = cmd->add_option("--checkpoint-every", opts->checkpoint_every,
                                         "every rank writes a checkpoint every N steps (and after the last) into a directory "
                                         "of the run (on an agent: under its work directory), so that it can be resumed")
                             ->check(CLI::Range(1, 1000000));
    CLI::Option* resume = cmd->add_option("--resume", opts->resume_run,
                                          "continue failed/cancelled/lost run RUN from the newest checkpoint every rank has, "
                                          "with its stored plan, steps, options and workers (agents: give --token-file again)")
                              ->check(CLI::Range(1LL, std::numeric_limits<long long>::max()));
    cmd->add_option("--data", opts->data_file,
                    "training data for every rank (hippie-engine run --data: token ids *.bin for GPT/BERT, or a tensor file), "
                    "as the workers see it; default: synthetic");
    cmd->add_option("--token-dtype", opts->token_dtype, "token-id files: uint16 (nanoGPT) or uint32")
        ->check(CLI::IsMember({"uint16", "uint32"}));
    cmd->add_flag("--progress", opts->progress, "one line per step instead of JSON lines");
    cmd->add_flag("--slurm", opts->slurm, "run on a Slurm cluster (sbatch here, or on --login through ssh) instead of --worker");
    cmd->add_option("--login", opts->login, "Slurm: login host to run sbatch/squeue/scancel on through ssh (your ssh config and keys)");
    cmd->add_option("--partition", opts->partition, "Slurm: partition");
    cmd->add_option("--account", opts->account, "Slurm: account");
    cmd->add_option("--time", opts->time_limit, "Slurm: time limit, e.g. 01:00:00");
    cmd->add_option("--extra-sbatch", opts->extra_sbatch, "Slurm: more sbatch options, e.g. '--qos=high --exclusive'");
    cmd->add_option("--slurm-dir", opts->slurm_dir, "Slurm: shared directory for the jobs' files (default: <work dir>/slurm, or "
                                                    "~/hippie-runs on the login host)");
    cmd->add_option("--slurm-engine", opts->slurm_engine, "Slurm: hippie-engine on the nodes (default: the one found here without "
                                                          "--login, else hippie-engine on the nodes' PATH)");
    cmd->add_option("--nodes", opts->nodes, "Slurm: nodes (default: from the plan's device mapping)")->check(CLI::Range(1, 100000));
    cmd->add_option("--tasks-per-node", opts->tasks_per_node, "Slurm: tasks per node (default: from the plan)")->check(CLI::Range(1, 100000));
    cmd->add_option("--gpus-per-node", opts->gpus_per_node, "Slurm: GPUs per node (default: from the plan's cluster; 0 for CPUs)")
        ->check(CLI::Range(0, 100000));
    cmd->add_flag("--show-script", opts->show_script, "Slurm: print the batch script and exit without submitting it");
    for (CLI::Option* o : {plan, every, cmd->get_option("--worker"), cmd->get_option("--slurm"), cmd->get_option("--steps"),
                           cmd->get_option("--seed"), cmd->get_option("--graph"), cmd->get_option("--cluster"),
                           cmd->get_option("--work-dir"), cmd->get_option("--login"), cmd->get_option("--slurm-dir"),
                           cmd->get_option("--slurm-engine"), cmd->get_option("--partition"), cmd->get_option("--account"),
                           cmd->get_option("--time"), cmd->get_option("--extra-sbatch"), cmd->get_option("--nodes"),
                           cmd->get_option("--tasks-per-node"), cmd->get_option("--gpus-per-node"), cmd->get_option("--data"),
                           cmd->get_option("--token-dtype")})
        resume->excludes(o);  // a resumed run keeps what is stored for it
    cmd->footer("Exit status: 0 the run succeeded, 2 bad arguments or a run that could not start, 3 the run failed, was "
                "cancelled or lost (the message is on stderr).");
    return {cmd, [opts] { return runDispatch(*opts); }};
}

}  // namespace hippie::cli
