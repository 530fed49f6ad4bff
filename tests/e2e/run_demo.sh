#!/bin/sh
# tests/e2e/run_demo.sh: `make demo`'s session (examples/demo.sh) really runs: the coordinator
# and the C and Python workers build the task graph, every workspace closes, the three tasks are
# integrated (one content_overlap resolved), and the demo project's own tests pass on the result.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_demo: corral run is not built yet"
    exit 0
fi
if [ ! -x "$TOP/build/examples/agents/worker" ]; then
    fail "run_demo: the C worker is built" "missing $TOP/build/examples/agents/worker: make test-build"
    exit 0
fi
run_capture out err rc env DEMO_DIR="$T_TMP/demo" CORRAL="$CORRAL" sh "$TOP/examples/demo.sh"
expect_status "the demo ends well" 0 "$rc" "$out" "$err"
expect_match "corral run closed the coordinator's workspace" 'corral run: +exit status 0' "$out"
expect_match "four workspaces, all closed" 'workspaces: +4 \(4 closed\)' "$out"
expect_match "three tasks, all integrated" 'tasks: +3 \(3 integrated\)' "$out"
expect_match "the workers' checkpoints (a chain of two each for two of them, one for the third)" 'checkpoints: +5$' "$out"
expect_match "three integrations, the overlap on README.md resolved" 'integrations: +3 \(1 overlap detected, 1 resolved\)' "$out"
expect_match "the queries were answered with feedback" 'query from ws-[0-9a-f]+ \(even_length\) answered' "$out"
expect_match "the trail verifies" 'ok: [0-9]+ entries verified' "$out"
ws=$T_TMP/demo/workspace
expect_match "the C worker's median() is in the module" '^def median\(xs\):' "$(cat "$ws/stats.py")"
expect_match "the Python worker's test is there" 'class MedianTest' "$(cat "$ws/test_stats.py" 2>&1)"
expect_match "the README documents both functions" '`median\(xs\)`: The middle value' "$(cat "$ws/README.md")"
run_capture tout terr trc sh -c "cd '$ws' && PYTHONDONTWRITEBYTECODE=1 python3 -m unittest test_stats"
expect_status "the project's tests pass on the result" 0 "$trc" "$terr"
expect_match "both tests ran" 'Ran 2 tests' "$terr"
