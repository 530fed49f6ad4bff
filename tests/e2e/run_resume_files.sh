#!/bin/sh
# tests/e2e/run_resume_files.sh: a workspace whose files on disk disagree with what the trail last
# recorded of them is failed by `corral run --resume` (recovery_files_mismatch: PATH), not
# trusted. Every write, edit, removal and directory made through the broker records how it left
# the path in its tool_call end entry (files: blake2b and bytes, removed, dir), on every surface;
# a command records files_unknown: what file tools wrote after it is checked, what came before
# it is taken as the command left it. Each case: a run SIGKILLed once both workers logged their
# work (their calls' entries committed), a change behind corral's back, then --resume.
. "$TOP/tests/lib.sh"
S=$AGENTS/wacp_script
python3 - "$T_TMP/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
call = lambda name, args: "tools/call " + json.dumps({"name": name, "arguments": args})
# w (wap): a file, a command, then a file written and edited after the command
w = {"steps": [call("writeFile", {"path": "a.txt", "content": "a1\n"}),
               call("executeCommand", {"command": "echo c >cmd.txt"}),
               call("writeFile", {"path": "b.txt", "content": "b1\n"}),
               call("modifyFile", {"path": "b.txt", "operations": [
                   {"type": "replace", "startLine": 1, "endLine": 1, "newContent": "b2"}]}),
               "@log:w-done", "@hold"]}
# v (voltagent): a directory, a file in it, a file written then deleted
v = {"steps": [call("mkdir", {"path": "/sub"}),
               call("write_file", {"file_path": "/sub/y.txt", "content": "y1\n"}),
               call("write_file", {"file_path": "/x.txt", "content": "x1\n"}),
               call("delete_file", {"file_path": "/x.txt"}),
               "@log:v-done", "@hold"]}
coord = ["@envelope", "wacp/workspace.create " + json.dumps({"agent": "w", "directive": w}),
         "wacp/workspace.create " + json.dumps({"agent": "v", "directive": v}), "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": True},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m"}},
                     "vworker": {"extends": "worker", "surface": "voltagent",
                                 "tools": {"read_before_write": []}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"},
                      "v": {"binary": script, "args": ["@directive"], "role": "vworker"}}},
          open(out, "w"), indent=1)
PY

# crashed DIR: a run SIGKILLed once both workers logged their work; sets ws_w, ws_v (their
# workspaces' directories) and id_w, id_v.
crashed() {
    rm -rf "$1"
    mkdir -p "$1/ws"
    chown -R 65534:65534 "$1/ws"
    "$CORRAL" run "$T_TMP/policy.json" --workspace "$1/ws" --trail "$1/t.db" --timeout 60 >"$1/out" 2>"$1/err" &
    pid=$!
    i=0
    while ! { grep -qs '^# w-done' "$1"/runs/*/logs/*.log && grep -qs '^# v-done' "$1"/runs/*/logs/*.log; } &&
        [ $i -lt 600 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    kill -KILL $pid
    wait $pid 2>/dev/null
    id_w=$(basename "$(grep -l '^# w-done' "$1"/runs/*/logs/*.log | head -1)" .log)
    id_v=$(basename "$(grep -l '^# v-done' "$1"/runs/*/logs/*.log | head -1)" .log)
    ws_w=$(ls -d "$1"/runs/*)/ws/$id_w
    ws_v=$(ls -d "$1"/runs/*)/ws/$id_v
}
# resumed DIR: --resume (the agents hold: the run ends by its --timeout); prints the failures
# recorded during the recovery as "ID REASON" lines.
resumed() {
    run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$1/ws" --trail "$1/t.db" --resume --timeout 2
    "$CORRAL" trail --db "$1/t.db" --json | python3 -c '
import json, sys
es = [json.loads(l) for l in sys.stdin]
rec = [e["seq"] for e in es if e["type"] == "recovery_completed"]
for e in es:
    b = e["body"]
    if rec and e["seq"] < rec[0] and e["type"] == "workspace_state_changed" and b.get("to") == "failed":
        print(b.get("workspace_id", e.get("workspace")), b.get("reason"))'
}

d=$T_TMP/same
crashed "$d"
ends=$("$CORRAL" trail --db "$d/t.db" --json --type tool_call)
h=$(printf 'b2\n' | b2sum -l 256 | cut -d' ' -f1)
expect_match "an edit's end entry records how it left the file (hash, bytes)" "\"files\":\\[\\{\"blake2b\":\"$h\",\"bytes\":3,\"path\":\"b.txt\"\\}\\]" "$ends"
expect_match "... a command's, that it may have changed anything" '"files_unknown":true' "$ends"
expect_match "... a removal's, the removal (voltagent)" '"files":\[\{"path":"x.txt","removed":true\}\]' "$ends"
expect_match "... a directory's, the directory (voltagent)" '"files":\[\{"dir":true,"path":"sub"\}\]' "$ends"
f=$(resumed "$d")
expect_match "files as recorded: the resume fails no workspace" '^$' "$f"
expect_match "... both workers recovered" '"workspaces_recovered":3}' "$("$CORRAL" trail --db "$d/t.db" --json --type recovery_completed)"

d=$T_TMP/edited
crashed "$d"
printf 'b3\n' >"$ws_w/b.txt"
f=$(resumed "$d")
expect_match "a file edited behind corral's back after its last recorded write: its workspace failed" "^$id_w recovery_files_mismatch: b.txt\$" "$f"
expect_match "... the other recovered" '"workspaces_recovered":2}' "$("$CORRAL" trail --db "$d/t.db" --json --type recovery_completed)"
expect_match "... counted" '"workspaces_failed":1,' "$("$CORRAL" trail --db "$d/t.db" --json --type recovery_completed)"

d=$T_TMP/back
crashed "$d"
printf 'x1\n' >"$ws_v/x.txt"
rm -r "$ws_v/sub"
f=$(resumed "$d")
expect_match "a file back after its recorded removal (or a directory gone): its workspace failed" "^$id_v recovery_files_mismatch: (x.txt|sub|sub/y.txt)\$" "$f"
expect_status "... the other one not" 1 "$(printf '%s\n' "$f" | grep -c .)"

d=$T_TMP/before
crashed "$d"
printf 'a9\n' >"$ws_w/a.txt"
f=$(resumed "$d")
expect_match "a file written before a command is taken as the command left it (files_unknown): no failure" '^$' "$f"
expect_match "the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$d/t.db" 2>&1)"

# ---- recovery twice (recovery spec 3.3, idempotent): the resumer SIGKILLed once its
# recovery_completed is committed, then resumed again: the second recovery reaches the same
# workspace states as the first (the failed one stays failed for the same reason, nothing else
# fails), and each resume's first entry is after every entry before it (the clock, 3.5).
d=$T_TMP/twice
crashed "$d"
printf 'b3\n' >"$ws_w/b.txt"
python3 "$TOP/tests/agents/kill_at.py" "$d/t.db" "select count(*) from entries where type = 'recovery_completed'" 1 - - \
    "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 60 >/dev/null
f=$(resumed "$d")
st=$("$CORRAL" trail --db "$d/t.db" --json | python3 -c '
import json, sys
es = [json.loads(l) for l in sys.stdin]
state, snaps, bad = {}, [], []
for e in es:
    b = e["body"]
    if e["type"] == "workspace_created":
        state[b["workspace_id"]] = ("idle", "")
    elif e["type"] == "workspace_state_changed":
        state[b["workspace_id"]] = (b["to"], b.get("reason", "") if b["to"] in ("failed", "closed") else "")
    elif e["type"] == "recovery_completed":
        snaps.append(dict(state))
    elif e["type"] == "supervisor_started" and b.get("resumed"):
        if any(x["ts_us"] >= e["ts_us"] for x in es if x["seq"] < e["seq"]):
            bad.append("clock")
print(len(snaps), "same" if len(snaps) == 2 and snaps[0] == snaps[1] else "differ: %s" % snaps, *bad)')
expect_match "recovery twice: the second reaches the same workspace states as the first" '^2 same$' "$st"
expect_match "... the first failed the edited workspace" "^$id_w recovery_files_mismatch: b.txt\$" "$f"
