#!/bin/sh
# tests/e2e/security_protected.sh: protected paths (issue 12, item 6). A worker with write
# authority only wrote `.git/config` with core.fsmonitor; integrated into DIR, `git status` there
# ran it as root. Paths the policy protects (by default the `.git` internals git executes from:
# config, hooks, modules, worktrees) can neither be written by an agent's tools, nor enter a
# checkpoint, nor be integrated; each refusal is a denial in the trail.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"

marker=$T_TMP/fsmonitor-ran
CFG=$(printf '[core]\\n\\tfsmonitor = touch %s\\n' "$marker")
W=$(sec_steps \
  "tools/call {\"name\":\"writeFile\",\"arguments\":{\"path\":\".git/config\",\"content\":\"$CFG\"}}" \
  'tools/call {"name":"writeFile","arguments":{"path":".git/hooks/pre-commit","content":"#!/bin/sh\ntouch /tmp/hooked\n"}}' \
  'tools/call {"name":"modifyFile","arguments":{"path":".git/config","operations":[{"type":"replace","startLine":1,"endLine":1,"newContent":"[core]"}]}}' \
  'tools/call {"name":"writeFile","arguments":{"path":"sub/.git","content":"gitdir: ../evil\n","createDirectories":true}}' \
  'tools/call {"name":"writeFile","arguments":{"path":"ok.txt","content":"plain work\n"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"w","status":"final","confidence":"high","parent":null}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
WC=$(sec_steps \
  "tools/call {\"name\":\"executeCommand\",\"arguments\":{\"command\":\"cp .git/config orig.cfg && printf '[core]\\\\n\\\\tfsmonitor = touch $marker\\\\n' >>.git/config && echo '#!/bin/sh' >.git/hooks/post-checkout && echo planted\"}}" \
  'wacp/checkpoint.create {"type":"artifact","intent":"explicit","status":"final","confidence":"high","parent":null,"files":[".git/config"]}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"scan","status":"final","confidence":"high","parent":null}' \
  'tools/call {"name":"executeCommand","arguments":{"command":"cp orig.cfg .git/config && rm orig.cfg .git/hooks/post-checkout && echo more >ok2.txt"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"clean","status":"final","confidence":"high","parent":null}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
mkdir -p "$T_TMP/prot/ws"
git init -q "$T_TMP/prot/ws"
cp "$T_TMP/prot/ws/.git/config" "$T_TMP/config.orig"
SEC_WORKER_EXTRA='{"budgets":{"memory":"256M","pids":64,"wall_time":"2m"}}' sec_session prot -- \
  "a=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W}}" \
  '@until:complete' \
  'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept"}' \
  "b=wacp/workspace.create {\"agent\":\"wc\",\"directive\":{\"steps\":$WC}}" \
  '@until:complete' \
  'wacp/integrate {"workspace":"{{b.workspace_id}}","decision":"accept"}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
expect_status "the run ends well" 0 "$rc" "$err" "$(echo "$logs" | grep -v '^< envelope' | tail -30)"
line() { printf '%s\n' "$logs" | grep -F "$1" | grep -v '^< envelope' | head -3; }
expect_match "writeFile .git/config is refused" '"isError":true' "$(printf '%s\n' "$logs" | grep '^< tools/call' | grep 'config' | grep -i 'protected' | head -1)"
expect_match "writeFile .git/hooks/pre-commit is refused" 'protected' "$(line 'hooks/pre-commit')"
n=$(printf '%s\n' "$logs" | grep '^< tools/call ok' | grep -c 'protected')
[ "$n" -ge 4 ] && ok "modifyFile .git/config and writing sub/.git are refused too ($n refusals)" ||
    fail "modifyFile .git/config and writing sub/.git are refused too" "$n refusals" "$(printf '%s\n' "$logs" | grep '^< tools/call' | head -8)"
expect_match "the command really changed the copy's .git/config" 'planted' "$logs"
expect_match "a checkpoint naming .git/config is refused" 'checkpoint.create error=-?[0-9]+ protected_path' "$(line 'intent\":\"explicit' ; printf '%s\n' "$logs" | grep 'checkpoint.create error' | head -1)"
n=$(printf '%s\n' "$logs" | grep -c 'checkpoint.create error=-\?[0-9]* protected_path')
expect_status "a checkpoint whose scan finds changed protected files is refused (2 refusals)" 2 "$n" "$(printf '%s\n' "$logs" | grep 'checkpoint.create' | head)"
expect_match "the plain work was integrated" 'plain work' "$(cat "$ws/ok.txt" 2>&1)"
expect_match "so was the second worker's, after it restored .git" 'more' "$(cat "$ws/ok2.txt" 2>&1)"
if cmp -s "$ws/.git/config" "$T_TMP/config.orig"; then ok "DIR's .git/config is unchanged"; else
    fail "DIR's .git/config is unchanged" "$(cat "$ws/.git/config")"; fi
[ ! -e "$ws/.git/hooks/pre-commit" ] && [ ! -e "$ws/.git/hooks/post-checkout" ] && [ ! -e "$ws/sub/.git" ] &&
    ok "no hook and no .git file reached DIR" || fail "no hook and no .git file reached DIR" "$(ls -la "$ws/.git/hooks" "$ws/sub" 2>&1)"
(cd "$ws" && git -c safe.directory="$ws" status >/dev/null 2>&1)
[ ! -e "$marker" ] && ok "git status in DIR runs nothing planted" || fail "git status in DIR runs nothing planted" "the fsmonitor command ran"
n=$(sec_trail --type denial | grep -c 'protected\|PERMISSION_DENIED' || true)
[ "$n" -ge 6 ] && ok "every refusal is a denial in the trail ($n)" || fail "every refusal is a denial in the trail" "$n" "$(sec_trail --type denial | cut -c1-300)"
