#!/bin/sh
# tests/e2e/highway.sh: the human highway (WACP human-highway spec section 9, security spec
# section 10) through the real `corral run` and the real `corral gate / inject / escalations`
# from other processes: task approval gates approved, rejected and modified by a person, FIFO
# order, a tool call under needs_approval held while the same agent's other calls answer, then
# run on approval and refused on rejection in the surface's own shape; callers authenticated by
# the kernel (SO_PEERCRED): an unmapped uid refused and recorded, a user deciding a gate type it
# may not; timeouts and their fallbacks, the re-entry guard, subject invalidation, the other gate
# types, escalations answered each way, injections accepted and refused, a corrupted checkpoint
# object refused at integration. Agents: tests/agents/wacp_script (coordinator) and rpc_script
# (a worker that pipelines its calls).
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
HW="$TOP/tests/agents/highway_worker.py"
chmod 711 "$T_TMP"

# policy FILE HIGHWAY_JSON COORD_STEPS_JSON WORKER_ARGS_JSON
policy() {
    python3 - "$@" "$S" "$HW" <<'PY'
import json, sys
out, hw, coord, worker, script, pyw = sys.argv[1:7]
json.dump({"version": 1, "highway": json.loads(hw),
           "users": {"0": "root-admin",
                     "65534": {"user_id": "nobody", "approve": ["task_approval"], "inject": False,
                               "escalations": "none"}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}},
                     "worker": {"authority": {"write": True, "commands": False},
                                "tools": {"needs_approval": ["writeFile"]},
                                "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "args": json.loads(coord), "role": "coordinator"},
                      "tw": {"binary": "/usr/bin/python3", "args": ["-u", pyw] + json.loads(worker), "role": "worker"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
}

# start NAME: runs the session of $d/policy.json in the background; sets $ws $db $sock $pid.
start() {
    d=$T_TMP/$1
    ws=$d/ws db=$d/trail.db sock=$d/trail.db.sock
    mkdir -p "$ws"
    chmod 711 "$d"
    echo base >"$ws/base.txt"
    chown -R 65534:65534 "$ws"
    "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$d/run" --trail "$db" --timeout 90 \
        >"$d/out" 2>"$d/err" </dev/null &
    pid=$!
}
finish() { wait "$pid"; rc=$?; logs=$(cat "$d"/run/logs/*.log 2>/dev/null); }
cli() { "$CORRAL" "$@" --control "$sock"; }
trail() { "$CORRAL" trail --db "$db" --json "$@"; }
# wait_gates N [TYPE]: until N gates (of TYPE) are pending; prints their ids, oldest first.
wait_gates() {
    i=0
    while [ $i -lt 300 ]; do
        got=$(cli gate list --json 2>/dev/null | python3 -c '
import json, sys
t = sys.argv[1] if len(sys.argv) > 1 else None
try: g = json.load(sys.stdin)["gates"]
except Exception: g = []
ids = [x["id"] for x in g if t is None or x["type"] == t]
if len(ids) >= int(sys.argv[2]): print(" ".join(ids))' "${2:-}" "$1")
        [ -n "$got" ] && { echo "$got"; return 0; }
        sleep 0.1; i=$((i + 1))
    done
    return 1
}
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d[int(k)] if isinstance(d, list) else d.get(k)
print(d if not isinstance(d,(dict,list)) else json.dumps(d))' "$1"; }

# ---- A: task approval and a tool call under needs_approval, decided by people --------------
policy "$T_TMP/A.json" \
    '{"preset": "supervised", "gate_overrides": {"task_approval": {"timeout": "60s", "fallback": "reject"}, "tool_call": {"timeout": "60s", "fallback": "reject"}}}' \
    '["t1=wacp/task.create {\"name\":\"first\"}", "t2=wacp/task.create {\"name\":\"second\"}",
      "t3=wacp/task.create {\"name\":\"third\",\"description\":\"as proposed\"}",
      "w=wacp/workspace.create {\"agent\":\"tw\",\"directive\":{}}", "@until:failed",
      "wacp/task.list {}", "wacp/signal.emit {\"type\":\"complete\"}"]' \
    '["1 writeFile {\"path\":\"approved.txt\",\"content\":\"yes\\n\"}", "2 readFile {\"path\":\"base.txt\"}",
      "wait 2", "wait 1",
      "3 writeFile {\"path\":\"rejected.txt\",\"content\":\"no\\n\"}", "4 readFile {\"path\":\"base.txt\"}",
      "wait 4", "wait 3"]'
mkdir -p "$T_TMP/A" && mv "$T_TMP/A.json" "$T_TMP/A/policy.json"
start A
tasks=$(wait_gates 3 task_approval) || fail "A: three task_approval gates open" "$(cat "$d/err")"
set -- $tasks
g1=$1 g2=$2 g3=$3
list=$(cli gate list)
expect_match "A: gate list shows type, what happens on timeout and the subject" 'task_approval .*reject +task "first"' "$list"
show=$(cli gate show "$g3")
expect_match "A: gate show gives the whole subject" '"description":[[:space:]]*"as proposed"' "$show"
# FIFO: --next takes the oldest.
run_capture o e r cli gate approve --next
expect_match "A: approve --next decides the oldest gate first (FIFO)" "approve $g1 .* as root-admin" "$o"
run_capture o e r cli gate reject "$g2"
expect_match "A: a person rejects a task" "reject $g2" "$o"
run_capture o e r cli gate modify "$g3" --set 'description=changed by a person'
expect_match "A: a person modifies a task before approving it" "modify $g3" "$o"
run_capture o e r cli gate modify "$g1" --set 'description=x'
expect_status "A: a resolved gate is not decided twice" 1 "$r" "$o" "$e"
# The tool call: held while the agent's next call (readFile) is answered.
tg=$(wait_gates 1 tool_call) || fail "A: the tool call opens a tool_call gate" "$(cat "$d/err")"
tshow=$(cli gate show "$tg" --json)
expect_match "A: the tool gate shows the tool, its arguments and the workspace" '"tool":[[:space:]]*"writeFile"' "$tshow"
expect_match "A: ... its arguments" '"path":[[:space:]]*"approved.txt"' "$tshow"
# Another uid, unmapped: refused and recorded. A mapped user without the right: refused too.
run_capture o e r setpriv --reuid=4321 --regid=4321 --clear-groups "$CORRAL" gate approve "$tg" --control "$sock"
expect_status "A: an unmapped uid is refused" 1 "$r" "$o" "$e"
expect_match "A: ... saying why" 'unknown_identity' "$e"
run_capture o e r setpriv --reuid=65534 --regid=65534 --clear-groups "$CORRAL" gate approve "$tg" --control "$sock"
expect_status "A: a user approving a gate type it may not is refused" 1 "$r" "$o" "$e"
expect_match "A: ... by the users map" 'not_permitted' "$e"
run_capture o e r cli gate approve "$tg"
expect_match "A: the tool call is approved by a person" "approve $tg \(tool_call" "$o"
tg2=$(wait_gates 1 tool_call) || fail "A: the second tool call opens a gate"
run_capture o e r cli gate reject "$tg2"
finish
expect_status "A: the run ends with the coordinator's complete" 0 "$rc" "$(tail -5 "$d/err")"
# The readFile (id 2) answered before the held writeFile (id 1): its other calls flowed.
order=$(printf '%s\n' "$logs" | grep -Eo '< id=[0-9]+' | tr '\n' ' ')
expect_match "A: the agent's other call answered while the tool call waited" '< id=0 < id=2 < id=1 < id=4 < id=3' "$order"
expect_match "A: the approved call ran" 'id=1 isError=false' "$logs"
ls "$d"/run/ws/*/approved.txt >/dev/null 2>&1 &&
    ok "A: ... and wrote its file" || fail "A: ... and wrote its file" "$(ls -R "$d/run/ws" | head)"
expect_match "A: the rejected call is refused in the surface's own shape" 'id=3 isError=true .*approval' "$logs"
ls "$d"/run/ws/*/rejected.txt >/dev/null 2>&1 && fail "A: the rejected call wrote nothing" || ok "A: the rejected call wrote nothing"
t=$(trail)
expect_match "A: gate_triggered and gate_resolved pairs, the person as actor" '"actor": *"root-admin", *"type": *"gate_resolved"|"type": *"gate_resolved".*"actor": *"root-admin"' "$(trail --type gate_resolved)"
n_trig=$(trail --type gate_triggered | grep -c '"gate_id"')
n_res=$(trail --type gate_resolved | grep -c '"gate_id"')
[ "$n_trig" -eq 5 ] && [ "$n_res" -eq 5 ] && ok "A: every gate triggered is resolved (5/5)" || fail "A: every gate triggered is resolved" "triggered $n_trig resolved $n_res"
expect_match "A: the approval is recorded as the person's" '"approval_source": *"human"' "$(trail --type task_approved)"
expect_match "A: the modified task carries the change" '"changed by a person"' "$(printf '%s\n' "$logs")"
expect_match "A: the unmapped uid is recorded" '"entity": *"uid:4321"' "$(trail --type authentication_failed)"
expect_match "A: the user without the right is recorded" '"user_id": *"nobody"' "$(trail --type capability_denied)"
"$CORRAL" trail verify --db "$db" >/dev/null 2>&1 && ok "A: the trail verifies" || fail "A: the trail verifies"
