/* sandbox/internal.h: what the parts of sandbox/ share with each other and nobody else. */
#ifndef CORRAL_SANDBOX_INTERNAL_H
#define CORRAL_SANDBOX_INTERNAL_H

#include "sandbox/sandbox.h"

#include <linux/filter.h>

/* cgroup.c: one cgroup per sandbox, v2 when the unified hierarchy has memory+pids+cpu,
 * else v1 (one directory per controller hierarchy). Always beneath corral's own cgroup. */
struct cgroup;
int cgroup_create(const struct sandbox_limits *l, const struct cgroup *parent, struct cgroup **out,
                  struct cerr *err);
/* cgroup v1: the `tasks` file of each hierarchy of CG, opened for writing into FDS (at most
 * CGROUP_MAX_TASK_FDS); how many, or a negative code with err set (v2, where init is born in its
 * cgroup unless its directory could not be opened: the leaf's cgroup.procs). Init moves itself
 * with them (it writes "0": itself, that is init, before its program exists). A process that
 * moves itself skips the kernel's threadgroup lock, whose writer waits for an RCU grace period
 * (up to 15-18 ms here when another process is moved); the permission is checked against the
 * opener of the file, corral. */
#define CGROUP_MAX_TASK_FDS 4
int cgroup_task_fds(const struct cgroup *cg, int *fds, struct cerr *err);
void cgroup_usage(const struct cgroup *cg, struct sandbox_result *r);
const char *cgroup_path(const struct cgroup *cg); /* relative to the hierarchy root(s) */
int cgroup_kill(struct cgroup *cg);               /* SIGKILL every process in it */
void cgroup_destroy(struct cgroup *cg);           /* kill what is left, rmdir, free; NULL ok */
/* cgroup v2: an fd of the directory the sandbox's processes live in, for CLONE_INTO_CGROUP;
 * -1 on v1 (there the pid is moved after the clone). */
int cgroup_clone_fd(const struct cgroup *cg);
/* Whether sandboxes are born in their cgroup (v2: CLONE_INTO_CGROUP), so that it must exist
 * before the clone; on v1 it is made while init builds its root. */
bool cgroup_born_in(void);

/* seccomp.c: the filter as raw BPF, built in the parent so failures are reported before clone.
 * exec_ptr: when the profile does not allow exec after start, the one execve allowed is the one
 * whose path argument is exactly this pointer (a page at a random address; see seccomp.c). */
struct seccomp_prog {
    struct sock_filter *insns; /* the main filter (libseccomp), malloc'd */
    unsigned short len;
    struct sock_filter extra[24]; /* the small second filter: ioctl and first-exec rules */
    unsigned short extra_len;
};
int seccomp_build(const struct sandbox_seccomp *s, const void *exec_ptr, struct seccomp_prog *out,
                  struct cerr *err);
void seccomp_prog_release(struct seccomp_prog *p);
/* Whether the filter S makes allows every call a sandbox's init and its program make once the
 * filter is loaded early, by init, while the sandbox is prepared (spawn.c, init_load_filter):
 * then the program inherits it and its start has no load to pay. */
bool seccomp_may_load_early(const struct sandbox_seccomp *s);

/* net.c: bring `lo` up in the current network namespace. The request is built (libnl) in the
 * parent; the child sends it without allocating anything. */
struct net_request {
    unsigned char buf[64];
    size_t len;
};
int net_loopback_prepare(struct net_request *req, struct cerr *err);
int net_loopback_up(const struct net_request *req, struct cerr *err);

/* landlock.c: a ruleset that allows writes only beneath the given absolute paths (inside the new
 * root): its fd (close-on-exec), or a negative code with err set. Made by init while a sandbox is
 * prepared, so a command's start only applies it. */
int landlock_ruleset_for_writes(const char *const *paths, size_t n, struct cerr *err);
/* Restrict this process and its future children by ruleset RS, and close RS. 0, or a negative
 * code with err set. */
int landlock_restrict_to(int rs, struct cerr *err);

/* spawn.c: the half of a start that clones init (see spawn_clone), run by the zygote or, when
 * none was started, by the caller. spawn_fds are init's ends of the caller's pipes, the
 * program's stdio (-1: inherit) and a cgroup v2 directory to be born in (-1: none). */
#define SPAWN_MAX_KEEP 256 /* fds init keeps: its pipes, stdio, and one per bind of the root */
struct spawn_fds {
    int go_rd, err_wr, status_wr, notify_wr, in, out, err, cgroup;
    int egress_wr; /* SANDBOX_NET_PROXY: where init passes its listeners; -1: none */
    bool filter_early; /* init loads the filter while prepared: seccomp_may_load_early(profile) */
};
struct spawn_cloned {
    pid_t pid;
    int pidfd;
    uint64_t exec_ptr; /* the exec page's address in init (the filter allows that execve) */
};
int spawn_clone(const struct sandbox_profile *p, const char *program, const struct spawn_fds *f,
                bool sibling, struct spawn_cloned *out, struct cerr *err);

/* What sandbox_spawn does through the parts above it, which it never names (the zygote and
 * warm.c sit on spawn.c, not beneath it): who clones (none: spawn_clone in this process), and
 * the prepared sandboxes. zygote_start sets them, zygote_stop clears them. */
struct spawn_hooks {
    int (*clone)(const struct sandbox_profile *p, const char *program, const struct spawn_fds *f,
                 struct spawn_cloned *out, struct cerr *err);
    int (*take)(const struct sandbox_profile *p, const char *program, struct sandbox_child **out);
    void *(*refill_make)(const struct sandbox_profile *p, const char *program);
    void (*refill)(void *req);
    void (*refill_drop)(void *req);
    void (*drop_children)(const struct sandbox_child *parent);
    bool (*destroy_later)(struct cgroup *cg, const struct sandbox_child *parent);
    bool (*release_later)(struct sandbox_child *c, const struct sandbox_child *parent);
};
void spawn_hooks_set(const struct spawn_hooks *h);
/* The end of a sandbox whose init reported its program's end (sandbox_child_ended): reaps init
 * (blocking until its exit is done), asks for the next sandbox of its profile, frees C. Run by
 * the background thread (warm_release_later), or by sandbox_child_free when there is none. */
void spawn_child_finish(struct sandbox_child *c);

/* warm.c: prepared sandboxes (sandbox_prepare) kept for profiles that start commands again and
 * again, so a command's start is its program's alone. warm_take hands one whose profile matches
 * (0 with *out NULL: none); warm_refill_make copies a profile at a start, and warm_refill asks
 * for the next sandbox of it in the background when that start's sandbox ends;
 * warm_drop_children ends those whose cgroup nests in PARENT's (before PARENT's goes). */
int warm_take(const struct sandbox_profile *p, const char *program, struct sandbox_child **out);
void *warm_refill_make(const struct sandbox_profile *p, const char *program); /* NULL: none wanted */
void warm_refill(void *req);                                                  /* queues it (taking it) */
void warm_refill_drop(void *req);
void warm_drop_children(const struct sandbox_child *parent);
void warm_stop(void);
/* Hands the cgroup of an ended sandbox nested in PARENT's to the background thread to remove;
 * false: remove it yourself (no thread, or no parent to order the removal against). */
bool warm_destroy_later(struct cgroup *cg, const struct sandbox_child *parent);
/* The same for a sandbox whose init is exiting on its own: spawn_child_finish in the background. */
bool warm_release_later(struct sandbox_child *c, const struct sandbox_child *parent);

#endif
