#!/bin/sh
# bench/trail.sh: the trail's benchmarks, each side by side with plain SQLite in the same run, on
# the same disk (run from the repository root after `make`):
#   1. durable throughput: 64 agents' tool calls, one group commit per event-loop turn, FULL
#      durability (fsync per commit), against one INSERT per transaction with the same pragmas;
#   2. the latency one sequential tool call pays for its entry (p50/p99, FULL and NORMAL; the
#      round trip through an agent comes with the supervisor's event loop);
#   2b. one readFile call's four entries (request, start, end, a 4 KiB answer) and its one commit;
#   3. verify speed over a trail of VERIFY_ENTRIES (default 1,000,000) entries, against a bare
#      SQLite scan of the same rows.
# Usage: sh bench/trail.sh [DIR]   (DIR: where the trail files go; default a fresh dir in /var/tmp)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
turns=${TURNS:-2000}
entries=${VERIFY_ENTRIES:-1000000}
[ -f "$build/libcorral.a" ] || { echo "bench/trail.sh: $build/libcorral.a is missing: run 'make' first" >&2; exit 2; }
dir=${1:-$(mktemp -d /var/tmp/corral-trail-bench.XXXXXX)}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
bin="$build/bench/trail_bench"
mkdir -p "$build/bench"
# shellcheck disable=SC2046
cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$top" $(pkg-config --cflags sqlite3 libsodium libcjson) -o "$bin" \
    "$top/bench/trail_bench.c" "$build/libcorral.a" $(pkg-config --libs sqlite3 libsodium libcjson libxxhash) -lm

echo "== trail benchmarks: $(nproc) CPUs, files in $dir ($(df -PT "$dir" | awk 'NR==2 {print $2 " on " $1}'))"
"$bin" throughput "$dir" "$turns"
echo
"$bin" latency "$dir" "${LATENCY_CALLS:-2000}"
echo
"$bin" call "$dir" "${LATENCY_CALLS:-2000}"
echo
"$bin" fill "$dir/verify.db" "$entries"
sync
"$bin" verify "$dir/verify.db"
printf '  corral trail verify (the CLI, wall clock): '
/usr/bin/time -f '%e s' "$build/corral" trail verify --db "$dir/verify.db" 2>&1 | tr '\n' ' '
echo
