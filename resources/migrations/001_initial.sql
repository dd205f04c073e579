-- Schema version 1: every model, cluster, plan, run, metric, event and log of Hippie Studio.
-- Applied once, in one transaction, by hippie::store::RunStore (app/store/run_store.cpp), which
-- then sets PRAGMA user_version = 1. Times are epoch milliseconds; JSON is stored as text.
-- Nothing here is ever deleted or rewritten: runs only move their state forward, and events,
-- logs and metrics are appended.

-- A model description (a graph JSON or a plan's model spec), stored once per distinct JSON.
CREATE TABLE models (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    json       TEXT    NOT NULL,
    hash       TEXT    NOT NULL UNIQUE,  -- SHA-256 of the JSON as dumped with sorted keys
    created_ms INTEGER NOT NULL
);

-- A cluster JSON, stored once per distinct JSON.
CREATE TABLE clusters (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    json       TEXT    NOT NULL,
    hash       TEXT    NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL
);

-- A plan (Plan JSON) with what the simulator predicted for it (TraceMetrics JSON).
CREATE TABLE plans (
    id                INTEGER PRIMARY KEY,
    model_id          INTEGER REFERENCES models(id),    -- NULL: not stored (the plan's own model spec names it)
    cluster_id        INTEGER REFERENCES clusters(id),  -- NULL: not stored (the plan names its cluster)
    planner           TEXT    NOT NULL,
    json              TEXT    NOT NULL,
    predicted_metrics TEXT    NOT NULL DEFAULT 'null',
    hash              TEXT    NOT NULL UNIQUE,          -- of plan, model, cluster and prediction together
    created_ms        INTEGER NOT NULL
);

-- One dispatch of a plan to workers.
CREATE TABLE runs (
    id         INTEGER PRIMARY KEY,
    plan_id    INTEGER NOT NULL REFERENCES plans(id),
    job_id     TEXT    UNIQUE,                          -- the agents' job id; NULL when none was given
    workers    TEXT    NOT NULL DEFAULT '[]',           -- [{"host","port","first_rank","rank_count"}]
    steps      INTEGER NOT NULL CHECK (steps >= 0),
    state      TEXT    NOT NULL DEFAULT 'queued'
               CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'lost')),
    message    TEXT    NOT NULL DEFAULT '',
    created_ms INTEGER NOT NULL,
    started_ms INTEGER,                                 -- NULL until it runs
    ended_ms   INTEGER,                                 -- NULL until it is final
    note       TEXT    NOT NULL DEFAULT ''
);

-- Named measurements of a run, appended; the latest value of a name is its value.
CREATE TABLE metrics (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    name    TEXT    NOT NULL,
    value   REAL    NOT NULL,
    time_ms INTEGER NOT NULL
);

-- The events a run's agents streamed: `source` is the worker's index in runs.workers and `seq`
-- the agent's sequence number, so a replayed event is stored once.
CREATE TABLE events (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    source  INTEGER NOT NULL CHECK (source >= 0),
    seq     INTEGER NOT NULL,
    rank    INTEGER,                                    -- NULL when the event names no rank
    kind    TEXT    NOT NULL,                           -- its "event" field: step, trace, done, error, log, ...
    json    TEXT    NOT NULL,
    time_ms INTEGER NOT NULL,
    UNIQUE (run_id, source, seq)
);

-- Text the ranks (or their agents) printed.
CREATE TABLE logs (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id),
    rank    INTEGER NOT NULL,                           -- -1: the agent itself
    stream  TEXT    NOT NULL,
    text    TEXT    NOT NULL,
    time_ms INTEGER NOT NULL
);
