#!/bin/sh
# tests/e2e/sdk_wacp.sh: the SDKs' WACP side (C through tests/agents/wacp_script, Python through
# sdk/corral_agent.py) against a scripted runtime on the agent's pipe: notifications that arrive
# while a request waits are queued, not lost; every envelope is acked on arrival, a redelivery is
# acked again but handed to the program once; a dropped envelope is not acked and the program
# gets its redelivery; wacp errors carry their code word; a wait with a timeout ends.
. "$TOP/tests/lib.sh"
cat >"$T_TMP/fake.py" <<'PY'
# The runtime's side: answers every request; on wacp/test.go it first sends env-1, env-1 again
# (attempt 2), a signal, env-2, then the answer. wacp/test.deny is refused with a code word.
# At the end it prints the acks it got, in order, on stdout.
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def out(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def env(i, att):
    return {"jsonrpc": "2.0", "method": "wacp/envelope", "params": {"envelope": {
        "envelope_id": "env-%d" % i, "from": "ws-parent", "to": "ws-me", "type": "directive",
        "payload": {"n": i}, "attempt": att}}}
acks = []
for line in p.stdout:
    m = json.loads(line)
    if "id" not in m:
        continue
    meth, rid = m.get("method"), m["id"]
    if meth == "wacp/envelope.ack":
        eid = m["params"]["envelope_id"]
        acks.append(eid)
        out({"jsonrpc": "2.0", "id": rid, "result": {"envelope_id": eid, "state": "acknowledged",
                                                     "duplicate": acks.count(eid) > 1}})
    elif meth == "wacp/test.go":
        out(env(1, 1)); out(env(1, 2))
        out({"jsonrpc": "2.0", "method": "wacp/signal", "params": {"signal": {
            "signal_id": "sig-1", "from": "ws-child", "type": "complete", "state": "integrating"}}})
        out(env(2, 1))
        out({"jsonrpc": "2.0", "id": rid, "result": {"went": True}})
    elif meth == "wacp/test.deny":
        out({"jsonrpc": "2.0", "id": rid, "error": {"code": -32001, "message": "no right to that",
                                                    "data": {"code": "no_send_right"}}})
    else:
        out({"jsonrpc": "2.0", "id": rid, "result": {}})
p.stdin.close()
p.wait()
print("acks:", " ".join(acks))
print("exit:", p.returncode)
PY
cat >"$T_TMP/agent.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from corral_agent import Agent, WacpError
a = Agent()
a.initialize("t", "1")
if sys.argv[2] == "drop":
    a.drop_envelopes = 1
print("go", a.wacp("test.go"), file=sys.stderr)
while True:
    ev = a.next_event(timeout=0.5)
    if ev is None:
        print("timeout", file=sys.stderr)
        break
    print(ev[0], ev[1].get("envelope_id") or ev[1].get("signal_id"), ev[1].get("attempt"), file=sys.stderr)
try:
    a.wacp("wacp/test.deny", {})
except WacpError as e:
    print("denied", e.code, e.word, file=sys.stderr)
PY
S=$AGENTS/wacp_script
for kind in c py; do
    for mode in keep drop; do
        if [ $kind = c ]; then
            d=; [ $mode = drop ] && d=@drop:1
            run_capture out err rc python3 "$T_TMP/fake.py" "$S" ${d:+"$d"} "wacp/test.go {}" @timeout:500 @wait:4 "wacp/test.deny {}"
            got=$(printf '%s\n' "$err" | sed -n 's/^< envelope .*"envelope_id":"\([^"]*\)".*"attempt":\([0-9]\).*/envelope \1 \2/p; s/^< signal .*"signal_id":"\([^"]*\)".*/signal \1/p')
            denied=$(printf '%s\n' "$err" | grep -o 'error=-32001 no_send_right' || true)
        else
            run_capture out err rc python3 "$T_TMP/fake.py" python3 "$T_TMP/agent.py" "$TOP/sdk" $mode
            got=$(printf '%s\n' "$err" | sed -n 's/^envelope \(.*\)/envelope \1/p; s/^signal \([^ ]*\).*/signal \1/p')
            denied=$(printf '%s\n' "$err" | grep -o 'denied -32001 no_send_right' || true)
        fi
        expect_status "$kind/$mode: the agent ends well" 0 "$rc" "$err"
        if [ $mode = keep ]; then
            want_got="envelope env-1 1
signal sig-1
envelope env-2 1"
            want_acks="acks: env-1 env-1 env-2"
        else
            want_got="envelope env-1 2
signal sig-1
envelope env-2 1"
            want_acks="acks: env-1 env-2"
        fi
        if [ "$got" = "$want_got" ]; then ok "$kind/$mode: queued while waiting, each envelope once, in order"
        else fail "$kind/$mode: queued while waiting, each envelope once, in order" "want: $want_got" "got: $got" "$err"; fi
        expect_match "$kind/$mode: acks as they arrived ($want_acks)" "^$want_acks\$" "$out"
        expect_match "$kind/$mode: a refusal carries its code word" "no_send_right" "$denied"
        expect_match "$kind/$mode: a wait with a timeout ends" "timeout" "$err"
    done
done
