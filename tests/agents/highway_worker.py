# tests/agents/highway_worker.py: a worker for tests/e2e/highway.sh speaking raw JSON-RPC lines:
# each argument is "ID TOOL ARGS_JSON" (a tools/call written at once, answer not awaited; "@X:N"
# in ARGS_JSON stands for N bytes of "x"), or "wait ID" (reads until the answer to ID has come,
# printing every answer as it arrives), or
# "deaf" (closes its input: the supervisor's next answer finds no reader), or "sleep SECONDS".
# Prints "< id=N isError=B TEXT" on stderr per answer, so the test reads the order answers came
# in. Envelopes are acknowledged, so the run does not redeliver them.
import json
import os
import re
import sys
import time

answered = {}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def read_one():
    line = sys.stdin.readline()
    if not line:
        sys.stderr.write("< EOF\n")
        sys.exit(3)
    msg = json.loads(line)
    if msg.get("method") == "wacp/envelope":
        send({"jsonrpc": "2.0", "id": "ack", "method": "wacp/envelope.ack",
              "params": {"envelope_id": msg["params"]["envelope"]["envelope_id"]}})
        return
    if "id" not in msg or msg["id"] == "ack":
        return
    r = msg.get("result") or {}
    text = json.dumps(r.get("structuredContent", msg.get("error")))
    sys.stderr.write("< id=%s isError=%s %s\n" % (msg["id"], str(r.get("isError", "error" in msg)).lower(), text))
    sys.stderr.flush()
    answered[msg["id"]] = msg


def wait(i):
    while i not in answered:
        read_one()


send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hw", "version": "1"}}})
wait(0)
for step in sys.argv[1:]:
    if step.startswith("wait "):
        wait(int(step.split()[1]))
        continue
    if step == "deaf":
        os.close(0)
        continue
    if step.startswith("sleep "):
        time.sleep(float(step.split()[1]))
        continue
    i, tool, args = step.split(" ", 2)
    # "@X:N" in the arguments stands for N bytes of "x" (longer than an argument may be).
    args = re.sub(r"@X:([0-9]+)", lambda m: "x" * int(m.group(1)), args)
    send({"jsonrpc": "2.0", "id": int(i), "method": "tools/call", "params": {"name": tool, "arguments": json.loads(args)}})
