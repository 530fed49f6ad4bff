#!/bin/sh
# tests/mcp/run.sh: runs one of the Node test files of this folder (official MCP SDK clients) and
# passes its TAP lines through. The npm packages come from `make deps` (npm ci here); nothing is
# downloaded at run time, so without them the test fails and says what to run.
# Usage: sh tests/mcp/run.sh FILE.test.mjs
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
    echo "not ok - node is not installed: run 'make deps'"
    exit 1
fi
if [ ! -f "$here/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    echo "not ok - tests/mcp/node_modules is missing: run 'make deps' (npm ci in tests/mcp)"
    exit 1
fi
exec node "$here/$1"
