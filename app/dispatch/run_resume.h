#pragma once
// Resuming a stored run from its checkpoints, for `hippie-plan dispatch --resume RUN` and the
// studio's Resume button: which runs can be resumed, and the RunRequest that starts the next
// attempt of one with the plan, steps, options and kind of worker stored for it.
//
// A run can be resumed when it failed, was cancelled or was lost, was dispatched with
// --checkpoint-every, and every rank has written a checkpoint of one same step (the engine
// resumes from the newest such step: runtime/checkpoint.h). Agents keep their ranks'
// checkpoints under their own work directory (JobSpec::checkpoint_key); a resumed run goes to
// the same agents with the same ranks, and needs their token again (the store never keeps it).
#include <QString>

#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/dispatch/run_controller.h"
#include "app/store/run_store.h"

namespace hippie::dispatch {

// What a run needs to start again, beyond its plan, steps and workers (stored as runs.options):
// the seed, trace_every_step, the engine and work root of local workers, the Slurm target.
nlohmann::json runOptionsJson(const RunRequest& request, const QString& local_engine);

// Why `run` cannot be resumed, in words for the user, or empty when it can. Looks only at what
// the store says (state, checkpoints, kind of worker), not at the checkpoint files.
QString resumeRefusal(const store::RunSummary& run);

// The newest step of which every rank 0 .. world_size-1 has a checkpoint in `dir`, as the
// engine agrees on it when it resumes; nullopt when there is none.
std::optional<int> newestCommonCheckpoint(const QString& dir, int world_size);

struct ResumeOverrides {
    QString engine;  // hippie-engine for local workers; empty: the one the run used, else found as usual
    // The token (and TLS pin) of the agent at host:port the run used; nullopt when unknown, which
    // refuses to resume a run that had agents, naming `token_hint` (e.g. "--token-file").
    std::function<std::optional<jobs::AgentAddress>(const QString& host, quint16 port)> agent;
    QString token_hint;
};

// Reads run `run_id` from the store at `db_path`, checks that it can be resumed (its checkpoint
// files too, where this machine sees them: local workers, Slurm without a login host) and
// returns the request that starts its next attempt. Throws hippie::Error with the message.
RunRequest resumeRequest(const QString& db_path, qint64 run_id, const ResumeOverrides& overrides = {});

}  // namespace hippie::dispatch
