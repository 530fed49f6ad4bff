#!/bin/sh
# tests/e2e/mcp_calls.sh: `corral mcp` long calls through the official SDK: cancellation kills
# the command's sandbox, progress, elicitation accepted / declined / unavailable, a host that
# disconnects mid-call (tests/mcp/calls.test.mjs).
exec sh "$TOP/tests/mcp/run.sh" calls.test.mjs
