#!/usr/bin/env bash
# `hippie-engine run` without rank flags starts the way every PyTorch job starts: from the
# variables that torchrun, Slurm's srun or Open MPI's mpirun set. 4 ranks under each set train
# the same plan to the same loss; flags win over variables; a missing or contradictory variable
# is an error event (exit 2) that names it.
source "$(dirname "$0")/lib.sh"
plan "$WORK/p.json" --model gpt-tiny --pp 2 --dp 2 --microbatches 2 --global-batch 8
ENV_CLEAN=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u MASTER_ADDR -u MASTER_PORT -u SLURM_PROCID -u SLURM_NTASKS
           -u SLURM_LOCALID -u SLURM_NODELIST -u SLURM_JOB_NODELIST -u SLURM_JOB_ID -u OMPI_COMM_WORLD_RANK
           -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK)

# ranks NAME VARS_FOR_RANK: starts 4 ranks, each with the variables `VARS_FOR_RANK r` prints
ranks() {
    local name="$1" fn="$2" pids=() r
    for r in 0 1 2 3; do
        # shellcheck disable=SC2046
        timeout 120 "${ENV_CLEAN[@]}" $($fn $r) "$ENGINE" run --plan "$WORK/p.json" --steps 2 --seed 7 \
            --connect-timeout 20 --op-timeout 30 > "$WORK/$name.$r" 2>&1 &
        pids+=($!)
    done
    local codes=""
    for p in "${pids[@]}"; do wait "$p"; codes="$codes$?"; done
    echo "$codes"
}
check_ranks() {  # check_ranks NAME LAUNCHER CODES
    local name="$1" launcher="$2" codes="$3" r bad=""
    [ "$codes" = "0000" ] || { fail "$name: exit codes $codes: $(tail -1 "$WORK/$name.0")"; return; }
    for r in 0 1 2 3; do
        grep -q "\"event\":\"rendezvous\",\"launcher\":\"$launcher\",\"local_rank\":$((r % 2)),\"master_addr\":\"127.0.0.1\"" "$WORK/$name.$r" \
            && grep -q "\"rank\":$r,\"world_size\":4" <(grep '"event":"rendezvous"' "$WORK/$name.$r") \
            && grep -q '"event":"done"' "$WORK/$name.$r" || bad="$bad $r"
    done
    [ -z "$bad" ] && pass "$name: 4 ranks trained, launcher $launcher, loss $(field "$WORK/$name.3" done loss)" \
        || fail "$name: ranks$bad lack the rendezvous or done event: $(grep rendezvous "$WORK/$name.${bad# }" ; tail -1 "$WORK/$name.${bad# }")"
}

PORT=$(( 20000 + RANDOM % 20000 ))
torchrun_vars() { echo "RANK=$1 WORLD_SIZE=4 LOCAL_RANK=$(($1 % 2)) MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT"; }
check_ranks torchrun torchrun "$(ranks torchrun torchrun_vars)"

# Slurm: the master is the first host of the compressed list, the port comes from the job id.
JOB=$(( 100000 + RANDOM ))
slurm_vars() { echo "SLURM_PROCID=$1 SLURM_NTASKS=4 SLURM_LOCALID=$(($1 % 2)) SLURM_NODELIST=127.0.0.[1-2],other SLURM_JOB_ID=$JOB"; }
check_ranks slurm slurm "$(ranks slurm slurm_vars)"
grep -q "\"master_port\":$(( 15000 + JOB % 15000 ))" "$WORK/slurm.1" && pass "slurm: port $(( 15000 + JOB % 15000 )) from job id $JOB" \
    || fail "slurm: the port is not derived from the job id: $(grep rendezvous "$WORK/slurm.1")"

PORT=$(( 20000 + RANDOM % 20000 ))
ompi_vars() { echo "OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=$(($1 % 2)) MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT"; }
check_ranks openmpi openmpi "$(ranks openmpi ompi_vars)"

# The same seed and plan give the same loss whichever launcher started the ranks (rank 3 holds
# the last stage, which computes the loss).
l1=$(field "$WORK/torchrun.3" done loss); l2=$(field "$WORK/slurm.3" done loss); l3=$(field "$WORK/openmpi.3" done loss)
[ -n "$l1" ] && [ "$l1" != null ] && [ "$l1" = "$l2" ] && [ "$l1" = "$l3" ] && pass "same loss $l1 under all three" || fail "losses differ: '$l1' '$l2' '$l3'"

# Flags win: a stale torchrun environment does not override --rank/--world-size/--master-port.
PORT=$(( 20000 + RANDOM % 20000 ))
flags_vars() { echo "RANK=9 WORLD_SIZE=17 MASTER_ADDR=192.0.2.1 MASTER_PORT=1"; }
pids=()
for r in 0 1 2 3; do
    timeout 120 "${ENV_CLEAN[@]}" $(flags_vars) "$ENGINE" run --plan "$WORK/p.json" --steps 1 --rank $r --world-size 4 \
        --master-addr 127.0.0.1 --master-port $PORT --connect-timeout 20 > "$WORK/flags.$r" 2>&1 &
    pids+=($!)
done
codes=""; for p in "${pids[@]}"; do wait "$p"; codes="$codes$?"; done
[ "$codes" = "0000" ] && ! grep -q rendezvous "$WORK/flags.0" && pass "flags win over RANK=9 WORLD_SIZE=17" \
    || fail "flags with a stale environment: codes $codes: $(tail -1 "$WORK/flags.0")"

# expect_error NAME MESSAGE_PART VARS...: one rank exits 2 with an error event naming the cause
expect_error() {
    local name="$1" want="$2"; shift 2
    timeout 60 "${ENV_CLEAN[@]}" "$@" "$ENGINE" run --plan "$WORK/p.json" --steps 1 --connect-timeout 2 > "$WORK/e.$name" 2>&1
    local code=$? msg
    msg=$(grep -o '"message":"[^"]*' "$WORK/e.$name" | head -1 | cut -c12-)
    [ $code -eq 2 ] && [[ "$msg" == *"$want"* ]] && pass "$name: $msg" || fail "$name: exit $code, '$msg' lacks '$want'"
}
expect_error "no launcher" "give --rank"
expect_error "RANK without WORLD_SIZE" '$WORLD_SIZE is not set' RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
expect_error "RANK not below WORLD_SIZE" '$RANK 4 is not below $WORLD_SIZE 4' RANK=4 WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
expect_error "RANK not a number" '$RANK is' RANK=one WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
expect_error "no MASTER_ADDR" '$MASTER_ADDR is not set' RANK=1 WORLD_SIZE=4 MASTER_PORT=1
expect_error "no MASTER_PORT" '$MASTER_PORT is not set' RANK=1 WORLD_SIZE=4 MASTER_ADDR=127.0.0.1
expect_error "Slurm without SLURM_NTASKS" '$SLURM_NTASKS is not set' SLURM_PROCID=0 SLURM_NODELIST=n1 SLURM_JOB_ID=5
expect_error "bad SLURM_NODELIST" "unbalanced" SLURM_PROCID=0 SLURM_NTASKS=4 SLURM_NODELIST=node[01-02 SLURM_JOB_ID=5
expect_error "LOCAL_RANK above RANK" '$OMPI_COMM_WORLD_LOCAL_RANK 3 is above' OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 \
    OMPI_COMM_WORLD_LOCAL_RANK=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=1
# The world size must be the plan's device count (pp 2 x dp 2 = 4).
expect_error "world size not the plan's" "the plan needs 4 ranks" SLURM_PROCID=0 SLURM_NTASKS=3 SLURM_NODELIST=localhost SLURM_JOB_ID=5
finish
