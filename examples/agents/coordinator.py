#!/usr/bin/env python3
"""examples/agents/coordinator.py: the WACP coordinator of `make demo` (sdk/corral_agent.py).

It splits one change to the project (add median() to stats.py) into a task graph:

    add-median (a C worker)    test-median (a Python worker)
              \\                  /
               document (a Python worker; depends on both)

creates a workspace per task with a directive, answers the workers' queries with feedback,
integrates each finished workspace into its own files (layered: a file both sides changed is a
content_overlap, which it resolves), optionally has a reviewer look at the result, and ends the
run with `complete`. It never writes a file itself: the coordinator role has no write authority.

    coordinator.py [sdk/corral_agent.py] [--add AGENT] [--test AGENT] [--docs AGENT] [--review AGENT]

AGENT: a policy's agent name (defaults: c-worker, py-worker, py-worker; no reviewer).
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
from corral_agent import Agent, WacpError  # noqa: E402

WAIT = 600  # seconds without any event before the coordinator gives up
POLL = 5    # seconds between looks at the children's states when nothing arrives

# What the directives leave open, and the answers it gives (feedback to a query).
ANSWERS = {
    "even_length": {"format": "json", "answer": "mean_of_middle",
                    "content": "the mean of the two middle values"},
    "cases": {"format": "json", "content": "odd, even, one element, unsorted with repeats",
              "cases": [[[3, 1, 2], 2], [[4, 1, 3, 2], 2.5], [[5], 5], [[7, 7, 1, 9, 7], 7]]},
}


def log(*args):
    print("coordinator:", *args, file=sys.stderr, flush=True)


def options():
    opts = {"--add": "c-worker", "--test": "py-worker", "--docs": "py-worker", "--review": None}
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg in opts and i + 1 < len(args):
            opts[arg] = args[i + 1]
    return opts


class Coordinator:
    def __init__(self, a, opts):
        self.a = a
        self.opts = opts
        self.tasks = {}      # name -> task id
        self.running = {}    # workspace id -> task name
        self.done = set()    # task names integrated
        self.failed = []     # (task name, reason)
        self.overlaps = []   # (task name, paths)

    def start(self, name, agent, payload):
        """A workspace for task NAME, running AGENT, with its directive."""
        payload = dict(payload, task=self.tasks.get(name), format="json")
        ws = self.a.create_workspace(agent, payload, task=self.tasks.get(name))
        self.running[ws["workspace_id"]] = name
        log(f"task {name}: workspace {ws['workspace_id']} ({agent}) {ws['state']}")

    def plan(self):
        t = self.a.task_create
        self.tasks["add-median"] = t("add-median", "add median(xs) to stats.py")["task_id"]
        self.tasks["test-median"] = t("test-median", "write test_stats.py for median()")["task_id"]
        self.tasks["document"] = t("document", "document the functions and the tests in README.md",
                                   depends_on=[self.tasks["add-median"], self.tasks["test-median"]])["task_id"]
        log("tasks:", ", ".join(f"{k}={v}" for k, v in self.tasks.items()))
        self.await_approval()
        self.start("add-median", self.opts["--add"], {
            "kind": "add_function", "module": "stats.py", "function": "median",
            "content": "Add median(xs) to stats.py and list it in README.md."})
        self.start("test-median", self.opts["--test"], {
            "kind": "write_test", "module": "stats.py", "function": "median",
            "content": "Write test_stats.py for median(xs) with unittest; say how to run it in README.md."})

    def await_approval(self):
        """Under a task_approval gate the tasks are drafts until a person (or the gate's
        timeout) decides: wait for that; a rejected (cancelled) task is a failure."""
        import time
        said = False
        while True:
            st = {t["task_id"]: t["status"] for t in self.a.task_list()}
            mine = [st.get(i) for i in self.tasks.values()]
            if "cancelled" in mine:
                raise SystemExit("coordinator: a task of the plan was rejected")
            if "draft" not in mine:
                return
            if not said:
                log("the plan waits for approval: corral gate list")
                said = True
            time.sleep(0.5)

    def on_query(self, env):
        q = env.get("payload") if isinstance(env.get("payload"), dict) else {}
        ans = ANSWERS.get(q.get("question"), {"format": "json", "content": "no answer to that: use your judgement"})
        self.a.reply(env, "feedback", ans)
        log(f"query from {env['from']} ({q.get('question')}) answered: {ans['content']}")

    def integrate(self, ws):
        name = self.running.pop(ws)
        r = self.a.integrate(ws, "accept", strategy="layered")
        if r["state"] == "conflicted":
            paths = [c.get("path") for c in r.get("conflicts", [])]
            self.overlaps.append((name, paths))
            log(f"task {name}: content_overlap on {', '.join(paths)}; keeping our version of those "
                "(the document task rewrites README.md from both)")
            r = self.a.resolve(ws, "coordinator_resolve", prefer="parent")
        log(f"task {name}: integrated ({r['state']}), files: {', '.join(r.get('files_applied', [])) or '-'}")
        if r["state"] == "closed":
            self.done.add(name)
        else:
            self.failed.append((name, f"integration ended {r['state']}"))

    def on_signal(self, sig):
        ws, kind = sig.get("from"), sig.get("type")
        if ws not in self.running:
            return
        name = self.running[ws]
        if kind == "complete":
            log(f"task {name}: complete ({sig.get('reason')})")
            self.integrate(ws)
        elif kind == "failed":
            self.running.pop(ws)
            self.failed.append((name, sig.get("reason")))
            log(f"task {name}: FAILED: {sig.get('reason')}")
        elif kind == "checkpoint":
            log(f"task {name}: checkpoint {sig.get('ref')}")

    def next_step(self):
        """Starts what the graph allows now."""
        if {"add-median", "test-median"} <= self.done and not self.docs_started():
            if self.opts["--review"]:
                self.start("review", self.opts["--review"], {
                    "kind": "review", "files": ["stats.py", "test_stats.py"],
                    "content": "Review stats.py and test_stats.py; report to the coordinator."})
            self.start("document", self.opts["--docs"], {
                "kind": "write_docs", "module": "stats.py",
                "content": "Document every function of stats.py and how to run the tests in README.md."})

    def docs_started(self):
        return "document" in self.done or "document" in self.running.values()

    def check_running(self):
        """A child whose agent died is failed by the runtime; look, in case no signal said so."""
        states = {w["workspace_id"]: w["state"] for w in self.a.workspaces()}
        for ws, name in list(self.running.items()):
            if states.get(ws) == "failed":
                self.running.pop(ws)
                self.failed.append((name, "its workspace failed"))
                log(f"task {name}: workspace {ws} FAILED")

    def run(self):
        self.plan()
        quiet = 0.0
        while self.running and not self.failed:
            ev = self.a.next_event(timeout=POLL)
            if ev is None:
                quiet += POLL
                self.check_running()
                if quiet >= WAIT:
                    self.failed.append(("-", f"nothing happened for {WAIT} s"))
                continue
            quiet = 0.0
            kind, obj = ev
            if kind == "envelope" and obj.get("type") == "query":
                self.on_query(obj)
            elif kind == "envelope":
                log(f"{obj.get('type')} from {obj.get('from')}: {str(obj.get('payload'))[:200]}")
            else:
                self.on_signal(obj)
            self.next_step()


def main():
    a = Agent()
    a.initialize("coordinator.py", "1.0")
    me = a.self_info()
    log("workspace", me["workspace_id"], "owner", me.get("owner"), "state", me.get("state"))
    if me.get("state") == "idle":  # the run's first envelope (from the human) makes it active
        d = a.next_envelope(timeout=60)
        log("first envelope:", d and d.get("type"), d and str(d.get("payload"))[:200])
    c = Coordinator(a, options())
    try:
        c.run()
    except WacpError as e:
        c.failed.append(("-", str(e)))
        log("refused:", e)
    for t in a.task_list():
        log(f"task {t['name']}: {t['status']} (workspaces: {', '.join(t.get('workspace_history') or []) or '-'})")
    if c.failed:
        reason = "; ".join(f"{n}: {r}" for n, r in c.failed)[:380]
        log("ending failed:", reason)
        a.emit("failed", reason=reason)
    else:
        summary = (f"{len(c.done)} tasks integrated"
                   + (f", {len(c.overlaps)} overlap(s) resolved" if c.overlaps else ""))
        log("complete:", summary)
        a.emit("complete", reason=summary)
    try:  # until the run stops this agent
        while a.next_event() is not None:
            pass
    except EOFError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
