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
                               "escalations": "none"},
                     "65533": {"user_id": "gone", "state": "deactivated"}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}},
                     "worker": {"authority": {"write": True, "commands": False},
                                "tools": {"needs_approval": ["writeFile"]},
                                "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}},
                     "helper": {"extends": "worker", "authority": {"write": True, "commands": False}, "tools": {"needs_approval": []},
                                "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "args": json.loads(coord), "role": "coordinator"},
                      "tw": {"binary": "/usr/bin/python3", "args": ["-u", pyw] + json.loads(worker), "role": "worker"},
                      "w": {"binary": script, "args": ["@directive"], "role": "helper"}}},
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
if len(ids) >= int(sys.argv[2]): print(" ".join(ids[:int(sys.argv[2])]))' "${2:-}" "$1")
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
# A second person follows the gates as they open, until the run ends.
cli gate list --follow --json >"$d/follow" 2>&1 &
follower=$!
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
run_capture o e r setpriv --reuid=4321 --regid=4321 --clear-groups "$CORRAL" ps --control "$sock"
expect_status "A: an unmapped uid does not see the tree either (corral ps)" 1 "$r" "$o" "$e"
run_capture o e r setpriv --reuid=65534 --regid=65534 --clear-groups "$CORRAL" ps --control "$sock"
expect_match "A: a mapped user does" 'coordinator' "$o"
# A deactivated user's identity is retired (user spec 3.1): it reads nothing of the run either.
run_capture o e r setpriv --reuid=65533 --regid=65533 --clear-groups "$CORRAL" gate show "$tg" --control "$sock"
expect_status "A: a deactivated user cannot read a gate's subject" 1 "$r" "$o" "$e"
expect_nomatch "A: ... nor its arguments" 'approved.txt' "$o"
run_capture o e r setpriv --reuid=65533 --regid=65533 --clear-groups "$CORRAL" ps --control "$sock"
expect_status "A: ... nor the tree (corral ps)" 1 "$r" "$o" "$e"
expect_match "A: ... as a deactivated user" 'deactivated' "$e"
run_capture o e r setpriv --reuid=65534 --regid=65534 --clear-groups "$CORRAL" gate approve "$tg" --control "$sock"
expect_status "A: a user approving a gate type it may not is refused" 1 "$r" "$o" "$e"
expect_match "A: ... by the users map" 'not_permitted' "$e"
run_capture o e r cli gate approve "$tg"
expect_match "A: the tool call is approved by a person" "approve $tg \(tool_call" "$o"
tg2=$(wait_gates 1 tool_call) || fail "A: the second tool call opens a gate"
run_capture o e r cli gate reject "$tg2"
finish; [ -n "${HW_KEEP:-}" ] && rm -rf "$HW_KEEP.$1" && cp -r "$d" "$HW_KEEP.${d##*/}"
expect_status "A: the run ends with the coordinator's complete" 0 "$rc" "$(tail -5 "$d/err")"
wait "$follower"; frc=$?
expect_status "A: gate list --follow ends with the run" 0 "$frc" "$(cat "$d/follow")"
nf=$(grep -c '"type":"tool_call"' "$d/follow"); nt=$(grep -c '"type":"task_approval"' "$d/follow")
[ "$nf" -ge 1 ] && [ "$nt" -eq 3 ] && ok "A: ... having printed each gate it saw once (the three tasks, the first tool call)" || fail "A: ... having printed each new gate once" "$(cat "$d/follow")"
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

# ---- B: the other gate types, a timeout fallback and the re-entry guard, escalations answered
# each way, injections accepted and refused, subject invalidation, a corrupted checkpoint object
q() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; } # a step inside a JSON string
ESC_STEPS='["wacp/signal.emit {\"type\":\"started\"}", "wacp/signal.emit {\"type\":\"blocked\",\"reason\":\"which file?\"}", "wacp/signal.emit {\"type\":\"escalation\",\"reason\":\"which file?\"}", "e=@envelope", "@log:answer {{e.payload.text}} from {{e.origin}} {{e.originator}}", "e2=@envelope", "@exit:0"]'
WORK_STEPS='["wacp/signal.emit {\"type\":\"started\"}", "tools/call {\"name\":\"writeFile\",\"arguments\":{\"path\":\"out.txt\",\"content\":\"work\\n\"}}", "wacp/checkpoint.create {\"type\":\"artifact\",\"intent\":\"out\",\"status\":\"final\",\"confidence\":\"high\",\"parent\":null,\"files\":[\"out.txt\"]}", "wacp/signal.emit {\"type\":\"complete\"}", "@hold"]'
policy "$T_TMP/B.json" \
    '{"preset": "gated", "gates": {"envelope_delivery": false}, "gate_overrides": {"task_approval": {"timeout": "1s", "fallback": "escalate_to_coordinator"},
      "workspace_create": {"timeout": "60s", "fallback": "reject"}, "integration": {"timeout": "60s", "fallback": "reject"},
      "workspace_abort": {"timeout": "60s", "fallback": "reject"}}, "escalation": {"timeout": "60s", "fallback": "reject"}}' \
    "[\"@envelope\", \"t=wacp/task.create {\\\"name\\\":\\\"guarded\\\"}\", \"go=@envelope\",
      \"t2=wacp/task.create {\\\"name\\\":\\\"guarded\\\"}\",
      \"w=wacp/workspace.create {\\\"agent\\\":\\\"w\\\",\\\"directive\\\":{\\\"steps\\\":$(q "$WORK_STEPS")}}\",
      \"@until:complete\",
      \"wacp/integrate {\\\"workspace\\\":\\\"{{w.workspace_id}}\\\",\\\"decision\\\":\\\"accept\\\"}\",
      \"wacp/workspace.create {\\\"agent\\\":\\\"w\\\",\\\"directive\\\":{\\\"steps\\\":[\\\"@hold\\\"]}}\",
      \"e1=wacp/workspace.create {\\\"agent\\\":\\\"w\\\",\\\"directive\\\":{\\\"steps\\\":$(q "$ESC_STEPS")}}\",
      \"e2=wacp/workspace.create {\\\"agent\\\":\\\"w\\\",\\\"directive\\\":{\\\"steps\\\":$(q "$ESC_STEPS")}}\",
      \"e3=wacp/workspace.create {\\\"agent\\\":\\\"w\\\",\\\"directive\\\":{\\\"steps\\\":$(q "$ESC_STEPS")}}\",
      \"e4=wacp/workspace.create {\\\"agent\\\":\\\"w\\\",\\\"owner\\\":\\\"gone\\\",\\\"directive\\\":{\\\"steps\\\":$(q "$ESC_STEPS")}}\",
      \"@until:escalation\", \"@until:escalation\", \"@until:escalation\", \"@until:escalation\",
      \"wacp/workspace.abort {\\\"workspace\\\":\\\"{{e1.workspace_id}}\\\"}\",
      \"go2=@envelope\", \"wacp/signal.emit {\\\"type\\\":\\\"complete\\\"}\"]" \
    '[]'
mkdir -p "$T_TMP/B" && mv "$T_TMP/B.json" "$T_TMP/B/policy.json"
start B
# The task's gate times out (1 s) and falls to the coordinator: the task is cancelled, and the
# coordinator's re-submission of the same task goes through (the re-entry guard).
i=0; until trail --type gate_timeout 2>/dev/null | grep -q gate_id || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done
root=$(cli ps --json 2>/dev/null | field workspaces.0.workspace_id)
run_capture o e r cli inject "$root" --type directive --text "go on"
expect_match "B: a person's envelope is injected into the coordinator" 'delivered' "$o"
cg=$(wait_gates 1 workspace_create) || fail "B: workspace_create gate" "$(cat "$d/err")"
run_capture o e r cli gate approve "$cg"
expect_match "B: a workspace creation approved by a person" "approve $cg \(workspace_create" "$o"
ig=$(wait_gates 1 integration) || fail "B: integration gate" "$(cat "$d/err")"
# The checkpoint's stored object is altered while the integration waits.
obj=$(checkpoint_object "$db")
chmod u+w "$d/run/objects/$obj" 2>/dev/null; echo forged >"$d/run/objects/$obj"
run_capture o e r cli gate approve "$ig"
cg=$(wait_gates 1 workspace_create) || fail "B: second workspace_create gate"
run_capture o e r cli gate reject "$cg" --json
expect_match "B: a workspace creation rejected by a person" '"action":[[:space:]]*"reject"' "$o"
for k in 1 2 3 4; do
    cg=$(wait_gates 1 workspace_create) || fail "B: escalating workspace $k"
    cli gate approve "$cg" >/dev/null
done
# Four escalations: three to root-admin (the owner), one to a deactivated owner (rejected).
i=0; while [ $i -lt 300 ]; do
    n=$(cli escalations list --json 2>/dev/null | grep -c '"id"'); [ "$n" -ge 3 ] && break; sleep 0.1; i=$((i+1))
done
esc=$(cli escalations list --json | python3 -c 'import json,sys; print(" ".join(x["id"]+"="+x["workspace"] for x in json.load(sys.stdin)["escalations"]))')
set -- $esc
x1=${1%%=*} x2=${2%%=*} x3=${3%%=*}
xw3=${3#*=}
expect_match "B: escalations are listed for their owner" 'which file' "$(cli escalations list)"
run_capture o e r setpriv --reuid=65534 --regid=65534 --clear-groups "$CORRAL" escalations respond "$x1" --abort --control "$sock"
expect_status "B: a user may not answer an escalation routed to another" 1 "$r" "$o" "$e"
run_capture o e r cli escalations respond "$x1" --text "use a.txt"
expect_match "B: an escalation answered with an envelope" 'envelope env-' "$o"
run_capture o e r cli escalations respond "$x2" --delegate
expect_match "B: an escalation delegated to the coordinator" 'delegation' "$o"
run_capture o e r cli escalations respond "$x3" --abort
expect_match "B: an escalation answered by an abort" 'abort' "$o"
ag=$(wait_gates 1 workspace_abort) || fail "B: workspace_abort gate"
# The abort waits; its workspace ends by itself (its agent exits on a second envelope): the gate
# is resolved by the protocol (subject invalidation).
aw=$(cli gate show "$ag" --json | field gate.workspace)
run_capture o e r cli inject "$aw" --type feedback --text "you may stop"
expect_match "B: an injection into a live workspace is delivered" 'delivered' "$o"
i=0; until trail --type gate_resolved | grep -q subject_invalidated || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done
run_capture o e r cli inject "$xw3" --type feedback --text "too late"
expect_status "B: an injection into a failed workspace is refused" 1 "$r" "$o" "$e"
expect_match "B: ... as terminal" 'workspace_terminal' "$e"
run_capture o e r setpriv --reuid=65534 --regid=65534 --clear-groups "$CORRAL" inject "$root" --type feedback --text x --control "$sock"
expect_match "B: a user without the inject right is refused" 'not_permitted' "$e"
cli inject "$root" --type directive --text "finish" >/dev/null
finish; [ -n "${HW_KEEP:-}" ] && rm -rf "$HW_KEEP.$1" && cp -r "$d" "$HW_KEEP.${d##*/}"
expect_status "B: the run ends" 0 "$rc" "$(tail -5 "$d/err")"
t=$(trail)
expect_match "B: the timeout ran the fallback (gate_timeout)" '"fallback_action":[[:space:]]*"escalate_to_coordinator"' "$(trail --type gate_timeout)"
expect_match "B: ... resolved by the fallback actor" '"actor":[[:space:]]*"fallback"' "$(trail --type gate_resolved)"
expect_match "B: the coordinator's re-submission passed the re-entry guard" '"converted_to":[[:space:]]*"approve"' "$(trail --type gate_reentry_blocked)"
expect_match "B: the re-submitted task is pending at once" 'task.create ok .*"status":"pending"' "$logs"
expect_match "B: the corrupted checkpoint object is an integrity_violation" '"subject_type":[[:space:]]*"checkpoint"' "$(trail --type integrity_violation)"
expect_match "B: ... and the integration is refused" 'integrate error=.* integrity_violation' "$logs"
[ "$(cat "$ws/out.txt" 2>/dev/null)" = "" ] && ok "B: nothing of the forged object reached the project" || fail "B: nothing of the forged object reached the project" "$(cat "$ws/out.txt")"
expect_match "B: the rejected creation is answered in the coordinator's call" 'workspace.create error=.* gate_rejected_by_human' "$logs"
expect_match "B: the answer reached the blocked agent as the person's envelope" 'answer use a.txt from human root-admin' "$logs"
expect_match "B: escalation_resolved records each response type" '"response_type":[[:space:]]*"delegation"' "$(trail --type escalation_resolved)"
expect_match "B: ... the abort" '"response_type":[[:space:]]*"abort"' "$(trail --type escalation_resolved)"
expect_match "B: ... failed by the person" '"aborted_by_human"' "$(trail --type workspace_state_changed)"
expect_match "B: the deactivated owner's escalation is refused and recorded" '"reason":[[:space:]]*"user_deactivated"' "$(trail --type capability_denied)"
expect_match "B: the abort gate resolved by the protocol" '"actor":[[:space:]]*"protocol"' "$(trail --type gate_resolved)"
expect_match "B: the refused injection is recorded, status rejected" '"status":[[:space:]]*"rejected"' "$(trail --type human_injection)"
expect_match "B: injections carry origin human and the person as originator" '"origin":[[:space:]]*"human".*"originator":[[:space:]]*"root-admin"|"originator":[[:space:]]*"root-admin".*"origin":[[:space:]]*"human"' "$(trail --type envelope_created | tr -d '\n')"
n_trig=$(trail --type gate_triggered | grep -c '"gate_id"')
n_res=$(trail --type gate_resolved | grep -c '"gate_id"')
[ "$n_trig" -eq "$n_res" ] && ok "B: every gate resolved ($n_res)" || fail "B: every gate resolved" "triggered $n_trig resolved $n_res"
"$CORRAL" trail verify --db "$db" >/dev/null 2>&1 && ok "B: the trail verifies" || fail "B: the trail verifies"

# ---- C: the envelope_delivery gate: a directive modified by a person before delivery, a query
# rejected; the worker runs the person's version
policy "$T_TMP/C.json" \
    '{"preset": "autonomous", "gates": {"task_approval": false, "envelope_delivery": true},
      "gate_overrides": {"envelope_delivery": {"timeout": "60s", "fallback": "reject"}}}' \
    '["@envelope", "w=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":[\"@log:the original\"]}}",
      "wacp/envelope.send {\"to\":\"{{w.workspace_id}}\",\"type\":\"feedback\",\"payload\":{\"q\":\"never\"}}",
      "@until:complete", "wacp/integrate {\"workspace\":\"{{w.workspace_id}}\",\"decision\":\"reject\"}",
      "wacp/signal.emit {\"type\":\"complete\"}"]' '[]'
mkdir -p "$T_TMP/C" && mv "$T_TMP/C.json" "$T_TMP/C/policy.json"
start C
gs=$(wait_gates 2 envelope_delivery) || fail "C: the directive and the feedback wait at envelope_delivery gates" "$(cat "$d/err")"
set -- $gs
eg=$1 qg=$2
run_capture o e r cli gate reject "$qg"
expect_match "C: a person rejects an envelope" "reject $qg" "$o"
run_capture o e r cli gate modify "$eg" --modifications '{"payload": {"steps": ["@log:changed by a person", "wacp/signal.emit {\"type\":\"started\"}", "wacp/signal.emit {\"type\":\"complete\"}", "@hold"]}}'
expect_match "C: a person modifies an envelope before delivery" "modify $eg" "$o"
finish; [ -n "${HW_KEEP:-}" ] && rm -rf "$HW_KEEP.C" && cp -r "$d" "$HW_KEEP.C"
expect_status "C: the run ends" 0 "$rc" "$(tail -5 "$d/err")"
expect_match "C: the worker got the person's version" '# changed by a person' "$logs"
expect_nomatch "C: ... not the original" '# the original' "$logs"
expect_match "C: the rejected envelope is rejected, not delivered" '"reason":[[:space:]]*"gate_rejected_by_human"' "$(trail --type envelope_rejected)"
expect_nomatch "C: ... and never reached the worker" '"q":"never"' "$logs"

# ---- D: a run that ends while `gate list --follow` asks: the connection it had not taken yet is
# reset (seen under AddressSanitizer: status 1, "Connection reset by peer"); --follow still ends
# with 0. A stand-in run answers the first look, then closes its socket with the second pending.
cat >"$T_TMP/ending.py" <<'PY'
import os, select, socket, sys
path, ready = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
open(ready, "w").close()
c, _ = s.accept()
got = b""
while not got.endswith(b"\n"):  # the whole request line, as a run reads it
    got += c.recv(65536) or b"\n"
c.sendall(b'{"ok":true,"result":{"gates":[]}}\n')
c.close()
select.select([s], [], [], 30)  # the next look, not taken
s.close()  # the run ends: the socket file stays, no one listens
PY
esock=$T_TMP/ending.sock
python3 "$T_TMP/ending.py" "$esock" "$T_TMP/ending.ready" &
epid=$!
i=0; while [ ! -e "$T_TMP/ending.ready" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
run_capture o e r "$CORRAL" gate list --follow --json --control "$esock"
wait $epid
expect_status "D: gate list --follow ends with 0 when the run ends as it asks" 0 "$r" "$o" "$e"
