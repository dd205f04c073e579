#pragma once
// A Slurm cluster as a worker, and the batch script that runs a plan on it. The script asks for
// the nodes and GPUs the plan's device mapping needs (devices are numbered node by node, as in
// the plan's cluster), starts one task per device with srun, and lets every task find its rank
// from Slurm's variables (engine/src/launch/rendezvous_env.h); each task writes its JSON-line
// events to rank-<task>.jsonl in the job's directory, which SlurmJob follows.
#include <QString>
#include <QStringList>

#include <optional>

#include "planners/cluster/cluster.h"
#include "planners/schedule/plan.h"

namespace hippie::dispatch {

struct SlurmTarget {
    QString login_host;      // empty: sbatch and friends run here; else through `ssh login_host`
    QString partition, account, time_limit;  // empty: the cluster's defaults
    QStringList extra_sbatch;  // more #SBATCH options, each as written ("--qos=high")
    QString job_dir_root;    // shared directory jobs are written to (one sub-directory per job);
                             // empty: <work root>/slurm here, or ~/hippie-runs on the login host
    QString engine = QStringLiteral("hippie-engine");  // on the compute nodes
    int nodes = 0;           // 0: from the plan's device mapping
    int tasks_per_node = 0;  // 0: from the plan's device mapping
    int gpus_per_node = -1;  // -1: from the plan's cluster (0 when its devices are CPUs)
    double poll_interval_s = 1.0;
    QString label() const;   // "slurm" or "slurm@host"
};

struct SlurmLayout {
    int nodes = 1;
    int tasks_per_node = 1;
    int gpus_per_node = 0;
};

// Ranks go to nodes in the order of the plan's cluster: node k holds the ranks of its devices.
// Without a cluster every rank shares one node. Explicit values of the target win. Throws
// hippie::Error when the layout cannot hold the plan's ranks.
SlurmLayout slurmLayout(const Plan& plan, const std::optional<Cluster>& cluster, const SlurmTarget& target);

struct SlurmScriptInput {
    QString job_name;    // also the job's directory name
    QString job_dir;     // absolute, on the shared file system
    SlurmLayout layout;
    int world_size = 1;
    int steps = 1;
    unsigned long long seed = 0;
    bool trace_every_step = false;
    QString checkpoint_dir;    // empty: none; relative: to the login host's home (the tasks start in the job's directory)
    int checkpoint_every = 0;
    bool resume = false;
    QString data_file;    // --data as the nodes see it; empty: synthetic data
    QString token_dtype;  // --token-dtype; empty: the engine's default
};

QString slurmBatchScript(const SlurmTarget& target, const SlurmScriptInput& in);

// File names inside the job's directory.
inline constexpr const char* kSlurmPlanFile = "plan.json";
inline constexpr const char* kSlurmScriptFile = "job.sbatch";
QString slurmRankEventsFile(int rank);   // rank-<r>.jsonl
QString slurmRankStderrFile(int rank);   // rank-<r>.err
QString slurmBatchOutputFile();          // slurm.out (the batch script's own output: srun's messages)

}  // namespace hippie::dispatch
