#!/bin/sh
# tests/e2e/security_rundir.sh: the run directory, the trail and the control socket against an
# unprivileged local user (uid 65534 through setpriv) when they sit in a directory others can
# write, as /tmp (issue 12, item 2). corral refuses such a place with an error naming the fix,
# never adopts what another user made there (a trail, a `runs/` directory, a run directory with
# a symlinked logs/, a socket), and checks what it reads back: a swapped checkpoint object or a
# worker's copy swapped for a symlink are refused, not integrated.
. "$TOP/tests/lib.sh"
. "$TOP/tests/security_lib.sh"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
chmod 0711 "$T_TMP" # others may pass through (not list, not write): the attacker reaches its own dirs

ws=$T_TMP/ws
mkdir -p "$ws" && echo base >"$ws/base.txt" && chown -R 65534:65534 "$ws"
S=$S sec_policy "$T_TMP/policy.json" 'wacp/signal.emit {"type":"complete"}' '@hold'
# run_at TRAIL [options]: a one-agent run with that trail
run_at() {
    t=$1; shift
    run_capture out err rc timeout -s KILL 60 "$CORRAL" run "$T_TMP/policy.json" --workspace "$ws" \
        --trail "$t" --timeout 30 "$@"
}

# ---- 1: a trail in a world-writable (sticky, like /tmp) directory is refused before anything
ww=$T_TMP/ww
mkdir -p "$ww" && chmod 1777 "$ww"
run_at "$ww/trail.db"
[ "$rc" -ne 0 ] && ok "1: a trail in a world-writable directory is refused (status $rc)" || fail "1: a trail in a world-writable directory is refused" "status 0"
expect_match "1: the error says why and names the fix" 'writable by (others|other users).*(--trail|--run-dir|chmod|root)' "$err"
expect_status "1: nothing was created there" 0 "$(ls -A "$ww" | wc -l)" "$(ls -la "$ww")"

# ---- 2: an empty trail pre-created by 65534 in a directory it owns is not adopted
ad=$T_TMP/attacker
mkdir -p "$ad" && chown 65534:65534 "$ad"
as_nobody touch "$ad/trail.db"
run_at "$ad/trail.db"
[ "$rc" -ne 0 ] && ok "2: a trail in another user's directory is refused (status $rc)" || fail "2: a trail in another user's directory is refused" "status 0"
expect_status "2: the pre-created trail stays empty" 0 "$(stat -c %s "$ad/trail.db")"

# ---- 3: the default run directory: a runs/ that another user made (or could) is never used
td=$T_TMP/root-trail
mkdir -p "$td/runs" && chmod 0755 "$td" && chown 65534:65534 "$td/runs"
run_at "$td/trail.db"
[ "$rc" -ne 0 ] && ok "3: a runs/ owned by another user is refused (status $rc)" || fail "3: a runs/ owned by another user is refused" "status 0"
expect_status "3: no run directory was made in it" 0 "$(ls -A "$td/runs" | wc -l)" "$(ls -la "$td/runs")"
expect_match "3: the error names runs/" 'runs' "$err"

# ---- 4: --run-dir in a world-writable directory, made by the attacker with logs/ a symlink
target=$T_TMP/target
mkdir -p "$target"
as_nobody mkdir "$ww/run"
as_nobody ln -s "$target" "$ww/run/logs"
run_at "$T_TMP/t4/trail.db" --run-dir "$ww/run"
[ "$rc" -ne 0 ] && ok "4: a run directory made by another user is refused (status $rc)" || fail "4: a run directory made by another user is refused" "status 0"
expect_status "4: nothing was created through the symlinked logs/" 0 "$(ls -A "$target" | wc -l)" "$(ls -la "$target")"

# ---- 5: a control socket pre-bound by 65534 is neither replaced nor believed by `corral ps`
cat >"$T_TMP/fake.py" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(4)
open(sys.argv[2], "w").close()
while True:
    c, _ = s.accept()
    try:
        c.sendall(b'{"pid":1,"trail":"forged","workspaces":[{"id":"ws-forged","state":"active"}]}\n')
    except OSError:
        pass
    c.close()
PY
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$T_TMP/fake.py" "$ad/ctl.sock" "$ad/ready" >/dev/null 2>&1 &
fake=$!
i=0; while [ ! -e "$ad/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
run_at "$T_TMP/t5/trail.db" --control "$ad/ctl.sock"
[ "$rc" -ne 0 ] && ok "5: a control socket in another user's directory is refused (status $rc)" || fail "5: a control socket in another user's directory is refused" "status 0"
run_capture out err rc "$CORRAL" ps --control "$ad/ctl.sock"
expect_nomatch "5: corral ps does not print the attacker's answer" 'forged' "$out"
expect_match "5: corral ps says the socket is not a root corral's" 'not (owned by root|corral|served by root)|owned by uid 65534|uid 65534' "$err"
# A person's requests (corral gate, inject, escalations) go to the same socket: their approvals
# and words must not reach another user's server either.
run_capture out err rc "$CORRAL" gate list --control "$ad/ctl.sock"
expect_match "5: corral gate refuses a socket another user serves" 'served by uid 65534' "$err"
run_capture out err rc "$CORRAL" inject --control "$ad/ctl.sock" --type feedback --text secret ws-forged
expect_match "5: corral inject sends nothing to a socket another user serves" 'served by uid 65534' "$err"
kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null

# (Tests 6 and 7 name root in the policy's "users": the test injects its envelopes as root.)
# ws_where DB STATE PARENT: the id of a workspace of the run in STATE, the root's ("root") or a
# child's ("child"); empty when there is none (yet)
ws_where() {
    "$CORRAL" ps --db "$1" --json 2>/dev/null | python3 -c 'import json, sys
try: w = json.load(sys.stdin)["workspaces"]
except Exception: w = []
print(next((x["workspace_id"] for x in w if x["state"] == sys.argv[1] and (x["parent"] is None) == (sys.argv[2] == "root")), ""))' "$2" "$3"
}

# ---- 6: a checkpoint object swapped on disk is refused at integration (verified by its hash).
# The swap comes once the worker is integrating (its object written); the coordinator, told by an
# envelope the test injects, integrates after it.
W=$(sec_steps \
  'tools/call {"name":"writeFile","arguments":{"path":"out.txt","content":"honest\n"}}' \
  'wacp/checkpoint.create {"type":"artifact","intent":"out","status":"final","confidence":"high","parent":null,"files":["out.txt"]}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
d=$T_TMP/six rd=$T_TMP/six/run
mkdir -p "$d/ws" && echo base >"$d/ws/base.txt" && chown -R 65534:65534 "$d/ws"
SEC_POLICY_EXTRA='{"users":{"0":"root-admin"}}' S=$S sec_policy "$d/policy.json" "a=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W}}" \
  '@until:complete' '@envelope' 'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept"}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
( i=0; while [ $i -lt 600 ]; do
      o=$(checkpoint_object "$d/trail.db") f=$rd/objects/$o
      if [ -n "$o" ] && [ -f "$f" ] && [ -n "$(ws_where "$d/trail.db" integrating child)" ]; then
          printf 'forged\n' >"$f"; echo "$f" >"$d/swapped"
          "$CORRAL" inject "$(ws_where "$d/trail.db" active root)" --type feedback --text swapped --db "$d/trail.db" >/dev/null
          break
      fi
      sleep 0.05; i=$((i + 1)); done ) &
swapper=$!
run_capture out err rc timeout -s KILL 60 "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --trail "$d/trail.db" --run-dir "$rd" --timeout 30
wait "$swapper"
logs=$(cat "$rd"/logs/*.log 2>/dev/null)
[ -s "$d/swapped" ] && ok "6: the object was swapped" || fail "6: the object was swapped" "no object appeared"
expect_nomatch "6: the forged content did not reach DIR" 'forged' "$(cat "$d/ws/out.txt" 2>&1)"
expect_match "6: the integration was refused on the object's hash" 'integrate ok .*"state":"failed".*(hash|object)|integrate ok .*(hash|object).*"state":"failed"|integrate error=-?[0-9]+ integrity_violation .*object' "$logs"

# ---- 7: a worker's copy swapped for a symlink to a root-only directory is not snapshotted (the
# worker makes its checkpoint once told, by an envelope the test injects, that the swap is done)
secret=$T_TMP/secret
mkdir -p "$secret" && echo 'root only' >"$secret/secret.txt" && chmod 0600 "$secret/secret.txt" && chmod 0700 "$secret"
W=$(sec_steps '@envelope' \
  'wacp/checkpoint.create {"type":"artifact","intent":"all","status":"final","confidence":"high","parent":null}' \
  'wacp/signal.emit {"type":"complete"}' '@hold')
d=$T_TMP/seven rd=$T_TMP/seven/run
mkdir -p "$d/ws" && echo base >"$d/ws/base.txt" && chown -R 65534:65534 "$d/ws"
SEC_POLICY_EXTRA='{"users":{"0":"root-admin"}}' S=$S sec_policy "$d/policy.json" "a=wacp/workspace.create {\"agent\":\"w\",\"directive\":{\"steps\":$W}}" \
  '@until:complete' 'wacp/integrate {"workspace":"{{a.workspace_id}}","decision":"accept"}' \
  'wacp/signal.emit {"type":"complete"}' '@hold'
( i=0; while [ $i -lt 600 ]; do
      c=$(find "$rd/ws" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -1)
      w=$(ws_where "$d/trail.db" active child) # its directive acked: the next envelope is ours
      if [ -n "$c" ] && [ -n "$w" ]; then
          mv "$c" "$c.moved" && ln -s "$secret" "$c" && echo "$c" >"$d/swapped"
          "$CORRAL" inject "$w" --type feedback --text swapped --db "$d/trail.db" >/dev/null
          break
      fi
      sleep 0.05; i=$((i + 1)); done ) &
swapper=$!
run_capture out err rc timeout -s KILL 60 "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --trail "$d/trail.db" --run-dir "$rd" --timeout 30
wait "$swapper"
[ -s "$d/swapped" ] && ok "7: the copy was swapped for a symlink" || fail "7: the copy was swapped for a symlink" "no copy appeared"
[ ! -e "$d/ws/secret.txt" ] && ok "7: the root-only file was not integrated" ||
    fail "7: the root-only file was not integrated" "$(ls -la "$d/ws")"

# ---- 8: `corral mcp --trail` (an MCP host often runs corral through sudo, on a path in the
# user's home): a trail in a directory another user owns is refused, and a link that user planted
# there never chooses where root writes (it used to be followed: the target was created, 0644).
home=$T_TMP/home8
mkdir -p "$home" && chown 65534:65534 "$home" && chmod 0755 "$home"
victim=$T_TMP/victim8.db
as_nobody ln -s "$victim" "$home/project.db"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
run_capture out err rc sh -c 'printf "%s\n" "$1" | timeout -s KILL 20 "$2" mcp --workspace "$3" --trail "$4"' sh "$init" "$CORRAL" "$ws" "$home/project.db"
[ "$rc" -ne 0 ] && ok "8: corral mcp refuses a trail in a directory another user owns (status $rc)" ||
    fail "8: corral mcp refuses a trail in a directory another user owns" "status 0: $out"
expect_match "8: ... naming the directory's owner and the fix" "$home is owned by uid 65534.*only root can write" "$err"
[ ! -e "$victim" ] && ok "8: the link's target was not created" || fail "8: the link's target was not created" "$(ls -la "$victim")"
# the same link in a directory of root's (the writer itself refuses links: corral exec, mcp, run)
rdir=$T_TMP/root8
mkdir -p "$rdir" && chmod 0700 "$rdir" && ln -s "$victim" "$rdir/t.db"
run_capture out err rc sh -c 'printf "%s\n" "$1" | timeout -s KILL 20 "$2" mcp --workspace "$3" --trail "$4"' sh "$init" "$CORRAL" "$ws" "$rdir/t.db"
[ "$rc" -ne 0 ] && [ ! -e "$victim" ] && ok "8: a trail that is a link is refused, its target not created (status $rc)" ||
    fail "8: a trail that is a link is refused, its target not created" "status $rc: $err"
