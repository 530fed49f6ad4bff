/* supervisor/trail/trail.h: the trail, corral's append-only, hash-chained record of every event, kept
 * in one SQLite file (WAL). One writer (the supervisor) appends and group-commits; any number of
 * read-only readers query, follow, verify and export. Format and guarantees: docs/trail.md. */
#ifndef CORRAL_TRAIL_H
#define CORRAL_TRAIL_H

#include "common/util.h"

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define TRAIL_HASH_LEN 32 /* BLAKE2b-256 */
#define TRAIL_HASH_NAME "blake2b-256"
#define TRAIL_FORMAT 1
#define TRAIL_BODY_MAX (1u << 20)   /* canonical body bytes; larger payloads go to blobs */
#define TRAIL_NAME_MAX 256          /* workspace, actor */
#define TRAIL_BLOB_MAX (512u << 20) /* one blob */

/* ---- writer ------------------------------------------------------------------------------ */

/* One writer per trail file, used from one thread (the supervisor's event loop). */
struct trail;

/* FULL: the WAL is fsynced at every commit (an acknowledged entry survives power loss).
 * NORMAL: written to the OS at every commit, fsynced at checkpoints only (an acknowledged entry
 * survives a crash of the supervisor, not of the machine). */
enum trail_durability { TRAIL_DURABILITY_FULL, TRAIL_DURABILITY_NORMAL };

/* "full" or "normal" (the policy's trail.durability) into *out; -EINVAL for anything else. */
int trail_durability_parse(const char *s, enum trail_durability *out);

/* Opens (creating the file, mode 0600, and schema if new, with a first `trail_created` entry) the
 * trail at path for writing; an existing trail's workspace heads are read in one scan. *out is
 * owned by the caller (trail_close). -EROFS if the file cannot be written, -EINVAL if it is not a
 * corral trail. */
int trail_open(const char *path, enum trail_durability d, struct trail **out, struct cerr *err);
/* NULL ok. Staged entries not yet committed are dropped: their effects never happened. What was
 * committed is put into the SQLite file first; the ahead log is then removed. */
void trail_close(struct trail *t);
/* Whether FILE-ahead holds what a writer that stopped without closing (a crash, SIGKILL) had
 * committed: entries readers do not see until a writer applies them (trail_open does, first). */
bool trail_ahead_pending(const char *path);
/* Applies them: opens the trail for writing and closes it. *head (may be NULL) gets the last
 * entry's sequence number after. 0, or the open's error (-EBUSY: a writer is running). */
int trail_settle(const char *path, uint64_t *head, struct cerr *err);

/* Stages one entry in the current batch. workspace may be NULL (system-level event); actor is a
 * role name, "protocol", "system" or a user id; type must be in the closed registry (else
 * -EINVAL); body must be a JSON object (NULL means {}), borrowed, stored canonically (sorted keys,
 * no whitespace). *seq_out (may be NULL) gets the entry's global sequence number, valid once
 * trail_commit returns 0. A bad argument is -EINVAL/-E2BIG and does not degrade the trail. */
int trail_append(struct trail *t, const char *workspace, const char *actor, const char *type,
                 const cJSON *body, uint64_t *seq_out, struct cerr *err);

/* Content-addressed blob (file contents, command output), deduplicated, written in the current
 * batch. hash_hex gets the lowercase hex BLAKE2b-256 of data (what `b2sum -l 256` prints), used to
 * reference it from a body: by convention under a key "blob", a key ending in "_blob", or in an
 * array under "blobs" (docs/trail.md). */
int trail_blob_put(struct trail *t, const void *data, size_t len, char hash_hex[65], struct cerr *err);

/* Group commit: one transaction for every staged entry and blob. Only after it returns 0 may the
 * caller release the effects. On failure the batch is rolled back and the trail becomes
 * degraded: every later append/blob_put/commit fails with -EIO saying the trail cannot be
 * written, so the supervisor refuses new work. Committing an empty batch is a no-op. */
int trail_commit(struct trail *t, struct cerr *err);
/* trail_commit without waking the applier thread: the caller calls trail_wake once the answers
 * waiting for the commit are out (the agent host, at the end of its loop turn), so that the
 * wake-up (a futex call, and an interrupt to the other CPU: 5-40 us on this VM) is not on their
 * path. */
int trail_commit_quiet(struct trail *t, struct cerr *err);
void trail_wake(struct trail *t);
bool trail_degraded(const struct trail *t);
/* Waits until every committed entry is in the SQLite file, where readers (trail_reader_open)
 * see it: a commit is acknowledged once it is in the ahead log, and the applier thread puts it
 * into SQLite soon after (docs/trail.md, "The ahead log"). For code that reads back what it
 * has just committed. 0, or -EIO (degraded) when it cannot get there. */
int trail_sync(struct trail *t, struct cerr *err);
/* Whether the trail's background work is far behind the commits: the checkpoint (16 MiB of WAL it
 * has not copied into the database, checkpoint.c) or the applier (1 MiB of committed batches not
 * yet in SQLite, apply.c). Work that can wait (a flooding agent's next requests) should, so that
 * neither reaches its bound, where the wait lands on a commit and on every answer waiting for it,
 * nor takes the CPU the loop needs. */
bool trail_congested(const struct trail *t);
/* A degraded trail becomes writable again once the applier has stored what it holds and the file
 * still ends at the last committed entry: 0, or -EIO while it cannot (the caller retries later, bounded).
 * The caller records system_degraded when its next commit succeeds. No-op when not degraded. */
int trail_retry(struct trail *t, struct cerr *err);
/* Why it is degraded ("" when it is not). */
const char *trail_degraded_why(const struct trail *t);
/* Entries staged and not yet committed. */
size_t trail_pending(const struct trail *t);
/* Sequence number of the last committed entry (0 if none). */
uint64_t trail_head_seq(const struct trail *t);

/* ---- registry ----------------------------------------------------------------------------- */

/* True if type is in the closed event registry (WACP's 72 types plus corral's own). */
bool trail_event_known(const char *type);
/* The registry in sorted order, for documentation and tests: *n gets the count. */
const char *const *trail_event_types(size_t *n);

/* ---- readers ------------------------------------------------------------------------------ */

struct trail_reader;

/* Opens the trail read-only (SQLITE_OPEN_READONLY): safe while a writer writes. */
int trail_reader_open(const char *path, struct trail_reader **out, struct cerr *err);
void trail_reader_close(struct trail_reader *r);

/* One entry as stored; every pointer borrowed, valid only during the callback. */
struct trail_entry {
    uint64_t seq;
    const char *id;
    int64_t ts_us;         /* unix microseconds, strictly increasing along the trail */
    const char *workspace; /* NULL: system-level */
    const char *actor;
    const char *type;
    const char *body; /* canonical JSON object text */
    size_t body_len;
    uint64_t local_seq;        /* position in the workspace's local chain (1-based); 0 if none */
    const uint8_t *local_prev; /* hash of the workspace's previous entry; NULL for its first entry
                                * and for system-level entries */
    const uint8_t *prev_hash;  /* NULL for the first entry */
    const uint8_t *hash;
};

struct trail_filter {
    const char *workspace, *actor, *type; /* NULL: any */
    bool has_since, has_until;
    int64_t since_us, until_us; /* inclusive bounds */
    uint64_t after_seq;         /* only entries with seq > after_seq */
    uint64_t limit;             /* 0: no limit */
};

/* Calls cb for each matching entry in sequence order; a non-zero return from cb stops the query
 * and is returned. Returns 0 when all matching entries were passed, or a negative code. Every
 * filter uses an index (workspace: ws_index up to its mark, then a short scan). */
typedef int (*trail_entry_cb)(const struct trail_entry *e, void *ctx);
int trail_query(struct trail_reader *r, const struct trail_filter *f, trail_entry_cb cb, void *ctx,
                struct cerr *err);

/* Calls cb(hash_hex, data, len, ctx) for every blob, in hash order. */
typedef int (*trail_blob_cb)(const char *hash_hex, const void *data, size_t len, void *ctx);
int trail_blobs_each(struct trail_reader *r, trail_blob_cb cb, void *ctx, struct cerr *err);
/* One blob by its hex hash: *data (malloc'd, caller frees) and *len; -ENOENT if absent. */
int trail_blob_get(struct trail_reader *r, const char *hash_hex, void **data, size_t *len,
                   struct cerr *err);

/* The entry as one JSON object (the `corral trail --json` and export form); the body is embedded
 * verbatim. Caller owns the result (cJSON_Delete); NULL on allocation failure. */
cJSON *trail_entry_to_json(const struct trail_entry *e);

/* "2026-11-23T09:27:27.123456Z" into buf (>= 32 bytes). */
void trail_format_time(int64_t ts_us, char *buf, size_t cap);
/* ISO-8601 ("2026-11-23", "2026-11-23T09:27", "...:27.5Z", "...+02:00"; no zone means UTC) or
 * unix seconds ("1763890047", "1763890047.25") into unix microseconds. 0 or -EINVAL. */
int trail_parse_time(const char *s, int64_t *out_us);

/* ---- verification -------------------------------------------------------------------------- */

/* Opens path read-only and recomputes every hash of the global chain and of each workspace's
 * local chain, the sequence (no gaps, no reordering), the timestamps and every blob's content.
 * Returns 0 if it all holds (*count, may be NULL, gets the number of entries); 1 if not, with
 * *bad_seq the first bad entry (0 when the problem is not one entry's) and the reason in err;
 * or a negative code if the file cannot be read. */
int trail_verify_file_count(const char *path, uint64_t *count, uint64_t *bad_seq, struct cerr *err);
int trail_verify_file(const char *path, uint64_t *bad_seq, struct cerr *err);

/* Entries whose own content (body, type, id, actor, time, workspace) no longer matches their
 * stored hash while every link to and from them holds (the next entry's prev_hash and the
 * workspace's next local_prev name the stored hash; sequence and times in order): damage confined
 * to those entries, whose content cannot be trusted while the chain's order and completeness
 * can. `corral run --resume` quarantines them when nothing else is wrong and the run does not
 * need them (docs/trail.md, "Damaged entries"). */
#define TRAIL_DAMAGED_MAX 64
struct trail_damage {
    uint64_t seq[TRAIL_DAMAGED_MAX]; /* ascending */
    size_t n;
    bool more;  /* more than TRAIL_DAMAGED_MAX of them */
    bool other; /* another check failed too: a link, the sequence, a time, a blob, the index */
};
/* trail_verify_file_count, with the damaged entries in *d (the result is 1 when there is any). */
int trail_verify_damage(const char *path, uint64_t *count, uint64_t *bad_seq, struct trail_damage *d,
                        struct cerr *err);

#endif
