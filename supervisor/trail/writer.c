/* supervisor/trail/writer.c: the trail's writer (open, append, blob_put, group commit, degraded mode,
 * recovery), its closed event registry and canonical JSON. */
#include "supervisor/trail/internal.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sodium.h>

/* ---- registry: WACP's 72 event types (trail spec section 9) plus corral's own, sorted bytewise
 * for bsearch; test_trail checks the order. docs/trail.md lists each with its body fields. */
static const char *const registry[] = {
    "agent_log",
    "authentication_failed",
    "authentication_succeeded",
    "batch_abort",
    "batch_priority_changed",
    "budget_exceeded",
    "budget_modified",
    "budget_warning",
    "capability_denied",
    "capability_granted",
    "capability_revoked",
    "checkpoint_created",
    "checkpoint_rejected",
    "conflict_detected",
    "conflict_resolved",
    "denial",
    "envelope_created",
    "envelope_delivered",
    "envelope_redelivered",
    "envelope_rejected",
    "envelope_undeliverable",
    "escalation_received",
    "escalation_resolved",
    "escalation_timeout",
    "gate_reentry_blocked",
    "gate_resolved",
    "gate_timeout",
    "gate_triggered",
    "graceful_termination_expired",
    "graceful_termination_initiated",
    "graph_created",
    "human_injection",
    "integration_aborted",
    "integration_completed",
    "integration_started",
    "integrity_violation",
    "liveness_warning",
    "migration_completed",
    "migration_failed",
    "migration_started",
    "network_closed",
    "network_connect",
    "port_right_consumed",
    "port_right_created",
    "port_right_revoked",
    "port_right_transferred",
    "priority_changed",
    "process_exited",
    "process_started",
    "protocol_error",
    "protocol_message",
    "recovery_completed",
    "resource_discrepancy",
    "sandbox_created",
    "signal_delivered",
    "signal_emitted",
    "supervisor_started",
    "supervisor_stopped",
    "suspension_resumed",
    "suspension_started",
    "system_degraded",
    "task_approved",
    "task_assigned",
    "task_completed",
    "task_created",
    "task_failed",
    "task_status_changed",
    "tool_call",
    "trail_access_denied",
    "trail_compacted",
    "trail_created",
    "trail_snapshot_created",
    "user_blocked",
    "user_created",
    "user_deactivated",
    "user_reactivated",
    "user_resumed",
    "user_suspended",
    "user_unblocked",
    "visibility_granted",
    "workspace_created",
    "workspace_ownership_transferred",
    "workspace_rejected",
    "workspace_reparented",
    "workspace_state_changed",
};

static int registry_cmp(const void *key, const void *elem)
{
    return strcmp((const char *)key, *(const char *const *)elem);
}

bool trail_event_known(const char *type)
{
    if (!type)
        return false;
    return bsearch(type, registry, ARRAY_SIZE(registry), sizeof(registry[0]), registry_cmp) != NULL;
}

const char *const *trail_event_types(size_t *n)
{
    *n = ARRAY_SIZE(registry);
    return registry;
}

/* ---- canonical JSON ------------------------------------------------------------------------- */

#define CANON_DEPTH_MAX 1000

static int canon_string(const char *s, struct trail_buf *b)
{
    size_t n = strlen(s), i = 0;
    int r = trail_buf_reserve(b, n + 2);
    if (r < 0)
        return r;
    b->p[b->len++] = '"';
    const unsigned char *u = (const unsigned char *)s;
    while (i < n) {
        size_t run = util_json_plain(u + i, n - i); /* copied through unchanged in one go */
        if ((r = trail_buf_put(b, u + i, run)) < 0)
            return r;
        i += run;
        if (i < n) {
            char esc[6];
            if ((r = trail_buf_put(b, esc, util_json_escape(u[i++], esc))) < 0)
                return r;
        }
    }
    return trail_buf_put(b, "\"", 1);
}

static int canon_number(double d, struct trail_buf *b)
{
    char s[40];
    if (!isfinite(d))
        return trail_buf_put(b, "null", 4); /* what cJSON prints too: JSON has no NaN or Infinity */
    if (d == 0) {
        snprintf(s, sizeof(s), "0"); /* -0 as 0 */
    } else if (d == floor(d) && fabs(d) < 1e17) {
        snprintf(s, sizeof(s), "%.0f", d);
    } else {
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(s, sizeof(s), "%.*g", prec, d);
            if (strtod(s, NULL) == d)
                break;
        }
    }
    return trail_buf_put(b, s, strlen(s));
}

struct member {
    const cJSON *item;
    size_t pos;
};

static int key_cmp(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    int c = strcmp(x->item->string, y->item->string);
    if (c)
        return c;
    return x->pos < y->pos ? -1 : x->pos > y->pos; /* duplicate keys keep their order */
}

static int canon(const cJSON *j, struct trail_buf *b, int depth)
{
    if (depth > CANON_DEPTH_MAX)
        return -EINVAL;
    int r;
    switch (j->type & 0xff) {
    case cJSON_NULL: return trail_buf_put(b, "null", 4);
    case cJSON_False: return trail_buf_put(b, "false", 5);
    case cJSON_True: return trail_buf_put(b, "true", 4);
    case cJSON_Number: return canon_number(j->valuedouble, b);
    case cJSON_String: return canon_string(j->valuestring ? j->valuestring : "", b);
    case cJSON_Array:
        if ((r = trail_buf_put(b, "[", 1)) < 0)
            return r;
        for (const cJSON *c = j->child; c; c = c->next) {
            if (c != j->child && (r = trail_buf_put(b, ",", 1)) < 0)
                return r;
            if ((r = canon(c, b, depth + 1)) < 0)
                return r;
        }
        return trail_buf_put(b, "]", 1);
    case cJSON_Object: {
        size_t n = 0;
        for (const cJSON *c = j->child; c; c = c->next) {
            if (!c->string)
                return -EINVAL;
            n++;
        }
        if (n == 0)
            return trail_buf_put(b, "{}", 2);
        _cleanup_free_ struct member *kids = calloc(n, sizeof(*kids));
        if (!kids)
            return -ENOMEM;
        size_t i = 0;
        for (const cJSON *c = j->child; c; c = c->next, i++)
            kids[i] = (struct member){c, i};
        qsort(kids, n, sizeof(*kids), key_cmp);
        if ((r = trail_buf_put(b, "{", 1)) < 0)
            return r;
        for (i = 0; i < n; i++) {
            if (i && (r = trail_buf_put(b, ",", 1)) < 0)
                return r;
            if ((r = canon_string(kids[i].item->string, b)) < 0 || (r = trail_buf_put(b, ":", 1)) < 0 ||
                (r = canon(kids[i].item, b, depth + 1)) < 0)
                return r;
        }
        return trail_buf_put(b, "}", 1);
    }
    default: return -EINVAL; /* cJSON_Raw or an invalid node: unverified text has no place here */
    }
}

int trail_canonical_json(const cJSON *j, struct trail_buf *out)
{
    return canon(j, out, 0);
}

/* ---- schema --------------------------------------------------------------------------------- */

static const char schema_sql[] =
    "CREATE TABLE entries ("
    " seq INTEGER PRIMARY KEY," /* global sequence: 1, 2, 3, ... with no gap */
    " id TEXT NOT NULL,"
    " ts INTEGER NOT NULL," /* unix microseconds */
    " workspace TEXT,"
    " actor TEXT NOT NULL,"
    " type TEXT NOT NULL,"
    " body TEXT NOT NULL,"
    " local_seq INTEGER,"
    " local_prev BLOB,"
    " prev_hash BLOB,"
    " hash BLOB NOT NULL);"
    "CREATE INDEX entries_actor ON entries(actor);"
    "CREATE INDEX entries_type ON entries(type);"
    "CREATE INDEX entries_ts ON entries(ts);"
    "CREATE TABLE blobs (hash BLOB PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);"
    /* The workspace index, written in sorted runs (docs/trail.md, "Queries by workspace"):
     * every workspace entry with seq <= max(ws_index_marks.upto) is in ws_index. */
    "CREATE TABLE ws_index (workspace TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (workspace, "
    "seq)) WITHOUT ROWID;"
    "CREATE TABLE ws_index_marks (upto INTEGER PRIMARY KEY);"
    "CREATE TRIGGER ws_index_no_update BEFORE UPDATE ON ws_index BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: UPDATE of ws_index is refused'); END;"
    "CREATE TRIGGER ws_index_no_delete BEFORE DELETE ON ws_index BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: DELETE of ws_index is refused'); END;"
    "CREATE TRIGGER ws_index_marks_no_update BEFORE UPDATE ON ws_index_marks BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: UPDATE of ws_index_marks is refused'); END;"
    "CREATE TRIGGER ws_index_marks_no_delete BEFORE DELETE ON ws_index_marks BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: DELETE of ws_index_marks is refused'); END;"
    "CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: UPDATE of entries is refused'); END;"
    "CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: DELETE of entries is refused'); END;"
    /* INSERT OR REPLACE deletes the old row without firing DELETE triggers: refuse it first */
    "CREATE TRIGGER entries_no_replace BEFORE INSERT ON entries"
    " WHEN EXISTS (SELECT 1 FROM entries WHERE seq = NEW.seq) BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: replacing an entry is refused'); END;"
    "CREATE TRIGGER blobs_no_replace BEFORE INSERT ON blobs"
    " WHEN EXISTS (SELECT 1 FROM blobs WHERE hash = NEW.hash) BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: replacing a blob is refused'); END;"
    "CREATE TRIGGER blobs_no_update BEFORE UPDATE ON blobs BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: UPDATE of blobs is refused'); END;"
    "CREATE TRIGGER blobs_no_delete BEFORE DELETE ON blobs BEGIN"
    " SELECT RAISE(ABORT, 'the trail is append-only: DELETE of blobs is refused'); END;";

/* ---- writer --------------------------------------------------------------------------------- */

static int sql_err(struct cerr *err, sqlite3 *db, int rc, const char *path, const char *what)
{
    int code = (rc == SQLITE_FULL) ? -ENOSPC : (rc == SQLITE_READONLY) ? -EROFS : -EIO;
    return cerr_set(err, code, "trail %s: %s: %s", path, what,
                    db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

/* The writer may only read, insert into the two tables and run transactions: a bug or an
 * injected statement on this connection cannot UPDATE, DELETE, DROP or ATTACH anything. */
static int authorizer(void *ctx, int action, const char *a1, const char *a2, const char *db,
                      const char *trigger)
{
    (void)ctx;
    (void)a2;
    (void)db;
    (void)trigger;
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_TRANSACTION:
    case SQLITE_FUNCTION: return SQLITE_OK;
    case SQLITE_INSERT:
        return (a1 && (!strcmp(a1, "entries") || !strcmp(a1, "blobs") || !strcmp(a1, "ws_index") ||
                       !strcmp(a1, "ws_index_marks")))
                   ? SQLITE_OK
                   : SQLITE_DENY;
    default: return SQLITE_DENY;
    }
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A commit that could not be written to the ahead log: its batch never happened, and nothing
 * more is written until trail_retry (degraded mode, docs/trail.md). The staged state goes back
 * to the last commit; the workspace heads are reloaded by trail_retry. */
static void degrade(struct trail *t, int rc, const char *what)
{
    if (!t->degraded && what)
        snprintf(t->why, sizeof(t->why), "%s failed: %s%s", what,
                 rc == ENOSPC || rc == EDQUOT ? "the disk is full: " : "",
                 rc ? strerror(rc) : "unknown error");
    t->degraded = true;
    t->pending = 0;
    t->rec.len = 0;
    t->rec_items = 0;
    t->rec_first = 0;
    t->seq = t->c_seq;
    t->ts = t->c_ts;
    trail_wsmap_clear(&t->ws);
    while (t->pblob_n && t->pblobs[t->pblob_n - 1].batch > t->written)
        t->pblob_n--;
}

/* Why the applier failed ("" if it has not): its batches are in the ahead log, acknowledged, and
 * wait in its queue for trail_retry. */
static bool applier_failed(struct trail *t, char *why, size_t cap)
{
    pthread_mutex_lock(&t->amu);
    bool f = t->afailed;
    if (f && why)
        snprintf(why, cap, "%s", t->awhy);
    pthread_mutex_unlock(&t->amu);
    return f;
}

static int degraded_err(struct trail *t, struct cerr *err)
{
    char why[512];
    if (!t->degraded && applier_failed(t, why, sizeof(why)))
        snprintf(t->why, sizeof(t->why), "%s", why);
    return cerr_set(err, EIO,
                    "trail %s cannot be written (%s); corral records nothing more and refuses new "
                    "work: free space or fix the file's storage, then restart",
                    t->path, t->why);
}

static bool is_degraded(struct trail *t)
{
    return t->degraded || applier_failed(t, NULL, 0);
}

/* A write refused because the trail is degraded (the applier failed too: its batches are safe
 * in the ahead log). What is staged goes, as a failed commit's batch does: the caller is told
 * it was not recorded (corral run records its model's entries again after system_degraded), so
 * it must not reach the file later. */
static int refuse(struct trail *t, struct cerr *err)
{
    int r = degraded_err(t, err); /* the reason into t->why first: degrade keeps it */
    if (t->pending || t->rec_items)
        degrade(t, 0, NULL);
    return r;
}

static int check_name(const char *what, const char *s, struct cerr *err)
{
    size_t n = strnlen(s, TRAIL_NAME_MAX + 1);
    if (n == 0 || n > TRAIL_NAME_MAX)
        return cerr_set(err, EINVAL, "trail: %s must be 1 to %d bytes", what, TRAIL_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return cerr_set(err, EINVAL, "trail: %s must not contain control characters", what);
    return 0;
}

bool trail_blob_ref_key(const char *key, size_t len, bool *list)
{
    *list = (len == 5 && !memcmp(key, "blobs", 5));
    return *list || (len == 4 && !memcmp(key, "blob", 4)) ||
           (len >= 5 && !memcmp(key + len - 5, "_blob", 5));
}

/* Whether the blob is in this trail: put in the staged batch or one not yet applied (pblobs),
 * else in SQLite, asked through the writer's own read connection (the applier holds the other).
 * A blob leaves pblobs only after the transaction that stored it has committed, so one it no
 * longer lists is in the file. 1, 0, or -(SQLite code). */
static int blob_known(struct trail *t, const uint8_t h[TRAIL_HASH_LEN])
{
    pthread_mutex_lock(&t->amu);
    uint64_t applied = t->applied;
    pthread_mutex_unlock(&t->amu);
    size_t k = 0;
    bool found = false;
    for (size_t i = 0; i < t->pblob_n; i++) {
        if (t->pblobs[i].batch <= applied)
            continue; /* in SQLite now: forgotten */
        found = found || !memcmp(t->pblobs[i].h, h, TRAIL_HASH_LEN);
        t->pblobs[k++] = t->pblobs[i];
    }
    t->pblob_n = k;
    if (found)
        return 1;
    if (!t->rdb) {
        int rc = sqlite3_open_v2(t->path, &t->rdb,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_prepare_v3(t->rdb, "SELECT 1 FROM blobs WHERE hash = ?1", -1,
                                    SQLITE_PREPARE_PERSISTENT, &t->has_blob, NULL);
        if (rc != SQLITE_OK) {
            sqlite3_close(t->rdb);
            t->rdb = NULL;
            return -rc;
        }
        sqlite3_busy_timeout(t->rdb, 1000);
    }
    sqlite3_stmt *st = t->has_blob;
    sqlite3_bind_blob(st, 1, h, TRAIL_HASH_LEN, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -rc;
}

/* One reference: 64 lowercase hex digits naming a blob already put in this trail (committed or in
 * this batch), so that a body never points at content the trail does not hold. */
static int check_blob_ref(struct trail *t, const cJSON *v, const char *type, struct cerr *err)
{
    uint8_t h[TRAIL_HASH_LEN];
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    size_t n = s ? strlen(s) : 0;
    bool hex = n == 2 * TRAIL_HASH_LEN;
    for (size_t i = 0; hex && i < n; i++)
        hex = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
    if (!hex)
        return cerr_set(err, EINVAL,
                        "trail: a '%s' body names a blob by something other than a lowercase hex "
                        "BLAKE2b-256 hash (keys 'blob', '*_blob' and 'blobs' hold blob references)",
                        type);
    sodium_hex2bin(h, sizeof(h), s, n, NULL, NULL, NULL);
    int rc = blob_known(t, h);
    if (rc == 1)
        return 0;
    if (rc < 0)
        return cerr_set(err, EIO, "trail %s: looking up a blob failed: %s", t->path,
                        sqlite3_errstr(-rc));
    return cerr_set(err, EINVAL,
                    "trail: a '%s' body references blob %s, which is not in the trail: put it with "
                    "trail_blob_put first",
                    type, s);
}

static int check_blob_refs(struct trail *t, const cJSON *j, const char *type, int depth,
                           struct cerr *err)
{
    if (!j || depth > 1000)
        return 0; /* the canonical encoder has already refused anything deeper */
    for (const cJSON *c = j->child; c; c = c->next) {
        bool list;
        int r;
        if (cJSON_IsObject(j) && c->string && trail_blob_ref_key(c->string, strlen(c->string), &list) &&
            !cJSON_IsNull(c)) {
            if (!list) {
                r = check_blob_ref(t, c, type, err);
            } else if (!cJSON_IsArray(c)) {
                r = cerr_set(err, EINVAL,
                             "trail: 'blobs' in a '%s' body must be an array of blob hashes", type);
            } else {
                r = 0;
                for (const cJSON *e = c->child; e && r == 0; e = e->next)
                    r = check_blob_ref(t, e, type, err);
            }
            if (r < 0)
                return r;
            continue;
        }
        if ((cJSON_IsObject(c) || cJSON_IsArray(c)) &&
            (r = check_blob_refs(t, c, type, depth + 1, err)) < 0)
            return r;
    }
    return 0;
}

static const uint8_t hash_slot[TRAIL_HASH_LEN]; /* a link's place in an unhashed entry */

int trail_append(struct trail *t, const char *workspace, const char *actor, const char *type,
                 const cJSON *body, uint64_t *seq_out, struct cerr *err)
{
    if (!t || !actor || !type)
        return cerr_set(err, EINVAL, "trail_append: trail, actor and type are required");
    if (is_degraded(t))
        return refuse(t, err);
    if (!trail_event_known(type))
        return cerr_set(
            err, EINVAL,
            "trail: unknown event type '%.64s': the registry is closed (docs/trail.md lists the types)",
            type);
    int r = check_name("actor", actor, err);
    if (r < 0 || (workspace && (r = check_name("workspace", workspace, err)) < 0))
        return r;
    t->body.len = 0;
    if (!body) {
        r = trail_buf_put(&t->body, "{}", 2);
    } else if (!cJSON_IsObject(body)) {
        return cerr_set(err, EINVAL, "trail: the body of a '%s' entry must be a JSON object", type);
    } else {
        r = trail_canonical_json(body, &t->body);
        if (r == -EINVAL)
            return cerr_set(err, EINVAL,
                            "trail: the body of a '%s' entry cannot be encoded (raw JSON, a member "
                            "without a key, or nesting deeper than 1000)",
                            type);
    }
    if (r < 0)
        return cerr_set(err, r, "trail: out of memory encoding a '%s' body", type);
    if (t->body.len > TRAIL_BODY_MAX)
        return cerr_set(err, E2BIG,
                        "trail: the body of a '%s' entry is %zu bytes, over the %u limit: put large "
                        "content in a blob (trail_blob_put) and reference its hash",
                        type, t->body.len, TRAIL_BODY_MAX);
    if ((r = check_blob_refs(t, body, type, 0, err)) < 0)
        return r;
    if (t->rec.len == 0 && trail_rec_begin(&t->rec) < 0)
        return cerr_set(err, ENOMEM, "trail: out of memory");

    struct trail_wshead *h = NULL;
    size_t ws_len = workspace ? strlen(workspace) : 0;
    if (workspace) {
        bool created;
        h = trail_wsmap_get(&t->ws, workspace, ws_len, &created);
        if (!h)
            return cerr_set(err, ENOMEM, "trail: out of memory");
    }

    char id[64];
    uint64_t seq = t->seq + 1;
    int64_t ts = now_us();
    if (ts <= t->ts)
        ts = t->ts + 1; /* strictly increasing even if the wall clock steps back */
    int id_len = snprintf(id, sizeof(id), "%s-%llu", t->trail_id, (unsigned long long)seq);
    struct trail_fields f = {
        .seq = seq,
        .id = id,
        .id_len = (size_t)id_len,
        .ts_us = ts,
        .workspace = workspace,
        .ws_len = ws_len,
        .actor = actor,
        .actor_len = strlen(actor),
        .type = type,
        .type_len = strlen(type),
        .body = (const char *)t->body.p,
        .body_len = t->body.len,
        .local_seq = h ? h->local_seq + 1 : 0,
        /* Which links the entry has; the applier hashes it and fills them (trail_chain_batch):
         * the loop spends no time on BLAKE2b (docs/trail.md, "The ahead log"). */
        .local_prev = (h && h->local_seq) ? hash_slot : NULL,
        .prev_hash = seq > 1 ? hash_slot : NULL,
    };
    if (trail_rec_put_entry(&t->rec, &f) < 0)
        return cerr_set(err, ENOMEM, "trail: out of memory");
    if (!t->rec_first)
        t->rec_first = seq;
    t->rec_items++;
    t->seq = seq;
    t->ts = ts;
    if (h)
        h->local_seq = f.local_seq;
    t->pending++;
    if (seq_out)
        *seq_out = seq;
    return 0;
}

int trail_blob_put(struct trail *t, const void *data, size_t len, char hash_hex[65], struct cerr *err)
{
    if (!t || (!data && len))
        return cerr_set(err, EINVAL, "trail_blob_put: trail and data are required");
    if (is_degraded(t))
        return refuse(t, err);
    if (len > TRAIL_BLOB_MAX)
        return cerr_set(err, E2BIG, "trail: a blob of %zu bytes is over the %u limit", len,
                        TRAIL_BLOB_MAX);
    uint8_t h[TRAIL_HASH_LEN];
    crypto_generichash(h, sizeof(h), data, len, NULL, 0);
    if (t->pblob_n == t->pblob_cap) {
        size_t cap = t->pblob_cap ? t->pblob_cap * 2 : 64;
        struct trail_pblob *p = reallocarray(t->pblobs, cap, sizeof(*p));
        if (!p)
            return cerr_set(err, ENOMEM, "trail: out of memory");
        t->pblobs = p;
        t->pblob_cap = cap;
    }
    if ((t->rec.len == 0 && trail_rec_begin(&t->rec) < 0) || trail_rec_put_blob(&t->rec, h, data, len) < 0)
        return cerr_set(err, ENOMEM, "trail: out of memory");
    memcpy(t->pblobs[t->pblob_n].h, h, sizeof(h));
    t->pblobs[t->pblob_n++].batch = t->written + 1;
    t->rec_items++;
    sodium_bin2hex(hash_hex, 65, h, sizeof(h));
    return 0;
}

/* Where the next record goes: after the last one in the current segment; in the other segment,
 * from 0, once the current one is past its lap and every record of the other is in SQLite
 * (flushed there, in `full`); and past TRAIL_AHEAD_MAX, or with TRAIL_QUEUE_MAX of batches
 * waiting in memory, only after waiting for the applier to get there (a flood far ahead of
 * SQLite: its memory is bounded). */
static int record_place(struct trail *t, size_t len, int *seg, uint64_t *off, struct cerr *err)
{
    pthread_mutex_lock(&t->amu);
    for (;;) {
        uint64_t need = t->seg_last[1 - t->cur];
        if (t->aoff + len > TRAIL_AHEAD_LAP && t->aoff > 0 && t->applied >= need && t->synced >= need) {
            t->cur = 1 - t->cur;
            t->aoff = 0;
        }
        if ((t->aoff + len <= TRAIL_AHEAD_MAX || t->aoff == 0) &&
            (t->q_bytes + len <= TRAIL_QUEUE_MAX || !t->q_head))
            break;
        if (t->afailed) {
            pthread_mutex_unlock(&t->amu);
            return degraded_err(t, err);
        }
        trail_applier_waiter(t, true); /* it may be gathering: it applies at once */
        pthread_cond_wait(&t->adone, &t->amu);
        trail_applier_waiter(t, false);
    }
    *seg = t->cur;
    *off = t->aoff;
    pthread_mutex_unlock(&t->amu);
    return 0;
}

static int commit_batch(struct trail *t, bool wake, struct cerr *err);

/* The staged batch is committed: the committed head moves to the staged one. */
static void staged_committed(struct trail *t)
{
    t->rec_items = 0;
    t->rec_first = 0;
    t->pending = 0;
    t->c_seq = t->seq;
    t->c_ts = t->ts;
}

int trail_commit(struct trail *t, struct cerr *err)
{
    return commit_batch(t, true, err);
}

int trail_commit_quiet(struct trail *t, struct cerr *err)
{
    return commit_batch(t, false, err);
}

void trail_wake(struct trail *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->amu);
    if (t->wake_due)
        pthread_cond_signal(&t->awork);
    t->wake_due = false;
    pthread_mutex_unlock(&t->amu);
}

static int commit_batch(struct trail *t, bool wake, struct cerr *err)
{
    if (!t)
        return cerr_set(err, EINVAL, "trail_commit: no trail");
    if (is_degraded(t))
        return refuse(t, err);
    /* Blobs alone wait for the next batch with an entry (none refers to them yet): every record
     * holds an entry, so that the records' sequence numbers follow each other. */
    if (!t->rec_first)
        return 0;
    struct trail_batch *b = calloc(1, sizeof(*b));
    if (!b || trail_buf_reserve(&t->rec, TRAIL_REC_SUM) < 0) {
        free(b);
        degrade(t, ENOMEM, "committing");
        return degraded_err(t, err);
    }
    uint64_t off = 0;
    int seg = 0;
    int r = record_place(t, t->rec.len + TRAIL_REC_SUM, &seg, &off, err);
    if (r < 0) {
        free(b);
        return refuse(t, err); /* the applier failed while this commit waited for it */
    }
    /* Its checksum is seeded with that of the record before it in the segment (ahead.c); the
     * room for it is reserved above. */
    (void)trail_rec_end(&t->rec, t->rec_items, t->rec_first, t->seq, off ? t->aseed : 0);
    r = trail_ahead_write(t->afd[seg], t->rec.p, t->rec.len, off, t->durability == TRAIL_DURABILITY_FULL);
    if (r < 0) {
        free(b);
        trail_ahead_erase(t->afd[seg], off, t->durability == TRAIL_DURABILITY_FULL);
        degrade(t, -r, "writing the ahead log");
        return degraded_err(t, err);
    }
    /* Acknowledged: the batch is in the ahead log. The applier takes it from here. */
    b->rec = t->rec;
    t->rec = (struct trail_buf){0};
    (void)trail_buf_reserve(&t->rec, b->rec.len); /* the next batch is likely the same size */
    t->aseed = trail_rec_sum(b->rec.p, b->rec.len);
    pthread_mutex_lock(&t->amu);
    t->aoff = off + b->rec.len;
    b->no = ++t->written;
    t->seg_last[seg] = b->no;
    /* The applier needs telling only when this batch is the first it has to gather (it waits
     * for work without a deadline), or the one past TRAIL_APPLY_BYTES: while it gathers, it
     * wakes by itself at the oldest batch's deadline, and a wake-up per commit would cost the
     * answer's CPU a cross-CPU interrupt for nothing. */
    bool tell = !t->q_head || (t->q_bytes < TRAIL_APPLY_BYTES && t->q_bytes + b->rec.len >= TRAIL_APPLY_BYTES);
    if (t->q_tail)
        t->q_tail->next = b;
    else {
        t->q_head = b;
        clock_gettime(CLOCK_MONOTONIC, &t->q_since);
    }
    t->q_tail = b;
    t->q_bytes += b->rec.len;
    if (wake && (tell || t->wake_due)) {
        pthread_cond_signal(&t->awork);
        t->wake_due = false;
    } else if (!wake && tell) {
        t->wake_due = true;
    }
    pthread_mutex_unlock(&t->amu);
    staged_committed(t);
    return 0;
}

int trail_sync(struct trail *t, struct cerr *err)
{
    if (t && trail_applier_wait(t) < 0)
        return degraded_err(t, err);
    return 0;
}

static int pragma_int(sqlite3 *db, const char *sql, int64_t *out);

/* The segments of a writer that died hold records beyond the file's last entry. Read-only: the
 * file is not changed (a reader's question). */
bool trail_ahead_pending(const char *path)
{
    if (!path || !trail_ahead_left(path))
        return false;
    uint64_t last = 0;
    for (int seg = 0; seg < 2; seg++) {
        int fd = trail_ahead_open_read(path, seg);
        struct trail_rec_ref *refs = NULL;
        size_t n = 0;
        if (fd >= 0 && trail_ahead_index(fd, &refs, &n) == 0 && n && refs[n - 1].h.last > last)
            last = refs[n - 1].h.last;
        free(refs);
        if (fd >= 0)
            close(fd);
    }
    sqlite3 *db = NULL;
    struct cerr err = {0};
    int64_t head = 0;
    if (last == 0 || trail_db_open_readonly(path, &db, &err) < 0)
        return last > 0;
    bool ok = pragma_int(db, "SELECT coalesce(max(seq), 0) FROM entries", &head) == SQLITE_OK;
    sqlite3_close(db);
    return !ok || last > (uint64_t)head;
}

int trail_settle(const char *path, uint64_t *head, struct cerr *err)
{
    struct trail *t = NULL;
    int r = trail_open(path, TRAIL_DURABILITY_FULL, &t, err);
    if (r < 0)
        return r;
    if (head)
        *head = trail_head_seq(t);
    trail_close(t);
    return 0;
}

int trail_durability_parse(const char *s, enum trail_durability *out)
{
    if (s && !strcmp(s, "full"))
        *out = TRAIL_DURABILITY_FULL;
    else if (s && !strcmp(s, "normal"))
        *out = TRAIL_DURABILITY_NORMAL;
    else
        return -EINVAL;
    return 0;
}

struct trail_ckpt *trail_ckpt_of(struct trail *t)
{
    return t ? t->ckpt : NULL;
}

/* Congested: the checkpoint far behind the commits, or the applier (TRAIL_AHEAD_BUSY of committed
 * batches not yet in SQLite). Work that can wait should (a flooding agent's next requests). */
bool trail_congested(const struct trail *t)
{
    if (!t)
        return false;
    struct trail *w = (struct trail *)t; /* its mutex */
    pthread_mutex_lock(&w->amu);
    bool behind = w->q_bytes >= TRAIL_AHEAD_BUSY;
    pthread_mutex_unlock(&w->amu);
    return behind || (t->ckpt && trail_ckpt_congested(t->ckpt));
}

bool trail_degraded(const struct trail *t)
{
    return t && is_degraded((struct trail *)t);
}

static int load_ws_heads(struct trail *t, bool chain, struct cerr *err);

/* Degraded mode's way back (docs/trail.md). If the applier failed, it tries again the batches it
 * holds (acknowledged: they are in the ahead log). If a commit could not be written, its batch
 * was dropped; once everything before it is in SQLite and the file still ends at this writer's
 * committed head, the staged state is rebuilt from the file. A write that fails again degrades
 * it again. */
int trail_retry(struct trail *t, struct cerr *err)
{
    if (!is_degraded(t))
        return 0;
    pthread_mutex_lock(&t->amu);
    if (t->afailed) {
        t->aretry = true;
        pthread_cond_broadcast(&t->awork);
        trail_applier_waiter(t, true);
        while (t->aretry && t->athread_on)
            pthread_cond_wait(&t->adone, &t->amu);
        trail_applier_waiter(t, false);
    }
    bool failed = t->afailed;
    char why[512];
    snprintf(why, sizeof(why), "%s", t->awhy);
    pthread_mutex_unlock(&t->amu);
    if (failed)
        return cerr_set(err, EIO, "trail %s: its committed entries still cannot be stored (%s)", t->path,
                        why);
    if (trail_applier_wait(t) < 0)
        return cerr_set(err, EIO, "trail %s: its committed entries still cannot be stored", t->path);
    if (!t->degraded)
        return 0;
    pthread_mutex_lock(&t->dbmu);
    /* SQLite ends at this writer's last commit: the applier, which put it there, checked at
     * each transaction that nobody else wrote (apply.c, check_head). */
    bool mine = t->a_seq == t->c_seq;
    int r = 0;
    if (!mine) {
        r = cerr_set(err, EIO, "trail %s: its last entry is not the one this writer committed (%s)",
                     t->path, t->why);
    } else {
        trail_wsmap_clear(&t->ws);
        r = load_ws_heads(t, false, err) < 0 ? -EIO : 0;
    }
    pthread_mutex_unlock(&t->dbmu);
    if (r < 0)
        return r;
    t->degraded = false;
    t->why[0] = '\0';
    return 0;
}

const char *trail_degraded_why(const struct trail *t)
{
    if (!t || !is_degraded((struct trail *)t))
        return "";
    if (!t->degraded) {
        struct trail *w = (struct trail *)t;
        applier_failed(w, w->why, sizeof(w->why));
    }
    return t->why;
}

size_t trail_pending(const struct trail *t)
{
    return t ? t->pending : 0;
}

uint64_t trail_head_seq(const struct trail *t)
{
    return t ? t->c_seq : 0;
}

sqlite3 *trail_db_handle(struct trail *t)
{
    trail_applier_wait(t); /* the applier's connection: idle once it has caught up */
    return t->db;
}

void trail_close(struct trail *t)
{
    if (!t)
        return;
    /* Whatever was committed goes into SQLite first; staged entries are dropped. */
    if (t->athread_on)
        trail_applier_stop(t);
    /* In `full` the ahead log goes only once what it held is flushed in SQLite too. */
    bool all_in = !t->afailed && t->applied == t->written;
    if (all_in && t->db && t->durability == TRAIL_DURABILITY_FULL && t->written)
        all_in = trail_wal_flush(t) == 0;
    trail_ckpt_stop(t->db, t->ckpt);
    sqlite3_finalize(t->begin);
    sqlite3_finalize(t->commit);
    sqlite3_finalize(t->rollback);
    sqlite3_finalize(t->ins_entry);
    sqlite3_finalize(t->ins_blob);
    sqlite3_finalize(t->head_st);
    sqlite3_finalize(t->ins_idx);
    sqlite3_finalize(t->ins_mark);
    sqlite3_finalize(t->has_blob);
    sqlite3_close(t->rdb);
    free(t->idx);
    int closed = sqlite3_close(t->db);
    /* Everything it held is in SQLite: the ahead log goes (while still locked, so that no other
     * writer takes it first). Else it stays, for the next writer to apply; so does it after an
     * open that failed, whose recovery may not have applied what a dead writer left there,
     * unless both segments are empty (this open made them). */
    if (t->afd[0] >= 0) {
        struct stat s0, s1;
        bool empty = fstat(t->afd[0], &s0) == 0 && fstat(t->afd[1], &s1) == 0 && !s0.st_size &&
                     !s1.st_size;
        if (all_in && closed == SQLITE_OK && t->path && (t->opened || empty))
            trail_ahead_remove(t->path);
        close(t->afd[0]);
        close(t->afd[1]);
    }
    if (t->walfd >= 0)
        close(t->walfd);
    if (t->sync_init) {
        pthread_cond_destroy(&t->awork);
        pthread_cond_destroy(&t->adone);
        pthread_mutex_destroy(&t->amu);
        pthread_mutex_destroy(&t->dbmu);
    }
    trail_wsmap_clear(&t->ws);
    trail_wsmap_clear(&t->a_ws);
    trail_buf_free(&t->body);
    trail_buf_free(&t->a_scratch);
    trail_buf_free(&t->rec);
    free(t->pblobs);
    free(t->path);
    free(t);
}

static int pragma_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

static int prepare(struct trail *t, const char *sql, sqlite3_stmt **st, struct cerr *err)
{
    int rc = sqlite3_prepare_v3(t->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc != SQLITE_OK)
        return sql_err(err, t->db, rc, t->path, "preparing a statement");
    return 0;
}

/* Every workspace's last local_seq, in one scan at open (and after a failed commit); with chain,
 * the chain's head too (h_seq, h_head and a_ws, whose heads are reset first: it names the idx
 * items, so it is never cleared). */
static int load_ws_heads(struct trail *t, bool chain, struct cerr *err)
{
    if (chain) {
        t->h_seq = t->a_seq;
        memcpy(t->h_head, t->a_head, TRAIL_HASH_LEN);
        for (size_t i = 0; i < t->a_ws.cap; i++)
            t->a_ws.slots[i].local_seq = 0;
    }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        t->db,
        "SELECT workspace, local_seq, hash FROM entries WHERE workspace IS NOT NULL ORDER BY seq",
        -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *ws = sqlite3_column_blob(st, 0);
        size_t len = (size_t)sqlite3_column_bytes(st, 0);
        bool created;
        struct trail_wshead *h = ws ? trail_wsmap_get(&t->ws, ws, len, &created) : NULL;
        if (!h || sqlite3_column_bytes(st, 2) != TRAIL_HASH_LEN) {
            sqlite3_finalize(st);
            return h ? cerr_set(
                           err, EIO,
                           "trail %s: an entry has no valid hash; run 'corral trail verify --db %s'",
                           t->path, t->path)
                     : cerr_set(err, ENOMEM, "trail: out of memory");
        }
        h->local_seq = (uint64_t)sqlite3_column_int64(st, 1);
        struct trail_wshead *c = chain ? trail_wsmap_get(&t->a_ws, ws, len, &created) : NULL;
        if (chain && !c) {
            sqlite3_finalize(st);
            return cerr_set(err, ENOMEM, "trail: out of memory");
        }
        if (c) {
            c->local_seq = h->local_seq;
            memcpy(c->last_hash, sqlite3_column_blob(st, 2), TRAIL_HASH_LEN);
        }
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sql_err(err, t->db, rc, t->path, "reading the workspace heads");
    return 0;
}

/* Reads the committed head and the trail id recorded in the first entry. */
static int load_head(struct trail *t, struct cerr *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(t->db, "SELECT seq, ts, hash FROM entries ORDER BY seq DESC LIMIT 1", -1,
                                &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        t->seq = (uint64_t)sqlite3_column_int64(st, 0);
        t->ts = sqlite3_column_int64(st, 1);
        if (sqlite3_column_bytes(st, 2) != TRAIL_HASH_LEN) {
            sqlite3_finalize(st);
            return cerr_set(
                err, EIO,
                "trail %s: its last entry has no valid hash; run 'corral trail verify --db %s'", t->path,
                t->path);
        }
        memcpy(t->a_head, sqlite3_column_blob(st, 2), TRAIL_HASH_LEN);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        sqlite3_finalize(st);
        return cerr_set(err, EIO,
                        "trail %s has no entries (not even trail_created): it is damaged; move it away "
                        "and start a new one",
                        t->path);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return sql_err(err, t->db, rc, t->path, "reading the head");
    rc = sqlite3_prepare_v2(t->db, "SELECT body FROM entries WHERE seq = 1 AND type = 'trail_created'",
                            -1, &st, NULL);
    cJSON *b = NULL;
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        b = cJSON_Parse((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "trail_id");
    if (!cJSON_IsString(id) || strlen(id->valuestring) >= sizeof(t->trail_id)) {
        cJSON_Delete(b);
        return cerr_set(err, EIO,
                        "trail %s: its first entry is not a valid trail_created entry; run 'corral "
                        "trail verify --db %s'",
                        t->path, t->path);
    }
    snprintf(t->trail_id, sizeof(t->trail_id), "%s", id->valuestring);
    cJSON_Delete(b);
    t->c_seq = t->a_seq = t->seq;
    t->c_ts = t->ts;
    int r = load_ws_heads(t, true, err);
    return r < 0 ? r : trail_idx_load(t, err);
}

/* ---- recovery: what a writer that died had committed to the ahead log and not to SQLite ---- */

/* One entry read back from the ahead log, checked against the staged head as trail_append would
 * have made it: sequence, time, id, names, type, its workspace's sequence. The staged head then
 * moves past it. Its links and hash are the chain's business (trail_chain_batch, for the whole
 * record). -EINVAL and why when it does not continue the trail. */
static int recover_entry(struct trail *t, const struct trail_fields *f, const char **why)
{
    char name[TRAIL_NAME_MAX + 1], id[64];
    *why = "the sequence does not continue";
    if (f->seq != t->seq + 1)
        return -EINVAL;
    *why = "its time is not after the previous entry's";
    if (f->ts_us <= t->ts)
        return -EINVAL;
    *why = "its id is not this trail's";
    int n = snprintf(id, sizeof(id), "%s-%llu", t->trail_id, (unsigned long long)f->seq);
    if (n < 0 || (size_t)n != f->id_len || memcmp(id, f->id, f->id_len))
        return -EINVAL;
    *why = "a name or type is not valid";
    if (f->actor_len == 0 || f->actor_len > TRAIL_NAME_MAX || f->type_len >= sizeof(name) ||
        f->ws_len > TRAIL_NAME_MAX || f->body_len > TRAIL_BODY_MAX)
        return -EINVAL;
    memcpy(name, f->type, f->type_len);
    name[f->type_len] = '\0';
    if (!trail_event_known(name))
        return -EINVAL;
    struct trail_wshead *h = NULL;
    *why = "it does not follow its workspace's entry before it";
    if (f->workspace) {
        bool created;
        if (!(h = trail_wsmap_get(&t->ws, f->workspace, f->ws_len, &created)))
            return -ENOMEM;
        if (f->local_seq != h->local_seq + 1)
            return -EINVAL;
    } else if (f->local_seq || f->local_prev) {
        return -EINVAL;
    }
    t->seq = f->seq;
    t->ts = f->ts_us;
    if (h)
        h->local_seq = f->local_seq;
    return 0;
}

/* One record read back: its checksum (CRA2), each entry against the staged head
 * (recover_entry), its blobs against their hashes, its chain (trail_chain_batch: hashed, or for
 * CRA1 the hashes it carries checked), then applied. 1 applied, 0 not (it does not continue the
 * trail: never acknowledged, a write cut short by the crash, or damage; *why_out says why), <0
 * error. */
static int recover_record(struct trail *t, int fd, const struct trail_rec_ref *ref, struct trail_buf *b,
                          const char **why_out, struct cerr *err)
{
    b->len = 0;
    if (ref->h.len > SIZE_MAX || trail_buf_reserve(b, (size_t)ref->h.len) < 0)
        return cerr_set(err, ENOMEM, "trail: out of memory");
    size_t len = (size_t)ref->h.len;
    const char *why = "the record is cut short";
    size_t pos = TRAIL_REC_HDR;
    uint32_t items = 0;
    uint64_t first = 0;
    struct trail_rec_item it;
    struct trail_rec_hdr h;
    int r = pread(fd, b->p, len, (off_t)ref->off) == (ssize_t)len ? 1 : -EINVAL;
    if (r > 0) {
        why = "the record does not match its checksum";
        r = trail_rec_header(b->p, len, &h) == 0 && h.len == len &&
                    trail_rec_check(b->p, &h, ref->seed) == 0
                ? 1
                : -EINVAL;
    }
    while (r > 0 && (r = trail_rec_next(b->p, h.end, &pos, &it)) > 0) {
        items++;
        if (it.kind == 'B') {
            uint8_t bh[TRAIL_HASH_LEN];
            crypto_generichash(bh, sizeof(bh), it.data, it.size, NULL, 0);
            why = "a blob's content does not match its hash";
            if (memcmp(bh, it.blob_hash, sizeof(bh)))
                r = -EINVAL;
        } else {
            first = first ? first : it.f.seq;
            r = recover_entry(t, &it.f, &why);
            r = r < 0 ? r : 1;
        }
    }
    if (r == 0 && (items != h.items || first != h.first || t->seq != h.last || pos != h.end)) {
        why = "the record's header does not match its items";
        r = -EINVAL;
    }
    b->len = len;
    struct trail_batch batch = {.rec = *b};
    if (r == 0)
        r = trail_chain_batch(t, &batch, &why);
    if (r == -ENOMEM)
        return cerr_set(err, ENOMEM, "trail: out of memory");
    if (r < 0) {
        *why_out = why;
        t->seq = t->c_seq;
        t->ts = t->c_ts;
        trail_wsmap_clear(&t->ws);
        return load_ws_heads(t, true, err) < 0 ? -EIO : 0;
    }
    const char *what;
    int rc = trail_apply(t, &batch, false, &what);
    if (rc != SQLITE_OK)
        return sql_err(err, t->db, rc, t->path, what);
    t->c_seq = t->seq;
    t->c_ts = t->ts;
    return 1;
}

/* At open: what a writer that died had acknowledged (in the ahead log) and not put into SQLite
 * is applied, record by record from whichever segment continues the head, then made durable
 * there, so that both segments may be written over. */
static int ahead_recover(struct trail *t, struct cerr *err)
{
    struct trail_rec_ref *refs[2] = {NULL, NULL};
    size_t n[2] = {0, 0}, at[2] = {0, 0};
    int r = 0;
    for (int s = 0; s < 2 && r == 0; s++)
        if ((r = trail_ahead_index(t->afd[s], &refs[s], &n[s])) < 0)
            r = cerr_set(err, -r, "trail %s: reading its ahead log failed: %s", t->path, strerror(-r));
    struct trail_buf b = {0};
    bool any = n[0] || n[1];
    const char *why = NULL;
    uint64_t bad = 0;
    while (r == 0) {
        int s = -1;
        for (int k = 0; k < 2; k++) {
            while (at[k] < n[k] && refs[k][at[k]].h.last <= t->c_seq)
                at[k]++; /* in SQLite already */
            if (s < 0 && at[k] < n[k] && refs[k][at[k]].h.first == t->c_seq + 1)
                s = k;
        }
        if (s < 0)
            break;
        /* Both segments may hold a record that starts here: a dead writer's that never continued
         * the trail (cut short, damaged) and the next writer's, acknowledged, in the other. One
         * that does not continue it ends its segment (what follows it there cannot either), and
         * the other segment's is tried. */
        const char *w = NULL;
        r = recover_record(t, t->afd[s], &refs[s][at[s]], &b, &w, err);
        if (r == 0) {
            why = w;
            bad = refs[s][at[s]].h.first;
            at[s] = n[s];
        }
        r = r < 0 ? r : 0;
    }
    if (r == 0 && why && bad > t->c_seq)
        fprintf(stderr,
                "corral: trail %s: its ahead log's entries from %llu on were not applied (%s): a "
                "write cut short by a crash, or damage\n",
                t->path, (unsigned long long)bad, why);
    trail_buf_free(&b);
    free(refs[0]);
    free(refs[1]);
    if (r < 0)
        return r;
    if (any && (r = trail_wal_flush(t)) < 0)
        return cerr_set(err, -r, "trail %s: flushing its WAL failed: %s", t->path, strerror(-r));
    /* What is left is not applied and never will be: this writer uses its sequence numbers
     * again, and a later recovery could find such a record right after this writer's own (over
     * the same offsets, or in the other segment) and apply another history's entries after
     * them, which the chain, hashed from this writer's head, would accept. */
    if ((r = trail_ahead_clear(t->afd)) < 0)
        return cerr_set(err, -r, "trail %s: emptying its ahead log failed: %s", t->path, strerror(-r));
    return 0;
}

int trail_open(const char *path, enum trail_durability d, struct trail **out, struct cerr *err)
{
    *out = NULL;
    if (!path || !*path)
        return cerr_set(err, EINVAL, "trail: no file given");
    if (sodium_init() < 0)
        return cerr_set(err, EIO, "trail: libsodium failed to initialise");
    struct trail *t = calloc(1, sizeof(*t));
    if (!t || !(t->path = strdup(path))) {
        free(t);
        return cerr_set(err, ENOMEM, "trail: out of memory");
    }
    t->afd[0] = t->afd[1] = t->walfd = -1;
    t->durability = d;
    pthread_mutex_init(&t->amu, NULL);
    pthread_mutex_init(&t->dbmu, NULL);
    /* The applier's deadlines are CLOCK_MONOTONIC ones (apply.c): a clock set back must not
     * hold committed batches out of SQLite. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->awork, &ca);
    pthread_condattr_destroy(&ca);
    /* In `full` the applier does not gather: a gathered transaction's WAL writes came in bursts
     * that queued on the disk ahead of the callers' own flushes (a 4 KiB read's p99 1.2-1.5 ms
     * gathering, 0.56-0.94 ms not), and the flush, not the CPU, bounds a `full` call. */
    t->apply_delay_ns = d == TRAIL_DURABILITY_FULL ? 0 : TRAIL_APPLY_DELAY_NS;
    pthread_cond_init(&t->adone, NULL);
    t->sync_init = true;
    /* Never through a symbolic link: whoever made the link would choose where root's writes go
     * (a file created, or an empty one filled, anywhere). SQLITE_OPEN_NOFOLLOW refuses a link
     * anywhere in the path, and the -wal and -shm files are opened O_NOFOLLOW beside the real
     * one; the lstat first only words the refusal. */
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        trail_close(t);
        return cerr_set(err, ELOOP,
                        "trail %s is a symbolic link: give the trail file's own path (a link would let "
                        "whoever made it choose where corral writes)",
                        path);
    }
    /* The trail holds file contents and command output: a new one is readable by its owner only
     * (SQLite gives its -wal and -shm files the same mode). */
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0)
        close(fd);
    int r, rc = sqlite3_open_v2(path, &t->db,
                                SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
                                    SQLITE_OPEN_NOFOLLOW,
                                NULL);
    if (rc != SQLITE_OK && t->db && sqlite3_extended_errcode(t->db) == SQLITE_CANTOPEN_SYMLINK) {
        r = cerr_set(err, ELOOP,
                     "trail %s: a directory on its path is a symbolic link; give the path without "
                     "links (as `realpath` prints it)",
                     path);
        goto fail;
    }
    if (rc != SQLITE_OK) {
        r = cerr_set(
            err, EIO,
            "trail %s cannot be opened for writing: %s; check the path and its directory's permissions",
            path, t->db ? sqlite3_errmsg(t->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(t->db, 0);
    if (sqlite3_db_readonly(t->db, "main") == 1) {
        r = cerr_set(err, EROFS,
                     "trail %s is read-only; make the file and its directory writable or choose another "
                     "trail file",
                     path);
        goto fail;
    }
    /* The ahead log's lock: one writer per trail, before anything is written. */
    if ((r = trail_ahead_open(path, t->afd, err)) < 0)
        goto fail;
    trail_busy_wait(t->db);
    int64_t app = 0, ver = 0, tables = 0;
    if ((rc = pragma_int(t->db, "PRAGMA application_id", &app)) != SQLITE_OK ||
        (rc = pragma_int(t->db, "PRAGMA user_version", &ver)) != SQLITE_OK ||
        (rc = pragma_int(t->db, "SELECT count(*) FROM sqlite_master", &tables)) != SQLITE_OK) {
        r = (rc == SQLITE_NOTADB)
                ? cerr_set(err, EINVAL,
                           "%s is not a corral trail (not an SQLite database); choose another file",
                           path)
                : sql_err(err, t->db, rc, path, "reading its header");
        goto fail;
    }
    bool fresh = (app == 0 && tables == 0), begun = false;
    if (!fresh && app != TRAIL_APPLICATION_ID) {
        r = cerr_set(err, EINVAL, "%s is an SQLite database but not a corral trail; choose another file",
                     path);
        goto fail;
    }
    if (!fresh && ver != TRAIL_FORMAT) {
        r = cerr_set(err, EINVAL,
                     "trail %s has format %lld, this corral writes format %d; use a new trail file",
                     path, (long long)ver, TRAIL_FORMAT);
        goto fail;
    }
    char *msg = NULL;
    /* NORMAL in both modes: in `full` a commit is durable once its ahead-log record is flushed,
     * and the WAL is flushed (off the callers' path) before a segment holding records it has
     * not flushed may be written over (apply.c). FULL here would add an fsync per transaction
     * of the applier, on the same disk as the callers' flushes. */
    const char *sync = "PRAGMA synchronous=NORMAL";
    if ((rc = sqlite3_exec(t->db, "PRAGMA journal_mode=WAL", NULL, NULL, &msg)) != SQLITE_OK ||
        (rc = sqlite3_exec(t->db, sync, NULL, NULL, &msg)) != SQLITE_OK) {
        r = cerr_set(err, EIO, "trail %s: cannot set WAL mode: %s", path,
                     msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        goto fail;
    }
    char jm[16] = "";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(t->db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        snprintf(jm, sizeof(jm), "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (strcmp(jm, "wal")) {
        r = cerr_set(err, EIO,
                     "trail %s: the file system does not support SQLite's WAL mode (journal mode is "
                     "'%s'); put the trail on a local file system",
                     path, jm);
        goto fail;
    }
    if (fresh) {
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA application_id=%d", TRAIL_APPLICATION_ID);
        if ((rc = sqlite3_exec(t->db, "BEGIN IMMEDIATE", NULL, NULL, &msg)) != SQLITE_OK ||
            (rc = sqlite3_exec(t->db, schema_sql, NULL, NULL, &msg)) != SQLITE_OK ||
            (rc = sqlite3_exec(t->db, sql, NULL, NULL, &msg)) != SQLITE_OK ||
            (rc = sqlite3_exec(t->db, "PRAGMA user_version=1", NULL, NULL, &msg)) != SQLITE_OK) {
            r = cerr_set(err, rc == SQLITE_FULL ? ENOSPC : EIO, "trail %s: cannot create the schema: %s",
                         path, msg ? msg : sqlite3_errstr(rc));
            sqlite3_free(msg);
            goto fail;
        }
        begun = true;
    }
    if ((r = prepare(t, "BEGIN IMMEDIATE", &t->begin, err)) < 0 ||
        (r = prepare(t, "COMMIT", &t->commit, err)) < 0 ||
        (r = prepare(t, "ROLLBACK", &t->rollback, err)) < 0 ||
        (r = prepare(t,
                     "INSERT INTO entries (" TRAIL_COLS
                     ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                     &t->ins_entry, err)) < 0 ||
        (r = prepare(t,
                     "INSERT INTO blobs (hash, size, data) SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 "
                     "FROM blobs WHERE hash = ?1)",
                     &t->ins_blob, err)) < 0 ||
        (r = prepare(t, "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1", &t->head_st, err)) <
            0 ||
        (r = prepare(t, "INSERT INTO ws_index (workspace, seq) VALUES (?1, ?2)", &t->ins_idx, err)) <
            0 ||
        (r = prepare(t, "INSERT INTO ws_index_marks (upto) VALUES (?1)", &t->ins_mark, err)) < 0)
        goto fail;
    sqlite3_set_authorizer(t->db, authorizer, NULL);
    if (fresh) {
        uint8_t rnd[8];
        randombytes_buf(rnd, sizeof(rnd));
        sodium_bin2hex(t->trail_id, sizeof(t->trail_id), rnd, sizeof(rnd));
        cJSON *b = cJSON_CreateObject();
        if (!b || !cJSON_AddStringToObject(b, "trail_id", t->trail_id) ||
            !cJSON_AddNumberToObject(b, "format", TRAIL_FORMAT) ||
            !cJSON_AddStringToObject(b, "hash_algorithm", TRAIL_HASH_NAME) ||
            !cJSON_AddStringToObject(b, "durability", d == TRAIL_DURABILITY_FULL ? "full" : "normal")) {
            cJSON_Delete(b);
            r = cerr_set(err, ENOMEM, "trail: out of memory");
            goto fail;
        }
        r = trail_append(t, NULL, "system", "trail_created", b, NULL, err);
        cJSON_Delete(b);
        if (r < 0)
            goto fail;
        /* Entry 1 commits with the schema, in the same transaction: never an empty trail. */
        if (trail_rec_end(&t->rec, t->rec_items, t->rec_first, t->seq, 0) < 0) {
            r = cerr_set(err, ENOMEM, "trail: out of memory");
            goto fail;
        }
        struct trail_batch first = {.rec = t->rec};
        const char *what;
        if ((rc = trail_apply(t, &first, begun, &what)) != SQLITE_OK) {
            r = sql_err(err, t->db, rc, path, what);
            goto fail;
        }
        t->rec.len = 0;
        staged_committed(t);
    } else if ((r = load_head(t, err)) < 0 || (r = ahead_recover(t, err)) < 0) {
        goto fail;
    }
    if ((r = trail_applier_start(t)) < 0) {
        r = cerr_set(err, -r, "trail %s: cannot start its applier thread: %s", path, strerror(-r));
        goto fail;
    }
    /* Without its own thread (it could not start) the trail still works: SQLite then checkpoints
     * on the commit, as before. */
    trail_ckpt_start(t->db, path, d == TRAIL_DURABILITY_FULL, &t->ckpt);
    t->opened = true;
    *out = t;
    return 0;
fail:
    trail_close(t);
    return r;
}
