#pragma once
// SlurmJob: one run of a plan as one Slurm job, here or through ssh to a login host. It writes
// the job's directory (plan.json, job.sbatch), submits it with `sbatch --parsable` from there,
// then polls: squeue for pending (with Slurm's reason) and running (with the node list); once
// the job leaves the queue, sacct where accounting answers, else `scontrol show job`. Each
// poll also reads what the tasks' files grew by (rank-<r>.jsonl: the engine's JSON lines;
// rank-<r>.err; slurm.out: srun's messages) and emits those lines as events, the same events
// JobRunner emits for local ranks. cancel() runs scancel. Every shell command is one `bash -c`
// (prefixed by `ssh -o BatchMode=yes HOST` for a login host: the user's own keys and config).
#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "app/dispatch/slurm_script.h"
#include "app/jobs/protocol.h"

class QTimer;

namespace hippie::dispatch {

// What the run store keeps of a Slurm run (store: slurm_jobs).
struct SlurmJobInfo {
    QString login_host;       // empty: local
    QString job_dir;          // where the job's files are (on the login host for ssh)
    QString slurm_job_id;     // empty until sbatch answered
    QString script;
    QString state;            // Slurm's: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ...
    QString reason;           // squeue's %r while pending
    QString node_list;
    QString exit_code;        // "0:0"
    nlohmann::json tasks = nlohmann::json::array();  // [{"rank","state"}] once it ended
};

// Whether srun's word on a task ("Exited with exit code 1", "Broken pipe", "Terminated",
// "Killed", ...) is what a task shows when another task's end took it down: an exit with an
// error code (a collective failed), SIGPIPE (a peer's socket closed) or SIGTERM (srun stopping
// the step). The run's message names the cause first: a task that died otherwise.
bool srunConsequence(const QString& word);

class SlurmJob : public QObject {
    Q_OBJECT
public:
    // job_dir: absolute here; on a login host absolute or relative to the login's home.
    SlurmJob(jobs::JobSpec spec, SlurmTarget target, QString script, QString job_dir, QObject* parent = nullptr);
    ~SlurmJob() override;

    void start();
    void cancel();
    const SlurmJobInfo& info() const { return info_; }
    bool isFinished() const { return finished_; }

    // Runs `bash -c script` here or on login_host through ssh; done(exit code, stdout, stderr)
    // from the event loop; a command that outlives timeout_ms is killed (exit code -1).
    static void runShell(QObject* owner, const QString& login_host, const QString& script, const QByteArray& input,
                         int timeout_ms, std::function<void(int, const QByteArray&, const QByteArray&)> done);

signals:
    void jobEvent(qint64 seq, const nlohmann::json& event);
    void infoChanged();
    void finished(hippie::jobs::JobState state, const QString& message);

private:
    void writeFile(const QString& name, const QByteArray& content, std::function<void()> then);
    void submit();
    void poll();
    void onPoll(int code, const QByteArray& out, const QByteArray& err);
    void readFileChunk(const QString& name, const QByteArray& chunk);
    void onLine(const QString& file, const QString& line);
    void queueState(const QString& state, const QString& reason, const QString& nodes);
    void ended(const QString& state, const QString& exit_code, const QString& nodes);
    void emitEvent(nlohmann::json ev);
    void jobState(jobs::JobState s, const QString& message);
    void finish(jobs::JobState s, const QString& message);
    QString shellDir() const;  // job_dir quoted for the shell

    jobs::JobSpec spec_;
    SlurmTarget target_;
    SlurmJobInfo info_;
    QTimer* timer_ = nullptr;
    qint64 seq_ = 0;
    bool polling_ = false;
    bool cancel_requested_ = false;
    bool scancel_sent_ = false;
    bool running_reported_ = false;
    bool finished_ = false;
    int poll_failures_ = 0;
    QElapsedTimer generic_reason_since_;  // pending with PartitionConfig since (invalid: not now)
    std::map<QString, qint64> offsets_;   // file -> bytes consumed
    std::map<QString, QByteArray> partial_;
    std::set<int> done_ranks_;
    std::map<int, QString> rank_errors_;  // rank -> its error event's message
    std::map<int, QString> rank_stderr_;  // rank -> the last line of its stderr
    std::map<int, QString> srun_tasks_;   // task -> srun's word on it ("Killed", "Exited with exit code 1")
    QString srun_error_;                  // the first "srun: error:" line on a cause (not srunConsequence), else the first
    bool srun_error_consequence_ = false; // srun_error_ is a consequence (srunConsequence)
};

}  // namespace hippie::dispatch
