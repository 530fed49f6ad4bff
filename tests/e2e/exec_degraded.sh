#!/bin/sh
# tests/e2e/exec_degraded.sh: `corral exec --trail` and `corral mcp --trail` degrade like
# `corral run` (WACP recovery spec 2.4) instead of refusing every later call: the trail lives on a
# 1 MiB tmpfs in a private mount namespace with ballast; the agent writes a 2.5 KB file again and
# again until a call is refused (the disk is full), then the ballast is deleted; corral retries
# the writer by itself, records system_degraded, and the agent's next write is accepted. corral
# ends well (status 0), the trail verifies, and the write after the outage is on it.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
fill=$(python3 -c 'import json; print("tools/call " + json.dumps({"name": "writeFile", "arguments": {"path": "fill.txt", "content": "x" * 2500}}))')
after='tools/call {"name":"writeFile","arguments":{"path":"after.txt","content":"after\n"}}'
for mode in exec mcp; do
    d=$T_TMP/$mode
    ws=$d/ws disk=$d/disk
    mkdir -p "$ws" "$disk"
    echo base >"$ws/base.txt"
    unshare -m --propagation private sh -c '
        mode=$1 disk=$2 corral=$3 ws=$4 d=$5 S=$6 fill=$7 after=$8
        mount -t tmpfs -o size=1024k,mode=0755 tmpfs "$disk" || exit 99
        head -c 262144 /dev/zero >"$disk/ballast"
        steps="@retry:2000:0:error:$fill"
        if [ "$mode" = exec ]; then
            "$corral" exec --trail "$disk/t.db" --workspace "$ws" -- "$S" "@retry:2000:0:error:$fill" \
                "@log:outage" "@retry:300:100:ok:$after" "@log:after-ok" >"$d/out" 2>"$d/err" &
        else
            # corral mcp serves its own stdin/stdout: the scripted agent is the host at the other end
            mkfifo "$d/to" "$d/from"
            "$corral" mcp --trail "$disk/t.db" --workspace "$ws" <"$d/to" >"$d/from" 2>"$d/err" &
            "$S" "@retry:2000:0:error:$fill" "@log:outage" "@retry:300:100:ok:$after" "@log:after-ok" \
                >"$d/to" <"$d/from" 2>"$d/agent" &
        fi
        pid=$!
        i=0
        until cat "$d/err" "$d/agent" 2>/dev/null | grep -q "^# outage" || ! kill -0 $pid 2>/dev/null || [ $i -ge 600 ]; do
            sleep 0.1; i=$((i + 1))
        done
        rm -f "$disk/ballast"
        if [ "$mode" = exec ]; then wait $pid; echo $? >"$d/rc"
        else wait $pid; wait; echo 0 >"$d/rc"; fi
        "$corral" trail verify --db "$disk/t.db" >"$d/verify" 2>&1; echo $? >"$d/verify_rc"
        "$corral" trail --db "$disk/t.db" --json >"$d/entries" 2>"$d/trail_err"
    ' sh "$mode" "$disk" "$CORRAL" "$ws" "$d" "$S" "$fill" "$after"
    log=$(cat "$d/err" "$d/agent" 2>/dev/null)
    expect_match "$mode: the disk filled up: a write was refused, naming the trail's problem" \
        '^< tools/call error=-32603 - internal error: the trail cannot be written' "$log"
    expect_match "$mode: corral said it went into degraded mode" 'degraded mode: tool calls are refused' "$log"
    expect_match "$mode: ... and that the trail is writable again" 'the trail is writable again after' "$log"
    expect_match "$mode: the agent's write after the outage was accepted" '^# retry tools/call ok after [0-9]+' "$log"
    [ "$mode" = exec ] && expect_status "$mode: corral exec ends well" 0 "$(cat "$d/rc")" "$(tail -5 "$d/err")"
    [ -f "$ws/after.txt" ] && ok "$mode: the write after the outage happened" || fail "$mode: the write after the outage happened"
    expect_match "$mode: system_degraded is on the trail (scope trail_storage, what was refused)" \
        '"blocked":\{"held_events":0,"requests":0,"tool_calls":[1-9][0-9]*\}.*"scope":"trail_storage"' \
        "$(grep '"type":"system_degraded"' "$d/entries")"
    expect_match "$mode: the write after the outage is recorded" '"type":"tool_call".*after\.txt' "$(cat "$d/entries")"
    expect_status "$mode: corral trail verify is ok" 0 "$(cat "$d/verify_rc")" "$(cat "$d/verify")"
done
