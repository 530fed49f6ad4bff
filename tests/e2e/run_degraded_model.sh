#!/bin/sh
# tests/e2e/run_degraded_model.sh: degraded mode without loss (WACP recovery spec 2.4) when the
# batch the full disk lost held the model's own state changes. The trail lives on a 2 MiB tmpfs
# in a private mount namespace with ballast. The coordinator fills it with tasks (each one a
# `task_created`, a state change of the model) until one is refused: that commit failed after
# the model had made the task. The old code stopped the run there; now the lost
# entries are kept and, once the ballast is deleted, recorded again right after
# system_degraded. The run ends well, `corral trail verify` is ok, and every checkpoint the
# model holds (wacp/checkpoint.list) is on the trail. (With the trail's ahead log, a batch is
# lost only when the full disk refuses the ahead log's write; when it refuses SQLite's, the
# batch is safe and nothing needs recording again: both are accepted, and said.)
. "$TOP/tests/lib.sh"
if "$CORRAL" run --help 2>&1 | grep -q 'not available: the WACP runtime is not built'; then
    echo "ok - SKIP run_degraded_model: corral run is not built yet"
    exit 0
fi
S=$AGENTS/wacp_script
d=$T_TMP/gm
ws=$d/ws disk=$d/disk rundir=$d/run
mkdir -p "$ws" "$disk"
echo base >"$ws/base.txt"
chown -R 65534:65534 "$ws"
python3 - "$d/policy.json" "$S" <<'PY'
import json, sys
out, script = sys.argv[1], sys.argv[2]
task = lambda name, desc: 'wacp/task.create ' + json.dumps({"name": name, "description": desc})
# The coordinator creates tasks (each one a task_created, recorded with its request in one batch)
# until one is refused: the model holds it, the commit that recorded it failed.
coord = ["@envelope",
         "@retry:5000:0:error:" + task("fill", "x" * 1500),
         "@log:outage",
         "@retry:1200:100:ok:" + task("after", "after the outage"),
         "wacp/task.list {}",
         '@retry:100:100:ok:wacp/signal.emit {"type":"complete"}', "@hold"]
json.dump({"version": 1, "highway": {"preset": "autonomous", "gates": {"task_approval": False}},
           "rate_limits": {"signals": 0, "envelopes": 0, "checkpoints": 0, "tool_calls": 0},
           "roles": {"worker": {"authority": {"write": True, "commands": False},
                                "budgets": {"memory": "64M", "pids": 16, "wall_time": "2m"}}},
           "agents": {"coord": {"binary": script, "args": coord, "role": "coordinator"}}},
          open(out, "w"), indent=1)
PY
# Inside the namespace: the run in the background; once the filler has seen the outage, the
# ballast goes; then the run is waited for and the trail read.
unshare -m --propagation private sh -c '
    disk=$1 corral=$2 policy=$3 ws=$4 rundir=$5 d=$6
    mount -t tmpfs -o size=2048k,mode=0755 tmpfs "$disk" || exit 99
    head -c 1048576 /dev/zero >"$disk/ballast"
    "$corral" run "$policy" --workspace "$ws" --run-dir "$rundir" --trail "$disk/t.db" --timeout 120 \
        >"$d/out" 2>"$d/err" &
    pid=$!
    i=0
    until cat "$rundir"/logs/*.log 2>/dev/null | grep -q "^# outage" ||
          ! kill -0 $pid 2>/dev/null || [ $i -ge 1200 ]; do
        sleep 0.1; i=$((i + 1))
    done
    rm -f "$disk/ballast"
    wait $pid; echo $? >"$d/rc"
    "$corral" trail verify --db "$disk/t.db" >"$d/verify" 2>&1; echo $? >"$d/verify_rc"
    "$corral" trail --db "$disk/t.db" --json >"$d/entries" 2>"$d/trail_err"
' sh "$disk" "$CORRAL" "$d/policy.json" "$ws" "$rundir" "$d"
logs=$(cat "$rundir"/logs/*.log 2>/dev/null)
flog=$(grep -l '^# outage' "$rundir"/logs/*.log | head -1) # the filler's
err=$(cat "$d/err")
entries=$(cat "$d/entries")
expect_match "the disk filled up: a task was refused, naming the trail's problem" \
    '^< wacp/task.create error=.*(full|disk)' "$(cat "$flog" 2>/dev/null)"
expect_status "the run ends well after the outage (the lost state changes did not stop it)" 0 \
    "$(cat "$d/rc")" "$err" "$(printf '%s\n' "$logs" | tail -20)"
sd=$(printf '%s\n' "$entries" | grep '"type":"system_degraded"')
# Which commit the full disk refused decides whether a batch was lost: the ahead log's write
# (the batch with the model's task_created is lost: its entries are recorded again after
# system_degraded), or SQLite's (the batch is safe in the ahead log; the next request is refused
# before the model acts, and nothing needs recording again). Both must leave every task the
# model holds on the trail (below).
lost=no
printf '%s\n' "$sd" | grep -q '"replayed_entries":[1-9]' && lost=yes
if [ $lost = yes ]; then
    expect_match "corral run said it recorded the lost state changes again" \
        'entr(y|ies) of WACP state changes the failed batch lost recorded again after system_degraded' "$err"
    expect_match "system_degraded names how many lost entries follow it" '"replayed_entries":[1-9]' "$sd"
else
    expect_nomatch "no batch was lost (the ahead log held it): corral run records nothing again" \
        'recorded again after system_degraded' "$err"
    expect_match "system_degraded says no entry was recorded again" '"replayed_entries":0' "$sd"
fi
expect_status "corral trail verify is ok after the outage" 0 "$(cat "$d/verify_rc")" "$(cat "$d/verify")"
# Every task the model holds (its list after the outage) is on the trail.
list=$(grep '^< wacp/task.list ok' "$flog" 2>/dev/null)
held=$(printf '%s\n' "$list" | grep -o '"task_id":"[^"]*"' | sort -u)
onrec=$(printf '%s\n' "$entries" | grep '"type":"task_created"' | grep -o '"task_id":"[^"]*"' | sort -u)
missing=$(printf '%s\n' "$held" | while read -r c; do [ -n "$c" ] && ! printf '%s\n' "$onrec" | grep -qF "$c" && echo "$c"; done)
nheld=$(printf '%s\n' "$held" | grep -c task_id || true)
if [ "$nheld" -ge 3 ] && [ -z "$missing" ]; then ok "every task the model holds is on the trail ($nheld)"
else fail "every task the model holds is on the trail" "held $nheld, missing: $missing"; fi
# The refused task itself: made by the model, lost by the disk, recorded right after the gap.
sd_seq=$(printf '%s\n' "$sd" | head -1 | sed -n 's/.*"seq":\([0-9]*\).*/\1/p')
next=$(printf '%s\n' "$entries" | awk -v s="$sd_seq" 'match($0, /"seq":[0-9]+/) { n = substr($0, RSTART + 6, RLENGTH - 6) + 0; if (n > s && n <= s + 3) print }')
if [ $lost = yes ]; then
    expect_match "the lost task_created is recorded again right after system_degraded" '"type":"task_created".*"name":"fill"' "$next"
else
    ok "no task_created was lost, so none follows system_degraded"
fi
