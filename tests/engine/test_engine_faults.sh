#!/usr/bin/env bash
# Bad input is an error event and exit code 2; a rank killed mid-run makes the others fail
# within seconds with a message, and `launch` names the rank.
source "$(dirname "$0")/lib.sh"
# expect_exit CODE DESCRIPTION MESSAGE OUTFILE -- command...: the command exits CODE with an
# error event whose message contains MESSAGE (so a check cannot pass on another error).
expect_exit() {
    local want="$1" what="$2" message="$3" out="$4"; shift 5
    timeout 60 "$@" > "$out" 2>&1; local got=$?
    if [ "$got" = "$want" ] && grep '"event":"error"' "$out" | grep -qF -- "$message"; then
        pass "$what: exit $got, $(grep -o '"message":"[^"]*' "$out" | head -1 | cut -c12-100)"
    else fail "$what: exit $got (want $want, message with '$message'): $(tail -2 "$out")"; fi
}
# Every rank here names its master: without it the engine stops at "$MASTER_ADDR is not set"
# before it reaches what each check is about.
MASTER=(--master-addr 127.0.0.1)
echo '{ not json' > "$WORK/bad.json"
expect_exit 2 "unparsable plan" "bad.json: not valid JSON" "$WORK/o1" -- "$ENGINE" run --plan "$WORK/bad.json" --rank 0 --world-size 1 "${MASTER[@]}" --master-port 1
expect_exit 2 "missing plan" "nope.json: cannot open for reading" "$WORK/o2" -- "$ENGINE" run --plan "$WORK/nope.json" --rank 0 --world-size 1 "${MASTER[@]}" --master-port 1
plan "$WORK/p.json" --model gpt-tiny --pp 2 --dp 1 --microbatches 2 --global-batch 8
expect_exit 2 "wrong world size" "the plan needs 2 ranks (pp 2 x dp 1) but --world-size is 3" "$WORK/o3" -- \
    "$ENGINE" run --plan "$WORK/p.json" --rank 0 --world-size 3 "${MASTER[@]}" --master-port 1
sed 's/"last_layer": 5/"last_layer": 9/' "$WORK/p.json" > "$WORK/mismatch.json"
expect_exit 2 "plan that does not match the model" "field 'stages': cover layers 0..9 but the model has 6 layers" "$WORK/o4" -- \
    "$ENGINE" run --plan "$WORK/mismatch.json" --rank 0 --world-size 2 "${MASTER[@]}" --master-port 1
# Tensor parallelism of a model it does not split (the MLP): refused at load, naming the plan file.
plan "$WORK/mlp.json" --model mlp-tiny --pp 2 --dp 1 --microbatches 2 --global-batch 8
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p.update(version=4, tp=2, sequence_parallel=True, device_map=[[0,1],[2,3]]); json.dump(p, open(sys.argv[2], "w"))' \
    "$WORK/mlp.json" "$WORK/tp.json"
expect_exit 2 "tensor-parallel plan" "tp.json: tensor parallelism (tp 2, sequence parallel) is trained by this engine for the zoo's transformer models (gpt, bert, transformer), not 'mlp'" \
    "$WORK/o6" -- "$ENGINE" run --plan "$WORK/tp.json" --rank 0 --world-size 4 "${MASTER[@]}" --master-port 1
PORT=$(( 20000 + RANDOM % 20000 ))
start=$SECONDS
expect_exit 2 "unreachable master" "cannot reach the master 127.0.0.1:$PORT within 2 s" "$WORK/o5" -- \
    "$ENGINE" run --plan "$WORK/p.json" --rank 1 --world-size 2 "${MASTER[@]}" --master-port $PORT --connect-timeout 2
[ $((SECONDS - start)) -le 20 ] || fail "unreachable master took $((SECONDS - start)) s"

# A rank killed mid-run: the survivor reports an error and exits non-zero, it does not hang.
PORT=$(( 20000 + RANDOM % 20000 ))
"$ENGINE" run --plan "$WORK/p.json" --rank 0 --world-size 2 "${MASTER[@]}" --master-port $PORT --steps 100000 --op-timeout 20 > "$WORK/r0" 2>&1 &
R0=$!
"$ENGINE" run --plan "$WORK/p.json" --rank 1 --world-size 2 "${MASTER[@]}" --master-port $PORT --steps 100000 --op-timeout 20 > "$WORK/r1" 2>&1 &
R1=$!
for _ in $(seq 100); do grep -q '"event":"step"' "$WORK/r1" 2>/dev/null && break; sleep 0.2; done
grep -q '"event":"step"' "$WORK/r1" || fail "rank 1 never trained a step before the kill: $(tail -1 "$WORK/r1")"
kill -9 $R1
start=$SECONDS
for _ in $(seq 300); do kill -0 $R0 2>/dev/null || break; sleep 0.1; done
if kill -0 $R0 2>/dev/null; then fail "rank 0 still runs 30 s after rank 1 was killed"; kill -9 $R0
else
    wait $R0; code=$?
    # Its message names the peer it lost ("... from rank 1 failed: ... Connection reset by peer"),
    # or the group it was in a collective with (the tied embedding's all-reduce, "ranks 0,1").
    [ $code -ne 0 ] && grep '"event":"error"' "$WORK/r0" | grep -qE 'rank 1|ranks 0,1\)' \
        && pass "rank 0 stopped $((SECONDS - start)) s after rank 1 was killed: $(grep -o '"message":"[^"]*' "$WORK/r0" | cut -c12-160)" \
        || fail "rank 0 after the kill: exit $code, $(tail -1 "$WORK/r0")"
fi

# The same under launch: its error names the killed rank.
"$ENGINE" launch --plan "$WORK/p.json" --nprocs 2 --steps 100000 --rank-args "--op-timeout 20" > "$WORK/l" 2>&1 &
L=$!
for _ in $(seq 100); do grep -q '"event":"step","rank":1' "$WORK/l" 2>/dev/null && break; sleep 0.2; done
VICTIM=$(pgrep -P $L | sort -n | tail -1)
[ -n "$VICTIM" ] && kill -9 "$VICTIM"
for _ in $(seq 300); do kill -0 $L 2>/dev/null || break; sleep 0.1; done
if kill -0 $L 2>/dev/null; then fail "launch still runs 30 s after a rank was killed"; for c in $(pgrep -P $L); do kill -9 "$c"; done; kill -9 $L
else
    wait $L; code=$?
    msg=$(tail -1 "$WORK/l")
    [ $code -ne 0 ] && echo "$msg" | grep -q '"message":"rank 1 was killed by signal 9' && pass "launch: $msg" || fail "launch exit $code: $msg"
fi
finish
