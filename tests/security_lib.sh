# tests/security_lib.sh: what the security regression tests (tests/e2e/security_*.sh) share
# (sourced after tests/lib.sh). sec_session runs one `corral run` with scripted agents
# (tests/agents/wacp_script): a coordinator running the given steps, and workers "w" (write
# authority), "wc" (write and commands) whose steps come in their directive's payload.steps.
# SEC_WORKER_EXTRA and SEC_POLICY_EXTRA (JSON objects) are merged into the worker role and the
# policy's top level; SEC_AGENTS_EXTRA adds agents (binary: wacp_script unless given), for steps
# longer than a directive carries (an argument holds at most 4095 bytes). The run is bounded from outside (SEC_KILL_AFTER seconds, default 90):
# a supervisor that stops answering is killed, and the test sees status 137.
S=$AGENTS/wacp_script

# sec_policy FILE COORDINATOR_STEPS...
sec_policy() {
    python3 - "$@" <<'PY'
import json, os, sys
out, steps = sys.argv[1], sys.argv[2:]
script = os.environ["S"]
worker = {"authority": {"write": True, "commands": False},
          "budgets": {"memory": "256M", "pids": 32, "wall_time": "2m"}}
worker.update(json.loads(os.environ.get("SEC_WORKER_EXTRA") or "{}"))
wc = json.loads(json.dumps(worker))
wc["extends"] = "worker"
wc["authority"] = {"write": True, "commands": True}
pol = {"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
       "roles": {"coordinator": {"budgets": {"wall_time": "2m"}}, "worker": worker,
                 "cmdworker": wc},
       "agents": {"coord": {"binary": script, "args": steps, "role": "coordinator"},
                  "w": {"binary": script, "args": ["@directive"], "role": "worker"},
                  "wc": {"binary": script, "args": ["@directive"], "role": "cmdworker"}}}
for name, ag in json.loads(os.environ.get("SEC_AGENTS_EXTRA") or "{}").items():
    ag.setdefault("binary", script)
    pol["agents"][name] = ag
for k, v in json.loads(os.environ.get("SEC_POLICY_EXTRA") or "{}").items():
    if isinstance(v, dict) and isinstance(pol.get(k), dict):
        pol[k].update(v)
    else:
        pol[k] = v
json.dump(pol, open(out, "w"), indent=1)
PY
}

# sec_session NAME [corral run options] -- COORDINATOR_STEPS...: runs on a fresh workspace
# holding base.txt (owned by 65534 unless SEC_WS_OWNER says otherwise). Sets $d, $ws, $rundir,
# $db, $out, $err, $rc, $logs.
sec_session() {
    name=$1; shift
    extra=
    while [ "$1" != "--" ]; do extra="$extra $1"; shift; done
    shift
    d=$T_TMP/$name
    ws=$d/ws rundir=$d/run db=$d/trail.db
    mkdir -p "$ws"
    echo base >"$ws/base.txt"
    chown -R "${SEC_WS_OWNER:-65534:65534}" "$ws"
    S=$S sec_policy "$d/policy.json" "$@"
    # shellcheck disable=SC2086
    run_capture out err rc timeout -s KILL "${SEC_KILL_AFTER:-90}" "$CORRAL" run "$d/policy.json" \
        --workspace "$ws" --run-dir "$rundir" --trail "$db" --timeout "${SEC_TIMEOUT:-60}" $extra
    logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
}

sec_trail() { "$CORRAL" trail --db "$db" --json "$@"; }

# A worker's steps as the JSON array of a directive: sec_steps STEP... (each a JSON string body)
sec_steps() {
    python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@"
}
