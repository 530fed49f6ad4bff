#!/bin/sh
# bench/roundtrip.sh: tool round trips through corral's pipe versus the official MCP filesystem
# server (npm @modelcontextprotocol/server-filesystem), both driven by the same driver
# (bench/rt_driver.c) over stdio, sequentially, one call at a time:
#   1. readFile of a 4 KiB file          vs  read_text_file      (p50, p99, ratio)
#   2. exploreFiles recursive, 2,000 files in 40 directories  vs  directory_tree
# corral runs with the trail off for the comparison with the peer; a second section measures the
# trail's cost: the same round trip with --trail in normal and in full durability.
# Usage: sh bench/roundtrip.sh [N]   (N calls for the 4 KiB read, default 5000)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
n=${1:-5000}
work=$top/build/bench
mkdir -p "$work"
cc -O2 -Wall -Wextra -Werror -o "$work/rt_driver" "$top/bench/rt_driver.c"
drv=$work/rt_driver

# The peer, installed with npm at bench time into build/bench/npm.
peer=$work/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
if [ ! -f "$peer" ]; then
    mkdir -p "$work/npm"
    (cd "$work/npm" && npm install --no-audit --no-fund --silent @modelcontextprotocol/server-filesystem >/dev/null)
fi
peer_version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$work/npm/node_modules/@modelcontextprotocol/server-filesystem/package.json" | head -1)

ws=$(mktemp -d /tmp/corral-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
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

echo "== readFile 4 KiB, $n sequential calls (after 50 warm-up calls)"
c=$("$CORRAL" exec --workspace "$ws" -- "$drv" "$n" readFile '{"path":"file4k.txt"}' 2>&1 | result)
p=$("$drv" "$n" read_text_file "{\"path\":\"$ws/file4k.txt\"}" -- node "$peer" "$ws" 2>&1 | result)
echo "corral:                      $c"
echo "server-filesystem $peer_version: $p"
echo "ratio (peer / corral): p50 $(ratio "$(field "$p" p50_us)" "$(field "$c" p50_us)")x, p99 $(ratio "$(field "$p" p99_us)" "$(field "$c" p99_us)")x"
echo "peer start-up (spawn to initialize answer): $(field "$p" init_us) us"

echo "== the trail's cost: the same readFile round trip, trail off / normal / full"
off=$("$CORRAL" exec --workspace "$ws" -- "$drv" "$n" readFile '{"path":"file4k.txt"}' 2>&1 | result)
nor=$("$CORRAL" exec --trail "$ws/../rt-normal.db" --trail-durability normal --workspace "$ws" -- "$drv" "$n" readFile '{"path":"file4k.txt"}' 2>&1 | result)
ful=$("$CORRAL" exec --trail "$ws/../rt-full.db" --trail-durability full --workspace "$ws" -- "$drv" "$n" readFile '{"path":"file4k.txt"}' 2>&1 | result)
rm -f "$ws/../rt-normal.db"* "$ws/../rt-full.db"*
echo "trail off:    $off"
echo "trail normal: $nor"
echo "trail full:   $ful"
echo "(each call records its request, its tool_call start and end, and its answer, committed before the answer is sent)"

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
