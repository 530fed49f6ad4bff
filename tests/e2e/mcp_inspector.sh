#!/bin/sh
# tests/e2e/mcp_inspector.sh: `corral mcp` driven by the MCP Inspector's CLI mode (npm
# @modelcontextprotocol/inspector, installed by `make deps`), as a person trying a server would.
. "$TOP/tests/lib.sh"
cli=$TOP/tests/mcp/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js
if [ ! -f "$cli" ]; then
    fail "the MCP Inspector is not installed: run 'make deps' (npm ci in tests/mcp)"
    exit 1
fi
ws=$T_TMP/ws
mkdir -p "$ws"
printf 'hello inspector\n' >"$ws/a.txt"
chown -R 65534:65534 "$ws"
insp() { node "$cli" --cli "$CORRAL" mcp --workspace "$ws" "$@"; }

run_capture out err rc insp --method tools/list
expect_status "inspector: tools/list" 0 "$rc" "$err"
expect_match "inspector: tools/list names readFile with its inputSchema" '"name": "readFile"' "$out"
expect_match "inspector: annotations listed" '"readOnlyHint": true' "$out"

run_capture out err rc insp --method tools/call --tool-name readFile --tool-arg path=a.txt
expect_status "inspector: tools/call readFile" 0 "$rc" "$err"
expect_match "inspector: the file's content comes back" 'hello inspector' "$out"

run_capture out err rc insp --method tools/call --tool-name readFile --tool-arg path=../../etc/passwd
expect_match "inspector: an escape is refused" 'PERMISSION_DENIED' "$out$err"
expect_nomatch "inspector: nothing of /etc/passwd" 'root:x:0' "$out$err"

run_capture out err rc insp --method tools/call --tool-name executeCommand --tool-arg "command=echo from-inspector"
expect_match "inspector: a command runs in its sandbox" 'from-inspector' "$out"

run_capture out err rc insp --method logging/setLevel --log-level debug
expect_status "inspector: logging/setLevel" 0 "$rc" "$err"
