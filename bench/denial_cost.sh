#!/bin/sh
# bench/denial_cost.sh: the cost of one denied syscall as the program sees it: the filter's own
# EPERM (corral exec) against the user-notification round trip (corral exec --trail: the
# supervisor receives, counts, answers EPERM; past the first 16 per syscall nothing is written).
# The program times N keyctl calls past its first 100 (tests/hostile/denials loop N); rounds
# alternate; prints each round and the medians in microseconds per call.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
N=${N:-100000}
R=${R:-5}
D="$top/build/tests/hostile/denials"
[ -x "$D" ] || { echo "bench: build the hostile programs first: make test-build"; exit 1; }
tdb=$(mktemp -d /tmp/corral-bench.XXXXXX)
trap 'rm -rf "$tdb"' EXIT
plain="" notif=""
i=0
while [ $i -lt "$R" ]; do
    a=$("$CORRAL" exec -- "$D" loop "$N" | awk '/^loop-steady-ns/ { print $2 / 1000 }')
    b=$("$CORRAL" exec --trail "$tdb/t.db" -- "$D" loop "$N" | awk '/^loop-steady-ns/ { print $2 / 1000 }')
    echo "round $i: filter EPERM ${a} us, USER_NOTIF round trip ${b} us"
    plain="$plain $a" notif="$notif $b"
    i=$((i + 1))
done
med() { printf '%s\n' $1 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mp=$(med "$plain") mn=$(med "$notif")
echo "median of $R rounds, $N calls each: filter EPERM $mp us/call, USER_NOTIF $mn us/call ($(awk "BEGIN { printf \"%.1f\", $mn / $mp }")x)"
