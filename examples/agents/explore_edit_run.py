#!/usr/bin/env python3
"""examples/agents/explore_edit_run.py: an agent that explores its workspace, reads a file, edits
it, and runs a command, through corral's tool protocol (sdk/corral_agent.py).

    corral exec --ro "$PWD/sdk" --ro "$PWD/examples/agents" --workspace DIR -- \
        /usr/bin/python3 "$PWD/examples/agents/explore_edit_run.py"
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk"))
from corral_agent import Agent, ToolError  # noqa: E402


def log(*args):
    print("agent:", *args, file=sys.stderr, flush=True)


def main():
    a = Agent()
    info = a.initialize("explore-edit-run.py", "1.0")
    log("server", info["serverInfo"]["name"], info["serverInfo"]["version"])
    log("tools", ", ".join(t["name"] for t in a.list_tools()))

    tree = a.call("exploreFiles", path=".", recursive=True)
    files = [f["path"] for f in tree["files"] if not f["isDirectory"]]
    log("found", tree["totalFound"], "entries;", "files:", " ".join(files[:10]))

    a.call("writeFile", path="notes/hello.txt", content="hello\nworld\n", createDirectories=True)
    a.call("modifyFile", path="notes/hello.txt",
           operations=[{"type": "regexReplace", "pattern": "w(or)ld", "replacement": "W$1LD", "flags": "g"}])
    text = a.call("readFile", path="notes/hello.txt")
    log("after edit:", repr(text["content"]))

    try:
        a.call("readFile", path="../../etc/passwd")
    except ToolError as e:
        log("escape refused:", e.code)

    run = a.call("executeCommand", command="wc -l notes/hello.txt && uname -s")
    log("command exit", run["exitCode"], "stdout", repr(run["stdout"]))
    return 0 if run["exitCode"] == 0 and "WorLD" in text["content"] else 1


if __name__ == "__main__":
    sys.exit(main())
