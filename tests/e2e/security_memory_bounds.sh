#!/bin/sh
# tests/e2e/security_memory_bounds.sh: what an agent makes the supervisor keep in memory is
# bounded (issue 12, item 4), each refusal answered and recorded. A coordinator
# (tests/agents/memory_hog.py) asks for a 2 MiB context (kept for a workspace's life: refused,
# one payload's limit), sends 1.1 million JSON values in one request (refused before parsing:
# the tree would be ~90 MB), and leaves five workspace.create requests with 900 KB contexts of
# zeros waiting at a gate (each kept twice as a tree: the run's 256 MiB ceiling takes three).
# A worker (tests/agents/highway_worker.py) leaves 8 writes of 600 KB waiting for approval
# under max_message 1 MiB: its held arguments stay under 4 messages' worth, the rest refused.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
# hog_run DIR MODE [GATE]: one run of the hog (memory_hog.py MODE), GATE: workspace_create gated
hog_run() {
    mkdir -p "$1/ws" && echo base >"$1/ws/base.txt" && chown -R 65534:65534 "$1/ws"
    python3 - "$1/policy.json" "$TOP/tests/agents/memory_hog.py" "$S" "$2" "${3:-}" <<'PY'
import json, sys
out, hog, script, mode, gate = sys.argv[1:6]
json.dump({"version": 1,
           "highway": {"preset": "supervised", "gates": {"task_approval": False, "workspace_create": bool(gate)},
                       "gate_overrides": {"workspace_create": {"timeout": "15s", "fallback": "reject"}}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m", "memory": "1G"}},
                     "worker": {"budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": "/usr/bin/python3", "args": ["-u", hog, mode], "role": "coordinator"},
                      "w": {"binary": script, "args": ["@hold"], "role": "worker"}}},
          open(out, "w"))
PY
    timeout -s KILL 150 "$CORRAL" run "$1/policy.json" --workspace "$1/ws" --run-dir "$1/run" \
        --trail "$1/trail.db" --timeout 120 >"$1/out" 2>"$1/err" </dev/null
}
d=$T_TMP/bounds
hog_run "$d" bounds
expect_status "the run ends" 0 "$?" "$(tail -5 "$d/err")"
logs=$(cat "$d"/run/logs/*.log 2>/dev/null)
expect_match "a 2 MiB context is refused (one payload's limit)" \
    '^context: .*"error".*context is larger than 1048576 bytes' "$logs"
expect_match "a request of 1.1 million values is refused before it is parsed" \
    '^values: .*-32600.*more than 1048576 JSON values' "$logs"
expect_match "the coordinator goes on" '^after: .*"result"' "$logs"
expect_match "the oversized context is a denial in the trail" 'context is larger' \
    "$("$CORRAL" trail --db "$d/trail.db" --json --type denial)"

d=$T_TMP/gates
hog_run "$d" gates 1
expect_status "the gated run ends" 0 "$?" "$(tail -5 "$d/err")"
logs=$(cat "$d"/run/logs/*.log 2>/dev/null)
lim=$(printf '%s\n' "$logs" | grep -c '^gate [0-9]: .*memory_limit' || true)
[ "$lim" -ge 1 ] && [ "$lim" -le 3 ] && ok "waiting requests past the run's ceiling are refused ($lim of 5)" ||
    fail "waiting requests past the run's ceiling are refused" "$lim refused: $(printf '%s\n' "$logs" | grep '^gate' | cut -c1-200)"
n=$("$CORRAL" trail --db "$d/trail.db" --json --type denial | grep -c 'memory_limit' || true)
[ "$n" -eq "$lim" ] && ok "each refusal at the ceiling is a denial in the trail" ||
    fail "each refusal at the ceiling is a denial in the trail" "$n memory_limit denials for $lim refusals"

# A worker's held tool calls under max_message 1 MiB: 4 MiB of arguments at most.
d=$T_TMP/held ws=$T_TMP/held/ws db=$T_TMP/held/trail.db
mkdir -p "$ws" && echo base >"$ws/base.txt" && chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" "$TOP/tests/agents/highway_worker.py" <<'PY'
import json, sys
out, script, pyw = sys.argv[1:4]
steps = ["%d writeFile {\"path\":\"f%d.txt\",\"content\":\"@X:600000\"}" % (i, i) for i in range(1, 9)]
steps += ["%d readFile {\"path\":\"base.txt\"}" % 9, "wait 9", "wait 8", "wait 7"]
json.dump({"version": 1, "max_message": "1M",
           "highway": {"preset": "supervised", "gates": {"task_approval": False},
                       "gate_overrides": {"tool_call": {"timeout": "15s", "fallback": "reject"}}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}},
                     "worker": {"authority": {"write": True, "commands": False},
                                "tools": {"needs_approval": ["writeFile"]},
                                "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "role": "coordinator",
                                "args": ["w=wacp/workspace.create {\"agent\":\"tw\",\"directive\":{}}",
                                         "@until:failed", "wacp/signal.emit {\"type\":\"complete\"}"]},
                      "tw": {"binary": "/usr/bin/python3", "args": ["-u", pyw] + steps, "role": "worker"}}},
          open(out, "w"))
PY
timeout -s KILL 150 "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$d/run" --trail "$db" \
    --timeout 90 >"$d/out" 2>"$d/err" </dev/null
expect_status "the run with held writes ends" 0 "$?" "$(tail -5 "$d/err")"
logs=$(cat "$d"/run/logs/*.log 2>/dev/null)
gates=$("$CORRAL" trail --db "$db" --json --type gate_triggered | grep -c '"tool_call"' || true)
[ "$gates" -ge 1 ] && [ "$gates" -le 6 ] && ok "one agent's held arguments stay under 4 MiB ($gates of 8 held)" ||
    fail "one agent's held arguments stay under 4 MiB" "$gates tool_call gates opened"
expect_match "a call past the agent's memory share is refused" '< id=8 isError=true .*memory limit' "$logs"
n=$("$CORRAL" trail --db "$db" --json --type denial | grep -c 'memory_limit' || true)
[ "$n" -eq $((8 - gates)) ] && ok "each is a denial in the trail" || fail "each is a denial in the trail" "$n for $((8 - gates)) refused"
