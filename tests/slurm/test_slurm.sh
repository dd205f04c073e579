#!/usr/bin/env bash
# Dispatch to a real Slurm: a private one-node cluster (slurm_cluster.sh) runs a 4-task CPU plan
# through `hippie-plan dispatch --slurm`, and the run store keeps what Slurm said. Checked: a run
# that waits behind another job shows pending with Slurm's reason, then runs and succeeds with its
# job id, script, node list and per-task ends stored; a job cancelled with scancel ends cancelled;
# Ctrl-C of hippie-plan cancels the job and ends the run cancelled;
# a task killed mid-run fails the run with srun's word on that task; a job Slurm cannot run (more
# nodes than exist, a time limit above the partition's) fails with Slurm's reason instead of
# hanging; a run with checkpoints whose task dies is resumed from them as attempt 2 of the same
# run. Skips (exit 77) only when the daemons cannot start at all, and says why.
# With a third argument (slurm_studio_follow, or none), the studio follows one more run there.
# Usage: test_slurm.sh HIPPIE_PLAN HIPPIE_ENGINE [SLURM_STUDIO_FOLLOW|none]
set -u
PLAN_BIN="$1"
ENGINE="$2"
STUDIO="${3:-none}"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/slurm_cluster.sh"
source "$here/ssh_login.sh"
WORK="$(mktemp -d /tmp/hippie-slurm-test.XXXXXX)"
FAILS=0
BG=()
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
cleanup() {
    local p
    for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
    if [ -n "${SLURM_CONF:-}" ]; then
        # Jobs first, so that no task (slurmstepd) outlives the daemons.
        timeout 10 squeue -h -o %i 2>/dev/null | xargs -r timeout 10 scancel 2>/dev/null
        for _ in $(seq 60); do [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
    fi
    ssh_login_stop
    slurm_cluster_stop
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! slurm_cluster_start "$WORK/cluster"; then
    echo "SKIP: a private Slurm cluster could not start here: $SLURM_CLUSTER_WHY"
    exit 77
fi
echo "Slurm up: $(sinfo -h -o '%P %D node(s) %c CPU(s) %T')"
NODE=$(hostname -s)
DB="$WORK/runs.sqlite"
"$ENGINE" plan --model gpt-tiny --pp 2 --dp 2 --microbatches 2 --global-batch 8 --out "$WORK/p.json" || fail "engine plan"
# The prediction's layer times, measured once (micro-batch 8 / (2 x 2) = 2) instead of by every dispatch.
"$ENGINE" profile --model gpt-tiny --batch-size 2 --repeats 3 --out "$WORK/graph.json" > /dev/null || fail "engine profile"
# 4 tasks on a node that may have fewer CPUs: --overcommit lets them share.
dispatch() { timeout 300 "$PLAN_BIN" dispatch --plan "$WORK/p.json" --graph "$WORK/graph.json" --slurm --db "$DB" \
    --work-dir "$WORK/work" --engine "$ENGINE" --extra-sbatch=--overcommit "$@"; }
q() { sqlite3 "$DB" "$1"; }
finished_state() { grep '"event":"finished"' "$1" | grep -o '"state":"[a-z]*"' | cut -d'"' -f4; }
slurm_id_of() { grep -o '"job_id":"[0-9]*"' "$1" | head -1 | cut -d'"' -f4; }
plan_pid_under() {  # the hippie-plan process below PID (a subshell, then timeout)
    local c
    for c in $(pgrep -P "$1"); do
        if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = hippie-plan ]; then echo "$c"; return 0; fi
        plan_pid_under "$c" && return 0
    done
    return 1
}
wait_for() {  # wait_for FILE PATTERN SECONDS
    for _ in $(seq $(( $3 * 5 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
    return 1
}

# --show-script prints the batch script and submits nothing.
dispatch --show-script > "$WORK/script.txt" 2>&1
grep -q '^#SBATCH --ntasks=4$' "$WORK/script.txt" && grep -q '^#SBATCH --nodes=1$' "$WORK/script.txt" \
    && grep -q '^#SBATCH --overcommit$' "$WORK/script.txt" && grep -q '^srun --kill-on-bad-exit=1' "$WORK/script.txt" \
    && [ -z "$(squeue -h)" ] && pass "--show-script: $(grep -c '^#SBATCH' "$WORK/script.txt") #SBATCH lines, nothing submitted" \
    || fail "--show-script: $(cat "$WORK/script.txt")"
dispatch --show-script --data "/shared/my data/tok.bin" --token-dtype uint32 > "$WORK/script.txt" 2>&1
grep -q -- "--data '/shared/my data/tok.bin' --token-dtype 'uint32'" "$WORK/script.txt" \
    && pass "--show-script --data: every task reads the file (quoted)" || fail "--show-script --data: $(cat "$WORK/script.txt")"

# 1. Pending behind a job that holds every CPU, then running, then succeeded. The blocker stays
# until the run reports pending with a reason (however long planning and submitting take).
BLOCK=$(sbatch --parsable --exclusive -n 1 --output=/dev/null --wrap "sleep 300")
dispatch --steps 3 > "$WORK/ok.out" 2> "$WORK/ok.err" &
OKPID=$!
BG+=($OKPID)
if wait_for "$WORK/ok.out" '"message":"pending: \(Resources\|Priority\)' 120; then
    pass "it waited behind job $BLOCK: $(grep -o '"message":"pending: [^"]*"' "$WORK/ok.out" | tail -1)"
else
    fail "no pending state with a reason was reported: $(grep -o '"message":"pending[^"]*"' "$WORK/ok.out" | tr '\n' ' ')"
fi
scancel "$BLOCK"
wait "$OKPID"
code=$?
state=$(finished_state "$WORK/ok.out")
RUN=$(grep '"event":"stored"' "$WORK/ok.out" | grep -o '"run":[0-9]*' | cut -d: -f2)
JOB=$(slurm_id_of "$WORK/ok.out")
if [ $code -eq 0 ] && [ "$state" = succeeded ] && [ -n "$RUN" ] && [ -n "$JOB" ]; then pass "run $RUN succeeded as Slurm job $JOB"
else fail "run on Slurm: exit $code, state '$state': $(tail -3 "$WORK/ok.err") $(tail -2 "$WORK/ok.out")"; fi
order=$(grep -o '"state":"\(queued\|running\|succeeded\)"' "$WORK/ok.out" | uniq | tr '\n' ' ')
[[ "$order" == *queued*running*succeeded* ]] && pass "states in order: $order" || fail "state order: $order"
row=$(q "SELECT slurm_job_id, state, node_list, exit_code FROM slurm_jobs WHERE run_id = ${RUN:-0}")
[ "$row" = "$JOB|COMPLETED|$NODE|0:0" ] && pass "stored Slurm record: $row" || fail "stored Slurm record '$row', want '$JOB|COMPLETED|$NODE|0:0'"
tasks=$(q "SELECT tasks FROM slurm_jobs WHERE run_id = ${RUN:-0}")
[ "$(grep -o '"state":"completed"' <<< "$tasks" | wc -l)" -eq 4 ] && pass "4 tasks completed" || fail "tasks: $tasks"
q "SELECT script FROM slurm_jobs WHERE run_id = ${RUN:-0}" > "$WORK/stored-script.txt"
grep -q '^#SBATCH --ntasks=4$' "$WORK/stored-script.txt" && grep -q '^srun ' "$WORK/stored-script.txt" && pass "the script is kept with the run" || fail "stored script: $(head -5 "$WORK/stored-script.txt")"
[ "$(q "SELECT state || ' ' || job_id FROM runs WHERE id = ${RUN:-0}")" = "succeeded $(grep -o '"job":"[^"]*"' "$WORK/ok.out" | head -1 | cut -d'"' -f4)" ] \
    && pass "runs row: succeeded" || fail "runs row: $(q "SELECT state, message FROM runs WHERE id = ${RUN:-0}")"
steps=$(q "SELECT COUNT(DISTINCT rank) FROM events WHERE run_id = ${RUN:-0} AND kind = 'done'")
traces=$(q "SELECT COUNT(DISTINCT rank) FROM events WHERE run_id = ${RUN:-0} AND kind = 'trace'")
[ "$steps" = 4 ] && [ "$traces" = 4 ] && pass "every rank's done and trace events were streamed from its file" || fail "done from $steps ranks, traces from $traces"
measured=$(q "SELECT value FROM metrics WHERE run_id = ${RUN:-0} AND name = 'measured_step_s'")
[ -n "$measured" ] && pass "measured step $measured s" || fail "no measured step stored"

# 2. Cancelled with scancel while it runs: the run ends cancelled.
dispatch --steps 100000 > "$WORK/cancel.out" 2>&1 &
BG+=($!)
if wait_for "$WORK/cancel.out" '"state":"running"' 120; then
    CJ=$(slurm_id_of "$WORK/cancel.out")
    scancel "$CJ"
    wait "${BG[-1]}"; code=$?
    state=$(finished_state "$WORK/cancel.out")
    [ "$state" = cancelled ] && [ $code -eq 3 ] && pass "scancel $CJ: run cancelled ($(grep -o '"message":"[^"]*"' "$WORK/cancel.out" | tail -1))" \
        || fail "after scancel: exit $code, state '$state'"
    [ "$(q "SELECT state FROM slurm_jobs WHERE slurm_job_id = '$CJ'")" = CANCELLED ] && pass "stored Slurm state CANCELLED" \
        || fail "stored Slurm state: $(q "SELECT state FROM slurm_jobs WHERE slurm_job_id = '$CJ'")"
else
    fail "the run to cancel never ran: $(tail -3 "$WORK/cancel.out")"
fi

# 2b. Ctrl-C (SIGINT) of hippie-plan while the job runs: it runs scancel, says so, and the run
# ends cancelled in the store.
dispatch --steps 100000 > "$WORK/int.out" 2> "$WORK/int.err" &
BG+=($!)
if wait_for "$WORK/int.out" '"state":"running"' 120; then
    IJ=$(slurm_id_of "$WORK/int.out")
    IP=$(plan_pid_under "${BG[-1]}")
    kill -INT "$IP"
    wait "${BG[-1]}"; code=$?
    state=$(finished_state "$WORK/int.out")
    IRUN=$(grep '"event":"stored"' "$WORK/int.out" | grep -o '"run":[0-9]*' | cut -d: -f2)
    [ "$state" = cancelled ] && [ $code -eq 3 ] && grep -q "SIGINT: cancelling the run (scancel $IJ)" "$WORK/int.err" \
        && pass "SIGINT: $(grep SIGINT "$WORK/int.err")" || fail "after SIGINT: exit $code, state '$state': $(cat "$WORK/int.err")"
    ended="$(q "SELECT state FROM runs WHERE id = ${IRUN:-0}")|$(q "SELECT state FROM slurm_jobs WHERE slurm_job_id = '$IJ'")"
    [ "$ended" = "cancelled|CANCELLED" ] && [ -z "$(squeue -h -j "$IJ" 2>/dev/null)" ] && pass "stored after SIGINT: $ended, job $IJ gone" \
        || fail "stored after SIGINT: $ended; queue: $(squeue -h)"
else
    fail "the run to interrupt never ran: $(tail -3 "$WORK/int.out")"
fi

# 3. A task killed mid-run fails the run, naming the task.
dispatch --steps 100000 > "$WORK/kill.out" 2>&1 &
BG+=($!)
# (The engine's JSON has its keys sorted: "rank" comes after "event" and "loss".)
if wait_for "$WORK/kill.out" '"event":"step"[^}]*"rank":2[,}]' 120; then
    KJ=$(slurm_id_of "$WORK/kill.out")
    JOBDIR=$(q "SELECT job_dir FROM slurm_jobs WHERE slurm_job_id = '$KJ'")
    victim=""
    for p in $(pgrep -f -- "run --plan plan.json --steps 100000"); do
        [ "$(readlink "/proc/$p/cwd")" = "$JOBDIR" ] && tr '\0' '\n' < "/proc/$p/environ" | grep -qx 'SLURM_PROCID=2' && victim=$p
    done
    if [ -n "$victim" ]; then
        kill -9 "$victim"
        wait "${BG[-1]}"; code=$?
        state=$(finished_state "$WORK/kill.out")
        msg=$(grep '"event":"finished"' "$WORK/kill.out" | grep -o '"message":"[^"]*"')
        [ "$state" = failed ] && [ $code -eq 3 ] && [[ "$msg" == *"task 2"* ]] && pass "task 2 killed: $msg" \
            || fail "after killing task 2: exit $code, state '$state', $msg"
        t2=$(q "SELECT tasks FROM slurm_jobs WHERE slurm_job_id = '$KJ'")
        [[ "$t2" == *'"rank":2,"state":"Killed"'* ]] && pass "task 2's end stored: Killed" || fail "stored tasks: $t2"
    else
        fail "no process of task 2 found under $JOBDIR"
    fi
else
    fail "the run to kill never stepped: $(tail -3 "$WORK/kill.out")"
fi

# 4. Jobs Slurm cannot run end failed with Slurm's reason, within seconds.
start=$SECONDS
dispatch --steps 1 --nodes 2 --tasks-per-node 2 > "$WORK/nodes.out" 2>&1; code=$?
msg=$(grep '"event":"finished"' "$WORK/nodes.out" | grep -o '"message":"[^"]*"')
[ $code -eq 3 ] && [[ "$msg" == *"node configuration is not available"* || "$msg" == *"PartitionConfig"* || "$msg" == *"PartitionNodeLimit"* ]] \
    && pass "2 nodes of 1: $msg ($((SECONDS - start)) s)" || fail "2 nodes of 1: exit $code, $msg"
start=$SECONDS
dispatch --steps 1 --time 02:00:00 > "$WORK/time.out" 2>&1; code=$?
msg=$(grep '"event":"finished"' "$WORK/time.out" | grep -o '"message":"[^"]*"')
[ $code -eq 3 ] && [[ "$msg" == *"PartitionTimeLimit"* ]] && pass "2 h on a 1 h partition: $msg ($((SECONDS - start)) s)" \
    || fail "time limit above the partition's: exit $code, $msg"
[ -z "$(squeue -h)" ] && pass "nothing left in the queue" || fail "left in the queue: $(squeue -h)"

# 5. Checkpoints on the shared directory: a run whose rank 1 dies at step 5 (after checkpoints of
#    steps 1 and 3) is resumed by `dispatch --resume` as attempt 2 of the same run, a new Slurm job
#    reading the first job's checkpoints, and ends with the losses of the same run left alone.
step_losses() {  # OUTFILE: "step rank loss" of each step event with a loss, from step 4 on
    python3 -c '
import json, sys
rows = set()
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line).get("event")
    except (ValueError, AttributeError):
        continue
    if isinstance(ev, dict) and ev.get("event") == "step" and ev.get("loss") is not None and ev["step"] >= 4:
        rows.add((ev["step"], ev["rank"], round(ev["loss"], 6)))
print("\n".join("%d %d %.6f" % r for r in sorted(rows)))' "$1"
}
dispatch --steps 6 --seed 3 --checkpoint-every 2 > "$WORK/ck-ref.out" 2>&1; code=$?
[ $code -eq 0 ] || fail "uninterrupted run with checkpoints: exit $code: $(tail -3 "$WORK/ck-ref.out")"
HIPPIE_ENGINE_TEST_KILL=1:5 dispatch --steps 6 --seed 3 --checkpoint-every 2 > "$WORK/ck-a1.out" 2>&1; code=$?
RID=$(grep '"event":"stored"' "$WORK/ck-a1.out" | grep -o '"run":[0-9]*' | cut -d: -f2)
if [ $code -eq 3 ] && [ -n "$RID" ]; then
    timeout 300 "$PLAN_BIN" dispatch --resume "$RID" --db "$DB" > "$WORK/ck-a2.out" 2>&1; code=$?
    ref=$(step_losses "$WORK/ck-ref.out")
    got=$(step_losses "$WORK/ck-a2.out")
    [ $code -eq 0 ] && [ "$(q "SELECT state, attempt FROM runs WHERE id = $RID")" = "succeeded|2" ] \
        && [ "$(q "SELECT state FROM run_attempts WHERE run_id = $RID")" = failed ] \
        && grep -q '"resumed_from":{[^}]*"step":3' "$WORK/ck-a2.out" \
        && pass "a failed Slurm run resumed from step 3 as attempt 2 of run $RID" \
        || fail "Slurm resume: exit $code, $(q "SELECT state, attempt, message FROM runs WHERE id = $RID"): $(tail -3 "$WORK/ck-a2.out")"
    [ -n "$ref" ] && [ "$ref" = "$got" ] && pass "resumed losses equal the uninterrupted run's" \
        || fail "Slurm resume losses: reference [$ref] resumed [$got]"
else
    fail "the run whose rank 1 dies: exit $code, run '$RID': $(tail -3 "$WORK/ck-a1.out")"
fi

# 5b. Through a login host over ssh: a private sshd on 127.0.0.1 (ssh_login.sh) is the login
#     host "hippie-login"; the ssh on PATH is the real one with that host's client config. The
#     run submits, follows and stores the job through ssh alone; an unknown login host fails
#     with ssh's own words, not a hang.
if ssh_login_start "$WORK/ssh"; then
    PATH="$SSH_LOGIN_BIN:$PATH" dispatch --steps 3 --login hippie-login --slurm-dir "$WORK/login-jobs" \
        --slurm-engine "$ENGINE" > "$WORK/login.out" 2> "$WORK/login.err"; code=$?
    RID=$(grep '"event":"stored"' "$WORK/login.out" | grep -o '"run":[0-9]*' | cut -d: -f2)
    steps=$(grep -c '"event":"step"' "$WORK/login.out")
    [ $code -eq 0 ] && [ -n "$RID" ] \
        && [ "$(q "SELECT r.state, s.login_host, s.state FROM runs r JOIN slurm_jobs s ON s.run_id = r.id WHERE r.id = $RID")" = "succeeded|hippie-login|COMPLETED" ] \
        && [ "$steps" -ge 3 ] && ls "$WORK"/login-jobs/*/rank-0.* > /dev/null 2>&1 \
        && pass "a run through the login host over ssh succeeded ($steps step events streamed back)" \
        || fail "login host over ssh: exit $code, run '$RID' $(q "SELECT state, message FROM runs WHERE id = ${RID:-0}"): $(tail -3 "$WORK/login.err")"
    start=$(date +%s)
    PATH="$SSH_LOGIN_BIN:$PATH" dispatch --steps 1 --login nosuch-login.invalid --slurm-dir "$WORK/login-jobs" \
        --slurm-engine "$ENGINE" > "$WORK/nologin.out" 2>&1; code=$?
    took=$(( $(date +%s) - start ))
    [ $code -ne 0 ] && [ $took -lt 120 ] && grep -q 'nosuch-login.invalid' "$WORK/nologin.out" \
        && pass "an unknown login host fails in ${took} s: $(grep -o 'ssh: [^"]*' "$WORK/nologin.out" | head -1)" \
        || fail "unknown login host: exit $code after ${took} s: $(tail -3 "$WORK/nologin.out")"
    ssh_login_stop
else
    echo "SKIP (login host over ssh only): $SSH_LOGIN_WHY"
fi

# 6. The studio follows a run: pending behind another job, running, the measured Gantt chart.
if [ "$STUDIO" != none ]; then
    HIPPIE_SLURM_BLOCKER=$(sbatch --parsable --exclusive -n 1 --output=/dev/null --wrap "sleep 300") \
        timeout 400 "$STUDIO" "$ENGINE" "$WORK/p.json" "$WORK" > "$WORK/studio.out" 2>&1; code=$?
    sed 's/^/    studio: /' "$WORK/studio.out" | grep -E 'ok:|FAIL:'
    [ $code -eq 0 ] && pass "the studio followed a Slurm run" \
        || fail "the studio following a Slurm run: exit $code: $(tail -3 "$WORK/studio.out"); rank 0: $(tail -n 3 "$WORK"/studio-work/slurm/*/rank-0.* 2>&1)"
fi

[ "$FAILS" -eq 0 ] && echo "all passed" || echo "$FAILS failed"
exit "$FAILS"
