#!/bin/sh
# tests/e2e/run_resume_quarantine.sh: WACP recovery spec 3.1 "non-critical corruption". A
# `corral run` (a coordinator and three workers) is SIGKILLed halfway; one entry of its trail is
# then damaged with the sqlite3 CLI, its stored hash kept (so the links around it still hold):
# - a tool_call's body: `corral run --resume` quarantines it, finishes the run (the files equal an
#   uncrashed run's), `recovery_completed` counts and names it, and `corral trail verify` still
#   says the trail is damaged there (and nowhere else), also after the resumed run appended to it;
# - a workspace_state_changed's body: refused, naming the entry and why;
# - a workspace_state_changed relabelled tool_call: refused (its workspace's states no longer chain);
# - a prev_hash changed (a broken link): refused.
# Nothing is resumed from a refused trail.
. "$TOP/tests/lib.sh"
A=$TOP/tests/agents/crash_agent.py
SDK=$TOP/sdk/corral_agent.py
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
PY
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
expect_status "the uncrashed run ends well" 0 "$rc" "$err"
total=$("$CORRAL" trail --db "$ref/t.db" --json | wc -l)

# ---- a run killed once a worker's tool calls are in the trail (polled, not slept)
d=$T_TMP/q
fresh "$d"
# The poller starts the run itself and SIGKILLs it by pid the moment the trail holds K entries
# and two tool calls that recorded files and a workspace changed state twice (python is up before
# corral starts: it keeps pace).
python3 "$TOP/tests/agents/kill_at.py" "$d/t.db" "select (select count(*) from entries) >= $((total / 2))
    and (select count(*) from entries where type = 'tool_call' and workspace is not null and body like '%\"outcome\"%' and body like '%\"files\"%') >= 2
    and (select count(*) from (select workspace from entries where type = 'workspace_state_changed' group by workspace having count(*) >= 2)) >= 1" \
    1 "$d/o" "$d/e" "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 120 >/dev/null
expect_match "the dead run left an unfinished run" 'holds an unfinished run' \
    "$("$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" 2>&1)"

# copy DB NAME: a copy of the dead run's trail (its WAL too), for one kind of damage
copy() {
    cp "$1" "$2"
    for f in "$1"-wal "$1"-shm; do [ -e "$f" ] && cp "$f" "$2${f#"$1"}"; done
}
# damage DB SQL: SQL run with the append-only trigger out of the way (put back after)
damage() {
    sqlite3 "$1" "DROP TRIGGER entries_no_update; $2;
        CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN
        SELECT RAISE(ABORT, 'the trail is append-only: UPDATE of entries is refused'); END;"
}
q() { sqlite3 "$1" "$2"; }
# A refused case must name an entry: never --resume a copy undamaged (it would run on the run
# directory the real resume below needs).
need() { [ -n "$2" ] || { fail "$1: no such entry in the dead run's trail"; exit 1; }; }
copy "$d/t.db" "$d/s.db"
copy "$d/t.db" "$d/m.db"
copy "$d/t.db" "$d/p.db"
run_seq=$(q "$d/t.db" "select max(seq) from entries where type = 'supervisor_started'")

# ---- a workspace_state_changed's body changed: critical, refused
sseq=$(q "$d/s.db" "select max(seq) from entries where type = 'workspace_state_changed' and seq > $run_seq")
need "a workspace_state_changed" "$sseq"
damage "$d/s.db" "UPDATE entries SET body = replace(body, '\"reason\":\"', '\"reason\":\"x') WHERE seq = $sseq"
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/s.db" --resume --timeout 120
expect_status "a damaged workspace_state_changed: --resume refuses (1)" 1 "$rc" "$err"
expect_match "... naming the entry, its recorded type and what to do" \
    "integrity check at entry $sseq \\(entry $sseq: hash does not match.*cannot be quarantined: entry $sseq is damaged and is recorded as workspace_state_changed, an entry the rebuilt run depends on. Nothing was resumed; restore the trail" "$err"
expect_status "... and resumed nothing" 0 "$(q "$d/s.db" "select count(*) from entries where type = 'recovery_completed'")"

# ---- a state change relabelled as a tool call: the states no longer chain without it, refused
mseq=$(q "$d/m.db" "select min(e.seq) from entries e where e.type = 'workspace_state_changed' and e.seq > $run_seq
    and exists (select 1 from entries f where f.type = 'workspace_state_changed' and f.workspace = e.workspace and f.seq > e.seq)")
need "a workspace_state_changed with a later one of its workspace" "$mseq"
damage "$d/m.db" "UPDATE entries SET type = 'tool_call' WHERE seq = $mseq"
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/m.db" --resume --timeout 120
expect_status "a state change relabelled tool_call: --resume refuses (1)" 1 "$rc" "$err"
expect_match "... its workspace's next state change starts from a state never reached" \
    "integrity check at entry $mseq .*cannot be quarantined: entry [0-9]+: workspace ws-[0-9a-f]+ changes state from" "$err"

# ---- a broken link: refused
# (one with an entry after it, whose link is broken: the dead run may have ended on a tool_call)
tseq=$(q "$d/p.db" "select max(seq) from entries where type = 'tool_call' and seq > $run_seq
    and seq < (select max(seq) from entries)")
need "a tool_call" "$tseq"
damage "$d/p.db" "UPDATE entries SET prev_hash = zeroblob(32) WHERE seq = $tseq + 1"
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/p.db" --resume --timeout 120
expect_status "a prev_hash changed: --resume refuses (1)" 1 "$rc" "$err"
expect_match "... naming the broken link" "integrity check at entry $((tseq + 1)) \\(entry $((tseq + 1)): prev_hash does not match.*nothing was resumed" "$err"

# ---- a tool_call's body changed (its stored hash kept): quarantined, the run finishes
cseq=$(q "$d/t.db" "select max(seq) from entries where type = 'tool_call' and workspace is not null
    and body like '%\"outcome\"%' and body like '%\"files\"%' and seq > $run_seq")
need "a tool_call that recorded files" "$cseq"
cid=$(q "$d/t.db" "select id from entries where seq = $cseq")
damage "$d/t.db" "UPDATE entries SET body = replace(body, '\"files\":[', '\"files\":[{\"path\":\"forged.txt\",\"removed\":true},') WHERE seq = $cseq"
run_capture out err rc "$CORRAL" trail verify --db "$d/t.db"
expect_status "the damaged trail fails corral trail verify (1)" 1 "$rc" "$out $err"
expect_match "... at that entry, its links intact, nothing else wrong" "^bad: entry $cseq: hash does not match.*
damaged: $cseq \\(content does not match the hash, the links around it hold\\)\$" "$out"
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 120
expect_status "--resume quarantines the damaged tool_call and finishes the run (0)" 0 "$rc" "$err"
expect_match "... saying so" "the trail verifies \\([0-9]+ entries\\) but for 1 damaged entry, quarantined .*: $cseq \\(tool_call\\)" "$err"
rec=$("$CORRAL" trail --db "$d/t.db" --json --type recovery_completed)
expect_match "... recovery_completed counts it" '"quarantined_entries":1' "$rec"
expect_match "... and names it (seq, id, recorded type, reason)" \
    "\"quarantined\":\\[\\{\"id\":\"$cid\",\"reason\":\"hash_mismatch\",\"seq\":$cseq,\"type\":\"tool_call\"" "$rec"
expect_status "... the files equal the uncrashed run's" 0 "$(diff -r "$ref/ws" "$d/ws" >"$d/diff" 2>&1; echo $?)" "$(head -5 "$d/diff")"
expect_match "... the task graph ended with its three tasks integrated" 'tasks t1=integrated t2=integrated t3=integrated' \
    "$(cat "$d"/runs/*/logs/*.log)"
run_capture out err rc "$CORRAL" trail verify --db "$d/t.db"
expect_status "after the resume, corral trail verify still fails (the damage stays on record)" 1 "$rc" "$out $err"
expect_match "... at the same entry only: the entries appended after it chain to it" "^bad: entry $cseq: hash does not match.*
damaged: $cseq \\(content does not match the hash, the links around it hold\\)\$" "$out"
