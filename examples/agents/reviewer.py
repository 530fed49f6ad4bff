#!/usr/bin/env python3
"""examples/agents/reviewer.py: a WACP reviewer (a derived role: it reads, never writes) for
`corral run` (sdk/corral_agent.py). Its workspace is a copy of the coordinator's files taken
when it was created; it reads the files its directive names, checks that each Python file
compiles, records a `review` checkpoint (the policy's taxonomy type), sends the coordinator a
`report` envelope, and signals complete.

    "binary": "/usr/bin/python3",
    "args": ["-u", "examples/agents/reviewer.py", "sdk/corral_agent.py"]
"""
import os
import sys


def _load_sdk():
    for arg in sys.argv[1:]:
        if arg.endswith("corral_agent.py"):
            sys.path.insert(0, os.path.dirname(os.path.abspath(arg)))
            return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk"))


_load_sdk()
from corral_agent import Agent, ToolError, WacpError  # noqa: E402


def log(*args):
    print("reviewer.py:", *args, file=sys.stderr, flush=True)


def review(a, paths):
    """{path: "ok" | what is wrong} for each file."""
    tools = {t["name"] for t in a.list_tools()}
    read = "readFile" if "readFile" in tools else "read_file"
    found = {}
    for path in paths:
        try:
            text = a.call(read, path=path).get("content", "")
        except ToolError as e:
            found[path] = f"cannot be read: {e}"
            continue
        if path.endswith(".py"):
            try:
                compile(text, path, "exec")
            except SyntaxError as e:
                found[path] = f"does not compile: line {e.lineno}: {e.msg}"
                continue
        found[path] = "ok" if text.strip() else "empty"
    return found


def main():
    a = Agent()
    a.initialize("reviewer.py", "1.0")
    me = a.self_info()
    log("workspace", me["workspace_id"], "role", me["role"])
    d = a.next_envelope(timeout=120)
    if d is None:
        a.emit("failed", reason="no directive within 120 s")
        return 1
    job = d.get("payload") if isinstance(d.get("payload"), dict) else {}
    found = review(a, [p for p in job.get("files", []) if isinstance(p, str)])
    verdict = "approve" if found and all(v == "ok" for v in found.values()) else "request_changes"
    log("verdict", verdict, found)
    try:
        cp = a.checkpoint(intent=f"review: {verdict}", type="review", files=[],
                          payload={"verdict": verdict, "files": found})
        log("checkpoint", cp["checkpoint_id"])
        a.send(d["from"], "report", {"format": "json", "content": f"review: {verdict}",
                                     "verdict": verdict, "files": found}, in_reply_to=d["envelope_id"])
        a.emit("complete", reason=f"review: {verdict}")
    except WacpError as e:
        log("refused:", e)
        a.emit("failed", reason=str(e)[:300])
    try:
        while a.next_event() is not None:
            pass
    except EOFError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
