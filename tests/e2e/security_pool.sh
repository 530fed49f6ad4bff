#!/bin/sh
# tests/e2e/security_pool.sh: the tool pool cannot be starved by a few agents (issue 12, item 7).
# Four workers each run four `sleep 25` commands at once (every one the per-agent limit allows);
# a fifth worker's readFile, sent once they run, is answered before any of them ends: the trail
# has the readFile's end before the first executeCommand's end. (No clock is read: the order is
# the proof.)
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"

SLEEP=$(sec_steps '@timeout:60000' \
  '@flood:4:tools/call {"name":"executeCommand","arguments":{"command":"sleep 25","timeout":60000}}' '@hold')
READ=$(sec_steps '@sleep:4000' 'tools/call {"name":"readFile","arguments":{"path":"base.txt"}}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
SEC_WORKER_EXTRA='{"budgets":{"memory":"256M","pids":64,"wall_time":"2m"}}' SEC_KILL_AFTER=120 sec_session pool -- \
  "wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$SLEEP}}" \
  "wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$SLEEP}}" \
  "wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$SLEEP}}" \
  "wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$SLEEP}}" \
  "r=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$READ}}" \
  '@timeout:90000' '@until:complete' 'wacp/signal.emit {"type":"complete"}' '@hold'
t=$(sec_trail --type tool_call)
starts=$(printf '%s\n' "$t" | grep '"tool":"executeCommand"' | grep -c '"phase":"start"' || true)
[ "$starts" -ge 12 ] && ok "the sleepers' commands were running ($starts started)" || fail "the sleepers' commands were running" "$starts started" "$err"
read_end=$(printf '%s\n' "$t" | grep '"tool":"readFile"' | grep '"phase":"end"' | head -1 | sed 's/^{"seq":\([0-9]*\).*/\1/')
cmd_end=$(printf '%s\n' "$t" | grep '"tool":"executeCommand"' | grep '"phase":"end"' | head -1 | sed 's/^{"seq":\([0-9]*\).*/\1/')
[ -n "$read_end" ] && ok "the readFile was answered" || fail "the readFile was answered" "$(printf '%s\n' "$t" | grep readFile)"
if [ -n "$read_end" ] && { [ -z "$cmd_end" ] || [ "$read_end" -lt "$cmd_end" ]; }; then
    ok "the readFile was answered before any sleeper's command ended (seq $read_end < ${cmd_end:-none})"
else
    fail "the readFile was answered before any sleeper's command ended" "readFile end seq ${read_end:-none}, first command end seq ${cmd_end:-none}"
fi
# (How the run ends is not checked here: twelve concurrent command sandboxes on root-owned copies
# can still hit the id-map helper deadlock of issue 12 item 1, which its own test covers.)
