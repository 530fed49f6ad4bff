#!/bin/sh
# tests/e2e/run_workspace_limit.sh: the policy's max_workspaces, and the open-file limit's word on
# it. A run whose policy allows 3 workspaces (the coordinator's included) creates two workers
# and is refused the third with WACP `limit`; a run under an open-file limit that cannot serve
# its max_workspaces says so at start and refuses past what it can serve, with a clear word
# rather than a sandbox failing with EMFILE in its set-up.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
d=$T_TMP/r
mkdir -p "$d/ws"
echo x >"$d/ws/a.txt"
chown -R 65534:65534 "$d/ws"
policy() { # MAX_WORKSPACES N_CREATES
    python3 - "$d/policy.json" "$S" "$1" "$2" <<'PY'
import json, sys
out, script, mx, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
create = 'wacp/workspace.create {"agent":"w","directive":{"steps":["wacp/signal.emit {\\"type\\":\\"complete\\"}","@hold"]}}'
json.dump({"version": 1, "max_workspaces": mx, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": False, "commands": False}}},
           "agents": {"coord": {"binary": script, "args": [create] * n + ['wacp/signal.emit {"type":"complete"}', "@hold"],
                                "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}}, open(out, "w"))
PY
}
policy 3 3
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --run-dir "$d/run1" --trail "$d/t1.db" --timeout 60
logs=$(cat "$d"/run1/logs/*.log 2>/dev/null)
expect_status "max_workspaces 3: two workers created" 2 "$(printf '%s\n' "$logs" | grep -c '^< wacp/workspace.create ok')" "$logs"
expect_match "... the third refused with limit" 'workspace.create error=[-0-9]+ limit' "$logs"
expect_match "... and the start line says the room the open-file limit leaves" 'corral run: open files [0-9]+: room for [0-9]+ agents' "$err"
expect_status "... and the run ends normally" 0 "$rc" "$err"

# Soft and hard limit 150: (150 - 64) / 8 = 10 agents at most, not the policy's 50.
policy 50 12
(ulimit -n 150 && "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --run-dir "$d/run2" --trail "$d/t2.db" --timeout 60) \
    >"$T_TMP/out2" 2>"$T_TMP/err2" </dev/null
err2=$(cat "$T_TMP/err2")
logs2=$(cat "$d"/run2/logs/*.log 2>/dev/null)
expect_match "open-file limit 150: the start says it serves 10 agents, not 50" \
    'open-file limit \(150\) serves 10 agents at most, not the policy.s max_workspaces 50' "$err2"
expect_match "... past them, creations are refused with limit" 'workspace.create error=[-0-9]+ limit' "$logs2"
expect_nomatch "... and none fails in its sandbox's set-up" 'Too many open files|creation_error' "$logs2"
