#!/usr/bin/env bash
# Activation release: stage s of a 1F1B pipeline holds at most min(p - s, m) micro-batches
# (GPipe holds all m). Communication scheduling: under hippie some bucket all-reduces are
# launched before the last backward ends; under 1f1b none are.
source "$(dirname "$0")/lib.sh"
M=4
for schedule in 1f1b hippie gpipe; do
    plan "$WORK/p.json" --model gpt-tiny --pp 2 --dp 2 --microbatches $M --global-batch 16 --schedule $schedule --bucket-bytes 4096
    launch "$WORK/p.json" 4 2 "$WORK/p.out" || { fail "$schedule run: $(tail -2 "$WORK/p.out")"; continue; }
    for s in 0 1; do
        held=$(grep '"event":"done"' "$WORK/p.out" | grep -o "\"max_stashed_microbatches\":{\"$s\":[0-9]*" | grep -o '[0-9]*$' | sort -n | tail -1)
        if [ "$schedule" = gpipe ]; then limit=$M; else limit=$(( 2 - s < M ? 2 - s : M )); fi
        if [ -n "$held" ] && [ "$held" -le "$limit" ]; then pass "$schedule stage $s holds at most $held micro-batches (limit $limit)"
        else fail "$schedule stage $s held '$held' micro-batches, limit $limit"; fi
    done
    early=$(field "$WORK/p.out" done allreduces_launched_before_backward_end | sort -n | tail -1)
    total=$(field "$WORK/p.out" done allreduces | sort -n | tail -1)
    if [ "$schedule" = hippie ]; then
        [ "${early:-0}" -gt 0 ] && pass "hippie launched $early of $total all-reduces before the last backward ended" \
            || fail "hippie: no all-reduce overlapped the last backward ($early of $total)"
    elif [ "$schedule" = 1f1b ]; then
        [ "${early:-1}" -eq 0 ] && [ "${total:-0}" -gt 0 ] && pass "1f1b all-reduces ($total) start after backward" \
            || fail "1f1b: $early of $total all-reduces before the last backward ended"
        # The last stage posts micro-batch 1's receive before micro-batch 0's backward ends
        # (the executor posts the next compute's receives ahead): the data arrives during it.
        python3 - "$WORK/p.out" <<'PY' && pass "1f1b: the last stage posts the next activation's receive during the backward before it" \
            || fail "1f1b: the last stage posted micro-batch 1's receive only after micro-batch 0's backward"
import json, sys
checked = 0
for line in open(sys.argv[1]):
    if '"event":"trace"' not in line:
        continue
    events = json.loads(line)["trace"]["events"]
    recv = [e for e in events if e["kind"] == "recv-activation" and e["mb"] == 1]
    back = [e for e in events if e["kind"] == "backward" and e["mb"] == 0]
    if recv and back:
        assert recv[0]["start_s"] < back[0]["end_s"], (recv[0], back[0])
        checked += 1
assert checked == 2, checked  # the two replicas of stage 1
PY
    fi
done
finish
