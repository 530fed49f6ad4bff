#!/bin/sh
# tests/e2e/security_fifo.sh: a FIFO planted where integration used to put its temporary file
# (".corral-tmp-NAME" beside the target) must not freeze the supervisor (issue 12, item 3).
# A delegate worker with commands plants the FIFO in its own workspace, then integrates its
# child's out.txt there: the integration goes through, and the run ends by itself.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"

CHILD=$(sec_steps \
  'tools/call {"name":"writeFile","arguments":{"path":"out.txt","content":"from the worker\n"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"out","status":"final","confidence":"high","parent":null,"files":["out.txt"]}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
DELEGATE=$(sec_steps \
  'tools/call {"name":"executeCommand","arguments":{"command":"mkfifo .corral-tmp-out.txt && ls -l .corral-tmp-out.txt"}}' \
  "c=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$CHILD}}" \
  '@until:complete' \
  'wacp/integrate {"workspace":"{{c.workspace_id}}","decision":"accept"}' \
  'tools/call {"name":"readFile","arguments":{"path":"out.txt"}}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
SEC_TIMEOUT=30 SEC_KILL_AFTER=60 sec_session fifo -- \
  "d=wacp/workspace.create {\"agent\":\"wc\",\"delegate\":true,\"directive\":{\"steps\":$DELEGATE}}" \
  '@until:complete' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
expect_match "the FIFO was planted" 'prw-.*corral-tmp-out' "$logs"
[ "$rc" -ne 137 ] && ok "the supervisor did not freeze (status $rc)" ||
    fail "the supervisor did not freeze" "killed from outside after 60 s: it stopped answering" "$err"
expect_status "the run ends well" 0 "$rc" "$err" "$(echo "$logs" | tail -20)"
expect_match "the child's work was integrated into the delegate's workspace" 'integrate ok .*"state":"closed"' "$(printf '%s\n' "$logs" | grep '^< wacp/integrate')"
expect_match "the delegate reads it there" 'from the worker' "$(printf '%s\n' "$logs" | grep '^< tools/call ok' | grep -v stdout)"
dws=$(ls -d "$rundir"/ws/* 2>/dev/null | while read -r x; do [ -p "$x/.corral-tmp-out.txt" ] && echo "$x"; done | head -1)
[ -n "$dws" ] && [ -p "$dws/.corral-tmp-out.txt" ] && ok "the planted FIFO is left alone (never opened)" ||
    fail "the planted FIFO is left alone" "$(ls -laR "$rundir/ws" 2>&1 | head -40)"
n=$(find "$rundir/ws" -name '.corral-tmp*' ! -type p 2>/dev/null | wc -l)
expect_status "no temporary litter" 0 "$n" "$(ls -laR "$rundir/ws" 2>&1 | head -40)"
