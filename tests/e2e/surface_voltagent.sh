#!/bin/sh
# tests/e2e/surface_voltagent.sh: the VoltAgent surface's filesystem and sandbox tools through the
# real pipe (a policy role with "surface": "voltagent"): every tool and error, the path escapes of
# protocol_paths.sh against this surface's rules (one check each), read-before-write including a
# change behind the agent's back, read-only mode, needs_approval, and the trail's denials.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
pol=$T_TMP/volt.json
cat >"$pol" <<'EOF'
{
  "version": 1,
  "roles": {
    "worker": {
      "authority": { "write": true, "commands": true, "network": false },
      "surface": "voltagent",
      "tools": {
        "read_before_write": [ "write_file", "edit_file", "delete_file" ],
        "needs_approval": [ "rmdir" ],
        "limits": { "command_timeout": "2s", "command_timeout_max": "2s", "max_output_bytes": "64K" }
      },
      "sandbox": { "user": 65534, "group": 65534 }
    },
    "observer": { "surface": "voltagent" }
  }
}
EOF
ws=$T_TMP/ws
out_dir=$T_TMP/outside
mkdir -p "$ws/src/lib" "$ws/sub" "$ws/tree/a/b" "$out_dir"
printf 'one\ntwo\nthree\n' >"$ws/src/app.ts"
printf 'export const TODO = 1;\n' >"$ws/src/lib/util.ts"
printf 'alpha beta alpha\n' >"$ws/dup.txt"
printf 'same\n' >"$ws/same.txt"
printf 'keep\n' >"$ws/keep.txt"
printf 'bin\000ary' >"$ws/blob.bin"
echo x >"$ws/tree/a/b/c.txt"
echo "SECRET-OUTSIDE" >"$out_dir/secret.txt"
echo inside >"$ws/sub/in.txt"
ln -s "$out_dir/secret.txt" "$ws/final_link"
ln -s "$out_dir" "$ws/dir_link"
ln -s "$out_dir/not-yet.txt" "$ws/dangling"
ln -s /proc/self/root/etc/passwd "$ws/magic"
ln -s ../../outside/secret.txt "$ws/sub/rel_link"
ln "$out_dir/secret.txt" "$ws/hard" 2>/dev/null || true
ln -s src/app.ts "$ws/inlink"                           # a symlink that stays inside
chown -R 65534:65534 "$ws"
db=$T_TMP/trail.db
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
talk() { # role, steps...
    r=$1; shift
    "$CORRAL" exec --timeout 60 --trail "$db" --policy "$pol" --role "$r" --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" "$@" 2>&1 >/dev/null
}

# ---- every tool, with upstream's texts --------------------------------------------------------
out=$(talk worker \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
  "$(call 2 ls '{"path":"/src"}')" \
  "$(call 3 read_file '{"file_path":"/src/app.ts","offset":1,"limit":1}')" \
  "$(call 4 write_file '{"file_path":"/new/dir/f.txt","content":"hello\n"}')" \
  "$(call 5 write_file '{"file_path":"/new/dir/f.txt","content":"x"}')" \
  "$(call 6 read_file '{"file_path":"/dup.txt"}')" \
  "$(call 7 edit_file '{"file_path":"/dup.txt","old_string":"alpha","new_string":"A"}')" \
  "$(call 8 edit_file '{"file_path":"/dup.txt","old_string":"alpha","new_string":"A","replace_all":true}')" \
  "$(call 9 edit_file '{"file_path":"/dup.txt","old_string":"omega","new_string":"A"}')" \
  "$(call 10 stat '{"path":"/src/app.ts"}')" \
  "$(call 11 stat '{"path":"/ghost"}')" \
  "$(call 12 mkdir '{"path":"/made/deep"}')" \
  "$(call 13 list_tree '{"path":"/tree"}')" \
  "$(call 14 list_files '{"path":"/tree","max_depth":1}')" \
  "$(call 15 glob '{"pattern":"**/*.ts"}')" \
  "$(call 16 grep '{"pattern":"TODO","path":"/src","glob":"*.ts"}')" \
  "$(call 17 execute_command '{"command":"cat","args":["src/app.ts"],"env":{"FOO":"bar"}}')" \
  "$(call 18 execute_command '{"command":"echo $FOO; pwd","cwd":"/src","env":{"FOO":"bar"}}')" \
  "$(call 19 execute_command '{"command":"sleep 5","timeout_ms":60000}')" \
  "$(call 20 execute_command '{"command":"head -c 5000 /dev/zero | tr \"\\\\0\" y","max_output_kb":1}')" \
  "$(call 21 delete_file '{"file_path":"/keep.txt"}')" \
  "$(call 22 read_file '{"file_path":"/keep.txt"}')" \
  "$(call 23 delete_file '{"file_path":"/keep.txt"}')" \
  "$(call 24 delete_file '{"file_path":"/made","recursive":true}')" \
  "$(call 25 rmdir '{"path":"/tree","recursive":true}')" \
  "$(call 26 read_file '{"file_path":"/nope.txt"}')" \
  "$(call 27 read_file '{"file_path":"/blob.bin"}')" \
  "$(call 28 read_file '{"file_path":"src/app.ts"}')" \
  "$(call 29 grep '{"pattern":"("}')" \
  "$(call 30 read_file '{"file_path":"/src/app.ts","offset":9}')" \
  "$(call 31 ls '{"path":"/src","bogus":1}')" \
  "$(call 32 workspace_nope '{}')" \
  "$(call 33 execute_command '{"command":"cat","stdin":"x"}')" \
  "$(call 34 delete_file '{"file_path":"/src"}')" \
  "$(call 35 rmdir '{"path":"/src/lib"}')" \
  "$(call 36 execute_command '{"command":"printf abcdefgh","max_output_bytes":4}')" \
  "$(call 37 execute_command '{"command":"exit 3"}')" \
  "$(call 38 write_file '{"file_path":"/inlink","content":"x","overwrite":true}')" \
)
line() { printf '%s\n' "$out" | grep -F "< id=$1 " | head -1; }
# tools/list spans lines (descriptions hold newlines): from its answer to the next one
listing() { printf '%s\n' "$out" | tr '\n' ' ' | grep -o '"id":1,"result":{"tools".*' | sed 's/< id=2 .*//'; }
expect_match "tools/list: the filesystem and sandbox tools, in upstream's order" 'tools=ls,read_file,write_file,edit_file,delete_file,stat,mkdir,rmdir,list_tree,list_files,glob,grep,execute_command' "$(line 1)"
expect_match "tools/list: upstream's parameter names" '"file_path".*"old_string".*"new_string".*"replace_all"' "$(listing)"
expect_match "ls" 'isError=false sc=\{"output":"/src/app.ts \(14 bytes\)\\n/src/lib/ \(directory\)","entries":\[\{"path":"/src/app.ts","is_dir":false,"size":14' "$(line 2)"
expect_match "read_file numbers lines from offset" 'isError=false sc=\{"output":"     2\\ttwo"' "$(line 3)"
expect_match "write_file" 'isError=false sc=\{"output":"Successfully wrote to '"'"'/new/dir/f.txt'"'"'"' "$(line 4)"
expect_match "write_file on an existing file without overwrite" 'isError=true sc=\{"error":"Cannot write to /new/dir/f.txt because it already exists. Read and then make an edit, or write to a new path.","code":"file_exists"' "$(line 5)"
expect_match "edit_file: a non-unique old_string" 'isError=true sc=\{"error":"Error: String '"'"'alpha'"'"' appears 2 times in file. Use replace_all=true' "$(line 7)"
expect_match "edit_file: replace_all" 'isError=false sc=\{"output":"Successfully replaced 2 occurrence\(s\) in '"'"'/dup.txt'"'"'","occurrences":2' "$(line 8)"
expect_status "edit_file changed the file" 0 "$(test "$(cat "$ws/dup.txt")" = "A beta A"; echo $?)"
expect_match "edit_file: old_string not found" '"error":"Error: String not found in file: '"'"'omega'"'"'","code":"no_match"' "$(line 9)"
expect_match "stat" 'isError=false sc=\{"output":"path: /src/app.ts\\ntype: file\\nsize: 14 bytes\\nmodified_at: 20[0-9-]+T' "$(line 10)"
expect_match "stat of a missing path is an answer" 'isError=false sc=\{"output":"No file or directory found at '"'"'/ghost'"'"'","exists":false' "$(line 11)"
expect_match "mkdir" '"output":"Successfully created directory '"'"'/made/deep/'"'"'"' "$(line 12)"
expect_match "list_tree" '"output":"/tree/\\n  - a/\\n    - b/\\n      - c.txt"' "$(line 13)"
expect_match "list_files with max_depth" '"output":"/tree/\\n  - a/"' "$(line 14)"
expect_match "glob" '"output":"/src/app.ts\\n/src/lib/util.ts"' "$(line 15)"
expect_match "grep" '"output":"/src/lib/util.ts:\\n  1: export const TODO = 1;"' "$(line 16)"
expect_match "execute_command: command and args" 'isError=false sc=\{"success":true,"exit_code":0,.*"stdout":"one\\ntwo\\nthree\\n"' "$(line 17)"
expect_match "execute_command: summary" '"summary":"Exit code: 0\\nDuration: [0-9]+ ms\\nSTDOUT: captured inline \(14 bytes\)\\nSTDERR: \(empty\)"' "$(line 17)"
expect_match "execute_command: cwd and env" '"stdout":"bar\\n/workspace/src\\n"' "$(line 18)"
expect_match "execute_command: timeout_ms capped by the policy's command_timeout_max" 'isError=false sc=\{"success":false,.*"timed_out":true' "$(line 19)"
expect_match "execute_command: max_output_kb" '"stdout_truncated":true,.*STDOUT: captured inline \(5000 bytes, truncated\)' "$(line 20)"
expect_match "execute_command: max_output_bytes" '"stdout":"abcd","stderr":"","stdout_truncated":true' "$(line 36)"
expect_match "write_file through a symlink inside: upstream's refusal" '"error":"Cannot write to /inlink because it is a symlink. Symlinks are not allowed.","code":"symlink_not_allowed"' "$(line 38)"
expect_match "execute_command: a failing command is a result, not an error" 'isError=false sc=\{"success":false,"exit_code":3,' "$(line 37)"
expect_match "delete_file needs a read first" 'isError=true sc=\{"error":"Error: Please read '"'"'/keep.txt'"'"' with read_file before modifying it.","code":"read_before_write"' "$(line 21)"
expect_match "delete_file after a read" '"output":"Successfully deleted '"'"'/keep.txt'"'"'"' "$(line 23)"
expect_match "delete_file recursive" '"output":"Successfully deleted '"'"'/made'"'"'"' "$(line 24)"
expect_match "rmdir needs approval: refused, saying so" 'isError=true sc=\{"error":"Error: rmdir needs a person'"'"'s approval and nobody can be asked here; nothing was done. To allow it, lift needs_approval for '"'"'rmdir'"'"'.*","code":"approval_required"' "$(line 25)"
expect_status "rmdir needing approval removed nothing" 0 "$(test -f "$ws/tree/a/b/c.txt"; echo $?)"
expect_match "read_file: missing file" '"error":"Error: File '"'"'/nope.txt'"'"' not found","code":"not_found"' "$(line 26)"
expect_match "read_file: binary file" 'isError=true sc=\{"error":"Error: [^"]*binary[^"]*","code":"binary_file"' "$(line 27)"
expect_match "a path without a leading /" '"code":"invalid_argument"' "$(line 28)"
expect_match "grep: an invalid regex" '"error":"Invalid regex pattern: [^"]+","code":"invalid_pattern"' "$(line 29)"
expect_match "read_file: offset past the end" '"error":"Error: Line offset 9 exceeds file length \(3 lines\)"' "$(line 30)"
expect_match "an unknown argument" '"error":"Error: ls takes no argument \\"bogus\\"","code":"invalid_argument"' "$(line 31)"
expect_match "an unknown tool" 'id=32 error=-32602' "$(line 32)"
expect_match "execute_command: stdin is refused in upstream's result shape" 'isError=true sc=\{"success":false,"exit_code":null,.*"code":"invalid_argument"' "$(line 33)"
expect_match "delete_file on a directory" '"error":"Error: '"'"'/src'"'"' is a directory","code":"is_directory"' "$(line 34)"
expect_match "rmdir on a non-empty directory (approval first)" '"code":"approval_required"' "$(line 35)"

# ---- read-before-write: a change behind the agent's back -------------------------------------
# The command rewrites same.txt to the same size and puts its mtime back: only the content hash
# can tell.
out=$(talk worker \
  "$(call 1 read_file '{"file_path":"/same.txt"}')" \
  "$(call 2 execute_command '{"command":"cp -p same.txt /tmp/ref && printf \"SAME\\n\" >same.txt && touch -r /tmp/ref same.txt"}')" \
  "$(call 3 edit_file '{"file_path":"/same.txt","old_string":"SAME","new_string":"x"}')" \
  "$(call 4 write_file '{"file_path":"/same.txt","content":"y","overwrite":true}')" \
  "$(call 5 read_file '{"file_path":"/same.txt"}')" \
  "$(call 6 edit_file '{"file_path":"/same.txt","old_string":"SAME","new_string":"fresh"}')" \
  "$(call 7 edit_file '{"file_path":"/same.txt","old_string":"fresh","new_string":"again"}')" \
  "$(call 8 write_file '{"file_path":"/src/app.ts","content":"z","overwrite":true}')" \
)
expect_match "the command changed the file" '"exit_code":0' "$(line 2)"
expect_match "edit_file after a change behind the agent's back: read again" 'isError=true sc=\{"error":"Error: '"'"'/same.txt'"'"' has changed since it was last read. Read it again before modifying.","code":"changed_since_read"' "$(line 3)"
expect_match "write_file too" '"code":"changed_since_read"' "$(line 4)"
expect_match "after reading again the edit goes through" '"output":"Successfully replaced 1 occurrence\(s\)' "$(line 6)"
expect_match "the agent's own edit counts as read" '"output":"Successfully replaced 1 occurrence\(s\)' "$(line 7)"
expect_match "a new session starts with nothing read" '"code":"read_before_write"' "$(line 8)"
expect_status "the file holds the agent's last edit" 0 "$(test "$(cat "$ws/same.txt")" = "again"; echo $?)"

# ---- read-only mode (a role without write authority) -----------------------------------------
out=$(talk observer \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
  "$(call 2 write_file '{"file_path":"/ro.txt","content":"x"}')" \
  "$(call 3 edit_file '{"file_path":"/src/app.ts","old_string":"one","new_string":"x"}')" \
  "$(call 4 read_file '{"file_path":"/src/app.ts","limit":1}')" \
  "$(call 5 execute_command '{"command":"touch ro.txt"}')" \
)
expect_nomatch "read-only: write tools and commands are not listed" '[=,](write_file|edit_file|delete_file|mkdir|rmdir|execute_command)(,|$)' "$(line 1)"
expect_match "read-only: reading tools are" 'tools=ls,read_file,stat,list_tree,list_files,glob,grep' "$(line 1)"
expect_match "read-only: write_file refused" 'id=2 error=-32602' "$(line 2)"
expect_match "read-only: edit_file refused" 'id=3 error=-32602' "$(line 3)"
expect_match "read-only: read_file works" '"output":"     1\\tone"' "$(line 4)"
expect_match "read-only: execute_command refused" 'id=5 error=-32602' "$(line 5)"
expect_status "read-only: nothing was written" 1 "$(test -e "$ws/ro.txt"; echo $?)"

# ---- the path escapes of protocol_paths.sh, against this surface's rules ---------------------
out=$(talk worker \
  "$(call 1 read_file '{"file_path":"/../outside/secret.txt"}')" \
  "$(call 2 read_file '{"file_path":"'"$out_dir"'/secret.txt"}')" \
  "$(call 3 read_file '{"file_path":"/final_link"}')" \
  "$(call 4 read_file '{"file_path":"/dir_link/secret.txt"}')" \
  "$(call 5 write_file '{"file_path":"/dangling","content":"x"}')" \
  "$(call 6 read_file '{"file_path":"/magic"}')" \
  "$(call 7 read_file '{"file_path":"/sub/rel_link"}')" \
  "$(call 8 read_file '{"file_path":"/hard"}')" \
  "$(call 9 write_file '{"file_path":"/dir_link/new.txt","content":"x"}')" \
  "$(call 10 edit_file '{"file_path":"/final_link","old_string":"SECRET","new_string":"pwned"}')" \
  "$(call 11 ls '{"path":"/.."}')" \
  "$(call 12 grep '{"pattern":"SECRET","path":"/dir_link"}')" \
  "$(call 13 execute_command '{"command":"pwd","cwd":"/../.."}')" \
  "$(call 14 write_file '{"file_path":"/sub/../../outside/w.txt","content":"x"}')" \
  "$(call 15 read_file '{"file_path":"~/secret.txt"}')" \
  "$(call 16 glob '{"pattern":"../outside/*"}')" \
  "$(call 17 list_tree '{"path":"/dir_link"}')" \
  "$(call 18 delete_file '{"file_path":"/final_link/x"}')" \
  "$(call 19 stat '{"path":"/dir_link/secret.txt"}')" \
  "$(call 20 read_file '{"file_path":"/sub/in.txt"}')" \
)
denied='isError=true sc=\{"error":"[^"]*","code":"(denied|not_found|path_traversal)"'
check() { # id name [echo]: with "echo", the answer may repeat the path the agent itself sent
    l=$(line "$1")
    leak="SECRET-OUTSIDE\|root:x:\|$T_TMP"
    [ "${3:-}" = echo ] && leak="SECRET-OUTSIDE\|root:x:"
    if printf '%s' "$l" | grep -Eq "$denied" && ! printf '%s' "$l" | grep -q "$leak"; then ok "$2"
    else fail "$2" "answer: $l"; fi
}
traversal() { # id name: refused by the surface's own rule
    if line "$1" | grep -q '"code":"path_traversal"'; then ok "$2"; else fail "$2" "answer: $(line "$1")"; fi
}
traversal 1 "'..' out of the root: path_traversal"
check 2 "an absolute host path is a workspace path (not found inside)" echo
check 3 "a final symlink leading out"
check 4 "an intermediate symlink leading out"
check 5 "writing through a dangling symlink leading out"
check 6 "a /proc magic link"
check 7 "a relative symlink climbing out"
if [ -e "$ws/hard" ]; then check 8 "a hard link to a file outside"; else ok "# SKIP hard link (cross-device)"; fi
check 9 "writing through an intermediate symlink"
check 10 "editing through a final symlink"
traversal 11 "ls '/..': path_traversal"
l=$(line 12)
if printf '%s' "$l" | grep -q "SECRET-OUTSIDE"; then fail "grep through a symlinked directory" "$l"; else ok "grep through a symlinked directory finds nothing outside"; fi
traversal 13 "a working directory out of the root: path_traversal"
traversal 14 "a path climbing out through a subdirectory: path_traversal"
traversal 15 "'~': path_traversal"
traversal 16 "a glob pattern climbing out: path_traversal"
check 17 "list_tree through a symlinked directory"
check 18 "deleting through a final symlink"
check 19 "stat through a symlinked directory"
expect_status "nothing was created outside" 0 "$(ls "$out_dir" | grep -vx secret.txt | wc -l)"
expect_status "the outside file is unchanged" 0 "$(grep -c pwned "$out_dir/secret.txt")"
expect_match "a path inside still works" 'isError=false sc=\{"output":"     1\\tinside"' "$(line 20)"

# ---- the trail: refusals by the rules are denials, ordinary failures are not ----------------
run_capture tout terr rc "$CORRAL" trail --db "$db" --type denial --json
expect_match "trail: a read-before-write denial" '"rule":"read before write"' "$tout"
expect_match "trail: a changed-since-read denial" '"rule":"read before write \(changed since read\)"' "$tout"
expect_match "trail: an approval denial" '"rule":"needs approval"' "$tout"
expect_match "trail: a traversal denial" "\"rule\":\"workspace paths: no '..' or '~'\"" "$tout"
expect_match "trail: a containment denial" '"rule":"workspace containment"' "$tout"
expect_match "trail: a symlink denial" '"rule":"no symlinks"' "$tout"
expect_match "trail: a disabled-tool denial in read-only mode" '"rule":"tool disabled by policy"' "$tout"
expect_nomatch "trail: a missing file is no denial" '"reason":"not_found"' "$tout"
run_capture tout terr rc "$CORRAL" trail verify --db "$db"
expect_status "the trail verifies" 0 "$rc" "$terr $tout"
