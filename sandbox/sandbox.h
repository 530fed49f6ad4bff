/* sandbox/sandbox.h: run one program in fresh namespaces (user, mount, pid, ipc, uts, net,
 * cgroup), a minimal read-only root, its own cgroup with budgets, a seccomp filter, landlock,
 * and no capabilities. This module knows nothing of WACP, JSON or policy files: callers fill a
 * struct sandbox_profile (policy/ derives one from a role) and get back a running child.
 *
 * Process shape: the caller -> "init" (pid 1 of the sandbox: sets everything up, then reaps and
 * forwards signals) -> the program (pid 2). Killing init with SIGKILL ends every process of the
 * sandbox (the kernel kills a pid namespace with its init). */
#ifndef CORRAL_SANDBOX_H
#define CORRAL_SANDBOX_H

#include "common/util.h"
#include "sandbox/egress_sockets.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum sandbox_net {
    SANDBOX_NET_NONE = 0, /* new network namespace, nothing up */
    SANDBOX_NET_LOOPBACK, /* new network namespace, only `lo` up (configured with libnl) */
    SANDBOX_NET_PROXY,    /* as loopback, plus the egress listeners of profile.egress made by
                           * init on `lo` for the supervisor (sandbox/egress_sockets.h) */
};

struct sandbox_bind {
    const char *host;   /* absolute host path (must exist unless optional) */
    const char *inside; /* absolute path inside the sandbox; NULL: same as host */
    bool writable;      /* read-write bind; otherwise read-only */
    bool optional;      /* silently skipped when the host path does not exist */
};

/* Syscall groups in the spirit of systemd's @system-service. A profile allows a set of groups;
 * the always-denied list (sandbox_seccomp_always_denied) is never allowed, whatever the groups. */
enum sandbox_sc_group {
    SANDBOX_SC_BASIC_IO = 1u << 0,   /* read, write, close, lseek, dup, pipe, ... */
    SANDBOX_SC_FILE_READ = 1u << 1,  /* open for reading, stat family, readlink, getdents, ... */
    SANDBOX_SC_FILE_WRITE = 1u << 2, /* create, unlink, rename, mkdir, chmod, truncate, ... */
    SANDBOX_SC_PROCESS = 1u << 3,    /* fork/clone (no namespace flags), wait, exit, kill own */
    SANDBOX_SC_EXEC = 1u << 4,       /* execve/execveat after the program has started */
    SANDBOX_SC_SIGNAL = 1u << 5,
    SANDBOX_SC_TIMER = 1u << 6,        /* clocks, nanosleep, timerfd, alarm */
    SANDBOX_SC_MEMORY = 1u << 7,       /* mmap family, brk, madvise, mprotect */
    SANDBOX_SC_IPC = 1u << 8,          /* SysV / POSIX ipc, futex, eventfd, memfd */
    SANDBOX_SC_IO_EVENT = 1u << 9,     /* poll, select, epoll */
    SANDBOX_SC_NETWORK_IO = 1u << 10,  /* socket calls; families still filtered by `network` */
    SANDBOX_SC_SYSTEM_INFO = 1u << 11, /* uname, sysinfo, getrandom, getcpu, ... */
    SANDBOX_SC_CREDENTIALS = 1u << 12, /* get*id, set*id (no effect without capabilities), capget */
    SANDBOX_SC_RESOURCES = 1u << 13,   /* getrlimit, prlimit (own), sched_* */
};
#define SANDBOX_SC_DEFAULT_GROUPS                                                                    \
    (SANDBOX_SC_BASIC_IO | SANDBOX_SC_FILE_READ | SANDBOX_SC_FILE_WRITE | SANDBOX_SC_PROCESS |       \
     SANDBOX_SC_EXEC | SANDBOX_SC_SIGNAL | SANDBOX_SC_TIMER | SANDBOX_SC_MEMORY | SANDBOX_SC_IPC |   \
     SANDBOX_SC_IO_EVENT | SANDBOX_SC_NETWORK_IO | SANDBOX_SC_SYSTEM_INFO | SANDBOX_SC_CREDENTIALS | \
     SANDBOX_SC_RESOURCES)

struct sandbox_seccomp {
    uint32_t groups;          /* SANDBOX_SC_* allowed */
    const char *const *allow; /* extra syscall names to allow (never an always-denied one) */
    size_t n_allow;
    const char *const *deny; /* syscall names to deny although a group allows them */
    size_t n_deny;
    bool network; /* AF_INET/AF_INET6 sockets; otherwise AF_UNIX only */
    bool notify;  /* denials go to a listener (SECCOMP_RET_USER_NOTIF) that the
                                   * caller answers, so each can be recorded; otherwise the filter
                                   * answers EPERM itself. See sandbox_child_take_notify_fd. */
};

struct sandbox_limits {
    uint64_t memory;   /* bytes; 0: no cgroup memory limit */
    uint64_t pids;     /* 0: no limit */
    double cpus;       /* CPUs' worth of time (0.5 = half of one); 0: no limit */
    uint64_t tmp_size; /* bytes of the private /tmp tmpfs */
    uint64_t nofile;   /* RLIMIT_NOFILE; 0: inherit */
    uint64_t fsize;    /* RLIMIT_FSIZE; 0: inherit */
};

struct sandbox_child;

struct sandbox_profile {
    enum sandbox_net net;
    const struct sandbox_bind *binds; /* beyond the minimal root (usr, lib*, etc files) */
    size_t n_binds;
    struct sandbox_limits limits;
    struct sandbox_seccomp seccomp;
    bool landlock;  /* writes only beneath writable binds, /tmp and /dev/{null,zero,full} */
    bool no_cgroup; /* run without a cgroup of its own (budgets then refused) */
    uid_t uid, gid; /* ids inside */
    uid_t host_uid; /* the unprivileged host ids they map to */
    gid_t host_gid;
    const char *hostname;
    const char *cwd;                           /* inside; NULL: "/" */
    char *const *envp;                         /* the program's whole environment; NULL: a minimal one */
    const struct sandbox_child *cgroup_parent; /* nest this sandbox's cgroup in that child's */
    const struct sandbox_egress *egress;       /* SANDBOX_NET_PROXY: the listeners to make */
    bool prepare_next; /* after a start, prepare the next sandbox of this profile in the
                               * background (sandbox/warm.c; commands nested in an agent always
                               * are): for profiles started again and again, like a run's workers */
};

/* The minimal environment a sandboxed program gets when the caller gives none (NULL-ended):
 * PATH, HOME=/tmp, LANG=C.UTF-8, USER/LOGNAME=agent, TMPDIR=/tmp. Callers that add variables
 * start from this list. */
extern const char *const sandbox_default_env[];

/* The safe defaults (docs/sandbox.md): no network, default groups, landlock on, uid/gid
 * 1000 inside mapped to 65534 (nobody) outside, 256 MiB memory, 256 pids, 64 MiB /tmp. */
void sandbox_profile_default(struct sandbox_profile *p);

struct sandbox_stdio {
    int in, out, err; /* become 0, 1, 2 of the program; -1: inherit the caller's */
};

struct sandbox_result {
    bool exited; /* true: exit_code is valid; false: signal is */
    int exit_code;
    int signal;
    bool exec_failed; /* the program could not be executed; exec_errno says why */
    int exec_errno;
    bool oom;              /* the memory budget was hit and the kernel killed in the group */
    bool pids_limited;     /* a fork was refused by the pids budget */
    uint64_t memory_peak;  /* bytes */
    uint64_t pids_current; /* processes in the group now (sandbox_child_usage) */
    uint64_t cpu_usec;     /* user + system of the whole group */
    double wall_sec;
};

/* Starts PROGRAM (an absolute host path, made visible read-only at the same path) with ARGV in a
 * new sandbox. Returns once the program has been exec'd, or with a negative code and a message in
 * err when any part of the set-up failed: it never runs the program with less isolation than the
 * profile asks. On success *out is owned by the caller (sandbox_child_free). */
int sandbox_spawn(const struct sandbox_profile *p, const char *program, char *const argv[],
                  const struct sandbox_stdio *stdio, struct sandbox_child **out, struct cerr *err);

/* sandbox_spawn in two steps, for starts that must be fast: sandbox_prepare does everything
 * that makes the sandbox (cgroup, namespaces, root, id maps, filter, privileges dropped) and
 * leaves init waiting; sandbox_start gives it the program's argv, environment (NULL: the
 * default), directory (NULL: "/") and stdio, and returns once the program is exec'd or with
 * the reason it was not (a set-up failure of a prepared sandbox shows here). sandbox_spawn is
 * exactly prepare + start, taking a prepared sandbox of the same profile when one is ready
 * (sandbox/warm.c). The profile's envp and cwd do not count for sandbox_prepare. */
int sandbox_prepare(const struct sandbox_profile *p, const char *program, struct sandbox_child **out,
                    struct cerr *err);
int sandbox_start(struct sandbox_child *c, char *const argv[], char *const envp[], const char *cwd,
                  const struct sandbox_stdio *stdio, struct cerr *err);

/* A pidfd of init: becomes readable when the sandbox has ended (for poll/epoll). Owned by child. */
int sandbox_child_pidfd(const struct sandbox_child *c);
pid_t sandbox_child_pid(const struct sandbox_child *c);
/* The cgroup path (v2 relative path, or v1 relative path common to all controllers). */
const char *sandbox_child_cgroup(const struct sandbox_child *c);

/* With profile->seccomp.notify: the seccomp listener (user notifications of every denied
 * syscall of the program and its descendants), handed over to the caller, who must answer each
 * (SECCOMP_IOCTL_NOTIF_SEND) and close it. -1 if there is none or it was taken already. The
 * program itself never holds it: it is made in the program just before its execve, carried out
 * by init (see spawn.c) and closed in the sandbox. */
int sandbox_child_take_notify_fd(struct sandbox_child *c);

/* With SANDBOX_NET_PROXY: the egress listeners (sandbox_egress_count of them, in the order of
 * sandbox/egress_sockets.h) into fds, handed over to the caller. -ENOENT if none or taken. */
int sandbox_child_take_egress_fds(struct sandbox_child *c, int *fds, size_t n);

/* Where to poll for the end of a started sandbox: init's control socket until init reports that
 * the program ended (init has killed and reaped every other process of the sandbox by then), its
 * pidfd once init died without a report. Ask again after each sandbox_child_ended that said no. */
int sandbox_child_end_fd(const struct sandbox_child *c);
/* Whether the sandbox has ended; takes init's report when there is one. Never blocks. After a
 * yes, sandbox_child_wait(_status) returns at once: init's own exit (its namespaces' teardown)
 * is left to sandbox_child_free, which hands it to the background when a zygote runs. */
bool sandbox_child_ended(struct sandbox_child *c);

/* SIGKILL: the whole sandbox at once. Any other signal: forwarded by init to every process. */
int sandbox_child_signal(struct sandbox_child *c, int sig);

/* Waits for init to end (blocks unless the pidfd is readable), collects the program's status and
 * the cgroup's usage, and removes the cgroup. Call once. */
int sandbox_child_wait(struct sandbox_child *c, struct sandbox_result *r, struct cerr *err);

/* sandbox_child_wait without the usage: R's exit fields and wall_sec only (memory, cpu, pids,
 * oom stay 0). For a caller that reports the exit status alone (a tool's command), which saves
 * the cgroup files' reads (five on cgroup v1, 0.1-0.3 ms here) on the path of its answer. */
int sandbox_child_wait_status(struct sandbox_child *c, struct sandbox_result *r, struct cerr *err);

/* Reads current usage without waiting (memory peak, pids now, cpu, wall). */
int sandbox_child_usage(const struct sandbox_child *c, struct sandbox_result *r);

/* Kills what is left, removes the cgroup, frees. NULL is a no-op. */
void sandbox_child_free(struct sandbox_child *c);

/* seccomp helpers for policy validation and tests. */
int sandbox_seccomp_group_by_name(const char *name, uint32_t *bit); /* "@file-read" -> bit */
const char *sandbox_seccomp_group_name(uint32_t bit);
bool sandbox_seccomp_syscall_known(const char *name); /* on this architecture */
bool sandbox_seccomp_always_denied(const char *name);
/* What refused a syscall that reached a notify filter's default action, in a few words, for a
 * denial record: "always denied", "denied by the profile's deny list", "a foreign system call
 * ABI", "argument not allowed (...)", "not in the profile's groups". */
const char *sandbox_seccomp_denial_rule(const struct sandbox_seccomp *s, uint32_t arch, int nr);
/* The syscall's name for ARCH (an AUDIT_ARCH_* value, as struct seccomp_data carries) into buf;
 * "unknown" when there is none. And the architecture's name ("x86_64", "x86", "x32", "arch-0x..."). */
void sandbox_seccomp_syscall_name(uint32_t arch, int nr, char *buf, size_t size);
const char *sandbox_seccomp_arch_name(uint32_t arch, int nr, char *buf, size_t size);
/* Builds the filter (libseccomp context) for a profile and writes its BPF to fd: for tests/debug. */
int sandbox_seccomp_export(const struct sandbox_seccomp *s, int fd, struct cerr *err);

/* Resolves PROGRAM like a shell would (PATH search when it has no '/'): absolute result in
 * *out (malloc'd). -ENOENT when not found, -EACCES when found but not executable. */
int sandbox_find_program(const char *program, char **out);

/* Landlock ABI version of the running kernel, or a negative errno when unsupported. */
int sandbox_landlock_abi(void);

#endif
