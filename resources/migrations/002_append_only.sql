-- Schema version 2: the database itself keeps runs moving forward and the record append-only
-- (RunStore already does; these guard against any other writer), and indexes for the queries
-- RunStore runs: runs by state and by time, a run's events by kind, its logs and metrics.

CREATE INDEX runs_by_state   ON runs (state, created_ms);
CREATE INDEX runs_by_created ON runs (created_ms);
CREATE INDEX runs_by_plan    ON runs (plan_id);
CREATE INDEX plans_by_model   ON plans (model_id);
CREATE INDEX plans_by_cluster ON plans (cluster_id);
CREATE INDEX events_by_kind  ON events (run_id, kind);
CREATE INDEX logs_by_run     ON logs (run_id, id);
CREATE INDEX metrics_by_run  ON metrics (run_id, name, id);

-- queued -> running -> succeeded | failed | cancelled | lost, and a final state is final.
CREATE TRIGGER runs_state_forward_only
BEFORE UPDATE OF state ON runs
WHEN NOT (
    (OLD.state = 'queued'  AND NEW.state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'lost')) OR
    (OLD.state = 'running' AND NEW.state IN ('running', 'succeeded', 'failed', 'cancelled', 'lost'))
)
BEGIN
    SELECT RAISE(ABORT, 'run state may only move forward (queued -> running -> final)');
END;

CREATE TRIGGER runs_final_is_final
BEFORE UPDATE ON runs
WHEN OLD.state IN ('succeeded', 'failed', 'cancelled', 'lost')
BEGIN
    SELECT RAISE(ABORT, 'a run in a final state never changes');
END;

CREATE TRIGGER runs_never_deleted    BEFORE DELETE ON runs    BEGIN SELECT RAISE(ABORT, 'runs are never deleted'); END;
CREATE TRIGGER events_never_deleted  BEFORE DELETE ON events  BEGIN SELECT RAISE(ABORT, 'events are never deleted'); END;
CREATE TRIGGER events_never_changed  BEFORE UPDATE ON events  BEGIN SELECT RAISE(ABORT, 'events are never rewritten'); END;
CREATE TRIGGER logs_never_deleted    BEFORE DELETE ON logs    BEGIN SELECT RAISE(ABORT, 'logs are never deleted'); END;
CREATE TRIGGER logs_never_changed    BEFORE UPDATE ON logs    BEGIN SELECT RAISE(ABORT, 'logs are never rewritten'); END;
CREATE TRIGGER metrics_never_deleted BEFORE DELETE ON metrics BEGIN SELECT RAISE(ABORT, 'metrics are never deleted'); END;
CREATE TRIGGER metrics_never_changed BEFORE UPDATE ON metrics BEGIN SELECT RAISE(ABORT, 'metrics are never rewritten'); END;
