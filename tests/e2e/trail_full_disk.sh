# tests/e2e/trail_full_disk.sh: write-ahead when the trail's disk fills up mid-run (a 2 MiB tmpfs
# in a private mount namespace). An agent alternates reads of a 24 KiB file and small writes
# (tests/agents/fill_reader.c) until the trail refuses. Then: the trail verifies; every read
# answer the agent received with the file's content has its answer's entry committed (a read runs
# before its entries commit, its answer must wait for the commit: when that commit fails the
# answer is withheld); every file a write created has its call's entry (a write's entry commits
# before the write). Both durability modes, and disks of several sizes, so that the commit that
# fails falls on different calls of a round (the old code, with a second commit per read,
# released the answer when that commit failed). What corral acknowledged may be in the trail's
# ahead log while the disk is full; the checks run once the disk has room and `corral trail
# apply` has put it into the file.
. "$TOP/tests/lib.sh"
for run in ${RUNS:-normal:2048 normal:2072 normal:2096 normal:2120 normal:2144 normal:2168 full:2048 full:2080 full:2112 full:2144}; do
    mode=${run%:*}; size=${run#*:}
    ws="$T_TMP/ws-$run"; disk="$T_TMP/disk-$run"; out="$T_TMP/out-$run"
    mkdir -p "$ws" "$disk" "$out"
    { printf 'FILL-READER-MARKER '; head -c 24000 /dev/zero | tr '\0' 'x'; } >"$ws/big.txt"
    unshare -m --propagation private sh -c '
        mount -t tmpfs -o size=$7k,mode=0755 tmpfs "$1" || exit 99
        "$2" exec --trail "$1/t.db" --trail-durability "$6" --workspace "$3" -- "$4" 2000 2>"$5/acks"
        # What corral acknowledged and SQLite could not take is in the trail'"'"'s ahead log: once
        # the disk has room again, it is applied.
        mount -o remount,size=16m "$1" && "$2" trail apply --db "$1/t.db" >"$5/apply" 2>&1
        echo $? >"$5/apply_rc"
        "$2" trail verify --db "$1/t.db" >"$5/verify" 2>&1; echo $? >"$5/verify_rc"
        "$2" trail --db "$1/t.db" --json >"$5/entries" 2>"$5/trail_err"
    ' sh "$disk" "$CORRAL" "$ws" "$AGENTS/fill_reader" "$out" "$mode" "$size"
    refused=$(grep -c '^[RW]ERR ' "$out/acks")
    racks=$(grep -c '^RACK ' "$out/acks")
    if [ "$refused" -gt 0 ] && [ "$racks" -gt 0 ]; then ok "$mode, ${size} KiB: the disk filled up after $racks reads and the trail refused ($refused refusals)"
    else fail "$mode, ${size} KiB: the disk filled up and the trail refused" "racks=$racks refused=$refused" "$(tail -5 "$out/acks")"; fi
    expect_status "$mode, ${size} KiB: once there is room, what the ahead log held is applied" 0 "$(cat "$out/apply_rc")" "$(cat "$out/apply")" ""
    expect_status "$mode, ${size} KiB: the trail verifies after the failed commit" 0 "$(cat "$out/verify_rc")" "$(cat "$out/verify")" ""
    recorded=$(grep '"type":"protocol_message"' "$out/entries" | grep '"direction":"out"' | grep -c 'FILL-READER-MARKER')
    if [ "$recorded" -ge "$racks" ]; then ok "$mode, ${size} KiB: every read answer received ($racks) has its committed entry ($recorded)"
    else fail "$mode, ${size} KiB: every read answer received has its committed entry" "received $racks, recorded $recorded"; fi
    grep '"type":"tool_call"' "$out/entries" | grep '"phase":"start"' | grep -o 'w[0-9]*\.txt' | sort -u >"$out/recorded_w"
    (cd "$ws" && ls) | grep '^w[0-9]*\.txt$' | sort -u >"$out/effects"
    unrecorded=$(comm -23 "$out/effects" "$out/recorded_w" | head -5)
    if [ -s "$out/effects" ] && [ -z "$unrecorded" ]; then ok "$mode, ${size} KiB: no write happened without its committed entry ($(wc -l <"$out/effects") files)"
    else fail "$mode, ${size} KiB: no write happened without its committed entry" "unrecorded: $unrecorded" "effects: $(wc -l <"$out/effects")"; fi
done
