-- Schema version 3: runs on a Slurm cluster keep what Slurm said about them: the job id, the
-- batch script as submitted, where its files are, the node list, Slurm's state (with the
-- pending reason while it waited) and, once it ended, its exit code and each task's end.
-- One row per run, written when it is submitted and updated as Slurm reports (the run itself
-- stays append-only in runs/events).
CREATE TABLE slurm_jobs (
    run_id       INTEGER PRIMARY KEY REFERENCES runs(id),
    login_host   TEXT    NOT NULL DEFAULT '',   -- '': sbatch ran on this machine
    job_dir      TEXT    NOT NULL,              -- the job's directory (on the login host)
    slurm_job_id TEXT    NOT NULL DEFAULT '',   -- '' until sbatch answered
    script       TEXT    NOT NULL,
    state        TEXT    NOT NULL DEFAULT '',   -- Slurm's: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason       TEXT    NOT NULL DEFAULT '',   -- squeue's pending reason
    node_list    TEXT    NOT NULL DEFAULT '',
    exit_code    TEXT    NOT NULL DEFAULT '',   -- "0:0"
    tasks        TEXT    NOT NULL DEFAULT '[]', -- [{"rank","state"}]
    updated_ms   INTEGER NOT NULL
);
CREATE TRIGGER slurm_jobs_never_deleted BEFORE DELETE ON slurm_jobs BEGIN SELECT RAISE(ABORT, 'Slurm jobs are never deleted'); END;
