/* supervisor/trail_internal.h: what the trail's own files (trail.c, trail_query.c,
 * trail_verify.c) and its tests share: the schema, the canonical encodings, the hash chain. */
#ifndef CORRAL_TRAIL_INTERNAL_H
#define CORRAL_TRAIL_INTERNAL_H

#include "supervisor/trail.h"

#include <sqlite3.h>

/* "crlt" in the SQLite header's application_id; user_version holds TRAIL_FORMAT. */
#define TRAIL_APPLICATION_ID 0x63726c74

/* The columns every reader selects, in this order (trail_row_entry reads them). */
#define TRAIL_COLS "seq, id, ts, workspace, actor, type, body, local_seq, local_prev, local_hash, prev_hash, hash"

/* A growable byte buffer. */
struct tbuf {
    uint8_t *p;
    size_t len, cap;
};
int tbuf_reserve(struct tbuf *b, size_t add);
int tbuf_put(struct tbuf *b, const void *p, size_t n);
void tbuf_free(struct tbuf *b);

/* Canonical JSON: object keys sorted bytewise, no whitespace, integers without exponent,
 * other numbers in the shortest form that reads back the same. Appends to out. -EINVAL for a
 * value JSON cannot carry (raw text, a key-less member, nesting deeper than 1000), -ENOMEM. */
int trail_canonical_json(const cJSON *j, struct tbuf *out);

/* The chain (docs/trail.md, "Hashes"). All integers big-endian, all strings length-prefixed:
 *   d          = H("corral.trail.entry.v1\0" | lp(id) | u64(ts) | opt(workspace) | lp(actor) | lp(type) | lp(body))
 *   local_hash = H("corral.trail.local.v1\0" | opt(local_prev) | u64(local_seq) | d)      (workspace entries)
 *   hash       = H("corral.trail.global.v1\0" | opt(prev_hash) | u64(seq) | d | opt(local_hash))
 * where lp(s) = u64(len) | s and opt(x) = 0x00 when absent, 0x01 | lp(x) when present. */
struct trail_fields {
    uint64_t seq;
    const char *id;
    size_t id_len;
    int64_t ts_us;
    const char *workspace; /* NULL: none */
    size_t ws_len;
    const char *actor;
    size_t actor_len;
    const char *type;
    size_t type_len;
    const char *body;
    size_t body_len;
    uint64_t local_seq;
    const uint8_t *local_prev; /* NULL: none */
    const uint8_t *prev_hash;  /* NULL: none */
};
/* Fills local_hash (only when f->workspace) and hash. scratch is reused between calls. */
int trail_hash_entry(struct tbuf *scratch, const struct trail_fields *f,
                     uint8_t local_hash[TRAIL_HASH_LEN], uint8_t hash[TRAIL_HASH_LEN]);

/* Per-workspace head of the local chain, in a small open-addressing table keyed by name. */
struct trail_wshead {
    char *name; /* NULL: empty slot */
    size_t len;
    uint64_t key;
    uint64_t local_seq;
    uint8_t local_hash[TRAIL_HASH_LEN];
};
struct trail_wsmap {
    struct trail_wshead *slots;
    size_t cap, n;
};
/* Finds name, or inserts it with local_seq 0 (*created set). NULL only on -ENOMEM. */
struct trail_wshead *trail_wsmap_get(struct trail_wsmap *m, const char *name, size_t len,
                                     bool *created);
void trail_wsmap_clear(struct trail_wsmap *m);

/* Opens path with SQLITE_OPEN_READONLY, checks it is a corral trail of a known format. */
int trail_db_open_readonly(const char *path, sqlite3 **out, struct cerr *err);
/* Fills e from a row of TRAIL_COLS. */
void trail_row_entry(sqlite3_stmt *st, struct trail_entry *e);

/* The writer's connection, for tests that prove the authorizer refuses UPDATE and DELETE. */
sqlite3 *trail_db_handle(struct trail *t);

#endif
