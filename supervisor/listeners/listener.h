/* supervisor/listeners/listener.h: the supervisor's side of a sandbox's seccomp listener: every
 * syscall the filter denies arrives here as a user notification, is recorded as a `denial` trail
 * entry (write-ahead), then answered EPERM. A hostile flood is bounded: the first few denials of
 * each syscall are recorded one by one, the rest only counted (one aggregate entry each). */
#ifndef CORRAL_SECCOMP_NOTIFY_H
#define CORRAL_SECCOMP_NOTIFY_H

#include "common/util.h"
#include "sandbox/sandbox.h"

struct trail;
struct listener;

#define SCNOTIFY_PER_SYSCALL 16    /* denials of one syscall recorded one by one */
#define SCNOTIFY_MAX_RECORDED 1024 /* denials of a run recorded one by one, all syscalls together */

struct listener_opts {
    struct trail *trail;                   /* NULL: answer only */
    const char *workspace;                 /* the run's workspace id in the trail */
    const struct sandbox_seccomp *profile; /* to name the rule that refused (borrowed) */
    unsigned per_syscall;                  /* 0: SCNOTIFY_PER_SYSCALL */
    unsigned max_recorded;                 /* 0: SCNOTIFY_MAX_RECORDED */
};

/* Takes LISTENER (closed on failure too). *out is owned by the caller (listener_free). */
int listener_new(int listener, const struct listener_opts *o, struct listener **out, struct cerr *err);
/* The listener, to watch for POLLIN (a denial waits) and POLLHUP (no filtered process left). */
int listener_fd(const struct listener *n);

/* Answers what is waiting now, at most MAX notifications, never blocking: stages an entry for
 * each of the first per_syscall denials of a syscall, commits them, then answers those; the
 * others are counted and answered at once. Returns the number handled, or -EIO (err set) if the
 * trail could not commit (the calls are still refused). *hup (may be NULL) is set once no
 * filtered process is left: stop watching then. */
int listener_handle(struct listener *n, unsigned max, bool *hup, struct cerr *err);

/* Stages one aggregate `denial` entry for each syscall denied more often than it was recorded
 * one by one (the caller commits). Call once, after the sandbox has ended. */
void listener_finish(struct listener *n);

/* Denials seen in all (recorded or counted). */
uint64_t listener_total(const struct listener *n);

/* Closes the listener (a filtered process still waiting then gets ENOSYS). NULL is a no-op. */
void listener_free(struct listener *n);

#endif
