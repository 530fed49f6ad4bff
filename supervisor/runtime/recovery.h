/* supervisor/runtime/recovery.h: what the trail says about the last `corral run` recorded in it,
 * read forward (WACP recovery spec section 6: a single scan, of the entries that matter): whether that run ended,
 * where its run directory is, and each workspace's last recorded lifecycle state (section 3.2).
 * `corral run` uses it to refuse starting a new run on top of one whose supervisor died. */
#ifndef CORRAL_RECOVERY_H
#define CORRAL_RECOVERY_H

#include "common/util.h"
#include "supervisor/trail/trail.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct recovery_scan {
    bool found;           /* the trail records a `corral run` */
    bool unfinished;      /* ... whose root workspace was created and never reached closed or failed */
    uint64_t started_seq; /* its supervisor_started entry */
    pid_t pid;            /* the supervisor that recorded it */
    char policy[PATH_MAX]; /* the policy file it was started with, as given then */
    char run_dir[PATH_MAX];
    char workspace[PATH_MAX];
    char root[64]; /* the root workspace's id ("" if the run died before creating it) */
    size_t n_ws;   /* workspaces the run created */
    size_t n_live; /* ... not terminal (closed or failed) in the trail */
    unsigned resumes; /* times `corral run --resume` took it over already */
    /* With a policy given to the scan: the first live workspace the policy cannot start again
     * (its role or its agent is not in it), and what it lacks ("" when none). */
    char unfit_ws[64], unfit_what[160];
};

struct policy;
/* Scans the trail at PATH (POLICY, when not NULL: checked for every live workspace's role and
 * agent, unfit_* above). A missing file is no run (0, found false). < 0 with err set when the
 * trail cannot be read. */
int recovery_scan_file(const char *path, const struct policy *policy, struct recovery_scan *out,
                       struct cerr *err);

/* Whether the supervisor that recorded the scanned run still runs (a live run, not a dead one):
 * it holds its run directory's flock (rundir_locked), or its recorded pid runs corral and is
 * neither this process nor a child of it (a resume in a new pid namespace, a container started
 * again, is pid 1 like the run it resumes). */
bool recovery_supervisor_alive(const struct recovery_scan *s);

/* Damaged entries (trail_verify_damage) the resume leaves out, as the trail recorded them (their
 * type, id and workspace are among what cannot be trusted: named for the operator, not used). */
struct recovery_quarantine {
    size_t n;
    struct recovery_quarantined {
        uint64_t seq;
        char id[64], type[64], workspace[64];
    } e[TRAIL_DAMAGED_MAX];
};

/* Whether the damaged entries D of the trail at PATH can be quarantined for the run whose
 * supervisor_started is entry STARTED_SEQ (recovery spec 3.1, "non-critical corruption"): each
 * is recorded as a type the rebuilt model does not need (a tool call, an agent's log line, a
 * warning...), and the run's workspaces' state changes still chain, each from the state the one
 * before it reached, without them. 0 with Q filled; 1 with WHY (naming the entry) when not; < 0
 * with ERR when the trail cannot be read. */
int recovery_quarantine_check(const char *path, uint64_t started_seq, const struct trail_damage *d,
                              struct recovery_quarantine *q, char *why, size_t len, struct cerr *err);

struct wacp;
/* Feeds every entry of the trail at PATH after AFTER_SEQ (the run's supervisor_started) into W
 * (wacp_restore_entry), but those in Q (NULL: none), which are left out
 * (wacp_restore_quarantined): the dead run's model, rebuilt; then whatever still runs in the agent
 * cgroups the dead run recorded is killed and waited for (5 s at most). EXAMINED: entries read;
 * LAST_US: the time of the last one. < 0 with ERR set. */
int recovery_replay(const char *path, uint64_t after_seq, const struct recovery_quarantine *q,
                    struct wacp *w, uint64_t *examined, int64_t *last_us, struct cerr *err);

#endif
