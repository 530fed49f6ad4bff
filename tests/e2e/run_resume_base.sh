#!/bin/sh
# tests/e2e/run_resume_base.sh: a workspace rebuilt by `corral run --resume` keeps its base (its
# files at creation, recorded as an object named by workspace_created.base), so layered
# integration after a resume finds the same conflicts as without the crash. W1 changes a.txt and
# c.txt; W2 changes c.txt and is integrated first; W1's layered integration then conflicts on c.txt
# only (content_overlap: the parent's c.txt changed behind it; a.txt did not). The same run is
# killed (SIGKILL) once W2 is integrated and resumed; the resumed coordinator integrates W1: the
# conflict list must be the uncrashed run's (before: every file of W1's checkpoint conflicted).
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_resume_base: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
# policy.py OUT MODE [W1]: MODE whole (the uncrashed run), crash (stops at the crash point),
# resume (the resumed coordinator: integrates W1, whose id is given).
cat >"$T_TMP/policy.py" <<'PY'
import json, sys
out, script, mode = sys.argv[1], sys.argv[2], sys.argv[3]
def directive(files):
    steps = ["tools/call " + json.dumps({"name": "writeFile", "arguments": {"path": p, "content": t + "\n"}}) for p, t in files]
    steps.append("wacp/checkpoint.create " + json.dumps({"type": "artifact", "intent": "x", "status": "final", "confidence": "high", "parent": None}))
    steps += ['wacp/signal.emit {"type":"complete"}', "@hold"]
    return {"steps": steps}
w1 = directive([("a.txt", "a1"), ("c.txt", "c1")])
w2 = directive([("c.txt", "c2")])
first = ["@envelope",
         "w1=wacp/workspace.create " + json.dumps({"agent": "w", "directive": w1}),
         "w2=wacp/workspace.create " + json.dumps({"agent": "w", "directive": w2}),
         "@until:complete", "@until:complete",
         'wacp/integrate {"workspace":"{{w2.workspace_id}}","decision":"accept"}']
then = lambda ws: ['wacp/integrate {"workspace":"%s","decision":"accept","strategy":"layered"}' % ws,
                   'wacp/conflict.resolve {"workspace":"%s","resolution":"coordinator_resolve","prefer":"parent"}' % ws,
                   'wacp/signal.emit {"type":"complete"}', "@hold"]
if mode == "whole":
    coord = first + then("{{w1.workspace_id}}")
elif mode == "crash":
    coord = first + ["@log:crash-point", "@hold"]
else: # the directive was acknowledged before the crash: that wait runs out, then W1
    coord = ["@timeout:1500", "@envelope", "@timeout:60000"] + then(sys.argv[4])
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
project() { # DIR
    mkdir -p "$1"
    echo a0 >"$1/a.txt"
    echo c0 >"$1/c.txt"
    chown -R 65534:65534 "$1"
}
conflicts_of() { # the conflicts W1's layered integration found, from the logs under DIR
    cat "$1"/runs/*/logs/*.log 2>/dev/null | grep '^< wacp/integrate ok .*"strategy":"layered"\|^< wacp/integrate ok .*"state":"conflicted"' |
        grep -o '"conflicts":\[[^]]*\]' | head -1
}
# ---- the uncrashed run
u=$T_TMP/whole
project "$u/ws"
python3 "$T_TMP/policy.py" "$u/policy.json" "$S" whole
run_capture out err rc "$CORRAL" run "$u/policy.json" --workspace "$u/ws" --trail "$u/t.db" --timeout 60
expect_status "the uncrashed run ends well" 0 "$rc" "$err" "$(cat "$u"/runs/*/logs/*.log 2>/dev/null | tail -20)"
want=$(conflicts_of "$u")
expect_match "... W1's layered integration conflicts on c.txt only" '^"conflicts":\[\{"type":"content_overlap","path":"c.txt"\}\]$' "$want"

# ---- the same run, killed once W2 is integrated, then resumed
d=$T_TMP/crash
project "$d/ws"
python3 "$T_TMP/policy.py" "$d/policy.json" "$S" crash
"$CORRAL" run "$d/policy.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 60 >"$d/out" 2>"$d/err" &
pid=$!
i=0
while ! grep -qs '^# crash-point' "$d"/runs/*/logs/*.log && kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
entries=$("$CORRAL" trail --db "$d/t.db" --json 2>/dev/null)
w1=$(printf '%s\n' "$entries" | grep '"type":"workspace_created"' | grep -v '"parent":null' | head -1 |
    sed -n 's/.*"workspace":"\(ws-[0-9a-f]*\)".*/\1/p')
expect_match "workspace_created names the base's object" '"base":"[0-9a-f]{64}"' \
    "$(printf '%s\n' "$entries" | grep '"type":"workspace_created"' | grep "\"$w1\"")"
python3 "$T_TMP/policy.py" "$d/policy.json" "$S" resume "$w1"
run_capture out err rc "$CORRAL" run "$d/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 60
expect_status "the resumed run ends well" 0 "$rc" "$err" "$(cat "$d"/runs/*/logs/*.log 2>/dev/null | tail -20)"
got=$(conflicts_of "$d")
[ -n "$want" ] && [ "$got" = "$want" ] && ok "after the resume W1's layered integration finds what the uncrashed run found ($got)" ||
    fail "after the resume W1's layered integration finds what the uncrashed run found" "uncrashed: $want; resumed: $got"
expect_match "... and the files end the same (the parent's c.txt kept, W1's a.txt applied)" '^a1 c2$' \
    "$(cat "$d/ws/a.txt" "$d/ws/c.txt" | tr '\n' ' ' | sed 's/ $//')"
run_capture vout verr vrc "$CORRAL" trail verify --db "$d/t.db"
expect_status "corral trail verify is ok" 0 "$vrc" "$verr$vout"
