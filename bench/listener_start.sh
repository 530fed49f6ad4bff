#!/bin/sh
# bench/listener_start.sh: the start-up cost of the seccomp listener alone (bench/listener_start.c),
# against build/libcorral.a (run 'make' first). ROUNDS (default 200) starts of each, interleaved.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
[ -f "$build/libcorral.a" ] || { echo "bench/listener_start.sh: $build/libcorral.a is missing: run 'make' first" >&2; exit 2; }
pkgs="libseccomp libcap libnl-3.0 libnl-route-3.0 sqlite3 libcjson libsodium libpcre2-8 yaml-0.1 libxxhash"
mkdir -p "$build/bench"
cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$top" $(pkg-config --cflags $pkgs) -o "$build/bench/listener_start" \
    "$top/bench/listener_start.c" "$build/libcorral.a" $(pkg-config --libs $pkgs) -lm
echo "sandbox_spawn of /bin/true to its end, default profile, ${ROUNDS:-200} rounds interleaved"
"$build/bench/listener_start" "${ROUNDS:-200}"
