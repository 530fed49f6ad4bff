#!/bin/sh
# examples/demo_gated.sh: `make demo-gated`: the demo session (examples/demo.sh) under the
# supervised highway (examples/policies/demo-gated.json): the plan's tasks and each integration
# wait for a person. A second process plays that person: it watches the run's gates from outside
# and answers each with the commands a person would type in a second terminal, printed with `$`.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
if [ -n "${DEMO_DIR:-}" ]; then work=$DEMO_DIR; mkdir -p "$work"; else work=$(mktemp -d /tmp/corral-demo-gated.XXXXXX); fi
db=$work/trail.db
(
    # The person: waits for each gate, looks at it, approves it; stops when the run is gone.
    seen=0
    while :; do
        if ! ids=$("$CORRAL" gate list --db "$db" --json 2>/dev/null | python3 -c '
import json, sys
try: print(" ".join(g["id"] for g in json.load(sys.stdin)["gates"]))
except ValueError: sys.exit(1)'); then
            [ $seen -eq 1 ] && [ ! -S "$db.sock" ] && break
            sleep 0.2; continue
        fi
        seen=1
        for id in $ids; do
            echo "   [person] \$ corral gate list --db $db"
            "$CORRAL" gate list --db "$db" | sed 's/^/   [person]   /'
            echo "   [person] \$ corral gate approve $id --db $db"
            "$CORRAL" gate approve "$id" --db "$db" | sed 's/^/   [person]   /' || true
            break
        done
        sleep 0.2
    done
) &
person=$!
rc=0
DEMO_DIR=$work DEMO_POLICY=examples/policies/demo-gated.json sh "$top/examples/demo.sh" || rc=$?
wait "$person" 2>/dev/null || true
echo "== what the person decided: $CORRAL trail --db $db --type gate_resolved"
"$CORRAL" trail --db "$db" --type gate_resolved | sed 's/^/   /'
exit $rc
