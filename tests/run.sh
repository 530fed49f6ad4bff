#!/bin/sh
# tests/run.sh: runs every test of the suite and ends with one line "N passed, N failed".
# Each test program speaks TAP ("ok ..." / "not ok ..."): cmocka unit tests with
# CMOCKA_MESSAGE_OUTPUT=TAP, end-to-end scripts through tests/lib.sh. A program that dies
# without reporting counts as one failure, so a crash can never pass silently.
# Usage: CORRAL=... BUILD=... sh tests/run.sh [FILTER]   (FILTER: a substring of the test file name)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:=$top/build}"
: "${CORRAL:=$BUILD/corral}"
export CORRAL BUILD TOP="$top" HOSTILE="$top/build/tests/hostile" AGENTS="$top/build/tests/agents"
export CMOCKA_MESSAGE_OUTPUT=TAP
filter=${1:-}
passed=0 failed=0
failures=""
logdir=$(mktemp -d /tmp/corral-tests.XXXXXX)

run_one() { # name, command...
    name=$1; shift
    case "$name" in *"$filter"*) ;; *) return ;; esac
    log="$logdir/$(echo "$name" | tr '/' '_').log"
    "$@" >"$log" 2>&1
    rc=$?
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^not ok ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "not ok - $name exited with status $rc without reporting a failure" >>"$log"
    fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "not ok - $name reported no test at all" >>"$log"
    fi
    passed=$((passed + p)); failed=$((failed + f))
    printf '%-40s %3d passed, %d failed\n' "$name" "$p" "$f"
    if [ "$f" -ne 0 ]; then
        grep -B2 -A12 '^not ok ' "$log" | head -60 | sed 's/^/    /'
        failures="$failures $name"
    fi
}

for t in "$BUILD"/tests/unit/test_*; do
    [ -x "$t" ] || continue
    run_one "unit/$(basename "$t")" "$t"
done
# The layout rules (docs/architecture.md): include circles, layers, symbol prefixes.
run_one "layout/check" python3 "$top/tests/layout/check.py" "$top" "$BUILD/libcorral.a"
# Relative links of README.md and docs/*.md reach a file (and a heading) that exists.
run_one "layout/doc_links" python3 "$top/tests/layout/doc_links.py" "$top"
for t in "$top"/tests/e2e/*.sh; do
    [ -f "$t" ] || continue
    run_one "e2e/$(basename "$t" .sh)" sh "$t"
done

[ -n "$failures" ] && echo "failed:$failures (logs in $logdir)"
[ -z "$failures" ] && rm -rf "$logdir"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
