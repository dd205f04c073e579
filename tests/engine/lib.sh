# Shared helpers of the engine tests: every run is bounded by a timeout so nothing hangs.
set -u
ENGINE="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
FAILS=0

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
finish() { [ "$FAILS" -eq 0 ] && echo "all passed" || echo "$FAILS failed"; exit "$FAILS"; }

# plan FILE ARGS...: writes a plan for a tiny model
plan() { local out="$1"; shift; "$ENGINE" plan --out "$out" "$@" || fail "plan $*"; }

# launch PLAN NPROCS STEPS OUT [rank args...]: 4 ranks on 127.0.0.1, bounded to 120 s
launch() {
    local p="$1" n="$2" steps="$3" out="$4"; shift 4
    timeout 120 "$ENGINE" launch --plan "$p" --nprocs "$n" --steps "$steps" --seed 7 \
        --rank-args "--connect-timeout 20 --op-timeout 30 $*" > "$out" 2>"$out.err"
}

# field FILE EVENT KEY: the values of KEY in the EVENT lines (simple scalars)
field() { grep "\"event\":\"$2\"" "$1" | grep -o "\"$3\":[^,}]*" | cut -d: -f2; }
