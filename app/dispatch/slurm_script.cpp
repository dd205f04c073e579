#include "app/dispatch/slurm_script.h"

#include <QDir>

#include <algorithm>
#include <map>

#include "planners/common/error.h"

namespace hippie::dispatch {

namespace {

// The rendezvous port of a job: derived from its id by the script itself, so tasks of jobs that
// share a node do not collide; above the well-known range, below the ephemeral one.
constexpr int kPortBase = 15000;
constexpr int kPortSpan = 15000;

QString shellQuote(const QString& s) {
    QString q = s;
    q.replace(QLatin1Char('\''), QLatin1String("'\\''"));
    return QLatin1Char('\'') + q + QLatin1Char('\'');
}

}  // namespace

QString SlurmTarget::label() const { return login_host.isEmpty() ? QStringLiteral("slurm") : QStringLiteral("slurm@%1").arg(login_host); }

QString slurmRankEventsFile(int rank) { return QStringLiteral("rank-%1.jsonl").arg(rank); }
QString slurmRankStderrFile(int rank) { return QStringLiteral("rank-%1.err").arg(rank); }
QString slurmBatchOutputFile() { return QStringLiteral("slurm.out"); }

SlurmLayout slurmLayout(const Plan& plan, const std::optional<Cluster>& cluster, const SlurmTarget& target) {
    const int world = plan.deviceCount();
    SlurmLayout l;
    l.nodes = 1;
    l.tasks_per_node = world;
    if (cluster && cluster->deviceCount() >= world) {
        std::map<int, int> per_node;  // node -> ranks on it
        for (int d = 0; d < world; ++d) ++per_node[cluster->nodeOf(d)];
        l.nodes = static_cast<int>(per_node.size());
        l.tasks_per_node = 0;
        for (const auto& [node, n] : per_node) l.tasks_per_node = std::max(l.tasks_per_node, n);
        l.gpus_per_node = cluster->device(0).type == "cpu" ? 0 : l.tasks_per_node;
    }
    if (target.nodes > 0) l.nodes = target.nodes;
    if (target.tasks_per_node > 0) l.tasks_per_node = target.tasks_per_node;
    if (target.gpus_per_node >= 0) l.gpus_per_node = target.gpus_per_node;
    if (l.nodes * l.tasks_per_node < world)
        throw Error("Slurm layout: " + std::to_string(l.nodes) + " node(s) x " + std::to_string(l.tasks_per_node) +
                    " task(s) per node cannot hold the plan's " + std::to_string(world) + " ranks; raise --nodes or --tasks-per-node");
    if (l.gpus_per_node > 0 && l.gpus_per_node < l.tasks_per_node)
        throw Error("Slurm layout: " + std::to_string(l.tasks_per_node) + " tasks per node need as many GPUs per node, not " +
                    std::to_string(l.gpus_per_node) + " (every rank drives one GPU)");
    return l;
}

QString slurmBatchScript(const SlurmTarget& t, const SlurmScriptInput& in) {
    // Every path is relative: sbatch runs in the job's directory, which becomes the job's
    // working directory, so the script is the same wherever the shared directory is mounted.
    QStringList s;
    s << QStringLiteral("#!/bin/bash")
      << QStringLiteral("# Written by Hippie Studio: %1 rank(s) of a plan, one task per device; submitted from").arg(in.world_size)
      << QStringLiteral("# %1 (the job's working directory) with sbatch --parsable.").arg(in.job_dir)
      << QStringLiteral("#SBATCH --job-name=%1").arg(in.job_name)
      << QStringLiteral("#SBATCH --output=%1").arg(slurmBatchOutputFile())
      << QStringLiteral("#SBATCH --nodes=%1").arg(in.layout.nodes)
      << QStringLiteral("#SBATCH --ntasks=%1").arg(in.world_size);
    // On one node --ntasks says it all; Slurm refuses --ntasks-per-node above a node's CPU count
    // even with --overcommit, which CPU runs of more ranks than cores need.
    if (in.layout.nodes > 1) s << QStringLiteral("#SBATCH --ntasks-per-node=%1").arg(in.layout.tasks_per_node);
    if (in.layout.gpus_per_node > 0) s << QStringLiteral("#SBATCH --gpus-per-node=%1").arg(in.layout.gpus_per_node);
    if (!t.partition.isEmpty()) s << QStringLiteral("#SBATCH --partition=%1").arg(t.partition);
    if (!t.account.isEmpty()) s << QStringLiteral("#SBATCH --account=%1").arg(t.account);
    if (!t.time_limit.isEmpty()) s << QStringLiteral("#SBATCH --time=%1").arg(t.time_limit);
    for (const QString& extra : t.extra_sbatch) s << QStringLiteral("#SBATCH %1").arg(extra);
    s << QString()
      << QStringLiteral("# Rank 0 listens on the first node; every task reads SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID.")
      << QStringLiteral("export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)")
      << QStringLiteral("export MASTER_PORT=$(( %1 + SLURM_JOB_ID % %2 ))").arg(kPortBase).arg(kPortSpan)
      << QStringLiteral("echo \"hippie: job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, master $MASTER_ADDR:$MASTER_PORT\"")
      << QStringLiteral("# srun's %t is the task's rank: its JSON-line events and its stderr get files of their own.");
    QString run = QStringLiteral("srun --kill-on-bad-exit=1 --output=rank-%t.jsonl --error=rank-%t.err \\\n    %1 run --plan %2 --steps %3 --seed %4")
                      .arg(shellQuote(t.engine), QString::fromLatin1(kSlurmPlanFile))
                      .arg(in.steps)
                      .arg(in.seed);
    if (in.trace_every_step) run += QStringLiteral(" --trace-every-step");
    if (!in.checkpoint_dir.isEmpty()) {
        const QString dir = QDir::isRelativePath(in.checkpoint_dir) ? QStringLiteral("\"$HOME\"/") + shellQuote(in.checkpoint_dir)
                                                                     : shellQuote(in.checkpoint_dir);
        run += QStringLiteral(" \\\n    --checkpoint-dir %1").arg(dir);
        if (in.checkpoint_every > 0) run += QStringLiteral(" --checkpoint-every %1").arg(in.checkpoint_every);
        if (in.resume) run += QStringLiteral(" --resume");
    }
    if (!in.data_file.isEmpty()) run += QStringLiteral(" \\\n    --data %1").arg(shellQuote(in.data_file));
    if (!in.token_dtype.isEmpty()) run += QStringLiteral(" --token-dtype %1").arg(shellQuote(in.token_dtype));
    s << run;
    return s.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace hippie::dispatch
