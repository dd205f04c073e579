#pragma once
// RunController: one run of a plan on chosen workers, recorded in the run store.
//
// The ranks are split among the workers (rank_split.h). The worker hosting rank 0 is submitted
// first: a remote agent answers the rendezvous port in "accepted", the local machine picks one
// itself; then the others are submitted with that port. The local machine runs its share through
// JobRunner (no socket), agents through AgentClient. Every event of every worker is stored with
// its worker index and seq through an EventWriter (its own thread); the run moves queued ->
// running -> succeeded | failed | cancelled | lost, and the measured metrics are stored when it
// ends. Model, cluster and plan (with the predicted metrics) are saved first, off this thread.
//
// With checkpoint_every, every rank writes checkpoints into a directory of the run (local
// workers: <work_root>/checkpoints/<job id>; Slurm: <job dir>/checkpoints on the shared file
// system; an agent: <its work dir>/checkpoints/<job id>, named by JobSpec::checkpoint_key), which
// the store records with the options the run needs to start again. A request with resume_run
// (dispatch/run_resume.h builds it) starts that stored run's next attempt from the newest
// checkpoint every rank has: same plan, steps, options and workers, a new job id, the same run
// id; its events are stored under the new attempt.
//
// When the request has a graph and a cluster, the plan is simulated for the predicted Trace.
// Without a graph, the plan's model is built here (a zoo model or preset, or its graph file);
// without a cluster, the plan's cluster preset is used. A prediction that cannot be made is reported, not faked.
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>

#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/dispatch/rank_split.h"
#include "app/dispatch/slurm_script.h"
#include "app/dispatch/step_tally.h"
#include "app/jobs/agent_client.h"
#include "app/jobs/protocol.h"
#include "app/store/run_store.h"
#include "planners/cluster/cluster.h"
#include "planners/model/graph.h"
#include "planners/schedule/plan.h"
#include "planners/sim/trace.h"


namespace hippie::store {
class EventWriter;
}
namespace hippie::jobs {
class JobRunner;
}

namespace hippie::dispatch {

class SlurmJob;

struct WorkerTarget {
    bool local = false;           // this machine, through JobRunner
    std::optional<SlurmTarget> slurm;  // a Slurm cluster, through SlurmJob: runs the whole plan alone
    jobs::AgentAddress address;   // a remote agent
    int capacity = 0;             // devices it offers (from its probe), 0 = unknown
    QString label() const;        // "local", "slurm[@host]" or host:port
};

struct RunRequest {
    Plan plan;
    std::optional<Graph> graph;      // what the plan was made for: prediction and the stored model
    std::optional<Cluster> cluster;  // the prediction's cluster, stored with the run
    int steps = 5;
    unsigned long long seed = 0;
    std::vector<WorkerTarget> workers;
    QString engine;     // for local workers; empty: jobs::findEngine()
    QString work_root;  // local jobs go to <work_root>/jobs/<id>; empty: <AppDataLocation>/work
    QString db_path;    // empty: RunStore::defaultPath()
    bool trace_every_step = false;
    QString note;       // stored with the run; empty: who dispatched it
    QString job_id;     // empty: a fresh one (newJobId)
    int checkpoint_every = 0;  // > 0: every rank writes a checkpoint every N steps and after the last
    qint64 resume_run = 0;     // > 0: start this stored run's next attempt from its checkpoints
    QString checkpoint_dir;    // with resume_run: the run's (as stored); otherwise chosen by start()
    // Training data for every rank (hippie-engine run --data): a path as the workers see it
    // (local workers: this machine's; agents: their hosts'; Slurm: the nodes'); empty: synthetic.
    QString data_file;
    QString token_dtype;       // token-id files (*.bin): uint16 or uint32; empty: the engine's default
};

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(RunRequest request, QObject* parent = nullptr);
    ~RunController() override;

    // Checks the request, then stores and submits in the background -> stored, stateChanged...,
    // finished. A request that cannot start (no engine for a local worker, too many workers, a
    // placement plan) finishes failed at once with the message and stores nothing.
    void start();
    void cancel();

    const RunRequest& request() const { return request_; }
    // For a run on a Slurm cluster: the batch script it will submit (shown before start()), and
    // the job's directory; empty for other runs. Throws hippie::Error for a layout that cannot
    // hold the plan.
    QString slurmScript() const;
    QString slurmJobDir() const;
    const std::optional<store::SlurmRecord>& slurmRecord() const { return slurm_record_; }
    QString jobId() const { return job_id_; }
    qint64 runId() const { return run_id_; }
    int attempt() const { return attempt_; }               // 1, or the attempt a resume started
    QString checkpointDir() const { return checkpoint_dir_; }  // empty: no checkpoints
    QString dbPath() const { return db_path_; }
    jobs::JobState state() const { return state_; }
    QString message() const { return message_; }
    bool isFinished() const { return finished_; }
    const std::vector<RankShare>& shares() const { return shares_; }
    const std::optional<Trace>& predicted() const { return predicted_; }
    const std::optional<Trace>& measured() const { return measured_; }
    QString predictionNote() const { return prediction_note_; }  // why there is no prediction
    const std::optional<Graph>& graph() const { return graph_; }
    const std::optional<Cluster>& cluster() const { return cluster_; }
    // The stderr a rank wrote, as received.
    const std::map<int, QString>& stderrByRank() const { return stderr_; }
    std::optional<double> measuredStepSeconds() const;  // the slowest rank's mean step
    std::optional<double> predictedStepSeconds() const;
    std::optional<double> errorPercent() const;         // (measured - predicted) / predicted x 100

signals:
    void predictionReady();
    void stored(qint64 run_id);
    void stateChanged(hippie::jobs::JobState state, const QString& message);
    void workerStateChanged(int worker, const QString& text);
    void engineEvent(int worker, qint64 seq, const nlohmann::json& event);
    void slurmChanged();  // slurmRecord() has news (submitted, pending reason, nodes, end)
    void measuredTraceChanged();
    void logReceived(int rank, const QString& stream, const QString& text);
    void finished(hippie::jobs::JobState state, const QString& message);

private:
    struct Worker {
        WorkerTarget target;
        RankShare share;
        jobs::JobRunner* runner = nullptr;
        jobs::AgentClient* client = nullptr;
        SlurmJob* slurm_job = nullptr;
        bool ready = false;
        bool submitted = false;
        bool ended = false;
        int reconnects = 0;
        jobs::JobState state = jobs::JobState::Queued;
        QString message;
    };

    void fail(const QString& message);           // before anything was stored
    void prepareGraph();                          // -> predict()
    void predict();
    void storeRun();
    void onStored(qint64 run_id, int attempt, const QString& error);
    QString checkpointRefusal() const;  // why this request cannot have checkpoints, or empty
    QString chooseCheckpointDir() const;
    void connectWorkers();
    void onWorkerReady(int worker);
    void submit(int worker);
    jobs::JobSpec specFor(int worker) const;
    void onEvent(int worker, qint64 seq, const nlohmann::json& event);
    void workerEnded(int worker, jobs::JobState state, const QString& message);
    void setState(jobs::JobState state, const QString& message);
    void finish();
    void submitSlurm(int worker);
    void storeSlurmRecord();

    RunRequest request_;
    QString job_id_;
    QString db_path_;
    QString engine_;
    std::vector<Worker> workers_;
    std::vector<RankShare> shares_;
    int master_port_ = 0;
    QString master_addr_;
    qint64 run_id_ = 0;
    int attempt_ = 1;
    QString checkpoint_dir_;
    store::EventWriter* writer_ = nullptr;
    jobs::JobState state_ = jobs::JobState::Queued;
    QString message_;
    bool cancelled_ = false;
    bool finished_ = false;
    bool finishing_ = false;

    std::optional<Graph> graph_;
    std::optional<Cluster> cluster_;
    std::optional<Trace> predicted_;
    std::optional<Trace> measured_;
    QString prediction_note_;
    QThreadPool pool_;  // storing and the last flush, off the caller's thread

    std::map<int, nlohmann::json> traces_;  // rank -> its latest "trace" event
    std::map<int, nlohmann::json> done_;    // rank -> its "done" event
    std::map<int, StepTally> steps_;        // rank -> its "step" events, for ranks that end without "done"
    std::map<int, QString> stderr_;
    std::optional<store::SlurmRecord> slurm_record_;
};

// A fresh job id: "run-<yyyyMMdd-hhmmss>-<6 random hex>", valid for jobs::isValidJobId.
QString newJobId();

}  // namespace hippie::dispatch
