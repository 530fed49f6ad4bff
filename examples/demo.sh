#!/bin/sh
# examples/demo.sh: the README's main job (`make demo`). Copies the demo project
# (examples/workspace-demo/) and runs a WACP session on it with `corral run`: a coordinator
# (Python) splits one change into a task graph, a C worker and a Python worker each do their part
# in a workspace and sandbox of their own, and the coordinator integrates their checkpoints into
# the copy. Ends with a short summary: workspaces, tasks, checkpoints, trail entries, the result
# (the integrated files, and the project's own tests run with python3), and writes the run's
# report (corral trail report) beside the trail.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
if ! "$CORRAL" run --help >/dev/null 2>&1; then
    echo "demo: this corral has no 'corral run' yet; 'make demo-exec' shows 'corral exec'" >&2
    exit 1
fi
# DEMO_DIR: where the copy, the run's state and the trail go (default: a new /tmp/corral-demo.*)
if [ -n "${DEMO_DIR:-}" ]; then work=$DEMO_DIR; mkdir -p "$work"; else work=$(mktemp -d /tmp/corral-demo.XXXXXX); fi
ws=$work/workspace
db=$work/trail.db
rundir=$work/run
cp -r "$top/examples/workspace-demo" "$ws"
# The policy names the agents' files relative to the top of the tree (bound read-only into
# each agent's sandbox), so corral runs from there.
cd "$top"
# DEMO_POLICY: the policy (default: the unattended one; make demo-gated gives demo-gated.json)
policy=${DEMO_POLICY:-examples/policies/demo.json}
echo "== corral run $policy --workspace $ws"
rc=0
"$CORRAL" run "$policy" --workspace "$ws" --run-dir "$rundir" --trail "$db" \
    --timeout 300 || rc=$?

count() { "$CORRAL" trail --db "$db" --type "$1" --json | wc -l; }
echo "== the coordinator's log"
for log in "$rundir"/logs/*.log; do
    [ -f "$log" ] || continue
    grep -q '^coordinator:' "$log" && sed 's/^/   /' "$log"
done
echo "== summary"
echo "   corral run:   exit status $rc"
echo "   workspaces:   $(count workspace_created) ($("$CORRAL" trail --db "$db" --type workspace_state_changed --json | grep -c '"to":"closed"' || true) closed)"
echo "   tasks:        $(count task_created) ($("$CORRAL" trail --db "$db" --type task_status_changed --json | grep -c '"to":"integrated"' || true) integrated)"
echo "   envelopes:    $(count envelope_created)"
echo "   checkpoints:  $(count checkpoint_created)"
echo "   integrations: $(count integration_completed) ($(count conflict_detected) overlap detected, $(count conflict_resolved) resolved)"
echo "   trail:        $("$CORRAL" trail --db "$db" --json | wc -l) entries in $db"
"$CORRAL" trail verify --db "$db" | sed 's/^/   /'
echo "   result: the project's files now"
(cd "$ws" && find . -type f -not -path '*/__pycache__/*' | sort | sed 's/^/     /')
echo "   README.md:"
sed 's/^/     | /' "$ws/README.md"
echo "   its tests (python3 -m unittest -v test_stats):"
trc=0
(cd "$ws" && PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -v test_stats 2>&1) | sed 's/^/     /' || trc=$?
[ -f "$ws/test_stats.py" ] || trc=1
echo "== see the whole record: $CORRAL trail --db $db ; the agents' logs: $rundir/logs/"
# The run as one page to look at: tree, task graph, timeline, denials (docs/report.md).
if "$CORRAL" trail report --db "$db" --output "$work/report.html"; then
    echo "== report: $work/report.html (open it in a browser; it loads nothing from anywhere)"
else
    rc=1
fi
[ "$rc" -eq 0 ] && [ "$trc" -eq 0 ]
