#!/usr/bin/env bash
# hippie-plan runs: the run history from the run store. An empty database lists nothing; a
# database filled here (from the schema migrations in resources/migrations/, by Python's sqlite3,
# as another program would) lists its runs as a table and as JSON, filtered by state, and shows
# one run in detail; bad database paths and arguments fail with a clear message and exit code 2.
# Usage: test_cli_runs.sh <path-to-hippie-plan> <repo-root>
set -euo pipefail
BIN=$1
SRC=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! "$BIN" runs --help >/dev/null 2>&1; then
    echo "SKIP: this hippie-plan has no 'runs' command (built without Qt 6 Core/Network/Sql)"
    exit 0
fi

# expect_error <substring> <args...>: exit code 2 and one line on stderr holding <substring>.
expect_error() {
    local want=$1; shift
    local code=0
    "$BIN" "$@" >"$OUT/out.txt" 2>"$OUT/err.txt" || code=$?
    [ "$code" -eq 2 ] || fail "'$*' exited with $code, expected 2 (stderr: $(cat "$OUT/err.txt"))"
    grep -qF -- "$want" "$OUT/err.txt" || fail "'$*' said '$(cat "$OUT/err.txt")', expected it to mention '$want'"
    [ "$(wc -l <"$OUT/err.txt")" -eq 1 ] || fail "'$*' printed more than one line on stderr"
}

# make_db <file> <fill: 0|1>: the schema from the migrations; with fill, three runs.
make_db() {
    python3 - "$1" "$2" "$SRC/resources/migrations" <<'PY'
import glob, json, os, sqlite3, sys
path, fill, migrations = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
db = sqlite3.connect(path)
files = sorted(glob.glob(os.path.join(migrations, "[0-9][0-9][0-9]_*.sql")))
for f in files:
    db.executescript(open(f).read())
db.execute("PRAGMA user_version = %d" % len(files))
if fill:
    plan = {"model": {"zoo": "gpt2-small"}, "cluster": "local-2gpu", "planner": "hippie"}
    db.execute("INSERT INTO models (id, name, json, hash, created_ms) VALUES (1, 'gpt2-small', '{}', 'm', 1)")
    db.execute("INSERT INTO clusters (id, name, json, hash, created_ms) VALUES (1, 'local-2gpu', '{}', 'c', 1)")
    db.execute("INSERT INTO plans (id, model_id, cluster_id, planner, json, predicted_metrics, hash, created_ms) "
               "VALUES (1, 1, 1, 'hippie', ?, ?, 'p1', 1)", (json.dumps(plan), json.dumps({"iteration_time_s": 0.1})))
    db.execute("INSERT INTO plans (id, planner, json, predicted_metrics, hash, created_ms) "
               "VALUES (2, 'gpipe-balance', ?, 'null', 'p2', 1)",
               (json.dumps({"model": {"zoo": "resnet50"}, "cluster": "dgx-a100-1x8", "planner": "gpipe-balance"}),))
    t0 = 1700000000000
    runs = [(1, 1, "job-ok", "succeeded", "", t0, t0 + 1000, t0 + 61000),
            (2, 2, "job-bad", "failed", "rank 1 failed in step 2: out of memory", t0 + 100000, t0 + 101000, t0 + 102500),
            (3, 1, "job-live", "running", "", t0 + 200000, t0 + 201000, None)]
    for r in runs:
        db.execute("INSERT INTO runs (id, plan_id, job_id, workers, steps, state, message, created_ms, started_ms, ended_ms) "
                   "VALUES (?, ?, ?, '[{\"host\":\"127.0.0.1\",\"port\":7469}]', 5, ?, ?, ?, ?, ?)",
                   (r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]))
    events = [(1, 0, 1, 0, "step", {"event": "step", "rank": 0, "step": 0}),
              (1, 0, 2, 0, "done", {"event": "done", "rank": 0, "mean_step_s": 0.115, "samples_per_s": 69.6, "loss": None}),
              (1, 0, 3, 1, "done", {"event": "done", "rank": 1, "mean_step_s": 0.12, "samples_per_s": 66.7, "loss": 2.5})]
    for e in events:
        db.execute("INSERT INTO events (run_id, source, seq, rank, kind, json, time_ms) VALUES (?, ?, ?, ?, ?, ?, 1)",
                   (e[0], e[1], e[2], e[3], e[4], json.dumps(e[5])))
    db.execute("INSERT INTO logs (run_id, rank, stream, text, time_ms) VALUES (2, 1, 'stderr', 'CUDA out of memory', 1)")
    db.execute("INSERT INTO metrics (run_id, name, value, time_ms) VALUES (1, 'fit_efficiency', 0.42, 1)")
db.commit()
db.close()
PY
}

# An empty database lists nothing.
make_db "$OUT/empty.sqlite" 0
"$BIN" runs --db "$OUT/empty.sqlite" >"$OUT/empty.txt" || fail "runs on an empty database exited with $?"
grep -qF "No runs in $OUT/empty.sqlite." "$OUT/empty.txt" || fail "empty database: $(cat "$OUT/empty.txt")"
[ "$("$BIN" runs --db "$OUT/empty.sqlite" --json | tr -d '[:space:]')" = "[]" ] || fail "empty database --json is not []"

# A filled one: the table, newest first, with predicted vs measured and the error.
make_db "$OUT/runs.sqlite" 1
"$BIN" runs --db "$OUT/runs.sqlite" >"$OUT/table.txt" || fail "runs exited with $?"
for want in "state" "model" "predicted step" "measured step" "error" "succeeded" "failed" "lost" \
            "gpt2-small" "resnet50" "local-2gpu" "dgx-a100-1x8" "gpipe-balance" "100.00 ms" "120.00 ms" "+20.0%" \
            "1m 00s" "1.5 s"; do
    grep -qF -- "$want" "$OUT/table.txt" || fail "the runs table lacks '$want':
$(cat "$OUT/table.txt")"
done
[ "$(grep -cE '^ *[0-9]+ ' "$OUT/table.txt")" -eq 3 ] || fail "the table should have 3 runs:
$(cat "$OUT/table.txt")"
[ "$(grep -E '^ *[0-9]+ ' "$OUT/table.txt" | awk '{print $1}' | tr '\n' ' ')" = "3 2 1 " ] || fail "runs are not newest first"

"$BIN" runs --db "$OUT/runs.sqlite" --json >"$OUT/runs.json" || fail "runs --json exited with $?"
python3 - "$OUT/runs.json" <<'PY' || fail "runs --json is wrong"
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["id"] for r in runs] == [3, 2, 1], runs
ok = runs[2]
assert ok["state"] == "succeeded" and ok["job_id"] == "job-ok", ok
assert (ok["model"], ok["cluster"], ok["planner"]) == ("gpt2-small", "local-2gpu", "hippie"), ok
assert ok["predicted_step_s"] == 0.1 and ok["measured_step_s"] == 0.12, ok      # the slowest rank
assert ok["measured_samples_per_s"] == 66.7 and ok["final_loss"] == 2.5, ok
assert abs(ok["error_percent"] - 20.0) < 1e-9, ok
assert ok["started_ms"] == 1700000001000 and ok["ended_ms"] == 1700000061000, ok
assert ok["workers"] == [{"host": "127.0.0.1", "port": 7469}], ok
bad = runs[1]
assert bad["state"] == "failed" and bad["message"].startswith("rank 1 failed"), bad
assert bad["predicted_step_s"] is None and bad["error_percent"] is None, bad
# Run 3 was "running" on an agent nobody answers for: `runs` marks it lost first, as the studio does.
assert runs[0]["state"] == "lost" and runs[0]["measured_step_s"] is None, runs[0]
PY

# Filtered by state.
"$BIN" runs --db "$OUT/runs.sqlite" --state failed --json >"$OUT/failed.json" || fail "runs --state failed exited with $?"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [x["id"] for x in r]==[2], r' "$OUT/failed.json" \
    || fail "--state failed should list run 2 only"
"$BIN" runs --db "$OUT/runs.sqlite" --state lost --json >"$OUT/lost.json" || fail "runs --state lost exited with $?"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [x["id"] for x in r]==[3], r' "$OUT/lost.json" \
    || fail "--state lost should list the abandoned run 3 only"

# One run in detail.
"$BIN" runs --db "$OUT/runs.sqlite" --id 2 >"$OUT/two.txt" || fail "runs --id 2 exited with $?"
for want in "failed" "rank 1 failed in step 2: out of memory" "CUDA out of memory" "resnet50"; do
    grep -qF -- "$want" "$OUT/two.txt" || fail "runs --id 2 lacks '$want':
$(cat "$OUT/two.txt")"
done
"$BIN" runs --db "$OUT/runs.sqlite" --id 1 --json >"$OUT/one.json" || fail "runs --id 1 --json exited with $?"
python3 - "$OUT/one.json" <<'PY' || fail "runs --id 1 --json is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["id"] == 1 and d["state"] == "succeeded", d
assert [e["seq"] for e in d["events"]] == [1, 2, 3], d["events"]
assert d["metrics"] == {"fit_efficiency": 0.42}, d["metrics"]
assert d["plan"]["planner"] == "hippie" and d["predicted_metrics"] == {"iteration_time_s": 0.1}, d
assert d["measured_trace"] is None and d["logs"] == [], d
PY

# The default database follows XDG_DATA_HOME and is not created by listing.
XDG_DATA_HOME="$OUT/xdg" "$BIN" runs >"$OUT/default.txt" || fail "runs without --db exited with $?"
grep -qF "$OUT/xdg/hippie-studio/runs.sqlite does not exist" "$OUT/default.txt" || fail "default path: $(cat "$OUT/default.txt")"
[ ! -e "$OUT/xdg/hippie-studio/runs.sqlite" ] || fail "listing created the default database"
mkdir -p "$OUT/xdg/hippie-studio" && cp "$OUT/runs.sqlite" "$OUT/xdg/hippie-studio/runs.sqlite"
[ "$(XDG_DATA_HOME="$OUT/xdg" "$BIN" runs --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 3 ] \
    || fail "runs without --db does not read \$XDG_DATA_HOME/hippie-studio/runs.sqlite"

# Bad paths and arguments.
expect_error "--db $OUT/missing.sqlite: no such file" runs --db "$OUT/missing.sqlite"
[ ! -e "$OUT/missing.sqlite" ] || fail "runs created a database for a missing --db"
echo "just some notes" >"$OUT/notes.txt"
expect_error "$OUT/notes.txt is not a SQLite database" runs --db "$OUT/notes.txt"
expect_error "$OUT is a folder, not a database file" runs --db "$OUT"
python3 -c 'import sqlite3,sys; d=sqlite3.connect(sys.argv[1]); d.execute("PRAGMA user_version = 999"); d.commit()' "$OUT/future.sqlite"
expect_error "has schema version 999, newer than this build knows" runs --db "$OUT/future.sqlite"
expect_error "there is no run 42" runs --db "$OUT/runs.sqlite" --id 42
expect_error "--state 'done' is not a run state (use queued, running, succeeded, failed, cancelled, lost)" \
    runs --db "$OUT/runs.sqlite" --state done
echo "OK"
