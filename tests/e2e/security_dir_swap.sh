#!/bin/sh
# tests/e2e/security_dir_swap.sh: the project DIR is swapped during a run by a user who owns a
# directory above it (issue 12). Root runs `corral run --workspace $u/work/proj` where user
# 65534 owns $u and $u/work. Once a worker has checkpointed a new file, the user renames `work`
# away and puts `work -> a root-only directory` holding its own `proj` (with a secret) in its
# place; then the coordinator creates a second worker (its copy is taken from the root's files)
# and integrates the first. corral named DIR by its path there, so root copied the root-only
# secret into the new worker's copy (served to it by readFile) and wrote the agent's file into
# the root-only directory. Now DIR is opened once and used by fd: the copy and the integration
# reach the original directory, wherever it was moved, and nothing touches the link's target.
# Synchronised on the run's own events: the coordinator logs "# ready" after the worker's
# `complete`; the test swaps, then writes go.txt into the (moved) DIR, which the coordinator
# polls with readFile.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"
chmod 711 "$T_TMP"
u=$T_TMP/u target=$T_TMP/rootonly d=$T_TMP/run1
mkdir -p "$u/work/proj" "$target/proj" "$d"
echo base >"$u/work/proj/base.txt"
chown -R 65534:65534 "$u"
echo TOPSECRET-d1r5 >"$target/proj/secret.txt"
chmod 0700 "$target" "$target/proj"
ws=$u/work/proj rundir=$d/run db=$d/trail.db

W1=$(sec_steps \
  'tools/call {"name":"writeFile","arguments":{"path":"new.txt","content":"agent-written"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"x","status":"final","confidence":"high","parent":null,"files":["new.txt"]}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
W2=$(sec_steps \
  'tools/call {"name":"readFile","arguments":{"path":"secret.txt"}}' \
  'tools/call {"name":"readFile","arguments":{"path":"base.txt"}}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
S=$S sec_policy "$d/policy.json" \
  "a=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W1}}" \
  '@until:complete' \
  '@log:ready' \
  '@poll:GO:tools/call {"name":"readFile","arguments":{"path":"go.txt"}}' \
  "b=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W2}}" \
  '@until:complete' \
  'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept"}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
timeout -s KILL 90 "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$rundir" \
    --trail "$db" --timeout 60 >"$d/out" 2>"$d/err" </dev/null &
pid=$!
# The worker's file is checkpointed and the coordinator waits: the moment to swap.
i=0; until cat "$rundir"/logs/*.log 2>/dev/null | grep -q '^# ready' || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \
    "mv '$u/work' '$u/moved' && ln -s '$target' '$u/work' && echo GO >'$u/moved/proj/go.txt'"
[ -L "$u/work" ] && [ -f "$u/moved/proj/go.txt" ] && ok "the user swapped work for a link to the root-only directory" ||
    fail "the user swapped work for a link to the root-only directory" "$(ls -la "$u")"
wait "$pid"; rc=$?
logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
expect_status "the run ends" 0 "$rc" "$(tail -5 "$d/err")" "$(echo "$logs" | tail -20)"
expect_match "the coordinator saw go.txt in DIR (its broker holds DIR by fd)" '< tools/call ok .*GO' "$logs"
expect_match "the second worker's copy has the project's files" 'base' "$(printf '%s\n' "$logs" | grep '^< tools/call ok')"
expect_nomatch "the root-only secret reached no agent (the copy came from DIR, not the link)" 'TOPSECRET-d1r5' "$logs"
leaked=$(grep -rl TOPSECRET-d1r5 "$rundir" 2>/dev/null)
expect_status "the secret is nowhere in the run directory" 0 "$(printf '%s' "$leaked" | grep -c .)" "$leaked"
integ=$(printf '%s\n' "$logs" | grep '^< wacp/integrate')
expect_match "the integration completed" '"state":"closed"' "$integ"
after=$(ls -A "$target/proj")
expect_status "nothing was written into the root-only directory" 0 \
    "$(printf '%s\n' "$after" | grep -vcx 'secret.txt')" "$(ls -la "$target/proj")"
[ "$(cat "$u/moved/proj/new.txt" 2>/dev/null)" = agent-written ] &&
    ok "the agent's file went into DIR itself (moved, reached by fd)" ||
    fail "the agent's file went into DIR itself (moved, reached by fd)" "$(ls -la "$u/moved/proj")" "$integ"
owner=$(stat -c %u "$u/moved/proj/new.txt" 2>/dev/null)
expect_status "it belongs to DIR's owner" 65534 "${owner:-0}"
run_capture vout verr vrc "$CORRAL" trail verify --db "$db"
expect_status "the trail verifies" 0 "$vrc" "$verr"
