# Sourced by the CLI tests (not a test itself: the suites are tests/cli/test_*.sh).
# Needs BIN (hippie-plan), OUT (a scratch folder) and fail().
#
# expect_error WORD ARGS...: exit 2, one stderr line that contains WORD, nothing on stdout
expect_error() {
    local word=$1
    shift
    local rc=0
    "$BIN" "$@" >"$OUT/stdout" 2>"$OUT/stderr" || rc=$?
    local what="hippie-plan $*"
    [[ $rc -eq 2 ]] || fail "$what: exit code $rc, expected 2 (stderr: $(cat "$OUT/stderr"))"
    [[ $(wc -l <"$OUT/stderr") -eq 1 ]] || fail "$what: stderr is not one line: $(cat "$OUT/stderr")"
    grep -qF -- "$word" "$OUT/stderr" || fail "$what: stderr does not mention '$word': $(cat "$OUT/stderr")"
    [[ ! -s $OUT/stdout ]] || fail "$what: printed on stdout: $(cat "$OUT/stdout")"
}
