#!/bin/sh
# tests/e2e/security_integration.sh: integration and workspace budgets against a hostile worker
# (issue 12, item 7): DIR's owner and modes are kept; a tree deeper than workspaces may nest is
# refused before it is integrated (it broke every later workspace.create); `storage_bytes` is
# enforced on writes and checkpoints; integration commits `integration_started` before the first
# byte changes (SIGKILL midway leaves the entry, and no temporary litter); `wacp/trail.query`
# shows an agent no host path, pid or cgroup.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"

# ---- A: ownership and modes. DIR is 65534's; base.txt 0640. The worker changes base.txt, adds
# sub/new.txt, and a run.sh it made world-writable.
chk=$T_TMP/a-chk
WC=$(sec_steps \
  'tools/call {"name":"executeCommand","arguments":{"command":"echo changed >>base.txt && mkdir -p sub && echo new >sub/new.txt && echo \"#!/bin/sh\" >run.sh && chmod 0777 run.sh && echo made"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"a","status":"final","confidence":"high","parent":null}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
mkdir -p "$T_TMP/own/ws"
echo base >"$T_TMP/own/ws/base.txt"
chmod 0640 "$T_TMP/own/ws/base.txt"
sec_session own -- \
  "a=wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$WC}}" '@until:complete' \
  'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept"}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
expect_status "A: the run ends well" 0 "$rc" "$err" "$(echo "$logs" | grep -v '^< envelope' | tail -20)"
expect_match "A: the worker's change reached DIR" 'changed' "$(cat "$ws/base.txt" 2>&1)"
expect_match "A: an existing file keeps its owner and mode" '^65534:65534 640$' "$(stat -c '%u:%g %a' "$ws/base.txt")"
expect_match "A: a new directory is DIR's owner's, 0755" '^65534:65534 755$' "$(stat -c '%u:%g %a' "$ws/sub")"
expect_match "A: a new file is DIR's owner's, 0644" '^65534:65534 644$' "$(stat -c '%u:%g %a' "$ws/sub/new.txt")"
expect_match "A: a new file's mode is its own, masked (no group/other write)" '^65534:65534 755$' "$(stat -c '%u:%g %a' "$ws/run.sh")"

# ---- B: a tree 71 directories deep is refused at the checkpoint, and the next workspace.create works
deep=$(python3 -c 'print("/".join(["d"] * 71) + "/f.txt")')
W=$(sec_steps \
  "tools/call {\"name\":\"writeFile\",\"arguments\":{\"path\":\"$deep\",\"content\":\"deep\",\"createDirectories\":true}}" \
  "wacp/checkpoint.create {\"type\":\"artifact\",\"intent\":\"deep\",\"status\":\"final\",\"confidence\":\"high\",\"parent\":null,\"files\":[\"$deep\"]}" \
  'tools/call {"name":"writeFile","arguments":{"path":"shallow.txt","content":"fine"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"ok","status":"final","confidence":"high","parent":null,"files":["shallow.txt"]}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
W2=$(sec_steps 'wacp/signal.emit {"type":"complete"}' '@hold')
sec_session deep -- \
  "a=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W}}" '@until:complete' \
  'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept"}' \
  "b=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W2}}" '@until:complete' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
expect_match "B: the deep checkpoint is refused" 'checkpoint.create error=-?[0-9]+ too_deep' "$logs"
[ ! -e "$ws/d" ] && ok "B: nothing of the deep tree reached DIR" || fail "B: nothing of the deep tree reached DIR" "$(find "$ws" -maxdepth 3)"
expect_match "B: the shallow work was integrated" 'fine' "$(cat "$ws/shallow.txt" 2>&1)"
n=$(printf '%s\n' "$logs" | grep -c 'workspace.create ok' || true)
expect_status "B: a later workspace.create still works" 2 "$n" "$(printf '%s\n' "$logs" | grep 'workspace.create' | cut -c1-300)"

# ---- C: storage_bytes 16K: of 3000-byte writes the sixth is refused; a command that writes past
# the budget fails (tests/e2e/security_storage_commands.sh), and a checkpoint over it is refused
# (the writer's steps are its own arguments: a directive's steps fit in one 4095-byte argument)
STORE=$(python3 -c '
import json
w = "tools/call " + json.dumps({"name": "writeFile", "arguments": {"path": "f%d", "content": "x" * 3000}})
print(json.dumps({"wstore": {"role": "worker", "args": ["@directive"] + [w % i for i in range(6)] +
                  ["wacp/signal.emit {\"type\":\"complete\"}", "@hold"]}}))')
WC=$(sec_steps \
  'tools/call {"name":"executeCommand","arguments":{"command":"for i in 1 2 3 4 5 6 7 8 9; do head -c 3000 /dev/zero >big$i; done; echo wrote"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"big","status":"final","confidence":"high","parent":null}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
SEC_AGENTS_EXTRA=$STORE SEC_WORKER_EXTRA='{"budgets":{"memory":"256M","pids":32,"wall_time":"2m","storage_bytes":"16K"}}' sec_session storage -- \
  'a=wacp/workspace.create {"agent":"wstore","directive":{}}' '@until:complete' \
  "b=wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$WC}}" '@until:complete' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
n=$(printf '%s\n' "$logs" | grep '^< tools/call ok' | grep -c '"success":true' || true)
expect_status "C: five 3000-byte writes fit in 16K" 5 "$n" "$(printf '%s\n' "$logs" | grep '^< tools/call' | cut -c1-200)"
expect_match "C: the sixth write is refused for storage" 'storage' "$(printf '%s\n' "$logs" | grep '^< tools/call ok' | grep '"isError":true' | head -1)"
expect_match "C: the command that wrote 27K fails for storage" 'storage budget of 16384 bytes' "$logs"
expect_match "C: a checkpoint over the budget is refused" 'checkpoint.create error=-?[0-9]+ budget_exceeded' "$logs"
expect_match "C: the refused checkpoint is a budget_exceeded entry" '"budget":"storage"' "$(sec_trail --type budget_exceeded)"
expect_match "C: the refused write is recorded with its code" '"outcome":"error".*SIZE_LIMIT_EXCEEDED|SIZE_LIMIT_EXCEEDED.*"outcome":"error"' "$(sec_trail --type tool_call | grep '"phase":"end"')"

# ---- D: SIGKILL while integration writes 3000 files: integration_started is already committed
WC=$(sec_steps \
  'tools/call {"name":"executeCommand","arguments":{"command":"i=0; while [ $i -lt 3000 ]; do echo $i >f$i; i=$((i+1)); done; echo made"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"many","status":"final","confidence":"high","parent":null}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
d=$T_TMP/kill ws=$d/ws rundir=$d/run db=$d/trail.db
mkdir -p "$ws"
echo base >"$ws/base.txt"
chown -R 65534:65534 "$ws"
S=$S sec_policy "$d/policy.json" \
  "a=wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$WC}}" '@until:complete' \
  'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept"}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
"$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$rundir" --trail "$db" --timeout 60 >"$d/out" 2>&1 &
pid=$!
i=0
while [ ! -e "$ws/f0" ] && [ ! -e "$ws/f1" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 2000000 ]; do i=$((i + 1)); done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
n=$(ls "$ws" | grep -c '^f' || true)
[ "$n" -gt 0 ] && ok "D: the supervisor was killed during integration ($n of 3000 files written)" ||
    fail "D: the supervisor was killed during integration" "no file written" "$(cat "$d/out")"
n=$(sec_trail --type integration_started | wc -l)
expect_status "D: integration_started was committed before the first file changed" 1 "$n" "$(sec_trail | tail -5 | cut -c1-200)"
n=$(find "$ws" -name '.corral-tmp*' | wc -l)
expect_status "D: no temporary litter in DIR" 0 "$n" "$(find "$ws" -name '.corral-tmp*' | head)"
expect_match "D: the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"

# ---- E: wacp/trail.query shows a worker no host path, pid or cgroup
W=$(sec_steps 'wacp/trail.query {}' 'wacp/trail.query {"type":"sandbox_created"}' 'wacp/signal.emit {"type":"complete"}' '@hold')
sec_session query -- \
  "a=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W}}" '@until:complete' \
  'wacp/trail.query {}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
q=$(printf '%s\n' "$logs" | grep '^< wacp/trail.query ok')
expect_match "E: the worker read its trail" 'sandbox_created' "$q"
expect_match "E: each entry's body is under \"body\"" '"type":"sandbox_created","body":\{' "$q"
expect_nomatch "E: no member lost its name (a scrubbed value too)" '"":' "$q"
expect_nomatch "E: no host path of the run (run dir, workspace, agents)" "$rundir|$T_TMP|$AGENTS|/tmp/" "$q"
expect_nomatch "E: no pid" '"pid"' "$q"
expect_nomatch "E: no cgroup" 'cgroup' "$q"
