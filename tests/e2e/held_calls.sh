#!/bin/sh
# tests/e2e/held_calls.sh: a hostile agent floods tool calls under needs_approval. Each held
# call keeps its arguments and a gate in the run's one queue (4,096 for every agent): one agent
# must hold a few at most (16), the rest refused at once in the surface's shape and recorded,
# so it can neither exhaust the supervisor's memory nor the other agents' room for approvals.
# The flooder then stops reading while its 16 calls are still held, so its connection ends and
# its sandbox is stopped: a call refused after its agent is gone is still a refusal, and must be
# in the trail like the others.
# Agents: tests/agents/wacp_script (coordinator), tests/agents/highway_worker.py (the flooder).
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
HW="$TOP/tests/agents/highway_worker.py"
d=$T_TMP/run
ws=$d/ws db=$d/trail.db
mkdir -p "$ws"
echo base >"$ws/base.txt"
chown -R 65534:65534 "$ws"
steps=$(python3 -c '
import json
s = ["%d writeFile {\"path\":\"f%d.txt\",\"content\":\"%s\"}" % (i, i, "x" * 1024) for i in range(1, 41)]
s += ["41 readFile {\"path\":\"base.txt\"}", "wait 41", "wait 40",
      "deaf", "42 readFile {\"path\":\"base.txt\"}", "sleep 30"]
print(json.dumps(s))')
python3 - "$d/policy.json" "$S" "$HW" "$steps" <<'PY'
import json, sys
out, script, pyw, steps = sys.argv[1:5]
json.dump({"version": 1,
           "highway": {"preset": "supervised", "gates": {"task_approval": False},
                       "gate_overrides": {"tool_call": {"timeout": "5s", "fallback": "reject"}}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}},
                     "worker": {"authority": {"write": True, "commands": False},
                                "tools": {"needs_approval": ["writeFile"]},
                                "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "role": "coordinator",
                                "args": ["w=wacp/workspace.create {\"agent\":\"tw\",\"directive\":{}}",
                                         "@until:failed", "wacp/signal.emit {\"type\":\"complete\"}"]},
                      "tw": {"binary": "/usr/bin/python3", "args": ["-u", pyw] + json.loads(steps),
                             "role": "worker"}}},
          open(out, "w"))
PY
"$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$d/run" --trail "$db" --timeout 90 \
    >"$d/out" 2>"$d/err" </dev/null
expect_status "the run ends" 0 "$?" "$(tail -5 "$d/err")"
logs=$(cat "$d"/run/logs/*.log 2>/dev/null)
gates=$("$CORRAL" trail --db "$db" --json --type gate_triggered | grep -c '"tool_call"')
[ "$gates" -ge 1 ] && [ "$gates" -le 16 ] && ok "one agent holds at most 16 calls for approval ($gates gates)" ||
    fail "one agent holds at most 16 calls for approval" "$gates tool_call gates opened"
expect_match "a call beyond the cap is refused in the surface's shape" \
    '< id=40 isError=true .*approval' "$logs"
den=$("$CORRAL" trail --db "$db" --json --type denial | grep -c 'writeFile')
[ "$den" -eq 40 ] && ok "every refused write is recorded as a denial" || fail "every refused write is recorded as a denial" "$den denials"
expect_nomatch "no write ran without a person's approval" 'isError=false.*f[0-9]*\.txt' "$logs"
[ ! -e "$ws/f40.txt" ] && ok "the refused write did nothing" || fail "the refused write did nothing"
