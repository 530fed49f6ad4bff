#!/bin/sh
# bench/exec_start.sh: time to start and finish /bin/true under `corral exec` (full isolation:
# user/mount/pid/ipc/uts/net/cgroup namespaces, cgroup budgets, seccomp, landlock, minimal root,
# no capabilities, no network) side by side in one run with bwrap at the closest equivalent
# isolation and with plain unshare; and with --trail (normal and full durability), whose
# start adds the trail's write-ahead entries and the seccomp listener (the filter notifies,
# init passes the listener over SCM_RIGHTS). Runs are interleaved; prints medians and ratios.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CORRAL:=$top/build/corral}"
N=${N:-300}
mkdir -p "$top/build/bench"
drv="$top/build/bench/start_driver"
cc -O2 -o "$drv" "$top/bench/start_driver.c"
command -v bwrap >/dev/null || { echo "bench: bwrap is missing: apt-get install bubblewrap (or make deps)"; exit 1; }
"$CORRAL" exec -- /bin/true # warm the filter cache as any second run would find it
tdb=$(mktemp -d /tmp/corral-bench.XXXXXX)
trap 'rm -rf "$tdb"' EXIT
"$CORRAL" exec --trail "$tdb/n.db" --trail-durability normal -- /bin/true
"$CORRAL" exec --trail "$tdb/f.db" -- /bin/true
echo "starts of /bin/true, $N rounds interleaved (ms: median p90)"
"$drv" "$N" \
    :: /bin/true \
    :: "$CORRAL" exec -- /bin/true \
    :: bwrap --unshare-all --die-with-parent --new-session --cap-drop ALL --ro-bind /usr /usr \
       --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin \
       --proc /proc --dev /dev --tmpfs /tmp /bin/true \
    :: unshare -Umnpif --mount-proc /bin/true \
    :: "$CORRAL" exec --trail "$tdb/n.db" --trail-durability normal -- /bin/true \
    :: "$CORRAL" exec --trail "$tdb/f.db" -- /bin/true \
    | awk '
        BEGIN { name[0] = "/bin/true alone"; name[1] = "corral exec"; name[2] = "bwrap --unshare-all"; name[3] = "unshare -Umnpif --mount-proc"; name[4] = "corral exec --trail (normal)"; name[5] = "corral exec --trail (full)" }
        { med[$1] = $2; p90[$1] = $3; printf "  %-30s %7.2f %7.2f\n", name[$1], $2, $3 }
        END {
            printf "  corral / bwrap   = %.2f (goal <= 0.6)\n", med[1] / med[2]
            printf "  corral / unshare = %.2f (goal <= 1.0)\n", med[1] / med[3]
            printf "  --trail (normal) - plain = %+.2f ms; --trail (full) - plain = %+.2f ms\n", med[4] - med[1], med[5] - med[1]
        }'
