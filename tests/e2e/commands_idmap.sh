#!/bin/sh
# tests/e2e/commands_idmap.sh: commands started at once on a ROOT-OWNED workspace, whose writable
# bind needs an id-mapped mount (a user namespace mapping root -> the sandbox's user).
# Regression (issue 12, item 1): the user namespace for that mapping came from a helper fork()ed by
# a pool thread that never exec'd; helpers forked at the same instant inherited each other's pipe
# ends and each waited for an EOF the other held, so four `true` commands sent without waiting
# hung the agent within a few rounds (pool threads stuck in waitpid, corral exec never exiting).
# Many rounds of 4 pipelined commands, under `timeout` so a hang fails the test instead of the
# suite.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
mkdir -p "$ws"
chown 0:0 "$ws"
ROUNDS=${IDMAP_ROUNDS:-25}
set --
r=0 id=1
while [ $r -lt "$ROUNDS" ]; do
    k=0
    while [ $k -lt 4 ]; do
        set -- "$@" "@nowait:{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"tools/call\",\"params\":{\"name\":\"executeCommand\",\"arguments\":{\"command\":\"true\"}}}"
        id=$((id + 1)) k=$((k + 1))
    done
    set -- "$@" @read @read @read @read
    r=$((r + 1))
done
want=$((ROUNDS * 4))
# 120 s is far beyond what 100 commands take even on a loaded 2-core machine (a few seconds);
# it only bounds a hang. --timeout makes corral itself give up first when it still can.
timeout -s KILL 120 "$CORRAL" exec --timeout 90 --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" "$@" \
    >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
rc=$?
n=$(grep -c '"exitCode":0' "$T_TMP/err")
if [ "$rc" -eq 137 ]; then
    fail "$want pipelined commands on a root-owned workspace answered" "corral exec hung (killed by timeout after 120 s); $n answers" "$(tail -5 "$T_TMP/err")"
else
    expect_status "corral exec ended normally" 0 "$rc" "$(tail -5 "$T_TMP/err")"
    if [ "$n" -eq "$want" ]; then ok "$want pipelined commands on a root-owned workspace answered"
    else fail "$want pipelined commands on a root-owned workspace answered" "$n answers" "$(grep -v '"exitCode":0' "$T_TMP/err" | tail -5)"; fi
fi
# The workspace stays root's: what the sandbox's user created there is stored as root.
timeout -s KILL 60 "$CORRAL" exec --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" \
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"executeCommand","arguments":{"command":"touch made-inside"}}}' \
    >/dev/null 2>"$T_TMP/err2" </dev/null
if [ -e "$ws/made-inside" ] && [ "$(stat -c %u:%g "$ws/made-inside")" = 0:0 ]; then ok "a file made inside is stored as the workspace's owner (root)"
else fail "a file made inside is stored as the workspace's owner (root)" "$(ls -ln "$ws")" "$(tail -3 "$T_TMP/err2")"; fi
