/* supervisor/trail/internal.h: what the trail's own files (writer.c, query.c,
 * verify.c) and its tests share: the schema, the canonical encodings, the hash chain. */
#ifndef CORRAL_TRAIL_INTERNAL_H
#define CORRAL_TRAIL_INTERNAL_H

#include "supervisor/trail/trail.h"

#include <sqlite3.h>

/* "crlt" in the SQLite header's application_id; user_version holds TRAIL_FORMAT. */
#define TRAIL_APPLICATION_ID 0x63726c74

/* Workspace entries are written to ws_index in sorted runs of at least this many (docs/trail.md). */
#define TRAIL_INDEX_RUN 4096

/* The columns every reader selects, in this order (trail_row_entry reads them). */
#define TRAIL_COLS "seq, id, ts, workspace, actor, type, body, local_seq, local_prev, prev_hash, hash"

/* A growable byte buffer. */
struct trail_buf {
    uint8_t *p;
    size_t len, cap;
};
int trail_buf_reserve(struct trail_buf *b, size_t add);
int trail_buf_put(struct trail_buf *b, const void *p, size_t n);
void trail_buf_free(struct trail_buf *b);

/* Canonical JSON: object keys sorted bytewise, no whitespace, integers without exponent,
 * other numbers in the shortest form that reads back the same. Appends to out. -EINVAL for a
 * value JSON cannot carry (raw text, a key-less member, nesting deeper than 1000), -ENOMEM. */
int trail_canonical_json(const cJSON *j, struct trail_buf *out);

/* The chains (docs/trail.md, "Hashes"): one hash per entry, H = BLAKE2b-256, big-endian integers,
 *   hash = H("crlt.entry.v1\0" | hopt(prev_hash) | u64(seq) | hopt(local_prev) | u64(local_seq) |
 *            lp(id) | u64(ts) | opt(workspace) | lp(actor) | lp(type) | lp(body))
 * where lp(s) = u32(len) | s, opt(s) = 0x00 or 0x01 | lp(s), hopt(h) = 0x00 or 0x01 | h (32 bytes).
 * prev_hash is the hash of entry seq-1 (the global chain); local_prev is the hash of the previous
 * entry of the same workspace (its local chain, local_seq = 1, 2, ...; both absent for
 * system-level entries). Each entry's hash covers both links, so the local chains are anchored
 * in the global one and either chain can be checked on its own. */
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
/* Fills hash. scratch is reused between calls. */
int trail_hash_entry(struct trail_buf *scratch, const struct trail_fields *f,
                     uint8_t hash[TRAIL_HASH_LEN]);

/* Per-workspace head of the local chain, in a small open-addressing table keyed by name. */
struct trail_wshead {
    char *name; /* NULL: empty slot */
    size_t len;
    uint64_t key;
    uint64_t local_seq;                /* of the workspace's last entry */
    uint8_t last_hash[TRAIL_HASH_LEN]; /* hash of the workspace's last entry */
    /* verify only: the workspace's first entry within one range of the scan */
    uint64_t first_seq, first_local_seq;
    bool first_has_prev;
    uint8_t first_local_prev[TRAIL_HASH_LEN];
};
struct trail_wsmap {
    struct trail_wshead *slots;
    size_t cap, n;
};
/* Finds name, or inserts it with local_seq 0 (*created set). NULL only on -ENOMEM. */
struct trail_wshead *trail_wsmap_get(struct trail_wsmap *m, const char *name, size_t len, bool *created);
void trail_wsmap_clear(struct trail_wsmap *m);
/* The map's hash of a name, and an order-free digest term for one (workspace, seq) pair: verify
 * sums these over the entries and over ws_index to prove the index holds exactly the entries. */
uint64_t trail_name_key(const char *s, size_t n);
uint64_t trail_index_pair(uint64_t name_key, uint64_t seq);

/* Opens path with SQLITE_OPEN_READONLY, checks it is a corral trail of a known format. */
int trail_db_open_readonly(const char *path, sqlite3 **out, struct cerr *err);
/* Fills e from a row of TRAIL_COLS. */
void trail_row_entry(sqlite3_stmt *st, struct trail_entry *e);

/* trail_verify_file_count with the scan cut into `ranges` threads (0: one per CPU, at most 4)
 * of at least range_min entries each; tests use it to check the stitching of range boundaries. */
int trail_verify_ranges(const char *path, int ranges, uint64_t range_min, uint64_t *count,
                        uint64_t *bad_seq, struct cerr *err);
int trail_verify_ranges_damage(const char *path, int ranges, uint64_t range_min, uint64_t *count,
                               uint64_t *bad_seq, struct trail_damage *d, struct cerr *err);

/* True if a body key holds blob references: "blob", "*_blob" (one hash) or "blobs" (*list set:
 * an array of hashes). */
bool trail_blob_ref_key(const char *key, size_t len, bool *list);

/* The writer's connection, for tests that prove the authorizer refuses UPDATE and DELETE. */
sqlite3 *trail_db_handle(struct trail *t);

/* The background checkpointer (checkpoint.c): a thread with its own connection to PATH that runs
 * PASSIVE checkpoints, so none lands on the writer's commit. Turns the writer's automatic
 * checkpoint off. Stop it before closing the writer. */
struct trail_ckpt;
int trail_ckpt_start(sqlite3 *writer, const char *path, bool full, struct trail_ckpt **out);
void trail_ckpt_stop(sqlite3 *writer, struct trail_ckpt *c);
/* After the writer's commit: starts the WAL over when it has passed its bound (checkpoint.c). */
void trail_ckpt_cap(sqlite3 *writer, struct trail_ckpt *c);
/* The writer's estimate of the WAL pages the thread has not copied yet, and whether that is
 * past the point where work that can wait should (trail_congested). */
int trail_ckpt_debt(struct trail_ckpt *c);
bool trail_ckpt_congested(struct trail_ckpt *c);
/* How often the writer started the WAL over at its bound, and early (for the tests). */
void trail_ckpt_restarts(const struct trail_ckpt *c, unsigned *cap, unsigned *early);
/* The trail's checkpointer (NULL without its thread), for the tests. */
struct trail_ckpt *trail_ckpt_of(struct trail *t);
void trail_busy_wait(sqlite3 *writer); /* the writer's busy handler: short polls up to TRAIL_BUSY_MS */
#define TRAIL_BUSY_MS 5000 /* the writer's busy timeout */

#endif
