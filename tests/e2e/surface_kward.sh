#!/bin/sh
# tests/e2e/surface_kward.sh: the Kward workspace surface (seed 004) through the real pipe of
# `corral exec --policy P --role R --workspace DIR` (policy roles with "surface": "kward"): every
# tool and every error code, the read-before-write rule with a change behind the agent's back,
# approval and disabled tools, the path escapes of protocol_paths.sh repeated against this
# surface (one check each), and the trail's denial entries.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
pol=$T_TMP/kward.json
cat >"$pol" <<'EOF'
{ "version": 1, "roles": {
  "agent":   { "extends": "worker", "surface": "kward", "authority": { "commands": true } },
  "careful": { "extends": "worker", "surface": "kward", "authority": { "commands": true },
               "tools": { "needs_approval": [ "run_shell_command" ], "disabled": [ "context_budget_stats" ] } },
  "reader":  { "extends": "worker", "surface": "kward", "authority": { "write": false, "commands": false } }
} }
EOF
ws=$T_TMP/ws
out_dir=$T_TMP/outside
mkdir -p "$ws/src" "$ws/sub" "$out_dir"
printf 'module Config\n  class Loader\n    def load(path)\n      YAML.load_file(path)\n    end\n  end\nend\n' >"$ws/src/config_loader.rb"
printf 'package util\n\ntype Pair struct {\n\tA, B int\n}\n\nfunc (p Pair) Sum() int {\n\treturn p.A + p.B\n}\n' >"$ws/src/util.go"
printf 'alpha beta\ngamma beta\ndelta\n' >"$ws/notes.txt"
awk 'BEGIN { print "class Big"; for (i = 1; i <= 2100; i++) if (i % 100 == 1) print "  def m" i; else if (i % 100 == 0) print "  end"; else print "    x = " i; print "end" }' >"$ws/big.rb"
head -c 270000 /dev/zero | tr '\0' 'x' >"$ws/huge.txt"
printf 'bin\000ary' >"$ws/blob.bin"
echo "SECRET-OUTSIDE" >"$out_dir/secret.txt"
echo inside >"$ws/sub/in.txt"
ln -s "$out_dir/secret.txt" "$ws/final_link"
ln -s "$out_dir" "$ws/dir_link"
ln -s "$out_dir/not-yet.txt" "$ws/dangling"
ln -s /proc/self/root/etc/passwd "$ws/magic"
ln -s ../../outside/secret.txt "$ws/sub/rel_link"
ln "$out_dir/secret.txt" "$ws/hard" 2>/dev/null || true
chown -R 65534:65534 "$ws"
db=$T_TMP/trail.db
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
talk() { role=$1; shift; "$CORRAL" exec --timeout 120 --trail "$db" --policy "$pol" --role "$role" --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" "$@" 2>&1 >/dev/null; }
NOTES='{"path":"notes.txt","edits":'

out=$(talk agent \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
  "$(call 2 list_directory '{"path":"src"}')" \
  "$(call 3 read_file '{"path":"src/config_loader.rb","offset":2,"limit":2}')" \
  "$(call 4 read_file '{"path":"big.rb"}')" \
  "$(call 5 read_file '{"path":"big.rb","mode":"outline"}')" \
  "$(call 6 read_file '{"path":"big.rb","mode":"preview","max_bytes":30}')" \
  "$(call 7 summarize_file_structure '{"path":"src/util.go"}')" \
  "$(call 8 context_for_task '{"task":"Find where configuration is loaded by the config loader","budget":3000}')" \
  "$(call 9 write_file '{"path":"new.txt","content":"hello\n"}')" \
  "$(call 10 write_file '{"path":"notes.txt","content":"overwritten\n"}')" \
  "$(call 11 edit_file "$NOTES"'[{"old_text":"delta","new_text":"DELTA"}]}')" \
  "$(call 12 read_file '{"path":"notes.txt"}')" \
  "$(call 13 edit_file "$NOTES"'[{"old_text":"beta","new_text":"x"}]}')" \
  "$(call 14 edit_file "$NOTES"'[{"old_text":"omega","new_text":"x"}]}')" \
  "$(call 15 edit_file "$NOTES"'[{"old_text":"alpha beta","new_text":"x"},{"old_text":"a beta\ngam","new_text":"y"}]}')" \
  "$(call 16 edit_file "$NOTES"'[{"old_text":"delta","new_text":"delta"}]}')" \
  "$(call 17 edit_file "$NOTES"'[{"old_text":"","new_text":"x"}]}')" \
  "$(call 18 edit_file "$NOTES"'[{"old_text":"alpha beta","new_text":"ALPHA"},{"old_text":"delta","new_text":"DELTA"}]}')" \
  "$(call 19 run_shell_command '{"command":"echo behind-the-back >> notes.txt"}')" \
  "$(call 20 edit_file "$NOTES"'[{"old_text":"ALPHA","new_text":"A"}]}')" \
  "$(call 21 read_file '{"path":"notes.txt","mode":"full"}')" \
  "$(call 22 edit_file "$NOTES"'[{"old_text":"ALPHA","new_text":"A"}]}')" \
  "$(call 23 run_shell_command '{"command":"echo out; echo err >&2; exit 3"}')" \
  "$(call 24 run_shell_command '{"command":"trap \"\" TERM; echo started; sleep 30","timeout_seconds":1}')" \
  "$(call 25 run_shell_command '{"command":"head -c 300000 /dev/zero | tr \"\\\\0\" x"}')" \
  "$(call 26 read_file '{"path":"blob.bin"}')" \
  "$(call 27 read_file '{"path":"huge.txt"}')" \
  "$(call 28 list_directory '{"path":"src/util.go"}')" \
  "$(call 29 read_file '{"path":"src"}')" \
  "$(call 30 read_file '{"path":"nope.txt"}')" \
  "$(call 31 read_file '{"path":"notes.txt","mode":"everything"}')" \
  "$(call 32 read_file '{"path":"notes.txt","offset":99}')" \
  "$(call 33 context_budget_stats '{}')" \
  "$(call 34 noSuchTool '{}')" \
  "$(call 35 run_shell_command '{"command":"   "}')" \
)
line() { printf '%s\n' "$out" | grep -F "< id=$1 " | head -1; }
ok_res='isError=false sc=\{"output":'
err_res() { printf 'isError=true sc=\\{"error":"Error: [^"]*%s[^"]*","code":"%s"' "$2" "$1"; }

# (rpc_script shows the first 3000 bytes of a tools/list answer: the first four tools; the
# reader's list below shows the rest of the read tools, and the calls here every tool.)
tl=$(printf '%s\n' "$out" | grep -F '"id":1,' | head -1)
expect_match "tools/list offers the seed's tools in order" '"name":"list_directory".*"name":"read_file".*"name":"summarize_file_structure".*"name":"context_for_task"' "$tl"
expect_match "tools/list: read_file's schema has offset, limit, mode, max_bytes" '"offset":\{"type":"integer".*"limit":\{"type":"integer".*"mode":\{"type":"string","enum":\["preview","outline","range","full"\].*"max_bytes":\{"type":"integer"' "$tl"
expect_match "list_directory lists names, directories with /" "$ok_res\"config_loader.rb\\\\nutil.go\",\"path\":\"src\",\"entries\"" "$(line 2)"
expect_match "read_file offset/limit with the continuation notice" "$ok_res\"  class Loader\\\\n    def load\\(path\\)\\\\n\\\\n\\[4 more lines in file. Use offset=4 to continue.\\]\"" "$(line 3)"
expect_match "read_file of a large file: outline plus first 120 lines" "$ok_res\"File has 2102 lines \\([0-9]+ bytes\\). Showing an outline and the first 120 lines.*\"mode\":\"large_file_outline\".*\"end_line\":120" "$(line 4)"
expect_match "read_file mode outline" "$ok_res\"# File structure: big.rb\\\\n- Lines: 2102\\\\n.*\"mode\":\"outline\"" "$(line 5)"
expect_match "read_file mode preview with max_bytes" "$ok_res\"class Big\\\\n  def m1\\\\n    x = 2\\\\n\\\\n\\[Showing lines 1-3 of 2102 \\(30 byte limit\\)" "$(line 6)"
expect_match "summarize_file_structure: kinds and line ranges" "$ok_res\"# File structure: src/util.go.*\"entries\":\\[\\{\"line\":3,\"end_line\":5,\"kind\":\"struct\".*\\{\"line\":7,\"end_line\":9,\"kind\":\"method\"" "$(line 7)"
expect_match "context_for_task ranks the loader first within its budget" "$ok_res\"# Focused context\\\\n- Task: Find where.*\"budget\":3000,\"terms\":\\[\"find\",\"configuration\",\"loaded\",\"config\",\"loader\"\\],\"files\":\\[\\{\"path\":\"src/config_loader.rb\"" "$(line 8)"
expect_match "write_file creates a new file with a diff" "$ok_res\"Wrote 6 bytes to new.txt\\\\n--- /dev/null\\\\n\\+\\+\\+ b/new.txt\\\\n@@ -0,0 \\+1 @@\\\\n\\+hello\\\\n\"" "$(line 9)"
expect_match "write_file of an unread existing file: read_required" "$(err_res read_required 'existing file must be read before writing: notes.txt')" "$(line 10)"
expect_match "edit_file of an unread file: read_required" "$(err_res read_required 'must be read before editing')" "$(line 11)"
expect_match "read_file marks the file read" "$ok_res\"alpha beta" "$(line 12)"
expect_match "edit_file: old_text found twice" "$(err_res old_text_not_unique 'appears 2 times in notes.txt')" "$(line 13)"
expect_match "edit_file: old_text not found" "$(err_res old_text_not_found 'was not found in notes.txt')" "$(line 14)"
expect_match "edit_file: overlapping replacements" "$(err_res edits_overlap 'edits\[0\] and edits\[1\] overlap')" "$(line 15)"
expect_match "edit_file: a no-op edit" "$(err_res no_changes 'no changes made to notes.txt')" "$(line 16)"
expect_match "edit_file: empty old_text" "$(err_res invalid_argument 'old_text must not be empty')" "$(line 17)"
expect_match "edit_file applies exact replacements with a unified diff" "$ok_res\"Edited notes.txt: replaced 2 block\\(s\\)\\\\n--- a/notes.txt\\\\n\\+\\+\\+ b/notes.txt\\\\n@@ -1,3 \\+1,3 @@\\\\n-alpha beta\\\\n\\+ALPHA\\\\n gamma beta\\\\n-delta\\\\n\\+DELTA\\\\n\"" "$(line 18)"
expect_match "a command changes the file behind the agent's back" "$ok_res\"Exit status: 0" "$(line 19)"
expect_match "edit_file after the change: stale_read" "$(err_res stale_read 'notes.txt has changed since it was last read')" "$(line 20)"
expect_match "reading again shows the change" "$ok_res\"ALPHA\\\\ngamma beta\\\\nDELTA\\\\nbehind-the-back\\\\n\"" "$(line 21)"
expect_match "and the edit then goes through" "$ok_res\"Edited notes.txt: replaced 1 block" "$(line 22)"
expect_match "run_shell_command: Exit status, STDOUT and STDERR" "$ok_res\"Exit status: 3\\\\n\\\\nSTDOUT:\\\\nout\\\\n\\\\nSTDERR:\\\\nerr\\\\n\",\"exit_status\":3" "$(line 23)"
expect_match "run_shell_command: a timeout (TERM ignored, so SIGKILL) is the timeout error" "isError=true sc=\\{\"error\":\"Error: command timed out after 1 seconds\",\"code\":\"timeout\",\"field\":\"timeout_seconds\",\"output\":\"Exit status: 137\\\\n\\\\nSTDOUT:\\\\nstarted" "$(line 24)"
# At the cap the command is stopped (SIGKILL: 137), not left to run to its timeout.
expect_match "run_shell_command: output capped at 128 KB, the command stopped there" "$ok_res\"Exit status: 137\\\\n\\\\nSTDOUT:\\\\nxxx.*\"truncated\":true" "$(line 25)"
expect_match "binary file refused" "$(err_res not_a_text_file 'not a text file: blob.bin')" "$(line 26)"
expect_match "file over 256 KB refused" "$(err_res file_too_large 'file too large: huge.txt is 270000 bytes; limit is 262144 bytes')" "$(line 27)"
expect_match "list_directory of a file: not_a_directory" "$(err_res not_a_directory 'not a directory: src/util.go')" "$(line 28)"
expect_match "read_file of a directory: not_a_file" "$(err_res not_a_file 'not a file: src')" "$(line 29)"
expect_match "read_file of a missing file: not_found" "$(err_res not_found '')" "$(line 30)"
expect_match "read_file with an unknown mode: invalid_argument" "$(err_res invalid_argument 'mode must be one of preview, outline, range, full')" "$(line 31)"
expect_match "read_file past the end: invalid_argument" "$(err_res invalid_argument 'offset 99 is beyond end of file')" "$(line 32)"
expect_match "context_budget_stats: per-session raw vs returned, per tool" "$ok_res\"# Context budget stats\\\\n- Calls: 31\\\\n.*\"by_tool\":\\[\\{\"tool\":\"read_file\"" "$(line 33)"
expect_match "an unknown tool: -32602" 'error=-32602 ' "$(line 34)"
expect_match "run_shell_command without a command" "$(err_res invalid_argument 'command is required')" "$(line 35)"
expect_status "write_file wrote the new file" 0 "$(test "$(cat "$ws/new.txt")" = hello; echo $?)"
expect_status "notes.txt holds every accepted change and nothing refused" 0 \
  "$(test "$(cat "$ws/notes.txt")" = "$(printf 'A\ngamma beta\nDELTA\nbehind-the-back')"; echo $?)"

out=$(talk careful \
  "$(call 1 run_shell_command '{"command":"touch ran.txt"}')" \
  "$(call 2 context_budget_stats '{}')" \
  "$(call 3 list_directory '{"path":"."}')")
expect_match "needs_approval: refused as approval_required, not run, saying how to allow it" "$(err_res approval_required "run_shell_command needs a person's approval and nobody can be asked here; nothing was done. To allow it, lift needs_approval for 'run_shell_command'")" "$(line 1)"
expect_status "the command that needed approval did not run" 1 "$(test -e "$ws/ran.txt"; echo $?)"
expect_match "a tool disabled by the policy: -32602" 'error=-32602 tool "context_budget_stats" is disabled' "$(line 2)"
expect_match "other tools still work for that role" "$ok_res" "$(line 3)"

out=$(talk reader \
  '{"jsonrpc":"2.0","id":4,"method":"tools/list"}' \
  "$(call 1 write_file '{"path":"r.txt","content":"x"}')" \
  "$(call 2 run_shell_command '{"command":"true"}')" \
  "$(call 3 read_file '{"path":"sub/in.txt"}')")
expect_match "a role without write authority: write_file refused" 'error=-32602 tool "write_file" is disabled' "$(line 1)"
expect_match "a role without command authority: run_shell_command refused" 'error=-32602 tool "run_shell_command" is disabled' "$(line 2)"
expect_match "the reader reads" "$ok_res\"inside\\\\n\"" "$(line 3)"
tl=$(printf '%s\n' "$out" | grep -F '"id":4,' | head -1)
expect_match "tools/list of a reader: the five read tools" '"name":"list_directory".*"name":"read_file".*"name":"summarize_file_structure".*"name":"context_for_task".*"name":"context_budget_stats"' "$tl"
expect_nomatch "tools/list of a reader: no write or command tool" '"name":"(write_file|edit_file|run_shell_command)"' "$tl"

# The path escapes of protocol_paths.sh, against this surface's tools.
out=$(talk agent \
  "$(call 1 read_file '{"path":"../outside/secret.txt"}')" \
  "$(call 2 read_file '{"path":"'"$out_dir"'/secret.txt"}')" \
  "$(call 3 read_file '{"path":"final_link"}')" \
  "$(call 4 read_file '{"path":"dir_link/secret.txt"}')" \
  "$(call 5 write_file '{"path":"dangling","content":"x"}')" \
  "$(call 6 read_file '{"path":"magic"}')" \
  "$(call 7 read_file '{"path":"sub/rel_link"}')" \
  "$(call 8 read_file '{"path":"hard"}')" \
  "$(call 9 write_file '{"path":"dir_link/new.txt","content":"x"}')" \
  "$(call 10 edit_file '{"path":"final_link","edits":[{"old_text":"SECRET","new_text":"pwned"}]}')" \
  "$(call 11 list_directory '{"path":".."}')" \
  "$(call 12 context_for_task '{"task":"secret outside","paths":["dir_link"]}')" \
  "$(call 13 summarize_file_structure '{"path":"sub/rel_link"}')" \
  "$(call 14 write_file '{"path":"sub/../../outside/w.txt","content":"x"}')" \
  "$(call 15 run_shell_command '{"command":"cat ../outside/secret.txt /workspace/final_link; ls /"}')" \
  "$(call 16 context_for_task '{"task":"secret","paths":["final_link"]}')" \
  "$(call 17 read_file '{"path":"sub/in.txt"}')")
denied='isError=true sc=\{"error":"Error: [^"]*","code":"(permission_denied|not_found)"'
check() { # id name [echo]: with "echo", the answer may repeat the path the agent itself sent
    l=$(line "$1")
    leak="SECRET-OUTSIDE\|root:x:\|$T_TMP"
    [ "${3:-}" = echo ] && leak="SECRET-OUTSIDE\|root:x:"
    if printf '%s' "$l" | grep -Eq "$denied" && ! printf '%s' "$l" | grep -q "$leak"; then ok "kward: $2"
    else fail "kward: $2" "answer: $l"; fi
}
check 1 "'..' out of the root"
check 2 "an absolute host path" echo
check 3 "a final symlink leading out"
check 4 "an intermediate symlink leading out"
check 5 "writing through a dangling symlink leading out"
check 6 "a /proc magic link"
check 7 "a relative symlink climbing out"
if [ -e "$ws/hard" ]; then check 8 "a hard link to a file outside"; else ok "kward: # SKIP hard link (cross-device)"; fi
check 9 "writing through an intermediate symlink"
check 10 "editing through a final symlink"
check 11 "listing '..'"
l=$(line 12)
if printf '%s' "$l" | grep -q "SECRET-OUTSIDE\|$T_TMP"; then fail "kward: context_for_task through a symlinked directory" "$l"
else ok "kward: context_for_task through a symlinked directory finds nothing outside"; fi
check 13 "summarizing through a relative symlink climbing out"
check 14 "a path climbing out through a subdirectory"
expect_nomatch "kward: a command sees nothing outside the workspace" "SECRET-OUTSIDE|$T_TMP" "$(line 15)"
check 16 "context_for_task naming a final symlink leading out"
expect_status "kward: nothing was created outside" 0 "$(ls "$out_dir" | grep -vx secret.txt | wc -l)"
expect_status "kward: the outside file is unchanged" 0 "$(grep -c pwned "$out_dir/secret.txt")"
expect_match "kward: a path inside still works" "$ok_res\"inside\\\\n\"" "$(line 17)"

run_capture tout terr rc "$CORRAL" trail --db "$db" --type denial --json
expect_match "trail: read-first refusals are denial entries" '"reason":"read_required","rule":"read before write"' "$tout"
expect_match "trail: a change behind the agent's back is a denial entry" '"reason":"stale_read","rule":"read before write \(changed since read\)"' "$tout"
expect_match "trail: approval refusals are denial entries" '"reason":"approval_required","rule":"approval required"' "$tout"
expect_match "trail: escapes are denial entries" '"reason":"permission_denied","rule":"workspace containment"' "$tout"
run_capture tout terr rc "$CORRAL" trail verify --db "$db"
expect_status "trail: verifies" 0 "$rc" "$terr $tout"
