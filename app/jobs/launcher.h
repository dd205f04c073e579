#pragma once
// EngineLauncher: starts a share of the ranks of one plan as `hippie-engine run` processes and
// watches them, as `hippie-engine launch` does for local runs (engine/src/launch/launcher.cpp),
// but inside a Qt event loop so the studio and the agent share it. Each rank's stdout JSON
// lines become line(rank, event); its stderr arrives in chunks. When one rank fails (non-zero
// exit, a crash, or an "error" event) the others get a short grace to report and are then
// killed; the launch finishes failed with that rank's message and the tail of its stderr.
#include <QList>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QTimer>

#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/jobs/protocol.h"

namespace hippie::jobs {

struct LaunchSpec {
    QString engine;     // path of hippie-engine
    QString plan_file;  // absolute
    QString work_dir;   // the ranks' working directory
    int world_size = 1;
    int first_rank = 0;
    int rank_count = 1;
    QString master_addr = QStringLiteral("127.0.0.1");
    int master_port = 0;  // must be set
    int steps = 5;
    unsigned long long seed = 0;
    double lr = 0;
    double op_timeout_s = 0;
    bool trace_every_step = false;
    QString dump_params;  // absolute; "{rank}" allowed
    QString checkpoint_dir;    // absolute; empty: no checkpoints
    int checkpoint_every = 0;  // steps between checkpoints (with checkpoint_dir)
    bool resume = false;       // continue from the newest checkpoint every rank has in checkpoint_dir
    QString data_file;         // --data; empty: synthetic data
    QString token_dtype;       // --token-dtype; empty: the engine's default
    int grace_ms = 5000;  // after a rank fails, time the others get to report
    int kill_ms = 3000;   // after SIGTERM, time before SIGKILL

    QStringList arguments(int rank) const;  // the `hippie-engine run ...` arguments of one rank
};

// hippie-engine: `explicit_path` when given (it must exist), else $HIPPIE_ENGINE when set (it
// must exist), else next to the running binary, else on PATH. Empty when none is found. The
// studio's other uses of the engine (TorchScript import, plans of engine models) follow the
// same rule (TorchScriptImport::enginePath).
QString findEngine(const QString& explicit_path = {});
QString engineMissingMessage();

class EngineLauncher : public QObject {
    Q_OBJECT
public:
    explicit EngineLauncher(QObject* parent = nullptr);
    ~EngineLauncher() override;

    void start(const LaunchSpec& spec);  // -> rankStarted... then finished
    void cancel();                       // SIGTERM every rank, SIGKILL after kill_ms -> finished(Cancelled)
    bool isRunning() const { return running_ > 0; }
    QList<qint64> pids() const;

    static constexpr qsizetype kStderrTailBytes = 2000;

signals:
    void allStarted(const nlohmann::json& ranks);  // [{"rank","pid"}]
    void line(int rank, const nlohmann::json& event);   // an engine JSON line (it has "rank")
    void output(int rank, const QString& stream, const QString& text);  // stderr chunks, non-JSON stdout
    void finished(hippie::jobs::JobState state, const QString& message);

private:
    struct Rank {
        int rank = 0;
        QProcess* process = nullptr;
        QByteArray partial;       // unfinished stdout line
        QByteArray stderr_tail;   // last kStderrTailBytes of stderr
        bool started = false;
        bool running = false;
        bool done = false;        // printed "done"
        std::optional<QString> error;  // its "error" event's message
        QString exit;             // how it ended, for messages
        bool ok = false;
        bool crashed = false;     // ended by a signal we did not send
        bool killed_by_us = false;
    };

    void onStdout(Rank& r);
    void onStderr(Rank& r);
    void onStarted(Rank& r);
    void onFinished(Rank& r, int code, QProcess::ExitStatus status);
    void onError(Rank& r, QProcess::ProcessError error);
    void handleLine(Rank& r, const QByteArray& text);
    void rankEnded(Rank& r);
    void failWith(Rank& r);
    void killAll();
    void finishIfDone();

    LaunchSpec spec_;
    std::vector<std::unique_ptr<Rank>> ranks_;
    int running_ = 0;
    int started_ = 0;
    bool cancelled_ = false;
    bool finished_ = false;
    Rank* failed_ = nullptr;
    QTimer grace_timer_;
    QTimer kill_timer_;
};

}  // namespace hippie::jobs
