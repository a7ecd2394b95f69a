# shellcheck shell=bash
# tests/lib_check.sh — what a unit test of a tool's output needs (no
# stack): check GOT WANT WHAT counts and prints one assertion, and
# check_done prints "NAME: N passed, M failed" and exits with the verdict.
passed=0 failed=0
check() {
    if [ "$1" = "$2" ]; then
        passed=$((passed + 1)); printf '  ok    %s\n' "$3"
    else
        failed=$((failed + 1)); printf '  FAIL  %s\n        got  %s\n        want %s\n' "$3" "$1" "$2"
    fi
}
check_done() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && exit 0
    exit 1
}
