#!/bin/sh
# tests/e2e/run_wacp_conflicts.sh: the conflict types and resolutions of an `evaluated`
# integration through the real `corral run` with scripted agents (tests/agents/wacp_script):
# a worker that writes outside its directive's constraints is a constraint_breach, reworked
# (failed); a worker that built on a file another's integration changed is a
# dependency_violation, resolved by the coordinator. Agents' logs are in RUN_DIR/logs/*.log.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_wacp_conflicts: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/conflicts
ws=$d/ws rundir=$d/run db=$d/trail.db
mkdir -p "$ws"
echo original >"$ws/shared.txt"
chown -R 65534:65534 "$ws"

# A worker's directive: write FILE=TEXT pairs, a final checkpoint, complete; CONSTRAINTS (JSON
# or "") in the directive.
directive() {
    python3 - "$@" <<'PY'
import json, sys
cons, files = sys.argv[1], sys.argv[2:]
steps = []
for f in files:
    path, text = f.split("=", 1)
    steps.append("tools/call " + json.dumps({"name": "writeFile", "arguments": {"path": path, "content": text + "\n"}}))
steps.append("wacp/checkpoint.create " + json.dumps({"type": "artifact", "intent": "x", "status": "final", "confidence": "high", "parent": None}))
steps += ["wacp/signal.emit {\"type\":\"complete\"}", "@hold"]
d = {"steps": steps}
if cons:
    d["constraints"] = json.loads(cons)
print(json.dumps(d))
PY
}
BREACH=$(directive '{"paths":["one.txt"]}' one.txt=own shared.txt=mine)
BUILT_ON=$(directive '' two.txt=own)
CHANGER=$(directive '' shared.txt=changed)

BREACH=$BREACH BUILT_ON=$BUILT_ON CHANGER=$CHANGER python3 - "$d/policy.json" "$S" <<'PY'
import json, os, sys
out, script = sys.argv[1], sys.argv[2]
steps = ["@envelope",
  'b=wacp/workspace.create {"agent":"w","directive":' + os.environ["BREACH"] + '}',
  'u=wacp/workspace.create {"agent":"w","directive":' + os.environ["BUILT_ON"] + '}',
  'c=wacp/workspace.create {"agent":"w","directive":' + os.environ["CHANGER"] + '}',
  "@until:complete", "@until:complete", "@until:complete",
  'wacp/integrate {"workspace":"{{b.workspace_id}}","decision":"accept","strategy":"evaluated"}',
  'wacp/conflict.resolve {"workspace":"{{b.workspace_id}}","resolution":"agent_rework"}',
  'wacp/integrate {"workspace":"{{c.workspace_id}}","decision":"accept","strategy":"direct"}',
  'wacp/integrate {"workspace":"{{u.workspace_id}}","decision":"accept","strategy":"evaluated"}',
  'wacp/conflict.resolve {"workspace":"{{u.workspace_id}}","resolution":"coordinator_resolve"}',
  'wacp/signal.emit {"type":"complete"}', "@hold"]
worker = {"authority": {"write": True, "commands": False},
          "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}}, "worker": worker},
           "agents": {"coord": {"binary": script, "args": steps, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$rundir" \
    --trail "$db" --timeout 60
logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
trail() { "$CORRAL" trail --db "$db" --json "$@"; }

expect_status "the run ends well" 0 "$rc" "$err" "$logs"
expect_match "writing outside the directive's paths is a constraint_breach" \
    'integrate ok .*"state":"conflicted".*"type":"constraint_breach","path":"shared.txt"' "$logs"
expect_match "agent_rework fails it" 'conflict.resolve ok .*"state":"failed"' "$logs"
expect_match "a file built on, changed by a prior integration, is a dependency_violation" \
    'integrate ok .*"state":"conflicted".*"type":"dependency_violation","path":"shared.txt"' "$logs"
expect_match "the coordinator resolves it" 'conflict.resolve ok .*"state":"closed"' "$logs"
expect_match "the reworked worker's files were not applied" '^changed$' "$(cat "$ws/shared.txt")"
expect_nomatch "the reworked worker's own file is absent" 'own' "$(cat "$ws/one.txt" 2>&1)"
expect_match "the resolved worker's file is there" '^own$' "$(cat "$ws/two.txt" 2>&1)"
n=$(trail --type conflict_detected | wc -l)
expect_status "two conflicts were detected" 2 "$n" "$(trail --type conflict_detected)"
expect_match "both types are in the trail" 'constraint_breach' "$(trail --type conflict_detected)"
expect_match "both types are in the trail (2)" 'dependency_violation' "$(trail --type conflict_detected)"
