#!/bin/sh
# tests/e2e/run_compute_time.sh: the compute-time budget through the real `corral run` (WACP
# Workspace spec 6, compute_timeout: time in `active` only). A role with budgets.compute_time 2 s:
# a worker that computes (active) for 10 s fails with budget_exceeded:compute_time, its agent is
# stopped and its parent gets a `failed` signal; a worker that spends 4 s blocked (waiting) and
# little time active is not failed and integrates. Each state change carries active_ms.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_compute_time: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/ct
ws=$d/ws db=$d/trail.db
mkdir -p "$ws"
chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
busy = {"steps": ["@log:busy", "@spin:10000", "@log:spun", "@hold"]}
waits = {"steps": ['wacp/signal.emit {"type":"blocked","reason":"waiting"}', "@sleep:4000",
                   'wacp/signal.emit {"type":"started"}',
                   'wacp/checkpoint.create {"type":"artifact","intent":"w","status":"final","confidence":"high","parent":null}',
                   'wacp/signal.emit {"type":"complete"}', "@hold"]}
coord = ["@envelope",
         "b=wacp/workspace.create " + json.dumps({"agent": "w", "directive": busy}),
         "s=wacp/workspace.create " + json.dumps({"agent": "w", "directive": waits}),
         "@timeout:60000", "@until:complete,failed",
         'wacp/integrate {"workspace":"{{s.workspace_id}}","decision":"accept"}',
         "@log:busy-id {{b.workspace_id}}", "@log:wait-id {{s.workspace_id}}",
         'wacp/signal.emit {"type":"complete"}', "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m",
                                            "compute_time": "2s"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$d/run" --trail "$db" --timeout 60
logs=$(cat "$d"/run/logs/*.log 2>/dev/null)
expect_status "the run ends well" 0 "$rc" "$err" "$logs"
bid=$(printf '%s\n' "$logs" | sed -n 's/^# busy-id //p')
sid=$(printf '%s\n' "$logs" | sed -n 's/^# wait-id //p')
expect_match "the policy shows the budget" 'compute_time +2s' "$("$CORRAL" policy show "$d/policy.json" --role worker 2>&1)"
sc=$("$CORRAL" trail --db "$db" --json --type workspace_state_changed)
expect_match "the computing worker failed: budget_exceeded:compute_time, after at least 2 s active" \
    '"active_ms":(2[0-9]{3}|[3-9][0-9]{3}|[0-9]{5,}),"from":"active","reason":"budget_exceeded:compute_time","to":"failed"' \
    "$(printf '%s\n' "$sc" | grep "\"workspace_id\":\"$bid\"")"
expect_match "its parent got a failed signal" "< signal .*\"from\":\"$bid\",\"type\":\"failed\",\"reason\":\"budget_exceeded:compute_time\"" "$logs"
blog=$(cat "$d"/run/logs/"$bid".log 2>/dev/null)
expect_match "its agent was stopped before it finished computing" '^# busy' "$blog"
expect_nomatch "... (it never got to the end of its 10 s)" '^# spun' "$blog"
expect_match "the worker that waited (blocked) 4 s was not failed: it integrated" \
    'integrate ok .*"state":"closed"' "$logs"
n=$(printf '%s\n' "$sc" | grep "\"workspace_id\":\"$sid\"" | grep -c '"to":"failed"' || true)
expect_status "... never failed" 0 "$n"
expect_match "the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"
