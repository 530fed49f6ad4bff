#!/bin/sh
# bench/run_flood.sh: does a flood of agents starve the others? `corral run` with one
# well-behaved worker (bench/rt_driver.c as the agent: N sequential readFile calls of a 4 KiB
# file, each timed by the agent itself, p50/p99 in its log) alone, then beside F hostile workers
# that flood their pipes (each pipelines M pings and readFile calls without reading answers
# first). Prints the well-behaved agent's p50/p99 in both and the ratio (goal: p99 within 2x).
# Usage: sh bench/run_flood.sh [F] [N]   (default 64 flooders, 2000 calls)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
F=${1:-64}
N=${2:-2000}
M=${FLOOD:-3000}
S=$top/build/tests/agents/wacp_script
mkdir -p "$top/build/bench"
cc -O2 -Wall -Wextra -Werror -o "$top/build/bench/rt_driver" "$top/bench/rt_driver.c" -lm || exit 2
drv=$top/build/bench/rt_driver
one() { # FLOODERS -> prints the probe's RESULT line
    d=$(mktemp -d /tmp/corral-flood.XXXXXX)
    mkdir -p "$d/ws"
    head -c 3072 /dev/urandom | base64 -w 76 | head -c 4096 >"$d/ws/a.txt"
    chown -R 65534:65534 "$d/ws"
    python3 - "$d" "$S" "$drv" "$1" "$N" "$M" <<'PY'
import json, sys
d, script, drv, f, n, m = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
flood = ['@flood:%d:tools/call {"name":"readFile","arguments":{"path":"a.txt"}}' % m,
         '@flood:%d:ping {}' % m, 'wacp/signal.emit {"type":"complete"}', '@hold']
fl = 'wacp/workspace.create {"agent":"flooder","directive":{"steps":%s}}' % json.dumps(flood)
pr = 'wacp/workspace.create {"agent":"probe","directive":{}}'
coord = ['@timeout:600000'] + [fl] * f + [pr] + ['@until:complete'] * (f + 0) + ['@sleep:600000']
# No tool-call rate limit: at its default (50 a second, bursts of 250) the probe's own reads
# were refused past the burst and it was failed for protocol_abuse; the measure is the loop's
# fairness against floods that nothing else stops.
json.dump({"version": 1, "max_workspaces": f + 8, "rate_limits": {"tool_calls": 0},
           "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": False, "commands": False},
                                "budgets": {"memory": "64M", "pids": 8, "wall_time": "30m"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "flooder": {"binary": script, "args": ["@timeout:600000", "@directive"], "role": "worker"},
                      "probe": {"binary": drv, "args": [n, "readFile", '{"path":"a.txt"}'], "role": "worker"}}},
          open(d + "/policy.json", "w"))
PY
    "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --run-dir "$d/run" --trail "$d/t.db" \
        --trail-durability normal --timeout 600 >/dev/null 2>"$d/err" &
    pid=$!
    # The run goes on until its timeout (the coordinator sleeps): stop it once the probe is done.
    while kill -0 $pid 2>/dev/null; do
        r=$(grep -h 'RESULT' "$d"/run/logs/*.log 2>/dev/null | head -1)
        [ -n "$r" ] && break
        sleep 0.5
    done
    kill -TERM $pid 2>/dev/null
    wait $pid 2>/dev/null
    [ -n "$r" ] || cat "$d/err" >&2
    printf '%s\n' "$r"
    rm -rf "$d"
}
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
alone=$(one 0)
flooded=$(one "$F")
# A run that failed has no RESULT: say so rather than print zeros.
for r in "$alone" "$flooded"; do
    case $r in *RESULT*) ;; *) echo "bench/run_flood.sh: a run gave no result (its probe did not finish): see corral run's errors above" >&2; exit 1 ;; esac
done
echo "a well-behaved agent's readFile round trips (corral run, trail normal), $N sequential calls"
printf '  alone:                p50 %8.1f us  p99 %8.1f us\n' "$(field "$alone" p50_us)" "$(field "$alone" p99_us)"
printf '  beside %3d flooders:  p50 %8.1f us  p99 %8.1f us\n' "$F" "$(field "$flooded" p50_us)" "$(field "$flooded" p99_us)"
awk -v a="$(field "$alone" p99_us)" -v b="$(field "$flooded" p99_us)" -v c="$(field "$alone" p50_us)" -v e="$(field "$flooded" p50_us)" \
    'BEGIN { if (a > 0 && c > 0) printf "  flooded / alone: p50 %.1fx, p99 %.1fx (goal: p99 within 2x)\n", e / c, b / a }'
