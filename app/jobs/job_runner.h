#pragma once
// JobRunner: one job on this machine. It checks a JobSpec, makes the job's work directory
// (<work root>/jobs/<id>/, plan.json written there), starts the job's ranks with EngineLauncher
// and keeps every event with seq numbers from 1 (in the work directory's events.jsonl, see
// event_log.h): the engine's JSON lines and the runner's own {"event":"job-state",...} and
// {"event":"log","rank","stream","text"} events.
// The agent serves one JobRunner per job; the studio uses JobRunner directly for runs on the
// local machine (the same code, no socket).
#include <QObject>
#include <QString>

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/jobs/event_log.h"
#include "app/jobs/launcher.h"
#include "app/jobs/protocol.h"

namespace hippie::jobs {

struct JobRunnerOptions {
    QString work_root;   // jobs go to <work_root>/jobs/<id>/
    QString engine;      // hippie-engine; empty: jobs are rejected as "not installed"
    QString port_host;   // where to look for a free rendezvous port when master_port is 0 (default: master_addr)
    int grace_ms = 5000;
    int kill_ms = 3000;
    // Checkpoints. A client names no directory on an agent's host: the agent derives this one
    // from JobSpec::checkpoint_key; RunController's local share gives its own.
    QString checkpoint_dir = {};  // absolute; empty: none
    int checkpoint_every = 0;
    bool resume = false;       // start from the newest checkpoint every rank has there
};

class JobRunner : public QObject {
    Q_OBJECT
public:
    JobRunner(JobSpec spec, JobRunnerOptions options, QObject* parent = nullptr);
    ~JobRunner() override;

    // Checks the job and makes its work directory; throws hippie::Error naming what is wrong.
    // Picks the rendezvous port when this runner hosts rank 0 and master_port is 0.
    void prepare();
    // prepare() first (unless done), then starts the ranks; throws hippie::Error.
    void start();
    void cancel();

    const JobSpec& spec() const { return spec_; }
    QString id() const { return QString::fromStdString(spec_.id); }
    QString workDir() const { return work_dir_; }
    int masterPort() const { return spec_.master_port; }
    JobState state() const { return state_; }
    QString message() const { return message_; }
    qint64 lastSeq() const { return log_.size(); }
    // Events with seq > after_seq, in order.
    std::vector<std::pair<qint64, nlohmann::json>> eventsAfter(qint64 after_seq) const;
    // Event `seq` as compact JSON, as it is sent (1 .. lastSeq()).
    std::string eventLine(qint64 seq) const { return log_.line(seq); }
    const EventLog& eventLog() const { return log_; }
    nlohmann::json statusJson() const;  // {"id","state","last_seq","message"}

    // Checks that don't touch the disk (also used by the agent before it counts a job).
    static void checkSpec(const JobSpec& spec);
    // Picks a free TCP port on host (0 if none could be bound).
    static int freePort(const QString& host);

signals:
    void jobEvent(const QString& job, qint64 seq, const nlohmann::json& event);
    void finished(hippie::jobs::JobState state, const QString& message);

private:
    void append(nlohmann::json event);
    void onLauncherFinished(JobState state, const QString& message);
    QString resolveInsideWorkDir(const std::string& relative, const char* field) const;

    JobSpec spec_;
    JobRunnerOptions options_;
    QString work_dir_;
    QString dump_params_;  // absolute
    bool prepared_ = false;
    JobState state_ = JobState::Queued;
    QString message_;
    EventLog log_;
    EngineLauncher* launcher_ = nullptr;
};

}  // namespace hippie::jobs
