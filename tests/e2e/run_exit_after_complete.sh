#!/bin/sh
# tests/e2e/run_exit_after_complete.sh: issue 16's fault through the real `corral run`: 16 workers
# each signal `complete` and then exit with status 0. Their work must wait for the coordinator's
# integration (on the old code most went integrating -> failed "agent_exited" and their parent got
# a `failed` signal). Then the counter-cases: a worker that exits 0 before complete, and one that
# exits 3 (a crash) after complete, both fail and the parent is told.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_exit_after_complete: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
N=16
d=$T_TMP/s
ws=$d/ws rundir=$d/run db=$d/trail.db
mkdir -p "$ws"
echo base >"$ws/base.txt"
chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" "$N" <<'PY'
import json, sys
out, script, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def wsteps(i, code, complete=True):
    steps = ['tools/call {"name":"writeFile","arguments":{"path":"w%02d.txt","content":"w%02d\\n"}}' % (i, i),
             'wacp/checkpoint.create {"type":"artifact","intent":"x","status":"final","confidence":"high","parent":null}']
    if complete:
        steps.append('wacp/signal.emit {"type":"complete"}')
    steps.append("@exit:%d" % code)
    return {"steps": steps}
coord = ["@envelope"]
for i in range(n):
    coord.append("w%d=wacp/workspace.create " % i + json.dumps({"agent": "w", "directive": wsteps(i, 0)}))
coord += ["@until:complete"] * n
# every worker has exited by now (each exits right after its complete): the integrations follow
coord.append("@sleep:1500")
for i in range(n):
    coord.append('wacp/integrate {"workspace":"{{w%d.workspace_id}}","decision":"accept"}' % i)
# counter-cases: an exit 0 before complete, an exit 3 after complete: both fail, the parent is told
coord.append("e=wacp/workspace.create " + json.dumps({"agent": "w", "directive": wsteps(90, 0, False)}))
coord += ["@timeout:20000", "f=@until:failed", "@log:failed-before {{f.from}} {{f.reason}}"]
coord.append("c=wacp/workspace.create " + json.dumps({"agent": "w", "directive": wsteps(91, 3)}))
coord += ["@until:complete", "g=@until:failed", "@log:failed-crash {{g.from}} {{g.reason}}"]
coord += ['wacp/signal.emit {"type":"complete"}', "@hold"]
worker = {"authority": {"write": True, "commands": False},
          "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m"}}
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"coordinator": {"budgets": {"wall_time": "3m"}}, "worker": worker},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$rundir" \
    --trail "$db" --timeout 150
logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
trail() { "$CORRAL" trail --db "$db" --json "$@"; }
expect_status "the run ends well" 0 "$rc" "$err" "$(printf '%s\n' "$logs" | tail -40)"
n=$(printf '%s\n' "$logs" | grep -c '^< wacp/integrate ok .*"state":"closed"' || true)
expect_status "all $N workers that completed then exited 0 are integrated" "$N" "$n" \
    "$(printf '%s\n' "$logs" | grep 'integrate' | head -20)"
i=0 missing=
while [ $i -lt $N ]; do
    f=$(printf 'w%02d.txt' $i)
    [ "$(cat "$ws/$f" 2>/dev/null)" = "$(printf 'w%02d' $i)" ] || missing="$missing $f"
    i=$((i + 1))
done
expect_match "every worker's file reached the root workspace" '^$' "$missing"
n=$(trail --type workspace_state_changed | grep -c '"from":"integrating","to":"failed"' || true)
expect_status "no workspace went from integrating to failed" 0 "$n" \
    "$(trail --type workspace_state_changed | grep '"to":"failed"' | head)"
n=$(trail --type process_exited | grep -c '"exit_code":0' || true)
[ "$n" -ge "$N" ] && ok "the workers really exited 0 ($n)" || fail "the workers really exited 0" "$n" "$(trail --type process_exited)"
expect_match "an exit 0 before complete fails the workspace, the parent is told" '# failed-before ws-[0-9a-f]+ agent_exited' "$logs"
expect_match "an exit 3 after complete (a crash) fails it, the parent is told" '# failed-crash ws-[0-9a-f]+ agent_exited' "$logs"
expect_match "the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"
