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
int cgroup_attach(struct cgroup *cg, pid_t pid, struct cerr *err);
void cgroup_usage(const struct cgroup *cg, struct sandbox_result *r);
const char *cgroup_path(const struct cgroup *cg); /* relative to the hierarchy root(s) */
int cgroup_kill(struct cgroup *cg);               /* SIGKILL every process in it */
void cgroup_destroy(struct cgroup *cg);           /* kill what is left, rmdir, free; NULL ok */

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

/* net.c: bring `lo` up in the current network namespace. The request is built (libnl) in the
 * parent; the child sends it without allocating anything. */
struct net_request {
    unsigned char buf[64];
    size_t len;
};
int net_loopback_prepare(struct net_request *req, struct cerr *err);
int net_loopback_up(const struct net_request *req, struct cerr *err);

/* landlock.c: restrict writes to the given absolute paths (inside the new root) for this process
 * and its future children. Returns 0, or a negative code with err set. */
int landlock_restrict_writes(const char *const *paths, size_t n, struct cerr *err);

#endif
