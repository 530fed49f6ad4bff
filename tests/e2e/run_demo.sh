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

# The same session with the reviewer of session.json (a derived role: no writes, a `review`
# checkpoint, a `report` envelope): it approves the integrated work before the document task.
python3 - "$TOP/examples/policies/demo.json" "$T_TMP/review.json" <<'PY'
import json, re, sys
p = json.loads(re.sub(r"^\s*//.*$", "", open(sys.argv[1]).read(), flags=re.M))
p.pop("$schema", None)
p["envelope_types"] = {"report": {"permissions": [{"sender": "reviewer", "receiver": "coordinator"}]}}
p["checkpoint_types"] = {"review": {"permitted_roles": ["reviewer"]}}
p["roles"]["reviewer"] = {"extends": "worker", "remove": ["send:query->coordinator", "create:artifact"],
                          "add": ["send:report->coordinator"], "checkpoint_types": ["review"],
                          "authority": {"write": False, "commands": False}}
p["agents"]["critic"] = {"binary": "/usr/bin/python3", "role": "reviewer",
                         "args": ["-u", "examples/agents/reviewer.py", "sdk/corral_agent.py"]}
p["agents"]["coordinator"]["args"] += ["--review", "critic"]
json.dump(p, open(sys.argv[2], "w"), indent=1)
PY
rv=$T_TMP/review
mkdir -p "$rv"
cp -r "$TOP/examples/workspace-demo" "$rv/ws"
run_capture out err rc sh -c "cd '$TOP' && '$CORRAL' run '$T_TMP/review.json' --workspace '$rv/ws' --run-dir '$rv/run' --trail '$rv/t.db' --timeout 120"
logs=$(cat "$rv"/run/logs/*.log 2>/dev/null)
expect_status "with a reviewer: the run ends well" 0 "$rc" "$err" "$logs"
expect_match "with a reviewer: five workspaces, all closed" 'workspaces 5 \(5 closed, 0 failed\)' "$err$out"
expect_match "the reviewer approves both files" "reviewer.py: verdict approve \\{'stats.py': 'ok', 'test_stats.py': 'ok'\\}" "$logs"
expect_match "its report reaches the coordinator" "coordinator: report from ws-[0-9a-f]+: .*'verdict': 'approve'" "$logs"
expect_match "its review checkpoint is recorded" '"type":"review"' "$("$CORRAL" trail --db "$rv/t.db" --type checkpoint_created --json)"
