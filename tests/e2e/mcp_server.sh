#!/bin/sh
# tests/e2e/mcp_server.sh: `corral mcp` through the official MCP TypeScript SDK: versions,
# tools/list (annotations, outputSchema), every tool of every surface, escapes, protocol faults
# (tests/mcp/server.test.mjs).
exec sh "$TOP/tests/mcp/run.sh" server.test.mjs
