/* supervisor/trail_verify.c: recompute a trail's hash chains from a read-only connection, in one
 * streamed pass over the entries in sequence order, then check every blob against its hash. */
#include "supervisor/trail_internal.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

struct verify {
    const char *path;
    struct tbuf scratch;
    struct trail_wsmap ws;
};

__attribute__((format(printf, 4, 5)))
static int bad(struct cerr *err, uint64_t *bad_seq, uint64_t seq, const char *fmt, ...)
{
    *bad_seq = seq;
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    cerr_set(err, EBADMSG, "entry %llu: %s", (unsigned long long)seq, why);
    return 1;
}

static bool same(const uint8_t *a, const uint8_t *b)
{
    if (!a || !b)
        return a == b;
    return sodium_memcmp(a, b, TRAIL_HASH_LEN) == 0;
}

/* A hash column holds NULL or exactly 32 bytes; anything else is damage. */
static bool hash_col(sqlite3_stmt *st, int i, const uint8_t **out)
{
    int t = sqlite3_column_type(st, i);
    if (t == SQLITE_NULL) {
        *out = NULL;
        return true;
    }
    *out = sqlite3_column_blob(st, i);
    return t == SQLITE_BLOB && sqlite3_column_bytes(st, i) == TRAIL_HASH_LEN;
}

static int verify_entries(struct verify *v, sqlite3 *db, uint64_t *count, uint64_t *bad_seq, struct cerr *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT " TRAIL_COLS " FROM entries ORDER BY seq", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return cerr_set(err, EIO, "trail %s cannot be read: %s", v->path, sqlite3_errmsg(db));
    uint64_t expect = 1;
    int64_t last_ts = INT64_MIN;
    uint8_t prev[TRAIL_HASH_LEN];
    int ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);
        if (seq != expect) {
            char why[160];
            if (seq > expect)
                snprintf(why, sizeof(why), "is missing: the sequence jumps from %llu to %llu (rows deleted)",
                         (unsigned long long)expect - 1, (unsigned long long)seq);
            else
                snprintf(why, sizeof(why), "is out of order: sequence %llu follows %llu", (unsigned long long)seq,
                         (unsigned long long)expect - 1);
            ret = bad(err, bad_seq, expect, "%s", why);
            break;
        }
        struct trail_fields f = {.seq = seq};
        f.id = (const char *)sqlite3_column_text(st, 1);
        f.id_len = (size_t)sqlite3_column_bytes(st, 1);
        f.ts_us = sqlite3_column_int64(st, 2);
        f.workspace = (const char *)sqlite3_column_text(st, 3);
        f.ws_len = (size_t)sqlite3_column_bytes(st, 3);
        f.actor = (const char *)sqlite3_column_text(st, 4);
        f.actor_len = (size_t)sqlite3_column_bytes(st, 4);
        f.type = (const char *)sqlite3_column_text(st, 5);
        f.type_len = (size_t)sqlite3_column_bytes(st, 5);
        f.body = (const char *)sqlite3_column_text(st, 6);
        f.body_len = (size_t)sqlite3_column_bytes(st, 6);
        f.local_seq = (uint64_t)sqlite3_column_int64(st, 7);
        const uint8_t *local_prev, *local_hash, *prev_hash, *hash;
        if (!hash_col(st, 8, &local_prev) || !hash_col(st, 9, &local_hash) || !hash_col(st, 10, &prev_hash) ||
            !hash_col(st, 11, &hash) || !hash) {
            ret = bad(err, bad_seq, seq, "%s", "a hash column is not a 32-byte hash");
            break;
        }
        if (!f.id || !f.actor || !f.type || !f.body) {
            ret = bad(err, bad_seq, seq, "%s", "a required column is NULL");
            break;
        }
        if (!same(prev_hash, seq > 1 ? prev : NULL)) {
            ret = bad(err, bad_seq, seq, "%s", seq > 1 ? "prev_hash does not match the hash of the entry before it (changed prev_hash, or entries reordered or replaced)"
                                                       : "the first entry must have no prev_hash");
            break;
        }
        if (f.ts_us <= last_ts) {
            ret = bad(err, bad_seq, seq, "%s", "its timestamp is not after the previous entry's");
            break;
        }
        if (!trail_event_known(f.type)) {
            ret = bad(err, bad_seq, seq, "has an unknown event type '%.64s'", f.type);
            break;
        }
        struct trail_wshead *h = NULL;
        if (f.workspace) {
            bool created;
            h = trail_wsmap_get(&v->ws, f.workspace, f.ws_len, &created);
            if (!h) {
                ret = cerr_set(err, ENOMEM, "trail verify: out of memory");
                break;
            }
            if (f.local_seq != h->local_seq + 1 || !local_hash) {
                ret = bad(err, bad_seq, seq, "its local sequence in workspace '%.200s' is broken (a workspace entry deleted, moved or changed)", h->name);
                break;
            }
            if (!same(local_prev, h->local_seq ? h->local_hash : NULL)) {
                ret = bad(err, bad_seq, seq, "local_prev does not match the previous entry of workspace '%.200s'", h->name);
                break;
            }
            f.local_prev = local_prev;
        } else if (local_prev || local_hash || sqlite3_column_type(st, 7) != SQLITE_NULL) {
            ret = bad(err, bad_seq, seq, "%s", "a system-level entry carries local-chain fields");
            break;
        }
        f.prev_hash = prev_hash;
        uint8_t lh[TRAIL_HASH_LEN], gh[TRAIL_HASH_LEN];
        if ((ret = trail_hash_entry(&v->scratch, &f, lh, gh)) < 0) {
            ret = cerr_set(err, ret, "trail verify: out of memory");
            break;
        }
        if (h && !same(lh, local_hash)) {
            ret = bad(err, bad_seq, seq, "%s", "local_hash does not match its contents (changed workspace, body, fields or local hash)");
            break;
        }
        if (!same(gh, hash)) {
            ret = bad(err, bad_seq, seq, "%s", "hash does not match its contents (changed body, fields or hash)");
            break;
        }
        if (h) {
            h->local_seq = f.local_seq;
            memcpy(h->local_hash, lh, TRAIL_HASH_LEN);
        }
        memcpy(prev, gh, TRAIL_HASH_LEN);
        last_ts = f.ts_us;
        expect++;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = cerr_set(err, EIO, "trail %s cannot be read: %s", v->path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (ret == 0 && expect == 1)
        ret = bad(err, bad_seq, 1, "%s", "is missing: the trail has no entries, not even trail_created");
    *count = expect - 1;
    return ret;
}

/* The first entry whose body mentions hex, for naming the entry a damaged blob belongs to. */
static uint64_t first_ref(sqlite3 *db, const char *hex)
{
    sqlite3_stmt *st = NULL;
    uint64_t seq = 0;
    if (sqlite3_prepare_v2(db, "SELECT seq FROM entries WHERE instr(body, ?1) > 0 ORDER BY seq LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, hex, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            seq = (uint64_t)sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return seq;
}

static int verify_blobs(struct verify *v, sqlite3 *db, uint64_t *bad_seq, struct cerr *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT hash, size, data FROM blobs", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return cerr_set(err, EIO, "trail %s: cannot read blobs: %s", v->path, sqlite3_errmsg(db));
    int ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *h = sqlite3_column_blob(st, 0);
        int hl = sqlite3_column_bytes(st, 0);
        const void *data = sqlite3_column_blob(st, 2);
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        uint8_t got[TRAIL_HASH_LEN];
        crypto_generichash(got, sizeof(got), data ? data : "", len, NULL, 0);
        char hex[2 * TRAIL_HASH_LEN + 1] = "?";
        if (h && hl == TRAIL_HASH_LEN)
            sodium_bin2hex(hex, sizeof(hex), h, TRAIL_HASH_LEN);
        if (!h || hl != TRAIL_HASH_LEN || sodium_memcmp(got, h, TRAIL_HASH_LEN) != 0 ||
            sqlite3_column_int64(st, 1) != (sqlite3_int64)len) {
            *bad_seq = hl == TRAIL_HASH_LEN ? first_ref(db, hex) : 0;
            if (*bad_seq)
                cerr_set(err, EBADMSG, "entry %llu: its blob %s does not match its hash (the blob's content or size was changed)",
                         (unsigned long long)*bad_seq, hex);
            else
                cerr_set(err, EBADMSG, "blob %s does not match its hash (the blob's content or size was changed)", hex);
            ret = 1;
            break;
        }
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = cerr_set(err, EIO, "trail %s: cannot read blobs: %s", v->path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return ret;
}

int trail_verify_file_count(const char *path, uint64_t *count, uint64_t *bad_seq, struct cerr *err)
{
    uint64_t n = 0, dummy = 0;
    if (!bad_seq)
        bad_seq = &dummy;
    *bad_seq = 0;
    if (count)
        *count = 0;
    sqlite3 *db = NULL;
    int ret = trail_db_open_readonly(path, &db, err);
    if (ret < 0)
        return ret;
    /* A read-only scan: map the file rather than copy pages through the cache. */
    sqlite3_exec(db, "PRAGMA mmap_size=2147418112", NULL, NULL, NULL);
    struct verify v = {.path = path};
    /* One read transaction: entries and blobs from the same snapshot while a writer goes on. */
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        ret = cerr_set(err, EIO, "trail %s cannot be read: %s", path, sqlite3_errmsg(db));
    } else {
        ret = verify_entries(&v, db, &n, bad_seq, err);
        if (ret == 0)
            ret = verify_blobs(&v, db, bad_seq, err);
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    if (count)
        *count = n;
    trail_wsmap_clear(&v.ws);
    tbuf_free(&v.scratch);
    sqlite3_close(db);
    return ret;
}

int trail_verify_file(const char *path, uint64_t *bad_seq, struct cerr *err)
{
    return trail_verify_file_count(path, NULL, bad_seq, err);
}
