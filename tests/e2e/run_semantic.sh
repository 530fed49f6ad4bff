#!/bin/sh
# tests/e2e/run_semantic.sh: semantic_contradiction through the real `corral run`: the
# coordinator's role names an evaluator_command (a real script) that runs in a command sandbox,
# gets the two sides of each changed file on stdin and prints its verdict. The project says
# "use approach X". A worker that rewrote it to "use approach Y" is a semantic_contradiction
# (the evaluator's reason in the trail), resolved by the coordinator keeping the parent's side; a
# worker that only added notes integrates (closed). An evaluator that fails leaves the workspace
# integrating, the call refused (evaluator_failed) and the refusal recorded.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_semantic: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/sem
ws=$d/ws rundir=$d/run db=$d/trail.db
mkdir -p "$ws"
echo "use approach X" >"$ws/decision.md"
chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
def directive(files):
    steps = ["tools/call " + json.dumps({"name": "writeFile", "arguments": {"path": p, "content": t + "\n"}}) for p, t in files]
    steps.append("wacp/checkpoint.create " + json.dumps({"type": "artifact", "intent": "x", "status": "final", "confidence": "high", "parent": None}))
    steps += ['wacp/signal.emit {"type":"complete"}', "@hold"]
    return {"steps": steps}
# The evaluator: a contradiction where the parent says approach X and the child approach Y; the
# reason carries the uid it ran as and whether the run directory is visible (it must not be).
evaluator = ("python3 -c 'import json, os, sys\n"
             "d = json.load(sys.stdin)\n"
             "if \"fail\" in d[\"intent\"]: sys.exit(3)\n"
             "c = [{\"path\": f[\"path\"], \"reason\": \"child says %s, parent says %s (uid %d, rundir %s)\" % "
             "(f[\"child\"].strip(), f[\"parent\"].strip(), os.getuid(), os.path.exists(\"RUNDIR\"))}\n"
             "     for f in d[\"files\"] if f[\"child\"] and f[\"parent\"] and \"approach X\" in f[\"parent\"] and \"approach Y\" in f[\"child\"]]\n"
             "print(json.dumps({\"contradictions\": c}))'").replace("RUNDIR", sys.argv[1].rsplit("/", 1)[0] + "/run")
contra = directive([("decision.md", "use approach Y")])
agree = directive([("notes.md", "approach X, in detail")])
failing = directive([("other.md", "whatever")])
failing["steps"][1] = failing["steps"][1].replace('"intent": "x"', '"intent": "fail"')
steps = ["@envelope",
  "a=wacp/workspace.create " + json.dumps({"agent": "w", "directive": contra}),
  "b=wacp/workspace.create " + json.dumps({"agent": "w", "directive": agree}),
  "f=wacp/workspace.create " + json.dumps({"agent": "w", "directive": failing}),
  "@until:complete", "@until:complete", "@until:complete",
  'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept","strategy":"evaluated"}',
  'wacp/conflict.resolve {"workspace":"{{a.workspace_id}}","resolution":"coordinator_resolve","prefer":"parent"}',
  'wacp/integrate {"workspace":"{{b.workspace_id}}","decision":"accept","strategy":"evaluated"}',
  'wacp/integrate {"workspace":"{{f.workspace_id}}","decision":"accept","strategy":"evaluated"}',
  'wacp/integrate {"workspace":"{{f.workspace_id}}","decision":"reject"}',
  'wacp/signal.emit {"type":"complete"}', "@hold"]
worker = {"authority": {"write": True, "commands": False},
          "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}
coord = {"budgets": {"wall_time": "2m"}, "tools": {"evaluator_command": evaluator}}
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"coordinator": coord, "worker": worker},
           "agents": {"coord": {"binary": script, "args": steps, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$rundir" \
    --trail "$db" --timeout 60
logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
trail() { "$CORRAL" trail --db "$db" --json "$@"; }
expect_status "the run ends well" 0 "$rc" "$err" "$logs"
expect_match "the policy shows the evaluator" 'evaluator_command +python3' \
    "$("$CORRAL" policy show "$d/policy.json" --role coordinator 2>&1)"
expect_match "the evaluator's verdict makes approach Y against approach X a semantic_contradiction" \
    'integrate ok .*"state":"conflicted".*"type":"semantic_contradiction","path":"decision.md"' "$logs"
cd_=$(trail --type conflict_detected)
expect_match "the trail holds the evaluator's reason" \
    '"semantic":\[\{"path":"decision.md","reason":"child says use approach Y, parent says use approach X' "$cd_"
expect_match "... which ran in a command sandbox (no run directory in sight)" 'rundir False\)' "$cd_"
expect_match "the strategy is applied: the coordinator resolves it, keeping the parent's side" \
    'conflict.resolve ok .*"state":"closed"' "$logs"
expect_match "the parent's side stays" '^use approach X$' "$(cat "$ws/decision.md")"
expect_match "no contradiction: the other worker integrates" \
    'integrate ok .*"state":"closed","conflicts":\[\],"files_applied":\["notes.md"\]' "$logs"
expect_match "... its file is there" '^approach X, in detail$' "$(cat "$ws/notes.md" 2>&1)"
n=$(printf '%s\n' "$cd_" | grep -c . || true)
expect_status "one conflict was detected" 1 "$n" "$cd_"
expect_match "a failing evaluator refuses the integration (evaluator_failed), naming the exit" \
    '< wacp/integrate error=-32603 evaluator_failed .*exited with status 3' "$logs"
expect_match "... the refusal is recorded" '"code":"evaluator_failed"' "$(trail --type denial)"
expect_match "... and the workspace stayed integrating: it can still be rejected" \
    'integrate ok .*"state":"failed"' "$(printf '%s\n' "$logs" | grep 'wacp/integrate ok' | tail -1)"
expect_nomatch "nothing of it was applied" 'whatever' "$(cat "$ws/other.md" 2>&1)"
expect_match "the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"
