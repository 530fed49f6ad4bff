#!/bin/sh
# tests/e2e/protocol_tools.sh: every WAP tool and every WAP error code, through the real pipe of
# `corral exec --workspace` (the agent is tests/agents/rpc_script inside the sandbox).
. "$TOP/tests/lib.sh"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ws=$T_TMP/ws
mkdir -p "$ws/src/lib" "$ws/node_modules/x"
printf 'line one\nline two\nline three\n' >"$ws/src/app.js"
printf 'export const TODO = 1; // TODO: fix\n' >"$ws/src/lib/util.js"
printf 'ignored\n' >"$ws/node_modules/x/index.js"
printf 'bin\000ary\001\002' >"$ws/blob.bin"
head -c 1200000 /dev/zero | tr '\0' 'x' >"$ws/big.txt"
# The sandbox user owns the workspace, so command sandboxes bind it without an id-mapped mount.
chown -R 65534:65534 "$ws"
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' "$1" "$2" "$3"; }
talk() { "$CORRAL" exec --timeout 60 --workspace "$ws" -- "$AGENTS/rpc_script" "$INIT" "$@" 2>&1 >/dev/null; }

out=$(talk \
  "$(call 1 exploreFiles '{"path":".","recursive":true}')" \
  "$(call 2 readFile '{"path":"src/app.js","startLine":2,"endLine":3}')" \
  "$(call 3 writeFile '{"path":"new/dir/f.txt","content":"hello\n","createDirectories":true}')" \
  "$(call 4 writeFile '{"path":"new/dir/f.txt","content":"more\n","mode":"append"}')" \
  "$(call 5 writeFile '{"path":"new/dir/f.txt","content":"x","mode":"create"}')" \
  "$(call 6 modifyFile '{"path":"src/app.js","operations":[{"type":"replace","startLine":1,"endLine":1,"newContent":"LINE ONE"},{"type":"regexReplace","pattern":"line (\\w+)","replacement":"L-$1","flags":"g"}]}')" \
  "$(call 7 searchFiles '{"paths":["."],"query":"TODO:","type":"literal","recursive":true,"contextLines":1}')" \
  "$(call 8 executeCommand '{"command":"cat src/app.js; echo $FOO; pwd","workingDirectory":".","environment":{"FOO":"bar"}}')" \
  "$(call 9 getWorkspaceInfo '{}')" \
  "$(call 10 readFile '{"path":"nope.txt"}')" \
  "$(call 11 readFile '{"path":"../../etc/passwd"}')" \
  "$(call 12 readFile '{"path":"big.txt"}')" \
  "$(call 13 readFile '{"path":5}')" \
  "$(call 14 executeCommand '{"command":"sleep 5","timeout":300}')" \
  "$(call 15 executeCommand '{"command":"true","workingDirectory":"no/such/dir"}')" \
  "$(call 16 readFile '{"path":"blob.bin"}')" \
  "$(call 17 modifyFile '{"path":"src/app.js","operations":[{"type":"delete","startLine":1,"endLine":1},{"type":"delete","startLine":99,"endLine":100}]}')" \
  "$(call 18 readFile '{"path":"src/app.js"}')" \
  "$(call 19 noSuchTool '{}')" \
  '{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"readFile","arguments":"src/app.js"}}' \
)
line() { printf '%s\n' "$out" | grep -F "< id=$1 " | head -1; }
expect_match "exploreFiles lists the tree, default exclusions applied" '"path":"/?src/lib/util.js"' "$(line 1)"
expect_nomatch "exploreFiles skips node_modules" 'node_modules/x' "$(line 1)"
expect_match "readFile returns a line range" 'isError=false sc=\{"content":"line two\\nline three\\n".*"totalLines":3,"returnedLines":2' "$(line 2)"
expect_match "writeFile creates directories" 'isError=false sc=\{"success":true,"path":"[^"]*new/dir/f.txt","bytesWritten":6' "$(line 3)"
expect_match "writeFile appends" '"bytesWritten":5' "$(line 4)"
expect_match "writeFile mode create refuses an existing file" 'isError=true' "$(line 5)"
expect_status "the file has both writes" 0 "$(test "$(cat "$ws/new/dir/f.txt")" = "$(printf 'hello\nmore')" ; echo $?)"
expect_match "modifyFile applies replace and regexReplace" 'isError=false sc=\{"success":true' "$(line 6)"
expect_match "searchFiles finds the literal with context" '"matches":\[\{"path":"[^"]*src/lib/util.js","line":1,.*"totalMatches":1' "$(line 7)"
expect_match "executeCommand runs in /workspace with the request's environment" '"stdout":"LINE ONE\\nL-two\\nL-three\\nbar\\n/workspace\\n".*"exitCode":0' "$(line 8)"
expect_match "getWorkspaceInfo gives the limits" '"limits":\{"maxFileSize":1048576' "$(line 9)"
expect_nomatch "getWorkspaceInfo shows no host path" "$T_TMP" "$(line 9)"
expect_match "FILE_NOT_FOUND" 'isError=true sc=\{"error":"[^"]+","code":"FILE_NOT_FOUND"' "$(line 10)"
expect_match "PERMISSION_DENIED for a path out of the root" '"code":"PERMISSION_DENIED"' "$(line 11)"
expect_match "SIZE_LIMIT_EXCEEDED or truncation for a file over maxFileSize" '"code":"SIZE_LIMIT_EXCEEDED"|"isTruncated":true' "$(line 12)"
expect_match "INVALID_ARGUMENT for a wrong type" '"code":"INVALID_ARGUMENT"' "$(line 13)"
expect_match "TIMEOUT for a command past its timeout" '"code":"TIMEOUT"' "$(line 14)"
expect_match "an unknown working directory is an error" 'isError=true' "$(line 15)"
expect_match "a binary file is refused for a text read" 'isError=true sc=\{"error":"[^"]*binary' "$(line 16)"
expect_match "modifyFile with a bad operation is refused" 'isError=true' "$(line 17)"
expect_match "and applied nothing (all or none)" '"content":"LINE ONE\\nL-two\\nL-three\\n"' "$(line 18)"
expect_match "unknown tool: -32602" 'error=-32602 ' "$(line 19)"
expect_match "arguments not an object: -32602" 'error=-32602 ' "$(line 20)"
