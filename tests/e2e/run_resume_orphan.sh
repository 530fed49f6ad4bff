#!/bin/sh
# tests/e2e/run_resume_orphan.sh: a crash in the middle of a workspace's copy (workspace.create,
# made on the pool before workspace_created is recorded) leaves a half-made directory in the run
# directory; `corral run --resume` removes it before any agent starts (and a snapshot's temporary
# object), never using a half copy. The kill lands mid-copy by construction: a watcher stops the
# supervisor (SIGSTOP) as soon as the new workspace's directory appears, checks that it holds
# fewer files than the parent and that the trail knows no such workspace, and only then kills it;
# a copy that was already whole when stopped is tried again (at most 6 runs), never counted.
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_resume_orphan: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
NFILES=4000
python3 - "$T_TMP/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
w = {"steps": ['wacp/signal.emit {"type":"complete"}', "@hold"]}
# After the resume the coordinator starts over: its directive was acknowledged, so the first
# wait runs out (3 s) and it asks for the workspace again, which is then copied whole.
coord = ["@timeout:3000", "@envelope", "@timeout:60000",
         "c=wacp/workspace.create " + json.dumps({"agent": "w", "directive": w}),
         "@until:complete",
         'wacp/integrate {"workspace":"{{c.workspace_id}}","decision":"accept"}',
         'wacp/signal.emit {"type":"complete"}', "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"},
                      "w": {"binary": script, "args": ["@directive"], "role": "worker"}}},
          open(out, "w"), indent=1)
PY
# The watcher: stops PID the moment RUNS/*/ws/ holds a directory; prints its path and how many
# files it held then, or "none" if the run ended first.
cat >"$T_TMP/watch.py" <<'PY'
import glob, os, signal, sys, time
pid, runs = int(sys.argv[1]), sys.argv[2]
while True:
    for p in glob.glob(runs + "/*/ws/*"):
        os.kill(pid, signal.SIGSTOP)
        n = sum(len(f) for _, _, f in os.walk(p))
        print(p, n)
        sys.exit(0)
    try:
        os.kill(pid, 0)
    except OSError:
        print("none 0")
        sys.exit(0)
    if os.path.exists("/proc/%d/stat" % pid) and open("/proc/%d/stat" % pid).read().split(") ")[1][0] == "Z":
        print("none 0")
        sys.exit(0)
PY
hit= tries=0
while [ -z "$hit" ] && [ $tries -lt 6 ]; do
    tries=$((tries + 1))
    d=$T_TMP/o$tries
    mkdir -p "$d/ws"
    python3 -c "
import os, sys
for i in range($NFILES):
    open(os.path.join(sys.argv[1], 'f%05d.txt' % i), 'w').write('file %d\n' % i)" "$d/ws"
    chown -R 65534:65534 "$d/ws"
    "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --timeout 60 >"$d/out" 2>"$d/err" &
    pid=$!
    set -- $(python3 "$T_TMP/watch.py" $pid "$d/runs")
    orphan=$1 held=$2
    id=$(basename "$orphan")
    on_trail=$("$CORRAL" trail --db "$d/t.db" --json 2>/dev/null | grep '"type":"workspace_created"' | grep -c "\"$id\"" || true)
    kill -KILL $pid 2>/dev/null
    kill -CONT $pid 2>/dev/null
    wait $pid 2>/dev/null
    if [ "$orphan" != none ] && [ "$held" -lt $NFILES ] && [ "$on_trail" -eq 0 ]; then
        hit=$d
    else
        echo "# try $tries: the copy was not caught half made ($orphan: $held files, on the trail $on_trail)"
    fi
done
if [ -z "$hit" ]; then
    fail "a supervisor killed in the middle of a workspace copy" "no try caught the copy half made"
    exit 0
fi
d=$hit
ok "the supervisor was killed in the middle of a workspace copy ($held of $NFILES files copied, try $tries)"
[ -d "$orphan" ] && ok "... leaving a half-made copy in the run directory" || fail "... leaving a half-made copy in the run directory" "$orphan"
# A snapshot's temporary object cut short the same way.
run_dir=$(dirname "$(dirname "$orphan")")
mkdir -p "$run_dir/objects" && echo half >"$run_dir/objects/.tmp-0011223344556677"
run_capture out err rc "$CORRAL" run "$T_TMP/policy.json" --workspace "$d/ws" --trail "$d/t.db" --resume --timeout 60
expect_status "the resumed run ends well" 0 "$rc" "$err" "$(cat "$run_dir"/logs/*.log 2>/dev/null | tail -20)"
expect_match "--resume said it removed the half-made copies" '2 half-made copies of the dead run removed' "$err"
[ ! -e "$orphan" ] && ok "the half-made workspace copy is gone" || fail "the half-made workspace copy is gone" "$(ls "$orphan" | wc -l) files left"
[ ! -e "$run_dir/objects/.tmp-0011223344556677" ] && ok "the snapshot's temporary object is gone" || fail "the snapshot's temporary object is gone"
entries=$("$CORRAL" trail --db "$d/t.db" --json 2>/dev/null)
expect_match "recovery_completed counts them" '"partial_copies_removed":2' "$(printf '%s\n' "$entries" | grep '"type":"recovery_completed"')"
n=$(printf '%s\n' "$entries" | grep -c "\"$(basename "$orphan")\"" || true)
[ "$n" -eq 0 ] && ok "the half copy's workspace never appears on the trail" || fail "the half copy's workspace never appears on the trail" "$n entries"
new=$(printf '%s\n' "$entries" | grep '"type":"workspace_created"' | grep -v '"parent":null' | sed -n 's/.*"workspace":"\(ws-[0-9a-f]*\)".*/\1/p' | head -1)
nf=$(find "$run_dir/ws/$new" -type f 2>/dev/null | wc -l)
[ -n "$new" ] && [ "$nf" -eq $NFILES ] && ok "the workspace asked for again after the resume is a whole copy ($nf files)" ||
    fail "the workspace asked for again after the resume is a whole copy" "$new: $nf files"
run_capture vout verr vrc "$CORRAL" trail verify --db "$d/t.db"
expect_status "corral trail verify is ok" 0 "$vrc" "$verr$vout"
