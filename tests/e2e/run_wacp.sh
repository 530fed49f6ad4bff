#!/bin/sh
# tests/e2e/run_wacp.sh: WACP Level 1 through the real `corral run`, with scripted agents
# (tests/agents/wacp_script) as coordinator and workers, some hostile: role denials recorded in
# the trail, forged ids, a revoked send right, the checkpoint chain, a task cycle, signal
# transitions and duplicates, layered integration with a content_overlap, redelivery of an
# envelope a worker drops (and undeliverable after three), a flood that leaves the others
# unaffected. Agents' stderr (their view of the conversation) is in RUN_DIR/logs/*.log.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_wacp: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script

# session NAME [--redelivery-ms N] -- COORDINATOR STEPS...: a policy with the coordinator
# running those steps and worker agents "w" (steps come in its directive's payload.steps),
# "dropper" (drops its first envelope) and "lost" (drops four: its directive is undeliverable);
# runs it on a fresh workspace holding base.txt and shared.txt. Sets $ws, $rundir, $db, $out,
# $err, $rc, $logs (every agent's log).
session() {
    name=$1; shift
    extra=
    while [ "$1" != "--" ]; do extra="$extra $1"; shift; done
    shift
    d=$T_TMP/$name
    ws=$d/ws rundir=$d/run db=$d/trail.db
    mkdir -p "$ws"
    echo base >"$ws/base.txt"
    echo original >"$ws/shared.txt"
    chown -R 65534:65534 "$ws"
    python3 - "$d/policy.json" "$S" "$@" <<'PY'
import json, sys
out, script, steps = sys.argv[1], sys.argv[2], sys.argv[3:]
worker = {"authority": {"write": True, "commands": False},
          "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}
# No rate limits here: these floods test the permission checks behind them, one by one
# (tests/e2e/security_flood.sh tests the limits).
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "rate_limits": {"signals": 0, "envelopes": 0, "checkpoints": 0, "tool_calls": 0},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}}, "worker": worker},
           "agents": {"coord": {"binary": script, "args": steps, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"},
                      "dropper": {"binary": script, "args": ["@drop:1", "@directive"], "role": "worker"},
                      "lost": {"binary": script, "args": ["@drop:4", "@timeout:8000", "@directive", "@hold"],
                               "role": "worker"}}},
          open(out, "w"), indent=1)
PY
    # shellcheck disable=SC2086
    run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$rundir" \
        --trail "$db" --timeout 60 $extra
    logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
}
trail() { "$CORRAL" trail --db "$db" --json "$@"; }

# ---- A: roles, rights, checkpoints, tasks, signals (one coordinator, one worker)
W_STEPS='["wacp/workspace.create {\"agent\":\"w\",\"directive\":{}}",
 "wacp/task.create {\"name\":\"mine\"}",
 "wacp/envelope.send {\"to\":\"{{directive.from}}\",\"type\":\"directive\",\"payload\":{}}",
 "wacp/workspace.abort {\"workspace\":\"{{directive.from}}\"}",
 "r=wacp/rights.list {}",
 "wacp/envelope.send {\"to\":\"{{directive.from}}\",\"type\":\"query\",\"payload\":{\"right\":\"{{r.rights.kind=send.right_id}}\"}}",
 "@envelope",
 "wacp/envelope.send {\"to\":\"{{directive.from}}\",\"type\":\"query\",\"payload\":{\"again\":true}}",
 "tools/call {\"name\":\"writeFile\",\"arguments\":{\"path\":\"out.txt\",\"content\":\"from the worker\\n\"}}",
 "c1=wacp/checkpoint.create {\"type\":\"artifact\",\"intent\":\"one\",\"status\":\"provisional\",\"confidence\":\"high\",\"parent\":null,\"files\":[\"out.txt\"]}",
 "wacp/checkpoint.create {\"type\":\"artifact\",\"intent\":\"fork\",\"status\":\"final\",\"confidence\":\"high\",\"parent\":null}",
 "wacp/checkpoint.create {\"type\":\"observation\",\"intent\":\"obs\",\"status\":\"final\",\"confidence\":\"high\",\"parent\":\"{{c1.checkpoint_id}}\"}",
 "wacp/checkpoint.create {\"type\":\"artifact\",\"intent\":\"two\",\"status\":\"final\",\"confidence\":\"high\",\"parent\":\"{{c1.checkpoint_id}}\",\"files\":[\"out.txt\"]}",
 "wacp/signal.emit {\"type\":\"complete\"}",
 "wacp/signal.emit {\"type\":\"failed\",\"reason\":\"too late\"}",
 "wacp/signal.emit {\"type\":\"bogus\"}",
 "wacp/signal.emit {\"type\":\"complete\"}",
 "@hold"]'
session a -- @envelope \
    't=wacp/task.create {"name":"t1"}' \
    'wacp/task.create {"tasks":[{"ref":"a","name":"a","depends_on":["b"]},{"ref":"b","name":"b","depends_on":["a"]}]}' \
    'wacp/task.create {"name":"x","depends_on":["task-00000000000000000000000000000000"]}' \
    'wacp/envelope.send {"to":"ws-00000000000000000000000000000000","type":"directive","payload":{}}' \
    'wacp/integrate {"workspace":"ws-00000000000000000000000000000000","decision":"accept"}' \
    "w=wacp/workspace.create {\"agent\":\"w\",\"task\":\"{{t.task_id}}\",\"directive\":{\"steps\":$(echo "$W_STEPS" | tr -d '\n')}}" \
    'wacp/integrate {"workspace":"{{w.workspace_id}}","decision":"accept"}' \
    'q=@envelope' \
    'wacp/rights.revoke {"right_id":"{{q.payload.right}}"}' \
    'wacp/envelope.send {"to":"{{q.from}}","type":"feedback","payload":{"go":1},"in_reply_to":"{{q.envelope_id}}"}' \
    '@until:complete' '@log:the duplicate follows' '@until:complete' \
    'wacp/integrate {"workspace":"{{w.workspace_id}}","decision":"accept","strategy":"layered"}' \
    'wacp/task.list {}' \
    'wacp/signal.emit {"type":"complete"}' @hold
expect_status "A: the run ends well (the coordinator completed)" 0 "$rc" "$err" "$logs"
expect_match "A: a worker may not create workspaces" 'workspace.create error=-32001 permission_denied' "$logs"
expect_match "A: a worker may not define tasks" 'task.create error=-32001 permission_denied' "$logs"
expect_match "A: a worker may not send a directive" 'envelope.send error=-32001 permission_denied' "$logs"
expect_match "A: a worker may not abort its parent" 'workspace.abort error=-3200[12] (permission_denied|not_found)' "$logs"
n=$(trail | grep -c '"type":"denial"\|"type":"envelope_rejected"' || true)
[ "$n" -ge 4 ] && ok "A: the denials are in the trail ($n)" || fail "A: the denials are in the trail" "$n entries" "$(trail | cut -c1-300 | tail -40)"
expect_match "A: a task cycle is refused" 'task.create error=-?[0-9]+ cycle' "$logs"
expect_match "A: a dependency on an unknown task is refused" 'task.create error=-32002 not_found' "$logs"
expect_match "A: a forged workspace id is not found" 'envelope.send error=-32002 (target_)?not_found' "$logs"
expect_match "A: integrating a forged workspace is refused" 'integrate error=-32002 not_found' "$logs"
expect_match "A: integrating a workspace that is not integrating is refused" 'integrate error=-32003 ' "$logs"
expect_match "A: the worker's query goes through on its send right" 'envelope.send ok \{"envelope_id":"env-' "$logs"
expect_match "A: the coordinator revokes that right" 'rights.revoke ok .*"revoked":true' "$logs"
expect_match "A: a send on the revoked right is refused" 'envelope.send error=-32001 no_send_right' "$logs"
expect_match "A: the first checkpoint starts the chain" 'checkpoint.create ok .*"payload_hash"' "$logs"
expect_match "A: a second head of the chain is refused" 'checkpoint.create error=-?[0-9]+ chain_head_mismatch' "$logs"
expect_match "A: a worker may not create an observation" 'checkpoint.create error=-?[0-9]+ type_not_permitted' "$logs"
expect_match "A: complete moves the worker to integrating" 'signal.emit ok .*"state":"integrating"' "$logs"
# The duplicate is proven from the trail, not from the worker's log: the coordinator integrates
# (and so ends) the worker as soon as the duplicate reaches it, which on a loaded machine can be
# before the worker has printed the answer it already holds in its pipe.
dups=$(trail --type signal_emitted | grep '"type":"complete"' | grep -c '"duplicate":true' || true)
expect_status "A: a duplicate complete is recorded" 1 "$dups" "$(trail --type signal_emitted | cut -c1-400)"
n=$(trail --type workspace_state_changed | grep -c '"from":"active","reason":"complete","to":"integrating"' || true)
expect_status "A: the duplicate leaves the state unchanged (one move to integrating per workspace)" 2 "$n" \
    "$(trail --type workspace_state_changed | cut -c1-400)"
expect_match "A: failed from integrating is an invalid transition" 'signal.emit error=-32003 invalid_transition' "$logs"
expect_match "A: an unknown signal type is refused" 'signal.emit error=-?[0-9]+ unknown_signal' "$logs"
expect_match "A: the coordinator is told of the child's complete" '< signal .*"type":"complete"' "$logs"
expect_match "A: and of the duplicate" '# the duplicate follows
< signal .*"type":"complete"' "$(printf '%s\n' "$logs" | grep -A1 '# the duplicate follows')"
expect_match "A: layered integration closes the worker" 'integrate ok .*"state":"closed"' "$logs"
expect_match "A: the worker's file reached the root workspace" 'from the worker' "$(cat "$ws/out.txt" 2>&1)"
expect_match "A: the task is integrated, its workspace in history" 'task.list ok .*"status":"integrated"' "$logs"
n=$(trail --type checkpoint_created | wc -l)
expect_status "A: two checkpoints made the chain" 2 "$n" "$(trail --type checkpoint_created)"
expect_match "A: the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"

# ---- B: redelivery: a worker that drops its directive gets it again (attempt 2), once; one that
# drops four has it recorded undeliverable after three redeliveries (base 400 ms: 4 s in all, so
# a machine under load still acks the others in time); the coordinator aborts it once the trail
# says so
session b --redelivery-ms 400 -- @envelope \
    'd=wacp/workspace.create {"agent":"dropper","directive":{"steps":["wacp/checkpoint.create {\"type\":\"artifact\",\"intent\":\"d\",\"status\":\"final\",\"confidence\":\"high\",\"parent\":null}","wacp/signal.emit {\"type\":\"complete\"}","@hold"]}}' \
    'l=wacp/workspace.create {"agent":"lost","directive":{"steps":["@log:never"]}}' \
    '@until:complete' \
    'wacp/integrate {"workspace":"{{d.workspace_id}}","decision":"accept"}' \
    '@poll:envelope_undeliverable:wacp/trail.query {"type":"envelope_undeliverable"}' \
    'wacp/workspace.abort {"workspace":"{{l.workspace_id}}","reason":"its directive was undeliverable"}' \
    'wacp/signal.emit {"type":"complete"}' @hold
expect_status "B: the run ends well" 0 "$rc" "$err" "$logs"
expect_match "B: the dropper dropped attempt 1 unacked" 'dropped envelope env-[0-9a-f]+ \(attempt 1\)' "$logs"
expect_match "B: the dropper got attempt 2 and acted on it" '< envelope .*"attempt":2' "$logs"
n=$(printf '%s\n' "$logs" | grep -c '^< envelope .*"steps":\["wacp/checkpoint.create' || true)
expect_status "B: the dropper handled its directive once" 1 "$n" "$logs"
n=$(trail --type envelope_redelivered | wc -l)
[ "$n" -ge 4 ] && ok "B: redeliveries are recorded ($n)" || fail "B: redeliveries are recorded" "$n" "$(trail --type envelope_redelivered)"
expect_match "B: after three redeliveries the envelope is undeliverable" '"envelope_undeliverable"' "$(trail --type envelope_undeliverable)"
expect_nomatch "B: the lost worker never acted" '# never' "$logs"

# ---- C: layered integration: two workers change shared.txt; the second to be integrated is a
# content_overlap, resolved by the coordinator in the child's favour
wsteps() { printf '{"steps":["tools/call {\\"name\\":\\"writeFile\\",\\"arguments\\":{\\"path\\":\\"shared.txt\\",\\"content\\":\\"%s\\\\n\\"}}","tools/call {\\"name\\":\\"writeFile\\",\\"arguments\\":{\\"path\\":\\"%s.txt\\",\\"content\\":\\"own\\\\n\\"}}","wacp/checkpoint.create {\\"type\\":\\"artifact\\",\\"intent\\":\\"x\\",\\"status\\":\\"final\\",\\"confidence\\":\\"high\\",\\"parent\\":null}","wacp/signal.emit {\\"type\\":\\"complete\\"}","@hold"]}' "$1" "$1"; }
session c -- @envelope \
    "w1=wacp/workspace.create {\"agent\":\"w\",\"directive\":$(wsteps one)}" \
    "w2=wacp/workspace.create {\"agent\":\"w\",\"directive\":$(wsteps two)}" \
    '@until:complete' '@until:complete' \
    'wacp/integrate {"workspace":"{{w1.workspace_id}}","decision":"accept","strategy":"layered"}' \
    'wacp/integrate {"workspace":"{{w2.workspace_id}}","decision":"accept","strategy":"layered"}' \
    'wacp/conflict.resolve {"workspace":"{{w2.workspace_id}}","resolution":"coordinator_resolve","prefer":"child"}' \
    'wacp/signal.emit {"type":"complete"}' @hold
expect_status "C: the run ends well" 0 "$rc" "$err" "$logs"
expect_match "C: the first integration applies both files" 'integrate ok .*"state":"closed"' "$logs"
expect_match "C: the second is a content_overlap on shared.txt" 'integrate ok .*"state":"conflicted".*"type":"content_overlap","path":"shared.txt"|integrate ok .*"conflicts":\[\{"type":"content_overlap","path":"shared.txt"\}\]' "$logs"
expect_match "C: the coordinator resolves it" 'conflict.resolve ok .*"state":"closed"' "$logs"
expect_match "C: the child's version won" '^two$' "$(cat "$ws/shared.txt")"
expect_match "C: the first worker's own file is there" '^own$' "$(cat "$ws/one.txt" 2>&1)"
expect_match "C: the second worker's own file is there" '^own$' "$(cat "$ws/two.txt" 2>&1)"
expect_match "C: the overlap is in the trail" 'content_overlap' "$(trail --type conflict_detected)"

# ---- D: a hostile worker floods forbidden requests; a well-behaved one beside it finishes (the
# loop's per-turn budgets serve it first: the coordinator waits for the flooder's checkpoint
# signal, sent once its floods are answered, before aborting it)
FLOOD='{"steps":["@flood:300:wacp/envelope.send {\"to\":\"{{directive.from}}\",\"type\":\"directive\",\"payload\":{}}","@flood:300:wacp/workspace.create {\"agent\":\"w\",\"directive\":{}}","@flood:200:wacp/envelope.send {\"to\":\"ws-00000000000000000000000000000000\",\"type\":\"query\",\"payload\":{}}","wacp/signal.emit {\"type\":\"checkpoint\"}","@hold"]}'
GOOD='{"steps":["tools/call {\"name\":\"writeFile\",\"arguments\":{\"path\":\"good.txt\",\"content\":\"good\\n\"}}","wacp/checkpoint.create {\"type\":\"artifact\",\"intent\":\"g\",\"status\":\"final\",\"confidence\":\"high\",\"parent\":null}","wacp/signal.emit {\"type\":\"complete\"}","@hold"]}'
session d -- @envelope \
    "h=wacp/workspace.create {\"agent\":\"w\",\"directive\":$FLOOD}" \
    "g=wacp/workspace.create {\"agent\":\"w\",\"directive\":$GOOD}" \
    '@until:complete' \
    'wacp/integrate {"workspace":"{{g.workspace_id}}","decision":"accept"}' \
    '@until:checkpoint' \
    'wacp/workspace.abort {"workspace":"{{h.workspace_id}}","reason":"flooding"}' \
    'wacp/signal.emit {"type":"complete"}' @hold
expect_status "D: the run ends well" 0 "$rc" "$err" "$logs"
expect_match "D: 300 forbidden directives, all denied" '< flood 300 ok=0 permission_denied=300' "$logs"
expect_match "D: 300 forbidden creations, all denied" '< flood 300 ok=0 permission_denied=300' "$(printf '%s\n' "$logs" | grep 'flood 300' | tail -1)"
expect_match "D: 200 sends to a forged id, none delivered" '< flood 200 ok=0 ' "$logs"
expect_match "D: the well-behaved worker was integrated" '^good$' "$(cat "$ws/good.txt" 2>&1)"
expect_match "D: the hostile one was aborted" 'workspace.abort ok .*"state":"failed"' "$logs"
n=$(trail --type workspace_created | wc -l)
expect_status "D: no workspace was created by the flood" 3 "$n" "$(trail --type workspace_created | cut -c1-200)"

# ---- E: containment and lifecycle: a child's budget stays within its parent's; a delegate
# creates a grandchild, which inherits the owner; suspend and resume; aborting the delegate
# fails its subtree; an agent that exits fails its workspace and its parent is told
DELEGATE=$(python3 - <<'PY'
import json
# The grandchild is active (its directive delivered) once it signals; only then does the delegate
# name it to the coordinator, which suspends it (an idle one cannot be: no sleep decides this).
grand = {"steps": ['wacp/signal.emit {"type":"started"}', "wacp/workspace.self {}", "@hold"]}
create = "k=wacp/workspace.create " + json.dumps({"agent": "w", "directive": grand})
send = 'wacp/envelope.send {"to":"{{directive.from}}","type":"query","payload":{"child":"{{k.workspace_id}}"}}'
print(json.dumps({"steps": [create, "@until:started", send, "@hold"]}))
PY
)
session e -- @envelope \
    'wacp/workspace.create {"agent":"w","directive":{},"budgets":{"memory":1099511627776}}' \
    "d=wacp/workspace.create {\"agent\":\"w\",\"delegate\":true,\"directive\":$DELEGATE}" \
    'q=@envelope' \
    'wacp/workspace.suspend {"workspace":"{{q.payload.child}}"}' \
    'wacp/workspace.resume {"workspace":"{{q.payload.child}}"}' \
    'wacp/workspace.abort {"workspace":"{{d.workspace_id}}","reason":"the subtree goes"}' \
    'wacp/workspace.list {}' \
    '@log:child {{q.payload.child}}' \
    'x=wacp/workspace.create {"agent":"w","directive":{"steps":["@exit:0"]}}' \
    '@timeout:10000' 'f=@until:failed' \
    '@log:failed {{f.from}} {{f.reason}}' \
    'wacp/signal.emit {"type":"complete"}' @hold
expect_status "E: the run ends well" 0 "$rc" "$err" "$logs"
expect_match "E: a child's budget above its parent's is refused" 'workspace.create error=-32004 budget_exceeds_parent' "$logs"
expect_match "E: a delegate creates a child" '< wacp/workspace.create ok .*"state":"idle"' "$(printf '%s\n' "$logs" | grep -v '^< envelope')"
expect_match "E: the grandchild inherits the owner" 'workspace.self ok .*"owner":"uid:0"' "$logs"
expect_match "E: the coordinator suspends the grandchild" 'workspace.suspend ok .*"state":"suspended"' "$logs"
expect_match "E: and resumes it" 'workspace.resume ok .*"state":"active"' "$logs"
expect_match "E: aborting the delegate fails it" 'workspace.abort ok .*"state":"failed"' "$logs"
child=$(printf '%s\n' "$logs" | sed -n 's/^# child //p')
expect_match "E: and its child with it" "\"workspace\":\"$child\".*\"to\":\"failed\"" "$(trail --type workspace_state_changed)"
expect_match "E: an agent that exits fails its workspace, and the parent is told" '# failed ws-[0-9a-f]+ agent_exited' "$logs"
