#!/bin/sh
# tests/e2e/run_resume_attack.sh: `corral run --resume` against bad luck and hostile input.
# - A supervisor that was pid 1 of its pid namespace (a container) and died: the next corral in
#   a new namespace is pid 1 too. Its own pid is not the dead run's: plain `corral run` still
#   refuses the unfinished run, and --resume takes it over (it used to say "still running").
#   While that supervisor lives, a resume from another namespace is refused: the live one holds
#   its run directory's flock.
# - --resume given what does not fit the dead run is refused before anything is recorded: another
#   --workspace (also the recorded path swapped for a link to it since), a policy without a live
#   workspace's role (it used to be left out of the rebuilt run, live forever in the trail), or
#   without its agent (it used to be failed); the right ones then resume it.
# - A trail another user planted (its directory theirs) is refused before it is read.
# - A worker's file whose name is cut inside a UTF-8 character in the reason
#   recovery_files_mismatch: the reason stays valid UTF-8 in the trail and in the `failed`
#   signal its parent's agent is sent.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
# policy OUT ROLE AGENT FILE: the coordinator creates one worker (agent AGENT, role ROLE), which
# writes FILE and holds.
policy() {
    python3 - "$@" "$S" <<'PY'
import json, sys
out, role, agent, name, script = sys.argv[1:6]
w = {"steps": ["tools/call " + json.dumps({"name": "writeFile", "arguments": {"path": name, "content": "w\n"}}),
               "@log:worker-wrote", "@hold"]}
coord = ["@envelope", "wacp/workspace.create " + json.dumps({"agent": "w", "directive": w}), "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {role: {"extends": "worker", "authority": {"write": True, "commands": False},
                            "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      agent: {"binary": script, "args": ["@directive"], "role": role}}},
          open(out, "w"), indent=1)
PY
}
policy "$T_TMP/p.json" builder w w.txt
policy "$T_TMP/norole.json" helper w w.txt
policy "$T_TMP/noagent.json" builder w2 w.txt
# the path: "a" and 20 two-byte characters; 36 bytes of it end inside the 18th
policy "$T_TMP/utf8.json" builder w "a$(python3 -c 'print("\u00e9" * 20, end="")').txt"

# worker_wrote DIR: waits (bounded) until the worker logged its write (its entries committed)
worker_wrote() {
    i=0
    while ! grep -qs '^# worker-wrote' "$1"/runs/*/logs/*.log && [ $i -lt 600 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}
fresh() {
    rm -rf "$1"
    mkdir -p "$1/ws"
    chown -R 65534:65534 "$1/ws"
}
starts() { "$CORRAL" trail --db "$1" --json --type supervisor_started | wc -l; }

# ---- pid 1 of a pid namespace, twice
d=$T_TMP/ns
fresh "$d"
NS="unshare --pid --fork --mount-proc --kill-child"
$NS "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 60 >"$d/out" 2>"$d/err" &
up=$!
worker_wrote "$d"
# While it lives, a resume from another namespace (pid 1 there too) finds its run directory held.
run_capture out err rc $NS "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
expect_status "--resume of a live run, from another pid namespace, is refused (2)" 2 "$rc" "$err"
expect_match "... its supervisor is still running (it holds its run directory)" 'supervisor is still running' "$err"
expect_status "... and records nothing" 1 "$(starts "$d/t.db")"
sup=$(pgrep -P $up)
[ -n "$sup" ] && kill -KILL "$sup"
wait $up 2>/dev/null
expect_match "a run that is pid 1 of its namespace records pid 1" '"pid":1,' "$("$CORRAL" trail --db "$d/t.db" --json --type supervisor_started)"
run_capture out err rc $NS "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 3
expect_status "after it died, plain run in a new namespace (pid 1 again) refuses (2)" 2 "$rc" "$err"
expect_match "... saying its supervisor died, pointing at --resume" 'holds an unfinished run .*supervisor died.*--resume' "$err"
expect_status "... and starts no run on top of it" 1 "$(starts "$d/t.db")"
run_capture out err rc $NS "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
expect_match "--resume in a new namespace (pid 1 again) takes the run over" '2 workspaces recovered, 0 failed' "$err"
expect_nomatch "... not taking itself for the dead supervisor" 'still running' "$err"

# ---- what does not fit the dead run: refused, nothing recorded
d=$T_TMP/fit
fresh "$d"
mkdir -p "$d/other"
"$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 60 >"$d/out" 2>"$d/err" &
pid=$!
worker_wrote "$d"
kill -KILL $pid
wait $pid 2>/dev/null
run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$d/other" --trail "$d/t.db" --resume --timeout 3
expect_status "--resume with another --workspace is refused (2)" 2 "$rc" "$err"
expect_match "... naming the run's own" "project directory is $d/ws \\(recorded in the trail\\), not --workspace $d/other" "$err"
# the recorded path swapped for a link to another directory, which is given
mv "$d/ws" "$d/ws.real"
ln -s "$d/other" "$d/ws"
run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$d/other" --trail "$d/t.db" --resume --timeout 3
expect_status "--resume where the recorded directory became a link to the given one is refused (2)" 2 "$rc" "$err"
rm "$d/ws"
mv "$d/ws.real" "$d/ws"
run_capture out err rc "$CORRAL" run "$T_TMP/norole.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
expect_status "--resume with a policy without a live workspace's role is refused (2)" 2 "$rc" "$err"
expect_match "... naming the workspace, the role and the run's policy" "workspace ws-[0-9a-f]+ is live and policy $T_TMP/norole.json has no role builder .*started with policy $T_TMP/p.json" "$err"
run_capture out err rc "$CORRAL" run "$T_TMP/noagent.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
expect_status "--resume with a policy without a live workspace's agent is refused (2)" 2 "$rc" "$err"
expect_match "... naming the agent" "has no agent w for it" "$err"
expect_status "... none of them recorded anything" 1 "$(starts "$d/t.db")"
run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
expect_match "the right workspace and policy then resume both workspaces" '2 workspaces recovered, 0 failed' "$err"

# ---- a trail another user planted: refused before root's SQLite reads it (it used to be scanned
# for an unfinished run first, and only then refused)
d=$T_TMP/plant
fresh "$d"
"$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 60 >"$d/out" 2>"$d/err" &
pid=$!
worker_wrote "$d"
kill -KILL $pid
wait $pid 2>/dev/null
pl=$T_TMP/planted
mkdir -p "$pl" && cp "$d/t.db" "$pl/" && { [ ! -e "$d/t.db-wal" ] || cp "$d/t.db-wal" "$pl/"; }
chown -R 65534:65534 "$pl" && chmod 0755 "$pl"
run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$pl/t.db" --timeout 3
[ "$rc" -ne 0 ] && ok "a trail in a directory another user owns is refused (status $rc)" ||
    fail "a trail in a directory another user owns is refused" "status 0"
expect_match "... naming the owner" "the trail's directory $pl: $pl is owned by uid 65534" "$err"
expect_nomatch "... before it is read (no word of the unfinished run it holds)" 'unfinished' "$err"
run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$pl/t.db" --resume --timeout 3
expect_match "... --resume too" "the trail's directory $pl: $pl is owned by uid 65534" "$err"
expect_status "... and nothing was recorded in it" 1 "$(starts "$pl/t.db")"

# ---- a reason cut inside a character
d=$T_TMP/utf8
fresh "$d"
"$CORRAL" run "$T_TMP/utf8.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 60 >"$d/out" 2>"$d/err" &
pid=$!
worker_wrote "$d"
kill -KILL $pid
wait $pid 2>/dev/null
for f in "$d"/runs/*/ws/*/a*.txt; do echo changed >>"$f"; done
run_capture out err rc "$CORRAL" run "$T_TMP/utf8.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
expect_match "the worker whose file changed while corral was down is failed" '1 workspaces recovered, 1 failed' "$err"
bad=$(python3 - "$d/t.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
c.text_factory = bytes
for seq, t, b in c.execute("select seq, type, body from entries"):
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        print(seq, t.decode(), b[:120])
PY
)
expect_match "every trail entry is valid UTF-8 (the reason cut at a character's end)" '^$' "$bad"
expect_match "... the reason names the path, cut after its 17th whole character" "recovery_files_mismatch: a$(python3 -c 'print("\u00e9" * 17, end="")')\"" \
    "$("$CORRAL" trail --db "$d/t.db" --json --type workspace_state_changed)"
# the failed signal reached the coordinator inline (an agent's message goes to a blob when it is
# not UTF-8)
expect_match "... and the failed signal sent to the parent's agent is valid UTF-8" 'wacp/signal.*recovery_files_mismatch' \
    "$("$CORRAL" trail --db "$d/t.db" --json --type protocol_message)"

# ---- killed before it recorded any workspace: nothing to resume, and the trail stays usable
# (it used to be refused both ways: plain run said "resume it", --resume said "use another
# trail"). The kill lands when the trail holds the run's supervisor_started; a try whose root
# workspace was recorded first is made again (20 at most).
d=$T_TMP/early
tries=0 hit=
while [ $tries -lt 20 ] && [ -z "$hit" ]; do
    fresh "$d"
    python3 "$TOP/tests/agents/kill_at.py" "$d/t.db" "select count(*) from entries" 2 - - \
        "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 60 >/dev/null
    [ "$(sqlite3 "$d/t.db" "select count(*) from entries where type = 'workspace_created'")" = 0 ] &&
        [ "$(starts "$d/t.db")" = 1 ] && hit=1
    tries=$((tries + 1))
done
if [ -z "$hit" ]; then
    ok "SKIP killed before its first workspace: 20 tries, each killed after it (a loaded machine)"
else
    run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 3
    expect_status "killed before it recorded a workspace: --resume has nothing to resume (2)" 2 "$rc" "$err"
    expect_match "... and says to start it again on this trail" 'recorded no workspace before its supervisor died: nothing to resume; start it again without --resume on this trail' "$err"
    run_capture out err rc "$CORRAL" run "$T_TMP/p.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 3
    expect_nomatch "... and plain run starts a new run on that trail" 'unfinished run' "$err"
    expect_status "... (its second supervisor_started)" 2 "$(starts "$d/t.db")"
fi
