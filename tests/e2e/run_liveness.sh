#!/bin/sh
# tests/e2e/run_liveness.sh: liveness through the real `corral run` (WACP Workspace spec 6,
# recovery spec 2.1): a worker role with budgets.liveness_interval 1 s. A worker that acks its
# directive and then says nothing and uses no CPU gets a liveness_warning and its parent a
# wacp/liveness notification, its workspace is marked blocked (the parent gets a `blocked` signal),
# and after a second silent interval it fails (liveness_timeout; the parent gets `failed`) and its
# agent is stopped. One that computes silently (CPU, no pipe traffic) for several intervals gets
# no warning and is never blocked, nor once it has signalled complete (integrating).
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_liveness: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/l
ws=$d/ws db=$d/trail.db
mkdir -p "$ws"
chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
silent = {"steps": ["@log:silent", "@hold"]}
busy = {"steps": ["@log:busy", "@spin:4000", 'wacp/checkpoint.create {"type":"artifact","intent":"b","status":"final","confidence":"high","parent":null}', 'wacp/signal.emit {"type":"complete"}', "@sleep:3000", "@hold"]}
coord = ["@envelope",
         "s=wacp/workspace.create " + json.dumps({"agent": "w", "directive": silent}),
         "b=wacp/workspace.create " + json.dumps({"agent": "w", "directive": busy}),
         "@timeout:20000", "l=@liveness", "@log:warned {{l.workspace_id}} {{l.interval}}",
         "@until:complete,failed", "@sleep:2500",
         'wacp/integrate {"workspace":"{{b.workspace_id}}","decision":"accept"}',
         'wacp/workspace.abort {"workspace":"{{s.workspace_id}}","reason":"silent"}',
         "@log:silent-id {{s.workspace_id}}", "@log:busy-id {{b.workspace_id}}",
         'wacp/signal.emit {"type":"complete"}', "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m",
                                            "liveness_interval": 1}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$d/run" --trail "$db" --timeout 60
logs=$(cat "$d"/run/logs/*.log 2>/dev/null)
expect_status "the run ends well" 0 "$rc" "$err" "$logs"
sid=$(printf '%s\n' "$logs" | sed -n 's/^# silent-id //p')
bid=$(printf '%s\n' "$logs" | sed -n 's/^# busy-id //p')
w=$("$CORRAL" trail --db "$db" --json --type liveness_warning)
n=$(printf '%s\n' "$w" | grep -c "\"workspace_id\":\"$sid\"" || true)
[ "$n" -ge 1 ] && ok "the silent worker got liveness warnings ($n)" || fail "the silent worker got liveness warnings" "$n" "$w"
expect_match "... with the interval and the last activity" '"interval":1,"last_activity_timestamp":"[0-9]{4}-' "$w"
expect_match "the coordinator was told (wacp/liveness)" "# warned $sid 1" "$logs"
expect_match "... the first warning blocked it, the next failed it" '"action":"blocked".*' "$(printf '%s\n' "$w" | grep "\"workspace_id\":\"$sid\"" | head -1)"
expect_match "... the next failed it" '"action":"failed"' "$(printf '%s\n' "$w" | grep "\"workspace_id\":\"$sid\"" | sed -n 2p)"
sc=$("$CORRAL" trail --db "$db" --json --type workspace_state_changed | grep "\"workspace_id\":\"$sid\"")
expect_match "the silent worker's workspace went active -> blocked (liveness) -> failed (liveness_timeout)" \
    '"from":"active","reason":"liveness: no pipe traffic and no CPU for 1 s","to":"blocked".*"from":"blocked","reason":"liveness_timeout","to":"failed"' "$(printf '%s' "$sc" | tr '\n' ' ')"
expect_match "its parent got a blocked signal, then failed" \
    "< signal \\{[^}]*\"from\":\"$sid\",\"type\":\"blocked\",\"reason\":\"liveness: no pipe traffic and no CPU for 1 s\".*< signal \\{[^}]*\"from\":\"$sid\",\"type\":\"failed\",\"reason\":\"liveness_timeout\"" "$(printf '%s' "$logs" | tr '\n' ' ')"
expect_match "its agent was stopped (the run ended it with a signal)" '"signal":(15|9)' \
    "$("$CORRAL" trail --db "$db" --json --type process_exited | grep "\"$sid\"")"
n=$(printf '%s\n' "$w" | grep -c "\"workspace_id\":\"$bid\"" || true)
expect_status "the worker computing silently (CPU) got none, nor after its complete" 0 "$n" "$w"
n=$("$CORRAL" trail --db "$db" --json --type workspace_state_changed | grep "\"workspace_id\":\"$bid\"" | grep -c '"to":"blocked"' || true)
expect_status "... and was never blocked" 0 "$n"
expect_match "its compute time (time in active) is in the trail, with the move to integrating" \
    '"active_ms":[1-9][0-9]*,"from":"active","reason":"[^"]*","to":"integrating"' \
    "$("$CORRAL" trail --db "$db" --json --type workspace_state_changed | grep "\"workspace_id\":\"$bid\"")"
expect_match "the busy worker's work was integrated" 'integrate ok .*"state":"closed"' "$logs"
expect_match "the policy shows the interval" 'liveness +1s' "$("$CORRAL" policy show "$d/policy.json" --role worker 2>&1)"
expect_match "the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"
