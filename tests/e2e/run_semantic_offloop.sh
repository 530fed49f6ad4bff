#!/bin/sh
# tests/e2e/run_semantic_offloop.sh: the semantic evaluator (tools.evaluator_command) runs off
# the event loop: while it runs, another agent's tool call is answered. Proved by order, not by
# time: the evaluator waits until a file `go-eval` appears in the project, which this test
# creates only after (1) it saw the evaluator's process running and then (2) the other worker's
# read was answered and (3) the evaluator still ran. On the old code the loop waits for the
# evaluator, so (2) never happens while it runs (the test gives up after 60 s, then lets it end).
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_semantic_offloop: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/semoff
ws=$d/ws rundir=$d/run db=$d/trail.db
mkdir -p "$ws"
echo "use approach X" >"$ws/decision.md"
chown -R 65534:65534 "$ws"
mark="corral-evaluator-mark-$$"
python3 - "$d/policy.json" "$S" "$mark" <<'PY'
import json, sys
out, script, mark = sys.argv[1], sys.argv[2], sys.argv[3]
# The evaluator: waits (at most 120 s) for go-eval in its working directory (the project), then
# finds no contradiction.
evaluator = ("python3 -c 'import json, os, sys, time  # %s\n"
             "json.load(sys.stdin)\n"
             "for i in range(1200):\n"
             "    if os.path.exists(\"go-eval\"): break\n"
             "    time.sleep(0.1)\n"
             "else: sys.exit(3)\n"
             "print(json.dumps({\"contradictions\": []}))'") % mark
a = {"steps": ['tools/call {"name":"writeFile","arguments":{"path":"notes.md","content":"x\\n"}}',
               'wacp/checkpoint.create {"type":"artifact","intent":"x","status":"final","confidence":"high","parent":null}',
               'wacp/signal.emit {"type":"complete"}', "@hold"]}
b = {"steps": ["@timeout:200000", "@log:b-ready",
               '@poll:go-b-content:tools/call {"name":"readFile","arguments":{"path":"go-b.txt"}}',
               "@log:b-answered",
               'wacp/checkpoint.create {"type":"artifact","intent":"x","status":"final","confidence":"high","parent":null}',
               'wacp/signal.emit {"type":"complete"}', "@hold"]}
steps = ["@envelope", "@timeout:200000",
  "a=wacp/workspace.create " + json.dumps({"agent": "w", "directive": a}),
  "b=wacp/workspace.create " + json.dumps({"agent": "w", "directive": b}),
  "@until:complete",
  'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept","strategy":"evaluated"}',
  "@until:complete",
  'wacp/integrate {"workspace":"{{b.workspace_id}}","decision":"accept"}',
  'wacp/signal.emit {"type":"complete"}', "@hold"]
worker = {"authority": {"write": True, "commands": False},
          "budgets": {"memory": "256M", "pids": 32, "wall_time": "5m"}}
coord = {"budgets": {"wall_time": "5m"},
         "tools": {"evaluator_command": evaluator,
                   "limits": {"command_timeout": "200s", "command_timeout_max": "300s"}}}
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"coordinator": coord, "worker": worker},
           "agents": {"coord": {"binary": script, "args": steps, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
"$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$rundir" --trail "$db" --timeout 280 \
    >"$d/out" 2>"$d/err" &
pid=$!
running() { pgrep -f "$mark" >/dev/null 2>&1; }
wait_for() { # CMD...: until it succeeds, at most 60 s or the run's end
    i=0
    until "$@"; do
        kill -0 $pid 2>/dev/null && [ $i -lt 600 ] || return 1
        sleep 0.1; i=$((i + 1))
    done
}
# B's read answered with the file's content (not a poll that ran out of time)
answered() { cat "$rundir"/logs/*.log 2>/dev/null | grep -q '^# b-answered' &&
    cat "$rundir"/logs/*.log 2>/dev/null | grep -q '^< tools/call ok .*go-b-content'; }
if wait_for running; then ok "the evaluator runs (the coordinator's evaluated integration)"
else fail "the evaluator runs (the coordinator's evaluated integration)" "$(tail -5 "$d/err")"; fi
# The other worker's read can be answered now: its file appears in its workspace.
for w in "$rundir"/ws/*/; do echo go-b-content >"$w/go-b.txt"; done
already=no
answered && already=yes
if [ $already = no ] && wait_for answered && running; then ok "another agent's call was answered while the evaluator ran"
else fail "another agent's call was answered while the evaluator ran" "answered before its file existed: $already; answered: $(answered && echo yes || echo no), evaluator running: $(running && echo yes || echo no)"; fi
echo go >"$ws/go-eval"
wait $pid; rc=$?
logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
expect_status "the run ends well" 0 "$rc" "$(cat "$d/err")" "$(printf '%s\n' "$logs" | tail -20)"
expect_match "the evaluated integration closed after the evaluator's verdict" \
    'integrate ok .*"state":"closed","conflicts":\[\],"files_applied":\["notes.md"\]' "$logs"
run_capture vout verr vrc "$CORRAL" trail verify --db "$db"
expect_status "corral trail verify is ok" 0 "$vrc" "$verr$vout"
