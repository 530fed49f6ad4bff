#!/bin/sh
# tests/e2e/trail.sh: `corral trail`, `corral trail verify` and `corral trail export` through the
# real binary, on trails written by the real trail module (a small writer linked with libcorral),
# tampered with through a plain SQLite connection (Python's sqlite3 module, as any attacker with
# the file could), followed live, and filled up on a tiny tmpfs.
. "$TOP/tests/lib.sh"

# --- a writer: the trail module as the supervisor uses it (built against this build's library)
cat >"$T_TMP/writer.c" <<'EOF'
#include "supervisor/trail/trail.h"
#include <stdio.h>
#include <string.h>
#include <time.h>
static int fail(const char *what, const struct cerr *e) { fprintf(stderr, "writer: %s: %s\n", what, e->msg); return 3; }
static int add(struct trail *t, const char *ws, const char *actor, const char *type, const char *json)
{
    struct cerr e = {0};
    cJSON *b = cJSON_Parse(json);
    int r = trail_append(t, ws, actor, type, b, NULL, &e);
    cJSON_Delete(b);
    if (r < 0) { fprintf(stderr, "writer: append: %s\n", e.msg); return 3; }
    return 0;
}
int main(int argc, char **argv)
{
    struct trail *t = NULL;
    struct cerr e = {0};
    if (argc < 3) return 2;
    if (trail_open(argv[1], TRAIL_DURABILITY_FULL, &t, &e) < 0) return fail("open", &e);
    int rc = 0;
    if (!strcmp(argv[2], "fill")) {
        char h[65], body[256];
        if (trail_blob_put(t, "hello, trail\n", 13, h, &e) < 0) return fail("blob", &e);
        snprintf(body, sizeof(body), "{\"surface\":\"wap\",\"tool\":\"readFile\",\"arguments\":{\"path\":\"a.txt\"},\"outcome\":\"ok\",\"response_bytes\":13,\"content_blob\":\"%s\"}", h);
        rc |= add(t, NULL, "system", "supervisor_started", "{\"version\":\"0.1.0\",\"pid\":1}");
        rc |= add(t, "ws-a", "protocol", "sandbox_created", "{\"purpose\":\"agent\",\"profile\":{\"namespaces\":[\"user\",\"pid\"],\"network\":\"none\"}}");
        rc |= add(t, "ws-a", "protocol", "process_started", "{\"pid\":100,\"argv\":[\"./agent\"]}");
        rc |= add(t, "ws-a", "worker", "tool_call", body);
        rc |= add(t, "ws-b", "worker", "tool_call", "{\"surface\":\"wap\",\"tool\":\"writeFile\",\"arguments\":{\"path\":\"../x\"},\"outcome\":\"error\",\"error_code\":\"path_outside_workspace\"}");
        rc |= add(t, "ws-b", "protocol", "denial", "{\"kind\":\"path\",\"subject\":\"../x\",\"rule\":\"workspace containment\",\"reason\":\"path_outside_workspace\"}");
        if (trail_commit(t, &e) < 0) return fail("commit", &e);
        rc |= add(t, "ws-a", "user-alice", "gate_resolved", "{\"gate_id\":\"g1\",\"decision\":\"approved\"}");
        rc |= add(t, "ws-a", "protocol", "process_exited", "{\"pid\":100,\"status\":0,\"signal\":null,\"usage\":{\"cpu_user_us\":1000}}");
        rc |= add(t, NULL, "system", "supervisor_stopped", "{\"reason\":\"done\",\"status\":0}");
        if (trail_commit(t, &e) < 0) return fail("commit", &e);
        printf("%llu\n", (unsigned long long)trail_head_seq(t));
    } else if (!strcmp(argv[2], "slow") && argc == 5) {
        int n = atoi(argv[3]), ms = atoi(argv[4]);
        for (int i = 0; i < n && !rc; i++) {
            char body[64];
            snprintf(body, sizeof(body), "{\"i\":%d}", i);
            rc |= add(t, "ws-live", "worker", "tool_call", body);
            if (trail_commit(t, &e) < 0) return fail("commit", &e);
            struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    } else if (!strcmp(argv[2], "full")) {
        char text[3001];
        memset(text, 'z', 3000);
        text[3000] = 0;
        for (;;) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "text", text);
            int r = trail_append(t, "ws-full", "worker", "agent_log", b, NULL, &e);
            cJSON_Delete(b);
            if (r == 0) r = trail_commit(t, &e);
            if (r < 0) {
                printf("acked %llu\n", (unsigned long long)trail_head_seq(t));
                fprintf(stderr, "writer: %s\n", e.msg);
                trail_close(t);
                return 3;
            }
        }
    } else {
        return 2;
    }
    trail_close(t);
    return rc;
}
EOF
san=""
case "$BUILD" in */asan) san="-fsanitize=address,undefined -fno-omit-frame-pointer" ;; esac
WRITER="$T_TMP/writer"
# shellcheck disable=SC2086
if cc -std=gnu11 -D_GNU_SOURCE -I"$TOP" $(pkg-config --cflags libcjson) $san -o "$WRITER" "$T_TMP/writer.c" \
    "$BUILD/libcorral.a" $(pkg-config --libs sqlite3 libsodium libcjson libxxhash) -lm 2>"$T_TMP/cc.err"; then
    ok "trail writer builds against libcorral"
else
    fail "trail writer builds against libcorral" "$(cat "$T_TMP/cc.err")"
    exit 1
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"

DB="$T_TMP/t.db"
# sql FILE STATEMENTS: run SQL on the file through an ordinary read-write SQLite connection
sql() {
    python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.executescript(sys.argv[2])
c.close()' "$1" "$2"
}

# --- usage
run_capture out err rc "$CORRAL" trail --help
expect_status "trail --help exits 0" 0 "$rc"
expect_match "trail --help says --db is required" "--db FILE.*required" "$out"
run_capture out err rc "$CORRAL" trail verify --help
expect_status "trail verify --help exits 0" 0 "$rc"
run_capture out err rc "$CORRAL" trail export --help
expect_match "trail export --help describes blobs" "base64|BASE64" "$out"
run_capture out err rc "$CORRAL" trail
expect_status "trail without --db is a usage error" 2 "$rc"
expect_match "trail without --db says how to fix it" "--db FILE is required" "$err"
run_capture out err rc "$CORRAL" trail --db "$DB" --bogus
expect_status "an unknown option is a usage error" 2 "$rc"
expect_match "an unknown option is named" "--bogus" "$err"
run_capture out err rc "$CORRAL" trail --db "$DB" --since yesterday
expect_status "a bad --since is a usage error" 2 "$rc"
expect_match "a bad --since says which formats work" "ISO-8601" "$err"
run_capture out err rc "$CORRAL" trail --db "$DB" --type envelope_sent
expect_status "an unknown --type is a usage error" 2 "$rc"
run_capture out err rc "$CORRAL" trail --db "$DB" --limit 0
expect_status "--limit 0 is a usage error" 2 "$rc"
run_capture out err rc "$CORRAL" trail verify --db "$T_TMP/missing.db"
expect_status "verify of a missing file is a usage error" 2 "$rc"
expect_match "verify of a missing file names it" "missing.db" "$err"
echo "not a database at all, just text that is long enough to fill a header..........." >"$T_TMP/text.db"
run_capture out err rc "$CORRAL" trail --db "$T_TMP/text.db"
expect_status "a file that is not a trail is refused" 2 "$rc"
expect_match "a file that is not a trail is named as such" "not a corral trail" "$err"

# --- a trail written by the module
run_capture out err rc "$WRITER" "$DB" fill
expect_status "the writer fills a trail" 0 "$rc" "$err"
N=$out
expect_match "the trail has 10 entries" "^10$" "$N"

run_capture out err rc "$CORRAL" trail --db "$DB"
expect_status "trail prints the table" 0 "$rc" "$err"
expect_match "the table shows trail_created first" "^1 +[0-9T:.-]+Z +- +system +trail_created" "$out"
expect_match "the table shows a workspace's tool call" "ws-a +worker +tool_call" "$out"
lines=$(printf '%s\n' "$out" | wc -l)
expect_status "the table has one line per entry" 10 "$lines"

run_capture out err rc "$CORRAL" trail --db "$DB" --json
expect_status "trail --json" 0 "$rc" "$err"
check=$(printf '%s\n' "$out" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
assert len(rows) == 10, len(rows)
for i, r in enumerate(rows, 1):
    assert r["seq"] == i
    for k in ("id", "timestamp", "ts_us", "workspace", "actor", "type", "body", "local_seq", "local_prev", "prev_hash", "hash"):
        assert k in r, k
    assert (r["prev_hash"] is None) == (i == 1)
    if i > 1:
        assert r["prev_hash"] == rows[i - 2]["hash"]
ws = [r for r in rows if r["workspace"] == "ws-a"]
assert [r["local_seq"] for r in ws] == [1, 2, 3, 4, 5], [r["local_seq"] for r in ws]
assert ws[0]["local_prev"] is None and all(ws[j]["local_prev"] == ws[j - 1]["hash"] for j in range(1, 5))
d = [r for r in rows if r["type"] == "denial"][0]
assert d["body"]["reason"] == "path_outside_workspace" and d["actor"] == "protocol" and d["workspace"] == "ws-b"
e = [r for r in rows if r["type"] == "process_exited"][0]
assert e["body"]["status"] == 0 and e["body"]["signal"] is None
print("fine")
' 2>&1)
expect_match "--json lines carry every field and both chains link up" "^fine$" "$check"

run_capture out err rc "$CORRAL" trail --db "$DB" --workspace ws-a --json
expect_status "--workspace" 0 "$rc"
expect_status "--workspace ws-a gives its 5 entries" 5 "$(printf '%s\n' "$out" | grep -c '"workspace":"ws-a"')"
run_capture out err rc "$CORRAL" trail --db "$DB" --type tool_call
expect_status "--type tool_call gives 2 entries" 2 "$(printf '%s\n' "$out" | grep -c tool_call)"
run_capture out err rc "$CORRAL" trail --db "$DB" --actor user-alice
expect_match "--actor finds the human's gate decision" "user-alice +gate_resolved" "$out"
run_capture out err rc "$CORRAL" trail --db "$DB" --limit 3
expect_status "--limit 3 gives 3 entries" 3 "$(printf '%s\n' "$out" | wc -l)"
run_capture out err rc "$CORRAL" trail --db "$DB" --since 2999-01-01
expect_status "--since in the future: no entry, still exit 0" 0 "$rc"
expect_match "--since in the future prints nothing" "^$" "$out"
run_capture out err rc "$CORRAL" trail --db "$DB" --since 0 --until "$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)"
expect_status "--since/--until around now give every entry" 10 "$(printf '%s\n' "$out" | wc -l)"

# --- verify and export
run_capture out err rc "$CORRAL" trail verify --db "$DB"
expect_status "verify of a sound trail exits 0" 0 "$rc" "$out" "$err"
expect_match "verify counts the entries" "^ok: 10 entries verified$" "$out"

run_capture out err rc "$CORRAL" trail export --db "$DB" --output "$T_TMP/export.jsonl"
expect_status "export to a file" 0 "$rc" "$err"
check=$(python3 -c '
import base64, hashlib, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[0]["format"] == "corral-trail-export" and lines[0]["hash_algorithm"] == "blake2b-256"
entries = [l for l in lines if "seq" in l]
blobs = [l for l in lines if "blob" in l]
assert len(entries) == 10 and len(blobs) == 1
data = base64.b64decode(blobs[0]["data"])
assert data == b"hello, trail\n" and blobs[0]["size"] == 13
assert hashlib.blake2b(data, digest_size=32).hexdigest() == blobs[0]["blob"]
ref = [e for e in entries if e["body"].get("content_blob")][0]
assert ref["body"]["content_blob"] == blobs[0]["blob"]
print("fine")
' "$T_TMP/export.jsonl" 2>&1)
expect_match "export holds the entries and the blob, base64, under its BLAKE2b-256 hash" "^fine$" "$check"
run_capture out err rc "$CORRAL" trail export --db "$DB"
expect_status "export to standard output has 12 lines" 12 "$(printf '%s\n' "$out" | wc -l)"

# --- append-only for any SQLite client; tampering caught
run_capture out err rc sql "$DB" "UPDATE entries SET body = '{}' WHERE seq = 4"
expect_nomatch "plain SQLite cannot UPDATE an entry" "^0$" "$rc"
expect_match "the UPDATE refusal says why" "append-only" "$err"
run_capture out err rc sql "$DB" "DELETE FROM entries WHERE seq = 4"
expect_match "plain SQLite cannot DELETE an entry" "append-only" "$err"
run_capture out err rc sql "$DB" "INSERT OR REPLACE INTO entries SELECT * FROM entries WHERE seq = 4"
expect_match "plain SQLite cannot replace an entry" "append-only" "$err"
run_capture out err rc "$CORRAL" trail verify --db "$DB"
expect_status "the refused statements changed nothing" 0 "$rc" "$out"

tamper() { # NAME SQL WANT_SEQ
    cp "$DB" "$T_TMP/x.db"
    sql "$T_TMP/x.db" "DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete; DROP TRIGGER blobs_no_update; $2" 2>"$T_TMP/sq.err"
    run_capture out err rc "$CORRAL" trail verify --db "$T_TMP/x.db"
    expect_status "verify catches $1 (exit 1)" 1 "$rc" "$out" "$err"
    expect_match "verify names entry $3 for $1" "^bad: entry $3: " "$out"
    expect_match "verify explains $1 in one line on stderr" "changed or damaged at entry $3" "$err"
}
tamper "a changed body" "UPDATE entries SET body = replace(body, 'a.txt', 'b.txt') WHERE seq = 5" 5
tamper "a changed hash" "UPDATE entries SET hash = zeroblob(32) WHERE seq = 6" 6
tamper "a changed prev_hash" "UPDATE entries SET prev_hash = zeroblob(32) WHERE seq = 7" 7
tamper "a deleted row" "DELETE FROM entries WHERE seq = 3" 3
tamper "two rows swapped" "UPDATE entries SET seq = -1 WHERE seq = 8; UPDATE entries SET seq = 8 WHERE seq = 9; UPDATE entries SET seq = 9 WHERE seq = -1" 8
tamper "a tampered blob" "UPDATE blobs SET data = CAST('HELLO, trail' || char(10) AS BLOB)" 5

# --- anchors: a trail cut short passes the chain check alone, not against a kept head
run_capture out err rc "$CORRAL" trail verify --db "$DB"
head=$(printf '%s\n' "$out" | sed -n 's/^head: \([0-9]*\) \([0-9a-f]*\)$/\1:\2/p')
expect_match "verify prints the head as SEQ HASH" "^10:[0-9a-f]{64}$" "$head"
run_capture out err rc "$CORRAL" trail verify --db "$DB" --anchor "$head"
expect_status "verify against the kept head passes" 0 "$rc" "$out" "$err"
expect_match "verify says the anchor holds" "^anchor: entry 10 holds the expected hash$" "$out"
cp "$DB" "$T_TMP/cut.db"
sql "$T_TMP/cut.db" "DROP TRIGGER entries_no_delete; DELETE FROM entries WHERE seq >= 9"
run_capture out err rc "$CORRAL" trail verify --db "$T_TMP/cut.db"
expect_status "a trail cut short still chains (the limit of a hash chain)" 0 "$rc" "$out"
run_capture out err rc "$CORRAL" trail verify --db "$T_TMP/cut.db" --anchor "$head"
expect_status "the anchor catches a trail cut short" 1 "$rc" "$out" "$err"
expect_match "the anchor names the missing entry" "^bad: entry 10: is missing: the trail ends at 8" "$out"
run_capture out err rc "$CORRAL" trail verify --db "$DB" --anchor "5:${head#*:}"
expect_status "an anchor with another hash fails" 1 "$rc" "$out"
run_capture out err rc "$CORRAL" trail verify --db "$DB" --anchor "ten"
expect_status "a malformed anchor is a usage error" 2 "$rc"

# --- live: --follow and verify while a writer writes
"$CORRAL" trail --db "$DB" --follow --json >"$T_TMP/follow.out" 2>"$T_TMP/follow.err" &
fpid=$!
"$WRITER" "$DB" slow 20 30 &
wpid=$!
sleep 0.2
run_capture out err rc "$CORRAL" trail verify --db "$DB"
expect_status "verify while a writer commits" 0 "$rc" "$out" "$err"
wait "$wpid"
expect_status "the live writer finished" 0 "$?"
i=0
while [ "$(grep -c '"workspace":"ws-live"' "$T_TMP/follow.out")" -lt 20 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -INT "$fpid"
wait "$fpid"
frc=$?
expect_status "--follow ends with 0 on SIGINT" 0 "$frc" "$(cat "$T_TMP/follow.err")"
expect_status "--follow printed every live entry as it came" 20 "$(grep -c '"workspace":"ws-live"' "$T_TMP/follow.out")"
expect_status "--follow printed the 10 earlier entries too, once" 30 "$(wc -l <"$T_TMP/follow.out")"
"$CORRAL" trail --db "$DB" --follow --type denial >"$T_TMP/follow2.out" 2>&1 &
fpid=$!
# TERM once it printed the denial (a corral under AddressSanitizer and load may take longer
# than any fixed wait to start), then see it printed no more than that one
i=0
while [ ! -s "$T_TMP/follow2.out" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM "$fpid"
wait "$fpid"
expect_status "--follow with a filter ends with 0 on SIGTERM" 0 "$?"
expect_status "--follow with a filter printed the one denial" 1 "$(wc -l <"$T_TMP/follow2.out")"
run_capture out err rc "$CORRAL" trail verify --db "$DB"
expect_match "the trail holds the live entries" "^ok: 30 entries verified$" "$out"

# --- a disk that fills up: the writer degrades, nothing unrecorded, what was acknowledged stays
# (in the trail, or in its ahead log until there is room to apply it: the disk grows, then
# `corral trail apply`)
mkdir -p "$T_TMP/tiny"
run_capture out err rc unshare -m sh -c '
    mount --make-rprivate / && mount -t tmpfs -o size=1m,mode=0755 tmpfs "$1" || exit 99
    "$2" "$1/t.db" full; echo "writer=$?"
    mount -o remount,size=8m "$1" && "$3" trail apply --db "$1/t.db"; echo "apply=$?"
    "$3" trail verify --db "$1/t.db"; echo "verify=$?"
' sh "$T_TMP/tiny" "$WRITER" "$CORRAL"
expect_match "once the disk has room, what the ahead log held is applied" "apply=0" "$out" "$err"
expect_match "the writer on a full disk stops with an error" "writer=3" "$out" "$err"
expect_match "the full-disk error says the trail cannot be written" "cannot be written.*refuses new work" "$err"
acked=$(printf '%s\n' "$out" | sed -n 's/^acked //p')
expect_match "the full-disk trail verifies with exactly the acknowledged entries" "^ok: $acked entries verified" "$(printf '%s\n' "$out" | grep '^ok:')"
expect_match "verify on the full disk exits 0" "verify=0" "$out"
