#!/usr/bin/env python3
"""examples/agents/worker.py: a WACP worker in Python (sdk/corral_agent.py) for `corral run`.

It waits for its directive, asks the coordinator what the directive leaves open (a query,
answered by feedback), does the work in its own workspace through its tools, records a
checkpoint chain (a provisional artifact of the work so far, then the final one with every
file it changed) and signals complete; the coordinator integrates the work into its own files.

Directives it understands (the payload's "kind"): add_function, write_test, write_docs.
In a policy (docs/sdk.md): the script and the SDK are named in args, so corral binds both
read-only into the sandbox:
    "binary": "/usr/bin/python3",
    "args": ["-u", "examples/agents/worker.py", "sdk/corral_agent.py"]
"""
import os
import re
import sys


def _load_sdk():
    for arg in sys.argv[1:]:
        if arg.endswith("corral_agent.py"):
            sys.path.insert(0, os.path.dirname(os.path.abspath(arg)))
            return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk"))


_load_sdk()
from corral_agent import Agent, ToolError, WacpError  # noqa: E402

WAIT = 120  # seconds to wait for a directive or an answer


def log(*args):
    print("worker.py:", *args, file=sys.stderr, flush=True)


class Files:
    """The workspace's files through the role's tools: WAP names (readFile, writeFile,
    executeCommand) or the snake_case ones of the kward surface (read_file, write_file,
    run_shell_command)."""

    def __init__(self, agent):
        self.a = agent
        self.names = {t["name"] for t in agent.list_tools()}
        self.wap = "readFile" in self.names

    def read(self, path):
        """The file's text, or None when it cannot be read (missing)."""
        try:
            r = self.a.call("readFile" if self.wap else "read_file", path=path)
        except ToolError as e:
            log(f"read {path}: {e}")
            return None
        return r.get("content", "")

    def write(self, path, content):
        if self.wap:
            self.a.call("writeFile", path=path, content=content, createDirectories=True)
        else:
            self.a.call("write_file", path=path, content=content)

    def run(self, command):
        """(exit code, output) of a command in a command sandbox, or None without the tool."""
        if "executeCommand" in self.names:
            r = self.a.call("executeCommand", command=command)
            return r.get("exitCode"), (r.get("stdout") or "") + (r.get("stderr") or "")
        if "run_shell_command" in self.names:
            r = self.a.call("run_shell_command", command=command)
            return r.get("exit_code", r.get("exitCode")), r.get("output", r.get("stdout", ""))
        return None


def ask(a, directive, question, content):
    """A query to whoever sent the directive; the feedback's payload (None on no answer)."""
    q = a.send(directive["from"], "query", {"format": "json", "question": question, "content": content},
               in_reply_to=directive["envelope_id"])
    log(f"query {q['envelope_id']}: {content}")
    while True:
        env = a.next_envelope(timeout=WAIT)
        if env is None:
            log("no answer to", q["envelope_id"])
            return None
        if env.get("type") == "feedback" and env.get("in_reply_to") == q["envelope_id"]:
            log("feedback:", env.get("payload"))
            return env.get("payload") or {}
        log("meanwhile:", env.get("type"), "from", env.get("from"))


def draft(a, what, files):
    """A provisional checkpoint of the work so far: the chain's first link (the final one
    follows, with this one as its parent)."""
    cp = a.checkpoint(intent=what, status="provisional", confidence="medium", files=files)
    log("checkpoint", cp["checkpoint_id"], "(provisional)", " ".join(f["path"] for f in cp.get("files", [])))


def add_readme_line(files, heading, line):
    """README.md with LINE added at the end of section HEADING (made when missing)."""
    text = files.read("README.md") or ""
    lines = text.rstrip("\n").split("\n")
    if heading not in lines:
        lines += ["", heading, ""]
    i = lines.index(heading) + 1
    while i < len(lines) and not lines[i].startswith("#"):
        i += 1
    while i > 0 and lines[i - 1] == "":
        i -= 1
    lines.insert(i, line)
    files.write("README.md", "\n".join(lines) + "\n")


MEDIAN = '''

def median(xs):
    """The middle value of a non-empty list of numbers; for an even count, {even}."""
    if not xs:
        raise ValueError("median() of an empty list")
    s = sorted(xs)
    m = len(s) // 2
    if len(s) % 2:
        return s[m]
    return {expr}
'''
EVEN = {"mean_of_middle": ("the mean of the two middle values", "(s[m - 1] + s[m]) / 2"),
        "lower": ("the lower of the two middle values", "s[m - 1]")}


def add_function(a, d, job, files):
    module, fn = job.get("module", "stats.py"), job.get("function", "median")
    src = files.read(module)
    if src is None:
        raise RuntimeError(f"{module} is not in the workspace")
    if fn != "median":
        raise RuntimeError(f"this worker only knows how to write median(), not {fn}()")
    if f"def {fn}(" not in src:
        ans = ask(a, d, "even_length", f"{fn}() of an even-length list: which value?") or {}
        even, expr = EVEN.get(ans.get("answer"), EVEN["mean_of_middle"])
        files.write(module, src.rstrip("\n") + "\n" + MEDIAN.format(even=even, expr=expr))
        draft(a, f"{fn}() in {module}, README.md still to do", [module])
    add_readme_line(files, "## Functions", f"- `{fn}(xs)`: the middle value.")
    return [module, "README.md"], f"{fn}() added to {module}"


TEST = '''"""test_stats.py: the tests of {fn}(), written by worker.py from the coordinator's cases."""
import unittest

from stats import {fn}

CASES = {cases!r}


class {cls}Test(unittest.TestCase):
    def test_cases(self):
        for xs, want in CASES:
            with self.subTest(xs=xs):
                self.assertEqual({fn}(xs), want)

    def test_empty(self):
        with self.assertRaises(ValueError):
            {fn}([])


if __name__ == "__main__":
    unittest.main()
'''


def write_test(a, d, job, files):
    fn = job.get("function", "median")
    ans = ask(a, d, "cases", f"which cases must the test of {fn}() cover?") or {}
    cases = [c for c in ans.get("cases", []) if isinstance(c, list) and len(c) == 2] or [[[3, 1, 2], 2]]
    files.write("test_stats.py", TEST.format(fn=fn, cases=cases, cls=fn.capitalize()))
    draft(a, f"test_stats.py: {len(cases)} cases, README.md still to do", ["test_stats.py"])
    add_readme_line(files, "## Tests", "Run `python3 -m unittest -v test_stats`.")
    return ["test_stats.py", "README.md"], f"test_stats.py: {len(cases)} cases for {fn}()"


def write_docs(a, d, job, files):
    src = files.read(job.get("module", "stats.py")) or ""
    funcs = re.findall(r'^def (\w+)\((.*?)\):\n\s+"""(.*?)(?:"""|\n)', src, re.M)
    readme = files.read("README.md") or "# stats\n"
    head = readme.split("\n## ", 1)[0].rstrip("\n")
    out = [head, "", "## Functions", ""]
    out += [f"- `{name}({args})`: {doc.strip()}" for name, args, doc in funcs]
    tests = files.read("test_stats.py")
    result = files.run("python3 -m unittest test_stats") if tests is not None else None
    if tests is not None:
        out += ["", "## Tests", "", "Run `python3 -m unittest -v test_stats`"
                + (f" (when documented: {'passing' if result[0] == 0 else 'FAILING'})." if result else ".")]
    files.write("README.md", "\n".join(out) + "\n")
    if result:
        log("tests:", "exit", result[0], result[1].strip().splitlines()[-1:] if result[1] else "")
    return ["README.md"], f"README.md documents {len(funcs)} functions" + (" and the tests" if tests else "")


KINDS = {"add_function": add_function, "write_test": write_test, "write_docs": write_docs}


def hold(a):
    """Until the run stops this agent (its workspace closed): log what still comes."""
    try:
        while True:
            kind, obj = a.next_event()
            log("after completion:", kind, obj.get("type"), obj.get("payload", obj.get("reason", "")))
    except EOFError:
        pass


def main():
    a = Agent()
    a.initialize("worker.py", "1.0")
    me = a.self_info()
    log("workspace", me["workspace_id"], "role", me["role"], "parent", me["parent"])
    d = a.next_envelope(timeout=WAIT)
    if d is None:
        a.emit("failed", reason=f"no directive within {WAIT} s")
        return 1
    job = d.get("payload") if isinstance(d.get("payload"), dict) else {}
    log("directive", d["envelope_id"], "kind", job.get("kind"), "task", job.get("task"))
    files = Files(a)
    try:
        work = KINDS.get(job.get("kind"))
        if work is None:
            raise RuntimeError(f"no such kind of work: {job.get('kind')!r}")
        changed, summary = work(a, d, job, files)
        cp = a.checkpoint(intent=summary, files=changed, payload={"task": job.get("task"), "kind": job.get("kind")})
        log("checkpoint", cp["checkpoint_id"], "files", " ".join(f["path"] for f in cp.get("files", [])))
        a.emit("complete", reason=summary)
        log("complete:", summary)
    except (ToolError, WacpError, RuntimeError) as e:
        log("failed:", e)
        a.emit("failed", reason=str(e)[:300])
    hold(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
