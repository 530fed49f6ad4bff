#!/bin/sh
# bench/search.sh: WAP searchFiles and exploreFiles, side by side with their peers, in one run.
#  1. searchFiles over a large source tree (a copy of /usr/include plus the Perl library trees)
#     versus ripgrep with the same pattern and the same exclusions (the seed's defaults), after
#     checking that both report the same number of matching lines; time ratio (goal: <= 1.5).
#  2. exploreFiles recursive over 2,000 files in 40 directories (goal: 100x faster than the MCP
#     filesystem server's 110 ms on the same shape; its own figure is printed by bench/run.sh).
# Usage: sh bench/search.sh            (after `make`; needs rg and hyperfine)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
lib=$build/libcorral.a
[ -f "$lib" ] || { echo "bench/search.sh: build first (make)" >&2; exit 1; }
command -v rg >/dev/null || { echo "bench/search.sh: ripgrep (rg) is needed" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "bench/search.sh: hyperfine is needed" >&2; exit 1; }

tmp=$(mktemp -d /tmp/corral-bench-search.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The bench program is not part of the Makefile build: compiled here against libcorral.a.
pkgs="libseccomp libcap libnl-3.0 libnl-route-3.0 sqlite3 libcjson libsodium libpcre2-8 yaml-0.1 libxxhash"
cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$top" $(pkg-config --cflags $pkgs) -o "$tmp/search_bench" \
    "$top/bench/search_bench.c" "$lib" $(pkg-config --libs $pkgs) -lm

# 1. the large tree (cp -r keeps symlinks as symlinks; neither tool follows them)
tree=$tmp/tree
mkdir -p "$tree"
cp -r /usr/include "$tree/include"
for d in /usr/share/perl* /usr/lib/x86_64-linux-gnu/perl*; do
    [ -d "$d" ] && cp -r "$d" "$tree/$(echo "$d" | tr '/' '_')"
done
sync # the copy's writeback must not run during the measurements
files=$(find "$tree" -type f | wc -l)
size=$(du -sm "$tree" | cut -f1)
echo "== searchFiles vs ripgrep over $files files, $size MB"

# The seed's default exclusions, as ripgrep globs; --hidden --no-ignore: search what corral
# searches (dot files included, no .gitignore rules).
rg_ex="-g !**/node_modules/** -g !**/.git/** -g !**/dist/** -g !**/build/** -g !**/.venv/** -g !**/target/** -g !**/__pycache__/** -g !**/vendor/**"

run_case() { # type query
    type=$1 query=$2
    rgflag=""
    [ "$type" = literal ] && rgflag="-F"
    ours=$("$tmp/search_bench" search "$tree" "$query" "$type" | awk '{print $2}')
    # shellcheck disable=SC2086
    theirs=$(cd "$tree" && rg --hidden --no-ignore $rgflag $rg_ex -c -e "$query" . | awk -F: '{s += $NF} END {print s + 0}')
    echo "-- $type '$query': corral totalMatches=$ours, rg matching lines=$theirs"
    if [ "$ours" != "$theirs" ]; then
        echo "   MISMATCH: the counts differ" >&2
    fi
    hyperfine -N --warmup 2 --runs 10 --export-json "$tmp/h.json" \
        -n corral "$tmp/search_bench search $tree '$query' $type" \
        -n rg "sh -c 'cd $tree && rg --hidden --no-ignore $rgflag $rg_ex -c -e \"$query\" . >/dev/null'" \
        >/dev/null 2>&1 || hyperfine --warmup 2 --runs 10 --export-json "$tmp/h.json" \
        -n corral "$tmp/search_bench search $tree '$query' $type" \
        -n rg "cd $tree && rg --hidden --no-ignore $rgflag $rg_ex -c -e '$query' . >/dev/null" >/dev/null
    python3 - "$tmp/h.json" <<'EOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
c, g = r["corral"]["median"], r["rg"]["median"]
print(f"   corral {c*1000:.1f} ms, rg {g*1000:.1f} ms (medians of 10): ratio {c/g:.2f}x rg")
EOF
}
run_case literal "static inline"
run_case regex "(int|void)\\s+[a-z_]+\\("
run_case regex "^#define [A-Z_]+_MAX\\b"

# 2. exploreFiles over 2,000 files in 40 directories
ex=$tmp/explore
i=0
while [ $i -lt 40 ]; do
    mkdir -p "$ex/dir$i"
    j=0
    while [ $j -lt 50 ]; do : >"$ex/dir$i/file$j.txt"; j=$((j + 1)); done
    i=$((i + 1))
done
echo "== exploreFiles recursive over $(find "$ex" -type f | wc -l) files in $(find "$ex" -mindepth 1 -type d | wc -l) directories"
BENCH_REPEAT=200 "$tmp/search_bench" explore "$ex"
hyperfine -N --warmup 3 --runs 30 --export-json "$tmp/e.json" -n corral "$tmp/search_bench explore $ex" >/dev/null 2>&1 ||
    hyperfine --warmup 3 --runs 30 --export-json "$tmp/e.json" -n corral "$tmp/search_bench explore $ex" >/dev/null
python3 - "$tmp/e.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"   corral exploreFiles: {r['median']*1000:.2f} ms median of 30 (whole process: exec, call, JSON)")
EOF

# 3. readFile of a 4 KiB file, the call alone (the pipe round trip is the protocol bench's)
head -c 4096 /usr/include/stdio.h >"$ex/four.txt"
echo "== readFile of a 4 KiB file"
BENCH_REPEAT=5000 "$tmp/search_bench" read "$ex" four.txt
