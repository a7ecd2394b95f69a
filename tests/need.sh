#!/bin/sh
# tests/need.sh TOOL COMMAND... — run a test whose tool may be missing:
# COMMAND runs when TOOL is on PATH. Without it the test is skipped (exit
# 77, which ctest reports as "Skipped" through SKIP_RETURN_CODE), except
# under CI (CI=true), where a missing tool fails the test: CI runs them all.
tool=$1
shift
if ! command -v "$tool" >/dev/null 2>&1; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $tool is not installed, and CI=true runs every test (bench/stack install)"
        exit 1
    fi
    echo "SKIP: $tool is not installed (bench/stack install installs it)"
    exit 77
fi
exec "$@"
