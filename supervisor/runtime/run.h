/* supervisor/runtime/run.h: `corral run`: one WACP session on one event loop. The run owns the
 * processes (a sandbox, a pipe pair and a tool connection per workspace), the trail and the
 * control socket; the model of supervisor/wacp/wacp.h decides what may happen. */
#ifndef CORRAL_RUN_H
#define CORRAL_RUN_H

#include "common/util.h"
#include "policy/policy.h"

struct run_opts {
    const struct policy *policy;
    const char *policy_path; /* for messages */
    const char *workspace;   /* the root workspace's files (the project directory) */
    const char *run_dir;     /* per-run state: ws/ copies, objects/ */
    const char *trail_path;
    bool trail_full;             /* durability full (fsync per commit) or normal */
    const char *control_path;    /* the control socket (`corral ps`) */
    const char *owner;           /* user id of whoever started the run */
    double timeout;              /* seconds for the whole run; 0: none */
    double stop_grace;           /* seconds an ending agent gets before SIGKILL (default 1) */
    uint64_t redelivery_base_ms; /* 0: the model's default */
    bool quiet;                  /* no summary on stdout */
    /* --resume: take over the run whose supervisor_started is entry RESUME_SEQ of the trail and
     * whose supervisor died (its run directory is RUN_DIR, reopened, not made). */
    bool resume;
    uint64_t resume_seq;
    /* ... leaving out these damaged entries (NULL: none; supervisor/runtime/recovery.h) */
    const struct recovery_quarantine *quarantine;
};

/* The counts printed at the end of a run. */
struct run_result {
    bool root_closed; /* the coordinator's workspace reached `closed` */
    bool timed_out;
    char root_state[16];
};

/* Runs the session to its end. 0 with *res filled, or < 0 with err set (nothing could start,
 * or the trail failed: the run stops rather than act unrecorded). */
int run_session(const struct run_opts *o, struct run_result *res, struct cerr *err);

#endif
