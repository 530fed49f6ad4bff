# tests/e2e/exec_policy_trail.sh: `corral exec` with a policy's role, and with --trail: the
# role's derived filter holds inside, and the run is recorded before it happens.
. "$TOP/tests/lib.sh"
P="$HOSTILE/probe"
POL="$TOP/examples/policies"

run_capture out err rc "$CORRAL" exec --policy "$POL/reviewer.json" --role reviewer -- "$P" exec /bin/true
expect_match "reviewer (no command authority): execve after start refused" '^RESULT exec EPERM$' "$out"
run_capture out err rc "$CORRAL" exec -- "$P" exec /bin/true
expect_status "default role (command authority): execve after start works" 0 "$rc" "$err"
expect_nomatch "default role: exec not refused" 'RESULT exec' "$out"
run_capture out err rc "$CORRAL" exec --policy "$POL/observer.json" --role observer -- "$P" write-open
expect_match "observer: opening for writing refused even in /tmp" '^RESULT write-open EPERM$' "$out"
run_capture out err rc "$CORRAL" exec --policy "$POL/reviewer.json" --role reviewer --net loopback -- /bin/true
expect_status "--net loopback for a role without network authority: usage error" 2 "$rc" "$err"
expect_match "... naming the role and the fix" "role 'reviewer' has no network authority" "$err"
run_capture out err rc "$CORRAL" exec --policy "$POL/reviewer.json" --role nosuchrole -- /bin/true
expect_status "unknown role: usage error" 2 "$rc" "$err"
printf '{ "roles": { "x": { "extends": "worker", "netwrok": "none" } } }\n' >"$T_TMP/bad.json"
run_capture out err rc "$CORRAL" exec --policy "$T_TMP/bad.json" --role x -- /bin/true
expect_status "a policy with problems is refused: 125" 125 "$rc" "$err"
expect_match "... with FILE:LINE:COL messages" 'bad.json:1:[0-9]+: ' "$err"
run_capture out err rc "$CORRAL" exec --role worker -- /bin/true
expect_status "--role without --policy: usage error" 2 "$rc" "$err"

db="$T_TMP/trail.db"
run_capture out err rc "$CORRAL" exec --trail "$db" --memory 32M -- "$P" memhog
expect_status "memory hog under --trail: 137" 137 "$rc" "$err"
run_capture out err rc "$CORRAL" trail --db "$db" --json
for t in sandbox_created process_started budget_exceeded process_exited; do
    expect_match "trail records $t" "\"type\":\"$t\"" "$out"
done
expect_match "sandbox_created carries the derived profile" '"profile":\{.*"seccomp":\{' "$out"
expect_match "process_exited carries the signal" '"signal":9' "$out"
first=$(printf '%s\n' "$out" | grep -v trail_created | head -1)
expect_match "sandbox_created is the run's first entry (write-ahead)" '"type":"sandbox_created"' "$first"
run_capture out err rc "$CORRAL" trail verify --db "$db"
expect_status "the exec trail verifies" 0 "$rc" "$err $out"
ws="$T_TMP/ws"; mkdir -p "$ws"; echo hello >"$ws/README.md"
run_capture out err rc "$CORRAL" exec --timeout 60 --trail "$db" --workspace "$ws" -- "$TOP/build/examples/agents/explore_edit_run"
expect_status "an agent served with --trail runs" 0 "$rc" "$err"
run_capture out err rc "$CORRAL" trail --db "$db" --type tool_call --json
expect_match "its tool calls are in the trail under its workspace" '"workspace":"exec-[0-9]+-[0-9]+".*"type":"tool_call"' "$out"
run_capture out err rc "$CORRAL" trail --db "$db" --type denial --json
expect_match "the agent's refused escape is a denial entry" '"kind":"path".*"reason":"PERMISSION_DENIED"' "$out"
run_capture out err rc "$CORRAL" trail verify --db "$db"
expect_status "the trail still verifies" 0 "$rc" "$err $out"
chmod 0400 "$db"; cp "$db" "$T_TMP/ro.db"; chmod 0444 "$T_TMP/ro.db"; chattr +i "$T_TMP/ro.db" 2>/dev/null
ro_ok=no
if [ -n "$(lsattr "$T_TMP/ro.db" 2>/dev/null | cut -c5 | grep i)" ]; then ro_ok=yes; fi
if [ $ro_ok = yes ]; then
    run_capture out err rc "$CORRAL" exec --trail "$T_TMP/ro.db" -- "$P" create /tmp/x
    if [ "$rc" -ne 0 ] && ! printf '%s' "$out" | grep -q RESULT; then ok "an unwritable trail: the program never runs"
    else fail "an unwritable trail: the program never runs" "rc=$rc out=$out err=$err"; fi
    chattr -i "$T_TMP/ro.db"
else
    ok "an unwritable trail: the program never runs # SKIP no chattr on this file system"
fi
