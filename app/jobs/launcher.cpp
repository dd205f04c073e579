#include "app/jobs/launcher.h"

#include <sys/prctl.h>

#include <csignal>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace hippie::jobs {

using nlohmann::json;

namespace {

// An engine line longer than this cannot travel inside one protocol message.
constexpr qsizetype kMaxEngineLineBytes = kMaxMessageBytes - 64 * 1024;

QString number(double v) { return QString::number(v, 'g', 17); }

}  // namespace

QStringList LaunchSpec::arguments(int rank) const {
    QStringList a = {QStringLiteral("run"),           QStringLiteral("--plan"),        plan_file,
                     QStringLiteral("--rank"),        QString::number(rank),           QStringLiteral("--world-size"),
                     QString::number(world_size),     QStringLiteral("--master-addr"), master_addr,
                     QStringLiteral("--master-port"), QString::number(master_port),    QStringLiteral("--steps"),
                     QString::number(steps),          QStringLiteral("--seed"),        QString::number(seed)};
    if (lr > 0) a << QStringLiteral("--lr") << number(lr);
    if (op_timeout_s > 0) a << QStringLiteral("--op-timeout") << number(op_timeout_s);
    if (trace_every_step) a << QStringLiteral("--trace-every-step");
    if (!dump_params.isEmpty()) a << QStringLiteral("--dump-params") << dump_params;
    if (!checkpoint_dir.isEmpty()) a << QStringLiteral("--checkpoint-dir") << checkpoint_dir;
    if (!checkpoint_dir.isEmpty() && checkpoint_every > 0) a << QStringLiteral("--checkpoint-every") << QString::number(checkpoint_every);
    if (!checkpoint_dir.isEmpty() && resume) a << QStringLiteral("--resume");
    if (!data_file.isEmpty()) a << QStringLiteral("--data") << data_file;
    if (!token_dtype.isEmpty()) a << QStringLiteral("--token-dtype") << token_dtype;
    return a;
}

QString findEngine(const QString& explicit_path) {
    const auto usable = [](const QString& p) {
        const QFileInfo f(p);
        return f.isFile() && f.isExecutable();
    };
    if (!explicit_path.isEmpty()) return usable(explicit_path) ? QFileInfo(explicit_path).absoluteFilePath() : QString();
    if (const QString configured = qEnvironmentVariable("HIPPIE_ENGINE"); !configured.isEmpty())
        return usable(configured) ? QFileInfo(configured).absoluteFilePath() : QString();
    if (QCoreApplication::instance()) {
        const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("hippie-engine"));
        if (usable(beside)) return beside;
    }
    return QStandardPaths::findExecutable(QStringLiteral("hippie-engine"));
}

QString engineMissingMessage() {
    return QStringLiteral(
        "hippie-engine is not installed on this agent (build with LibTorch so that hippie-engine is built, install the "
        "hippie-engine package, or give its path with --engine)");
}

EngineLauncher::EngineLauncher(QObject* parent) : QObject(parent) {
    grace_timer_.setSingleShot(true);
    kill_timer_.setSingleShot(true);
    connect(&grace_timer_, &QTimer::timeout, this, [this] { killAll(); });
    connect(&kill_timer_, &QTimer::timeout, this, [this] { killAll(); });
}

EngineLauncher::~EngineLauncher() {
    for (auto& r : ranks_) {
        if (!r->process) continue;
        r->process->disconnect(this);
        if (r->process->state() != QProcess::NotRunning) {
            r->process->kill();
            r->process->waitForFinished(2000);
        }
    }
}

QList<qint64> EngineLauncher::pids() const {
    QList<qint64> out;
    for (const auto& r : ranks_)
        if (r->running && r->process) out << r->process->processId();
    return out;
}

void EngineLauncher::start(const LaunchSpec& spec) {
    Q_ASSERT(ranks_.empty());
    spec_ = spec;
    for (int i = 0; i < spec.rank_count; ++i) {
        auto r = std::make_unique<Rank>();
        r->rank = spec.first_rank + i;
        r->process = new QProcess(this);
        r->process->setWorkingDirectory(spec.work_dir);
        r->process->setProgram(spec.engine);
        r->process->setArguments(spec.arguments(r->rank));
        r->process->setStandardInputFile(QProcess::nullDevice());
        // Ranks die with the process that started them: an agent killed mid-run leaves no
        // orphaned training behind to hold the host's devices.
        r->process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
        Rank* rp = r.get();
        connect(r->process, &QProcess::readyReadStandardOutput, this, [this, rp] { onStdout(*rp); });
        connect(r->process, &QProcess::readyReadStandardError, this, [this, rp] { onStderr(*rp); });
        connect(r->process, &QProcess::started, this, [this, rp] { onStarted(*rp); });
        connect(r->process, &QProcess::finished, this,
                [this, rp](int code, QProcess::ExitStatus status) { onFinished(*rp, code, status); });
        connect(r->process, &QProcess::errorOccurred, this, [this, rp](QProcess::ProcessError e) { onError(*rp, e); });
        ranks_.push_back(std::move(r));
    }
    running_ = static_cast<int>(ranks_.size());
    for (auto& r : ranks_) {
        r->running = true;
        r->process->start();
    }
}

void EngineLauncher::cancel() {
    if (finished_ || cancelled_) return;
    cancelled_ = true;
    grace_timer_.stop();
    for (auto& r : ranks_)
        if (r->running && r->process->state() == QProcess::Running) {
            r->killed_by_us = true;
            r->process->terminate();
        }
    kill_timer_.start(spec_.kill_ms);
    finishIfDone();
}

void EngineLauncher::onStarted(Rank& r) {
    r.started = true;
    if (cancelled_ || failed_) r.killed_by_us = true;
    if (cancelled_) r.process->terminate();
    else if (failed_) r.process->kill();
    if (++started_ == static_cast<int>(ranks_.size())) {
        json ranks = json::array();
        for (const auto& x : ranks_) ranks.push_back({{"rank", x->rank}, {"pid", x->process->processId()}});
        emit allStarted(ranks);
    }
}

void EngineLauncher::onStdout(Rank& r) {
    r.partial.append(r.process->readAllStandardOutput());
    for (qsizetype nl; (nl = r.partial.indexOf('\n')) >= 0;) {
        handleLine(r, r.partial.left(nl));
        r.partial.remove(0, nl + 1);
    }
    if (r.partial.size() > kMaxEngineLineBytes) {
        emit output(r.rank, QStringLiteral("stdout"),
                    QStringLiteral("[an output line longer than %1 bytes was dropped]").arg(kMaxEngineLineBytes));
        r.partial.clear();
    }
}

void EngineLauncher::handleLine(Rank& r, const QByteArray& text) {
    if (text.trimmed().isEmpty()) return;
    if (text.size() > kMaxEngineLineBytes) {
        emit output(r.rank, QStringLiteral("stdout"),
                    QStringLiteral("[an output line of %1 bytes was dropped]").arg(text.size()));
        return;
    }
    json j;
    try {
        j = json::parse(text.constBegin(), text.constEnd());
    } catch (const json::parse_error&) {
        emit output(r.rank, QStringLiteral("stdout"), QString::fromUtf8(text));
        return;
    }
    if (!j.is_object() || !j.contains("event") || !j["event"].is_string()) {
        emit output(r.rank, QStringLiteral("stdout"), QString::fromUtf8(text));
        return;
    }
    if (!j.contains("rank")) j["rank"] = r.rank;
    const std::string kind = j["event"].get<std::string>();
    if (kind == "done") r.done = true;
    if (kind == "error" && !r.error) {
        const auto m = j.find("message");
        r.error = QString::fromStdString(m != j.end() && m->is_string() ? m->get<std::string>() : std::string("unknown error"));
    }
    emit line(r.rank, j);
    if (kind == "error") failWith(r);
}

void EngineLauncher::onStderr(Rank& r) {
    const QByteArray chunk = r.process->readAllStandardError();
    if (chunk.isEmpty()) return;
    r.stderr_tail.append(chunk);
    if (r.stderr_tail.size() > kStderrTailBytes) r.stderr_tail.remove(0, r.stderr_tail.size() - kStderrTailBytes);
    emit output(r.rank, QStringLiteral("stderr"), QString::fromUtf8(chunk));
}

void EngineLauncher::onError(Rank& r, QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart || !r.running) return;  // other errors end in finished()
    r.exit = QStringLiteral("could not start '%1': %2").arg(spec_.engine, r.process->errorString());
    r.ok = false;
    rankEnded(r);
}

void EngineLauncher::onFinished(Rank& r, int code, QProcess::ExitStatus status) {
    if (!r.running) return;
    onStdout(r);
    onStderr(r);
    if (!r.partial.isEmpty()) {
        handleLine(r, r.partial);
        r.partial.clear();
    }
    r.crashed = status == QProcess::CrashExit && !r.killed_by_us;
    if (status == QProcess::CrashExit) r.exit = QStringLiteral("was killed or crashed");
    else r.exit = QStringLiteral("exited with code %1").arg(code);
    r.ok = status == QProcess::NormalExit && code == 0 && r.done && !r.error;
    if (status == QProcess::NormalExit && code == 0 && !r.done && !r.error)
        r.exit = QStringLiteral("exited with code 0 before its \"done\" event");
    rankEnded(r);
}

void EngineLauncher::rankEnded(Rank& r) {
    r.running = false;
    --running_;
    if (!r.ok && !cancelled_) failWith(r);
    finishIfDone();
}

void EngineLauncher::failWith(Rank& r) {
    if (cancelled_) return;
    // A rank that reported an error may only have seen a crashed peer go away (a broken
    // connection): the crash, when it follows within the grace period, is the cause.
    if (failed_ && failed_ != &r && r.crashed && !failed_->crashed && failed_->error) failed_ = &r;
    if (failed_) return;
    failed_ = &r;
    grace_timer_.start(spec_.grace_ms);
}

void EngineLauncher::killAll() {
    for (auto& r : ranks_)
        if (r->running && r->process->state() != QProcess::NotRunning) {
            r->killed_by_us = true;
            r->process->kill();
        }
}

void EngineLauncher::finishIfDone() {
    if (running_ > 0 || finished_) return;
    finished_ = true;
    grace_timer_.stop();
    kill_timer_.stop();
    if (cancelled_) {
        emit finished(JobState::Cancelled, QStringLiteral("cancelled"));
        return;
    }
    if (failed_) {
        const Rank& r = *failed_;
        QString message = QStringLiteral("rank %1 %2").arg(r.rank).arg(r.exit.isEmpty() ? QStringLiteral("failed") : r.exit);
        message += r.error ? QStringLiteral(": ") + *r.error : QStringLiteral(" without reporting an error");
        const QString tail = QString::fromUtf8(r.stderr_tail).trimmed();
        if (!tail.isEmpty()) message += QStringLiteral("\nits stderr ends with:\n") + tail;
        emit finished(JobState::Failed, message);
        return;
    }
    emit finished(JobState::Succeeded, QStringLiteral("%1 rank(s) done").arg(ranks_.size()));
}

}  // namespace hippie::jobs
