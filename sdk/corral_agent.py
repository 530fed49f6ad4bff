"""sdk/corral_agent.py: a small Python client for agents run by corral (standard library only).

The agent's stdin and stdout are its channel to the supervisor: one JSON-RPC 2.0 message per
line (docs/protocol.md). Nothing else may be written to stdout: log on stderr.

    from corral_agent import Agent
    a = Agent()
    a.initialize("my-agent", "1.0")
    info = a.call("readFile", path="README.md")     # structuredContent; ToolError if isError

Under `corral run` the same pipe carries WACP (docs/sdk.md): requests (`a.wacp(method, params)`
and helpers: self_info, create_workspace, send, emit, checkpoint, task_create, integrate, ...) and
the runtime's notifications, which are queued while a request waits for its answer. Each
envelope is acknowledged on arrival and handed to the program once per envelope_id:

    me = a.self_info()
    env = a.next_envelope(timeout=30)        # the directive, acked already; None on timeout
    a.send(env["from"], "query", {"format": "markdown", "content": "which file?"})
"""
import collections
import json
import os
import select
import sys
import time

__all__ = ["Agent", "RpcError", "ToolError", "WacpError"]

_MAX_SEEN = 65536  # envelope ids remembered for deduplication


class RpcError(Exception):
    """A JSON-RPC error answer: code (-32700, -32600, -32601, -32602, -32603, -32002) and message."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


class WacpError(RpcError):
    """A refused wacp/* request: word is the runtime's stable code ("permission_denied",
    "no_send_right", "invalid_transition", "not_found", "cycle", "chain_head_mismatch", ...)."""

    def __init__(self, code, message, data=None):
        super().__init__(code, message, data)
        self.word = data.get("code") if isinstance(data, dict) else None

    def __str__(self):
        return f"{self.word or self.code}: {self.message}"


class ToolError(Exception):
    """A tool's own failure (isError): the surface's error object, e.g. {error, code, details}."""

    def __init__(self, result):
        super().__init__(f"{result.get('code')}: {result.get('error')}")
        self.result = result
        self.code = result.get("code")


class Agent:
    def __init__(self, rfile=None, wfile=None):
        self._r = rfile or sys.stdin.buffer
        self._w = wfile or sys.stdout.buffer
        try:
            self._fd = self._r.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None  # a file object without an fd: no timeouts
        self._buf = b""
        self._next_id = 1
        self._events = collections.deque()  # ("envelope", env) / ("signal", sig), arrival order
        self._seen = collections.OrderedDict()  # envelope ids handed to the program
        self._acks = {}  # request id -> envelope id of acks still unanswered (answers dropped)
        self.ack_errors = []  # (envelope_id, WacpError) of acks the runtime refused
        self.drop_envelopes = 0  # tests: this many next envelopes are dropped, not acked
        self.chain_head = None  # the last checkpoint this agent created (the next one's parent)
        self.recovered = None  # the wacp/recovered notification, when `corral run --resume` restarted us

    # ---- framing
    def _send(self, msg):
        data = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        self._w.write(data)
        self._w.flush()

    def send_raw(self, data: bytes):
        """Low level: bytes as they are (tests of the framing)."""
        self._w.write(data)
        self._w.flush()

    def _read_line(self, timeout=None):
        """The next line, or None when TIMEOUT seconds passed first; EOFError at end of input."""
        if self._fd is None:
            line = self._r.readline()
            if not line:
                raise EOFError("the supervisor closed the channel")
            return line
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buf:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                    return None
            chunk = os.read(self._fd, 65536)
            if not chunk:
                raise EOFError("the supervisor closed the channel")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def read_message(self, timeout=None):
        """Low level: the next message as it is (None on timeout). Notifications read this way
        bypass the queue, acknowledgment and deduplication."""
        line = self._read_line(timeout)
        return None if line is None else json.loads(line)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def _request_nowait(self, method, params):
        rid = self._next_id
        self._next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)
        return rid

    # ---- what arrives unasked
    def _take(self, msg):
        """Files a message that is not the answer being waited for. True when it was consumed."""
        if not isinstance(msg, dict):
            return True
        rid = msg.get("id")
        if isinstance(rid, int) and rid in self._acks and "method" not in msg:
            eid = self._acks.pop(rid)
            if "error" in msg:
                e = msg["error"] if isinstance(msg["error"], dict) else {}
                err = WacpError(e.get("code"), e.get("message"), e.get("data"))
                self.ack_errors.append((eid, err))
                print(f"corral_agent: the ack of {eid} was refused: {err}", file=sys.stderr, flush=True)
            return True
        method = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if rid is None and method == "wacp/envelope":
            env = params.get("envelope")
            if isinstance(env, dict) and isinstance(env.get("envelope_id"), str):
                self._on_envelope(env)
            return True
        if rid is None and method == "wacp/signal":
            sig = params.get("signal")
            if isinstance(sig, dict):
                self._events.append(("signal", sig))
            return True
        if rid is None and method == "wacp/recovered":
            # `corral run --resume` started this agent again after its supervisor died: what it
            # remembered is gone; the workspace's state, files and checkpoint chain are as the
            # trail recorded them. The chain goes on from the recorded head.
            self.recovered = params
            self.chain_head = params.get("checkpoint_head") or None
            self._events.append(("recovered", params))
            return True
        if rid is None and method == "wacp/liveness":
            # A child silent and idle for its liveness interval (advisory): the caller decides.
            self._events.append(("liveness", params))
            return True
        return rid is None and method is not None  # other notifications: nothing to do

    def _on_envelope(self, env):
        eid = env["envelope_id"]
        if self.drop_envelopes > 0 and eid not in self._seen:
            self.drop_envelopes -= 1
            print(f"corral_agent: dropped envelope {eid} (attempt {env.get('attempt')}) unacked",
                  file=sys.stderr, flush=True)
            return
        # Acked on arrival, pipelined: the answer is dropped when it comes. A redelivery of an
        # envelope already handed over is acked again (our first ack may have been too late)
        # but not handed over twice.
        self._acks[self._request_nowait("wacp/envelope.ack", {"envelope_id": eid})] = eid
        if eid in self._seen:
            return
        self._seen[eid] = True
        if len(self._seen) > _MAX_SEEN:
            self._seen.popitem(last=False)
        self._events.append(("envelope", env))

    # ---- requests
    def request(self, method, params=None):
        """Sends one request and returns its result; raises RpcError (WacpError for wacp/*) for
        an error answer. Notifications that arrive meanwhile are queued."""
        rid = self._request_nowait(method, params)
        while True:
            resp = self.read_message()
            # An error with id null is about a line just sent.
            ours = isinstance(resp, dict) and "method" not in resp and (
                resp.get("id") == rid or (resp.get("id") is None and "error" in resp))
            if not ours:
                self._take(resp)
                continue
            if "error" in resp:
                e = resp["error"] or {}
                cls = WacpError if method.startswith("wacp/") else RpcError
                raise cls(e.get("code"), e.get("message"), e.get("data"))
            return resp.get("result")

    def initialize(self, name, version="0", protocol_version="2025-06-18"):
        result = self.request("initialize", {
            "protocolVersion": protocol_version,
            "capabilities": {},
            "clientInfo": {"name": name, "version": version},
        })
        self.notify("notifications/initialized")
        return result

    def list_tools(self):
        return self.request("tools/list")["tools"]

    def call(self, tool, **arguments):
        """tools/call: returns structuredContent, or raises ToolError with the tool's error object."""
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        content = result.get("structuredContent")
        if result.get("isError"):
            raise ToolError(content or {})
        return content

    # ---- WACP (docs/sdk.md; the methods: docs/protocol-wacp.md)
    def wacp(self, method, params=None):
        """Any wacp/* method ("workspace.self" or "wacp/workspace.self"); WacpError if refused."""
        if not method.startswith("wacp/"):
            method = "wacp/" + method
        return self.request(method, params if params is not None else {})

    def self_info(self):
        return self.wacp("workspace.self")

    def create_workspace(self, agent, directive, context=None, task=None, **extra):
        """Starts AGENT in a new child workspace; DIRECTIVE becomes its first envelope. EXTRA:
        owner, budgets, delegate, timeout. Returns {workspace_id, state}."""
        p = {"agent": agent, "directive": directive}
        if context is not None:
            p["context"] = context
        if task is not None:
            p["task"] = task
        p.update({k: v for k, v in extra.items() if v is not None})
        return self.wacp("workspace.create", p)

    def workspaces(self):
        return self.wacp("workspace.list")["workspaces"]

    def send(self, to, type, payload, in_reply_to=None, priority=None, rights=None):
        p = {"to": to, "type": type, "payload": payload}
        if in_reply_to is not None:
            p["in_reply_to"] = in_reply_to
        if priority is not None:
            p["priority"] = priority
        if rights is not None:
            p["rights"] = rights
        return self.wacp("envelope.send", p)

    def reply(self, envelope, type, payload, **kw):
        """Answers ENVELOPE (to its sender, in_reply_to its id)."""
        return self.send(envelope["from"], type, payload, in_reply_to=envelope["envelope_id"], **kw)

    def emit(self, type, reason=None, ref=None):
        p = {"type": type}
        if reason is not None:
            p["reason"] = reason
        if ref is not None:
            p["ref"] = ref
        return self.wacp("signal.emit", p)

    def checkpoint(self, intent, type="artifact", status="final", confidence="high",
                   files=None, payload=None, parent=...):
        """A checkpoint of this workspace; PARENT defaults to the last one this agent made (the
        chain head), None for the first."""
        p = {"type": type, "intent": intent, "status": status, "confidence": confidence,
             "parent": self.chain_head if parent is ... else parent}
        if files is not None:
            p["files"] = files
        if payload is not None:
            p["payload"] = payload
        r = self.wacp("checkpoint.create", p)
        self.chain_head = r.get("checkpoint_id")
        return r

    def checkpoints(self, workspace=None):
        return self.wacp("checkpoint.list", {} if workspace is None else {"workspace": workspace})["checkpoints"]

    def task_create(self, name, description=None, depends_on=None, parent_task=None):
        p = {"name": name}
        if description is not None:
            p["description"] = description
        if depends_on:
            p["depends_on"] = list(depends_on)
        if parent_task is not None:
            p["parent_task"] = parent_task
        return self.wacp("task.create", p)

    def task_list(self):
        return self.wacp("task.list")["tasks"]

    def integrate(self, workspace, decision="accept", strategy=None, checkpoint=None):
        p = {"workspace": workspace, "decision": decision}
        if strategy is not None:
            p["strategy"] = strategy
        if checkpoint is not None:
            p["checkpoint"] = checkpoint
        return self.wacp("integrate", p)

    def resolve(self, workspace, resolution="coordinator_resolve", prefer=None):
        p = {"workspace": workspace, "resolution": resolution}
        if prefer is not None:
            p["prefer"] = prefer
        return self.wacp("conflict.resolve", p)

    def rights(self):
        return self.wacp("rights.list")["rights"]

    def trail(self, workspace=None, type=None, limit=None):
        p = {k: v for k, v in (("workspace", workspace), ("type", type), ("limit", limit)) if v is not None}
        return self.wacp("trail.query", p)["entries"]

    # ---- waiting
    def next_event(self, timeout=None, kinds=("envelope", "signal")):
        """The next queued or arriving event of KINDS as (kind, object): ("envelope", envelope)
        (acked already, each envelope_id once) or ("signal", signal). Events of other kinds
        stay queued. None when TIMEOUT seconds pass first; EOFError when the channel ends."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self._events):
                if ev[0] in kinds:
                    del self._events[i]
                    return ev
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if left == 0.0 and deadline is not None and time.monotonic() >= deadline:
                return None
            msg = self.read_message(left)
            if msg is None:
                return None
            self._take(msg)

    def next_envelope(self, timeout=None):
        """The next envelope (signals stay queued), or None on timeout."""
        ev = self.next_event(timeout, ("envelope",))
        return ev and ev[1]

    def next_signal(self, timeout=None):
        """The next signal (envelopes stay queued), or None on timeout."""
        ev = self.next_event(timeout, ("signal",))
        return ev and ev[1]
