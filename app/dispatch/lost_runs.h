#pragma once
// On start, a run the store still calls queued or running may have been orphaned: the studio
// or `hippie-plan dispatch` that drove it died, or its agents are gone. A run stays open while
// one of its workers can still be reached: the process that ran its local share is alive (the
// engine ranks die with it), or a remote agent accepts a TCP connection. Every other open run
// becomes lost; nothing else in the store changes. Blocking: call it off the GUI thread.
#include <functional>

#include <QString>

#include <nlohmann/json.hpp>

namespace hippie::store {
class RunStore;
}

namespace hippie::dispatch {

// The worker entry RunController stores for this machine's share: names this process.
nlohmann::json localWorkerEntry(int first_rank, int rank_count);
// The entry of a Slurm cluster ({"host":"slurm","login",...}): names this process, which follows
// the job; the job itself goes on in Slurm's queue when this process dies (scancel it by its id,
// kept in the run's Slurm record).
nlohmann::json slurmWorkerEntry(const QString& login_host, int first_rank, int rank_count);

// True when the worker described by `worker` (one entry of a run's workers JSON) is reachable.
bool workerReachable(const nlohmann::json& worker, int connect_timeout_ms);

// Marks lost every open run none of whose workers is reachable; returns how many.
int markUnreachableRunsLost(store::RunStore& store, int connect_timeout_ms = 2000);

}  // namespace hippie::dispatch
