# tests/agents/run_coord.py: a minimal coordinator for tests/e2e/run_process.sh, speaking raw
# JSON-RPC lines (no SDK), so the run's process side is tested on its own.
#   run_coord.py complete FILE      initialize, ask who it is, read a file, log a marker on
#                                   stderr, wait until FILE ("-": none) can be read in its
#                                   workspace (the test creates it once it looked at the run),
#                                   emit `complete`, then wait to be stopped
#   run_coord.py exit               initialize and exit without a word about its work
#   run_coord.py sleep              initialize and sleep until killed
import json
import os
import sys
import time


envelopes = []


def call(i, method, params):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    sys.stdout.flush()
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(3)
        msg = json.loads(line)
        if msg.get("id") == i:
            return msg
        if msg.get("method") == "wacp/envelope":  # the run's start: acked below
            envelopes.append(msg["params"]["envelope"]["envelope_id"])


def readable(i, path):
    r = call(i, "tools/call", {"name": "readFile", "arguments": {"path": path}})
    return "result" in r and not r["result"].get("isError")


mode = sys.argv[1]
call(0, "initialize", {"protocolVersion": "2025-06-18"})
if mode == "exit":
    sys.exit(0)
if mode == "sleep":
    time.sleep(600)
me = call(1, "wacp/workspace.self", {})
print("self:", json.dumps(me), file=sys.stderr)
got = call(2, "tools/call", {"name": "readFile", "arguments": {"path": "a.txt"}})
print("read:", json.dumps(got), file=sys.stderr)
print("env: PATH=%s CORRAL_ROLE=%s" % (os.environ.get("PATH"), os.environ.get("CORRAL_ROLE")), file=sys.stderr)
print("coord-log-marker", file=sys.stderr, flush=True)
# The run's first envelope makes the workspace active once acknowledged (idle -> active).
n = 10
while not envelopes:
    call(n, "ping", {})
    n += 1
for e in set(envelopes):
    print("ack:", json.dumps(call(n, "wacp/envelope.ack", {"envelope_id": e})), file=sys.stderr)
    n += 1
q = call(n, "wacp/trail.query", {"type": "workspace_created", "limit": 5})
print("query:", json.dumps(q), file=sys.stderr)
go = sys.argv[2]
n += 1
while go != "-" and not readable(n, go):
    n += 1
    time.sleep(0.05)
n += 1
done = call(3, "wacp/signal.emit", {"type": "complete"})
print("complete:", json.dumps(done), file=sys.stderr, flush=True)
time.sleep(600)
