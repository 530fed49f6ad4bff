#!/bin/sh
# bench/report.sh: `corral trail report` over a big trail, side by side with `corral trail export`
# of the same trail in the same run (both read every entry and write every one out; the report
# also verifies, lays out, escapes and bounds): wall time, peak memory, output size, the ratio.
# The trail: ENTRIES (default 200,000) tool calls of 64 workspaces, every 50th a protocol
# message (bench/trail_bench.c fill). Usage: sh bench/report.sh [DIR]   (after `make`)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
entries=${ENTRIES:-200000}
[ -f "$build/libcorral.a" ] || { echo "bench/report.sh: $build/libcorral.a is missing: run 'make' first" >&2; exit 2; }
dir=${1:-$(mktemp -d /var/tmp/corral-report-bench.XXXXXX)}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
bin="$build/bench/trail_bench"
mkdir -p "$build/bench"
# shellcheck disable=SC2046
cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$top" $(pkg-config --cflags sqlite3 libsodium libcjson) -o "$bin" \
    "$top/bench/trail_bench.c" "$build/libcorral.a" $(pkg-config --libs sqlite3 libsodium libcjson libgvc libxxhash) -lm
"$bin" fill "$dir/big.db" "$entries" >/dev/null
echo "== corral trail report against corral trail export: $entries entries, 64 workspaces, $(nproc) CPUs"
for i in 1 2 3; do
    /usr/bin/time -f '%e %M' -o "$dir/te" "$build/corral" trail export --db "$dir/big.db" --output "$dir/big.jsonl"
    /usr/bin/time -f '%e %M' -o "$dir/tr" "$build/corral" trail report --db "$dir/big.db" --output "$dir/big.html"
    read -r es ek <"$dir/te"; read -r rs rk <"$dir/tr"
    printf '  run %d: export %5.2f s, %4d MiB peak, %4d MiB out | report %5.2f s, %4d MiB peak, %3d MiB page | ratio %.2f\n' \
        "$i" "$es" $((ek / 1024)) $(($(stat -c %s "$dir/big.jsonl") >> 20)) "$rs" $((rk / 1024)) \
        $(($(stat -c %s "$dir/big.html") >> 20)) "$(echo "$rs / $es" | bc -l)"
done
