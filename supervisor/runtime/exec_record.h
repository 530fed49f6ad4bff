/* supervisor/runtime/exec_record.h: what `corral exec --trail` writes: the sandbox (its full derived
 * profile) before it exists, the process when it starts and when it ends, budgets it hit. */
#ifndef CORRAL_EXEC_RECORD_H
#define CORRAL_EXEC_RECORD_H

#include "common/util.h"
#include "sandbox/sandbox.h"

struct trail;
struct policy_role_view;

struct exec_record {
    struct trail *trail; /* NULL: recording is off and every call is a no-op */
    char workspace[64];  /* the run's workspace id in the trail: "exec-PID-MS" */
    const char *role;
    pid_t pid;
    bool failed;    /* a commit failed: the trail is degraded */
    double timeout; /* the run's wall-time budget (seconds; 0: none) */
    bool warned[3]; /* budget_warning recorded: memory, pids, time */
    struct cerr err;
};

/* The full derived profile as the sandbox_created body shows it (new object). */
#include <cjson/cJSON.h>
cJSON *exec_record_profile_json(const struct sandbox_profile *p, double timeout);

/* Records and commits sandbox_created; only if this returns 0 may the sandbox be created. */
int exec_record_start(struct exec_record *r, struct trail *t, const struct sandbox_profile *p,
                      const struct policy_role_view *v, const char *program, char *const argv[],
                      double timeout, struct cerr *err);
void exec_record_spawned(struct exec_record *r, pid_t pid);
void exec_record_failed(struct exec_record *r, const char *why);
/* Records `budget_warning` once per budget (memory, pids, time) whose usage in U (from
 * sandbox_child_usage) has reached EXEC_RECORD_WARN_PERCENT of its limit. Staged, not committed.
 * Returns how many it staged. */
#define EXEC_RECORD_WARN_PERCENT 80
int exec_record_sample(struct exec_record *r, const struct sandbox_result *u,
                       const struct sandbox_profile *p);
/* Also records, first, the warnings a run too short for any sample never got (before each
 * budget_exceeded). */
void exec_record_exited(struct exec_record *r, const struct sandbox_result *res, bool timed_out,
                        const struct sandbox_profile *p);
/* Commits what is pending; -EIO (message in r->err) if the trail could not record it. */
/* The trail is writable again after degraded mode (serve_exec_opts.trail_recovered): what is
 * recorded from now on is committed again; what a failed commit lost stays lost (the trail's
 * system_degraded marks the gap). DATA: the exec_record. */
void exec_record_recovered(void *data);
int exec_record_finish(struct exec_record *r);

#endif
