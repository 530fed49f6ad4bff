"""sdk/corral_agent.py: a small Python client for agents run by corral (standard library only).

The agent's stdin and stdout are its channel to the supervisor: one JSON-RPC 2.0 message per
line (docs/protocol.md). Nothing else may be written to stdout: log on stderr.

    from corral_agent import Agent
    a = Agent()
    a.initialize("my-agent", "1.0")
    info = a.call("readFile", path="README.md")     # structuredContent; ToolError if isError
"""
import json
import sys

__all__ = ["Agent", "RpcError", "ToolError"]


class RpcError(Exception):
    """A JSON-RPC error answer: code (-32700, -32600, -32601, -32602, -32603, -32002) and message."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


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
        self._next_id = 1

    def _send(self, msg):
        data = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        self._w.write(data)
        self._w.flush()

    def send_raw(self, data: bytes):
        """Low level: bytes as they are (tests of the framing)."""
        self._w.write(data)
        self._w.flush()

    def read_message(self):
        line = self._r.readline()
        if not line:
            raise EOFError("the supervisor closed the channel")
        return json.loads(line)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def request(self, method, params=None):
        """Sends one request and returns its result; raises RpcError for an error answer."""
        rid = self._next_id
        self._next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)
        while True:
            resp = self.read_message()
            # Skip what is not ours (supervisor notifications); an error with id null is about
            # the line just sent.
            if resp.get("id") != rid and not (resp.get("id") is None and "error" in resp):
                continue
            if "error" in resp:
                e = resp["error"]
                raise RpcError(e.get("code"), e.get("message"), e.get("data"))
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
