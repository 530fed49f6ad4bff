/* supervisor/trail/query.c: read-only access to a trail: filtered queries in sequence order,
 * blobs, the JSON form of an entry, and the time formats people type. */
#include "supervisor/trail/internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sodium.h>

struct trail_reader {
    sqlite3 *db;
    char *path;
};

/* "file:" URI for path with immutable=1 (characters special in a URI percent-encoded). */
static char *immutable_uri(const char *path)
{
    size_t n = strlen(path);
    if (n > 4096)
        return NULL;
    char *u = malloc(3 * n + 32), *q = u;
    if (!u)
        return NULL;
    q += sprintf(q, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p == '?' || *p == '#' || *p == '%' || *p < 0x20 || *p >= 0x7f)
            q += sprintf(q, "%%%02X", *p);
        else
            *q++ = (char)*p;
    }
    sprintf(q, "?immutable=1");
    return u;
}

/* Reads the header; SQLITE_ROW when both values came back. */
static int read_header(sqlite3 *db, int64_t *app, int64_t *ver)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
        *app = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_ROW &&
        (rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL)) == SQLITE_OK &&
        (rc = sqlite3_step(st)) == SQLITE_ROW)
        *ver = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc;
}

int trail_db_open_readonly(const char *path, sqlite3 **out, struct cerr *err)
{
    *out = NULL;
    struct stat sb;
    if (!path || !*path)
        return cerr_set(err, EINVAL, "trail: no file given; pass --db FILE");
    if (stat(path, &sb) < 0)
        return cerr_set(err, errno, "trail %s: %s; check the path given with --db", path,
                        strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return cerr_set(err, EINVAL,
                        "trail %s is not a regular file; pass the trail's database file with --db",
                        path);
    if (sodium_init() < 0)
        return cerr_set(err, EIO, "trail: libsodium failed to initialise");
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int r = cerr_set(err, EIO, "trail %s cannot be opened for reading: %s", path,
                         db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return r;
    }
    sqlite3_busy_timeout(db, 5000);
    int64_t app = -1, ver = -1;
    rc = read_header(db, &app, &ver);
    if (rc == SQLITE_READONLY || rc == SQLITE_CANTOPEN) {
        /* A WAL reader needs the -shm file, and creates it when no writer is running; without
         * write access to the directory it cannot. With no -wal file either, every committed
         * entry is in the main file, which can then be read as an immutable file. */
        _cleanup_free_ char *wal = util_printf("%s-wal", path);
        _cleanup_free_ char *uri = immutable_uri(path);
        struct stat ws;
        if (!wal || !uri)
            rc = SQLITE_NOMEM;
        else if (stat(wal, &ws) == 0) {
            sqlite3_close(db);
            return cerr_set(err, EACCES,
                            "trail %s cannot be read: its writer's shared-memory file %s-shm is missing "
                            "and cannot be created here; read it as a user who can write its directory",
                            path, path);
        } else {
            sqlite3_close(db);
            db = NULL;
            rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                                 NULL);
            if (rc == SQLITE_OK)
                rc = read_header(db, &app, &ver);
        }
    }
    int r = 0;
    if (rc == SQLITE_NOTADB)
        r = cerr_set(err, EINVAL,
                     "%s is not a corral trail (not an SQLite database); check the path given with --db",
                     path);
    else if (rc != SQLITE_ROW)
        r = cerr_set(err, EIO, "trail %s cannot be read: %s", path,
                     db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    else if (app != TRAIL_APPLICATION_ID)
        r = cerr_set(
            err, EINVAL,
            "%s is not a corral trail (SQLite application_id %lld); check the path given with --db",
            path, (long long)app);
    else if (ver != TRAIL_FORMAT)
        r = cerr_set(err, EINVAL, "trail %s has format %lld; this corral reads format %d", path,
                     (long long)ver, TRAIL_FORMAT);
    if (r < 0) {
        sqlite3_close(db);
        return r;
    }
    *out = db;
    return 0;
}

int trail_reader_open(const char *path, struct trail_reader **out, struct cerr *err)
{
    *out = NULL;
    struct trail_reader *r = calloc(1, sizeof(*r));
    if (!r || !(r->path = strdup(path ? path : ""))) {
        free(r);
        return cerr_set(err, ENOMEM, "trail: out of memory");
    }
    int rc = trail_db_open_readonly(path, &r->db, err);
    if (rc < 0) {
        trail_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

void trail_reader_close(struct trail_reader *r)
{
    if (!r)
        return;
    sqlite3_close(r->db);
    free(r->path);
    free(r);
}

static const uint8_t *col_hash(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    const uint8_t *p = sqlite3_column_blob(st, i);
    return sqlite3_column_bytes(st, i) == TRAIL_HASH_LEN ? p : NULL;
}

void trail_row_entry(sqlite3_stmt *st, struct trail_entry *e)
{
    e->seq = (uint64_t)sqlite3_column_int64(st, 0);
    e->id = (const char *)sqlite3_column_text(st, 1);
    e->ts_us = sqlite3_column_int64(st, 2);
    e->workspace = (const char *)sqlite3_column_text(st, 3);
    e->actor = (const char *)sqlite3_column_text(st, 4);
    e->type = (const char *)sqlite3_column_text(st, 5);
    e->body = (const char *)sqlite3_column_text(st, 6);
    e->body_len = (size_t)sqlite3_column_bytes(st, 6);
    e->local_seq = (uint64_t)sqlite3_column_int64(st, 7);
    e->local_prev = col_hash(st, 8);
    e->prev_hash = col_hash(st, 9);
    e->hash = col_hash(st, 10);
    if (!e->id)
        e->id = "";
    if (!e->actor)
        e->actor = "";
    if (!e->type)
        e->type = "";
    if (!e->body)
        e->body = "";
}

/* One SELECT over entries. With a workspace: `indexed` reads entries seq in (after, upto] through
 * ws_index (and still checks each row's workspace, so a damaged index can hide rows but never
 * add foreign ones); otherwise entries above `after` are scanned. *n counts the rows passed. */
static int query_part(struct trail_reader *r, const struct trail_filter *f, bool indexed, uint64_t after,
                      uint64_t upto, uint64_t limit, trail_entry_cb cb, void *ctx, uint64_t *n,
                      struct cerr *err)
{
    char sql[768];
    snprintf(
        sql, sizeof(sql), "SELECT " TRAIL_COLS " FROM entries WHERE %s%s%s%s%s%s ORDER BY seq%s",
        indexed
            ? "seq IN (SELECT seq FROM ws_index WHERE workspace = :ws AND seq > :after AND seq <= :upto)"
            : "seq > :after",
        f->workspace ? " AND workspace = :ws" : "", f->actor ? " AND actor = :actor" : "",
        f->type ? " AND type = :type" : "", f->has_since ? " AND ts >= :since" : "",
        f->has_until ? " AND ts <= :until" : "", limit ? " LIMIT :limit" : "");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(r->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return cerr_set(err, EIO, "trail %s cannot be queried: %s", r->path, sqlite3_errmsg(r->db));
    sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":after"),
                       after > INT64_MAX ? INT64_MAX : (sqlite3_int64)after);
    if (indexed)
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":upto"), (sqlite3_int64)upto);
    if (f->workspace)
        sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":ws"), f->workspace, -1, SQLITE_STATIC);
    if (f->actor)
        sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":actor"), f->actor, -1, SQLITE_STATIC);
    if (f->type)
        sqlite3_bind_text(st, sqlite3_bind_parameter_index(st, ":type"), f->type, -1, SQLITE_STATIC);
    if (f->has_since)
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":since"), f->since_us);
    if (f->has_until)
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":until"), f->until_us);
    if (limit)
        sqlite3_bind_int64(st, sqlite3_bind_parameter_index(st, ":limit"),
                           limit > INT64_MAX ? INT64_MAX : (sqlite3_int64)limit);
    int ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct trail_entry e;
        trail_row_entry(st, &e);
        (*n)++;
        if ((ret = cb(&e, ctx)) != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = cerr_set(err, EIO, "trail %s cannot be read: %s", r->path, sqlite3_errmsg(r->db));
    sqlite3_finalize(st);
    return ret;
}

int trail_query(struct trail_reader *r, const struct trail_filter *f, trail_entry_cb cb, void *ctx,
                struct cerr *err)
{
    static const struct trail_filter none;
    if (!f)
        f = &none;
    uint64_t n = 0, upto = 0;
    if (f->workspace) {
        /* one read transaction, so the mark and both parts see the same commits */
        sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(r->db, "SELECT max(upto) FROM ws_index_marks", -1, &st, NULL) ==
                SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            upto = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        int ret = 0;
        if (f->after_seq < upto)
            ret = query_part(r, f, true, f->after_seq, upto, f->limit, cb, ctx, &n, err);
        if (ret == 0 && (!f->limit || n < f->limit))
            ret = query_part(r, f, false, f->after_seq > upto ? f->after_seq : upto, 0,
                             f->limit ? f->limit - n : 0, cb, ctx, &n, err);
        sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
        return ret;
    }
    return query_part(r, f, false, f->after_seq, 0, f->limit, cb, ctx, &n, err);
}

int trail_blobs_each(struct trail_reader *r, trail_blob_cb cb, void *ctx, struct cerr *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(r->db, "SELECT hash, data FROM blobs ORDER BY hash", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return cerr_set(err, EIO, "trail %s: cannot read blobs: %s", r->path, sqlite3_errmsg(r->db));
    int ret = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char hex[2 * TRAIL_HASH_LEN + 1] = "";
        const void *h = sqlite3_column_blob(st, 0);
        int hl = sqlite3_column_bytes(st, 0);
        if (h && hl == TRAIL_HASH_LEN)
            sodium_bin2hex(hex, sizeof(hex), h, TRAIL_HASH_LEN);
        const void *data = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        if ((ret = cb(hex, data ? data : "", len, ctx)) != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        ret = cerr_set(err, EIO, "trail %s: cannot read blobs: %s", r->path, sqlite3_errmsg(r->db));
    sqlite3_finalize(st);
    return ret;
}

int trail_blob_get(struct trail_reader *r, const char *hash_hex, void **data, size_t *len,
                   struct cerr *err)
{
    uint8_t h[TRAIL_HASH_LEN];
    size_t hl = 0;
    *data = NULL;
    *len = 0;
    if (!hash_hex || strlen(hash_hex) != 2 * TRAIL_HASH_LEN ||
        sodium_hex2bin(h, sizeof(h), hash_hex, strlen(hash_hex), NULL, &hl, NULL) != 0 ||
        hl != sizeof(h))
        return cerr_set(err, EINVAL, "trail: '%.80s' is not a blob hash (64 hex digits)",
                        hash_hex ? hash_hex : "");
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(r->db, "SELECT data FROM blobs WHERE hash = ?1", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return cerr_set(err, EIO, "trail %s: cannot read blobs: %s", r->path, sqlite3_errmsg(r->db));
    sqlite3_bind_blob(st, 1, h, sizeof(h), SQLITE_STATIC);
    int ret;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        size_t n = (size_t)sqlite3_column_bytes(st, 0);
        void *p = malloc(n ? n : 1);
        if (!p) {
            ret = cerr_set(err, ENOMEM, "trail: out of memory");
        } else {
            if (n)
                memcpy(p, sqlite3_column_blob(st, 0), n);
            *data = p;
            *len = n;
            ret = 0;
        }
    } else if (rc == SQLITE_DONE) {
        ret = cerr_set(err, ENOENT, "trail %s has no blob %s", r->path, hash_hex);
    } else {
        ret = cerr_set(err, EIO, "trail %s: cannot read blobs: %s", r->path, sqlite3_errmsg(r->db));
    }
    sqlite3_finalize(st);
    return ret;
}

static bool add_hash(cJSON *o, const char *key, const uint8_t *h)
{
    if (!h)
        return cJSON_AddNullToObject(o, key) != NULL;
    char hex[2 * TRAIL_HASH_LEN + 1];
    sodium_bin2hex(hex, sizeof(hex), h, TRAIL_HASH_LEN);
    return cJSON_AddStringToObject(o, key, hex) != NULL;
}

cJSON *trail_entry_to_json(const struct trail_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    char when[40];
    trail_format_time(e->ts_us, when, sizeof(when));
    /* The body goes out as stored (canonical JSON) so a reader can recompute the hash from it. */
    cJSON *body = cJSON_CreateRaw(e->body_len ? e->body : "{}");
    /* Integers as integers: cJSON prints doubles with %g, and 16-digit microseconds came out in
     * exponent form. */
    char ts[24];
    snprintf(ts, sizeof(ts), "%lld", (long long)e->ts_us);
    if (!o || !body || !cJSON_AddNumberToObject(o, "seq", (double)e->seq) ||
        !cJSON_AddStringToObject(o, "id", e->id) || !cJSON_AddStringToObject(o, "timestamp", when) ||
        !cJSON_AddRawToObject(o, "ts_us", ts) ||
        !(e->workspace ? cJSON_AddStringToObject(o, "workspace", e->workspace)
                       : cJSON_AddNullToObject(o, "workspace")) ||
        !cJSON_AddStringToObject(o, "actor", e->actor) || !cJSON_AddStringToObject(o, "type", e->type) ||
        !cJSON_AddItemToObject(o, "body", body)) {
        cJSON_Delete(body);
        cJSON_Delete(o);
        return NULL;
    }
    if (!(e->workspace ? cJSON_AddNumberToObject(o, "local_seq", (double)e->local_seq)
                       : cJSON_AddNullToObject(o, "local_seq")) ||
        !add_hash(o, "local_prev", e->local_prev) || !add_hash(o, "prev_hash", e->prev_hash) ||
        !add_hash(o, "hash", e->hash)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void trail_format_time(int64_t ts_us, char *buf, size_t cap)
{
    time_t sec = (time_t)(ts_us / 1000000);
    long us = (long)(ts_us % 1000000);
    if (us < 0) {
        us += 1000000;
        sec--;
    }
    struct tm tm;
    if (!gmtime_r(&sec, &tm)) {
        snprintf(buf, cap, "%lld", (long long)ts_us);
        return;
    }
    snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
}

/* Reads exactly n digits at *p into *v. */
static bool digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return false;
        *v = *v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return true;
}

/* Fraction digits after '.', as microseconds (extra digits truncated). */
static bool fraction(const char **p, int64_t *us)
{
    int64_t scale = 100000;
    *us = 0;
    if (**p < '0' || **p > '9')
        return false;
    while (**p >= '0' && **p <= '9') {
        *us += (**p - '0') * scale;
        scale /= 10;
        (*p)++;
    }
    return true;
}

int trail_parse_time(const char *s, int64_t *out_us)
{
    if (!s || !*s)
        return -EINVAL;
    const char *p = s;
    bool all_digits = true;
    for (const char *q = s; *q; q++)
        if (!((*q >= '0' && *q <= '9') || *q == '.'))
            all_digits = false;
    if (all_digits) { /* unix seconds */
        int64_t sec = 0, us = 0;
        if (*p < '0' || *p > '9')
            return -EINVAL;
        while (*p >= '0' && *p <= '9') {
            if (sec > (INT64_MAX / 1000000 - 9) / 10)
                return -EINVAL;
            sec = sec * 10 + (*p++ - '0');
        }
        if (*p == '.') {
            p++;
            if (!fraction(&p, &us))
                return -EINVAL;
        }
        if (*p)
            return -EINVAL;
        *out_us = sec * 1000000 + us;
        return 0;
    }
    int Y, M, D, h = 0, m = 0, sec = 0;
    int64_t us = 0, off = 0;
    if (!digits(&p, 4, &Y) || *p++ != '-' || !digits(&p, 2, &M) || *p++ != '-' || !digits(&p, 2, &D))
        return -EINVAL;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &m))
            return -EINVAL;
        if (*p == ':') {
            p++;
            if (!digits(&p, 2, &sec))
                return -EINVAL;
            if (*p == '.' || *p == ',') {
                p++;
                if (!fraction(&p, &us))
                    return -EINVAL;
            }
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
            if (!digits(&p, 2, &oh))
                return -EINVAL;
            if (*p == ':')
                p++;
            if (*p && !digits(&p, 2, &om))
                return -EINVAL;
            if (oh > 23 || om > 59)
                return -EINVAL;
            off = sign * (oh * 3600 + om * 60);
        }
    }
    if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -EINVAL;
    struct tm tm = {
        .tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h, .tm_min = m, .tm_sec = sec};
    time_t t = timegm(&tm);
    if (t == (time_t)-1 && !(Y == 1969 && M == 12 && D == 31))
        return -EINVAL;
    if (tm.tm_mday != D) /* 2026-02-31 and the like */
        return -EINVAL;
    *out_us = ((int64_t)t - off) * 1000000 + us;
    return 0;
}
