#!/bin/sh
# tests/e2e/security_links.sh: paths root is given, against a local user who can write a
# directory on the way. A user who owns /tmp/u plants /tmp/u/ws -> a root-only directory; root
# then runs `corral exec --workspace /tmp/u/ws` (or `corral mcp`, `corral run`, or binds
# `--rw /tmp/u/ws`). corral followed the link: the broker, as root, served the root-only file to
# the agent (read here through readFile). Now a workspace or bind whose path goes through a
# link is refused, naming the fix; the directory is opened once, with no link, and used by fd.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
chmod 711 "$T_TMP"
u=$T_TMP/u secret=$T_TMP/secret
mkdir -p "$u" "$secret" && chown 65534:65534 "$u" && chmod 700 "$secret"
echo TOPSECRET >"$secret/key"
setpriv --reuid=65534 --regid=65534 --clear-groups ln -s "$secret" "$u/ws"
[ -L "$u/ws" ] || fail "the user planted the link"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
read_key='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"readFile","arguments":{"path":"key"}}}'

run_capture out err rc timeout -s KILL 60 "$CORRAL" exec --workspace "$u/ws" -- /bin/sh -c \
    "printf '%s\n%s\n' '$init' '$read_key'; read a; read b; echo \"\$b\" >&2"
expect_nomatch "corral exec does not serve the root-only file" 'TOPSECRET' "$out$err"
expect_match "corral exec refuses the link, naming the fix" 'symbolic link.*real path' "$err"

out=$(printf '%s\n%s\n' "$init" "$read_key" | timeout -s KILL 60 "$CORRAL" mcp --workspace "$u/ws" 2>&1)
expect_nomatch "corral mcp does not serve it" 'TOPSECRET' "$out"
expect_match "corral mcp refuses the link" 'symbolic link' "$out"

python3 -c 'import json,sys; json.dump({"version":1,"agents":{"c":{"binary":sys.argv[2],"role":"coordinator",
  "args":["tools/call {\"name\":\"readFile\",\"arguments\":{\"path\":\"key\"}}","wacp/signal.emit {\"type\":\"complete\"}"]}}},
  open(sys.argv[1],"w"))' "$T_TMP/policy.json" "$S"
run_capture out err rc timeout -s KILL 60 "$CORRAL" run "$T_TMP/policy.json" --workspace "$u/ws" \
    --run-dir "$T_TMP/run" --trail "$T_TMP/trail.db" --timeout 30
expect_status "corral run refuses it (usage)" 2 "$rc" "$err"
expect_nomatch "corral run does not serve it" 'TOPSECRET' "$(cat "$T_TMP"/run/logs/*.log 2>/dev/null)"

run_capture out err rc timeout -s KILL 60 "$CORRAL" exec --rw "$u/ws:/data" -- /bin/cat /data/key
expect_nomatch "a --rw bind through the link is not made" 'TOPSECRET' "$out"
expect_match "the bind is refused, naming the fix" 'symbolic link.*real path' "$err"
# The same directories without a link still work.
mkdir -p "$T_TMP/real" && echo open >"$T_TMP/real/f"
run_capture out err rc timeout -s KILL 60 "$CORRAL" exec --ro "$T_TMP/real:/data" -- /bin/cat /data/f
expect_match "a bind with no link works" '^open$' "$out"
