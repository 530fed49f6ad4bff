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
cc -O2 -Wall -Wextra -Werror -o "$work/rt_driver" "$top/bench/rt_driver.c"
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
echo "corral mcp, trail off:         $off"
echo "corral mcp, trail normal:      $nor"
echo "corral mcp, trail full:        $ful"
echo "server-filesystem $peer_version: $p"
echo "ratio (peer / corral, trail off): p50 $(ratio "$(field "$p" p50_us)" "$(field "$off" p50_us)")x, p99 $(ratio "$(field "$p" p99_us)" "$(field "$off" p99_us)")x"
echo "ratio (peer / corral, trail normal): p50 $(ratio "$(field "$p" p50_us)" "$(field "$nor" p50_us)")x, p99 $(ratio "$(field "$p" p99_us)" "$(field "$nor" p99_us)")x"
echo "(with the trail each call records its request, its tool_call start and end and its answer,"
echo " committed before the answer is sent; the peer records nothing)"
