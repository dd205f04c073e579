#!/usr/bin/env bash
# hippie-plan dispatch as a user runs it: bad arguments, a missing engine, a local run and a run
# through a real hippie-agent on 127.0.0.1 (exit codes, JSON lines, the run in the store).
# Args: HIPPIE_PLAN SOURCE_DIR. The engine comes from HIPPIE_ENGINE or beside hippie-plan; the
# parts that need it (or hippie-agent) are skipped with a message when it is missing.
set -u
BIN="$1"
BIN_DIR="$(cd "$(dirname "$BIN")" && pwd)"
ENGINE="${HIPPIE_ENGINE:-$BIN_DIR/hippie-engine}"
AGENT="$BIN_DIR/hippie-agent"
WORK="$(mktemp -d)"
AGENT_PID=""
cleanup() {
    [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failures=$((failures + 1)); }

if ! "$BIN" dispatch --help >/dev/null 2>&1; then
    echo "SKIP: hippie-plan was built without dispatch (needs Qt 6 Core/Network/Sql)"
    exit 0
fi

# A plan file the engine can run; written by hand when the engine is missing.
if [ -x "$ENGINE" ]; then
    "$ENGINE" plan --model gpt-tiny --pp 2 --dp 1 --global-batch 8 --microbatches 2 --out "$WORK/plan.json" >/dev/null \
        || fail "hippie-engine plan"
else
    "$BIN" simulate --model gpt2-small --cluster dgx-a100-1x8 --pp 2 --dp 1 --microbatches 2 --global-batch 8 \
        --schedule 1f1b --save-plan "$WORK/plan.json" >/dev/null || fail "simulate --save-plan"
fi

# Bad arguments: exit 2 and one line naming the problem.
"$BIN" dispatch --plan "$WORK/plan.json" --worker nohost --db "$WORK/runs.sqlite" 2>"$WORK/err"; rc=$?
[ $rc -eq 2 ] && grep -q "HOST:PORT" "$WORK/err" && pass "bad --worker" || fail "bad --worker: rc $rc $(cat "$WORK/err")"
"$BIN" dispatch --plan "$WORK/plan.json" --worker 127.0.0.1:1 --db "$WORK/runs.sqlite" 2>"$WORK/err"; rc=$?
[ $rc -eq 2 ] && grep -q "token-file" "$WORK/err" && pass "agent without token" || fail "agent without token: rc $rc $(cat "$WORK/err")"
"$BIN" dispatch --plan "$WORK/missing.json" --worker local 2>"$WORK/err"; rc=$?
[ $rc -eq 2 ] && pass "missing plan file" || fail "missing plan file: rc $rc"

# No engine: the message says so and nothing is stored.
"$BIN" dispatch --plan "$WORK/plan.json" --worker local --engine "$WORK/none/hippie-engine" --db "$WORK/noengine.sqlite" \
    >"$WORK/out" 2>"$WORK/err"; rc=$?
[ $rc -eq 2 ] && grep -q "hippie-engine is not built/installed" "$WORK/err" && pass "missing engine" \
    || fail "missing engine: rc $rc $(cat "$WORK/err")"

if [ ! -x "$ENGINE" ]; then
    echo "SKIP: runs (no hippie-engine at $ENGINE; set HIPPIE_ENGINE)"
    [ $failures -eq 0 ] && exit 0 || exit 1
fi

# A local run: JSON lines, exit 0, the run succeeded in the store.
timeout 300 "$BIN" dispatch --plan "$WORK/plan.json" --worker local --engine "$ENGINE" --db "$WORK/runs.sqlite" \
    --work-dir "$WORK/work" --steps 3 --seed 1 >"$WORK/out" 2>"$WORK/err"; rc=$?
if [ $rc -eq 0 ] && grep -q '"event":"step"' "$WORK/out" && tail -1 "$WORK/out" | grep -q '"state":"succeeded"'; then
    pass "local run"
else
    fail "local run: rc $rc $(tail -3 "$WORK/out") $(cat "$WORK/err")"
fi
if "$BIN" runs --help >/dev/null 2>&1; then
    "$BIN" runs --db "$WORK/runs.sqlite" --json >"$WORK/runs.json" 2>&1 && grep -q '"succeeded"' "$WORK/runs.json" \
        && pass "run listed by hippie-plan runs" || fail "runs: $(cat "$WORK/runs.json")"
fi

# Real data: every rank reads the token-id file given with --data (gpt-tiny: vocabulary 64, 16
# tokens a sample), so the run's losses differ from the synthetic run's; the run keeps the path
# for a resume; a file that is not there is named before anything starts.
/usr/bin/python3 -c "
import random, struct; random.seed(3); n = 16 * 16 + 1
open('$WORK/tok.bin', 'wb').write(struct.pack('<%dH' % n, *[random.randrange(64) for _ in range(n)]))"
done_loss() { grep '"event":"done"' "$1" | grep -o '"loss":[0-9][0-9.e+-]*' | head -1 | cut -d: -f2; }
timeout 300 "$BIN" dispatch --plan "$WORK/plan.json" --worker local --engine "$ENGINE" --db "$WORK/runs.sqlite" \
    --work-dir "$WORK/work" --steps 3 --seed 1 --data "$WORK/tok.bin" >"$WORK/data.out" 2>"$WORK/err"; rc=$?
DATA_LOSS=$(done_loss "$WORK/data.out"); SYN_LOSS=$(done_loss "$WORK/out")
[ $rc -eq 0 ] && [ -n "$DATA_LOSS" ] && [ -n "$SYN_LOSS" ] && [ "$DATA_LOSS" != "$SYN_LOSS" ] \
    && pass "local run on --data tok.bin (loss $DATA_LOSS, synthetic $SYN_LOSS)" || fail "--data run: rc $rc '$DATA_LOSS' '$SYN_LOSS' $(tail -2 "$WORK/data.out") $(cat "$WORK/err")"
"$BIN" runs --db "$WORK/runs.sqlite" --json 2>&1 | grep -q "\"data_file\": *\"$WORK/tok.bin\"" && pass "the run stores its --data file" \
    || fail "--data not stored: $("$BIN" runs --db "$WORK/runs.sqlite" --json 2>&1 | head -c 600)"
"$BIN" dispatch --plan "$WORK/plan.json" --worker local --engine "$ENGINE" --db "$WORK/runs.sqlite" --data "$WORK/nothere.bin" 2>"$WORK/err"; rc=$?
[ $rc -eq 2 ] && grep -q "nothere.bin: no such file" "$WORK/err" && pass "--data of a missing file refused" || fail "missing --data: rc $rc $(cat "$WORK/err")"

# Progress lines instead of JSON.
timeout 300 "$BIN" dispatch --plan "$WORK/plan.json" --worker local --engine "$ENGINE" --db "$WORK/runs.sqlite" \
    --work-dir "$WORK/work" --steps 2 --progress >"$WORK/out" 2>"$WORK/err"; rc=$?
[ $rc -eq 0 ] && grep -q "rank 1 step 1" "$WORK/out" && grep -q "succeeded" "$WORK/out" && pass "--progress" \
    || fail "--progress: rc $rc $(cat "$WORK/out") $(cat "$WORK/err")"

if [ ! -x "$AGENT" ]; then
    echo "SKIP: agent runs (no hippie-agent beside hippie-plan)"
    [ $failures -eq 0 ] && exit 0 || exit 1
fi
echo "cli-test-token" >"$WORK/token"
echo "wrong-token" >"$WORK/wrong"
chmod 600 "$WORK/token" "$WORK/wrong"
"$AGENT" --listen 127.0.0.1:0 --token-file "$WORK/token" --work-dir "$WORK/agent" --engine "$ENGINE" \
    >"$WORK/agent.out" 2>"$WORK/agent.err" &
AGENT_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/agent.out" && break; sleep 0.1; done
PORT="$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$WORK/agent.out" | head -1)"
if [ -z "$PORT" ]; then
    fail "hippie-agent did not start: $(cat "$WORK/agent.err")"
    exit 1
fi
timeout 300 "$BIN" dispatch --plan "$WORK/plan.json" --worker "127.0.0.1:$PORT" --token-file "$WORK/token" \
    --db "$WORK/runs.sqlite" --steps 3 >"$WORK/out" 2>"$WORK/err"; rc=$?
[ $rc -eq 0 ] && tail -1 "$WORK/out" | grep -q '"state":"succeeded"' && pass "agent run" \
    || fail "agent run: rc $rc $(tail -3 "$WORK/out") $(cat "$WORK/err")"
timeout 300 "$BIN" dispatch --plan "$WORK/plan.json" --worker "127.0.0.1:$PORT" --token-file "$WORK/token" \
    --db "$WORK/runs.sqlite" --steps 3 --seed 1 --data "$WORK/tok.bin" >"$WORK/out" 2>"$WORK/err"; rc=$?
[ $rc -eq 0 ] && [ "$(done_loss "$WORK/out")" = "$DATA_LOSS" ] && pass "agent run on --data: the local run's loss $DATA_LOSS" \
    || fail "agent --data run: rc $rc loss '$(done_loss "$WORK/out")' (local '$DATA_LOSS') $(tail -2 "$WORK/out") $(cat "$WORK/err")"
timeout 60 "$BIN" dispatch --plan "$WORK/plan.json" --worker "127.0.0.1:$PORT" --token-file "$WORK/wrong" \
    --db "$WORK/runs.sqlite" --steps 3 >"$WORK/out" 2>"$WORK/err"; rc=$?
[ $rc -eq 3 ] && grep -qi "refused" "$WORK/err" && ! grep -q '"event":"step"' "$WORK/out" && pass "wrong token refused" \
    || fail "wrong token: rc $rc $(cat "$WORK/err")"

[ $failures -eq 0 ] && exit 0 || exit 1
