/* sandbox/zygote.h: the fork server that clones every sandbox's init (the idea of sandbox2's
 * fork server). A supervisor that will have threads starts it while it still has one thread;
 * from then on sandbox_spawn asks the zygote to clone, so a threaded process never forks for
 * sandbox set-up. The zygote is a small single-threaded process, holds no fd of the supervisor
 * but its socket, and makes init the supervisor's own child (CLONE_PARENT): waiting, signalling
 * and parent-death behave as if the supervisor had cloned it. */
#ifndef CORRAL_SANDBOX_ZYGOTE_H
#define CORRAL_SANDBOX_ZYGOTE_H

#include "sandbox/internal.h"

/* Starts the zygote. Call before the process makes any thread (refused with EBUSY otherwise:
 * a fork from a threaded process is the hazard the zygote exists to avoid). Once is enough;
 * a second call is a no-op. It ends by itself when the supervisor ends or calls zygote_stop. */
int zygote_start(struct cerr *err);
bool zygote_running(void);
/* Ends the prepared sandboxes (warm.c) and the zygote; call before exiting. */
void zygote_stop(void);
/* The same without waiting for the zygote's exit (zygote_stop reaps it): for a process that
 * will ask for no more sandboxes (a bare `corral exec` once its sandbox runs), so that the
 * zygote's exit overlaps with the program's run instead of following it. Later clones fail. */
void zygote_release(void);

/* Sends one clone request (the profile, program and F's fds over SCM_RIGHTS) and waits for
 * the answer: init's pid, pidfd and exec page. Safe from any thread (one request at a time). */
int zygote_clone(const struct sandbox_profile *p, const char *program, const struct spawn_fds *f,
                 struct spawn_cloned *out, struct cerr *err);

/* The request's body, for tests and the fuzz target: encode into a malloc'd buffer; decode
 * checks every length against the buffer (the zygote trusts its supervisor, but not blindly).
 * A decoded request points into BUF and owns the arrays in *D (zygote_decoded_free). */
struct zygote_decoded {
    struct sandbox_profile p;
    const char *program;
    char **argv;
    char **envp;
    struct sandbox_bind *binds;
    char (*fd_paths)[32];         /* "/proc/self/fd/N" of the binds that came as fds */
    struct sandbox_egress egress; /* p.egress points here with network "proxy" */
    bool filter_early;            /* the supervisor's seccomp_may_load_early of the profile */
};
/* Binds whose host is "/proc/self/fd/N" go as fd N: encode lists them in BIND_FDS (room for 8;
 * NULL: sent as paths), decode names the received ones in their place. */
int zygote_encode(const struct sandbox_profile *p, const char *program, char *const argv[],
                  unsigned char **buf, size_t *len, int *bind_fds, size_t *n_bind_fds, struct cerr *err);
int zygote_decode(const unsigned char *buf, size_t len, const int *bind_fds, size_t n_bind_fds,
                  struct zygote_decoded *d, struct cerr *err);
void zygote_decoded_free(struct zygote_decoded *d);

/* How many network "proxy" sandboxes the zygote has cloned: a proxy sandbox goes through the
 * zygote like any other (its listener spec and egress socket travel in the request), and the
 * tests hold spawn.c to that. */
unsigned long zygote_proxy_clone_count(void);

#define ZYGOTE_MAX_REQUEST (8u << 20) /* argv + environment of a command stay far below */

#endif
