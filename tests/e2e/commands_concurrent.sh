#!/bin/sh
# tests/e2e/commands_concurrent.sh: command sandboxes started at once from several worker threads
# of one supervisor. Regression: a sandbox cloned from a multithreaded corral once hung in its set-up
# (glibc's set*id wrappers waited on a thread the parent was creating), until the 60 s set-up
# limit failed the command. Every command must answer, and promptly enough for the run's limit.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
mkdir -p "$ws"
chown 65534:65534 "$ws"
set --
i=1
while [ $i -le 16 ]; do
    set -- "$@" "@nowait:{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/call\",\"params\":{\"name\":\"executeCommand\",\"arguments\":{\"command\":\"echo run-$i\"}}}"
    i=$((i + 1))
done
i=1
while [ $i -le 16 ]; do set -- "$@" "@read"; i=$((i + 1)); done
rounds=0 bad=0
while [ $rounds -lt 3 ]; do
    out=$("$CORRAL" exec --timeout 50 --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" "$@" 2>&1 >/dev/null)
    n=$(printf '%s\n' "$out" | grep -c '"stdout":"run-[0-9]*\\n".*"exitCode":0')
    [ "$n" -eq 16 ] || { bad=$((bad + 1)); last=$out; }
    rounds=$((rounds + 1))
done
if [ $bad -eq 0 ]; then ok "48 commands from 4 worker threads at once all ran (3 rounds of 16)"
else fail "48 commands from 4 worker threads at once all ran (3 rounds of 16)" "$bad rounds lost commands; last:" "$(printf '%s' "$last" | grep -v '"exitCode":0' | head -5)"; fi
