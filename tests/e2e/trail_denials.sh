# tests/e2e/trail_denials.sh: every seccomp denial of a recorded run is a `denial` entry (the
# filter's default action is a user notification the supervisor records, then answers EPERM);
# a flood is bounded (16 entries per syscall, then one aggregate count); the listener never
# reaches the program; budget_warning at 80% of memory, pids and wall time.
. "$TOP/tests/lib.sh"
D="$HOSTILE/denials"
B="$HOSTILE/budgets"
P="$HOSTILE/probe"
db="$T_TMP/trail.db"

# json_count PATTERN TEXT: lines of TEXT matching the extended regex PATTERN
json_count() { printf '%s\n' "$2" | grep -Ec -- "$1"; }

# ---- without a trail: the filter refuses on its own, as before ----
run_capture out err rc "$CORRAL" exec -- "$D" few
expect_status "no --trail: the program runs" 0 "$rc" "$err"
n=$(json_count '^call (mount|unshare|bpf|keyctl) EPERM$' "$out")
expect_status "no --trail: all 12 denied calls got EPERM" 12 "$n" "$out"
run_capture out err rc "$CORRAL" exec -- "$D" fds
expect_nomatch "no --trail: no seccomp listener among the program's fds" 'seccomp' "$out"

# ---- with a trail: a few denied calls, each recorded ----
run_capture out err rc "$CORRAL" exec --trail "$db" -- "$D" few
expect_status "--trail: the program runs" 0 "$rc" "$err"
n=$(json_count '^call (mount|unshare|bpf|keyctl) EPERM$' "$out")
expect_status "--trail: all 12 denied calls got EPERM (the supervisor's answer)" 12 "$n" "$out"
run_capture tr err rc "$CORRAL" trail --db "$db" --type denial --json
for sc in mount unshare bpf keyctl; do
    n=$(json_count "\"kind\":\"seccomp\".*\"syscall\":\"$sc\"" "$tr")
    expect_status "--trail: three denial entries for $sc" 3 "$n" "$tr"
done
m=$(printf '%s\n' "$tr" | grep '"syscall":"mount"' | head -1)
expect_match "a denial names the syscall's number" '"nr":165[,}]' "$m"
expect_match "... the architecture" '"arch":"x86_64"' "$m"
expect_match "... the pid inside the sandbox" '"pid":2[,}]' "$m"
expect_match "... the rule" '"rule":"always denied"' "$m"
expect_match "... and what the program saw" '"reason":"EPERM"' "$m"
expect_match "... under the run's workspace, actor protocol" '"workspace":"exec-[0-9]+-[0-9]+","actor":"protocol","type":"denial"' "$m"
run_capture all err rc "$CORRAL" trail --db "$db" --json
first_denial=$(printf '%s\n' "$all" | grep -n '"type":"denial"' | head -1 | cut -d: -f1)
started=$(printf '%s\n' "$all" | grep -n '"type":"process_started"' | head -1 | cut -d: -f1)
exited=$(printf '%s\n' "$all" | grep -n '"type":"process_exited"' | head -1 | cut -d: -f1)
if [ -n "$first_denial" ] && [ "$started" -lt "$first_denial" ] && [ "$first_denial" -lt "$exited" ]; then
    ok "denials come between process_started and process_exited"
else fail "denials come between process_started and process_exited" "started=$started denial=$first_denial exited=$exited"; fi
sb=$(printf '%s\n' "$all" | grep '"type":"sandbox_created"' | head -1)
expect_match "sandbox_created says denials are notified, then refused" '"default_action":"user_notif' "$sb"

# a child's denial carries the child's pid inside
run_capture out err rc "$CORRAL" exec --trail "$db" -- "$D" child
expect_match "a forked child is denied too" '^child pid=3 mount=EPERM$' "$out"
run_capture tr err rc "$CORRAL" trail --db "$db" --type denial --json
expect_match "... and its entry has its pid (3)" '"pid":3,.*"syscall":"mount"' "$tr"

# the rule: a syscall outside the profile's groups, not in the always-denied list
run_capture out err rc "$CORRAL" exec --trail "$db" -- "$P" socket
run_capture tr err rc "$CORRAL" trail --db "$db" --type denial --json
expect_match "an argument-conditioned refusal names its rule (socket family)" '"rule":"argument not allowed \(socket address family\)".*"syscall":"socket"' "$tr"

# the second filter's rules (ioctl TIOCSTI, exec after start) are in the notifying filter too
run_capture out err rc "$CORRAL" exec --trail "$db" -- "$P" tiocsti
expect_match "TIOCSTI still refused under --trail" '^RESULT tiocsti EPERM$' "$out"
run_capture out err rc "$CORRAL" exec --trail "$db" --policy "$TOP/examples/policies/reviewer.json" --role reviewer -- "$P" exec /bin/true
expect_match "exec after start still refused for a role without exec authority" '^RESULT exec EPERM$' "$out"
run_capture out err rc "$CORRAL" exec --trail "$db" --policy "$TOP/examples/policies/reviewer.json" --role reviewer -- "$HOSTILE/hello"
expect_status "... while its own start is allowed" 0 "$rc" "$err"
run_capture tr err rc "$CORRAL" trail --db "$db" --type denial --json
expect_match "a TIOCSTI ioctl is a denial entry" '"rule":"argument not allowed \(ioctl TIOCSTI or TIOCLINUX\)".*"syscall":"ioctl"' "$tr"
expect_match "an execve after start is a denial entry" '"rule":"no exec authority[^"]*".*"syscall":"execve"' "$tr"

# the program sees exactly what it sees without a trail
for w in mount unshare setns clone-ns ptrace process_vm_readv kernel tiocsti socket; do
    a=$("$CORRAL" exec -- "$P" $w 2>&1)
    b=$("$CORRAL" exec --trail "$db" -- "$P" $w 2>&1)
    if [ "$a" = "$b" ] && printf '%s' "$a" | grep -q RESULT; then ok "probe $w: same answers with and without --trail"
    else fail "probe $w: same answers with and without --trail" "without: $a" "with: $b"; fi
done

# ---- a flood: bounded in the trail, not stalling the run ----
fdb="$T_TMP/flood.db"
run_capture out err rc "$CORRAL" exec --trail "$fdb" -- "$D" loop 20000
expect_status "flood: the program finishes" 0 "$rc" "$err"
expect_match "flood: every one of 20000 calls got EPERM" '^loop keyctl 20000 eperm=20000 other=0$' "$out"
run_capture tr err rc "$CORRAL" trail --db "$fdb" --type denial --json
n=$(json_count '"syscall":"keyctl"' "$tr")
expect_status "flood: 16 individual entries plus one aggregate" 17 "$n" "$tr"
expect_match "flood: the aggregate counts all 20000" '"aggregate":true.*"count":20000,.*"recorded":16' "$tr"
last=$(printf '%s\n' "$tr" | tail -1)
expect_match "flood: the aggregate is the last denial" '"aggregate":true' "$last"
run_capture out err rc "$CORRAL" trail verify --db "$fdb"
expect_status "flood: the trail verifies" 0 "$rc" "$out $err"

# many distinct syscalls: the run's one-by-one entries are capped (1024), the rest counted
sdb="$T_TMP/spread.db"
run_capture out err rc "$CORRAL" exec --trail "$sdb" -- "$D" spread 2000 20
expect_match "spread: 40000 calls over 2000 numbers, all EPERM" '^spread 2000 20 eperm=40000$' "$out"
run_capture tr err rc "$CORRAL" trail --db "$sdb" --type denial --json
n=$(printf '%s\n' "$tr" | grep -vc '"aggregate":true')
expect_status "spread: 1024 denials recorded one by one, no more" 1024 "$n"
sum=$(printf '%s\n' "$tr" | grep '"aggregate":true' | grep -o '"count":[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }')
expect_status "spread: the aggregates count all 40000" 40000 "$sum"
expect_match "spread: pairs past the counting table share one aggregate" '"count":19520,.*"subject":"\(other syscalls\)"' "$tr"

# ---- the listener never reaches the program ----
run_capture out err rc "$CORRAL" exec --trail "$db" -- "$D" fds
expect_status "--trail: the fd lister runs" 0 "$rc" "$err"
expect_nomatch "--trail: no seccomp listener among the program's fds" 'seccomp' "$out"
n=$(json_count '^fd ' "$out")
expect_status "--trail: the program has stdin, stdout, stderr and its /proc/self/fd handle only" 4 "$n" "$out"

# ---- under --workspace: the serve loop records and answers ----
ws="$T_TMP/ws"; mkdir -p "$ws"
wdb="$T_TMP/ws.db"
run_capture out err rc "$CORRAL" exec --trail "$wdb" --workspace "$ws" -- "$D" loop 300
expect_status "--workspace: the program finishes" 0 "$rc" "$err"
run_capture tr err rc "$CORRAL" trail --db "$wdb" --json
expect_match "--workspace: its answer line says all 300 got EPERM" 'eperm=300 other=0' "$tr"
n=$(json_count '"type":"denial".*"syscall":"keyctl"' "$tr")
expect_status "--workspace: 16 entries plus one aggregate" 17 "$n" "$tr"
expect_match "--workspace: the aggregate counts 300" '"aggregate":true.*"count":300,' "$tr"
run_capture out err rc "$CORRAL" trail verify --db "$wdb"
expect_status "--workspace: the trail verifies" 0 "$rc" "$out $err"

# ---- the i386 entry (when this kernel has one) ----
"$D" x86 >/dev/null 2>&1
if [ $? -eq 139 ]; then
    ok "a foreign-ABI syscall is recorded # SKIP this kernel has no i386 entry"
else
    run_capture out err rc "$CORRAL" exec --trail "$db" -- "$D" x86
    expect_match "a foreign-ABI syscall gets EPERM" '^x86 mount EPERM$' "$out"
    run_capture tr err rc "$CORRAL" trail --db "$db" --type denial --json
    expect_match "... and is recorded with its architecture" '"arch":"x86".*"rule":"a foreign system call ABI"' "$tr"
fi

# ---- budget_warning ----
bdb="$T_TMP/budget.db"
warnings() { "$CORRAL" trail --db "$bdb" --type budget_warning --json; }
run_capture out err rc "$CORRAL" exec --trail "$bdb" --memory 32M -- "$P" memhog
expect_status "memory hog: killed (137)" 137 "$rc" "$err"
run_capture all err rc "$CORRAL" trail --db "$bdb" --json
w=$(printf '%s\n' "$all" | grep -n '"type":"budget_warning".*"budget_dimension":"memory"' | cut -d: -f1)
x=$(printf '%s\n' "$all" | grep -n '"type":"budget_exceeded".*"budget_dimension":"memory"' | cut -d: -f1)
if [ -n "$w" ] && [ -n "$x" ] && [ "$(printf '%s\n' "$w" | wc -l)" -eq 1 ] && [ "$w" -lt "$x" ]; then
    ok "memory hog: one budget_warning, before budget_exceeded"
else fail "memory hog: one budget_warning, before budget_exceeded" "warning lines: $w exceeded: $x"; fi
expect_match "memory warning body: limit, usage, threshold" '"budget_dimension":"memory","consumed":[0-9]+,"limit":33554432,"threshold_percent":80' "$all"

run_capture out err rc "$CORRAL" exec --trail "$bdb" --memory 64M -- "$B" mem 56 1
expect_status "holding 56 of 64 MiB: runs to the end" 0 "$rc" "$err"
run_capture all err rc "$CORRAL" trail --db "$bdb" --json
last_run=$(printf '%s\n' "$all" | awk '/"type":"sandbox_created"/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }')
n=$(json_count '"type":"budget_warning".*"budget_dimension":"memory"' "$last_run")
expect_status "... one memory budget_warning" 1 "$n" "$last_run"
n=$(json_count '"type":"budget_exceeded"' "$last_run")
expect_status "... and no budget_exceeded" 0 "$n" "$last_run"

run_capture out err rc "$CORRAL" exec --trail "$bdb" --pids 10 -- "$B" pids 9 1
expect_status "holding 9 of 10 processes (init is the tenth): runs to the end" 0 "$rc" "$err"
run_capture all err rc "$CORRAL" trail --db "$bdb" --json
last_run=$(printf '%s\n' "$all" | awk '/"type":"sandbox_created"/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }')
expect_match "... a pids budget_warning" '"type":"budget_warning".*"budget_dimension":"pids","consumed":(8|9|10),"limit":10,"threshold_percent":80' "$last_run"

run_capture out err rc "$CORRAL" exec --trail "$bdb" --pids 8 -- "$P" forkbomb
run_capture all err rc "$CORRAL" trail --db "$bdb" --json
last_run=$(printf '%s\n' "$all" | awk '/"type":"sandbox_created"/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }')
order=$(printf '%s\n' "$last_run" | grep -o '"type":"budget_[a-z]*","body":{"budget_dimension":"pids"' | cut -d'"' -f4 | tr '\n' ' ')
expect_match "fork bomb: pids budget_warning, then budget_exceeded" '^budget_warning budget_exceeded $' "$order"

run_capture out err rc "$CORRAL" exec --trail "$bdb" --timeout 1 -- "$P" spin 5
expect_status "spinning past --timeout 1: 124" 124 "$rc" "$err"
run_capture all err rc "$CORRAL" trail --db "$bdb" --json
last_run=$(printf '%s\n' "$all" | awk '/"type":"sandbox_created"/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }')
order=$(printf '%s\n' "$last_run" | grep -o '"type":"budget_[a-z]*","body":{"budget_dimension":"time"' | cut -d'"' -f4 | tr '\n' ' ')
expect_match "timeout: time budget_warning, then budget_exceeded" '^budget_warning budget_exceeded $' "$order"
expect_match "timeout warning: the limit is the timeout" '"type":"budget_warning".*"budget_dimension":"time","consumed":[0-9.]+,"limit":1,"threshold_percent":80' "$last_run"

# a warning while the run goes on (sampled, committed at once), seen from another process
"$CORRAL" exec --trail "$bdb" --memory 64M -- "$B" mem 56 30 >/dev/null 2>&1 &
cpid=$!
seen=no
i=0
while [ $i -lt 250 ]; do # the program holds its memory for 30 s
    if "$CORRAL" trail --db "$bdb" --json | awk '/"type":"sandbox_created"/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' |
        grep -q '"type":"budget_warning".*"memory"'; then seen=yes; break; fi
    sleep 0.1
    i=$((i + 1))
done
alive=no
kill -0 $cpid 2>/dev/null && alive=yes
kill -TERM $cpid 2>/dev/null
wait $cpid 2>/dev/null
if [ $seen = yes ] && [ $alive = yes ]; then ok "a memory budget_warning is in the trail while the run goes on"
else fail "a memory budget_warning is in the trail while the run goes on" "seen=$seen alive=$alive"; fi

# under --workspace the serve loop samples too
run_capture out err rc "$CORRAL" exec --trail "$bdb" --workspace "$ws" --memory 64M -- "$B" mem 56 1
run_capture all err rc "$CORRAL" trail --db "$bdb" --json
last_run=$(printf '%s\n' "$all" | awk '/"type":"sandbox_created"/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }')
n=$(json_count '"type":"budget_warning".*"budget_dimension":"memory"' "$last_run")
expect_status "--workspace: one memory budget_warning" 1 "$n" "$last_run"
run_capture out err rc "$CORRAL" trail verify --db "$bdb"
expect_status "the budget trail verifies" 0 "$rc" "$out $err"
