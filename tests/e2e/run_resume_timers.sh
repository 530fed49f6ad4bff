#!/bin/sh
# tests/e2e/run_resume_timers.sh: timers rebuilt from the trail by `corral run --resume`
# (recovery spec 3.4), not restarted at the resume. Liveness: a worker silent (no activity
# recorded) for a whole liveness interval before the resume, the downtime included, gets a
# liveness_warning during the recovery (before recovery_completed); one resumed at once does
# not. Compute time: the time a workspace was active before the crash counts up to its agent's
# last recorded activity (not only up to its last state change), so its next
# workspace_state_changed's active_ms holds the worker's 1.5 s of work before the crash.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
python3 - "$T_TMP/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
call = lambda name, args: "tools/call " + json.dumps({"name": name, "arguments": args})
# one write, 1.5 s of work (no entry), another write: active from its first envelope to the last
w = {"steps": [call("writeFile", {"path": "a.txt", "content": "a\n"}), "@sleep:1500",
               call("writeFile", {"path": "b.txt", "content": "b\n"}), "@log:w-done", "@hold"]}
coord = ["@envelope", "wacp/workspace.create " + json.dumps({"agent": "w", "directive": w}), "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m",
                                            "liveness_interval": 3}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
# crashed DIR: the run SIGKILLed once the worker logged its work; sets id_w.
crashed() {
    rm -rf "$1"
    mkdir -p "$1/ws"
    chown -R 65534:65534 "$1/ws"
    "$CORRAL" run "$T_TMP/policy.json" --workspace "$1/ws" --trail "$1/t.db" --timeout 60 >"$1/out" 2>"$1/err" &
    pid=$!
    i=0
    while ! grep -qs '^# w-done' "$1"/runs/*/logs/*.log && [ $i -lt 600 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    kill -KILL $pid
    wait $pid 2>/dev/null
    id_w=$(basename "$(grep -l '^# w-done' "$1"/runs/*/logs/*.log | head -1)" .log)
}
# recovery_warnings DB: the liveness_warning entries recorded before recovery_completed
recovery_warnings() {
    "$CORRAL" trail --db "$1" --json | python3 -c '
import json, sys
es = [json.loads(l) for l in sys.stdin]
rec = [e["seq"] for e in es if e["type"] == "recovery_completed"]
for e in es:
    if rec and e["seq"] < rec[0] and e["type"] == "liveness_warning":
        b = e["body"]
        print(b["workspace_id"], b["action"], b["interval"], b["last_activity_timestamp"], b.get("recovery"))'
}

# ---- silent for longer than its interval, counting the downtime
d=$T_TMP/late
crashed "$d"
# Down until 3.2 s after the worker's last recorded entry, by the trail's own clock.
last=$(python3 - "$d/t.db" "$id_w" <<'PY'
import sqlite3, sys, time
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
ts = max(r[0] for r in c.execute("select ts from entries where workspace = ? and type = 'tool_call'", (sys.argv[2],)))
while time.time() * 1e6 < ts + 3.2e6:
    time.sleep(0.05)
print(ts)
PY
)
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 1
wr=$(recovery_warnings "$d/t.db")
expect_match "silent for a liveness interval before the resume (downtime included): warned during the recovery" \
    "^$id_w warned 3 [0-9T:.-]+Z True\$" "$wr"
expect_status "... the last activity is the worker's last recorded entry" 0 \
    "$(python3 -c 'import sys, datetime; t = datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc); print(0 if abs(t.timestamp() * 1e6 - int(sys.argv[2])) < 2 else 1)' "$(printf '%s\n' "$wr" | cut -d' ' -f4)" "$last")"
expect_match "... and still recovered (the restarted agent's own liveness goes on)" '"workspaces_recovered":2}' \
    "$("$CORRAL" trail --db "$d/t.db" --json --type recovery_completed)"

# ---- resumed at once: no warning; compute time kept
d=$T_TMP/soon
crashed "$d"
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 1
expect_match "resumed within its liveness interval: no warning during the recovery" '^$' "$(recovery_warnings "$d/t.db")"
ms=$("$CORRAL" trail --db "$d/t.db" --json | python3 -c '
import json, sys
es = [json.loads(l) for l in sys.stdin]
rec = [e for e in es if e["type"] == "recovery_completed"][0]
after = [e for e in es if e["seq"] > rec["seq"] and e["type"] == "workspace_state_changed"
         and e["body"]["workspace_id"] == sys.argv[1] and e["body"]["from"] == "active"]
e = after[0]
# what it accrued before the crash: its active_ms less the time since the recovery
print(int(e["body"]["active_ms"] - (e["ts_us"] - rec["ts_us"]) / 1000))' "$id_w")
[ "${ms:-0}" -ge 1450 ] && ok "compute time: the 1.5 s active before the crash counted after the resume (${ms} ms)" ||
    fail "compute time: the 1.5 s active before the crash counted after the resume" "${ms:-none} ms"
