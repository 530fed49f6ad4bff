/* supervisor/wacp/jobs.c: the model's file work on the run's worker pool (see jobs.h). */
#include "supervisor/wacp/jobs.h"

#include "supervisor/wacp/core.h"

#include <stdio.h>
#include <string.h>

static void job_work(void *arg)
{
    struct wacp_job *j = arg;
    j->work(j);
}

static void job_unlink(struct wacp *w, struct wacp_job *j)
{
    for (struct wacp_job **p = &w->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            return;
        }
}

static void job_finish(struct wacp *w, struct wacp_job *j)
{
    cJSON *res = NULL;
    struct wacp_err e = {0};
    /* The request's ref while it finishes: a job it starts in turn (an evaluated integration's
     * merge) answers the same request. */
    uint64_t outer = w->call_ref;
    w->call_ref = j->call_ref;
    int rc = j->finish(w, j, &res, &e);
    w->call_ref = outer;
    if (rc == WACP_DEFERRED) /* another job answers it */
        cJSON_Delete(res);
    else if (j->call_ref && w->h.reply)
        w->h.reply(w->h.data, j->caller, j->call_ref, rc == 0 ? res : NULL, rc == 0 ? NULL : &e);
    else
        cJSON_Delete(res);
    j->free(j);
}

static void job_done(void *arg);

/* Hands queued jobs to the pool while fewer than WACP_JOBS_RUNNING run; a job the pool cannot
 * take is done here, inline. */
static void jobs_start(struct wacp *w)
{
    while (w->jobs_queue && w->jobs_running < WACP_JOBS_RUNNING) {
        struct wacp_job *j = w->jobs_queue;
        w->jobs_queue = j->next_queued;
        if (!w->jobs_queue)
            w->jobs_queue_tail = NULL;
        j->queued = false;
        w->jobs_running++;
        if (w->h.offload(w->h.data, job_work, job_done, j) == 0)
            continue;
        w->jobs_running--;
        job_unlink(w, j);
        j->work(j);
        job_finish(w, j);
    }
}

/* On the loop, in the turn the pool reported it done: entries recorded now commit at this
 * turn's end, and the answer (hooks.reply: agent_reply) is released after that commit. */
static void job_done(void *arg)
{
    struct wacp_job *j = arg;
    struct wacp *w = j->w;
    if (!w) {
        j->free(j);
        return;
    }
    job_unlink(w, j);
    w->jobs_running--;
    job_finish(w, j);
    jobs_start(w);
}

int wacp_jobs_run(struct wacp *w, struct wacp_job *j, const char *caller, bool reply, cJSON **res,
                  struct wacp_err *e)
{
    j->w = w;
    snprintf(j->caller, sizeof(j->caller), "%s", caller ? caller : "");
    j->call_ref = reply ? w->call_ref : 0;
    bool async = w->h.offload && (!reply || (j->call_ref && w->h.reply));
    if (async && (w->jobs_queue || w->jobs_running >= WACP_JOBS_RUNNING)) {
        j->next = w->jobs;
        w->jobs = j;
        j->queued = true;
        j->next_queued = NULL;
        if (w->jobs_queue_tail)
            w->jobs_queue_tail->next_queued = j;
        else
            w->jobs_queue = j;
        w->jobs_queue_tail = j;
        return reply ? WACP_DEFERRED : 0;
    }
    if (async) {
        j->next = w->jobs;
        w->jobs = j;
        w->jobs_running++;
        if (w->h.offload(w->h.data, job_work, job_done, j) == 0)
            return reply ? WACP_DEFERRED : 0;
        w->jobs_running--;
        job_unlink(w, j); /* no room on the pool: done here, as without one */
    }
    j->call_ref = 0;
    j->work(j);
    cJSON *r = NULL;
    int rc = j->finish(w, j, &r, e);
    if (reply && rc == 0)
        *res = r;
    else
        cJSON_Delete(r);
    j->free(j);
    return rc;
}

void wacp_jobs_orphan(struct wacp *w)
{
    for (struct wacp_job *j = w->jobs, *next; j; j = next) {
        next = j->next;
        j->w = NULL;
        if (j->queued) /* never handed to the pool: nothing will end it */
            j->free(j);
    }
    w->jobs = w->jobs_queue = w->jobs_queue_tail = NULL;
}
