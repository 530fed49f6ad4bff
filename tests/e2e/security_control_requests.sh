#!/bin/sh
# tests/e2e/security_control_requests.sh: the control socket's request line against a local
# user. When the policy maps people other than the run's user the socket is 0666, so any local
# uid may send one request of up to 2 MiB. It was parsed as it came: 2 MiB of "[0,0,...]" made
# the supervisor hold an 80 MB tree (its peak resident size went from 6 to 86 MB), and invalid
# UTF-8 in a gate id was echoed into the answer. Both are refused before parsing now, as an
# agent's messages are; the run goes on.
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
json.dump({"version": 1, "highway": {"preset": "supervised"},
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
h=$T_TMP/user
mkdir -p "$h" && chmod 755 "$h"
cat >"$h/send.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
if sys.argv[2] == "values":
    body = b'{"op":"gate.list","x":[' + b",".join([b"0"] * 1000000) + b']}\n'
else:
    body = b'{"op":"gate.show","id":"gate-\xff\xfe"}\n'
s.sendall(body)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode("utf-8", "backslashreplace")[:400])
PY
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$h/send.py" "$sock" "$1"; }
expect_match "a request of a million values is refused before parsing" '"bad_request".*65536 values' "$(as_user values)"
expect_match "invalid UTF-8 is refused, not echoed" '"bad_request".*UTF-8' "$(as_user utf8)"
expect_match "the run still answers" 'coordinator' "$(cli ps 2>&1)"
kill "$pid" 2>/dev/null
wait "$pid" || :
