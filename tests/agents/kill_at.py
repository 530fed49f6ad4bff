#!/usr/bin/env python3
"""tests/agents/kill_at.py: kill a supervisor at a chosen point of its trail, by its pid.

    kill_at.py DB QUERY K OUT ERR CMD...

Starts CMD (a `corral run`; python is up before it starts, so the poll keeps pace with it) with
stdout to OUT and stderr to ERR ("-": /dev/null), polls the trail DB read-only every 2 ms with
QUERY (one number: a count, or 0/1 for a condition), and SIGKILLs CMD's process the moment the
number reaches K. Prints the last number seen (less than K: CMD ended first) and CMD's pid.
The crash tests (run_crash, run_resume_*) share it: the kill is polled, never slept."""
import sqlite3
import subprocess
import sys
import time

db, query, k, out, err, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
sink = lambda path: subprocess.DEVNULL if path == "-" else open(path, "w")
p = subprocess.Popen(cmd, stdout=sink(out), stderr=sink(err), stdin=subprocess.DEVNULL)
n = 0
while p.poll() is None:
    try:
        c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
        n = c.execute(query).fetchone()[0] or 0
        c.close()
    except sqlite3.Error:
        pass  # not created yet, or busy: asked again
    if n >= k:
        p.kill()  # SIGKILL, by pid, at once
        break
    time.sleep(0.002)
p.wait()
print(n, p.pid)
