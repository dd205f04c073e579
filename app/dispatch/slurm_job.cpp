#include "app/dispatch/slurm_job.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTimer>

#include <memory>

#include "app/jobs/protocol.h"

namespace hippie::dispatch {

using nlohmann::json;
using jobs::JobState;

namespace {

constexpr int kCommandTimeoutMs = 60 * 1000;       // one sbatch / squeue / scancel round (ssh included)
constexpr int kMaxPollFailures = 30;               // consecutive polls that got no answer: the cluster is lost
constexpr qint64 kMaxChunkBytes = 4 * 1024 * 1024; // what one poll reads of one file
const char* const kMarker = "@@HIPPIE ";

// Reasons a pending job keeps until someone changes the job or the cluster: waiting would hang.
const QStringList kHopelessReasons = {
    QStringLiteral("PartitionNodeLimit"), QStringLiteral("PartitionTimeLimit"), QStringLiteral("PartitionConfig"),
    QStringLiteral("BadConstraints"),     QStringLiteral("InvalidAccount"),     QStringLiteral("InvalidQOS"),
    QStringLiteral("AccountNotAllowed"),  QStringLiteral("QOSNotAllowed"),      QStringLiteral("DependencyNeverSatisfied")};
// PartitionConfig is what slurmctld says at submission of any job over a partition's limits; its
// next scheduling pass names the limit (PartitionTimeLimit, PartitionNodeLimit, ...). Seen that
// long without a better word, it is the reason given.
const QString kGenericPartitionReason = QStringLiteral("PartitionConfig");
constexpr qint64 kGenericReasonGraceMs = 15 * 1000;

const QStringList kFinalStates = {QStringLiteral("COMPLETED"), QStringLiteral("FAILED"),   QStringLiteral("CANCELLED"),
                                  QStringLiteral("TIMEOUT"),   QStringLiteral("NODE_FAIL"), QStringLiteral("OUT_OF_MEMORY"),
                                  QStringLiteral("PREEMPTED"), QStringLiteral("BOOT_FAIL"), QStringLiteral("DEADLINE")};

QString shellQuote(const QString& s) {
    QString q = s;
    q.replace(QLatin1Char('\''), QLatin1String("'\\''"));
    return QLatin1Char('\'') + q + QLatin1Char('\'');
}

bool isFinal(const QString& state) {
    for (const QString& f : kFinalStates)
        if (state.startsWith(f)) return true;
    return false;
}

// "JobState=FAILED Reason=NonZeroExitCode ..." -> value of key
QString scontrolField(const QString& line, const QString& key) {
    const QRegularExpression re(QStringLiteral("(?:^|\\s)%1=(\\S*)").arg(QRegularExpression::escape(key)));
    const auto m = re.match(line);
    return m.hasMatch() ? m.captured(1) : QString();
}

QString stdString(const QByteArray& b) { return QString::fromUtf8(b).trimmed(); }

}  // namespace

void SlurmJob::runShell(QObject* owner, const QString& login_host, const QString& script, const QByteArray& input, int timeout_ms,
                        std::function<void(int, const QByteArray&, const QByteArray&)> done) {
    auto* p = new QProcess(owner);
    auto fired = std::make_shared<bool>(false);
    auto callback = [p, fired, done](int code) {
        if (*fired) return;
        *fired = true;
        const QByteArray out = p->readAllStandardOutput(), err = p->readAllStandardError();
        p->deleteLater();
        done(code, out, err);
    };
    QObject::connect(p, &QProcess::finished, p, [p, callback](int code, QProcess::ExitStatus status) {
        callback(status == QProcess::NormalExit ? code : -1);
        (void)p;
    });
    QObject::connect(p, &QProcess::errorOccurred, p, [p, callback](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) {
            p->setProperty("why", p->errorString());
            callback(-1);
        }
    });
    QTimer::singleShot(timeout_ms, p, [p] { p->kill(); });
    if (login_host.isEmpty()) {
        p->start(QStringLiteral("bash"), {QStringLiteral("-c"), script});
    } else {
        // ssh hands one command string to the login's shell; BatchMode: fail instead of asking for a password.
        p->start(QStringLiteral("ssh"), {QStringLiteral("-o"), QStringLiteral("BatchMode=yes"), login_host, QStringLiteral("--"),
                                         QStringLiteral("bash -c %1").arg(shellQuote(script))});
    }
    if (!input.isEmpty()) p->write(input);
    p->closeWriteChannel();
}

SlurmJob::SlurmJob(jobs::JobSpec spec, SlurmTarget target, QString script, QString job_dir, QObject* parent)
    : QObject(parent), spec_(std::move(spec)), target_(std::move(target)) {
    info_.login_host = target_.login_host;
    info_.job_dir = std::move(job_dir);
    info_.script = std::move(script);
    timer_ = new QTimer(this);
    timer_->setInterval(static_cast<int>(target_.poll_interval_s * 1000));
    connect(timer_, &QTimer::timeout, this, &SlurmJob::poll);
}

SlurmJob::~SlurmJob() = default;

QString SlurmJob::shellDir() const { return shellQuote(info_.job_dir); }

void SlurmJob::emitEvent(json ev) { emit jobEvent(++seq_, ev); }

void SlurmJob::jobState(JobState s, const QString& message) {
    emitEvent(json{{"event", "job-state"}, {"state", jobs::toString(s)}, {"message", message.toStdString()}});
}

void SlurmJob::finish(JobState s, const QString& message) {
    if (finished_) return;
    finished_ = true;
    timer_->stop();
    jobState(s, message);
    emit infoChanged();
    emit finished(s, message);
}

void SlurmJob::start() {
    // The plan and the script go through stdin (one file per command: a reader of a pipe may
    // read ahead), so nothing of them needs shell quoting.
    const QByteArray plan = QByteArray::fromStdString(spec_.plan.dump(2)) + '\n';
    writeFile(QString::fromLatin1(kSlurmPlanFile), plan, [this] {
        writeFile(QString::fromLatin1(kSlurmScriptFile), info_.script.toUtf8(), [this] {
            if (cancel_requested_) finish(JobState::Cancelled, tr("cancelled before it was submitted"));
            else submit();
        });
    });
}

void SlurmJob::writeFile(const QString& name, const QByteArray& content, std::function<void()> then) {
    const QString cmd = QStringLiteral("set -e; mkdir -p %1; cat > %1/%2").arg(shellDir(), name);
    runShell(this, target_.login_host, cmd, content, kCommandTimeoutMs,
             [this, name, then](int code, const QByteArray&, const QByteArray& err) {
                 if (finished_) return;
                 if (code != 0) {
                     finish(JobState::Failed, tr("%1: cannot write %2/%3: %4")
                                                  .arg(target_.label(), info_.job_dir, name,
                                                       stdString(err).isEmpty() ? tr("exit code %1").arg(code) : stdString(err)));
                     return;
                 }
                 then();
             });
}

void SlurmJob::submit() {
    const QString cmd = QStringLiteral("cd %1 && sbatch --parsable %2").arg(shellDir(), QString::fromLatin1(kSlurmScriptFile));
    runShell(this, target_.login_host, cmd, {}, kCommandTimeoutMs, [this](int code, const QByteArray& out, const QByteArray& err) {
        if (finished_) return;
        // --parsable: "<id>" or "<id>;<cluster>"
        const QString id = stdString(out).section(QLatin1Char(';'), 0, 0);
        static const QRegularExpression digits(QStringLiteral("^\\d+$"));
        if (code != 0 || !digits.match(id).hasMatch()) {
            QString why = stdString(err);
            if (why.isEmpty()) why = code == -1 ? tr("sbatch did not answer (is Slurm installed there, is ssh set up?)") : tr("exit code %1").arg(code);
            finish(JobState::Failed, tr("Slurm refused the job: %1").arg(why));
            return;
        }
        info_.slurm_job_id = id;
        info_.state = QStringLiteral("PENDING");
        emit infoChanged();
        emitEvent(json{{"event", "slurm-submitted"}, {"job_id", id.toStdString()}, {"dir", info_.job_dir.toStdString()}});
        jobState(JobState::Queued, tr("Slurm job %1 submitted").arg(id));
        if (cancel_requested_) cancel();
        poll();
        timer_->start();
    });
}

void SlurmJob::cancel() {
    cancel_requested_ = true;
    if (finished_ || info_.slurm_job_id.isEmpty() || scancel_sent_) return;  // start()/submit() see the request
    scancel_sent_ = true;
    runShell(this, target_.login_host, QStringLiteral("scancel %1").arg(info_.slurm_job_id), {}, kCommandTimeoutMs,
             [this](int code, const QByteArray&, const QByteArray& err) {
                 if (code != 0 && !finished_)
                     emitEvent(json{{"event", "log"}, {"rank", -1}, {"stream", "slurm"},
                                    {"text", tr("scancel %1 failed: %2\n").arg(info_.slurm_job_id, stdString(err)).toStdString()}});
             });
}

void SlurmJob::poll() {
    if (polling_ || finished_ || info_.slurm_job_id.isEmpty()) return;
    polling_ = true;
    const QString& id = info_.slurm_job_id;
    QStringList files;
    for (int r = 0; r < spec_.world_size; ++r) files << slurmRankEventsFile(r) << slurmRankStderrFile(r);
    files << slurmBatchOutputFile();
    QString script = QStringLiteral(
                         "cd %1 || exit 3\n"
                         "q=$(squeue -h -j %2 -o '%T|%r|%N' 2>/dev/null)\n"
                         "printf '%3squeue\\n%s\\n' \"$q\"\n"
                         "case \"$q\" in ''|COMPLETED*|FAILED*|CANCELLED*|TIMEOUT*|NODE_FAIL*|OUT_OF_MEMORY*|PREEMPTED*|BOOT_FAIL*|DEADLINE*)\n"
                         "  printf '%3sacct\\n'; sacct -n -P -X -j %2 -o State,ExitCode,NodeList 2>/dev/null\n"
                         "  printf '%3scontrol\\n'; scontrol show job -o %2 2>/dev/null;;\n"
                         "esac\n")
                         .arg(shellDir(), id, QString::fromLatin1(kMarker));
    for (const QString& f : files)
        script += QStringLiteral("printf '\\n%1file %2\\n'; tail -c +%3 %2 2>/dev/null | head -c %4\n")
                      .arg(QString::fromLatin1(kMarker), f)
                      .arg(offsets_[f] + 1)
                      .arg(kMaxChunkBytes);
    runShell(this, target_.login_host, script, {}, kCommandTimeoutMs,
             [this](int code, const QByteArray& out, const QByteArray& err) { onPoll(code, out, err); });
}

void SlurmJob::onPoll(int code, const QByteArray& out, const QByteArray& err) {
    polling_ = false;
    if (finished_) return;
    if (code != 0) {
        if (++poll_failures_ >= kMaxPollFailures)
            finish(JobState::Lost, tr("%1 did not answer %2 polls of Slurm job %3: %4")
                                       .arg(target_.label())
                                       .arg(poll_failures_)
                                       .arg(info_.slurm_job_id, stdString(err)));
        return;
    }
    poll_failures_ = 0;
    const QByteArray file_marker = QByteArray("\n") + kMarker + "file ";
    const qsizetype first_file = out.indexOf(file_marker);
    const QString status = QString::fromUtf8(first_file < 0 ? out : out.left(first_file));
    const auto read_files = [&] {
        for (qsizetype at = first_file; at >= 0;) {
            const qsizetype name_at = at + file_marker.size();
            const qsizetype nl = out.indexOf('\n', name_at);
            if (nl < 0) break;
            const QString name = QString::fromUtf8(out.mid(name_at, nl - name_at));
            const qsizetype next = out.indexOf(file_marker, nl + 1);
            readFileChunk(name, out.mid(nl + 1, next < 0 ? -1 : next - nl - 1));
            at = next;
        }
    };
    QString section, squeue, sacct, scontrol;
    for (const QString& line : status.split(QLatin1Char('\n'))) {
        if (line.startsWith(QLatin1String(kMarker))) {
            section = line.mid(static_cast<qsizetype>(qstrlen(kMarker)));
            continue;
        }
        if (line.trimmed().isEmpty()) continue;
        if (section == QLatin1String("squeue") && squeue.isEmpty()) squeue = line.trimmed();
        else if (section == QLatin1String("sacct") && sacct.isEmpty()) sacct = line.trimmed();
        else if (section == QLatin1String("scontrol") && scontrol.isEmpty()) scontrol = line.trimmed();
    }
    // The state first (running before the lines it produced), but every line of a job that left
    // the queue before it is called ended.
    if (!squeue.isEmpty() && !isFinal(squeue.section(QLatin1Char('|'), 0, 0))) {
        queueState(squeue.section(QLatin1Char('|'), 0, 0), squeue.section(QLatin1Char('|'), 1, 1), squeue.section(QLatin1Char('|'), 2));
        if (!finished_) read_files();
        return;
    }
    read_files();
    // Out of the queue: accounting where the cluster keeps it, else the controller's memory.
    if (!sacct.isEmpty() && sacct.count(QLatin1Char('|')) >= 2) {
        ended(sacct.section(QLatin1Char('|'), 0, 0), sacct.section(QLatin1Char('|'), 1, 1), sacct.section(QLatin1Char('|'), 2));
    } else if (!scontrol.isEmpty()) {
        const QString state = scontrolField(scontrol, QStringLiteral("JobState"));
        if (!isFinal(state)) {  // between squeue and scontrol it may still be completing
            queueState(state, scontrolField(scontrol, QStringLiteral("Reason")), scontrolField(scontrol, QStringLiteral("NodeList")));
            return;  // its files were read above; the next poll reads what follows
        }
        ended(state, scontrolField(scontrol, QStringLiteral("ExitCode")), scontrolField(scontrol, QStringLiteral("NodeList")));
    } else {
        // Slurm forgot the job (MinJobAge passed) and keeps no accounting: what the ranks said is all there is.
        const bool all_done = static_cast<int>(done_ranks_.size()) == spec_.world_size;
        ended(all_done ? QStringLiteral("COMPLETED") : QStringLiteral("UNKNOWN"), QString(), info_.node_list);
    }
}

void SlurmJob::queueState(const QString& state, const QString& reason, const QString& nodes) {
    const bool changed = state != info_.state || reason != info_.reason || (!nodes.isEmpty() && nodes != info_.node_list);
    info_.state = state;
    if (state == QLatin1String("PENDING")) {
        info_.reason = reason;
        if (changed) {
            emit infoChanged();
            // "None": accepted, not yet looked at by the scheduler.
            jobState(JobState::Queued, reason.isEmpty() || reason == QLatin1String("None") ? tr("pending") : tr("pending: %1").arg(reason));
        }
        if (reason != kGenericPartitionReason) generic_reason_since_.invalidate();
        else if (!generic_reason_since_.isValid()) generic_reason_since_.start();
        const bool settled = reason != kGenericPartitionReason || generic_reason_since_.hasExpired(kGenericReasonGraceMs);
        if (kHopelessReasons.contains(reason) && settled && !scancel_sent_) {
            // It would wait forever: take it out of the queue, then end failed with the reason.
            scancel_sent_ = true;
            timer_->stop();
            const QString why = tr("Slurm cannot run job %1: %2 (pending reason); change the partition, the time limit or "
                                   "the layout")
                                    .arg(info_.slurm_job_id, reason);
            runShell(this, target_.login_host, QStringLiteral("scancel %1").arg(info_.slurm_job_id), {}, kCommandTimeoutMs,
                     [this, why](int code, const QByteArray&, const QByteArray& err) {
                         info_.state = QStringLiteral("CANCELLED");
                         finish(JobState::Failed, code == 0 ? why : tr("%1; scancel failed: %2").arg(why, stdString(err)));
                     });
        }
        return;
    }
    info_.reason.clear();
    if (!nodes.isEmpty() && nodes != QLatin1String("(null)")) info_.node_list = nodes;
    if (changed) emit infoChanged();
    if (!running_reported_) {
        running_reported_ = true;
        jobState(JobState::Running, tr("Slurm job %1 on %2").arg(info_.slurm_job_id, info_.node_list));
    }
}

void SlurmJob::ended(const QString& state, const QString& exit_code, const QString& nodes) {
    info_.state = state.section(QLatin1Char(' '), 0, 0);  // "CANCELLED by 0"
    info_.exit_code = exit_code;
    info_.reason.clear();
    if (!nodes.isEmpty() && nodes != QLatin1String("None assigned") && nodes != QLatin1String("(null)")) info_.node_list = nodes;
    // Per task: srun's word where it said one, else what the rank reported.
    info_.tasks = json::array();
    for (int r = 0; r < spec_.world_size; ++r) {
        QString s;
        if (const auto it = srun_tasks_.find(r); it != srun_tasks_.end()) s = it->second;
        else if (done_ranks_.count(r)) s = QStringLiteral("completed");
        else if (const auto e = rank_errors_.find(r); e != rank_errors_.end()) s = QStringLiteral("error: ") + e->second;
        else s = QStringLiteral("no report");
        info_.tasks.push_back(json{{"rank", r}, {"state", s.toStdString()}});
    }
    if (!running_reported_ && info_.state == QLatin1String("COMPLETED")) jobState(JobState::Running, {});
    const QString what = tr("Slurm job %1 %2").arg(info_.slurm_job_id, info_.state) +
                         (exit_code.isEmpty() ? QString() : tr(" (exit code %1)").arg(exit_code));
    if (info_.state == QLatin1String("COMPLETED")) {
        finish(JobState::Succeeded, {});
        return;
    }
    if (info_.state == QLatin1String("CANCELLED") && cancel_requested_) {
        finish(JobState::Cancelled, tr("cancelled (scancel %1)").arg(info_.slurm_job_id));
        return;
    }
    QStringList why{what};
    if (!srun_error_.isEmpty()) why << srun_error_;
    if (!rank_errors_.empty()) why << tr("rank %1: %2").arg(rank_errors_.begin()->first).arg(rank_errors_.begin()->second);
    // A rank that stopped before it could report (bad arguments, a rendezvous it could not make)
    // said why on its stderr only.
    else if (!rank_stderr_.empty()) why << tr("rank %1: %2").arg(rank_stderr_.begin()->first).arg(rank_stderr_.begin()->second);
    finish(info_.state == QLatin1String("CANCELLED") ? JobState::Cancelled : JobState::Failed, why.join(QStringLiteral("; ")));
}

bool srunConsequence(const QString& word) {
    return word.startsWith(QLatin1String("Exited with exit code")) || word == QLatin1String("Broken pipe") ||
           word == QLatin1String("Terminated");
}

void SlurmJob::readFileChunk(const QString& name, const QByteArray& chunk) {
    if (chunk.isEmpty()) return;
    offsets_[name] += chunk.size();
    QByteArray& buf = partial_[name];
    buf += chunk;
    for (qsizetype nl; (nl = buf.indexOf('\n')) >= 0;) {
        onLine(name, QString::fromUtf8(buf.left(nl)));
        buf.remove(0, nl + 1);
    }
}

void SlurmJob::onLine(const QString& file, const QString& line) {
    static const QRegularExpression rank_file(QStringLiteral("^rank-(\\d+)\\.(jsonl|err)$"));
    const auto m = rank_file.match(file);
    if (!m.hasMatch()) {  // slurm.out: the script's and srun's own messages
        static const QRegularExpression task(QStringLiteral("srun: error: \\S+: tasks? ([0-9,\\-]+): (.+)$"));
        if (const auto t = task.match(line); t.hasMatch()) {
            for (const QString& part : t.captured(1).split(QLatin1Char(','))) {
                const int lo = part.section(QLatin1Char('-'), 0, 0).toInt();
                const int hi = part.contains(QLatin1Char('-')) ? part.section(QLatin1Char('-'), 1, 1).toInt() : lo;
                for (int r = lo; r <= hi && r < spec_.world_size; ++r) srun_tasks_.emplace(r, t.captured(2).trimmed());
            }
            // The cause first: a task that died ("Killed") makes the others exit with an error or
            // die of a broken pipe, and srun may name those before it.
            const bool consequence = srunConsequence(t.captured(2).trimmed());
            if (srun_error_.isEmpty() || (srun_error_consequence_ && !consequence)) {
                srun_error_ = line.trimmed();
                srun_error_consequence_ = consequence;
            }
        }
        emitEvent(json{{"event", "log"}, {"rank", -1}, {"stream", "slurm"}, {"text", (line + QLatin1Char('\n')).toStdString()}});
        return;
    }
    const int rank = m.captured(1).toInt();
    if (m.captured(2) == QLatin1String("err")) {
        if (!line.trimmed().isEmpty()) rank_stderr_[rank] = line.trimmed();
        emitEvent(json{{"event", "log"}, {"rank", rank}, {"stream", "stderr"}, {"text", (line + QLatin1Char('\n')).toStdString()}});
        return;
    }
    json ev;
    try {
        ev = json::parse(line.toStdString());
    } catch (const json::exception&) {
        ev = nullptr;
    }
    if (!ev.is_object()) {
        emitEvent(json{{"event", "log"}, {"rank", rank}, {"stream", "stdout"}, {"text", (line + QLatin1Char('\n')).toStdString()}});
        return;
    }
    if (!ev.contains("rank")) ev["rank"] = rank;
    const std::string kind = ev.value("event", std::string());
    if (kind == "done") done_ranks_.insert(rank);
    if (kind == "error" && !rank_errors_.count(rank)) rank_errors_[rank] = QString::fromStdString(ev.value("message", std::string()));
    emitEvent(ev);
}

}  // namespace hippie::dispatch
