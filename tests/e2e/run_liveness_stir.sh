#!/bin/sh
# tests/e2e/run_liveness_stir.sh: liveness's way back through the real `corral run`: a worker
# (a role with budgets.liveness_interval 3 s) waits silently for an envelope, so after an interval
# the runtime marks its workspace blocked and its parent gets a `blocked` signal. The parent sends
# it feedback; the agent takes it (pipe traffic), so at the next check the runtime returns it to
# active (a `started` signal, "liveness: the agent is busy again") instead of failing it. Silent
# again, it is blocked again and then failed (liveness_timeout).
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_liveness_stir: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/st
ws=$d/ws db=$d/trail.db
mkdir -p "$ws"
chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
waiter = {"steps": ["@log:waiting", "@envelope", "@log:got-feedback", "@hold"]}
coord = ["@envelope",
         "w=wacp/workspace.create " + json.dumps({"agent": "wt", "directive": waiter}),
         "@timeout:60000", "b=@until:blocked", "@log:blocked {{b.reason}}",
         'wacp/envelope.send {"to":"{{w.workspace_id}}","type":"feedback","payload":{"text":"still there?"}}',
         "s=@until:started", "@log:stirred {{s.reason}}",
         "f=@until:failed", "@log:failed {{f.reason}}",
         'wacp/signal.emit {"type":"complete"}', "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"waiter": {"extends": "worker", "authority": {"write": False, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m",
                                            "liveness_interval": 3}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "wt": {"binary": script, "args": ["@directive"], "role": "waiter"}}},
          open(out, "w"), indent=1)
PY
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$d/run" --trail "$db" --timeout 90
logs=$(cat "$d"/run/logs/*.log 2>/dev/null)
expect_status "the run ends well" 0 "$rc" "$err" "$logs"
expect_match "the silent worker was marked blocked, its parent told" '^# blocked liveness: no pipe traffic and no CPU for 3 s' "$logs"
expect_match "it took the parent's feedback" '^# got-feedback' "$logs"
expect_match "busy again, it went back to active (a started signal)" '^# stirred liveness: the agent is busy again' "$logs"
expect_match "silent again, it was blocked again and then failed" '^# failed liveness_timeout' "$logs"
wid=$(sed -n 's/.*"workspace_id":"\(ws-[0-9a-f]*\)".*"state":"idle".*/\1/p' "$d"/run/logs/*.log | head -1)
sc=$("$CORRAL" trail --db "$db" --json --type workspace_state_changed | grep "\"workspace_id\":\"$wid\"" | grep -v '"from":"idle"' | sed -n 's/.*"from":"\([a-z]*\)","reason":"\([^"]*\)","to":"\([a-z]*\)".*/\1>\3/p' | tr '\n' ' ')
expect_match "the trail has active > blocked > active > blocked > failed" '^active>blocked blocked>active active>blocked blocked>failed $' "$sc"
expect_match "the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"
