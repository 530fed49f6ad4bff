/* supervisor/conn/pool.h: a bounded pool of worker threads for tool calls, so that a slow call (a big
 * search, a long command) never stalls the event loop. A job runs on a worker; its completion is
 * posted back to the loop through an eventfd and finished there, on the loop's thread. */
#ifndef CORRAL_POOL_H
#define CORRAL_POOL_H

#include "common/util.h"
#include "supervisor/conn/loop.h"

struct pool;

/* Whose jobs these are, for fairness: embedded in the owner (an agent), zeroed at creation. */
struct pool_share {
    unsigned running_long; /* its long jobs on a worker now (pool lock) */
};

/* Embedded in the caller's job object (intrusive: submitting never allocates, never fails).
 * A long job (a command: it may hold its thread for minutes) runs only while its owner holds
 * fewer than its share of the threads for long jobs, and never on the threads kept for short
 * ones: one agent, or a few, cannot starve the others' file calls. */
struct pool_job {
    void (*run)(struct pool_job *j);  /* on a worker thread: touch nothing the loop owns */
    void (*done)(struct pool_job *j); /* on the loop thread, after run; may free the job */
    struct pool_share *share;         /* NULL: no owner (always eligible) */
    bool is_long;
    /* Bulk work no caller is waiting on at a person's pace (the model's workspace copies,
     * snapshots, integration's writes): its thread runs it at a lower CPU priority, so that on a
     * machine with few CPUs it takes what the loop and the agents leave, not their turn. */
    bool background;
    struct pool_job *next;
};

/* WORKERS threads (0: 4 per CPU, at least 16), all signals blocked in them. */
int pool_new(struct loop *l, unsigned workers, struct pool **out, struct cerr *err);
/* Waits for queued and running jobs to finish, runs their done callbacks (on the calling thread,
 * which must be the loop's), joins the workers. NULL is a no-op. */
void pool_free(struct pool *p);

void pool_submit(struct pool *p, struct pool_job *j);
/* Jobs submitted whose done callback has not run yet. */
size_t pool_inflight(const struct pool *p);
unsigned pool_workers(const struct pool *p);

#endif
