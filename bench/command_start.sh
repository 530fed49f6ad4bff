#!/bin/sh
# bench/command_start.sh: the round trip of an `executeCommand` of `true` through corral's pipe
# (a command sandbox per call: namespaces, cgroup, seccomp, landlock, its own root, started by
# the zygote) against the peers an agent would otherwise use for one command: Anthropic's srt
# (npm @anthropic-ai/sandbox-runtime: bwrap, socat proxies, a seccomp helper) and a bare bwrap.
# corral: N sequential calls driven by bench/rt_driver.c (p50, p99); the peers: one process per
# command, timed by bench/start_driver.c (median, p90). Ratios printed.
# Usage: sh bench/command_start.sh [N]   (default 300 corral calls; srt gets N/10, at least 10)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
n=${1:-300}
ns=$((n / 10)); [ $ns -ge 10 ] || ns=10
work=$top/build/bench
mkdir -p "$work"
cc -O2 -Wall -Wextra -Werror -o "$work/rt_driver" "$top/bench/rt_driver.c" -lm
cc -O2 -o "$work/start_driver" "$top/bench/start_driver.c"
srt=$work/npm-srt/node_modules/.bin/srt
if [ ! -x "$srt" ]; then
    mkdir -p "$work/npm-srt"
    (cd "$work/npm-srt" && npm install --no-audit --no-fund --silent @anthropic-ai/sandbox-runtime >/dev/null 2>&1) || true
fi
ws=$(mktemp -d /tmp/corral-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
field() { printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "== executeCommand \"true\", $n sequential calls (after 50 warm-up calls)"
chown 65534:65534 "$ws"
own=$("$CORRAL" exec --workspace "$ws" -- "$work/rt_driver" "$n" executeCommand '{"command":"true"}' 2>&1 | sed -n 's/.*\(RESULT .*\)/\1/p')
chown 0:0 "$ws"
idm=$("$CORRAL" exec --workspace "$ws" -- "$work/rt_driver" "$n" executeCommand '{"command":"true"}' 2>&1 | sed -n 's/.*\(RESULT .*\)/\1/p')
printf '  corral, workspace owned by the sandbox user: p50 %6.2f ms  p99 %6.2f ms\n' \
    "$(awk -v v="$(field "$own" p50_us)" 'BEGIN{print v/1000}')" "$(awk -v v="$(field "$own" p99_us)" 'BEGIN{print v/1000}')"
printf '  corral, root-owned workspace (id-mapped):   p50 %6.2f ms  p99 %6.2f ms\n' \
    "$(awk -v v="$(field "$idm" p50_us)" 'BEGIN{print v/1000}')" "$(awk -v v="$(field "$idm" p99_us)" 'BEGIN{print v/1000}')"
# Back to back, each command finds the next sandbox still being prepared: that is the rate a
# sandbox can be made at. An agent thinks between commands (a model's answer takes far longer
# than 20 ms); then every command finds its sandbox ready.
# The driver runs in the sandbox, whose environment is minimal: the gap goes in by --env (set
# outside, it never reached the driver, and "20 ms between calls" measured back-to-back calls).
gap=$("$CORRAL" exec --workspace "$ws" --env RT_GAP_US=20000 -- "$work/rt_driver" "$n" executeCommand '{"command":"true"}' 2>&1 | sed -n 's/.*\(RESULT .*\)/\1/p')
printf '  corral, root-owned, 20 ms between calls:    p50 %6.2f ms  p99 %6.2f ms   (goal: p50 < 1 ms, p99 < 3 ms)\n' \
    "$(awk -v v="$(field "$gap" p50_us)" 'BEGIN{print v/1000}')" "$(awk -v v="$(field "$gap" p99_us)" 'BEGIN{print v/1000}')"
idm=$gap

echo "== one command per process, $ns rounds interleaved (ms: median p90)"
if [ -x "$srt" ] && "$srt" -c true >/dev/null 2>&1; then
    srt_cmd="$srt -c true"
else
    srt_cmd=
    echo "  srt: not runnable here ($( [ -x "$srt" ] && echo "it failed: $("$srt" -c true 2>&1 | tail -1)" || echo "npm could not install @anthropic-ai/sandbox-runtime"))"
fi
# shellcheck disable=SC2086
"$work/start_driver" "$ns" \
    :: bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind /usr /usr \
       --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin \
       --proc /proc --dev /dev --tmpfs /tmp /bin/true \
    ${srt_cmd:+:: $srt_cmd} \
    | awk -v c="$(field "$idm" p50_us)" '
        BEGIN { name[0] = "bwrap --unshare-all true"; name[1] = "srt -c true" }
        { med[$1] = $2; printf "  %-30s %8.2f %8.2f\n", name[$1], $2, $3 }
        END {
            c = c / 1000
            printf "  bwrap / corral executeCommand p50 = %.1fx\n", med[0] / c
            if (1 in med) printf "  srt / corral executeCommand p50   = %.1fx\n", med[1] / c
        }'
