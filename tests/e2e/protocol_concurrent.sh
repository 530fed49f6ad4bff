#!/bin/sh
# tests/e2e/protocol_concurrent.sh: a slow call does not hold up the others. One agent pipelines a
# slow command and a big search behind fast calls; the fast answers arrive first (ordering, not
# time). Two agents run at once against one workspace, each answered in full. The many-agents-
# in-one-loop case is tests/unit/test_rpc_loop.c (slow_call_does_not_stall_others).
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
mkdir -p "$ws"
echo hi >"$ws/a.txt"
i=0
while [ $i -lt 40 ]; do mkdir -p "$ws/d$i"; seq 1 3000 >"$ws/d$i/f.txt"; i=$((i + 1)); done
chown -R 65534:65534 "$ws"
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
talk() { "$CORRAL" exec --timeout 60 --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" "$@" 2>&1 >/dev/null; }
pos() { printf '%s\n' "$1" | grep -n -F "< id=$2 " | head -1 | cut -d: -f1; }

# The slow command runs until "go" exists, written by a call made after the two fast answers
# were read: they come first unless the slow call holds them up (then nothing is answered).
out=$(talk "@nowait:$(call '"slow"' executeCommand '{"command":"until [ -e go ]; do sleep 0.05; done; echo slept"}')" \
           "$(call '"fast1"' readFile '{"path":"a.txt"}')" \
           "$(call '"fast2"' getWorkspaceInfo '{}')" \
           "$(call '"go"' writeFile '{"path":"go","content":"go"}')" \
           '@read')
s=$(pos "$out" '"slow"') f1=$(pos "$out" '"fast1"') f2=$(pos "$out" '"fast2"')
if [ -n "$s" ] && [ -n "$f1" ] && [ -n "$f2" ] && [ "$f1" -lt "$s" ] && [ "$f2" -lt "$s" ]; then
    ok "fast calls are answered while a slow command runs"
else fail "fast calls are answered while a slow command runs" "$out"; fi
expect_match "and the slow command's answer still comes" '< id="slow" isError=false sc=\{"stdout":"slept\\n"' "$out"

# Two agents at once: one busy with a command, the other with reads and a big search.
talk "$(call 1 executeCommand '{"command":"sleep 1; echo a-done"}')" >"$T_TMP/a.out" &
apid=$!
talk "$(call 1 searchFiles '{"paths":["."],"query":"2999","type":"literal","recursive":true}')" \
     "$(call 2 readFile '{"path":"a.txt"}')" "$(call 3 exploreFiles '{"path":".","recursive":true}')" >"$T_TMP/b.out"
brc=$?
wait $apid
arc=$?
expect_status "two agents at once: the first ends well" 0 "$arc"
expect_status "two agents at once: the second ends well" 0 "$brc"
expect_match "the first agent's command was answered" 'a-done' "$(cat "$T_TMP/a.out")"
expect_match "the second agent's search found all 40 matches" '"totalMatches":40' "$(cat "$T_TMP/b.out")"
expect_match "the second agent's reads were answered" '< id=2 isError=false' "$(cat "$T_TMP/b.out")"
