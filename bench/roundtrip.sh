#!/bin/sh
# bench/roundtrip.sh: tool round trips through corral's pipe versus the official MCP filesystem
# server (npm @modelcontextprotocol/server-filesystem), both driven by the same driver
# (bench/rt_driver.c) over stdio, sequentially, one call at a time:
#   1. readFile of a 4 KiB file          vs  read_text_file      (p50, p99, ratio)
#   2. exploreFiles recursive, 2,000 files in 40 directories  vs  directory_tree
# The 4 KiB read is measured with the trail off, normal and full, each against the peer, with the
# goals of issue 17 checked and printed (and a 4 KiB fdatasync of this disk, the unit of the
# trail-full goal).
# Usage: sh bench/roundtrip.sh [N]   (N calls for the 4 KiB read, default 5000)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
n=${1:-5000}
work=$top/build/bench
mkdir -p "$work"
cc -O2 -Wall -Wextra -Werror -o "$work/rt_driver" "$top/bench/rt_driver.c" -lm
drv=$work/rt_driver

# The peer, installed by `make deps` (npm ci in tests/mcp; never fetched here).
peer_dir=$top/tests/mcp/node_modules/@modelcontextprotocol/server-filesystem
peer=$peer_dir/dist/index.js
[ -f "$peer" ] || { echo "bench/roundtrip.sh: the MCP filesystem server is not installed: run 'make deps'" >&2; exit 2; }
peer_version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$peer_dir/package.json" | head -1)

ws=$(mktemp -d /tmp/corral-bench.XXXXXX)
# The trails live in a directory only root can write (mktemp -d: mode 0700): corral refuses a
# trail whose directory others could write, such as /tmp itself.
tdir=$(mktemp -d /tmp/corral-bench-trail.XXXXXX)
trap 'rm -rf "$ws" "$tdir"' EXIT
head -c 3072 /dev/urandom | base64 -w 76 | head -c 4096 >"$ws/file4k.txt"
i=0
while [ $i -lt 40 ]; do
    mkdir -p "$ws/tree/dir$i"
    j=0
    while [ $j -lt 50 ]; do : >"$ws/tree/dir$i/file$j.txt"; j=$((j + 1)); done
    i=$((i + 1))
done
# Owned by the sandbox's host user, like a workspace handed to an agent.
chown -R 65534:65534 "$ws"

result() { sed -n 's/.*\(RESULT .*\)/\1/p' | tail -1; }
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
# goal LABEL RATIO MIN: "met" or "NOT met"
goal() { awk -v r="$2" -v m="$3" -v l="$1" 'BEGIN { printf "%s %.1fx (goal >= %gx: %s)", l, r, m, (r >= m ? "met" : "NOT met") }'; }

echo "== readFile 4 KiB, $n sequential calls (after 50 warm-up calls), the same driver for both"
echo "   (a read runs before its entries commit; its answer waits for the turn's one group commit)"
p=$("$drv" "$n" read_text_file "{\"path\":\"$ws/file4k.txt\"}" -- node "$peer" "$ws" 2>&1 | result)
off=$("$CORRAL" exec --workspace "$ws" -- "$drv" "$n" readFile '{"path":"file4k.txt"}' 2>&1 | result)
nor=$("$CORRAL" exec --trail "$tdir/rt-normal.db" --trail-durability normal --workspace "$ws" -- "$drv" "$n" readFile '{"path":"file4k.txt"}' 2>&1 | result)
ful=$("$CORRAL" exec --trail "$tdir/rt-full.db" --trail-durability full --workspace "$ws" -- "$drv" "$n" readFile '{"path":"file4k.txt"}' 2>&1 | result)
rm -f "$tdir/rt-normal.db"* "$tdir/rt-full.db"*
fds=$("$drv" fdatasync "$tdir/rt-fdatasync.tmp" 500 2>&1 | result)
echo "server-filesystem $peer_version: $p"
echo "corral, trail off:    $off"
echo "corral, trail normal: $nor"
echo "corral, trail full:   $ful"
echo "this disk, 4 KiB write + fdatasync: $fds"
pp50=$(field "$p" p50_us); pp99=$(field "$p" p99_us)
for m in off nor; do
    eval "r=\$$m"
    case $m in off) label="trail off"; want=20 ;; *) label="trail normal"; want=10 ;; esac
    echo "$label vs the peer: $(goal p50 "$(ratio "$pp50" "$(field "$r" p50_us)")" $want), $(goal p99 "$(ratio "$pp99" "$(field "$r" p99_us)")" $want)"
done
echo "trail full vs the peer: p50 $(ratio "$pp50" "$(field "$ful" p50_us)")x, p99 $(ratio "$pp99" "$(field "$ful" p99_us)")x"
awk -v f="$(field "$ful" p50_us)" -v o="$(field "$off" p50_us)" -v s="$(field "$fds" p50_us)" 'BEGIN {
    printf "trail full p50 - trail off p50 = %.0f us (goal <= one fdatasync + 50 us = %.0f us: %s)\n", f - o, s + 50, (f - o <= s + 50 ? "met" : "NOT met") }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "peer start-up (spawn to initialize answer): $(field "$p" init_us) us"

echo "== listing: 2,000 files in 40 directories, 20 sequential calls"
c=$("$CORRAL" exec --workspace "$ws" -- "$drv" 20 exploreFiles '{"path":"tree","recursive":true}' 2>&1 | result)
p=$("$drv" 20 directory_tree "{\"path\":\"$ws/tree\"}" -- node "$peer" "$ws" 2>&1 | result)
echo "corral exploreFiles:         $c"
echo "server-filesystem directory_tree: $p"
echo "ratio (peer / corral): p50 $(ratio "$(field "$p" p50_us)" "$(field "$c" p50_us)")x"
echo "(exploreFiles applies the WAP seed's limit of 500 entries: isTruncated true, totalFound exact)"

t0=$(date +%s%N)
"$CORRAL" exec --workspace "$ws" -- "$drv" 1 getWorkspaceInfo '{}' 2>/dev/null
t1=$(date +%s%N)
echo "== corral exec start to end, one call (sandbox set-up included): $(( (t1 - t0) / 1000 )) us"
