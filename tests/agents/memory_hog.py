# tests/agents/memory_hog.py: a coordinator that tries to make the supervisor keep large parsed
# trees, for tests/e2e/security_memory_bounds.sh. Raw JSON-RPC lines (no SDK). Each attempt is
# printed on stderr as "NAME: ANSWER" (the first 300 bytes of the answer), then it completes.
# Usage: memory_hog.py bounds (context, values) | gates (gate K)
#   context   workspace.create with a 2 MiB context (kept for the workspace's life)
#   values    a request of 1.1 million JSON values (a ~90 MB tree for 2.2 MB of text)
#   gate K    K of 5 workspace.create requests, each with a 900 KB context of zeros, waiting at
#             the workspace_create gate (each kept twice as a tree until a person answers)
import json
import sys

next_id = 0
answers = {}


def send_raw(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def send(method, params, i=None):
    global next_id
    if i is None:
        next_id += 1
        i = next_id
    send_raw(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params},
                        separators=(",", ":")))
    return i


def wait(i):
    while i not in answers:
        line = sys.stdin.readline()
        if not line:
            sys.exit(3)
        msg = json.loads(line)
        if msg.get("method") == "wacp/envelope":
            env = msg["params"]["envelope"]
            send("wacp/envelope.ack", {"envelope_id": env["envelope_id"]})
        elif "id" in msg and msg.get("method") is None:
            answers[msg["id"]] = msg
    return answers[i]


def report(name, msg):
    print("%s: %s" % (name, json.dumps(msg)[:300]), file=sys.stderr, flush=True)


wait(send("initialize", {"protocolVersion": "2025-06-18"}))
if sys.argv[1] == "bounds":
    report("context", wait(send("wacp/workspace.create",
                                {"agent": "w", "directive": {}, "context": "x" * (2 << 20)})))
    next_id += 1
    send_raw('{"jsonrpc":"2.0","id":%d,"method":"wacp/workspace.create","params":{"agent":"w",'
             '"directive":[%s]}}' % (next_id, ",".join(["0"] * 1100000)))
    report("values", wait(None))  # refused before its id could be read
    report("after", wait(send("wacp/workspace.list", {})))
else:
    ctx = [0] * 450000
    ids = [send("wacp/workspace.create", {"agent": "w", "directive": {}, "context": ctx}) for _ in range(5)]
    for k, i in enumerate(ids):
        report("gate %d" % k, wait(i))
wait(send("wacp/signal.emit", {"type": "complete"}))
print("hog done", file=sys.stderr, flush=True)
