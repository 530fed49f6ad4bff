#!/bin/sh
# tests/e2e/mcp_example_agent.sh: examples/agents/mcp_sdk_agent.mjs, written with the official
# MCP SDK's Client, run under `corral exec --workspace` as its header says: it lists, reads,
# writes, runs a command and is refused outside the workspace; the trail records its calls.
. "$TOP/tests/lib.sh"
nm=$(realpath "$TOP/tests/mcp/node_modules" 2>/dev/null || echo "$TOP/tests/mcp/node_modules") # a bind names no link
if [ ! -f "$nm/@modelcontextprotocol/sdk/package.json" ]; then
    fail "tests/mcp/node_modules is missing: run 'make deps'"
    exit 1
fi
ws=$T_TMP/ws
mkdir -p "$ws"
printf '# Demo\nline two\nline three\n' >"$ws/README.md"
chown -R 65534:65534 "$ws"
run_capture out err rc "$CORRAL" exec --workspace "$ws" --trail "$T_TMP/t.db" \
    --ro "$TOP/examples/agents/mcp_sdk_agent.mjs:/agent/agent.mjs" --ro "$nm:/agent/node_modules" \
    -- /usr/bin/node /agent/agent.mjs
expect_status "the SDK agent runs to completion" 0 "$rc" "$err"
expect_match "it connected and listed the tools" "connected to corral .*|tools: exploreFiles" "$err"
expect_match "it read README.md" "read README.md: 27 bytes" "$err"
expect_match "NOTES.md was written through the broker" "README.md: 4 lines; first line: # Demo" "$(cat "$ws/NOTES.md" 2>&1)"
expect_match "its command ran in a command sandbox" "wc -l: 3 README.md" "$err"
expect_match "the escape was refused" "outside the workspace: refused \\(PERMISSION_DENIED\\)" "$err"
run_capture out err2 rc "$CORRAL" trail --db "$T_TMP/t.db" --type tool_call
expect_match "the trail records its tool calls" "executeCommand" "$out"
run_capture out err2 rc "$CORRAL" trail verify --db "$T_TMP/t.db"
expect_status "the trail verifies" 0 "$rc" "$out $err2"
