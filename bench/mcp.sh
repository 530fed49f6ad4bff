#!/bin/sh
# bench/mcp.sh: `corral mcp` against the official MCP filesystem server (npm
# @modelcontextprotocol/server-filesystem, installed by `make deps` in tests/mcp/node_modules),
# both started and driven by the same client (bench/rt_driver.c) over stdio, as a host does:
#   1. start-up: spawn to the initialize answer (median of R starts)
#   2. readFile of a 4 KiB file vs read_text_file: N sequential round trips, p50 / p99,
#      corral with the trail off, and on (normal and full durability)
# Usage: sh bench/mcp.sh [N] [R]   (N calls, default 5000; R starts, default 20)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
n=${1:-5000}
starts=${2:-20}
work=$top/build/bench
mkdir -p "$work"
cc -O2 -Wall -Wextra -Werror -o "$work/rt_driver" "$top/bench/rt_driver.c" -lm
drv=$work/rt_driver
peer=$top/tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
if [ ! -f "$peer" ]; then
    echo "bench/mcp.sh: the peer is not installed: run 'make deps' (npm ci in tests/mcp)" >&2
    exit 1
fi
peer_version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$(dirname "$peer")/../package.json" | head -1)

ws=$(mktemp -d /tmp/corral-bench-mcp.XXXXXX)
# The trails live in a directory only root can write (mktemp -d: mode 0700): corral refuses a
# trail whose directory others could write, such as /tmp itself.
tdir=$(mktemp -d /tmp/corral-bench-trail.XXXXXX)
trap 'rm -rf "$ws" "$tdir"' EXIT
head -c 3072 /dev/urandom | base64 -w 76 | head -c 4096 >"$ws/file4k.txt"
chown -R 65534:65534 "$ws"

result() { sed -n 's/.*\(RESULT .*\)/\1/p' | tail -1; }
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
# goal LABEL RATIO MIN: "met" or "NOT met" (MIN 0: no goal, the ratio alone)
goal() { awk -v r="$2" -v m="$3" -v l="$1" 'BEGIN { if (m > 0) printf "%s %.1fx (goal >= %gx: %s)", l, r, m, (r >= m ? "met" : "NOT met"); else printf "%s %.1fx", l, r }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "== start-up: spawn to the initialize answer, median of $starts"
c_init=$(i=0; while [ $i -lt "$starts" ]; do "$drv" 1 getWorkspaceInfo '{}' -- "$CORRAL" mcp --workspace "$ws" 2>&1 | result | sed -n 's/.* init_us=\([^ ]*\).*/\1/p'; i=$((i + 1)); done | median)
p_init=$(i=0; while [ $i -lt "$starts" ]; do "$drv" 1 list_allowed_directories '{}' -- node "$peer" "$ws" 2>&1 | result | sed -n 's/.* init_us=\([^ ]*\).*/\1/p'; i=$((i + 1)); done | median)
echo "corral mcp:                    $c_init us"
echo "server-filesystem $peer_version: $p_init us"
echo "ratio (peer / corral): $(ratio "$p_init" "$c_init")x"

echo "== 4 KiB read round trip, $n sequential calls (after 50 warm-up calls)"
off=$("$drv" "$n" readFile '{"path":"file4k.txt"}' -- "$CORRAL" mcp --workspace "$ws" 2>&1 | result)
nor=$("$drv" "$n" readFile '{"path":"file4k.txt"}' -- "$CORRAL" mcp --workspace "$ws" --trail "$tdir/normal.db" --trail-durability normal 2>&1 | result)
ful=$("$drv" "$n" readFile '{"path":"file4k.txt"}' -- "$CORRAL" mcp --workspace "$ws" --trail "$tdir/full.db" --trail-durability full 2>&1 | result)
p=$("$drv" "$n" read_text_file "{\"path\":\"$ws/file4k.txt\"}" -- node "$peer" "$ws" 2>&1 | result)
fds=$("$drv" fdatasync "$tdir/fdatasync.tmp" 500 2>&1 | result)
rm -f "$tdir/fdatasync.tmp"
echo "corral mcp, trail off:         $off"
echo "corral mcp, trail normal:      $nor"
echo "corral mcp, trail full:        $ful"
echo "server-filesystem $peer_version: $p"
echo "this disk, 4 KiB write + fdatasync: $fds"
pp50=$(field "$p" p50_us); pp99=$(field "$p" p99_us)
for m in off nor ful; do
    eval "r=\$$m"
    case $m in off) label="trail off"; want=20 ;; nor) label="trail normal"; want=10 ;; *) label="trail full"; want=0 ;; esac
    echo "$label vs the peer: $(goal p50 "$(ratio "$pp50" "$(field "$r" p50_us)")" $want), $(goal p99 "$(ratio "$pp99" "$(field "$r" p99_us)")" $want)"
done
awk -v f="$(field "$ful" p50_us)" -v o="$(field "$off" p50_us)" -v s="$(field "$fds" p50_us)" 'BEGIN {
    printf "trail full p50 - trail off p50 = %.0f us (goal <= one fdatasync + 50 us = %.0f us: %s)\n", f - o, s + 50, (f - o <= s + 50 ? "met" : "NOT met") }'
echo "(with the trail each read records its request, its tool_call start and end and its answer;"
echo " the read runs at once, its answer waits for the turn's one group commit; the peer records nothing)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
