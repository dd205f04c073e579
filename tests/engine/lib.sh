# Shared helpers of the engine tests: every run is bounded by a timeout so nothing hangs.
set -u
ENGINE="$1"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
FAILS=0

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }
finish() { [ "$FAILS" -eq 0 ] && echo "all passed" || echo "$FAILS failed"; exit "$FAILS"; }

# plan FILE ARGS...: writes a plan (hippie-engine plan: a zoo model or preset, even stages)
plan() { local out="$1"; shift; "$ENGINE" plan --out "$out" "$@" || fail "plan $*"; }

# launch PLAN NPROCS STEPS OUT [rank args...]: 4 ranks on 127.0.0.1, bounded to 120 s
launch() {
    local p="$1" n="$2" steps="$3" out="$4"; shift 4
    timeout 120 "$ENGINE" launch --plan "$p" --nprocs "$n" --steps "$steps" --seed 7 \
        --rank-args "--connect-timeout 20 --op-timeout 30 $*" > "$out" 2>"$out.err"
}

# same_losses REF_OUT OUT TOL: every step's loss in OUT (each rank that reports one) is within
# TOL of the one-process run's loss of that step; says how close, or fails saying which differs.
same_losses() {
    /usr/bin/python3 - "$@" <<'PY'
import json, sys
def losses(path):
    out = {}
    for line in open(path):
        if line.startswith("{"):
            e = json.loads(line)
            if e.get("event") == "step" and e.get("loss") is not None: out.setdefault(e["step"], []).append(e["loss"])
    return out
ref, got, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if not ref or sorted(ref) != sorted(got): sys.exit(f"steps with a loss: one process {sorted(ref)}, the run {sorted(got)}")
diff, step = max((abs(v - ref[s][0]), s) for s in ref for v in got[s])
if diff >= tol: sys.exit(f"step {step}'s loss differs from one process's by {diff:.3g} (tolerance {tol})")
print(f"the losses of all {len(ref)} steps within {diff:.2g}")
PY
}

# field FILE EVENT KEY: the values of KEY in the EVENT lines (simple scalars)
field() { grep "\"event\":\"$2\"" "$1" | grep -o "\"$3\":[^,}]*" | cut -d: -f2; }
