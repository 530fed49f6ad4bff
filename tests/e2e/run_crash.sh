#!/bin/sh
# tests/e2e/run_crash.sh: `corral run` SIGKILLed at many points of a session (a coordinator and
# three workers: a task graph, files written, checkpoints, envelopes, signals, integrations), then
# `corral run --resume` finishes it. Kill points are chosen by trail entry count (the trail is
# polled), spread over an uncrashed run's length, not by sleeps. After each: the resume ends
# well (0), `corral trail verify` is ok, the project's files equal the uncrashed run's, the
# recovery is recorded once (recovery_completed, after the resumed supervisor_started), every
# restarted agent was told (wacp/recovered), no agent was handed one envelope twice unless the
# dead run had not recorded its acknowledgment, and no process or cgroup of the dead run is left.
# One point kills the resumer too and resumes twice. No object id is made twice, and each resume's
# first entry is after the last one before it (the clock). One workspace's file is changed while the
# supervisor is dead: that workspace is failed (recovery_files_mismatch), the coordinator redoes
# it, the result is still right.
# CRASH_POINTS (default 4) sets how many kill points; `make crash-test` runs 50.
. "$TOP/tests/lib.sh"
A=$TOP/tests/agents/crash_agent.py
SDK=$TOP/sdk/corral_agent.py
points=${CRASH_POINTS:-4}
python3 - "$T_TMP/policy.json" "$A" "$SDK" <<'PY'
import json, sys
out, agent, sdk = sys.argv[1:4]
ag = lambda *a: {"binary": "/usr/bin/python3", "args": ["-u", agent, *a, sdk]}
agents = {"coord": dict(ag("coord", "3"), role="coordinator")}
for k in (1, 2, 3):
    agents["w%d" % k] = dict(ag("worker"), role="worker")
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "128M", "pids": 32, "wall_time": "2m"}}},
           "agents": agents}, open(out, "w"), indent=1)
agents["coord"]["env"] = {"CRASH_HOLD": "1"}  # w1's first attempt holds after its final checkpoint
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "128M", "pids": 32, "wall_time": "2m"}}},
           "agents": agents}, open(out.replace(".json", "_hold.json"), "w"), indent=1)
PY
# crash DB K OUT ERR CMD...: CMD killed by its pid once the trail DB holds K entries
# (tests/agents/kill_at.py); prints the count it saw (less than K: the run ended first) and the
# dead supervisor's pid.
crash() { db=$1 k=$2 o=$3 e=$4; shift 4; python3 "$TOP/tests/agents/kill_at.py" "$db" "select count(*) from entries" "$k" "$o" "$e" "$@"; }
# check.py DB LOGDIR: envelopes handed twice to one agent only when the dead run never recorded
# the ack; every agent started by a resume logged "recovered". Prints problems, nothing if none.
cat >"$T_TMP/check.py" <<'PY'
import glob, json, sqlite3, sys
db, logs = sys.argv[1], sys.argv[2]
c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
rows = c.execute("select seq, type, body from entries where type in "
                 "('supervisor_started','envelope_delivered','recovery_completed')").fetchall()
starts = [s for s, t, b in rows if t == "supervisor_started" and json.loads(b).get("resumed")]
acked = {}  # envelope id -> seq of its recorded acknowledgment
for s, t, b in rows:
    if t == "envelope_delivered":
        acked.setdefault(json.loads(b)["envelope_id"], s)
rec = [s for s, t, b in rows if t == "recovery_completed"]
bad = []
# A resume killed inside its recovery has none; the last one (it finished the run) has one.
if not starts or not rec or rec[-1] < starts[-1]:
    bad.append("the last resume recorded no recovery_completed (%s resumes, %s)" % (starts, rec))
for r in rec:
    if not any(st < r for st in starts):
        bad.append("recovery_completed %d before any resume" % r)
for f in glob.glob(logs + "/*.log"):
    lives, cur = [], []
    for line in open(f, errors="replace"):
        if line.startswith("recovered "):
            lives.append(cur)
            cur = []
        if line.startswith("got "):
            cur.append(line.split()[1])
    lives.append(cur)
    seen = {}
    for i, life in enumerate(lives):
        for e in life:
            if life.count(e) > 1:
                bad.append("%s: %s handed twice in one life" % (f, e))
            if e in seen and seen[e] != i and i > 0:
                # handed again after a restart: only if no ack was recorded before that restart
                if e in acked and acked[e] < starts[min(i, len(starts)) - 1]:
                    bad.append("%s: %s was acknowledged yet handed again" % (f, e))
            seen.setdefault(e, i)
# Ids never reused (recovery spec 3.5, PROTOCOL ids): each object is created by one entry, across
# the dead run and its resumes; and every resume's first entry is after the dead run's last.
made = {"workspace_created": "workspace_id", "envelope_created": "envelope_id",
        "checkpoint_created": "checkpoint_id", "signal_emitted": "signal_id",
        "task_created": "task_id", "gate_triggered": "gate_id"}
ids = {}
for s, t, b, ts in c.execute("select seq, type, body, ts from entries"):
    k = made.get(t)
    v = json.loads(b).get(k) if k else None
    if v is not None:
        if v in ids:
            bad.append("%s %s made twice (entries %d and %d)" % (k, v, ids[v], s))
        ids[v] = s
    if t == "supervisor_started" and json.loads(b).get("resumed"):
        prev = c.execute("select max(ts) from entries where seq < ?", (s,)).fetchone()[0]
        if prev is not None and ts <= prev:
            bad.append("the resume's supervisor_started (entry %d) is not after the last entry" % s)
print("\n".join(sorted(set(bad))))
PY
cgroups_of() { find /sys/fs/cgroup -maxdepth 6 -type d -name "corral-$1-*" 2>/dev/null; }
procs_of_dead() { # the dead run's agents: still in its cgroups
    for d in $(cgroups_of "$1"); do cat "$d/cgroup.procs" 2>/dev/null; done
}

# fresh DIR: a project directory and nothing else
fresh() {
    rm -rf "$1"
    mkdir -p "$1/ws"
    echo base >"$1/ws/base.txt"
    chown -R 65534:65534 "$1/ws"
}

# ---- the uncrashed run: the reference
ref=$T_TMP/ref
fresh "$ref"
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$ref/ws" --trail "$ref/t.db" --timeout 120
expect_status "the uncrashed run ends well" 0 "$rc" "$err" "$(cat "$ref"/runs/*/logs/*.log 2>/dev/null | tail -30)"
total=$("$CORRAL" trail --db "$ref/t.db" --json | wc -l)
expect_match "... its three tasks integrated" 'tasks t1=integrated t2=integrated t3=integrated' "$(cat "$ref"/runs/*/logs/*.log)"
expect_match "... and writes the three workers' files" 'line 3 of the work' "$(cat "$ref/ws/f3.txt" 2>/dev/null)"

# crash_once DIR K [K2]: a run killed at K entries (its resumer too at K2), resumed to the end.
# Prints the problems found; nothing when all is well.
crash_once() {
    d=$1 k=$2 k2=${3:-}
    fresh "$d"
    crash "$d/t.db" "$k" "$d/o" "$d/e" \
        "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 120 >"$d/n"
    read -r n pid <"$d/n"
    [ "$n" -ge "$k" ] || echo "the run ended at $n entries, before the kill point $k"
    if [ -n "$k2" ]; then
        # "+N": N entries past what the dead run committed (+1: the resume's own start, so the
        # resumer dies inside its recovery or right after it). What it committed may be partly in
        # the trail's ahead log: applied first, as the resumer would.
        "$CORRAL" trail apply --db "$d/t.db" >/dev/null || echo "corral trail apply failed"
        case $k2 in +*) k2=$(($("$CORRAL" trail --db "$d/t.db" --json | wc -l) ${k2})) ;; esac
        crash "$d/t.db" "$k2" "$d/o1" "$d/e1" \
            "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 120 >"$d/n2"
        read -r n2 pid2 <"$d/n2"
        [ "$n2" -ge "$k2" ] || echo "the first resume ended at $n2 entries, before its kill point $k2"
    fi
    "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 120 >"$d/o2" 2>"$d/e2"
    r=$?
    [ $r -eq 0 ] || echo "the resume ended with $r: $(tail -n 5 "$d/e2"; cat "$d"/runs/*/logs/*.log | tail -n 20)"
    "$CORRAL" trail verify --db "$d/t.db" 2>&1 | grep -q '^ok' || echo "the trail does not verify"
    diff -r "$ref/ws" "$d/ws" >"$d/diff" 2>&1 || echo "the files differ from the uncrashed run's: $(head -5 "$d/diff")"
    python3 "$T_TMP/check.py" "$d/t.db" "$(ls -d "$d"/runs/*/logs)"
    grep -qs 'tasks t1=integrated t2=integrated t3=integrated' "$d"/runs/*/logs/*.log ||
        echo "the task graph did not end with its three tasks integrated"
    # The coordinator lives to the run's end: it must have been told of each recovery it lived
    # through (a worker may be stopped before it reads its notice: not counted).
    root=$("$CORRAL" trail --db "$d/t.db" --json --type workspace_created | head -1 |
        python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["workspace"])')
    n_rec=$(grep -c '^recovered ' "$d/runs/"*"/logs/$root.log")
    n_res=$("$CORRAL" trail --db "$d/t.db" --json --type recovery_completed | wc -l)
    [ "$n_rec" -ge 1 ] && [ "$n_rec" -le "$n_res" ] ||
        echo "the coordinator logged wacp/recovered $n_rec times over $n_res recoveries"
    for p in $pid ${pid2:-}; do
        [ -z "$(procs_of_dead $p)" ] || echo "a process of the dead run $p is left"
        [ -z "$(cgroups_of $p)" ] || echo "a cgroup of the dead run $p is left: $(cgroups_of $p)"
    done
    pid2=
}

# Kill points spread over the uncrashed run's entries (a crashed run writes about as many).
i=0
while [ $i -lt "$points" ]; do
    # up to 85% of the reference: a run's length varies a little with the agents' timing
    if [ "$points" -gt 1 ]; then k=$((4 + i * (total * 85 / 100 - 4) / (points - 1))); else k=$((total / 2)); fi
    probs=$(crash_once "$T_TMP/c$i" "$k")
    if [ -z "$probs" ]; then ok "killed at entry $k of ~$total: the resume finishes the run, same files, trail verifies, no leftovers"
    else fail "killed at entry $k of ~$total" "$probs"; fi
    rm -rf "$T_TMP/c$i"
    i=$((i + 1))
done

# The resumer dies too, inside its recovery (or just after): resumed again, same result.
k=$((total / 3))
probs=$(crash_once "$T_TMP/twice" "$k" "+1")
if [ -z "$probs" ]; then ok "killed at entry $k, its resumer killed at its first entry: a second resume finishes the run the same"
else fail "killed at $k and its resumer at its first entry" "$probs"; fi
expect_status "... two resumes took the run over" 2 "$("$CORRAL" trail --db "$T_TMP/twice/t.db" --json --type supervisor_started | grep -c '"resumed":true')"
# ... and once more with the resumer killed 40 entries into the resumed run
probs=$(crash_once "$T_TMP/twice2" "$((total / 2))" "+40")
if [ -z "$probs" ]; then ok "killed at entry $((total / 2)), its resumer 40 entries later: a second resume finishes the run the same"
else fail "killed at $((total / 2)) and its resumer 40 entries later" "$probs"; fi

# A workspace's file changed while the supervisor was dead: that workspace is failed, not trusted.
d=$T_TMP/tamper
fresh "$d"
"$CORRAL" run "$T_TMP/policy_hold.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 120 >"$d/o" 2>"$d/e" &
pid=$!
i=0
while ! grep -qs 'holding after the final checkpoint' "$d"/runs/*/logs/*.log && [ $i -lt 600 ]; do
    sleep 0.05
    i=$((i + 1))
done
# The worker logs only once its final checkpoint's answer came, i.e. after its commit.
kill -KILL $pid
wait $pid 2>/dev/null
w1=$(grep -l 'holding after the final checkpoint' "$d"/runs/*/logs/*.log | head -1)
w1=$(basename "$w1" .log)
echo "changed while corral was down" >"$(ls -d "$d"/runs/*)/ws/$w1/f1.txt"
run_capture out err rc "$CORRAL" run "$T_TMP/policy_hold.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 120
expect_status "a workspace's file changed while corral was down: the resume still ends well" 0 "$rc" "$err"
expect_match "... that workspace failed with a clear reason" "\"workspace_id\":\"$w1\".*\"reason\":\"recovery_files_mismatch: f1.txt\"|\"reason\":\"recovery_files_mismatch: f1.txt\".*\"workspace_id\":\"$w1\"" \
    "$("$CORRAL" trail --db "$d/t.db" --json --type workspace_state_changed)"
expect_match "... its parent, restarted, was told by a failed signal" "signal failed $w1 recovery_files_mismatch: f1.txt" "$(cat "$d"/runs/*/logs/*.log)"
expect_match "... counted in recovery_completed" '"workspaces_failed":1' "$("$CORRAL" trail --db "$d/t.db" --json --type recovery_completed)"
expect_status "... the coordinator redid it: the files equal the uncrashed run's" 0 "$(diff -r "$ref/ws" "$d/ws" >/dev/null 2>&1; echo $?)"
expect_match "... the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$d/t.db" 2>&1)"

# An envelope too large for a trail entry (its payload named by hash only), unacknowledged when
# the supervisor died: the resume cannot rebuild it, so it records it undeliverable and tells the
# sender, rather than drop it in silence or deliver something else.
d=$T_TMP/big
fresh "$d"
python3 - "$T_TMP/policy.json" "$d/policy.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
args = p["agents"]["coord"]["args"]
p["agents"]["coord"]["args"] = [args[0], args[1], "big", args[-1]]
p["agents"]["w1"]["args"] = [args[0], args[1], "deaf", args[-1]]
json.dump(p, open(sys.argv[2], "w"), indent=1)
PY
"$CORRAL" run "$d/policy.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 120 >"$d/o" 2>"$d/e" &
pid=$!
i=0
while ! grep -qs 'sent-big' "$d"/runs/*/logs/*.log && [ $i -lt 600 ]; do
    sleep 0.05
    i=$((i + 1))
done
kill -KILL $pid
wait $pid 2>/dev/null
# What the dead run acknowledged may be in the trail's ahead log still: applied, as a resume would.
"$CORRAL" trail apply --db "$d/t.db" >/dev/null
expect_match "a 600 KiB envelope's entry names its payload by hash" '"payload_blake2b":"[0-9a-f]{64}","payload_bytes":6[0-9]{5}' \
    "$("$CORRAL" trail --db "$d/t.db" --json --type envelope_created)"
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
expect_match "... unacknowledged at the crash, the resume records it undeliverable" '"reason":"payload_lost_in_crash"' \
    "$("$CORRAL" trail --db "$d/t.db" --json --type envelope_undeliverable)"
expect_match "... and its sender, restarted, is told (a failed signal)" 'signal failed ws-[0-9a-f]+ payload_lost_in_crash' \
    "$(cat "$d"/runs/*/logs/*.log)"
