#!/bin/sh
# tests/e2e/protocol_paths.sh: every path escape through the real pipe, one check each: the call
# fails (PERMISSION_DENIED, or FILE_NOT_FOUND where that is the truth), nothing outside the root
# is read or changed, and no host path appears in any answer.
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
out_dir=$T_TMP/outside
mkdir -p "$ws/sub" "$out_dir"
echo "SECRET-OUTSIDE" >"$out_dir/secret.txt"
echo inside >"$ws/sub/in.txt"
ln -s "$out_dir/secret.txt" "$ws/final_link"            # final symlink out
ln -s "$out_dir" "$ws/dir_link"                         # intermediate symlink out
ln -s "$out_dir/not-yet.txt" "$ws/dangling"             # dangling symlink out
ln -s /proc/self/root/etc/passwd "$ws/magic"            # /proc magic link
ln -s ../../outside/secret.txt "$ws/sub/rel_link"       # relative symlink climbing out
ln "$out_dir/secret.txt" "$ws/hard" 2>/dev/null || cp "$out_dir/secret.txt" "$ws/hard.nolink"
chown -R 65534:65534 "$ws"
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
out=$("$CORRAL" exec --timeout 60 --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" \
  "$(call 1 readFile '{"path":"../outside/secret.txt"}')" \
  "$(call 2 readFile '{"path":"'"$out_dir"'/secret.txt"}')" \
  "$(call 3 readFile '{"path":"final_link"}')" \
  "$(call 4 readFile '{"path":"dir_link/secret.txt"}')" \
  "$(call 5 writeFile '{"path":"dangling","content":"x"}')" \
  "$(call 6 readFile '{"path":"magic"}')" \
  "$(call 7 readFile '{"path":"sub/rel_link"}')" \
  "$(call 8 readFile '{"path":"hard"}')" \
  "$(call 9 writeFile '{"path":"dir_link/new.txt","content":"x"}')" \
  "$(call 10 modifyFile '{"path":"final_link","operations":[{"type":"insert","afterLine":0,"newContent":"pwned"}]}')" \
  "$(call 11 exploreFiles '{"path":".."}')" \
  "$(call 12 searchFiles '{"paths":["dir_link"],"query":"SECRET","type":"literal","recursive":true}')" \
  "$(call 13 executeCommand '{"command":"pwd","workingDirectory":"../.."}')" \
  "$(call 14 writeFile '{"path":"sub/../../outside/w.txt","content":"x"}')" \
  "$(call 15 readFile '{"path":"sub/in.txt"}')" \
  2>&1 >/dev/null)
line() { printf '%s\n' "$out" | grep -F "< id=$1 " | head -1; }
denied='isError=true sc=\{"error":"[^"]*","code":"(PERMISSION_DENIED|FILE_NOT_FOUND)"'
check() { # id name [echo]: with "echo", the answer may repeat the path the agent itself sent
    l=$(line "$1")
    leak="SECRET-OUTSIDE\|root:x:\|$T_TMP"
    [ "${3:-}" = echo ] && leak="SECRET-OUTSIDE\|root:x:"
    if printf '%s' "$l" | grep -Eq "$denied" && ! printf '%s' "$l" | grep -q "$leak"; then ok "$2"
    else fail "$2" "answer: $l"; fi
}
check 1 "'..' out of the root"
check 2 "an absolute host path" echo
check 3 "a final symlink leading out"
check 4 "an intermediate symlink leading out"
check 5 "writing through a dangling symlink leading out"
check 6 "a /proc magic link"
check 7 "a relative symlink climbing out"
if [ -e "$ws/hard" ]; then check 8 "a hard link to a file outside"; else ok "# SKIP hard link (cross-device)"; fi
check 9 "writing through an intermediate symlink"
check 10 "modifying through a final symlink"
check 11 "exploring '..'"
l=$(line 12)
if printf '%s' "$l" | grep -q "SECRET-OUTSIDE"; then fail "searching through a symlinked directory" "$l"; else ok "searching through a symlinked directory finds nothing outside"; fi
expect_match "a working directory out of the root" 'isError=true' "$(line 13)"
check 14 "a path climbing out through a subdirectory"
expect_status "nothing was created outside" 0 "$(ls "$out_dir" | grep -vx secret.txt | wc -l)"
expect_status "the outside file is unchanged" 0 "$(grep -c pwned "$out_dir/secret.txt")"
expect_match "a path inside still works" 'isError=false sc=\{"content":"inside\\n"' "$(line 15)"
