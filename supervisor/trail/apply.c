/* supervisor/trail/apply.c: the applier, the thread that puts committed batches into SQLite. A
 * commit is acknowledged once its record is in the ahead log (ahead.c); this thread then takes
 * every batch waiting, inserts their blobs and entries in one transaction and commits it, so
 * batches that arrive while it works share the next transaction. It owns the writer's SQLite
 * connection while it runs (dbmu): the one-writer check, the sorted ws_index runs and the
 * writer-side WAL restarts (checkpoint.c) happen here. If SQLite refuses a transaction (a full
 * disk), the batches stay queued and in the ahead log, the trail reports itself degraded, and
 * trail_retry asks this thread to try again. */
#include "supervisor/trail/internal.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int idx_push(struct trail *t, const char *ws, size_t len, uint64_t seq)
{
    bool created;
    struct trail_wshead *h = trail_wsmap_get(&t->a_ws, ws, len, &created);
    if (!h)
        return -ENOMEM;
    if (t->idx_n == t->idx_cap) {
        size_t cap = t->idx_cap ? t->idx_cap * 2 : 1024;
        struct trail_idx_item *p = reallocarray(t->idx, cap, sizeof(*p));
        if (!p)
            return -ENOMEM;
        t->idx = p;
        t->idx_cap = cap;
    }
    t->idx[t->idx_n++] = (struct trail_idx_item){h->name, h->len, seq};
    return 0;
}

static int idx_cmp(const void *a, const void *b)
{
    const struct trail_idx_item *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Writes the first n waiting workspace entries into ws_index as one sorted run, with the mark
 * saying every workspace entry up to the applied head is indexed: each index page is touched
 * once per run rather than once per commit (docs/trail.md). */
static int idx_flush(struct trail *t, size_t n)
{
    qsort(t->idx, n, sizeof(*t->idx), idx_cmp);
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_text(t->ins_idx, 1, t->idx[i].name, (int)t->idx[i].len, SQLITE_STATIC);
        sqlite3_bind_int64(t->ins_idx, 2, (sqlite3_int64)t->idx[i].seq);
        int rc = step_done(t->ins_idx);
        if (rc != SQLITE_OK)
            return rc;
    }
    sqlite3_clear_bindings(t->ins_idx);
    sqlite3_bind_int64(t->ins_mark, 1, (sqlite3_int64)t->a_seq);
    return step_done(t->ins_mark);
}

int trail_idx_load(struct trail *t, struct cerr *err)
{
    sqlite3_stmt *st = NULL;
    int64_t upto = 0;
    int rc = sqlite3_prepare_v2(t->db, "SELECT max(upto) FROM ws_index_marks", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        upto = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_OK)
        return cerr_set(err, EIO, "trail %s: reading the workspace index mark: %s", t->path,
                        sqlite3_errstr(rc));
    t->idx_n = 0;
    rc = sqlite3_prepare_v2(t->db,
                            "SELECT workspace, seq FROM entries WHERE seq > ?1 AND workspace IS NOT "
                            "NULL ORDER BY seq",
                            -1, &st, NULL);
    if (rc == SQLITE_OK)
        sqlite3_bind_int64(st, 1, upto);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (idx_push(t, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                     (uint64_t)sqlite3_column_int64(st, 1)) < 0) {
            sqlite3_finalize(st);
            return cerr_set(err, ENOMEM, "trail: out of memory");
        }
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return cerr_set(err, EIO, "trail %s: reading the unindexed entries: %s", t->path,
                        sqlite3_errstr(rc));
    t->idx_lost = false;
    return 0;
}

static int insert_entry(struct trail *t, const struct trail_rec_item *it)
{
    const struct trail_fields *f = &it->f;
    sqlite3_stmt *st = t->ins_entry;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)f->seq);
    sqlite3_bind_text(st, 2, f->id, (int)f->id_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, f->ts_us);
    if (f->workspace)
        sqlite3_bind_text(st, 4, f->workspace, (int)f->ws_len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 4);
    sqlite3_bind_text(st, 5, f->actor, (int)f->actor_len, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, f->type, (int)f->type_len, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, f->body, (int)f->body_len, SQLITE_STATIC);
    if (f->workspace)
        sqlite3_bind_int64(st, 8, (sqlite3_int64)f->local_seq);
    else
        sqlite3_bind_null(st, 8);
    if (f->local_prev)
        sqlite3_bind_blob(st, 9, f->local_prev, TRAIL_HASH_LEN, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 9);
    if (f->prev_hash)
        sqlite3_bind_blob(st, 10, f->prev_hash, TRAIL_HASH_LEN, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 10);
    sqlite3_bind_blob(st, 11, it->hash, TRAIL_HASH_LEN, SQLITE_STATIC);
    int rc = step_done(st);
    sqlite3_clear_bindings(st);
    return rc;
}

static int insert_blob(struct trail *t, const struct trail_rec_item *it)
{
    sqlite3_stmt *st = t->ins_blob;
    sqlite3_bind_blob(st, 1, it->blob_hash, TRAIL_HASH_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)it->size);
    sqlite3_bind_blob(st, 3, it->size ? it->data : "", (int)it->size, SQLITE_STATIC);
    int rc = step_done(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* Whether the file still ends where this writer left it: if not, another process wrote to it
 * and appending would fork the chain. */
static int check_head(struct trail *t, const char **what)
{
    sqlite3_stmt *st = t->head_st;
    int rc = sqlite3_step(st);
    bool mine = (rc == SQLITE_ROW && (uint64_t)sqlite3_column_int64(st, 0) == t->a_seq &&
                 sqlite3_column_bytes(st, 1) == TRAIL_HASH_LEN &&
                 memcmp(sqlite3_column_blob(st, 1), t->a_head, TRAIL_HASH_LEN) == 0) ||
                (rc == SQLITE_DONE && t->a_seq == 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        *what = "reading the head";
        return rc;
    }
    if (!mine) {
        *what = "the one-writer check (another process wrote to the file)";
        return SQLITE_CORRUPT;
    }
    return SQLITE_OK;
}

int trail_apply(struct trail *t, struct trail_batch *list, bool begun, const char **what)
{
    *what = "starting a transaction";
    int rc = begun ? SQLITE_OK : step_done(t->begin);
    if (rc != SQLITE_OK)
        return rc;
    size_t n0 = t->idx_n, run = 0;
    uint64_t seq = t->a_seq;
    uint8_t head[TRAIL_HASH_LEN];
    memcpy(head, t->a_head, sizeof(head));
    if ((rc = check_head(t, what)) != SQLITE_OK)
        goto fail;
    if (n0 >= TRAIL_INDEX_RUN) {
        *what = "writing the workspace index";
        if ((rc = idx_flush(t, n0)) != SQLITE_OK)
            goto fail;
        run = n0;
    }
    for (struct trail_batch *b = list; b; b = b->next) {
        size_t pos = TRAIL_REC_HDR;
        struct trail_rec_item it;
        struct trail_rec_hdr h;
        const char *why;
        int r = trail_rec_header(b->rec.p, b->rec.len, &h);
        if (r == 0 && !b->chained && (r = trail_chain_batch(t, b, &why)) < 0) {
            /* -ENOMEM; or the chain's head and the loop's sequence numbers disagree, which
             * cannot be short of a bug: nothing of it goes into SQLite */
            *what = r == -ENOMEM ? "hashing the entries" : "hashing the entries (they do not continue the chain)";
            rc = r == -ENOMEM ? SQLITE_NOMEM : SQLITE_CORRUPT;
            goto fail;
        }
        while (r >= 0 && (r = trail_rec_next(b->rec.p, h.end, &pos, &it)) > 0) {
            if (it.kind == 'B') {
                *what = "storing a blob";
                rc = insert_blob(t, &it);
            } else {
                *what = "appending an entry";
                rc = insert_entry(t, &it);
                if (rc == SQLITE_OK && it.f.workspace &&
                    idx_push(t, it.f.workspace, it.f.ws_len, it.f.seq) < 0)
                    rc = SQLITE_NOMEM;
                seq = it.f.seq;
                memcpy(head, it.hash, TRAIL_HASH_LEN);
            }
            if (rc != SQLITE_OK)
                goto fail;
        }
        if (r < 0) { /* our own record: cannot happen short of memory damage */
            *what = "reading a staged batch";
            rc = SQLITE_CORRUPT;
            goto fail;
        }
    }
    *what = "committing";
    if ((rc = step_done(t->commit)) != SQLITE_OK)
        goto fail;
    if (run) {
        memmove(t->idx, t->idx + run, (t->idx_n - run) * sizeof(*t->idx));
        t->idx_n -= run;
    }
    t->a_seq = seq;
    memcpy(t->a_head, head, sizeof(head));
    trail_ckpt_cap(t->db, t->ckpt);
    return SQLITE_OK;
fail:
    step_done(t->rollback); /* may fail if SQLite already rolled back: nothing to keep */
    t->idx_n = n0;          /* this transaction's pushes are gone with it */
    return rc;
}

static void batches_free(struct trail_batch *b)
{
    while (b) {
        struct trail_batch *n = b->next;
        trail_buf_free(&b->rec);
        free(b);
        b = n;
    }
}

/* In `full`, the ahead log starts over only once what it held is flushed in SQLite too: the WAL
 * file's frames (the database file is flushed by every checkpoint that copies into it). */
int trail_wal_flush(struct trail *t)
{
    if (t->walfd < 0) {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s-wal", t->path);
        t->walfd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (t->walfd < 0)
            return errno == ENOENT ? 0 : -errno;
    }
    return fdatasync(t->walfd) < 0 ? -errno : 0;
}


/* Whether the queued batches go into SQLite now (amu held); if not, *due says when they do. */
static bool apply_now(struct trail *t, struct timespec *due)
{
    if (t->astop || t->aretry || t->await_n || t->q_bytes >= TRAIL_APPLY_BYTES)
        return true;
    int64_t ns = t->q_since.tv_nsec + t->apply_delay_ns % 1000000000;
    due->tv_sec = t->q_since.tv_sec + (time_t)(t->apply_delay_ns / 1000000000) + (time_t)(ns / 1000000000);
    due->tv_nsec = ns % 1000000000;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > due->tv_sec || (now.tv_sec == due->tv_sec && now.tv_nsec >= due->tv_nsec);
}

/* The applier's priority (amu held), when it lowered itself (in `normal`, applier_background):
 * the loop's while somebody waits for it, else lowered. Whoever waits is the loop, or holds it up: lowered, on CPUs the
 * agents and their commands keep busy, the applier got a fraction of the loop's share, and the
 * loop's wait (a wacp/trail.query, a commit that needs room, a retry, the close) lasted several
 * times longer (a trail_sync of 1,000 entries beside four busy processes on two CPUs: a mean of
 * 219 ms in the median run, against 49 ms). Raising it again needs CAP_SYS_NICE (the supervisor
 * runs as root): without it, it stays lowered. atid is cleared under amu before the thread
 * ends, so the id set here is never another task's. */
static void applier_priority(struct trail *t, bool waited)
{
    if (t->atid > 0)
        (void)setpriority(PRIO_PROCESS, (id_t)t->atid, waited ? t->anice_loop : t->anice);
}

void trail_applier_waiter(struct trail *t, bool waiting)
{
    if (waiting) {
        if (t->await_n++ == 0)
            applier_priority(t, true);
        pthread_cond_signal(&t->awork); /* it may be gathering: it applies at once */
    } else if (--t->await_n == 0 && !t->astop) {
        applier_priority(t, false);
    }
}

void trail_apply_delay(struct trail *t, int64_t ns)
{
    pthread_mutex_lock(&t->amu);
    t->apply_delay_ns = ns;
    pthread_cond_broadcast(&t->awork);
    pthread_mutex_unlock(&t->amu);
}

/* In `normal`, the applier runs this many nice steps below the loop (CFS weight 110 against
 * 1024): its work is off every answer's path, and on two CPUs it competed with the loop and the
 * agents. Under a sustained flood it falls behind instead; the trail is then congested
 * (trail_congested) and the floods wait, and past TRAIL_AHEAD_MAX or TRAIL_QUEUE_MAX commits
 * wait for it, at the loop's priority again (applier_priority). Not in `full`: there the flush
 * bounds a call, not the CPU (no gain measured), and a lagging applier let SQLite and its WAL
 * fall behind under load (a tight disk filled; readers saw entries late). */
#define APPLIER_NICE 10

/* Lowers the calling thread, APPLIER_NICE steps below the nice value it inherited from the loop
 * (at most 19). Says whether it did, the loop's nice value and its own. */
static bool applier_background(int *loop_nice, int *own_nice)
{
    /* Per thread on Linux (PRIO_PROCESS with the tid). Relative to the nice value the thread
     * inherited from the loop's: an absolute 10 raised the thread of a supervisor started at
     * nice 11-19 above its loop (root may), and put that of one at -5 fifteen steps below it.
     * Lowering one's own priority is always allowed; a failure leaves it at the loop's. */
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int base = getpriority(PRIO_PROCESS, tid);
    if (base == -1 && errno)
        return false;
    int v = base + APPLIER_NICE < 19 ? base + APPLIER_NICE : 19;
    *loop_nice = base;
    *own_nice = v;
    return setpriority(PRIO_PROCESS, tid, v) == 0;
}

static void *applier_main(void *arg)
{
    struct trail *t = arg;
    pthread_mutex_lock(&t->amu);
    if (t->durability == TRAIL_DURABILITY_NORMAL && applier_background(&t->anice_loop, &t->anice)) {
        t->atid = (pid_t)syscall(SYS_gettid);
        if (t->await_n || t->astop)
            applier_priority(t, true);
    }
    for (;;) {
        struct timespec due;
        for (;;) {
            while (!t->astop && !t->aretry && (!t->q_head || t->ahold || t->afailed))
                pthread_cond_wait(&t->awork, &t->amu);
            /* Batches gather until the oldest is TRAIL_APPLY_DELAY_NS old: a commit's wake-up
             * found the queue empty, later ones do not wake this thread (commit_batch). */
            if (!t->q_head || apply_now(t, &due))
                break;
            pthread_cond_timedwait(&t->awork, &t->amu, &due);
        }
        if (t->aretry && !t->q_head) {
            /* Asked to try again with nothing queued: what failed was the WAL's flush. */
            pthread_mutex_unlock(&t->amu);
            pthread_mutex_lock(&t->dbmu);
            int fr = t->afailed ? trail_wal_flush(t) : 0;
            pthread_mutex_unlock(&t->dbmu);
            pthread_mutex_lock(&t->amu);
            t->aretry = false;
            if (fr == 0) {
                t->afailed = false;
                t->synced = t->applied;
            }
            pthread_cond_broadcast(&t->adone);
            continue;
        }
        if (!t->q_head || (t->afailed && !t->aretry))
            break; /* stopping, with nothing it may apply */
        /* The queue's head, detached, up to TRAIL_APPLY_ROUND (at least one batch): batches
         * committed meanwhile, and the rest, wait for the next round. A commit that waits for
         * room (TRAIL_QUEUE_MAX) is released after one round, not after the whole queue (16 MiB
         * to hash and insert: by estimate a hundred milliseconds of the loop, and of every agent). */
        struct trail_batch *list = t->q_head, *last = list;
        for (uint64_t bytes = last->rec.len; last->next && bytes + last->next->rec.len <= TRAIL_APPLY_ROUND;)
            bytes += (last = last->next)->rec.len;
        t->q_head = last->next;
        if (!t->q_head)
            t->q_tail = NULL;
        last->next = NULL;
        bool retry = t->aretry;
        pthread_mutex_unlock(&t->amu);

        pthread_mutex_lock(&t->dbmu);
        const char *what = "";
        struct cerr e = {0};
        int rc = (t->idx_lost && trail_idx_load(t, &e) < 0) ? SQLITE_IOERR : SQLITE_OK;
        if (rc == SQLITE_OK)
            rc = trail_apply(t, list, false, &what);
        else
            what = "reloading the workspace index";
        if (rc != SQLITE_OK && !t->idx_lost)
            t->idx_lost = true; /* a run flushed in the failed transaction is gone with it */
        pthread_mutex_unlock(&t->dbmu);

        pthread_mutex_lock(&t->amu);
        if (retry)
            t->aretry = false;
        if (rc != SQLITE_OK) {
            /* Back at the front of the queue, for trail_retry. */
            last->next = t->q_head;
            t->q_head = list;
            if (!t->q_tail)
                t->q_tail = last;
            if (!t->afailed)
                snprintf(t->awhy, sizeof(t->awhy), "%s failed: %s", what, sqlite3_errstr(rc));
            t->afailed = true;
            pthread_cond_broadcast(&t->adone);
            continue;
        }
        t->afailed = false;
        for (struct trail_batch *b = list; b; b = b->next)
            t->q_bytes -= b->rec.len;
        t->applied = last->no;
        /* The segment the writer switches to next may be written over once its records are
         * flushed in SQLite: in `full`, one fdatasync of the WAL per lap, off the callers' path. */
        uint64_t need = t->seg_last[1 - t->cur], upto = t->applied;
        bool flush = t->durability == TRAIL_DURABILITY_FULL && need && upto >= need && t->synced < need;
        if (t->durability != TRAIL_DURABILITY_FULL)
            t->synced = t->applied;
        pthread_cond_broadcast(&t->adone);
        pthread_mutex_unlock(&t->amu);
        batches_free(list);
        if (flush) {
            pthread_mutex_lock(&t->dbmu);
            int fr = trail_wal_flush(t);
            pthread_mutex_unlock(&t->dbmu);
            pthread_mutex_lock(&t->amu);
            if (fr == 0 && t->synced < upto)
                t->synced = upto;
            else if (fr < 0 && !t->afailed) {
                snprintf(t->awhy, sizeof(t->awhy), "flushing the WAL failed: %s", strerror(-fr));
                t->afailed = true;
            }
            pthread_cond_broadcast(&t->adone);
            continue;
        }
        pthread_mutex_lock(&t->amu);
    }
    t->atid = 0; /* ending: nobody may set this id's priority from now on */
    pthread_cond_broadcast(&t->adone);
    pthread_mutex_unlock(&t->amu);
    return NULL;
}

int trail_applier_start(struct trail *t)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the loop's */
    int r = pthread_create(&t->athread, NULL, applier_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0)
        return -r;
    t->athread_on = true;
    return 0;
}

int trail_applier_wait(struct trail *t)
{
    pthread_mutex_lock(&t->amu);
    trail_applier_waiter(t, true);
    while (t->athread_on && t->applied < t->written && !t->afailed && !t->ahold)
        pthread_cond_wait(&t->adone, &t->amu);
    trail_applier_waiter(t, false);
    int r = t->applied < t->written ? -EIO : 0;
    pthread_mutex_unlock(&t->amu);
    return r;
}

void trail_applier_hold(struct trail *t, bool hold)
{
    pthread_mutex_lock(&t->amu);
    t->ahold = hold;
    pthread_cond_broadcast(&t->awork);
    pthread_mutex_unlock(&t->amu);
}

void trail_applier_stop(struct trail *t)
{
    if (!t->athread_on)
        return;
    pthread_mutex_lock(&t->amu);
    t->astop = true;
    applier_priority(t, true); /* the close waits for it */
    pthread_cond_broadcast(&t->awork);
    pthread_mutex_unlock(&t->amu);
    pthread_join(t->athread, NULL);
    t->athread_on = false;
    batches_free(t->q_head);
    t->q_head = t->q_tail = NULL;
    t->q_bytes = 0;
}
