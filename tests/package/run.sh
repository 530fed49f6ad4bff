#!/bin/sh
# tests/package/run.sh: runs tests/package/deb.sh and counts its TAP like tests/run.sh does,
# ending with "N passed, N failed".
top=$(cd "$(dirname "$0")/../.." && pwd)
log=$(mktemp /tmp/corral-package.XXXXXX)
TOP=$top CORRAL=/usr/bin/corral sh "$top/tests/package/deb.sh" >"$log" 2>&1
rc=$?
p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log")
[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1 && echo "not ok - package/deb exited with status $rc" >>"$log"
[ "$p" -eq 0 ] && [ "$f" -eq 0 ] && f=1
cat "$log"
rm -f "$log"
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
