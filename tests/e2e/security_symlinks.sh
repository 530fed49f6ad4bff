#!/bin/sh
# tests/e2e/security_symlinks.sh: links a hostile worker plants in its own copy never make root
# read or write outside it (issue 12). A delegate with commands links a root-only file, a
# root-only directory and an empty root-only directory into its copy, then: checkpoints naming
# paths through the links (refused: never read), creates a child (its copy skips the links),
# integrates the child's odir/x.txt where its own odir is a link (refused: nothing written
# outside), and is integrated into the project itself (its links are not carried). Nothing of
# the secret reaches the run directory or the project, and the outside directory stays empty.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"

o=$T_TMP/outside
mkdir -p "$o/secret" "$o/empty"
echo TOPSECRET-b3a1 >"$o/secret/secret.txt"
chmod 0700 "$o" "$o/secret" "$o/empty"
chmod 0600 "$o/secret/secret.txt"

CHILD=$(sec_steps \
  'tools/call {"name":"executeCommand","arguments":{"command":"mkdir odir && echo through >odir/x.txt"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"x","status":"final","confidence":"high","parent":null,"files":["odir/x.txt"]}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
DELEGATE=$(sec_steps \
  "tools/call {\"name\":\"executeCommand\",\"arguments\":{\"command\":\"ln -s $o/secret/secret.txt leak.txt && ln -s $o/secret sdir && ln -s $o/empty odir && echo mine >mine.txt && ls -l\"}}" \
  'wacp/checkpoint.create {"type":"artifact","intent":"leak","status":"provisional","confidence":"high","parent":null,"files":["leak.txt"]}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"leak","status":"provisional","confidence":"high","parent":null,"files":["sdir/secret.txt"]}' \
  "c=wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$CHILD}}" \
  '@until:complete' \
  'wacp/integrate {"workspace":"{{c.workspace_id}}","decision":"accept"}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"all","status":"final","confidence":"high","parent":null}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
SEC_POLICY_EXTRA='{"rate_limits": {"checkpoints": 0}}' SEC_TIMEOUT=60 sec_session symlinks -- \
  "d=wacp/workspace.create {\"agent\":\"wc\",\"delegate\":true,\"directive\":{\"steps\":$DELEGATE}}" \
  '@until:complete' \
  'wacp/integrate {"workspace":"{{d.workspace_id}}","decision":"accept"}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
expect_status "the run ends well" 0 "$rc" "$err" "$(echo "$logs" | tail -20)"
expect_match "the links were planted" 'leak.txt -> ' "$logs"
cps=$(printf '%s\n' "$logs" | grep '^< wacp/checkpoint.create')
n=$(printf '%s\n' "$cps" | grep -c 'error=.*invalid_files')
expect_status "both checkpoints through a link are refused" 2 "$n" "$cps"
expect_match "the child's copy was made" 'workspace.create ok' "$logs"
integ=$(printf '%s\n' "$logs" | grep '^< wacp/integrate')
expect_match "the child's integration through the delegate's link failed" '"state":"failed".*"error":".*odir' "$integ"
expect_match "the delegate was integrated into the project" '"state":"closed"' "$integ"
expect_match "with its own file" 'mine.txt' "$integ"
leaked=$(grep -rl TOPSECRET-b3a1 "$rundir" "$ws" 2>/dev/null)
expect_status "the secret is nowhere in the run directory or the project" 0 "$(printf '%s' "$leaked" | grep -c .)" "$leaked"
expect_status "nothing was written outside" 0 "$(ls -A "$o/empty" | wc -l)" "$(ls -la "$o/empty")"
links=$(find "$ws" -type l)
expect_status "no link was carried into the project" 0 "$(printf '%s' "$links" | grep -c .)" "$links"
[ -f "$ws/mine.txt" ] && ok "the delegate's own file is in the project" || fail "the delegate's own file is in the project" "$(ls -la "$ws")"
run_capture vout verr vrc "$CORRAL" trail verify --db "$db"
expect_status "the trail verifies" 0 "$vrc" "$verr"
