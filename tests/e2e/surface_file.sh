#!/bin/sh
# tests/e2e/surface_file.sh: the File Tools surface (seed 001) through the real pipe of `corral
# exec --workspace` with a policy whose roles speak "surface": "file": every tool, every error
# code, the policy's approval and read-first rules, a read-only role, the trail's denial entries,
# and the path escapes of protocol_paths.sh against this surface's path rules, one check each.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
out_dir=$T_TMP/outside
pol=$T_TMP/policy.json
db=$T_TMP/trail.db
trap 'chattr -i "$ws/locked" 2>/dev/null; umount "$ws/small" 2>/dev/null; rm -rf "$T_TMP"' EXIT
cat >"$pol" <<'EOF'
{
  "version": 1,
  "roles": {
    "filer": { "extends": "worker", "surface": "file",
               "tools": { "limits": { "max_file_size": "64K" } } },
    "careful": { "extends": "worker", "surface": "file",
                 "tools": { "needs_approval": [ "file.delete" ],
                            "read_before_write": [ "file.write", "file.patch" ] } },
    "watcher": { "extends": "observer", "surface": "file" }
  }
}
EOF
mkdir -p "$ws/src/db" "$ws/sub" "$ws/node_modules/x" "$ws/locked" "$ws/small" "$out_dir"
i=1; while [ $i -le 40 ]; do echo pass; i=$((i + 1)); done >"$ws/src/db/connection.py"
printf '# Establish database connection\ndef connect(host, port):\n    return Client(host, port)\n' >>"$ws/src/db/connection.py"
printf 'DEBUG = True\n\ndef connect():\n    return db.connect(timeout=30)\n' >"$ws/src/config.py"
printf 'def connect(): pass\n' >"$ws/node_modules/x/index.py"
printf 'x = 1\nx = 1\n' >"$ws/dup.txt"
printf 'bin\000ary' >"$ws/blob.bin"
mkfifo "$ws/fifo"
head -c 70000 /dev/zero | tr '\0' 'y' >"$ws/big.txt"
echo keep >"$ws/locked/keep.txt"
echo a >"$ws/a.txt"
echo "SECRET-OUTSIDE" >"$out_dir/secret.txt"
echo inside >"$ws/sub/in.txt"
ln -s "$out_dir/secret.txt" "$ws/final_link"            # final symlink out
ln -s "$out_dir" "$ws/dir_link"                         # intermediate symlink out
ln -s "$out_dir/not-yet.txt" "$ws/dangling"             # dangling symlink out
ln -s /proc/self/root/etc/passwd "$ws/magic"            # /proc magic link
ln -s ../../outside/secret.txt "$ws/sub/rel_link"       # relative symlink climbing out
ln "$out_dir/secret.txt" "$ws/hard" 2>/dev/null || true # hard link to a file outside
chown -R 65534:65534 "$ws"
# A file system refusal (immutable directory) and a full disk (a 16 KiB tmpfs), where the host has them.
locked=no; chattr +i "$ws/locked" 2>/dev/null && locked=yes
small=no; mount -t tmpfs -o size=16k tmpfs "$ws/small" 2>/dev/null && small=yes

call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
talk() { role=$1; shift; "$CORRAL" exec --timeout 60 --policy "$pol" --role "$role" --workspace "$ws" "$@" 2>&1 >/dev/null; }
long=$(printf 'n%.0s' $(seq 1 300))
fill=$(head -c 30000 /dev/zero | tr '\0' 'z')

out=$(talk filer --trail "$db" -- "$AGENTS/rpc_script" "$INIT" \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
  "$(call 2 file.read '{"path":"src/config.py","offset":1,"limit":2}')" \
  "$(call 3 file.write '{"path":"new/dir/f.txt","content":"hello\n"}')" \
  "$(call 4 file.patch '{"path":"src/config.py","patches":[{"find":"DEBUG = True","replace":"DEBUG = False"},{"find":"def connect():\n    return db.connect(timeout=30)","replace":"def connect():\n    return db.connect(timeout=60, retry=3)"}]}')" \
  "$(call 5 file.read '{"path":"src/config.py"}')" \
  "$(call 6 file.list '{"pattern":"**/*.py"}')" \
  "$(call 7 file.search '{"pattern":"def\\s+connect","path":"src/db","glob":"**/*.py","context_lines":1}')" \
  "$(call 8 file.delete '{"path":"new/dir/f.txt"}')" \
  "$(call 9 file.read '{"path":"nope.txt"}')" \
  "$(call 10 file.read '{"path":"../outside/secret.txt"}')" \
  "$(call 11 file.read '{"path":"src"}')" \
  "$(call 12 file.write '{"path":"'"$long"'","content":"x"}')" \
  "$(call 13 file.write '{"path":"small/fill.txt","content":"'"$fill"'"}')" \
  "$(call 14 file.patch '{"path":"dup.txt","patches":[{"find":"x = 1","replace":"x = 2"}]}')" \
  "$(call 15 file.patch '{"path":"src/config.py","patches":[{"find":"DEBUG = False","replace":"X"},{"find":"no such text","replace":"y"}]}')" \
  "$(call 16 file.list '{"path":"src/config.py"}')" \
  "$(call 17 file.search '{"pattern":"(unclosed"}')" \
  "$(call 18 file.read '{"path":5}')" \
  "$(call 19 file.write '{"path":"locked/new.txt","content":"x"}')" \
  "$(call 20 file.read '{"path":"blob.bin"}')" \
  "$(call 21 file.read '{"path":"fifo"}')" \
  "$(call 22 file.patch '{"path":"big.txt","patches":[{"find":"yy","replace":"z"}]}')" \
  "$(call 23 file.read '{"path":"big.txt"}')" \
  "$(call 24 file.delete '{"path":"src"}')" \
  "$(call 25 file.list '{"path":"nope"}')" \
  "$(call 26 file.search '{"pattern":"x","glob":"[a"}')" \
  "$(call 27 file.move '{"path":"a.txt"}')" \
  "$(call 28 file.delete '{"path":"locked/keep.txt"}')" \
  "$(call 29 file.search '{"pattern":"CONNECT","case_sensitive":false,"max_results":1}')" \
  "$(call 30 file.list '{}')" \
)
line() { printf '%s\n' "$out" | grep -F "< id=$1 " | head -1; }
err() { # id code name
    expect_match "$3" 'isError=true sc=\{"error":"'"$2"'","message":".+"\}$' "$(line "$1")"
}
expect_match "tools/list: the six tools of the seed" '"name":"file.read".*"name":"file.write".*"name":"file.patch".*"name":"file.delete".*"name":"file.list".*"name":"file.search"' "$(printf '%s\n' "$out" | grep -F '"id":1,')"
expect_match "file.read: numbered lines, offset/limit, total_lines, truncated" 'isError=false sc=\{"content":"     1\\tDEBUG = True\\n     2\\t\\n","total_lines":4,"truncated":true\}' "$(line 2)"
expect_match "file.write: success, bytes_written, parents made" 'isError=false sc=\{"success":true,"bytes_written":6\}' "$(line 3)"
expect_match "file.patch: the seed's example applies both patches" 'isError=false sc=\{"success":true,"patches_applied":2\}' "$(line 4)"
expect_match "... in order, in the file" '"content":"     1\\tDEBUG = False\\n.*timeout=60, retry=3\)\\n","total_lines":4,"truncated":false' "$(line 5)"
expect_match "file.list: a ** glob, relative paths, size and modified" '"files":\[\{"path":"src/config.py","size":[0-9]+,"modified":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"\},\{"path":"src/db/connection.py"' "$(line 6)"
expect_nomatch "file.list: the default exclusions hold" 'node_modules' "$(line 6)"
expect_match "file.search: the seed's example, --> marker and context" 'isError=false sc=\{"matches":\[\{"path":"src/db/connection.py","line":42,"content":"    # Establish database connection\\n--> def connect\(host, port\):\\n        return Client\(host, port\)"\}\],"truncated":false\}' "$(line 7)"
expect_match "file.delete: success" 'isError=false sc=\{"success":true\}$' "$(line 8)"
if [ -e "$ws/new/dir/f.txt" ]; then fail "... and the file is gone" "still there"; else ok "... and the file is gone"; fi
err 9 file_not_found "file_not_found"
err 10 path_outside_workspace "path_outside_workspace"
err 11 is_directory "is_directory (file.read of a directory)"
err 12 write_failed "write_failed (a name the file system refuses)"
if [ $small = yes ]; then err 13 write_failed "write_failed (a full disk)"
else ok "write_failed (a full disk) # SKIP no tmpfs mount here"; fi
err 14 find_not_unique "find_not_unique"
err 15 find_not_found "find_not_found"
expect_match "... naming the patch" 'patches\[1\]\.find' "$(line 15)"
expect_match "... and nothing applied (all or none)" 'DEBUG = False' "$(cat "$ws/src/config.py")"
err 16 not_a_directory "not_a_directory"
err 17 invalid_pattern "invalid_pattern (a regex that does not compile)"
err 18 invalid_argument "invalid_argument"
if [ $locked = yes ]; then
    err 19 permission_denied "permission_denied (an immutable directory)"
    err 28 permission_denied "permission_denied (file.delete there)"
else
    ok "permission_denied # SKIP no chattr on this file system"; ok "permission_denied (delete) # SKIP"
fi
err 20 binary_file "binary_file"
err 21 not_a_regular_file "not_a_regular_file (a fifo)"
err 22 file_too_large "file_too_large (over the policy's max_file_size)"
expect_match "file.read of a file over the cap: truncated, pageable" '"total_lines":1,"truncated":true\}' "$(line 23)"
err 24 is_directory "is_directory (file.delete of a directory)"
err 25 file_not_found "file_not_found (file.list of a missing directory)"
err 26 invalid_pattern "invalid_pattern (a glob that does not compile)"
expect_match "an unknown tool: -32602" 'error=-32602 ' "$(line 27)"
expect_match "file.search: case_sensitive false, max_results, truncated" '"matches":\[\{"path":"src/config.py","line":3,"content":"def connect\(\):"\}\],"truncated":true\}' "$(line 29)"
expect_match "file.list: files of the directory only" '"files":\[\{"path":"a.txt".*"path":"dup.txt"' "$(line 30)"
expect_nomatch "... no directory among them" '"path":"(src|sub|locked)"' "$(line 30)"
expect_nomatch "no answer names the host directory" "$T_TMP" "$out"

run_capture tr terr trc "$CORRAL" trail --db "$db" --type denial --json
expect_match "the trail: path_outside_workspace is a denial, rule named" '"reason":"path_outside_workspace"' "$tr"
expect_match "... with its rule" '"rule":"workspace containment"' "$tr"
expect_nomatch "... file_not_found is not" '"reason":"file_not_found"' "$tr"
run_capture tr terr trc "$CORRAL" trail verify --db "$db"
expect_status "the trail verifies" 0 "$trc" "$terr $tr"

# The policy's rules: approval held (refused until a highway exists), read before write.
out=$(talk careful -- "$AGENTS/rpc_script" "$INIT" \
  "$(call 1 file.write '{"path":"a.txt","content":"v2\n"}')" \
  "$(call 2 file.read '{"path":"a.txt"}')" \
  "$(call 3 file.write '{"path":"a.txt","content":"v2\n"}')" \
  "$(call 4 file.patch '{"path":"a.txt","patches":[{"find":"v2","replace":"v3"}]}')" \
  "$(call 5 file.delete '{"path":"a.txt"}')" \
  "$(call 6 file.write '{"path":"fresh.txt","content":"new\n"}')" \
  "$(call 7 file.patch '{"path":"dup.txt","patches":[{"find":"x = 1\nx","replace":"y"}]}')" \
)
err 1 read_required "read_required: a write before any read"
expect_match "after a read the write goes through" 'isError=false sc=\{"success":true,"bytes_written":3\}' "$(line 3)"
expect_match "the agent's own write counts as read" 'isError=false sc=\{"success":true,"patches_applied":1\}' "$(line 4)"
err 5 approval_required "approval_required: file.delete needs approval"
expect_match "... and the file is still there" 'v3' "$(cat "$ws/a.txt")"
expect_match "a new file needs no read" 'isError=false' "$(line 6)"
err 7 read_required "read_required: file.patch of an unread file"

# A read-only role: the write tools are not its to call.
out=$(talk watcher -- "$AGENTS/rpc_script" "$INIT" \
  "$(call 1 file.write '{"path":"a.txt","content":"x"}')" \
  "$(call 2 file.read '{"path":"a.txt"}')" \
  "$(call 3 file.search '{"pattern":"v3"}')" \
)
expect_match "read-only role: file.write is refused" 'error=-32602 ' "$(line 1)"
expect_match "read-only role: file.read works" 'isError=false sc=\{"content":"     1\\tv3\\n"' "$(line 2)"
expect_match "read-only role: file.search works" '"path":"a.txt","line":1' "$(line 3)"

# Every path escape of protocol_paths.sh, against this surface: the call fails with
# path_outside_workspace (or file_not_found where that is the truth), nothing outside is read or
# changed, and no host path appears in any answer.
out=$(talk filer -- "$AGENTS/rpc_script" "$INIT" \
  "$(call 1 file.read '{"path":"../outside/secret.txt"}')" \
  "$(call 2 file.read '{"path":"'"$out_dir"'/secret.txt"}')" \
  "$(call 3 file.read '{"path":"final_link"}')" \
  "$(call 4 file.read '{"path":"dir_link/secret.txt"}')" \
  "$(call 5 file.write '{"path":"dangling","content":"x"}')" \
  "$(call 6 file.read '{"path":"magic"}')" \
  "$(call 7 file.read '{"path":"sub/rel_link"}')" \
  "$(call 8 file.read '{"path":"hard"}')" \
  "$(call 9 file.write '{"path":"dir_link/new.txt","content":"x"}')" \
  "$(call 10 file.patch '{"path":"final_link","patches":[{"find":"SECRET","replace":"pwned"}]}')" \
  "$(call 11 file.list '{"path":".."}')" \
  "$(call 12 file.search '{"pattern":"SECRET","path":"dir_link"}')" \
  "$(call 13 file.delete '{"path":"dir_link/secret.txt"}')" \
  "$(call 14 file.write '{"path":"sub/../../outside/w.txt","content":"x"}')" \
  "$(call 15 file.read '{"path":"sub/in.txt"}')" \
  "$(call 16 file.search '{"pattern":"SECRET|root:x:"}')" \
  "$(call 17 file.list '{"pattern":"../**"}')" \
  "$(call 18 file.search '{"pattern":"SECRET","glob":"../**"}')" \
  "$(call 19 file.patch '{"path":"dir_link/secret.txt","patches":[{"find":"SECRET","replace":"pwned"}]}')" \
  "$(call 20 file.list '{"path":"/"}')" \
)
denied='isError=true sc=\{"error":"(path_outside_workspace|file_not_found)","message":'
check() { # id name [echo]: with "echo", the answer may repeat the path the agent itself sent
    l=$(line "$1")
    leak="SECRET-OUTSIDE\|root:x:\|$T_TMP"
    [ "${3:-}" = echo ] && leak="SECRET-OUTSIDE\|root:x:"
    if printf '%s' "$l" | grep -Eq "$denied" && ! printf '%s' "$l" | grep -q "$leak"; then ok "$2"
    else fail "$2" "answer: $l"; fi
}
check 1 "escape: '..' out of the root"
check 2 "escape: an absolute host path" echo
check 3 "escape: a final symlink leading out"
check 4 "escape: an intermediate symlink leading out"
check 5 "escape: writing through a dangling symlink leading out"
check 6 "escape: a /proc magic link"
check 7 "escape: a relative symlink climbing out"
if [ -e "$ws/hard" ]; then check 8 "escape: a hard link to a file outside"; else ok "escape: hard link # SKIP (cross-device)"; fi
check 9 "escape: writing through an intermediate symlink"
check 10 "escape: patching through a final symlink"
check 11 "escape: listing '..'"
check 12 "escape: searching a symlinked directory"
check 13 "escape: deleting through an intermediate symlink"
check 14 "escape: a path climbing out through a subdirectory"
expect_match "a path inside still works" 'isError=false sc=\{"content":"     1\\tinside\\n"' "$(line 15)"
expect_match "escape: a search of the root never follows a link out" 'isError=false sc=\{"matches":\[\],"truncated":false\}' "$(line 16)"
expect_match "escape: a file.list pattern climbing out matches nothing" 'isError=false sc=\{"files":\[\]\}' "$(line 17)"
expect_match "escape: a file.search glob climbing out matches nothing" 'isError=false sc=\{"matches":\[\],"truncated":false\}' "$(line 18)"
check 19 "escape: patching through an intermediate symlink"
check 20 "escape: listing the absolute root"
expect_status "nothing was created outside" 0 "$(ls "$out_dir" | grep -vx secret.txt | wc -l)"
expect_status "the outside file is unchanged" 0 "$(grep -c pwned "$out_dir/secret.txt")"
expect_status "the outside file is still there" 0 "$(test -f "$out_dir/secret.txt"; echo $?)"
