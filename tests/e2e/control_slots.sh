#!/bin/sh
# tests/e2e/control_slots.sh: the control socket's client slots against a local user who holds
# them. When the policy maps people other than the run's user the socket is 0666: any local uid
# may connect, and a connection holds one of the 32 slots until its request line (or 10 s). An
# unmapped uid holding every slot (reconnecting as they are freed) must not lock root out of
# `corral gate list` / `corral ps`: each uid other than root and the run's
# own holds a few slots at most, and root's are its own.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
chmod 711 "$T_TMP"
d=$T_TMP/run
ws=$d/ws db=$d/trail.db sock=$d/trail.db.sock
mkdir -p "$ws"
chmod 711 "$d"
python3 - "$d/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1:3]
json.dump({"version": 1,
           "highway": {"preset": "supervised",
                       "gate_overrides": {"task_approval": {"timeout": "60s", "fallback": "reject"}}},
           "users": {"0": "root-admin", "65534": {"user_id": "nobody", "approve": []}},
           "roles": {"coordinator": {"budgets": {"wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "role": "coordinator",
                                "args": ["wacp/signal.emit {\"type\":\"started\"}", "@hold"]}}},
          open(out, "w"))
PY
"$CORRAL" run "$d/policy.json" --workspace "$ws" --run-dir "$d/run" --trail "$db" --timeout 90 \
    >"$d/out" 2>"$d/err" </dev/null &
pid=$!
cli() { "$CORRAL" "$@" --control "$sock"; }
i=0
until cli ps >/dev/null 2>&1 || [ $i -ge 300 ]; do sleep 0.1; i=$((i + 1)); done
[ $i -lt 300 ] || fail "the run answers corral ps" "$(cat "$d/err")"

# The hostile local user: 40 silent connections, each reopened as soon as the run drops it.
h=$T_TMP/holder
mkdir -p "$h" && chown 4321:4321 "$h"
cat >"$h/hold.py" <<'PY'
import os, socket, sys, time, select
path, ready = sys.argv[1:3]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s
socks = [conn() for _ in range(40)]
open(ready, "w").close()
while True:
    r, _, _ = select.select(socks, [], [], 1)
    for s in r:
        socks.remove(s); s.close()
        time.sleep(0.01)
        socks.append(conn())
PY
setpriv --reuid=4321 --regid=4321 --clear-groups /usr/bin/python3 "$h/hold.py" "$sock" "$h/ready" 2>"$h/err" &
holder=$!
i=0
while [ ! -e "$h/ready" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
[ -e "$h/ready" ] || fail "the holder connected" "$(cat "$h/err")"

run_capture o e r cli gate list --json
expect_status "root's gate list answers while another uid holds every connection it can" 0 "$r" "$o" "$e"
expect_match "... a document of gates" '"gates"' "$o"
run_capture o e r cli ps
expect_status "root's corral ps answers too" 0 "$r" "$o" "$e"
expect_match "... with the tree" 'coordinator' "$o"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
kill "$pid" 2>/dev/null
wait "$pid" || true
