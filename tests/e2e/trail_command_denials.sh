#!/bin/sh
# tests/e2e/trail_command_denials.sh: a command tool's own sandbox is a recorded one too: the
# system calls its filter denies become `denial` entries of the agent's workspace (kind seccomp),
# the command gets EPERM, and without a trail it gets EPERM just the same.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
mkdir -p "$ws"
cp "$HOSTILE/denials" "$ws/denials"
chown -R 65534:65534 "$ws"
cat >"$T_TMP/p.json" <<'P'
{ "version": 1,
  "roles": { "runner": { "extends": "worker", "authority": { "write": true, "commands": true } } } }
P
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"executeCommand","arguments":{"command":"%s"}}}' "$1" "$2"; }
db=$T_TMP/t.db
out=$("$CORRAL" exec --policy "$T_TMP/p.json" --role runner --trail "$db" --workspace "$ws" -- \
      "$AGENTS/rpc_script" "$INIT" "$(call 1 './denials few')" "$(call 2 './denials loop 200')" 2>&1 >/dev/null)
expect_match "the command got EPERM for each denied call" '"stdout":"pid [0-9]+\\ncall mount EPERM' "$out"
expect_match "a tight loop of denied calls all got EPERM" 'eperm=200 other=0' "$out"
tr=$("$CORRAL" trail --db "$db" --json --type denial)
for sc in mount unshare bpf keyctl; do
    expect_match "the command's $sc denial is recorded" "\"kind\":\"seccomp\".*\"syscall\":\"$sc\"" "$tr"
done
n=$(printf '%s\n' "$tr" | grep -c '"syscall":"mount"')
expect_status "each of the 3 mount calls is its own entry" 3 "$n" "$tr"
expect_match "the flood ends in one aggregate count" '"aggregate":true.*"count":20[0-9]' "$tr"
expect_match "the entries belong to the agent's workspace" '"workspace":"exec-[0-9]+-[0-9]+"' "$tr"
run_capture vout verr vrc "$CORRAL" trail verify --db "$db"
expect_status "the trail verifies" 0 "$vrc" "$vout $verr"
# Without a trail nothing listens: the filter answers EPERM itself.
out=$("$CORRAL" exec --policy "$T_TMP/p.json" --role runner --workspace "$ws" -- \
      "$AGENTS/rpc_script" "$INIT" "$(call 1 './denials few')" 2>&1 >/dev/null)
expect_match "without a trail the command still gets EPERM" '"stdout":"pid [0-9]+\\ncall mount EPERM' "$out"
