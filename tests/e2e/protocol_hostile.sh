#!/bin/sh
# tests/e2e/protocol_hostile.sh: hostile input through the real pipe: each bad line gets its
# JSON-RPC error, the connection survives and the next normal call succeeds; a flood is answered
# in order with bounded memory; an agent past the abuse limit is failed alone.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
mkdir -p "$ws"
echo hi >"$ws/a.txt"
PING='{"jsonrpc":"2.0","id":99,"method":"ping"}'
READ='{"jsonrpc":"2.0","id":98,"method":"tools/call","params":{"name":"readFile","arguments":{"path":"a.txt"}}}'
talk() { "$CORRAL" exec --timeout 60 --workspace "$ws" -- "$AGENTS/rpc_script" "$@" 2>&1 >/dev/null; }

# Each case: the bad line, then a normal call on the same connection.
hostile() { # name pattern line...
    n=$1 pat=$2; shift 2
    out=$(talk "$INIT" "$@" "$READ")
    expect_match "$n: answered with the right error" "$pat" "$out"
    expect_match "$n: the connection survives and a normal call succeeds" '< id=98 isError=false sc=\{"content":"hi\\n"' "$out"
}
hostile "over-long line (9 MiB)" '< id=null error=-32600 invalid request: message longer than' '@long:9437184'
hostile "invalid UTF-8" '< id=null error=-32700 parse error: invalid UTF-8' "$(printf '{"jsonrpc":"2.0","id":1,"method":"ping\377"}')"
hostile "invalid JSON" '< id=null error=-32700 parse error: invalid JSON' '{"jsonrpc":"2.0","id":1,'
hostile "deep nesting" '< id=null error=-32600 invalid request: nesting deeper than 64' '@deep:100000'
hostile "a batch" '< id=null error=-32600 invalid request: batches are not supported' "[$PING]"
hostile "wrong id type" '< id=null error=-32600 invalid request: "id" must be' '{"jsonrpc":"2.0","id":{},"method":"ping"}'
hostile "wrong jsonrpc version" '< id=1 error=-32600' '{"jsonrpc":"1.0","id":1,"method":"ping"}'
hostile "wrong params type" '< id=1 error=-32600' '{"jsonrpc":"2.0","id":1,"method":"ping","params":3}'
hostile "unknown method" '< id=1 error=-32601 method not found' '{"jsonrpc":"2.0","id":1,"method":"evil/method"}'
hostile "tools/call without a name" '< id=1 error=-32602' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}'
hostile "tool arguments of the wrong types" '< id=1 isError=true sc=\{"error":"[^"]*","code":"INVALID_ARGUMENT"' \
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"readFile","arguments":{"path":["a"],"startLine":"x"}}}'
hostile "a NUL byte" '< id=null error=-32700' "$(printf '{"jsonrpc":"2.0","id":1,"method":"ping"}\001')"

out=$(talk "$PING" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' '{"jsonrpc":"2.0","id":3,"method":"server/discover"}' \
    '{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}')
expect_match "server/discover before initialize gives versions, capabilities, serverInfo" \
    '"id":3,"result":\{"supportedVersions":\["2026-07-28",.*"capabilities":\{"tools":.*"serverInfo":\{"name":"corral"' "$out"
expect_match "a stateless (2026-07-28) tools/list needs no initialize, and has input schemas" \
    '"id":4,"result":\{"tools":\[\{"name":"exploreFiles","description":"[^"]*","inputSchema":\{"type":"object"' "$out"
expect_match "ping before initialize is answered" '< \{"jsonrpc":"2.0","id":99,"result":\{\}\}' "$out"
expect_match "tools/list before initialize: -32002" '< id=2 error=-32002 not initialized' "$out"

out=$(talk "$INIT" '@flood:20000' "$READ")
expect_match "a flood of 20000 pipelined requests is answered, in order" 'flood: 20000 answers in order' "$out"
expect_match "and the connection is still served" '< id=98 isError=false' "$out"

# Past the abuse limit (100 malformed lines) the agent is failed: its sandbox is stopped.
out=$(talk "$INIT" '@repeat:150:garbage')
rc=$?
expect_match "repeated abuse fails the agent" 'too many malformed messages \(100\)' "$out"
expect_match "corral says why it stopped the sandbox" 'connection failed \(too many malformed messages\)' "$out"
expect_nomatch "nothing past the limit was answered" '< id=null error=-32700.*\n.*too many.*\n< id' "$out"
expect_status "the agent was killed (SIGKILL: 137)" 137 "$rc"

# An agent that leaves without reading its answers: corral's write fails (EPIPE), corral carries on
# and reports the agent's own status.
talk "$INIT" "@nowait:{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"readFile\",\"arguments\":{\"path\":\"a.txt\"}}}" \
    '@nowait:{"jsonrpc":"2.0","id":6,"method":"ping"}' >/dev/null
expect_status "an agent that exits without reading: corral exits with its status" 0 "$?"
