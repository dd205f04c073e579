#!/usr/bin/env bash
# hippie-plan dispatch --checkpoint-every and --resume as a user runs them: a local run of
# gpt-tiny whose rank 1 dies at step 5 (HIPPIE_ENGINE_TEST_KILL) after checkpoints of steps 1 and
# 3, resumed with --resume, must end with the losses of the same run left alone, and the store
# must show one run with two attempts. A run cancelled with Ctrl-C after its first checkpoints
# resumes to its last step. Then the refusals: an unknown run, a run still running,
# a run that succeeded, a run without checkpoints, a checkpoint directory that is gone. Then the
# same interruption and resume of a run with ranks on an agent.
# Args: HIPPIE_PLAN SOURCE_DIR. The engine comes from HIPPIE_ENGINE or beside hippie-plan.
set -u
BIN="$1"
SRC="$2"
BIN_DIR="$(cd "$(dirname "$BIN")" && pwd)"
ENGINE="${HIPPIE_ENGINE:-$BIN_DIR/hippie-engine}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
failures=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failures=$((failures + 1)); }
# shellcheck source=expect_error.sh
source "$SRC/tests/cli/expect_error.sh"

if ! "$BIN" dispatch --help >/dev/null 2>&1; then
    echo "SKIP: hippie-plan was built without dispatch (needs Qt 6 Core/Network/Sql)"
    exit 0
fi
if [ ! -x "$ENGINE" ]; then
    echo "SKIP: no hippie-engine at $ENGINE (set HIPPIE_ENGINE)"
    exit 0
fi
if ! command -v python3 >/dev/null; then
    echo "SKIP: python3 reads the run store"
    exit 0
fi

"$ENGINE" plan --model gpt-tiny --pp 2 --dp 1 --global-batch 8 --microbatches 2 --out "$OUT/plan.json" >/dev/null \
    || { fail "hippie-engine plan"; exit 1; }
STEPS=6
dispatch() {  # DB OUTFILE ARGS...
    local db=$1 out=$2
    shift 2
    timeout 120 "$BIN" dispatch --engine "$ENGINE" --db "$db" "$@" >"$out" 2>"$OUT/err"
}
# "step loss" of every step event with a loss, sorted; from step FROM on.
losses() {  # OUTFILE FROM
    python3 - "$1" "$2" <<'EOF'
import json, sys
rows = set()
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line).get("event")
    except ValueError:
        continue
    if isinstance(ev, dict) and ev.get("event") == "step" and ev.get("loss") is not None and ev["step"] >= int(sys.argv[2]):
        rows.add((ev["step"], ev["rank"], ev["loss"]))
for step, rank, loss in sorted(rows):
    print(step, rank, repr(loss))
EOF
}
run_id() { sed -n 's/.*"event":"stored".*"run":\([0-9]*\).*/\1/p' "$1" | head -1; }
sql() { python3 -c 'import sqlite3,sys; print("\n".join("|".join(map(str, r)) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))' "$@"; }

# The reference: the same run, never interrupted.
dispatch "$OUT/ref.sqlite" "$OUT/ref.out" --plan "$OUT/plan.json" --worker local --work-dir "$OUT/work" --steps $STEPS --seed 3 \
    --checkpoint-every 2; rc=$?
[ $rc -eq 0 ] && pass "uninterrupted run" || fail "uninterrupted run: rc $rc $(tail -2 "$OUT/ref.out") $(cat "$OUT/err")"
losses "$OUT/ref.out" 0 >"$OUT/ref.losses"
[ "$(wc -l <"$OUT/ref.losses")" -eq $STEPS ] || fail "the reference has $(wc -l <"$OUT/ref.losses") losses, expected $STEPS"
REF_RUN="$(run_id "$OUT/ref.out")"

# Rank 1 dies at the start of step 5: the run fails with checkpoints of steps 1 and 3 on every rank.
HIPPIE_ENGINE_TEST_KILL=1:5 dispatch "$OUT/runs.sqlite" "$OUT/a1.out" --plan "$OUT/plan.json" --worker local \
    --work-dir "$OUT/work" --steps $STEPS --seed 3 --checkpoint-every 2; rc=$?
RUN="$(run_id "$OUT/a1.out")"
CKPT="$(grep '"event":"stored"' "$OUT/a1.out" | sed -n 's/.*"checkpoint_dir":"\([^"]*\)".*/\1/p' | head -1)"
[ $rc -eq 3 ] && [ -n "$RUN" ] && [ -f "$CKPT/rank-0/step-3.pt" ] && [ -f "$CKPT/rank-1/step-3.pt" ] \
    && pass "interrupted run failed after its checkpoints" \
    || fail "interrupted run: rc $rc run '$RUN' dir '$CKPT': $(ls -R "$CKPT" 2>&1 | head) $(cat "$OUT/err")"
[ "$(sql "$OUT/runs.sqlite" "SELECT state, checkpoint_every, checkpoint_dir = '$CKPT' FROM runs WHERE id = $RUN")" = "failed|2|1" ] \
    && pass "the store records the checkpoints" || fail "store after failure: $(sql "$OUT/runs.sqlite" "SELECT * FROM runs")"

# The checkpoint directory moved away: refused, nothing changes.
mv "$CKPT" "$CKPT.away"
expect_error "checkpoint directory $CKPT is missing" dispatch --db "$OUT/runs.sqlite" --resume "$RUN" --engine "$ENGINE"
mv "$CKPT.away" "$CKPT"

# Resumed: from step 3, steps 4 and 5 again, ending with the reference's losses.
dispatch "$OUT/runs.sqlite" "$OUT/a2.out" --resume "$RUN"; rc=$?
[ $rc -eq 0 ] && tail -1 "$OUT/a2.out" | grep -q '"state":"succeeded"' && pass "resumed run succeeded" \
    || fail "resume: rc $rc $(tail -2 "$OUT/a2.out") $(cat "$OUT/err")"
grep -q '"resumed_from":{[^}]*"step":3' "$OUT/a2.out" && pass "resumed from step 3" \
    || fail "resumed_from: $(grep -o '"resumed_from":[^}]*}' "$OUT/a2.out" | head -2)"
[ "$(losses "$OUT/a2.out" 0 | awk '{print $1}' | sort -un | head -1)" = 4 ] && pass "the resumed attempt starts at step 4" \
    || fail "first resumed step: $(losses "$OUT/a2.out" 0 | head -3)"
losses "$OUT/a2.out" 4 >"$OUT/resumed.losses"
awk '$1 >= 4' "$OUT/ref.losses" >"$OUT/ref.tail"
if [ -s "$OUT/resumed.losses" ] && python3 - "$OUT/ref.tail" "$OUT/resumed.losses" <<'EOF'
import sys
a = [l.split() for l in open(sys.argv[1])]
b = [l.split() for l in open(sys.argv[2])]
ok = len(a) == len(b) and all(x[:2] == y[:2] and abs(float(x[2]) - float(y[2])) <= 1e-6 for x, y in zip(a, b))
sys.exit(0 if ok else 1)
EOF
then pass "resumed losses equal the uninterrupted run's"
else fail "losses differ: reference $(tr '\n' ';' <"$OUT/ref.tail") resumed $(tr '\n' ';' <"$OUT/resumed.losses")"
fi

# One run, attempt 2, succeeded; attempt 1 kept as failed; each attempt's events under its number.
[ "$(sql "$OUT/runs.sqlite" "SELECT COUNT(*) FROM runs")" = 1 ] && pass "one run in the store" \
    || fail "runs: $(sql "$OUT/runs.sqlite" "SELECT id, state FROM runs")"
[ "$(sql "$OUT/runs.sqlite" "SELECT state, attempt FROM runs WHERE id = $RUN")" = "succeeded|2" ] \
    && [ "$(sql "$OUT/runs.sqlite" "SELECT attempt, state FROM run_attempts WHERE run_id = $RUN")" = "1|failed" ] \
    && pass "the run is a continuation: attempt 2 succeeded, attempt 1 failed" \
    || fail "attempts: $(sql "$OUT/runs.sqlite" "SELECT state, attempt FROM runs") / $(sql "$OUT/runs.sqlite" "SELECT * FROM run_attempts")"
[ "$(sql "$OUT/runs.sqlite" "SELECT MIN(json_extract(json, '\$.step')) FROM events WHERE run_id = $RUN AND attempt = 2 AND kind = 'step'")" = 4 ] \
    && [ "$(sql "$OUT/runs.sqlite" "SELECT COUNT(*) > 0 FROM events WHERE run_id = $RUN AND attempt = 1 AND kind = 'step'")" = 1 ] \
    && pass "events of both attempts kept, the second from step 4" \
    || fail "events: $(sql "$OUT/runs.sqlite" "SELECT attempt, kind, COUNT(*) FROM events GROUP BY attempt, kind")"
"$BIN" runs --db "$OUT/runs.sqlite" --json >"$OUT/runs.json" 2>&1 && grep -q '"attempt": *2' "$OUT/runs.json" \
    && pass "hippie-plan runs shows the attempt" || fail "runs --json: $(head -c 400 "$OUT/runs.json")"

# Cancelled with Ctrl-C (SIGINT) once every rank has written a checkpoint, then resumed: attempt 2
# of the same run goes on to the last step.
timeout 120 "$BIN" dispatch --engine "$ENGINE" --db "$OUT/cancel.sqlite" --plan "$OUT/plan.json" --worker local \
    --work-dir "$OUT/work" --steps 100 --seed 3 --checkpoint-every 2 >"$OUT/c1.out" 2>"$OUT/c1.err" &
CPID=$!  # timeout's; hippie-plan is its child
for _ in $(seq 600); do
    [ "$(grep -c '"event":"checkpoint"' "$OUT/c1.out" 2>/dev/null)" -ge 2 ] && break
    sleep 0.1
done
CPLAN=$(pgrep -P "$CPID" -x hippie-plan || echo "$CPID")
kill -INT "$CPLAN"
wait "$CPID"; rc=$?
CRUN="$(run_id "$OUT/c1.out")"
if tail -1 "$OUT/c1.out" | grep -q '"state":"succeeded"'; then
    echo "SKIP: the run ended before the interrupt reached it (this machine is fast); the cancel path is not checked"
elif [ $rc -eq 3 ] && tail -1 "$OUT/c1.out" | grep -q '"state":"cancelled"'; then
    # A cancelled run keeps what its steps measured (its ranks stopped before their "done").
    [ "$(sql "$OUT/cancel.sqlite" "SELECT COUNT(*) FROM metrics WHERE run_id = $CRUN AND name = 'measured_step_s' AND value > 0")" = 1 ] \
        && grep -q '"message":"by the user after [0-9]* step' "$OUT/c1.out" \
        && pass "the cancelled run kept its measured step time and says after how many steps" \
        || fail "cancelled run: $(sql "$OUT/cancel.sqlite" "SELECT name, value FROM metrics WHERE run_id = $CRUN") $(tail -1 "$OUT/c1.out")"
    dispatch "$OUT/cancel.sqlite" "$OUT/c2.out" --resume "$CRUN"; rc=$?
    [ $rc -eq 0 ] && grep -q '"step":99' "$OUT/c2.out" \
        && [ "$(sql "$OUT/cancel.sqlite" "SELECT r.state || ' ' || r.attempt || ' ' || a.state FROM runs r JOIN run_attempts a ON a.run_id = r.id")" = "succeeded 2 cancelled" ] \
        && pass "a cancelled run resumed to its last step" \
        || fail "resume after cancel: rc $rc $(tail -2 "$OUT/c2.out") $(cat "$OUT/err")"
else
    fail "cancel: rc $rc $(tail -2 "$OUT/c1.out")"
fi

# Refusals.
expect_error "there is no such run" dispatch --db "$OUT/runs.sqlite" --resume 99
expect_error "run $RUN completed (succeeded)" dispatch --db "$OUT/runs.sqlite" --resume "$RUN"
expect_error "run $REF_RUN completed" dispatch --db "$OUT/ref.sqlite" --resume "$REF_RUN"
expect_error "--plan" dispatch --db "$OUT/runs.sqlite" --resume "$RUN" --plan "$OUT/plan.json"
HIPPIE_ENGINE_TEST_KILL=1:0 dispatch "$OUT/runs.sqlite" "$OUT/nock.out" --plan "$OUT/plan.json" --worker local \
    --work-dir "$OUT/work" --steps 2
NOCK="$(run_id "$OUT/nock.out")"
expect_error "run $NOCK was dispatched without --checkpoint-every; nothing to resume from" \
    dispatch --db "$OUT/runs.sqlite" --resume "$NOCK"
# A run that is still running (as another process would have left it in the store).
python3 - "$OUT/runs.sqlite" "$CKPT" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO runs (plan_id, workers, steps, state, created_ms, checkpoint_dir, checkpoint_every) "
           "SELECT plan_id, workers, steps, 'running', 0, ?, 2 FROM runs LIMIT 1", (sys.argv[2],))
db.commit()
EOF
LIVE="$(sql "$OUT/runs.sqlite" "SELECT MAX(id) FROM runs")"
expect_error "run $LIVE is still running" dispatch --db "$OUT/runs.sqlite" --resume "$LIVE"
# Agents: each keeps its ranks' checkpoints under its own work directory. A run with rank 0 on
# this machine and rank 1 on an agent loses rank 1 at step 5; the agent is restarted without the
# kill and the run is resumed through it with the token given again, ending with the
# uninterrupted run's losses.
AGENT="$BIN_DIR/hippie-agent"
echo token >"$OUT/token"
chmod 600 "$OUT/token"
start_agent() {  # PORT ENV... (PORT 0: any)
    local port=$1
    shift
    env "$@" "$AGENT" --listen "127.0.0.1:$port" --token-file "$OUT/token" --work-dir "$OUT/agentwork" --engine "$ENGINE" \
        >"$OUT/agent.out" 2>"$OUT/agent.err" &
    AGENT_PID=$!
    for _ in $(seq 100); do grep -q listening "$OUT/agent.out" && break; sleep 0.1; done
    APORT="$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$OUT/agent.out" | head -1)"
}
if [ -x "$AGENT" ]; then
    start_agent 0 HIPPIE_ENGINE_TEST_KILL=1:5
    timeout 120 "$BIN" dispatch --plan "$OUT/plan.json" --worker local --worker "127.0.0.1:$APORT" --token-file "$OUT/token" \
        --engine "$ENGINE" --db "$OUT/agent.sqlite" --work-dir "$OUT/work" --steps $STEPS --seed 3 --checkpoint-every 2 \
        >"$OUT/ag1.out" 2>"$OUT/err"; rc=$?
    ARUN="$(run_id "$OUT/ag1.out")"
    AKEY="$(basename "$(grep '"event":"stored"' "$OUT/ag1.out" | sed -n 's/.*"checkpoint_dir":"\([^"]*\)".*/\1/p' | head -1)")"
    [ $rc -eq 3 ] && [ -f "$OUT/agentwork/checkpoints/$AKEY/rank-1/step-3.pt" ] && [ -f "$OUT/work/checkpoints/$AKEY/rank-0/step-3.pt" ] \
        && pass "a run on this machine and an agent failed after its checkpoints, rank 1's on the agent" \
        || fail "agent run with checkpoints: rc $rc key '$AKEY': $(ls -R "$OUT/agentwork/checkpoints" 2>&1 | head) $(cat "$OUT/err")"
    kill "$AGENT_PID"
    wait "$AGENT_PID" 2>/dev/null
    start_agent "$APORT"
    expect_error "run $ARUN ran on the agent 127.0.0.1:$APORT: give its token to resume it (--token-file)" \
        dispatch --db "$OUT/agent.sqlite" --resume "$ARUN"
    # The agent's checkpoints moved away (its work directory cleared): it refuses the job, naming the key.
    mv "$OUT/agentwork/checkpoints" "$OUT/agentwork/away"
    dispatch "$OUT/agent.sqlite" "$OUT/ag2.out" --resume "$ARUN" --token-file "$OUT/token"; rc=$?
    [ $rc -ne 0 ] && grep -q "'$AKEY', which this agent does not have" "$OUT/ag2.out" "$OUT/err" \
        && pass "an agent without the checkpoints refuses the resumed job" \
        || fail "agent without checkpoints: rc $rc $(tail -2 "$OUT/ag2.out") $(cat "$OUT/err")"
    mv "$OUT/agentwork/away" "$OUT/agentwork/checkpoints"
    dispatch "$OUT/agent.sqlite" "$OUT/ag3.out" --resume "$ARUN" --token-file "$OUT/token"; rc=$?
    losses "$OUT/ag3.out" 4 >"$OUT/agent.losses"
    if [ $rc -eq 0 ] && tail -1 "$OUT/ag3.out" | grep -q '"state":"succeeded"' && [ -s "$OUT/agent.losses" ] \
        && python3 - "$OUT/ref.tail" "$OUT/agent.losses" <<'EOF'
import sys
a = [l.split() for l in open(sys.argv[1])]
b = [l.split() for l in open(sys.argv[2])]
sys.exit(0 if len(a) == len(b) and all(x[:2] == y[:2] and abs(float(x[2]) - float(y[2])) <= 1e-6 for x, y in zip(a, b)) else 1)
EOF
    then pass "the run resumed through the agent ends with the uninterrupted run's losses"
    else fail "agent resume: rc $rc $(tail -2 "$OUT/ag3.out") $(cat "$OUT/err") losses $(tr '\n' ';' <"$OUT/agent.losses") vs $(tr '\n' ';' <"$OUT/ref.tail")"
    fi
    kill "$AGENT_PID"
    wait "$AGENT_PID" 2>/dev/null
else
    echo "SKIP: agent checkpoints (no hippie-agent beside hippie-plan)"
fi

# Slurm: the batch script (shown before anything is submitted) writes the checkpoints beside the
# job's files on the shared directory, or under the login host's home.
"$BIN" dispatch --plan "$OUT/plan.json" --slurm --show-script --checkpoint-every 2 --db "$OUT/slurm.sqlite" \
    --slurm-dir "$OUT/slurm" --slurm-engine /opt/hippie/hippie-engine >"$OUT/script" 2>"$OUT/err"; rc=$?
[ $rc -eq 0 ] && grep -q -- "--checkpoint-dir '$OUT/slurm/run-[0-9a-f-]*/checkpoints' --checkpoint-every 2$" "$OUT/script" \
    && pass "Slurm script with checkpoints" || fail "Slurm script: rc $rc $(cat "$OUT/script" "$OUT/err")"
"$BIN" dispatch --plan "$OUT/plan.json" --slurm --login login.example --show-script --checkpoint-every 3 --db "$OUT/slurm.sqlite" \
    >"$OUT/script" 2>"$OUT/err"; rc=$?
[ $rc -eq 0 ] && grep -q -- "--checkpoint-dir \"\$HOME\"/'hippie-runs/run-[0-9a-f-]*/checkpoints' --checkpoint-every 3$" "$OUT/script" \
    && pass "Slurm script through a login host" || fail "Slurm script (login): rc $rc $(cat "$OUT/script" "$OUT/err")"

[ $failures -eq 0 ] && exit 0 || exit 1
