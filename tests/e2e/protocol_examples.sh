#!/bin/sh
# tests/e2e/protocol_examples.sh: the example agents (C and Python SDKs) explore, read, edit and
# run a command in a real sandbox; the workspace shows their edits.
. "$TOP/tests/lib.sh"
for kind in c py; do
    ws=$T_TMP/ws-$kind
    mkdir -p "$ws/src"
    echo 'print(1)' >"$ws/src/m.py"
    chown -R 65534:65534 "$ws"
    if [ $kind = c ]; then
        run_capture out err rc "$CORRAL" exec --timeout 60 --workspace "$ws" -- "$TOP/build/examples/agents/explore_edit_run"
        want='edited by C'
    else
        run_capture out err rc "$CORRAL" exec --timeout 60 --ro "$TOP/sdk" --ro "$TOP/examples/agents" --workspace "$ws" -- \
            /usr/bin/python3 "$TOP/examples/agents/explore_edit_run.py"
        want='WorLD'
    fi
    expect_status "$kind example agent succeeds" 0 "$rc" "$err"
    expect_match "$kind example agent saw the tree" 'src/m.py' "$err"
    expect_match "$kind example agent's path escape was refused" 'escape refused: PERMISSION_DENIED' "$err"
    expect_match "$kind example agent's command ran" 'command exit 0' "$err"
    expect_match "$kind example agent's edit is in the workspace" "$want" "$(cat "$ws/notes/hello.txt")"
done
