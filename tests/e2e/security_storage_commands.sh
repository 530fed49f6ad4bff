#!/bin/sh
# tests/e2e/security_storage_commands.sh: commands respect `storage_bytes` (issue 12, item 7).
# A command wrote behind the broker's back: 300 KB went into a workspace with a 64 KiB budget
# and the call succeeded; only the next write tool or checkpoint noticed. Now no file a command
# writes may grow past the room left (RLIMIT_FSIZE), and a command that leaves the workspace
# over its budget fails, saying so. A worker with commands (tests/agents/wacp_script) writes
# eight 12 KB files (96 KB in all), removes them, writes one 300 KB file, then runs `echo`.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"
cmd() { printf 'tools/call {"name":"executeCommand","arguments":{"command":"%s"}}' "$1"; }
WC=$(sec_steps \
  "$(cmd 'for i in 1 2 3 4 5 6 7 8; do head -c 12000 /dev/zero >m$i; done; echo many')" \
  "$(cmd 'rm m*; echo removed')" \
  "$(cmd 'head -c 300000 /dev/zero >big; echo wrote')" \
  "$(cmd 'wc -c <big; echo fine')" \
  'wacp/signal.emit {"type":"complete"}' '@hold')
SEC_WORKER_EXTRA='{"budgets":{"memory":"256M","pids":32,"wall_time":"2m","storage_bytes":"64K"}}' sec_session storage -- \
  "b=wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$WC}}" '@until:complete' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
expect_status "the run ends" 0 "$rc" "$(printf '%s' "$err" | tail -5)"
calls=$(printf '%s\n' "$logs" | grep '^< tools/call')
line() { printf '%s\n' "$calls" | sed -n "${1}p"; }
expect_match "eight files past the budget: the command fails, naming the budget" \
    'storage budget of 65536 bytes.*"isError":true' "$(line 1)"
expect_match "removing them works" 'removed.*"isError":false' "$(line 2)"
expect_match "a 300 KB file past the room left: the command fails" \
    'storage budget of 65536 bytes.*"isError":true' "$(line 3)"
size=$(printf '%s\n' "$(line 4)" | grep -o '[0-9][0-9]*\\\\nfine' | head -1 | sed 's/\\\\nfine//')
[ -n "$size" ] && [ "$size" -le 65536 ] && ok "the file stopped within the budget ($size bytes)" ||
    fail "the file stopped within the budget" "$(line 4)"
expect_match "the next command runs" 'fine.*"isError":false' "$(line 4)"
expect_match "the failed command is recorded with its code" 'SIZE_LIMIT_EXCEEDED|storage budget' \
    "$(sec_trail --type tool_call | grep '"phase":"end"' | grep '"outcome":"error"')"
