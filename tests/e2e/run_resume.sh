#!/bin/sh
# tests/e2e/run_resume.sh: a `corral run` whose supervisor is SIGKILLed leaves an unfinished run
# in its trail. Plain `corral run` on that trail refuses and points at --resume; --resume checks the
# trail's integrity first (a tampered trail is refused, nothing resumed), finds the run directory
# recorded in the trail, reports the reconstructed workspaces; a trail whose run ended or that
# holds none has nothing to resume. The dead run leaves no process or cgroup behind.
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
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$db" --resume
expect_match "--resume: the trail verifies first" 'the trail verifies' "$err"
expect_match "... the dead run's workspaces are reconstructed (2 live)" 'root ws-[0-9a-f]+, 2 of 2 workspaces live' "$err"
expect_match "... from the run directory recorded in the trail" "run directory $run_dir" "$err"
expect_status "... (restarting agents is not implemented: 125, nothing changed)" 125 "$rc" "$err"
expect_match "the trail still verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"

# ---- a tampered trail is not resumed
cp "$db" "$d/x.db"
for f in "$db"-wal "$db"-shm; do [ -e "$f" ] && cp "$f" "$d/x.db${f#"$db"}"; done
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.executescript("DROP TRIGGER entries_no_update; UPDATE entries SET body = replace(body, \"w.txt\", \"v.txt\") WHERE type = \"tool_call\"")
if c.total_changes == 0: sys.exit("no tool_call entry names w.txt: nothing was tampered")
c.close()' "$d/x.db" 2>"$d/sq.err" || cat "$d/sq.err" >&2
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$d/x.db" --resume
expect_status "--resume on a tampered trail fails its integrity check (1)" 1 "$rc" "$err"
expect_match "... saying where" 'fails its integrity check at entry [0-9]+' "$err"

# ---- a finished run has nothing to resume; a new run starts on its trail
"$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$d/ok.db" --timeout 1 >/dev/null 2>&1
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --trail "$d/ok.db" --resume
expect_status "--resume after a run that ended is a usage error" 2 "$rc" "$err"
expect_match "... saying its last run ended" 'no unfinished run' "$err"
expect_match "the dead run's empty cgroups were swept by the next run's first sandbox" '^$' "$(cgroups_of $pid)"
