#!/bin/sh
# tests/e2e/run_resume.sh: a `corral run` whose supervisor is SIGKILLed leaves an unfinished run
# in its trail. Plain `corral run` on that trail refuses and points at --resume; --resume checks the
# trail's integrity first (a tampered trail is refused, nothing resumed), finds the run directory
# recorded in the trail, rebuilds the workspaces and starts their agents again; a trail whose run
# ended or that holds none has nothing to resume. (tests/e2e/run_crash.sh: resumes to the end.) The dead run leaves no process or cgroup behind.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_resume: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/r
ws=$d/ws db=$d/trail.db
mkdir -p "$ws"
echo base >"$ws/base.txt"
chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
w = {"steps": ['tools/call {"name":"writeFile","arguments":{"path":"w.txt","content":"w\\n"}}',
               "@log:worker-wrote", "@hold"]}
coord = ["@envelope", "wacp/workspace.create " + json.dumps({"agent": "w", "directive": w}), "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
cgroups_of() { find /sys/fs/cgroup -maxdepth 6 -type d -name "corral-$1-*" 2>/dev/null; }

# ---- nothing to resume yet
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$d/none.db" --resume
expect_status "--resume on a trail with no run is a usage error" 2 "$rc" "$err"
expect_match "... saying there is no run" 'holds no run' "$err"

# ---- a run whose supervisor dies
"$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$db" --timeout 60 >"$d/out" 2>"$d/err" &
pid=$!
# The worker's own "# worker-wrote" line, once its writeFile was answered (so its tool_call
# entries are committed): the directive it received, logged before, names it too.
i=0
while ! grep -qs '^# worker-wrote' "$d"/runs/*/logs/*.log && [ $i -lt 300 ]; do
    sleep 0.1
    i=$((i + 1))
done
# The run's processes (zygote, sandboxes' inits, agents), not any wacp_script on the machine: a
# test running beside this one has its own.
tree() { for c in $(pgrep -P "$1"); do echo "$c"; tree "$c"; done; }
procs=$(tree $pid)
kill -KILL $pid
wait $pid 2>/dev/null
run_dir=$(ls -d "$d"/runs/* 2>/dev/null | head -1)
expect_match "the run wrote in its default run directory before it died" '^# worker-wrote' "$(cat "$run_dir"/logs/*.log 2>/dev/null)"
alive() { for p in $procs; do grep -qs '^[0-9]* (.*) [^Z]' "/proc/$p/stat" && echo "$p"; done; }
i=0
while [ -n "$(alive)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -n "$procs" ] && [ -z "$(alive)" ] && ok "no process of the dead run is left (its sandboxes die with it)" ||
    fail "no process of the dead run is left (its sandboxes die with it)" "run's processes: ${procs:-none found}; alive: $(alive)"

run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$db"
expect_status "plain run on the dead run's trail refuses (2)" 2 "$rc" "$err"
expect_match "... says the run is unfinished and its supervisor died" 'holds an unfinished run .*supervisor died' "$err"
expect_match "... names its run directory" "run directory $run_dir" "$err"
expect_match "... and points at --resume" "corral run $d/policy.json --workspace [^ ]+ --trail $db --resume" "$err"
n=$("$CORRAL" trail --db "$db" --json --type supervisor_started | wc -l)
expect_status "... and started nothing" 1 "$n"

run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$db" --resume --run-dir "$d/elsewhere"
expect_status "--resume with another --run-dir is refused" 2 "$rc" "$err"
expect_match "... naming the recorded one" "run's directory is $run_dir" "$err"
# a copy of the dead run's trail, its state changes tampered with (resumed below: refused; a
# damaged tool_call alone would be quarantined: tests/e2e/run_resume_quarantine.sh)
cp "$db" "$d/x.db"
for f in "$db"-wal "$db"-shm; do [ -e "$f" ] && cp "$f" "$d/x.db${f#"$db"}"; done
n=$(sqlite3 "$d/x.db" "DROP TRIGGER entries_no_update;
    UPDATE entries SET body = replace(body, '\"reason\":\"', '\"reason\":\"x') WHERE type = 'workspace_state_changed';
    SELECT changes();")
[ "${n:-0}" -gt 0 ] || echo "no workspace_state_changed entry: nothing was tampered" >&2
# Its agents hold forever: the resumed run ends by its --timeout (1).
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$db" --resume --timeout 3
expect_match "--resume: the trail verifies first" 'the trail verifies' "$err"
expect_match "... the dead run's workspaces are reconstructed (2 live)" 'root ws-[0-9a-f]+, 2 of 2 workspaces live' "$err"
expect_match "... from the run directory recorded in the trail" "run directory $run_dir" "$err"
expect_match "... both agents are started again" '2 workspaces recovered, 0 failed' "$err"
expect_status "... and the run goes on to its end (here its --timeout: 1)" 1 "$rc" "$err"
expect_match "... recovery_completed is recorded" '"workspaces_recovered":2' "$("$CORRAL" trail --db "$db" --json --type recovery_completed)"
expect_match "the trail still verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"

# ---- a tampered trail is not resumed
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$d/x.db" --resume --timeout 3
expect_status "--resume on a tampered trail fails its integrity check (1)" 1 "$rc" "$err"
expect_match "... saying where and why it cannot be quarantined" "fails its integrity check at entry [0-9]+ .*recorded as workspace_state_changed" "$err"

# ---- a finished run has nothing to resume; a new run starts on its trail
"$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$d/ok.db" --timeout 1 >/dev/null 2>&1
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$d/ok.db" --resume
expect_status "--resume after a run that ended is a usage error" 2 "$rc" "$err"
expect_match "... saying its last run ended" 'no unfinished run' "$err"
expect_match "the dead run's empty cgroups were swept by the next run's first sandbox" '^$' "$(cgroups_of $pid)"

# ---- timers from the trail: a workspace whose timeout passed while corral was down fails at once
d2=$T_TMP/tm
mkdir -p "$d2/ws"
chown -R 65534:65534 "$d2/ws"
python3 - "$d/policy.json" "$d2/policy.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["roles"]["worker"]["budgets"]["wall_time"] = "2s"  # the worker's workspace times out after 2 s
json.dump(p, open(sys.argv[2], "w"), indent=1)
PY
"$CORRAL" run "$d2/policy.json" --workspace "$d2/ws" --trail "$d2/t.db" --timeout 60 >"$d2/out" 2>"$d2/err" &
pid2=$!
i=0
while ! grep -qs 'worker-wrote' "$d2"/runs/*/logs/*.log && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
done
kill -KILL $pid2
wait $pid2 2>/dev/null
# Down until the worker's workspace is past its 2 s, by the trail's own clock.
python3 - "$d2/t.db" <<'PY'
import json, sqlite3, sys, time
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
ts = [r[0] for r in c.execute("select ts from entries where type = 'workspace_created'")]
while time.time() * 1e6 < max(ts) + 2.2e6:
    time.sleep(0.05)
PY
run_capture out err rc "$CORRAL" run "$d2/policy.json" --workspace "$d2/ws" --trail "$d2/t.db" --resume --timeout 2
tm=$("$CORRAL" trail --db "$d2/t.db" --json | python3 -c '
import json, sys
es = [json.loads(l) for l in sys.stdin]
rec = [e["seq"] for e in es if e["type"] == "recovery_completed"]
to = [e["seq"] for e in es if e["type"] == "workspace_state_changed" and e["body"].get("reason") == "timeout"]
print("timeout-before-recovery" if rec and to and to[0] < rec[0] else "no", rec, to)')
expect_match "a workspace past its timeout while corral was down fails during the recovery (reason timeout)" '^timeout-before-recovery' "$tm"
expect_match "... counted in recovery_completed" '"workspaces_failed":1' "$("$CORRAL" trail --db "$d2/t.db" --json --type recovery_completed)"
expect_match "... the root, within its timeout, was recovered" '"workspaces_recovered":1' "$("$CORRAL" trail --db "$d2/t.db" --json --type recovery_completed)"
