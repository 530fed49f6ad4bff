/* supervisor/wacp/jobs.h: the model's file work (a workspace's copy, a checkpoint's snapshot, an
 * integration's writes) off the loop. A method checks everything on the loop, hands the slow
 * part to the run's worker pool (hooks.offload), and finishes on the loop when it is done:
 * entries recorded then, the answer released through hooks.reply after their commit. The
 * requester waits; every other agent keeps being served meanwhile. */
#ifndef CORRAL_WACP_JOBS_H
#define CORRAL_WACP_JOBS_H

#include "supervisor/wacp/internal.h"

struct wacp_job;
/* On a worker thread: touches the job's own data only (its strings, its manifests), never the
 * model. */
typedef void (*wacp_job_work_fn)(struct wacp_job *j);
/* On the loop, after work: 0 with *RES, or -1 with E (a wacp_call's answer). The model may have
 * changed meanwhile: what the job acts on is looked up again by id and checked again. */
typedef int (*wacp_job_finish_fn)(struct wacp *w, struct wacp_job *j, cJSON **res, struct wacp_err *e);
/* Frees the object the job is embedded in (whether finish ran or not). */
typedef void (*wacp_job_free_fn)(struct wacp_job *j);

/* Embedded in its owner's job object. */
struct wacp_job {
    struct wacp *w; /* NULL once the model is freed: the job is then only freed */
    wacp_job_work_fn work;
    wacp_job_finish_fn finish;
    wacp_job_free_fn free;
    char caller[WACP_ID_LEN]; /* whose request it answers */
    uint64_t call_ref;        /* that request (0: nobody waits for an answer) */
    bool queued;              /* waiting for a turn on the pool (WACP_JOBS_RUNNING) */
    struct wacp_job *next;    /* the model's jobs, running or queued */
    struct wacp_job *next_queued;
};

/* The model's file work on the pool at once: the rest queues in order, so a coordinator
 * creating 256 workspaces in one breath leaves the pool's other threads to tool calls. */
#define WACP_JOBS_RUNNING 2

/* Runs J (taken): off the loop when the run has a pool (hooks.offload) and either the request
 * can wait (w->call_ref, taken into J) or nobody waits (REPLY false): WACP_DEFERRED when a
 * request waits (its answer comes through hooks.reply), 0 when nobody waits. Otherwise work
 * and finish run now and finish's answer is returned. */
int wacp_jobs_run(struct wacp *w, struct wacp_job *j, const char *caller, bool reply, cJSON **res,
                  struct wacp_err *e);
/* The model is being freed: jobs still running are freed when they end, finishing nothing. */
void wacp_jobs_orphan(struct wacp *w);

#endif
