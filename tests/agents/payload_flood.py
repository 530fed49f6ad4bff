# tests/agents/payload_flood.py: a worker that makes the supervisor keep large payloads, for
# tests/e2e/security_memory.sh. Raw JSON-RPC lines (no SDK). It acknowledges its directive,
# creates N checkpoints whose payload is a 1 MiB array of zeros (the worst case for a parsed
# tree: ~40 bytes of tree per byte of text), sends M envelopes with the same payload to its
# parent, then emits `complete` and waits to be stopped. Usage: payload_flood.py N M
import json
import sys
import time

BIG = [0] * 524287  # "[0,0,...]": 1048575 bytes of JSON, just under the 1 MiB payload limit
envelopes = []
next_id = 0


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def call(method, params):
    global next_id
    next_id += 1
    i = next_id
    send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(3)
        msg = json.loads(line)
        if msg.get("id") == i:
            return msg
        if msg.get("method") == "wacp/envelope":
            envelopes.append(msg["params"]["envelope"])


n, m = int(sys.argv[1]), int(sys.argv[2])
call("initialize", {"protocolVersion": "2025-06-18"})
while not envelopes:
    call("ping", {})
    time.sleep(0.05)
directive = envelopes[0]
call("wacp/envelope.ack", {"envelope_id": directive["envelope_id"]})
parent = directive["from"]
head = None
for k in range(n):
    r = call("wacp/checkpoint.create", {"type": "artifact", "intent": "big %d" % k, "status": "provisional",
                                        "confidence": "low", "parent": head, "payload": BIG})
    if "result" in r:
        head = r["result"]["checkpoint_id"]
    print("checkpoint %d: %s" % (k, json.dumps(r)[:200]), file=sys.stderr, flush=True)
    time.sleep(0.3)  # under the checkpoint rate limit: the memory is what is measured
for k in range(m):
    r = call("wacp/envelope.send", {"to": parent, "type": "query", "payload": BIG})
    print("envelope %d: %s" % (k, json.dumps(r)[:200]), file=sys.stderr, flush=True)
    time.sleep(0.06)
print("flood done", file=sys.stderr, flush=True)
call("wacp/signal.emit", {"type": "complete"})
time.sleep(600)
