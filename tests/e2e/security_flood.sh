#!/bin/sh
# tests/e2e/security_flood.sh: rate limits (issue 12, item 5). One worker sent 290,000 `ready`
# signals in 30 s: a 1.36 GB trail. Signals, envelopes, checkpoints and tool calls are limited per
# workspace (policy rate_limits); what is past the limit is refused before it costs a trail entry
# (one denial a second notes the count) and counts toward the abuse limit, which fails the
# flooding workspace alone. The trail stays small; the others go on.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"

W=$(sec_steps '@timeout:60000' '@flood:5000:wacp/signal.emit {"type":"ready"}' '@hold')
T=$(sec_steps '@timeout:60000' '@flood:2000:tools/call {"name":"readFile","arguments":{"path":"base.txt"}}' '@hold')
SEC_TIMEOUT=90 SEC_KILL_AFTER=150 sec_session flood -- \
  "a=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W}}" \
  "b=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$T}}" \
  '@timeout:60000' '@until:failed' '@until:failed' \
  'tools/call {"name":"readFile","arguments":{"path":"base.txt"}}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
expect_status "the run ends well (the coordinator was not harmed)" 0 "$rc" "$err" "$(printf '%s\n' "$logs" | grep -v '^< envelope' | tail -5 | cut -c1-300)"
d=$(sec_trail --type denial)
expect_match "the signal flood was refused as rate limited" '"kind":"rate_limit".*"method":"wacp/signal.emit"|"method":"wacp/signal.emit".*"rate_limit"' "$d"
expect_match "the tool-call flood was refused as rate limited" 'rate_limit.*tools/call|tools/call.*rate_limit' "$d"
n=$(sec_trail --type signal_emitted | wc -l)
[ "$n" -lt 500 ] && ok "the trail holds few of the 5000 signals ($n)" || fail "the trail holds few of the 5000 signals" "$n signal_emitted entries"
n=$(sec_trail --type tool_call | wc -l)
[ "$n" -lt 1500 ] && ok "and few of the 2000 tool calls ($n entries)" || fail "and few of the 2000 tool calls" "$n tool_call entries"
size=$(stat -c %s "$db")
[ "$size" -lt 8000000 ] && ok "the trail stays small ($size bytes)" || fail "the trail stays small" "$size bytes"
n=$(printf '%s\n' "$d" | grep -c 'rate_limit' || true)
[ "$n" -ge 2 ] && [ "$n" -lt 200 ] && ok "the refusals are noted as a few denials ($n entries)" || fail "the refusals are noted as a few denials" "$n" "$(printf '%s\n' "$d" | tail -3)"
expect_match "the flooders were failed for protocol abuse" 'protocol_abuse' "$(sec_trail --type workspace_state_changed)"
expect_match "the coordinator still reads its files" 'tools/call ok .*base' "$(printf '%s\n' "$logs" | grep '^< tools/call')"
