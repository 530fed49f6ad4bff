/* supervisor/trail/internal.h: what the trail's own files (writer.c, query.c,
 * verify.c) and its tests share: the schema, the canonical encodings, the hash chain. */
#ifndef CORRAL_TRAIL_INTERNAL_H
#define CORRAL_TRAIL_INTERNAL_H

#include "supervisor/trail/trail.h"

#include <pthread.h>
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


/* ---- the ahead log (ahead.c) and its applier (apply.c) ------------------------------------- */

#define TRAIL_REC_HDR 32              /* a record's header */
#define TRAIL_REC_SUM 8               /* a CRA2 record's checksum, at its end */
#define TRAIL_AHEAD_LAP (4u << 20)    /* the ahead log starts over at 0 once past this, when it may */
#define TRAIL_AHEAD_MAX (64u << 20)   /* past this, a commit waits for the applier to catch up */
/* The applier gathers batches (in `normal`; in `full` it applies at once, see trail_open): it
 * starts a transaction once the oldest waiting batch is TRAIL_APPLY_DELAY_NS old, or
 * TRAIL_APPLY_BYTES wait, or somebody waits for it (a reader of its own entries, a commit that
 * needs the space, the close). One transaction per call cost the
 * applier SQLite's per-transaction work (the b-tree's path and the index pages written to the
 * WAL again) for every call, about one CPU while calls came back to back, which the loop and
 * the agents then shared the other CPU against. */
#define TRAIL_APPLY_DELAY_NS (4 * 1000 * 1000)
#define TRAIL_APPLY_BYTES (256u << 10)
#define TRAIL_AHEAD_BUSY (1u << 20)   /* batches not yet in SQLite past which the trail is congested */
/* Committed batches held in memory for the applier past which a commit waits for it. Without
 * it only the segments bounded them, two of TRAIL_AHEAD_MAX: 256 workers pipelining reads
 * (bench/run_scale.sh, trail `normal`, nothing light to protect, so no agent is held back) kept
 * 134 MB of them once the applier did the hashing, against 72 MB when the loop did, and the
 * supervisor's peak RSS went from 104 to 177 MB. */
#define TRAIL_QUEUE_MAX (16u << 20)
/* At most this many bytes of batches per transaction of the applier (a batch larger alone goes
 * alone): a commit waiting for room is released after one such round. */
#define TRAIL_APPLY_ROUND (2u << 20)

struct trail_rec_hdr {
    uint32_t items;
    uint64_t len, first, last; /* the record's bytes; its first and last entry's seq (0: none) */
    bool hashed; /* "CRA1", a writer before CRA2: its entries carry their links and hashes, and
                  * it has no checksum (recovery reads one a writer of that version left) */
    size_t end;  /* where its items end: len, less the checksum of a CRA2 record */
};
struct trail_rec_item {
    char kind; /* 'B' blob, 'E' entry */
    const uint8_t *blob_hash; /* 'B' */
    const void *data;
    size_t size;
    struct trail_fields f; /* 'E' */
    const uint8_t *hash;
};
int trail_rec_begin(struct trail_buf *b);
int trail_rec_put_blob(struct trail_buf *b, const uint8_t hash[TRAIL_HASH_LEN], const void *data,
                       size_t len);
/* An entry without its hashes (CRA2): f's local_prev and prev_hash say only whether the entry
 * has those links (non-NULL: a slot of zeros); trail_chain_batch fills the slots and the hash. */
int trail_rec_put_entry(struct trail_buf *b, const struct trail_fields *f);
/* Writes the header and appends the checksum, seeded with seed: the checksum of the record
 * before it in its segment, 0 for one at offset 0. 0, or -ENOMEM (never once TRAIL_REC_SUM bytes
 * are reserved). */
int trail_rec_end(struct trail_buf *b, uint32_t items, uint64_t first, uint64_t last, uint64_t seed);
/* The header of the record at p: 0, or -EINVAL if it is not one. */
int trail_rec_header(const uint8_t *p, size_t len, struct trail_rec_hdr *h);
/* Whether the whole record (p, h->len bytes) matches its checksum seeded with seed (CRA2; a CRA1
 * record has none, its hashes are checked instead): 0 or -EINVAL. */
int trail_rec_check(const uint8_t *p, const struct trail_rec_hdr *h, uint64_t seed);
/* The checksum a CRA2 record of len bytes at p ends with: the seed of the record after it. */
uint64_t trail_rec_sum(const uint8_t *p, size_t len);
/* The record's next item from *pos (start at TRAIL_REC_HDR): 1 and *it, 0 at the end, -EINVAL
 * when the bytes are not an item (pointers into p, bounds checked). */
int trail_rec_next(const uint8_t *p, size_t len, size_t *pos, struct trail_rec_item *it);

/* Opens (creating them, 0600) the two segments, FILE-ahead and FILE-ahead2, and locks the first:
 * -EBUSY when another writer holds it. */
int trail_ahead_open(const char *db_path, int fds[2], struct cerr *err);
/* The records of one segment from offset 0 on, while each continues the one before (*out,
 * malloc'd). */
struct trail_rec_ref {
    uint64_t off;
    struct trail_rec_hdr h;
    uint64_t seed; /* the checksum the record before it ends with (0: none, or a CRA1 record) */
};
int trail_ahead_index(int fd, struct trail_rec_ref **out, size_t *n);
/* One record at off (and fdatasync when sync): 0 or -errno. */
int trail_ahead_write(int fd, const void *p, size_t len, uint64_t off, bool sync);
/* Zeroes the header of a record whose write failed (never acknowledged). */
void trail_ahead_erase(int fd, uint64_t off, bool sync);
/* Empties both segments (and flushes that): recovery's, once what it applied is flushed in
 * SQLite. What is left is in SQLite or was not applied, and never will be: its sequence numbers
 * are this writer's to use again. 0 or -errno. */
int trail_ahead_clear(const int fds[2]);
void trail_ahead_remove(const char *db_path);
/* A segment (0 or 1) opened for reading, if it is a regular file: the fd, or -1. */
int trail_ahead_open_read(const char *db_path, int seg);
/* Whether FILE-ahead is there, not empty and not locked by a writer: a writer died with it. */
bool trail_ahead_left(const char *db_path);

/* A workspace entry waiting for the next sorted run into ws_index. name belongs to a_ws. */
struct trail_idx_item {
    const char *name;
    size_t len;
    uint64_t seq;
};

/* A committed batch on its way into SQLite: its record, as written to the ahead log. */
struct trail_batch {
    struct trail_batch *next;
    uint64_t no; /* 1, 2, ...: the commit's number */
    struct trail_buf rec;
    bool chained; /* trail_chain_batch has filled its hashes (a retried transaction keeps them) */
};

/* A blob put in a batch not yet in SQLite, for the references of later bodies. */
struct trail_pblob {
    uint8_t h[TRAIL_HASH_LEN];
    uint64_t batch;
};

struct trail {
    sqlite3 *db; /* the applier's while it runs (dbmu) */
    sqlite3_stmt *begin, *commit, *rollback, *ins_entry, *ins_blob, *head_st, *ins_idx, *ins_mark;
    char *path;
    enum trail_durability durability;
    char trail_id[33];
    size_t pending;
    /* staged head (moves with each append) and committed head (moves with each commit) */
    uint64_t seq, c_seq;
    int64_t ts, c_ts;
    /* The loop does not hash (the applier does, trail_chain_batch): it keeps the sequence
     * numbers only, every workspace's local_seq in ws (its last_hash is not used). */
    struct trail_wsmap ws; /* every workspace's last local_seq, staged (loaded at open) */
    struct trail_buf body;
    bool degraded;
    char why[512];
    struct trail_ckpt *ckpt; /* NULL: SQLite's automatic checkpoint, on the commit */

    /* The batch being staged, as its ahead-log record, and the log itself (the writer's). */
    struct trail_buf rec;
    uint32_t rec_items;
    uint64_t rec_first;
    int afd[2];                   /* the ahead log's two segments */
    int cur;                      /* the one being written */
    uint64_t aoff;                /* where the next record goes in it */
    uint64_t aseed;               /* the checksum of the record that ends at aoff (when aoff > 0) */
    uint64_t seg_last[2];         /* the last batch written to each (0: none) */
    struct trail_pblob *pblobs;   /* blobs of batches not yet applied, and of the staged one */
    size_t pblob_n, pblob_cap;
    sqlite3 *rdb;                 /* the writer's own read connection, for blob references */
    sqlite3_stmt *has_blob;

    /* The applier: a thread that puts committed batches into SQLite (apply.c). */
    pthread_t athread;
    bool athread_on;
    pthread_mutex_t amu; /* the queue and the counters below */
    pthread_cond_t awork, adone;
    pthread_mutex_t dbmu; /* db and everything below: the applier's, or whoever holds it */
    struct trail_batch *q_head, *q_tail;
    uint64_t q_bytes;
    uint64_t written, applied, synced; /* batches: committed, in SQLite, flushed there */
    bool astop, afailed, aretry, ahold;
    bool wake_due; /* a quiet commit queued a batch the applier was not woken for */
    unsigned await_n;             /* threads waiting on adone for the applier: it applies at once */
    struct timespec q_since;      /* when the oldest waiting batch was queued (CLOCK_MONOTONIC) */
    int64_t apply_delay_ns;       /* TRAIL_APPLY_DELAY_NS, or a test's (trail_apply_delay) */
    /* The applier's thread id while it runs lowered (0: not, or gone), its nice value then, and
     * the loop's, which it runs at while somebody waits for it (trail_applier_waiter). */
    pid_t atid;
    int anice, anice_loop;
    char awhy[512];
    /* What SQLite holds, the applier's view: the one-writer check compares it with the file. */
    uint64_t a_seq;
    uint8_t a_head[TRAIL_HASH_LEN];
    /* The chain as far as it is hashed (trail_chain_batch: ahead of SQLite by the batches hashed
     * and not yet applied): the last entry's seq and hash, and in a_ws every workspace's last
     * local_seq and hash. a_ws also names the idx items, so it is never cleared while a writer
     * runs (a reload from SQLite resets its heads instead: writer.c, load_ws_heads). */
    uint64_t h_seq;
    uint8_t h_head[TRAIL_HASH_LEN];
    struct trail_wsmap a_ws;
    struct trail_buf a_scratch; /* the hashing's */
    struct trail_idx_item *idx; /* workspace entries not yet in ws_index, in seq order */
    size_t idx_n, idx_cap;
    bool idx_lost; /* a failed transaction took a run with it: reload before the next */
    int walfd;     /* FILE-wal, flushed before the ahead log starts over (full) */
    bool sync_init; /* the mutexes and conditions exist */
    bool opened;    /* trail_open succeeded: its close may remove the ahead log */
};

/* chain.c. Hashes a batch's entries, in order, from the chain's head (h_seq, h_head, a_ws), and
 * moves the head past them: a CRA2 record gets its links and hashes filled in; a CRA1 record's
 * must be the ones computed (-EINVAL and *why if not; the head is then partly moved: recovery
 * reloads it from SQLite). A CRA2 batch is all or nothing: -ENOMEM leaves the head as it was.
 * Called by the applier (dbmu held) or before it starts (recovery). */
int trail_chain_batch(struct trail *t, struct trail_batch *b, const char **why);
/* apply.c. Puts batches into SQLite in one transaction (begun: already open), hashing those not
 * hashed yet: 0, or an SQLite code (rolled back; *what says which step). Called with dbmu held. */
int trail_apply(struct trail *t, struct trail_batch *list, bool begun, const char **what);
/* fdatasync of FILE-wal (dbmu held): what SQLite committed is then on disk. */
int trail_wal_flush(struct trail *t);
/* The workspace entries not yet in ws_index, from the file (dbmu held). */
int trail_idx_load(struct trail *t, struct cerr *err);
int trail_applier_start(struct trail *t);
/* Waits until every committed batch is in SQLite: 0, or -EIO when the applier failed. */
int trail_applier_wait(struct trail *t);
/* Applies what is left and stops the thread. */
void trail_applier_stop(struct trail *t);
/* Tests: hold the applier (batches stay in the ahead log only) or let it go. */
void trail_applier_hold(struct trail *t, bool hold);
/* Tests: how long the applier lets batches gather (TRAIL_APPLY_DELAY_NS by default). */
void trail_apply_delay(struct trail *t, int64_t ns);
/* Called with amu held, by a thread about to wait on adone for the applier (and after): while
 * one waits, the applier gathers nothing and applies at once, at the loop's priority. */
void trail_applier_waiter(struct trail *t, bool waiting);

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
