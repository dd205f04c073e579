-- Schema version 4: runs that write checkpoints, and resuming them.
--
-- A run dispatched with --checkpoint-every keeps the directory its ranks write checkpoints to and
-- the options it was started with, so that it can be started again from its last checkpoint
-- with the same plan, steps and options. Each start is an attempt: the run keeps its id, its
-- attempt counter goes up, its state goes from failed | cancelled | lost back to running and on
-- to a final state. What the earlier attempts were (job id, state, message, times) is kept in
-- run_attempts (with the workers entry of the process that drove it), and every event carries the attempt that sent it. Runs stored before this
-- version are attempt 1 with no checkpoints; nothing of them changes.

ALTER TABLE runs ADD COLUMN attempt          INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1);
ALTER TABLE runs ADD COLUMN checkpoint_dir   TEXT    NOT NULL DEFAULT '';  -- '': no checkpoints (as the workers see it)
ALTER TABLE runs ADD COLUMN checkpoint_every INTEGER NOT NULL DEFAULT 0 CHECK (checkpoint_every >= 0);
ALTER TABLE runs ADD COLUMN options          TEXT    NOT NULL DEFAULT '{}'; -- what it needs to run again: seed, engine, worker kind

-- An attempt of a run that was resumed: what it was when the next attempt started. Append-only.
CREATE TABLE run_attempts (
    run_id     INTEGER NOT NULL REFERENCES runs(id),
    attempt    INTEGER NOT NULL CHECK (attempt >= 1),
    job_id     TEXT,
    workers    TEXT    NOT NULL DEFAULT '[]',
    state      TEXT    NOT NULL CHECK (state IN ('failed', 'cancelled', 'lost')),
    message    TEXT    NOT NULL DEFAULT '',
    started_ms INTEGER,
    ended_ms   INTEGER,
    PRIMARY KEY (run_id, attempt)
);
CREATE TRIGGER run_attempts_never_deleted BEFORE DELETE ON run_attempts BEGIN SELECT RAISE(ABORT, 'run attempts are never deleted'); END;
CREATE TRIGGER run_attempts_never_changed BEFORE UPDATE ON run_attempts BEGIN SELECT RAISE(ABORT, 'run attempts are never rewritten'); END;

-- Events are unique per attempt: a resumed job's agent numbers its events from the start again.
-- SQLite cannot change a UNIQUE constraint in place, so the table is copied (ids kept).
CREATE TABLE events_v4 (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    attempt INTEGER NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    source  INTEGER NOT NULL CHECK (source >= 0),
    seq     INTEGER NOT NULL,
    rank    INTEGER,
    kind    TEXT    NOT NULL,
    json    TEXT    NOT NULL,
    time_ms INTEGER NOT NULL,
    UNIQUE (run_id, attempt, source, seq)
);
INSERT INTO events_v4 (id, run_id, attempt, source, seq, rank, kind, json, time_ms)
    SELECT id, run_id, 1, source, seq, rank, kind, json, time_ms FROM events;
-- DROP TABLE fires no DELETE trigger; the table's own triggers and indexes go with it.
DROP TABLE events;
ALTER TABLE events_v4 RENAME TO events;
CREATE INDEX events_by_kind ON events (run_id, kind);
CREATE TRIGGER events_never_deleted BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are never deleted'); END;
CREATE TRIGGER events_never_changed BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are never rewritten'); END;

-- queued -> running -> succeeded | failed | cancelled | lost, and a final state is final, except
-- that a failed, cancelled or lost run may start its next attempt (running, attempt + 1).
DROP TRIGGER runs_state_forward_only;
DROP TRIGGER runs_final_is_final;

CREATE TRIGGER runs_state_forward_only
BEFORE UPDATE OF state ON runs
WHEN NOT (
    (OLD.state = 'queued'  AND NEW.state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'lost')) OR
    (OLD.state = 'running' AND NEW.state IN ('running', 'succeeded', 'failed', 'cancelled', 'lost')) OR
    (OLD.state IN ('failed', 'cancelled', 'lost') AND NEW.state = 'running' AND NEW.attempt = OLD.attempt + 1)
)
BEGIN
    SELECT RAISE(ABORT, 'run state may only move forward (queued -> running -> final), or to a next attempt');
END;

CREATE TRIGGER runs_final_is_final
BEFORE UPDATE ON runs
WHEN OLD.state IN ('succeeded', 'failed', 'cancelled', 'lost')
     AND NOT (OLD.state <> 'succeeded' AND NEW.state = 'running' AND NEW.attempt = OLD.attempt + 1
              AND EXISTS (SELECT 1 FROM run_attempts a WHERE a.run_id = OLD.id AND a.attempt = OLD.attempt))
BEGIN
    SELECT RAISE(ABORT, 'a run in a final state never changes, except to start its next attempt (kept in run_attempts first)');
END;
