#!/usr/bin/env python3
"""tests/agents/crash_agent.py: a coordinator and its workers that survive `corral run --resume`
(tests/e2e/run_crash.sh). Each decides from the run's recorded state, never from memory, so a
restart (told by wacp/recovered) picks the work up wherever the supervisor died.

    crash_agent.py coord N SDK     creates workers w1..wN (one policy agent each), integrates each
                                   one's final checkpoint when it is integrating, recreates a
                                   worker that failed, and closes the run when all are closed
    crash_agent.py big SDK         creates w1 and sends it one 600 KiB envelope
    crash_agent.py deaf SDK        acknowledges nothing (w1 of `big`)
    crash_agent.py worker SDK      writes f<k>.txt (k from its directive) in two steps with a
                                   provisional checkpoint between, reports to the coordinator
                                   with a query envelope, checkpoints final and signals complete

Every envelope an agent is handed is logged ("got ENVELOPE_ID"), so the test can check that none
is handed to the same agent twice within one life; every restart logs "recovered".
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[-1])))
from corral_agent import Agent, WacpError  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def pump(a, timeout):
    """Handles what arrives for TIMEOUT seconds at most: logs envelopes and the recovery notice,
    returns on the first event."""
    ev = a.next_event(timeout, ("envelope", "signal", "recovered"))
    if ev and ev[0] == "envelope":
        log("got", ev[1]["envelope_id"], ev[1]["type"])
    if ev and ev[0] == "signal":
        log("signal", ev[1].get("type"), ev[1].get("from"), ev[1].get("reason"))
    if ev and ev[0] == "recovered":
        log("recovered", ev[1].get("workspace_id"), ev[1].get("state"))
    return ev


def coordinator(a, n):
    while True:
        tasks = {t["name"]: t for t in a.task_list()}
        for k in range(1, n + 1):
            if "t%d" % k not in tasks:
                tasks["t%d" % k] = a.task_create("t%d" % k, description="file f%d.txt" % k)
        kids = {}
        for w in a.workspaces():
            if w.get("parent"):
                kids.setdefault(w["agent"], []).append(w)
        closed = 0
        for k in range(1, n + 1):
            name = "w%d" % k
            mine = kids.get(name, [])
            last = mine[-1] if mine else None
            if any(w["state"] == "closed" for w in mine):
                closed += 1
                continue
            if last is None or last["state"] == "failed":
                if len(mine) >= 3:  # attempts counted from the run's state, not from memory
                    log("giving up on", name)
                    a.emit("failed", reason="worker %s failed 3 times" % name)
                    return
                hold = k == 1 and not mine and os.environ.get("CRASH_HOLD") == "1"
                r = a.create_workspace(name, {"k": k, "text": "line %d of the work\n" % k, "hold": hold},
                                       task=tasks["t%d" % k]["task_id"])
                log("created", name, r["workspace_id"])
            elif last["state"] == "integrating":
                try:
                    r = a.integrate(last["workspace_id"])
                    log("integrated", name, r.get("state"))
                except WacpError as e:
                    log("integrate", name, "refused:", e)
        if closed == n:
            break
        pump(a, 0.2)
    while pump(a, 0) is not None:  # what is queued, logged (the test reads the signals)
        pass
    log("all integrated; tasks", " ".join(sorted(t["name"] + "=" + t["status"] for t in a.task_list())))
    a.emit("complete")
    while pump(a, 60) is not None or True:
        pass


def write(a, path, content):
    try:
        a.call("readFile", path=path)  # an overwrite needs a read first (the tool gate)
    except Exception:
        pass
    a.call("writeFile", path=path, content=content)


def worker(a):
    me = a.self_info()
    if me["state"] == "idle":
        pump(a, 60)  # the directive: acked on arrival, which makes the workspace active
        me = a.self_info()
    d = me.get("directive") or {}
    k, text = d.get("k"), d.get("text", "")
    cps = a.checkpoints() if me["state"] == "active" else []
    path = "f%s.txt" % k
    if me["state"] != "active":
        log("nothing to do in state", me["state"])
    elif cps and cps[-1].get("status") == "final":
        a.emit("complete")  # recovered after its final checkpoint: only the signal was missing
        log("complete (recovered)", path)
    else:
        write(a, path, text)
        a.checkpoint("half of it", status="provisional", files=[path])
        write(a, path, text + "done\n")
        a.send(me["parent"], "query", {"format": "text", "content": "wrote %s" % path})
        a.checkpoint("all of it", status="final", files=[path])
        if d.get("hold"):
            log("holding after the final checkpoint")  # the test kills the run here
        else:
            a.emit("complete")
            log("complete", path)
    while True:
        try:
            pump(a, 60)
        except EOFError:
            return


def big_sender(a):
    """A 600 KiB envelope to a worker that never reads (too large for the trail's entry)."""
    if a.recovered is None:
        pump(a, 60)  # the run's start
        r = a.create_workspace("w1", {"k": 1})
        a.send(r["workspace_id"], "directive", {"blob": "x" * (600 << 10)})
        log("sent-big")
    while True:
        pump(a, 60)


def main():
    a = Agent()
    if sys.argv[1] == "deaf":
        a.drop_envelopes = 1 << 30  # nothing it is sent is ever acknowledged
        a.initialize("crash-deaf")
        log("deaf")
        while True:
            time.sleep(60)
    a.initialize("crash-" + sys.argv[1])
    try:
        if sys.argv[1] == "coord":
            coordinator(a, int(sys.argv[2]))
        elif sys.argv[1] == "big":
            big_sender(a)
        else:
            worker(a)
    except EOFError:
        pass


main()
