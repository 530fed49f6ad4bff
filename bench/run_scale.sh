#!/bin/sh
# bench/run_scale.sh: `corral run` with one coordinator and N workers (C agents, tests/agents/
# wacp_script), each worker making R readFile calls (pipelined) and then signalling complete. For
# each N: whether every worker completed, the supervisor's peak RSS, its fds per agent at the
# peak, the workspace creation rate (first to last workspace_created in the trail) and the run's
# wall time. The peer is the same machine's limit before this work: about 140 workspaces, then
# "landlock: cannot create a ruleset: Too many open files".
# Usage: sh bench/run_scale.sh [N...]   (default 64 256 1000; R=200 reads each, READS=...)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
S=$top/build/tests/agents/wacp_script
R=${READS:-200}
[ -x "$S" ] || { echo "bench: build the test agents first (make test-build)"; exit 1; }
sizes=${*:-64 256 1000}
echo "corral run: 1 coordinator + N workers, each $R readFile calls, then complete"
printf '  %-6s %-9s %-10s %-12s %-14s %-9s %s\n' N completed "peak RSS" "fds/agent" "creation/s" "wall s" "readFile p50/p99 ms (trail: call start to end)"
for n in $sizes; do
    d=$(mktemp -d /tmp/corral-scale.XXXXXX)
    mkdir -p "$d/ws"
    head -c 4096 /dev/urandom | base64 >"$d/ws/a.txt"
    chown -R 65534:65534 "$d/ws"
    python3 - "$d" "$S" "$n" "$R" <<'PY'
import json, os, sys
d, script, n, r = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
NOMAXWS = os.environ.get("NOMAXWS")  # for a corral without the policy key (a baseline)
steps = ['@flood:%d:tools/call {"name":"readFile","arguments":{"path":"a.txt"}}' % r,
         'wacp/signal.emit {"type":"complete"}', '@hold']
create = 'wacp/workspace.create {"agent":"w","directive":{"steps":%s}}' % json.dumps(steps)
coord = ['@timeout:600000'] + [create] * n + ['@until:complete'] * n + ['wacp/signal.emit {"type":"complete"}', '@hold']
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           **({"max_workspaces": n + 8} if not NOMAXWS else {}),
           "roles": {"coordinator": {"budgets": {"wall_time": "30m"}},
                     "worker": {"authority": {"write": False, "commands": False},
                                "budgets": {"memory": "64M", "pids": 8, "wall_time": "30m"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@timeout:600000", "@directive"], "role": "worker"}}},
          open(d + "/policy.json", "w"))
PY
    t0=$(date +%s.%N)
    "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --run-dir "$d/run" --trail "$d/trail.db" \
        --trail-durability normal --timeout 1800 >"$d/out" 2>"$d/err" &
    pid=$!
    peak_fd=0 peak_rss=0
    while kill -0 $pid 2>/dev/null; do
        f=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
        [ "$f" -gt "$peak_fd" ] && peak_fd=$f
        r=$(awk '/^VmHWM:/ { print $2 }' /proc/$pid/status 2>/dev/null)
        [ -n "$r" ] && [ "$r" -gt "$peak_rss" ] && peak_rss=$r
        sleep 0.2
    done
    wait $pid
    rc=$?
    t1=$(date +%s.%N)
    "$CORRAL" trail --db "$d/trail.db" --json >"$d/trail.json" 2>/dev/null
    python3 - "$d/trail.json" "$n" "$peak_rss" "$peak_fd" "$t0" "$t1" "$rc" <<'PY'
import json, sys
path, n, rss, fds, t0, t1, rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
created, done, calls = [], 0, {}
lat = []
for line in open(path):
    e = json.loads(line)
    t = e.get("type")
    if t == "workspace_created":
        created.append(e["ts_us"])
    elif t == "signal_emitted" and (e.get("body") or {}).get("type") == "complete":
        done += 1
    elif t == "tool_call":
        b = e.get("body") or {}
        k = (e.get("workspace"), b.get("request_id"))
        if b.get("phase") == "start":
            calls[k] = e["ts_us"]
        elif k in calls:
            lat.append((e["ts_us"] - calls.pop(k)) / 1000.0)
lat.sort()
pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else 0
rate = (len(created) - 1) / ((created[-1] - created[0]) / 1e6) if len(created) > 1 and created[-1] > created[0] else 0
workers = max(len(created) - 1, 0)
print("  %-6d %-9s %-10s %-12s %-14s %-9s %s" % (n, "%d/%d" % (min(done, n), n) + ("" if rc == 0 else " rc=%d" % rc),
      "%.1f MB" % (rss / 1024.0), "%.1f" % (fds / float(n + 1)), "%.0f" % rate, "%.1f" % (float(t1) - float(t0)), "%.2f / %.2f (%d calls)" % (pct(0.5), pct(0.99), len(lat))))
PY
    if [ "${KEEP:-0}" = 1 ]; then echo "  (kept $d)"; else rm -rf "$d"; fi
done
