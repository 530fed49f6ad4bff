#!/bin/sh
# tests/e2e/surface_gate.sh: the one tool gate (tools/gate.h) through the real pipe of
# `corral exec --policy P --role R --workspace DIR`, on each of the four surfaces, each rule in
# an ALLOWED / DISALLOWED pair: a disabled tool, needs_approval, read_before_write. Every check
# looks at the file on disk (written or untouched) and, for a refusal, at the trail's `denial`
# entry. The first two WAP cases are issue 11's: before the gate, WAP wrote the file in both.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
pol=$T_TMP/gate.json
{
    printf '{ "version": 1, "roles": {\n'
    sep=""
    for s in wap:writeFile file:file.write voltagent:write_file kward:write_file; do
        sf=${s%%:*} t=${s#*:}
        a='"authority": { "write": true }'
        printf '%s "%s_open": { "extends": "worker", "surface": "%s", %s, "tools": { "read_before_write": [] } },\n' "$sep" "$sf" "$sf" "$a"
        printf ' "%s_disabled": { "extends": "worker", "surface": "%s", %s, "tools": { "disabled": ["%s"] } },\n' "$sf" "$sf" "$a" "$t"
        printf ' "%s_approval": { "extends": "worker", "surface": "%s", %s, "tools": { "needs_approval": ["%s"], "read_before_write": [] } },\n' "$sf" "$sf" "$a" "$t"
        printf ' "%s_rbw": { "extends": "worker", "surface": "%s", %s, "tools": { "read_before_write": ["%s"] } }' "$sf" "$sf" "$a" "$t"
        sep=","
    done
    printf '\n} }\n'
} >"$pol"
"$CORRAL" policy check "$pol" >/dev/null 2>&1 || fail "policy check accepts the test policy" "$("$CORRAL" policy check "$pol" 2>&1)"

ws=$T_TMP/ws
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
# talk ROLE DB STEPS...: a fresh workspace holding notes.txt = "old", then the steps.
talk() {
    role=$1 db=$2; shift 2
    rm -rf "$ws"; mkdir -p "$ws"; printf 'old\n' >"$ws/notes.txt"; chown -R 65534:65534 "$ws"
    "$CORRAL" exec --timeout 60 --trail "$db" --policy "$pol" --role "$role" --workspace "$ws" -- \
        "$AGENTS/rpc_script" "$INIT" "$@" 2>&1 >/dev/null
}
denials() { "$CORRAL" trail --db "$1" --type denial --json 2>&1; }
on_disk() { cat "$ws/notes.txt" 2>/dev/null; }

for spec in \
    'wap|writeFile|{"path":"notes.txt","content":"NEW"}|readFile|{"path":"notes.txt"}' \
    'file|file.write|{"path":"notes.txt","content":"NEW"}|file.read|{"path":"notes.txt"}' \
    'voltagent|write_file|{"file_path":"/notes.txt","content":"NEW","overwrite":true}|read_file|{"file_path":"/notes.txt"}' \
    'kward|write_file|{"path":"notes.txt","content":"NEW"}|read_file|{"path":"notes.txt"}'; do
    IFS='|' read -r s wt wargs rt rargs <<EOF2
$spec
EOF2
    W=$(call 1 "$wt" "$wargs") R=$(call 2 "$rt" "$rargs") W3=$(call 3 "$wt" "$wargs")

    # ---- needs_approval ----
    db=$T_TMP/$s-approval.db
    out=$(talk "${s}_approval" "$db" "$W")
    expect_match "$s needs_approval DISALLOWED: $wt is refused with an error result" 'id=1 isError=true' "$out"
    expect_match "$s needs_approval DISALLOWED: the answer says a human must approve it" 'id=1 .*(approv|Approv)' "$out"
    expect_status "$s needs_approval DISALLOWED: the file is untouched" 0 "$([ "$(on_disk)" = old ] && echo 0 || echo 1)" "$(on_disk)"
    d=$(denials "$db")
    expect_match "$s needs_approval DISALLOWED: a denial entry names the tool and the rule" "\"rule\":\"[^\"]*approv[^\"]*\",\"subject\":\"$wt\"" "$d"
    db=$T_TMP/$s-open.db
    out=$(talk "${s}_open" "$db" "$W")
    expect_match "$s needs_approval ALLOWED (role without it): $wt succeeds" 'id=1 isError=false' "$out"
    expect_status "$s needs_approval ALLOWED: the file is written" 0 "$([ "$(on_disk)" = NEW ] && echo 0 || echo 1)" "$(on_disk)"
    expect_nomatch "$s needs_approval ALLOWED: no denial entry" '"type":"denial"' "$(denials "$db")"

    # ---- read_before_write ----
    db=$T_TMP/$s-rbw.db
    out=$(talk "${s}_rbw" "$db" "$W")
    expect_match "$s read_before_write DISALLOWED: $wt over an unread file is refused" 'id=1 isError=true' "$out"
    expect_status "$s read_before_write DISALLOWED: the file is untouched" 0 "$([ "$(on_disk)" = old ] && echo 0 || echo 1)" "$(on_disk)"
    expect_match "$s read_before_write DISALLOWED: a denial entry names the tool and the rule" "\"rule\":\"read[ _]before[ _]write[^\"]*\",\"subject\":\"$wt\"" "$(denials "$db")"
    db=$T_TMP/$s-rbw2.db
    out=$(talk "${s}_rbw" "$db" "$R" "$W3")
    expect_match "$s read_before_write ALLOWED: after $rt, $wt succeeds" 'id=3 isError=false' "$out"
    expect_status "$s read_before_write ALLOWED: the file is written" 0 "$([ "$(on_disk)" = NEW ] && echo 0 || echo 1)" "$(on_disk)"
    expect_nomatch "$s read_before_write ALLOWED: no denial entry" '"type":"denial"' "$(denials "$db")"

    # ---- disabled ----
    db=$T_TMP/$s-disabled.db
    out=$(talk "${s}_disabled" "$db" '{"jsonrpc":"2.0","id":9,"method":"tools/list"}' "$W")
    expect_nomatch "$s disabled DISALLOWED: tools/list does not offer $wt" "id=9 tools=(.*,)?$wt(,|\$)" "$out"
    expect_match "$s disabled DISALLOWED: a call is refused (invalid params)" 'id=1 error=-32602 .*disabled' "$out"
    expect_status "$s disabled DISALLOWED: the file is untouched" 0 "$([ "$(on_disk)" = old ] && echo 0 || echo 1)" "$(on_disk)"
    expect_match "$s disabled DISALLOWED: a denial entry" "\"rule\":\"tool disabled by policy\",\"subject\":\"$wt\"" "$(denials "$db")"
    out=$(talk "${s}_open" "$T_TMP/$s-open2.db" '{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
    expect_match "$s disabled ALLOWED (enabled): tools/list offers $wt" "id=9 tools=(.*,)?$wt(,|\$)" "$out"
done
