#!/bin/sh
# examples/demo_exec.sh: the demo of `corral exec` (`make demo-exec`). Copies examples/workspace/,
# serves it to the two example agents (C, then Python through the SDK) with `corral exec
# --workspace`, each in its own sandbox, records everything in a trail, verifies it, and prints a
# short summary.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
work=$(mktemp -d /tmp/corral-demo.XXXXXX)
ws="$work/workspace"
db="$work/trail.db"
cp -r "$top/examples/workspace" "$ws"
echo "== demo workspace: $ws"

echo "== agent 1: examples/agents/explore_edit_run (C, sdk/corral_agent.c)"
"$CORRAL" exec --timeout 60 --trail "$db" --workspace "$ws" -- "$top/build/examples/agents/explore_edit_run"

echo "== agent 2: examples/agents/explore_edit_run.py (Python, sdk/corral_agent.py)"
"$CORRAL" exec --timeout 60 --trail "$db" --workspace "$ws" --ro "$top/sdk" --ro "$top/examples/agents" \
    -- /usr/bin/python3 "$top/examples/agents/explore_edit_run.py"

echo "== one hostile program, for contrast: every escape it tries is denied"
"$CORRAL" exec --trail "$db" -- "$top/build/tests/hostile/probe" kernel | sed 's/^/   /'

echo "== summary"
entries=$("$CORRAL" trail --db "$db" --json | wc -l)
runs=$("$CORRAL" trail --db "$db" --type sandbox_created --json | wc -l)
calls=$("$CORRAL" trail --db "$db" --type tool_call --json | grep -c '"phase":"end"' || true)
errors=$("$CORRAL" trail --db "$db" --type tool_call --json | grep -c '"outcome":"error"' || true)
echo "   sandboxes:    $runs"
echo "   tool calls:   $calls ($errors refused or failed, as the agents intended)"
echo "   trail:        $entries entries in $db"
"$CORRAL" trail verify --db "$db" | sed 's/^/   /'
echo "   workspace now:"
(cd "$ws" && find . -type f | sort | sed 's/^/     /')
echo "== see the whole record: $CORRAL trail --db $db"
