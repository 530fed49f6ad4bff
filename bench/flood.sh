#!/bin/sh
# bench/flood.sh: one well-behaved agent's 4 KiB readFile round trip alone, then beside 64 hostile
# agents flooding their pipes (garbage, 9 MiB lines, request storms), through the supervisor's
# real connection layer and trail (bench/flood_bench.c). Prints both and the ratio; the goal
# (issue 17): its p99 within 2x of its figure alone.
# Usage: sh bench/flood.sh [N]   (N reads, default 2000)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
n=${1:-2000}
[ -f "$build/libcorral.a" ] || { echo "bench/flood.sh: $build/libcorral.a is missing: run 'make' first" >&2; exit 2; }
mkdir -p "$build/bench"
# shellcheck disable=SC2046
cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$top" $(pkg-config --cflags libcjson) -o "$build/bench/flood_bench" \
    "$top/bench/flood_bench.c" "$build/libcorral.a" \
    $(pkg-config --libs libseccomp libcap libnl-3.0 libnl-route-3.0 sqlite3 libcjson libsodium libpcre2-8 yaml-0.1 libxxhash) -lm -lpthread
dir=$(mktemp -d /var/tmp/corral-flood.XXXXXX)
trap 'rm -rf "$dir"' EXIT
head -c 3072 /dev/urandom | base64 -w 76 | head -c 4096 >"$dir/file4k.txt"
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
echo "== one agent's readFile 4 KiB round trip, trail normal, $n calls: alone, then beside 64 hostile agents"
alone=$("$build/bench/flood_bench" "$dir" "$n" 0)
flood=$("$build/bench/flood_bench" "$dir" "$n" 64)
echo "alone:        $alone"
echo "64 hostile:   $flood"
awk -v a="$(field "$alone" p99_us)" -v f="$(field "$flood" p99_us)" -v a5="$(field "$alone" p50_us)" -v f5="$(field "$flood" p50_us)" 'BEGIN {
    printf "p50 %.1fx its figure alone; p99 %.1fx (goal <= 2x: %s)\n", f5 / a5, f / a, (f <= 2 * a ? "met" : "NOT met") }'
echo "(hostile agents run SCHED_IDLE, standing for their sandboxes' CPU budgets; FLOOD_CPU=free lifts that)"
