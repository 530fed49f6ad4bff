#!/bin/sh
# tests/e2e/run_resume_gates.sh: the human highway across a supervisor's death (recovery spec 3.4,
# highway spec 7). A task_approval gate open when `corral run` is SIGKILLed is open again after
# --resume, with its id and trigger time: `corral gate list` shows it, a person approves it with
# `corral gate approve`, the task goes on and the run finishes. A gate whose timeout passed while
# corral was down (by the trail's clock) takes its fallback during the recovery, recorded before
# recovery_completed.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_resume_gates: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
chmod 711 "$T_TMP"

# policy FILE TASK_APPROVAL_RULE_JSON COORD_STEPS_JSON
policy() {
    python3 - "$@" "$S" <<'PY'
import json, sys
out, rule, coord, script = sys.argv[1:5]
json.dump({"version": 1, "users": {"0": "root-admin"},
           "highway": {"preset": "supervised", "gate_overrides": {"task_approval": json.loads(rule)}},
           "agents": {"coord": {"binary": script, "args": json.loads(coord), "role": "coordinator"}}},
          open(out, "w"), indent=1)
PY
}
# The first life proposes a task and waits; the second (the same agent, told it was recovered)
# waits until a person or the fallback let the task through, then ends the run.
FIRST='["@envelope", "wacp/task.create {\"name\":\"gated\",\"description\":\"across a crash\"}", "@hold"]'
SECOND='["@timeout:120000", "@poll:pending:wacp/task.list {}", "wacp/signal.emit {\"type\":\"complete\"}"]'
trail() { "$CORRAL" trail --db "$db" --json "$@"; }

# crash NAME RULE: a run whose coordinator's task waits at its gate, SIGKILLed once gate_triggered
# is committed to the trail. Sets $d $ws $db $gate.
crash() {
    d=$T_TMP/$1 ws=$T_TMP/$1/ws db=$T_TMP/$1/trail.db
    mkdir -p "$ws"
    chmod 711 "$d"
    chown -R 65534:65534 "$ws"
    policy "$d/first.json" "$2" "$FIRST"
    policy "$d/second.json" "$2" "$SECOND"
    "$CORRAL" run "$d/first.json" --workspace "$ws" --trail "$db" --timeout 120 >"$d/out" 2>"$d/err" </dev/null &
    pid=$!
    i=0
    gate=
    while [ -z "$gate" ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
        gate=$(trail --type gate_triggered 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin: print(json.loads(l)["body"]["gate_id"]); break')
        [ -n "$gate" ] || sleep 0.1
        i=$((i + 1))
    done
    kill -KILL $pid
    wait $pid 2>/dev/null
    [ -n "$gate" ] && ok "$1: the gate was triggered before the supervisor died" ||
        fail "$1: the gate was triggered before the supervisor died" "$(cat "$d/err")"
}

# ---- A: a pending gate survives; a person approves it after the resume
crash A '{"timeout": "10m", "fallback": "reject"}'
"$CORRAL" run "$d/second.json" --workspace "$ws" --trail "$db" --resume --timeout 120 >"$d/out2" 2>"$d/err2" </dev/null &
pid=$!
sock=$db.sock
i=0
list=
while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do
    list=$("$CORRAL" gate list --json --control "$sock" 2>/dev/null)
    case $list in *'"gates"'*) break ;; esac
    sleep 0.1
    i=$((i + 1))
done
expect_match "A: gate list after --resume shows the dead run's gate, same id" "\"id\":[[:space:]]*\"$gate\"" "$list"
expect_match "... still a task_approval, pending" '"type":[[:space:]]*"task_approval"' "$list"
expect_match "... its subject rebuilt from the task" '"name":[[:space:]]*"gated"' "$list"
run_capture o e r "$CORRAL" gate approve "$gate" --control "$sock"
expect_status "A: corral gate approve on the restored gate" 0 "$r" "$o $e"
wait $pid
rc=$?
expect_status "A: the resumed run finishes (the task went on, the coordinator completed)" 0 "$rc" "$(cat "$d/err2")"
seq=$(trail | python3 -c '
import json, sys
g = sys.argv[1]
es = [json.loads(l) for l in sys.stdin]
rec = [e["seq"] for e in es if e["type"] == "recovery_completed"]
res = [(e["seq"], e["body"].get("actor")) for e in es if e["type"] == "gate_resolved" and e["body"].get("gate_id") == g]
app = [e["seq"] for e in es if e["type"] == "task_approved" and e["body"].get("gate_id") == g]
print("ok" if rec and len(res) == 1 and res[0][0] > rec[0] and res[0][1] == "root-admin" and app else "no", rec, res, app)' "$gate")
expect_match "A: one gate_resolved, by root-admin after recovery_completed, and task_approved" '^ok' "$seq"
expect_match "A: the trail verifies" '^ok' "$("$CORRAL" trail verify --db "$db" 2>&1)"

# ---- B: a gate whose timeout ran out while corral was down takes its fallback during recovery
crash B '{"timeout": "2s", "fallback": "approve"}'
python3 - "$db" <<'PY'
import json, sqlite3, sys, time
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
ts = [r[0] for r in c.execute("select ts from entries where type = 'gate_triggered'")]
while time.time() * 1e6 < max(ts) + 2.2e6:
    time.sleep(0.05)
PY
run_capture o e rc "$CORRAL" run "$d/second.json" --workspace "$ws" --trail "$db" --resume --timeout 120
expect_status "B: the resumed run finishes (the fallback approved the task)" 0 "$rc" "$e"
seq=$(trail | python3 -c '
import json, sys
g = sys.argv[1]
es = [json.loads(l) for l in sys.stdin]
rec = [e["seq"] for e in es if e["type"] == "recovery_completed"]
to = [e["seq"] for e in es if e["type"] == "gate_timeout" and e["body"].get("gate_id") == g]
res = [e["body"].get("actor") for e in es if e["type"] == "gate_resolved" and e["body"].get("gate_id") == g]
print("ok" if rec and to and to[0] < rec[0] and res == ["fallback"] else "no", rec, to, res)' "$gate")
expect_match "B: gate_timeout and the fallback's gate_resolved are recorded before recovery_completed" '^ok' "$seq"
