/* supervisor/trail/verify.c: recompute a trail's hash chains from a read-only connection, in one
 * streamed pass over the entries in sequence order, then check every blob against its hash. */
#include "supervisor/trail/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

/* The sequence 1..N is cut into one contiguous range per CPU (at most 4); each thread streams
 * its range in sequence order over its own read-only connection, with one prepared statement,
 * recomputing every hash and checking every link inside the range. The links that cross a range
 * boundary (prev_hash, timestamps, each workspace's local chain) are stitched afterwards, in
 * order. Rows are append-only, so the ranges read the same committed entries 1..N even while a
 * writer appends. The first bad entry is the lowest sequence any check flagged. */

#define RANGES_MAX 4
#define RANGE_MIN 50000 /* below this many entries per range, threads are not worth it */

struct vrange {
    const char *path;
    uint64_t lo, hi;                      /* inclusive */
    uint64_t index_upto, indexed, digest; /* the ws_index mark; workspace entries at or below it */
    sqlite3 *db;
    struct trail_wsmap ws;
    struct trail_wsmap refs; /* hex hash -> first_seq of the first entry naming it */
    struct trail_buf scratch;
    /* found */
    uint64_t bad_seq;
    int code; /* 0 ok, 1 a bad entry at bad_seq, < 0 an error */
    /* entries whose content does not match their hash, their links intact (not in code) */
    uint64_t damaged[TRAIL_DAMAGED_MAX];
    size_t n_damaged;
    bool damaged_more;
    char why[512];
    /* for stitching */
    uint8_t first_prev[TRAIL_HASH_LEN], last_hash[TRAIL_HASH_LEN];
    int64_t first_ts, last_ts;
};

__attribute__((format(printf, 3, 4))) static void bad(struct vrange *v, uint64_t seq, const char *fmt,
                                                      ...)
{
    if (v->code && (v->code < 0 || v->bad_seq <= seq))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->why, sizeof(v->why), fmt, ap);
    va_end(ap);
    v->bad_seq = seq;
    v->code = 1;
}

static bool same(const uint8_t *a, const uint8_t *b)
{
    if (!a || !b)
        return a == b;
    return memcmp(a, b, TRAIL_HASH_LEN) == 0;
}

/* A hash column holds NULL or exactly 32 bytes; anything else is damage. (Few calls into SQLite
 * per column is most of what makes the scan fast: a NULL comes back as a NULL pointer.) */
static bool hash_col(sqlite3_stmt *st, int i, const uint8_t **out)
{
    *out = sqlite3_column_blob(st, i);
    return !*out || sqlite3_column_bytes(st, i) == TRAIL_HASH_LEN;
}

/* Text through sqlite3_column_blob: the bytes in place, without the copy column_text makes to
 * add a NUL (every length is explicit here). NULL for SQL NULL and for an empty string, which no
 * column of a sound entry holds. */
static const char *col_bytes(sqlite3_stmt *st, int i, size_t *len)
{
    const char *p = sqlite3_column_blob(st, i);
    *len = p ? (size_t)sqlite3_column_bytes(st, i) : 0;
    return p;
}

static bool is_hex64(const char *p, const char *end)
{
    if (end - p < 2 * TRAIL_HASH_LEN + 1 || p[2 * TRAIL_HASH_LEN] != '"')
        return false;
    for (int i = 0; i < 2 * TRAIL_HASH_LEN; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

static bool note_ref(struct vrange *v, const char *hex, uint64_t seq)
{
    bool created;
    struct trail_wshead *h = trail_wsmap_get(&v->refs, hex, 2 * TRAIL_HASH_LEN, &created);
    if (!h) {
        v->code = -ENOMEM;
        snprintf(v->why, sizeof(v->why), "trail verify: out of memory");
        return false;
    }
    if (created)
        h->first_seq = seq;
    return true;
}

/* Blob references in a canonical body (docs/trail.md, "Blobs"): "blob":"HEX", "..._blob":"HEX",
 * "blobs":["HEX",...]. Canonical JSON escapes every quote inside a string, so `blob":` with bare
 * quotes can only be the end of a key. */
static bool scan_refs(struct vrange *v, const char *body, size_t len, uint64_t seq)
{
    const char *p = body, *end = body + len;
    while ((p = memmem(p, (size_t)(end - p), "blob", 4)) != NULL) {
        const char *q = p + 4;
        bool list = q < end && *q == 's';
        if (list)
            q++;
        bool key = p > body && (p[-1] == '"' || (p[-1] == '_' && !list));
        p += 4;
        if (!key || end - q < 3 || q[0] != '"' || q[1] != ':')
            continue;
        q += 2;
        if (!list) {
            if (*q == '"' && is_hex64(q + 1, end) && !note_ref(v, q + 1, seq))
                return false;
            continue;
        }
        if (*q++ != '[')
            continue;
        while (q < end && *q == '"' && is_hex64(q + 1, end)) {
            if (!note_ref(v, q + 1, seq))
                return false;
            q += 2 * TRAIL_HASH_LEN + 2;
            if (q < end && *q == ',')
                q++;
        }
    }
    return true;
}

/* One row: every check that needs only this row and the ones before it in the range. */
static bool check_row(struct vrange *v, sqlite3_stmt *st, uint64_t expect, const uint8_t *prev,
                      int64_t last_ts)
{
    struct trail_fields f = {.seq = (uint64_t)sqlite3_column_int64(st, 0)};
    if (f.seq != expect) {
        if (f.seq > expect)
            bad(v, expect, "is missing: the sequence jumps from %llu to %llu (rows deleted)",
                (unsigned long long)expect - 1, (unsigned long long)f.seq);
        else
            bad(v, expect, "is out of order: sequence %llu follows %llu", (unsigned long long)f.seq,
                (unsigned long long)expect - 1);
        return false;
    }
    const uint8_t *local_prev, *prev_hash, *hash;
    if (!hash_col(st, 8, &local_prev) || !hash_col(st, 9, &prev_hash) || !hash_col(st, 10, &hash) ||
        !hash) {
        bad(v, f.seq, "a hash column is not a 32-byte hash");
        return false;
    }
    f.id = col_bytes(st, 1, &f.id_len);
    f.ts_us = sqlite3_column_int64(st, 2);
    f.workspace = col_bytes(st, 3, &f.ws_len);
    f.actor = col_bytes(st, 4, &f.actor_len);
    f.type = col_bytes(st, 5, &f.type_len);
    f.body = col_bytes(st, 6, &f.body_len);
    if (!f.id || !f.actor || !f.type || !f.body) {
        bad(v, f.seq, "a required column is NULL or empty");
        return false;
    }
    f.local_seq = (uint64_t)sqlite3_column_int64(st, 7);
    f.local_prev = local_prev;
    f.prev_hash = prev_hash;
    char type[64];
    if (f.type_len >= sizeof(type) || memchr(f.type, 0, f.type_len)) {
        bad(v, f.seq, "has an unknown event type");
        return false;
    }
    memcpy(type, f.type, f.type_len);
    type[f.type_len] = '\0';
    if (!prev_hash != (f.seq == 1) || (prev && !same(prev_hash, prev))) {
        bad(v, f.seq, "%s",
            f.seq > 1 ? "prev_hash does not match the hash of the entry before it (changed prev_hash or "
                        "hash, or entries reordered or replaced)"
                      : "the first entry must have no prev_hash");
        return false;
    }
    if (prev && f.ts_us <= last_ts) {
        bad(v, f.seq, "its timestamp is not after the previous entry's");
        return false;
    }
    if (!trail_event_known(type)) {
        bad(v, f.seq, "has an unknown event type '%s'", type);
        return false;
    }
    struct trail_wshead *h = NULL;
    if (f.workspace) {
        bool created;
        h = trail_wsmap_get(&v->ws, f.workspace, f.ws_len, &created);
        if (!h) {
            v->code = -ENOMEM;
            snprintf(v->why, sizeof(v->why), "trail verify: out of memory");
            return false;
        }
        if (sqlite3_column_type(st, 7) != SQLITE_INTEGER || f.local_seq < 1 ||
            !local_prev != (f.local_seq == 1)) {
            bad(v, f.seq, "its local chain fields in workspace '%.200s' are inconsistent", h->name);
            return false;
        }
        if (created) { /* its predecessor, if any, is in an earlier range: stitched later */
            h->first_seq = f.seq;
            h->first_local_seq = f.local_seq;
            h->first_has_prev = local_prev != NULL;
            if (local_prev)
                memcpy(h->first_local_prev, local_prev, TRAIL_HASH_LEN);
        } else if (f.local_seq != h->local_seq + 1 || !same(local_prev, h->last_hash)) {
            bad(v, f.seq,
                "local_prev or local_seq does not follow the previous entry of workspace '%.200s' (a "
                "workspace entry deleted, moved or changed)",
                h->name);
            return false;
        }
        if (f.seq <= v->index_upto) {
            v->indexed++;
            v->digest += trail_index_pair(h->key, f.seq);
        }
    } else if (local_prev || sqlite3_column_type(st, 7) != SQLITE_NULL) {
        bad(v, f.seq, "a system-level entry carries local-chain fields");
        return false;
    }
    uint8_t gh[TRAIL_HASH_LEN];
    if (trail_hash_entry(&v->scratch, &f, gh) < 0) {
        v->code = -ENOMEM;
        snprintf(v->why, sizeof(v->why), "trail verify: out of memory");
        return false;
    }
    /* Content that does not match its hash, with the links before it held: damage confined to
     * this entry as long as the links after it hold too (they name the STORED hash), so the scan
     * goes on and the entry is listed apart (trail_verify_damage). Its body names nothing. */
    if (!same(gh, hash)) {
        if (v->n_damaged < TRAIL_DAMAGED_MAX)
            v->damaged[v->n_damaged++] = f.seq;
        else
            v->damaged_more = true;
    } else if (!scan_refs(v, f.body, f.body_len, f.seq)) {
        return false;
    }
    if (h) {
        h->local_seq = f.local_seq;
        memcpy(h->last_hash, hash, TRAIL_HASH_LEN);
    }
    return true;
}

static void *verify_range(void *arg)
{
    struct vrange *v = arg;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        v->db, "SELECT " TRAIL_COLS " FROM entries WHERE seq BETWEEN ?1 AND ?2 ORDER BY seq", -1, &st,
        NULL);
    if (rc != SQLITE_OK) {
        v->code = -EIO;
        snprintf(v->why, sizeof(v->why), "trail %s cannot be read: %s", v->path, sqlite3_errmsg(v->db));
        return NULL;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)v->lo);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)v->hi);
    uint64_t expect = v->lo;
    const uint8_t *prev = NULL;
    int64_t last_ts = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!check_row(v, st, expect, prev, last_ts))
            break;
        /* keep this row's hash and time for the next row; the first row's for stitching */
        memcpy(v->last_hash, sqlite3_column_blob(st, 10), TRAIL_HASH_LEN);
        last_ts = v->last_ts = sqlite3_column_int64(st, 2);
        if (expect == v->lo) {
            v->first_ts = last_ts;
            if (sqlite3_column_type(st, 9) == SQLITE_BLOB)
                memcpy(v->first_prev, sqlite3_column_blob(st, 9), TRAIL_HASH_LEN);
        }
        prev = v->last_hash;
        expect++;
    }
    if (!v->code && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        v->code = -EIO;
        snprintf(v->why, sizeof(v->why), "trail %s cannot be read: %s", v->path, sqlite3_errmsg(v->db));
    }
    if (!v->code && expect <= v->hi)
        bad(v, expect, "is missing: the trail ends at %llu but holds entries up to %llu (rows deleted)",
            (unsigned long long)expect - 1, (unsigned long long)v->hi);
    sqlite3_finalize(st);
    return NULL;
}

/* Links across range boundaries, in order; returns the first failure into *first. */
static void stitch(struct vrange *rg, int n, struct vrange *first)
{
    struct trail_wsmap heads = {0};
    for (int k = 1; k < n; k++) {
        struct vrange *a = &rg[k - 1], *b = &rg[k];
        if (a->code || b->code)
            break; /* a failure inside a range is earlier than anything past it */
        if (memcmp(b->first_prev, a->last_hash, TRAIL_HASH_LEN) != 0)
            bad(first, b->lo,
                "prev_hash does not match the hash of the entry before it (changed prev_hash or hash, "
                "or entries reordered or replaced)");
        else if (b->first_ts <= a->last_ts)
            bad(first, b->lo, "its timestamp is not after the previous entry's");
    }
    for (int k = 0; k < n && !rg[k].code; k++) {
        struct trail_wsmap *m = &rg[k].ws;
        for (size_t i = 0; i < m->cap; i++) {
            struct trail_wshead *h = &m->slots[i], *g;
            if (!h->name)
                continue;
            bool created;
            if (!(g = trail_wsmap_get(&heads, h->name, h->len, &created))) {
                first->code = -ENOMEM;
                snprintf(first->why, sizeof(first->why), "trail verify: out of memory");
                break;
            }
            if (h->first_local_seq != g->local_seq + 1 || h->first_has_prev != (g->local_seq > 0) ||
                (h->first_has_prev && memcmp(h->first_local_prev, g->last_hash, TRAIL_HASH_LEN) != 0))
                bad(first, h->first_seq,
                    "local_prev or local_seq does not follow the previous entry of workspace '%.200s' "
                    "(a workspace entry deleted, moved or changed)",
                    h->name);
            g->local_seq = h->local_seq;
            memcpy(g->last_hash, h->last_hash, TRAIL_HASH_LEN);
        }
    }
    trail_wsmap_clear(&heads);
}

/* The first entry whose body mentions hex, for naming the entry a damaged blob belongs to. */
static uint64_t first_ref(sqlite3 *db, const char *hex)
{
    sqlite3_stmt *st = NULL;
    uint64_t seq = UINT64_MAX;
    if (sqlite3_prepare_v2(db, "SELECT seq FROM entries WHERE instr(body, ?1) > 0 ORDER BY seq LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, hex, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            seq = (uint64_t)sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return seq;
}

/* Every blob an entry names is there (ranges in order: the first range naming a hash holds its
 * first reference). */
static void check_refs(sqlite3 *db, struct vrange *rg, int n, struct vrange *first)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM blobs WHERE hash = ?1", -1, &st, NULL) != SQLITE_OK) {
        first->code = -EIO;
        snprintf(first->why, sizeof(first->why), "trail %s: cannot read blobs: %s", rg[0].path,
                 sqlite3_errmsg(db));
        return;
    }
    for (int k = 0; k < n; k++) {
        struct trail_wsmap *m = &rg[k].refs;
        for (size_t i = 0; i < m->cap; i++) {
            struct trail_wshead *h = &m->slots[i];
            uint8_t bin[TRAIL_HASH_LEN];
            if (!h->name || sodium_hex2bin(bin, sizeof(bin), h->name, h->len, NULL, NULL, NULL) != 0)
                continue;
            sqlite3_bind_blob(st, 1, bin, sizeof(bin), SQLITE_STATIC);
            int rc = sqlite3_step(st);
            sqlite3_reset(st);
            if (rc == SQLITE_DONE)
                bad(first, h->first_seq, "it names blob %s, which is missing from the trail (deleted)",
                    h->name);
        }
    }
    sqlite3_finalize(st);
}

/* Every blob's content matches its hash and size. */
static void check_blobs(sqlite3 *db, const char *path, struct vrange *first)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT hash, size, data FROM blobs", -1, &st, NULL);
    if (rc != SQLITE_OK) {
        first->code = -EIO;
        snprintf(first->why, sizeof(first->why), "trail %s: cannot read blobs: %s", path,
                 sqlite3_errmsg(db));
        return;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const void *h = sqlite3_column_blob(st, 0);
        int hl = sqlite3_column_bytes(st, 0);
        const void *data = sqlite3_column_blob(st, 2);
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        uint8_t got[TRAIL_HASH_LEN];
        crypto_generichash(got, sizeof(got), data ? data : "", len, NULL, 0);
        if (h && hl == TRAIL_HASH_LEN && memcmp(got, h, TRAIL_HASH_LEN) == 0 &&
            sqlite3_column_int64(st, 1) == (sqlite3_int64)len)
            continue;
        char hex[2 * TRAIL_HASH_LEN + 1] = "(not a hash)";
        if (h && hl == TRAIL_HASH_LEN)
            sodium_bin2hex(hex, sizeof(hex), h, TRAIL_HASH_LEN);
        bad(first, hl == TRAIL_HASH_LEN ? first_ref(db, hex) : UINT64_MAX,
            "its blob %s does not match its hash (the blob's content or size was changed)", hex);
    }
    if (rc != SQLITE_DONE && first->code >= 0) {
        first->code = -EIO;
        snprintf(first->why, sizeof(first->why), "trail %s: cannot read blobs: %s", path,
                 sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
}

/* ws_index is derived, not hashed; it must still hold exactly the workspace entries up to the
 * mark, or queries by workspace could leave entries out. Its own thread and connection read it
 * while the ranges run; rows at or below the mark never change, whatever snapshot it sees. */
struct vindex {
    const char *path;
    uint64_t upto;
    uint64_t rows, digest, above;
    int code;
    char why[sizeof(((struct cerr *)0)->msg)];
};

static void *scan_index(void *arg)
{
    struct vindex *x = arg;
    sqlite3 *db = NULL;
    struct cerr e = {0};
    if (trail_db_open_readonly(x->path, &db, &e) < 0) {
        x->code = e.code;
        snprintf(x->why, sizeof(x->why), "%s", e.msg);
        return NULL;
    }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        db,
        "SELECT workspace, seq, seq > (SELECT ifnull(max(upto), 0) FROM ws_index_marks) FROM ws_index",
        -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        uint64_t seq = (uint64_t)sqlite3_column_int64(st, 1);
        x->above += sqlite3_column_int(st, 2) != 0;
        if (seq > x->upto)
            continue;
        const char *ws = sqlite3_column_blob(st, 0);
        size_t len = ws ? (size_t)sqlite3_column_bytes(st, 0) : 0;
        x->rows++;
        x->digest += trail_index_pair(trail_name_key(ws ? ws : "", len), seq);
    }
    if (rc != SQLITE_DONE) {
        x->code = -EIO;
        snprintf(x->why, sizeof(x->why), "trail %s: cannot read ws_index: %s", x->path,
                 sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return NULL;
}

static void check_index(const struct vindex *x, const struct vrange *rg, int n, uint64_t hi,
                        struct vrange *first)
{
    if (x->code < 0) {
        first->code = x->code;
        snprintf(first->why, sizeof(first->why), "%.500s", x->why);
        return;
    }
    uint64_t want = 0, digest = 0;
    for (int k = 0; k < n; k++) {
        want += rg[k].indexed;
        digest += rg[k].digest;
    }
    if (x->upto > hi || x->rows != want || x->digest != digest || x->above)
        bad(first, UINT64_MAX,
            "the workspace index (ws_index) does not match the entries up to its mark %llu (%llu rows "
            "for %llu entries%s): rows were deleted, added or changed, so queries by workspace may "
            "leave entries out",
            (unsigned long long)x->upto, (unsigned long long)x->rows, (unsigned long long)want,
            x->rows == want ? ", different ones" : "");
}

static int verify_entries(sqlite3 *db, const char *path, int ranges, uint64_t range_min, uint64_t *count,
                          uint64_t *bad_seq, struct trail_damage *d, struct cerr *err)
{
    sqlite3_stmt *st = NULL;
    int64_t lo = 0, hi = 0;
    bool empty = true;
    /* two subqueries: min() and max() together in one SELECT would scan a whole index */
    int rc = sqlite3_prepare_v2(
        db, "SELECT (SELECT min(seq) FROM entries), (SELECT max(seq) FROM entries)", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        empty = sqlite3_column_type(st, 0) == SQLITE_NULL;
        lo = sqlite3_column_int64(st, 0);
        hi = sqlite3_column_int64(st, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return cerr_set(err, EIO, "trail %s cannot be read: %s", path, sqlite3_errmsg(db));
    *count = empty ? 0 : (uint64_t)hi; /* when the check passes, entries are exactly 1..hi */
    if (empty) {
        *bad_seq = 1;
        cerr_set(err, EBADMSG, "entry 1 is missing: the trail has no entries, not even trail_created");
        return 1;
    }
    if (lo != 1) {
        *bad_seq = 1;
        cerr_set(err, EBADMSG, "entry 1: %s",
                 lo > 1 ? "is missing (rows deleted)"
                        : "is out of order: an entry has a sequence number below 1");
        return 1;
    }
    uint64_t upto = 0;
    if (sqlite3_prepare_v2(db, "SELECT max(upto) FROM ws_index_marks", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        upto = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    long cpus = ranges > 0 ? ranges : sysconf(_SC_NPROCESSORS_ONLN);
    int n = cpus < 1 ? 1 : cpus > RANGES_MAX ? RANGES_MAX : (int)cpus;
    while (n > 1 && (uint64_t)hi / (uint64_t)n < range_min)
        n--;
    struct vrange rg[RANGES_MAX];
    memset(rg, 0, sizeof(rg));
    uint64_t per = (uint64_t)hi / (uint64_t)n;
    int ret = 0;
    for (int k = 0; k < n; k++) {
        rg[k].path = path;
        rg[k].index_upto = upto;
        rg[k].lo = 1 + (uint64_t)k * per;
        rg[k].hi = k == n - 1 ? (uint64_t)hi : (uint64_t)(k + 1) * per;
        if (k == 0) {
            rg[k].db = db;
        } else if ((ret = trail_db_open_readonly(path, &rg[k].db, err)) < 0) {
            n = k;
            break;
        } else {
            sqlite3_exec(rg[k].db, "PRAGMA mmap_size=2147418112", NULL, NULL, NULL);
        }
    }
    pthread_t tids[RANGES_MAX], itid;
    bool started[RANGES_MAX] = {false}, istarted = false;
    struct vindex ix = {.path = path, .upto = upto};
    if (ret == 0) {
        istarted = pthread_create(&itid, NULL, scan_index, &ix) == 0;
        for (int k = 1; k < n; k++)
            started[k] = pthread_create(&tids[k], NULL, verify_range, &rg[k]) == 0;
        verify_range(&rg[0]);
        for (int k = 1; k < n; k++) {
            if (started[k])
                pthread_join(tids[k], NULL);
            else
                verify_range(&rg[k]);
        }
        if (istarted)
            pthread_join(itid, NULL);
        else
            scan_index(&ix);
        struct vrange first = {0};
        stitch(rg, n, &first);
        for (int k = 0; k < n; k++)
            if (rg[k].code < 0 ||
                (rg[k].code == 1 &&
                 (!first.code || (first.code == 1 && rg[k].bad_seq < first.bad_seq)))) {
                first.code = rg[k].code;
                first.bad_seq = rg[k].bad_seq;
                memcpy(first.why, rg[k].why, sizeof(first.why));
                if (first.code < 0)
                    break;
            }
        /* always: a trail whose blobs were all deleted must still show its dangling references */
        if (first.code >= 0)
            check_refs(db, rg, n, &first);
        if (first.code >= 0)
            check_blobs(db, path, &first);
        if (first.code >= 0)
            check_index(&ix, rg, n, (uint64_t)hi, &first);
        /* The damaged entries, in order; the first of them is reported when no other failure
         * comes before it (the message is the one a damaged entry always had). */
        d->other = first.code == 1;
        for (int k = 0; k < n; k++) {
            for (size_t i = 0; i < rg[k].n_damaged; i++)
                if (d->n < TRAIL_DAMAGED_MAX)
                    d->seq[d->n++] = rg[k].damaged[i];
                else
                    d->more = true;
            d->more |= rg[k].damaged_more;
        }
        if (first.code >= 0 && d->n && (!first.code || d->seq[0] < first.bad_seq)) {
            first.code = 1;
            first.bad_seq = d->seq[0];
            snprintf(first.why, sizeof(first.why),
                     "hash does not match its contents (changed body, fields or hash)");
        }
        if (first.code < 0) {
            ret = cerr_set(err, first.code, "%s", first.why);
        } else if (first.code == 1 && first.bad_seq == UINT64_MAX) { /* not one entry's problem */
            const char *why = first.why;
            if (!strncmp(why, "its blob ", 9))
                cerr_set(err, EBADMSG, "blob %s", why + 9);
            else
                cerr_set(err, EBADMSG, "%s", why);
            ret = 1;
        } else if (first.code == 1) {
            *bad_seq = first.bad_seq;
            cerr_set(err, EBADMSG, "entry %llu: %s", (unsigned long long)first.bad_seq, first.why);
            ret = 1;
        }
    }
    for (int k = 0; k < n; k++) {
        if (k > 0)
            sqlite3_close(rg[k].db);
        trail_wsmap_clear(&rg[k].ws);
        trail_wsmap_clear(&rg[k].refs);
        trail_buf_free(&rg[k].scratch);
    }
    return ret;
}

int trail_verify_ranges_damage(const char *path, int ranges, uint64_t range_min, uint64_t *count,
                               uint64_t *bad_seq, struct trail_damage *d, struct cerr *err)
{
    uint64_t n = 0, dummy = 0;
    struct trail_damage none;
    if (!d)
        d = &none;
    memset(d, 0, sizeof(*d));
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
    /* One read transaction: entries and blobs from the same snapshot while a writer goes on. */
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        ret = cerr_set(err, EIO, "trail %s cannot be read: %s", path, sqlite3_errmsg(db));
    } else {
        ret = verify_entries(db, path, ranges, range_min ? range_min : 1, &n, bad_seq, d, err);
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    if (count)
        *count = n;
    sqlite3_close(db);
    return ret;
}

int trail_verify_ranges(const char *path, int ranges, uint64_t range_min, uint64_t *count,
                        uint64_t *bad_seq, struct cerr *err)
{
    return trail_verify_ranges_damage(path, ranges, range_min, count, bad_seq, NULL, err);
}

int trail_verify_damage(const char *path, uint64_t *count, uint64_t *bad_seq, struct trail_damage *d,
                        struct cerr *err)
{
    return trail_verify_ranges_damage(path, 0, RANGE_MIN, count, bad_seq, d, err);
}

int trail_verify_file_count(const char *path, uint64_t *count, uint64_t *bad_seq, struct cerr *err)
{
    return trail_verify_ranges(path, 0, RANGE_MIN, count, bad_seq, err);
}

int trail_verify_file(const char *path, uint64_t *bad_seq, struct cerr *err)
{
    return trail_verify_file_count(path, NULL, bad_seq, err);
}
