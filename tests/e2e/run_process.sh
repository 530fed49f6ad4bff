#!/bin/sh
# tests/e2e/run_process.sh: the process side of `corral run`: the coordinator's sandbox, its
# tools and wacp requests on one pipe, `corral ps` from another process, the agent's log, the
# end of a run (complete, the agent's exit, SIGTERM, --timeout) with nothing left behind.
. "$TOP/tests/lib.sh"
COORD="$TOP/tests/agents/run_coord.py"
ws=$T_TMP/ws
mkdir -p "$ws"
printf 'hello\n' >"$ws/a.txt"
policy() { # MODE [GO_FILE]
    cat >"$T_TMP/p.json" <<P
{ "version": 1,
  "agents": { "lead": { "binary": "/usr/bin/python3", "args": ["-u", "$COORD", "$1", "${2:--}"], "role": "coordinator",
                        "env": { "PATH": "/opt/x/bin:/usr/bin:/bin", "CORRAL_ROLE": "forged" } } } }
P
}
cgroups_of() { # the run's sandboxes' cgroups still present (v1 memory or v2)
    find /sys/fs/cgroup -maxdepth 6 -type d -name "corral-$1-*" 2>/dev/null
}

# ---- usage ----
run_capture out err rc "$CORRAL" run --help
expect_status "run --help exits 0" 0 "$rc"
expect_match "run --help documents --workspace" '--workspace DIR' "$out"
policy complete -
run_capture out err rc "$CORRAL" run "$T_TMP/p.json"
expect_status "run without --workspace is a usage error" 2 "$rc"
expect_match "... and says what is missing" 'workspace DIR is required' "$err"
printf '{ "version": 1 }' >"$T_TMP/none.json"
run_capture out err rc "$CORRAL" run "$T_TMP/none.json" --workspace "$ws" --trail "$T_TMP/none.db" --run-dir "$T_TMP/none"
expect_status "a policy without a coordinator agent fails" 125 "$rc"
expect_match "... naming the fix" 'names no agent with the coordinator role' "$err"
run_capture out err rc "$CORRAL" ps --db "$T_TMP/nothing.db"
expect_status "ps with no run listening exits 1" 1 "$rc"
expect_match "... and says so" 'no run is listening' "$err"

# ---- a whole run: the coordinator completes ----
# The coordinator completes once go.txt appears in its workspace, made after ps looked.
policy complete go.txt
db=$T_TMP/t.db
"$CORRAL" run "$T_TMP/p.json" --workspace "$ws" --trail "$db" --run-dir "$T_TMP/run" >"$T_TMP/run.out" 2>"$T_TMP/run.err" &
pid=$!
i=0
while ! grep -qs coord-log-marker "$T_TMP"/run/logs/*.log && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
run_capture ps psErr psRc "$CORRAL" ps --db "$db"
run_capture psj psjErr psjRc "$CORRAL" ps --db "$db" --json
echo go >"$ws/go.txt"
wait $pid
rc=$?
expect_status "ps answers while the run goes on" 0 "$psRc" "$psErr"
expect_match "ps shows the coordinator's workspace with its role" 'coordinator' "$ps"
expect_match "ps --json gives the usage of the running sandbox" '"running":true,.*"memory_limit":[0-9]+' "$psj"
expect_status "a run whose coordinator completes exits 0" 0 "$rc" "$(cat "$T_TMP/run.err")"
expect_match "the summary names the root's final state" "coordinator's workspace is closed" "$(cat "$T_TMP/run.out")"
log=$(cat "$T_TMP"/run/logs/*.log 2>/dev/null)
expect_match "the coordinator's stderr is its log" 'coord-log-marker' "$log"
expect_match "the policy's env replaces a default (PATH), the runtime's own cannot be forged" 'env: PATH=/opt/x/bin:/usr/bin:/bin CORRAL_ROLE=coordinator' "$log"
expect_match "it was told its runtime-assigned workspace id" '"workspace_id": "[^"]+"' "$log"
expect_match "its tools act on the root workspace" '"content": "hello\\n"' "$log"
expect_match "acking the run's first envelope makes it active" 'ack: .*"state": "acknowledged"' "$log"
expect_match "wacp/trail.query answers from the committed trail" 'query: .*"type": "workspace_created"' "$log"
tr=$("$CORRAL" trail --db "$db" --json)
expect_match "the sandbox is recorded with its profile" '"type":"sandbox_created".*"profile"' "$tr"
expect_match "the process start is recorded" '"type":"process_started"' "$tr"
expect_match "its exit is recorded" '"type":"process_exited"' "$tr"
expect_match "its log tail is a blob in the trail" '"type":"agent_log".*"blob":"[0-9a-f]{64}"' "$tr"
expect_match "the run's start is recorded" '"type":"supervisor_started"' "$tr"
run_capture vout verr vrc "$CORRAL" trail verify --db "$db"
expect_status "the trail verifies" 0 "$vrc" "$vout" "$verr"
expect_status "no process of the run is left" 1 "$(pgrep -f "$COORD" >/dev/null; echo $?)"
expect_match "no cgroup of the run is left" '^$' "$(cgroups_of $pid)"
expect_status "the control socket is removed" 1 "$(test -e "$db.sock"; echo $?)"

# ---- the coordinator exits without completing: the root fails ----
policy exit
run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$ws" --trail "$T_TMP/e.db" --run-dir "$T_TMP/e"
expect_status "a coordinator that just exits fails the run (1)" 1 "$rc" "$err"
expect_match "... the summary says failed" "workspace is failed" "$out"

# ---- SIGTERM ends the run, nothing left ----
policy sleep
"$CORRAL" run "$T_TMP/p.json" --workspace "$ws" --trail "$T_TMP/s.db" --run-dir "$T_TMP/s" >"$T_TMP/s.out" 2>&1 &
pid=$!
i=0
# TERM once the coordinator's sandbox runs (ps says so), not at some moment of its start
while ! "$CORRAL" ps --db "$T_TMP/s.db" --json 2>/dev/null | grep -q '"running":true' && [ $i -lt 300 ]; do
    sleep 0.1; i=$((i + 1))
done
kill -TERM $pid
wait $pid
rc=$?
expect_status "SIGTERM ends the run with status 1" 1 "$rc" "$(cat "$T_TMP/s.out")"
expect_status "... and no process is left" 1 "$(pgrep -f "$COORD sleep" >/dev/null; echo $?)"
expect_match "... nor any cgroup" '^$' "$(cgroups_of $pid)"
expect_match "... the root workspace failed, recorded" '"type":"workspace_state_changed".*"failed"' "$("$CORRAL" trail --db "$T_TMP/s.db" --json)"

# ---- --timeout ----
run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$ws" --trail "$T_TMP/t2.db" --run-dir "$T_TMP/t2" --timeout 1
expect_status "--timeout ends a run that does not finish (1)" 1 "$rc" "$err"
expect_match "... and says the time ran out" 'timeout expired' "$out"
expect_status "... no process left" 1 "$(pgrep -f "$COORD sleep" >/dev/null; echo $?)"
