#pragma once
// Every run in one SQLite file (Qt SQL, QSQLITE): models, clusters, plans, runs, metrics, events
// and logs, with foreign keys on, WAL journal mode (verified on open), and a schema version in
// PRAGMA user_version brought up to date by the ordered migrations in resources/migrations/
// (NNN_name.sql, each applied once, in its own transaction).
//
// Runs move forward only: queued -> running -> succeeded | failed | cancelled | lost. A run in a
// final state never changes again, except that a failed, cancelled or lost run may start its
// next attempt (startNextAttempt: resumed from its checkpoints), which keeps what the previous
// attempt was in run_attempts. Nothing written is rewritten or deleted: events are appended with
// INSERT OR IGNORE on (run, attempt, source, seq), so a replayed event is stored once.
//
// A RunStore is one connection and belongs to the thread that opened it. Errors (a file that is
// not a database, a newer schema than this build knows, a full disk) throw hippie::Error naming
// the file and what to do.
#include <QString>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/jobs/protocol.h"
#include "planners/common/error.h"

namespace hippie::store {

using RunState = hippie::jobs::JobState;

// "queued", "running", "succeeded", "failed", "cancelled", "lost": the names stored in runs.state.
QString runStateName(RunState s);
std::optional<RunState> runStateFromName(const QString& name);
bool isFinalState(RunState s);  // succeeded, failed, cancelled, lost

// Metric names RunSummary reads before falling back to the ranks' "done" events.
inline constexpr const char* kMetricStepS = "measured_step_s";       // seconds per training step
inline constexpr const char* kMetricSamplesPerS = "samples_per_s";
inline constexpr const char* kMetricFinalLoss = "final_loss";

// A write that failed. transient(): the disk was full, busy or unreadable, so trying the same
// write again later may succeed; otherwise the write itself is wrong (e.g. an unknown run id).
class WriteError : public hippie::Error {
public:
    WriteError(const std::string& message, bool transient) : hippie::Error(message), transient_(transient) {}
    bool transient() const { return transient_; }

private:
    bool transient_;
};

struct NewRun {
    qint64 plan_id = 0;
    QString job_id;                 // the agents' job id
    nlohmann::json workers = nlohmann::json::array();  // [{"host","port","first_rank","rank_count"}]
    int steps = 0;
    QString note;
    QString checkpoint_dir;         // where the ranks write checkpoints, as the workers see it; empty: none
    int checkpoint_every = 0;       // steps between checkpoints; 0: none
    nlohmann::json options = nlohmann::json::object();  // what running it again needs (dispatch/run_resume.h)
};

struct StoredEvent {
    int source = 0;                 // index of the worker in the run's workers
    qint64 seq = 0;                 // the agent's seq
    nlohmann::json event;           // as received; "rank" and "event" are also kept as columns
    int attempt = 1;                // the run's attempt that sent it (seq starts again in each)
};

// An earlier attempt of a run that was resumed, as it was when the next one started.
struct RunAttempt {
    int attempt = 1;
    QString job_id;
    nlohmann::json workers;         // as runs.workers said during that attempt
    RunState state = RunState::Failed;
    QString message;
    qint64 started_ms = 0, ended_ms = 0;
};

struct RunSummary {
    qint64 id = 0;
    qint64 plan_id = 0;
    QString job_id;
    QString model;                  // the plan's model name
    QString cluster;                // the plan's cluster name
    QString planner;
    RunState state = RunState::Queued;
    QString message;                // why it failed / was lost
    qint64 created_ms = 0, started_ms = 0, ended_ms = 0;  // epoch ms; 0 = not yet
    nlohmann::json workers;
    int steps = 0;
    int attempt = 1;                // 1 + the times it was resumed
    QString checkpoint_dir;         // empty: it writes no checkpoints
    int checkpoint_every = 0;
    nlohmann::json options = nlohmann::json::object();
    std::optional<double> predicted_step_s, measured_step_s, measured_samples_per_s, final_loss;
    std::optional<double> errorPercent() const;  // (measured - predicted) / predicted x 100
};
// Where the summary's numbers come from: measured_* and final_loss from the metrics of those
// names (kMetric*) when set, else from the ranks' "done" events (the slowest rank's mean_step_s
// and samples_per_s, the mean of the ranks' non-null loss); predicted_step_s from the plan's
// predicted metrics ("iteration_time_s" of TraceMetrics JSON).

// What Slurm said about a run on a Slurm cluster (dispatch/slurm_job.h fills it).
struct SlurmRecord {
    QString login_host;      // empty: local
    QString job_dir;
    QString slurm_job_id;
    QString script;
    QString state;           // Slurm's job state
    QString reason;          // pending reason
    QString node_list;
    QString exit_code;
    nlohmann::json tasks = nlohmann::json::array();
};

struct RunFilter {
    std::optional<RunState> state;
    QString text;                   // matched against model, cluster, planner, job id
    int limit = 1000;
};

struct RunDetails {
    RunSummary summary;
    nlohmann::json plan, cluster, model, predicted_metrics;
    std::vector<StoredEvent> events;                       // in (attempt, source, seq) order
    std::vector<RunAttempt> attempts;                      // the earlier attempts, oldest first
    std::vector<std::pair<QString, double>> metrics;       // name -> value
    struct Log { int rank; QString stream; QString text; };
    std::vector<Log> logs;
    nlohmann::json measured_trace;                         // Trace JSON merged from the ranks' "trace" events, or null
    QString measured_trace_error;                          // why measured_trace is null although traces were stored
    std::optional<SlurmRecord> slurm;                      // runs on a Slurm cluster
};

class RunStore {
public:
    explicit RunStore(const QString& path);  // opens (creating the file) and migrates
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    static QString defaultPath();  // <AppDataLocation>/runs.sqlite
    static int latestSchemaVersion();
    const QString& path() const { return path_; }
    int schemaVersion() const;
    QString journalMode() const;   // "wal"

    qint64 saveModel(const nlohmann::json& model);      // the same JSON twice gives the same id
    qint64 saveCluster(const nlohmann::json& cluster);
    // model_id / cluster_id 0: not stored (the plan's own "model" and "cluster" name them). The same
    // plan, ids and prediction twice give the same id.
    qint64 savePlan(const nlohmann::json& plan, qint64 model_id, qint64 cluster_id,
                    const nlohmann::json& predicted_metrics);

    qint64 createRun(const NewRun& run);                // state queued
    // Forward moves only; returns false (and changes nothing) for a run already final.
    // Also false for a move that is not forward (running -> queued, or to the state it is in).
    // Entering running sets started_ms, entering a final state ended_ms; a non-empty message is kept.
    // Throws for an unknown run.
    bool setRunState(qint64 run, RunState state, const QString& message = {});
    // A failed, cancelled or lost run starts its next attempt under a new job id, driven by the
    // workers now given: the current attempt is kept in run_attempts, and the run becomes running
    // with attempt + 1 (the message and end time are cleared, started_ms is now). Returns the new
    // attempt. Throws WriteError for an unknown run or one in another state.
    int startNextAttempt(qint64 run, const QString& job_id, const nlohmann::json& workers);
    void appendEvents(qint64 run, const std::vector<StoredEvent>& events);  // one transaction
    void appendLog(qint64 run, int rank, const QString& stream, const QString& text);
    void setMetric(qint64 run, const QString& name, double value);
    // Inserts or updates the run's Slurm record (the latest word of Slurm on it).
    void saveSlurmJob(qint64 run, const SlurmRecord& record);
    std::optional<SlurmRecord> slurmJob(qint64 run) const;

    // Runs in one transaction: everything `work` writes through this store is committed together,
    // or (when it throws) nothing is. Calls nest: an inner one joins the outer transaction.
    void inTransaction(const std::function<void()>& work);

    // Newest first.
    std::vector<RunSummary> listRuns(const RunFilter& filter = {}) const;
    RunDetails runDetails(qint64 run) const;            // throws for an unknown id
    std::optional<qint64> runByJob(const QString& job_id) const;

    // On start: runs left queued or running whose agents are not reachable become lost.
    int markLostRuns(const std::function<bool(const RunSummary&)>& still_reachable);

    QString integrityCheck() const;  // PRAGMA integrity_check: "ok", or what is wrong

private:
    void open();
    void migrate();
    QString path_;
    QString connection_;
    int transaction_depth_ = 0;
};

}  // namespace hippie::store
