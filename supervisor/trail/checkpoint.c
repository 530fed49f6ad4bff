/* supervisor/trail/checkpoint.c: WAL checkpoints off the writer's path. SQLite's automatic
 * checkpoint runs inside the COMMIT that crosses 1000 WAL pages, on the caller: with the trail
 * on the supervisor's loop, that one commit (and every answer waiting on it) pays for copying
 * the WAL into the database and, in both durability modes, for an fsync of the database file.
 * The writer turns it off (wal_autocheckpoint=0) and this thread, with its own connection, runs
 * PASSIVE checkpoints: when the writer's WAL hook says the WAL is large, or every second. A
 * PASSIVE checkpoint never blocks the writer; the writer restarts the WAL at its next
 * transaction once a checkpoint has copied all of it. While commits come back to back a PASSIVE
 * pass never copies all of it (what was committed during the pass is left), so a round runs
 * passes until little is left (ckpt_run), and then a RESTART copies that rest and starts the WAL
 * over: the thread's own when the writer is between transactions, or else the writer's right
 * after its next commit (trail_ckpt_cap, early). If even that cannot happen, the WAL would grow
 * without bound (a flooding agent: 443 MB in 2.4 s): past CKPT_CAP_PAGES the writer asks for a
 * RESTART after its commit whatever is left, and the file is cut back to that size
 * (journal_size_limit). That one copies up to a second's frames on the loop (40-70 ms under 64
 * flooding agents): the early restart, and the loop holding the floods back while the thread
 * is far behind (trail_congested), keep the WAL from getting there. */
#include "supervisor/trail/internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#define CKPT_PAGES 1000      /* SQLite's default autocheckpoint threshold */
#define CKPT_PERIOD_MS 1000  /* at most this long between checkpoints while the WAL has frames */
#define CKPT_GAP_MS 250      /* at least this long between two checkpoints */
#define CKPT_CAP_PAGES 16384 /* the WAL's bound: 64 MiB of 4 KiB pages */
#define CKPT_CAP_BYTES "67108864"
#define CKPT_PASSES 8    /* PASSIVE passes per round, each copying what the last one left */
#define CKPT_RESIDUAL 64 /* pages left that a RESTART may copy while the writer waits */
#define CKPT_DEBT_PAGES 4096 /* uncopied WAL pages (16 MiB) past which the trail is congested */

struct trail_ckpt {
    sqlite3 *db;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, poked;
    int frames;     /* WAL frames after the writer's last commit, until the thread takes them */
    int wal_frames; /* the same, kept for the writer's own check (written under mu by the applier) */
    /* What the thread's last pass left, for the writer's measure of its debt (trail_ckpt_debt):
     * the WAL's frames then, and how many of them it had not copied. */
    int pass_log, pass_left;
    unsigned passes; /* passes whose measure was kept (ckpt_left) */
    unsigned gen;    /* WAL restarts by the writer: a pass begun before one measured the old WAL */
    int latest;      /* the WAL's frames after the writer's last commit (never taken, unlike frames) */
    unsigned early_tried; /* passes when the writer last tried an early restart (its thread only) */
    unsigned cap_restarts, early_restarts; /* the writer's restarts, for the tests (its thread) */
};

static unsigned ckpt_gen(struct trail_ckpt *c)
{
    pthread_mutex_lock(&c->mu);
    unsigned g = c->gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

/* After each checkpoint call of the thread (begun at generation GEN): what it left uncopied. */
static void ckpt_left(struct trail_ckpt *c, unsigned gen, int rc, int log, int done)
{
    if (rc != SQLITE_OK)
        return; /* busy or failed: the last measure stands */
    pthread_mutex_lock(&c->mu);
    if (c->gen == gen) {
        c->pass_log = log > 0 ? log : 0;
        c->pass_left = log > done ? log - done : 0;
        c->passes++;
    }
    pthread_mutex_unlock(&c->mu);
}

static void deadline(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* One round: PASSIVE passes copy the WAL without ever blocking the writer, each what the last
 * one left plus what was committed meanwhile; once that is a few commits' worth, a RESTART
 * copies the rest (holding the writer lock only for those pages and the database's flush) so
 * that the writer's next commit writes the WAL from its start again. It gives up at once if the
 * writer is in a transaction, as it mostly is under load; the writer then restarts the WAL
 * itself after its next commit (ckpt_early). Without them, back-to-back commits never let a
 * PASSIVE copy everything, and the WAL grows to its cap, where the writer's RESTART then lands
 * on a caller with whatever PASSIVE has not copied: 3,000 back-to-back reads restarted it 9
 * times, against none before the cap. */
static void ckpt_run(struct trail_ckpt *c)
{
    for (int pass = 0; pass < CKPT_PASSES; pass++) {
        int log = 0, done = 0;
        unsigned gen = ckpt_gen(c);
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        ckpt_left(c, gen, rc, log, done);
        if (rc != SQLITE_OK)
            return;
        /* A pass copies the frames there were when it started: what was committed meanwhile
         * is still to copy, and until it is the WAL cannot start over. */
        pthread_mutex_lock(&c->mu);
        int latest = c->latest;
        bool same = c->gen == gen;
        pthread_mutex_unlock(&c->mu);
        if (log <= 0 || !same || (done >= log && latest <= log))
            break; /* all of it, or the writer has started the WAL over since */
        if (done >= log)
            log = latest;
        if (log - done <= CKPT_RESIDUAL) {
            gen = ckpt_gen(c);
            rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_RESTART, &log, &done);
            ckpt_left(c, gen, rc, log, done);
            return;
        }
    }
}

static void *ckpt_main(void *arg)
{
    struct trail_ckpt *c = arg;
    struct timespec ts;
    trail_thread_background(NULL, NULL);
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        if (!c->poked) {
            deadline(&ts, CKPT_PERIOD_MS);
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
        if (c->stop)
            break;
        /* Also while the last pass left pages: the writer may be holding back work until the
         * debt is paid (trail_ckpt_debt), and then nothing new would wake the thread. */
        bool due = c->poked || c->frames > 0 || c->pass_left > 0;
        c->poked = false;
        c->frames = 0;
        pthread_mutex_unlock(&c->mu);
        if (due) /* errors are the next checkpoint's to retry; the writer's commits stand */
            ckpt_run(c);
        pthread_mutex_lock(&c->mu);
        /* Paced: the writer restarts the WAL at its next transaction once a checkpoint has
         * copied it all; checkpointing again meanwhile would only hold it from doing so (and
         * cost two more flushes). */
        deadline(&ts, CKPT_GAP_MS);
        while (!c->stop && pthread_cond_timedwait(&c->cv, &c->mu, &ts) == 0)
            ;
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* The writer's WAL hook: after each commit, on the writer's thread. Cheap: a lock and a flag.
 * It also sees the WAL started over by SQLite itself, which the writer does at the start of a
 * transaction once a checkpoint (the thread's PASSIVE or RESTART) has copied all of it: the WAL
 * then holds fewer frames than before, or no more than this transaction wrote (the pages its
 * connection wrote since the last commit, SQLITE_DBSTATUS_CACHE_WRITE). What the thread's last
 * pass measured was the old WAL: kept, it made the debt of the new one look like nothing (its
 * frames below the old count), and the writer's early RESTART copy megabytes on the loop. A new
 * generation, as after the writer's own RESTART: the debt is the new WAL's frames until a pass
 * measures it. */
static int ckpt_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)name;
    struct trail_ckpt *c = arg;
    int wrote = 0, most = 0;
    if (sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_WRITE, &wrote, &most, 1) != SQLITE_OK)
        wrote = frames; /* unknown: taken as started over, which errs high until the next pass */
    pthread_mutex_lock(&c->mu);
    bool restarted = frames < c->wal_frames || frames <= wrote;
    c->wal_frames = frames;
    if (restarted) {
        c->gen++;
        c->pass_log = c->pass_left = 0;
    }
    c->frames = frames;
    c->latest = frames;
    if (frames >= CKPT_PAGES && !c->poked) {
        c->poked = true;
        pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return SQLITE_OK;
}

/* The writer's busy handler. SQLite's own (busy_timeout) sleeps 1 ms, then 2, 5, 10, ...: a
 * commit that meets the thread's RESTART (which holds the writer lock for its last few pages and
 * the database's flush, a few hundred microseconds) would wait a whole millisecond or more. This
 * one polls every 25 us, growing to 1 ms, up to TRAIL_BUSY_MS in all. */
static int ckpt_busy_wait(void *arg, int n)
{
    (void)arg;
    static __thread int64_t start;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    if (n == 0)
        start = us;
    if (us - start >= (int64_t)TRAIL_BUSY_MS * 1000)
        return 0;
    long step = n < 6 ? 25L << n : 1000L;
    struct timespec d = {0, (step > 1000 ? 1000 : step) * 1000L};
    nanosleep(&d, NULL);
    return 1;
}

void trail_busy_wait(sqlite3 *writer)
{
    sqlite3_busy_handler(writer, ckpt_busy_wait, NULL);
}

int trail_ckpt_start(sqlite3 *writer, const char *path, bool full, struct trail_ckpt **out)
{
    *out = NULL;
    struct trail_ckpt *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                        NULL) != SQLITE_OK ||
        sqlite3_exec(c->db, full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", NULL, NULL,
                     NULL) != SQLITE_OK) {
        sqlite3_close(c->db);
        free(c);
        return -EIO;
    }
    sqlite3_busy_timeout(c->db, 0);
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the loop's */
    int r = pthread_create(&c->thread, NULL, ckpt_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        sqlite3_close(c->db);
        free(c);
        return -r;
    }
    sqlite3_exec(writer, "PRAGMA wal_autocheckpoint=0", NULL, NULL, NULL);
    sqlite3_exec(writer, "PRAGMA journal_size_limit=" CKPT_CAP_BYTES, NULL, NULL, NULL);
    sqlite3_wal_hook(writer, ckpt_wal_hook, c);
    *out = c;
    return 0;
}

/* The WAL pages not yet copied into the database, as far as the writer can tell without asking
 * SQLite (which would take a checkpoint): what the thread's last pass left, plus the frames
 * committed since. After a restart (the writer's, or SQLite's own, seen by the WAL hook) no pass
 * has measured the new WAL, and all its frames are owed. An estimate that errs low only until
 * the next pass. Called with the mutex held. */
static int ckpt_debt_locked(const struct trail_ckpt *c)
{
    int grown = c->wal_frames > c->pass_log ? c->wal_frames - c->pass_log : 0;
    return c->pass_left + grown;
}

/* Early: what the thread's last pass left and what was committed since are at most
 * CKPT_RESIDUAL frames, so a RESTART now copies those few. The thread cannot do it itself
 * while commits come back to back: the writer's transaction is open for most of a busy turn,
 * and the thread may not wait for it (it would then hold the writer lock while waiting for
 * readers). Tried once per pass of the thread, so that a reader that keeps it from succeeding
 * does not cost a flush at every commit. */
static bool ckpt_early(struct trail_ckpt *c)
{
    if (c->wal_frames < CKPT_PAGES)
        return false;
    pthread_mutex_lock(&c->mu);
    bool now = c->passes != c->early_tried && c->pass_log > 0 && ckpt_debt_locked(c) <= CKPT_RESIDUAL;
    if (now)
        c->early_tried = c->passes;
    pthread_mutex_unlock(&c->mu);
    return now;
}

void trail_ckpt_cap(sqlite3 *writer, struct trail_ckpt *c)
{
    if (!c)
        return;
    bool cap = c->wal_frames >= CKPT_CAP_PAGES;
    if (!cap && !ckpt_early(c))
        return;
    /* No waiting (the writer is on the loop): the writer lock is free, as its own commit just
     * ended; a reader still on the WAL or the thread's PASSIVE checkpoint makes it return BUSY at
     * once, and the next commit tries again. What it copies is only what PASSIVE has not. */
    sqlite3_busy_timeout(writer, 0);
    if (sqlite3_wal_checkpoint_v2(writer, NULL, SQLITE_CHECKPOINT_RESTART, NULL, NULL) == SQLITE_OK) {
        if (cap)
            c->cap_restarts++;
        else
            c->early_restarts++;
        pthread_mutex_lock(&c->mu);
        c->wal_frames = 0;
        c->gen++;
        c->pass_log = c->pass_left = 0;
        pthread_mutex_unlock(&c->mu);
    }
    trail_busy_wait(writer);
}

int trail_ckpt_debt(struct trail_ckpt *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    int debt = ckpt_debt_locked(c);
    pthread_mutex_unlock(&c->mu);
    return debt;
}

void trail_ckpt_restarts(const struct trail_ckpt *c, unsigned *cap, unsigned *early)
{
    *cap = c ? c->cap_restarts : 0;
    *early = c ? c->early_restarts : 0;
}

bool trail_ckpt_congested(struct trail_ckpt *c)
{
    return trail_ckpt_debt(c) >= CKPT_DEBT_PAGES;
}

void trail_ckpt_stop(sqlite3 *writer, struct trail_ckpt *c)
{
    if (!c)
        return;
    sqlite3_wal_hook(writer, NULL, NULL);
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    sqlite3_close(c->db);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
