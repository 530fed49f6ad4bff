/* sandbox/seccomp.c: the syscall filter, built with libseccomp from a set of groups (in the
 * spirit of systemd's @system-service) plus the always-denied list no profile can lift.
 * Default deny: anything not allowed answers EPERM and the program keeps running, so it can
 * report the denial. With a trail (sandbox_seccomp.notify) the default action is a user
 * notification instead: the supervisor records the denial, then answers EPERM (the program sees
 * the same thing). The filter is exported to raw BPF in the parent and loaded by init at the end of
 * its set-up when the profile allows what init does after that (seccomp_may_load_early), else by
 * the program right before its execve. */
#include "sandbox/internal.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sodium.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <termios.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

struct sc_group {
    uint32_t bit;
    const char *name;
    const char *const *calls;
};

#define CALLS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* clone, socket, ioctl, open/openat and the calls that set a file mode (chmod family, mkdir,
 * mknod, creat) carry argument conditions and are handled in build_ctx, not listed here. */
static const struct sc_group groups[] = {
    {SANDBOX_SC_BASIC_IO, "@basic-io",
     CALLS("read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
           "pwritev2", "close", "close_range", "lseek", "dup", "dup2", "dup3", "pipe", "pipe2", "fcntl",
           "sendfile", "splice", "tee", "vmsplice", "copy_file_range", "fsync", "fdatasync",
           "sync_file_range", "flock", "readahead", "fadvise64")},
    {SANDBOX_SC_FILE_READ, "@file-read",
     CALLS("stat", "fstat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2",
           "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "statfs",
           "fstatfs", "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
           "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "umask")},
    {SANDBOX_SC_FILE_WRITE, "@file-write",
     CALLS("rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
           "symlinkat", "chown", "fchown", "lchown", "fchownat", "truncate", "ftruncate", "fallocate",
           "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr",
           "removexattr", "lremovexattr", "fremovexattr", "sync", "syncfs")},
    {SANDBOX_SC_PROCESS, "@process",
     CALLS("fork", "vfork", "exit", "exit_group", "wait4", "waitid", "set_tid_address",
           "set_robust_list", "get_robust_list", "rseq", "arch_prctl", "getpid", "getppid", "gettid",
           "getpgid", "setpgid", "getpgrp", "getsid", "setsid", "pidfd_open", "pidfd_send_signal",
           "sched_yield", "seccomp", "prctl", "landlock_create_ruleset", "landlock_add_rule",
           "landlock_restrict_self")},
    {SANDBOX_SC_EXEC, "@exec", CALLS("execve", "execveat")},
    {SANDBOX_SC_SIGNAL, "@signal",
     CALLS("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigpending",
           "rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "kill", "tkill", "tgkill",
           "sigaltstack", "signalfd", "signalfd4", "pause", "restart_syscall")},
    {SANDBOX_SC_TIMER, "@timer",
     CALLS("nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time",
           "alarm", "getitimer", "setitimer", "timer_create", "timer_settime", "timer_gettime",
           "timer_getoverrun", "timer_delete", "timerfd_create", "timerfd_settime", "timerfd_gettime",
           "times")},
    {SANDBOX_SC_MEMORY, "@memory",
     CALLS("brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "membarrier",
           "pkey_mprotect", "pkey_alloc", "pkey_free", "get_mempolicy", "mlock", "mlock2", "munlock",
           "mlockall", "munlockall")},
    {SANDBOX_SC_IPC, "@ipc",
     CALLS("futex", "futex_waitv", "eventfd", "eventfd2", "memfd_create", "shmget", "shmat", "shmdt",
           "shmctl", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd", "msgrcv", "msgctl",
           "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr")},
    {SANDBOX_SC_IO_EVENT, "@io-event",
     CALLS("poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
           "epoll_wait", "epoll_pwait", "epoll_pwait2")},
    {SANDBOX_SC_NETWORK_IO, "@network-io",
     CALLS("socketpair", "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername",
           "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown", "setsockopt",
           "getsockopt")},
    {SANDBOX_SC_SYSTEM_INFO, "@system-info", CALLS("uname", "sysinfo", "getrandom", "getcpu")},
    {SANDBOX_SC_CREDENTIALS, "@credentials",
     CALLS("getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "capget",
           "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid",
           "setfsgid")},
    {SANDBOX_SC_RESOURCES, "@resources",
     CALLS("getrlimit", "setrlimit", "prlimit64", "getrusage", "sched_getaffinity", "sched_setaffinity",
           "sched_getparam", "sched_getscheduler", "sched_get_priority_max", "sched_get_priority_min",
           "sched_rr_get_interval", "getpriority", "setpriority", "ioprio_get")},
};

/* Never allowed, whatever the profile: escapes from the namespaces, the kernel's attack
 * surface that an agent has no use for, and other processes' memory. */
static const char *const always_denied[] = {
    "unshare",
    "setns",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "open_tree_attr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "process_mrelease",
    "pidfd_getfd",
    "kcmp",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "quotactl_fd",
    "iopl",
    "ioperm",
    "personality",
    "uselib",
    "vm86",
    "vm86old",
    "nfsservctl",
    "_sysctl",
    "sysfs",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "syslog",
    "sethostname",
    "setdomainname",
    "fanotify_init",
    "lookup_dcookie",
    "modify_ldt",
    "mbind",
    "set_mempolicy",
    "set_mempolicy_home_node",
    "migrate_pages",
    "move_pages",
    "vhangup",
    "clone3",
    "lsm_set_self_attr",
};

#define CLONE_NS_FLAGS                                                                     \
    ((uint64_t)(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | \
                CLONE_NEWNET | CLONE_NEWCGROUP))

int sandbox_seccomp_group_by_name(const char *name, uint32_t *bit)
{
    for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
        if (!strcmp(groups[i].name, name)) {
            *bit = groups[i].bit;
            return 0;
        }
    return -ENOENT;
}

const char *sandbox_seccomp_group_name(uint32_t bit)
{
    for (size_t i = 0; i < ARRAY_SIZE(groups); i++)
        if (groups[i].bit == bit)
            return groups[i].name;
    return NULL;
}

bool sandbox_seccomp_syscall_known(const char *name)
{
    return seccomp_syscall_resolve_name(name) != __NR_SCMP_ERROR;
}

bool sandbox_seccomp_always_denied(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(always_denied); i++)
        if (!strcmp(always_denied[i], name))
            return true;
    return false;
}

static bool listed(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] && !strcmp(list[i], name))
            return true;
    return false;
}

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

const char *sandbox_seccomp_arch_name(uint32_t arch, int nr, char *buf, size_t size)
{
    if (arch == AUDIT_ARCH_X86_64)
        return (nr & __X32_SYSCALL_BIT) ? "x32" : "x86_64";
    if (arch == AUDIT_ARCH_I386)
        return "x86";
    snprintf(buf, size, "arch-0x%08x", (unsigned)arch);
    return buf;
}

void sandbox_seccomp_syscall_name(uint32_t arch, int nr, char *buf, size_t size)
{
    uint32_t token = arch;
    if (arch == AUDIT_ARCH_X86_64 && (nr & __X32_SYSCALL_BIT))
        token = SCMP_ARCH_X32;
    char *name = seccomp_syscall_resolve_num_arch(token, nr);
    snprintf(buf, size, "%s", name ? name : "unknown");
    free(name);
}

/* Calls whose allow rule carries an argument condition (see build_ctx), with the group that
 * allows them and what the condition refuses. */
static const struct {
    const char *name;
    uint32_t group;
    const char *what;
} conditional[] = {
    {"clone", SANDBOX_SC_PROCESS, "argument not allowed (namespace flags)"},
    {"socket", SANDBOX_SC_NETWORK_IO, "argument not allowed (socket address family)"},
    {"open", SANDBOX_SC_FILE_READ, "argument not allowed (open flags or a setuid/setgid mode)"},
    {"openat", SANDBOX_SC_FILE_READ, "argument not allowed (open flags or a setuid/setgid mode)"},
    {"chmod", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"fchmod", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"fchmodat", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"fchmodat2", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"mkdir", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"mkdirat", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"mknod", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"mknodat", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
    {"creat", SANDBOX_SC_FILE_WRITE, "argument not allowed (setuid/setgid mode)"},
};

const char *sandbox_seccomp_denial_rule(const struct sandbox_seccomp *s, uint32_t arch, int nr)
{
    if (arch != AUDIT_ARCH_X86_64 || (nr & __X32_SYSCALL_BIT))
        return "a foreign system call ABI";
    char name[64];
    sandbox_seccomp_syscall_name(arch, nr, name, sizeof(name));
    if (!strcmp(name, "unknown"))
        return "unknown system call number";
    if (sandbox_seccomp_always_denied(name))
        return "always denied";
    if (listed(name, s->deny, s->n_deny))
        return "denied by the profile's deny list";
    /* The second filter's rules (build_extra), merged into the notifying filter. */
    if (!strcmp(name, "ioctl") && (s->groups & SANDBOX_SC_BASIC_IO))
        return "argument not allowed (ioctl TIOCSTI or TIOCLINUX)";
    if ((!strcmp(name, "execve") || !strcmp(name, "execveat")) && !(s->groups & SANDBOX_SC_EXEC))
        return "no exec authority (execve after the program's start)";
    for (size_t i = 0; i < ARRAY_SIZE(conditional); i++)
        if (!strcmp(conditional[i].name, name) && (s->groups & conditional[i].group))
            return conditional[i].what;
    return "not in the profile's groups";
}

/* Adds one rule; a syscall this architecture lacks is skipped (libseccomp says -EDOM/-EFAULT). */
static int add(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
               const struct scmp_arg_cmp *cmp, struct cerr *err)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0;
    int r = seccomp_rule_add_array(ctx, action, nr, n, cmp);
    if (r < 0 && r != -EEXIST)
        return cerr_set(err, r, "seccomp: cannot add a rule for %s: %s", name, strerror(-r));
    return 0;
}

static bool allowed(const struct sandbox_seccomp *s, const char *name)
{
    return !sandbox_seccomp_always_denied(name) && !listed(name, s->deny, s->n_deny);
}

/* allow_first_exec: the main filter lets execve through and the small second filter (see
 * build_extra) narrows it to the program's own start; without it, a profile lacking @exec
 * denies execve outright, which is what a policy reviewer sees in sandbox_seccomp_export. */
static int build_ctx(const struct sandbox_seccomp *s, bool allow_first_exec, scmp_filter_ctx *out,
                     struct cerr *err)
{
    const uint32_t deny = s->notify ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM);
    scmp_filter_ctx ctx = seccomp_init(deny);
    if (!ctx)
        return cerr_set(err, ENOMEM, "seccomp: cannot create a filter context");
    int r;
    /* A syscall from another ABI (i386 via int 0x80, x32) is refused like any other denial. */
    /* A binary tree of the syscall numbers (libseccomp's optimize level 2) rather than one
     * compare after another: the same answers, found in about 10 jumps instead of up to 300.
     * It is the kernel's cost at each load (every command sandbox loads its filter): when a
     * filter is attached the kernel runs it once per syscall number to find those it always
     * allows (the seccomp action cache), which took about 290 us for our 300-instruction list,
     * on the path of every command. Every syscall a program makes that the cache does not
     * answer is also shorter to decide. */
    if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny)) < 0 ||
        (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0 ||
        (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)) < 0) {
        seccomp_release(ctx);
        return cerr_set(err, r, "seccomp: cannot set filter attributes: %s", strerror(-r));
    }

    for (size_t g = 0; g < ARRAY_SIZE(groups); g++) {
        if (!(s->groups & groups[g].bit))
            continue;
        for (const char *const *c = groups[g].calls; *c; c++)
            if (allowed(s, *c) && (r = add(ctx, SCMP_ACT_ALLOW, *c, 0, NULL, err)) < 0)
                goto fail;
    }
    for (size_t i = 0; i < s->n_allow; i++) {
        if (sandbox_seccomp_always_denied(s->allow[i])) {
            r = cerr_set(err, EPERM, "seccomp: '%s' is always denied and cannot be allowed",
                         s->allow[i]);
            goto fail;
        }
        if (allowed(s, s->allow[i]) && (r = add(ctx, SCMP_ACT_ALLOW, s->allow[i], 0, NULL, err)) < 0)
            goto fail;
    }

    if (s->groups & SANDBOX_SC_PROCESS && allowed(s, "clone")) {
        /* fork and threads, never a new namespace. */
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NS_FLAGS, 0);
        if ((r = add(ctx, SCMP_ACT_ALLOW, "clone", 1, &c, err)) < 0)
            goto fail;
    }
    /* clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to
     * clone, whose flags we can check. */
    if ((r = add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err)) < 0)
        goto fail;

    if (!(s->groups & SANDBOX_SC_EXEC) && allow_first_exec && allowed(s, "execve") &&
        (r = add(ctx, SCMP_ACT_ALLOW, "execve", 0, NULL, err)) < 0)
        goto fail;

    if (s->groups & SANDBOX_SC_FILE_WRITE) {
        /* No setuid or setgid bit, ever: through an id-mapped writable bind a file the program
         * creates belongs on the host to the directory's owner (root, say), and nosuid guards
         * only the sandbox's own view of it. Each call is allowed with the mode argument free of
         * those bits; anything else is denied. */
        static const struct {
            const char *name;
            unsigned arg;
        } mode_calls[] = {
            {"chmod", 1},   {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"mkdir", 1},
            {"mkdirat", 2}, {"mknod", 1},  {"mknodat", 2},  {"creat", 1},
        };
        for (size_t i = 0; i < ARRAY_SIZE(mode_calls); i++) {
            struct scmp_arg_cmp c = {mode_calls[i].arg, SCMP_CMP_MASKED_EQ, S_ISUID | S_ISGID, 0};
            if (allowed(s, mode_calls[i].name) &&
                (r = add(ctx, SCMP_ACT_ALLOW, mode_calls[i].name, 1, &c, err)) < 0)
                goto fail;
        }
    }

    if (s->groups & SANDBOX_SC_FILE_READ) {
        if (s->groups & SANDBOX_SC_FILE_WRITE) {
            /* The mode of a created file: no setuid or setgid bit (see above). */
            struct scmp_arg_cmp m1 = SCMP_A2(SCMP_CMP_MASKED_EQ, S_ISUID | S_ISGID, 0);
            struct scmp_arg_cmp m2 = SCMP_A3(SCMP_CMP_MASKED_EQ, S_ISUID | S_ISGID, 0);
            if ((r = add(ctx, SCMP_ACT_ALLOW, "open", 1, &m1, err)) < 0 ||
                (r = add(ctx, SCMP_ACT_ALLOW, "openat", 1, &m2, err)) < 0)
                goto fail;
        } else {
            /* Read-only opens only: no write access mode, no O_CREAT, no O_TRUNC. */
            uint64_t mask = O_ACCMODE | O_CREAT | O_TRUNC;
            struct scmp_arg_cmp c1 = SCMP_A1(SCMP_CMP_MASKED_EQ, mask, O_RDONLY);
            struct scmp_arg_cmp c2 = SCMP_A2(SCMP_CMP_MASKED_EQ, mask, O_RDONLY);
            if ((r = add(ctx, SCMP_ACT_ALLOW, "open", 1, &c1, err)) < 0 ||
                (r = add(ctx, SCMP_ACT_ALLOW, "openat", 1, &c2, err)) < 0)
                goto fail;
        }
        /* openat2 keeps its flags in memory: ENOSYS makes libc fall back to openat. */
        if ((r = add(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2", 0, NULL, err)) < 0)
            goto fail;
    }

    if (s->groups & SANDBOX_SC_BASIC_IO && allowed(s, "ioctl")) {
        /* TIOCSTI and TIOCLINUX are refused by the second filter (build_extra):
         * libseccomp cannot combine this allow with a masked deny on the same syscall. */
        if ((r = add(ctx, SCMP_ACT_ALLOW, "ioctl", 0, NULL, err)) < 0)
            goto fail;
    }

    if (s->groups & SANDBOX_SC_NETWORK_IO && allowed(s, "socket")) {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, AF_UNIX);
        if ((r = add(ctx, SCMP_ACT_ALLOW, "socket", 1, &c, err)) < 0)
            goto fail;
        if (s->network) {
            struct scmp_arg_cmp c4 = SCMP_A0(SCMP_CMP_EQ, AF_INET);
            struct scmp_arg_cmp c6 = SCMP_A0(SCMP_CMP_EQ, AF_INET6);
            if ((r = add(ctx, SCMP_ACT_ALLOW, "socket", 1, &c4, err)) < 0 ||
                (r = add(ctx, SCMP_ACT_ALLOW, "socket", 1, &c6, err)) < 0)
                goto fail;
        }
        /* Everything else (AF_VSOCK, AF_NETLINK, AF_PACKET, ...) falls to the default: EPERM. */
    }
    *out = ctx;
    return 0;
fail:
    seccomp_release(ctx);
    return r;
}

int sandbox_seccomp_export(const struct sandbox_seccomp *s, int fd, struct cerr *err)
{
    scmp_filter_ctx ctx;
    int r = build_ctx(s, false, &ctx, err);
    if (r < 0)
        return r;
    r = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    if (r < 0)
        return cerr_set(err, r, "seccomp: cannot export the filter: %s", strerror(-r));
    return 0;
}

/* What init and the program call once init has loaded the filter: init waits for the start
 * message (recvmsg, mmap, read), starts the program (rt_sigprocmask, clone for vfork, whose
 * flags the clone rule allows), passes a notifying filter's listener (sendmsg), makes its fd table
 * final (dup, dup2, close_range), forwards signals (rt_sigaction, kill, rt_sigreturn), waits
 * (wait4, restart_syscall) and reports (write); the program sets itself up (setsid, dup2,
 * close_range, chdir, landlock_restrict_self) and calls execve, which the filter allows on its
 * own terms (the first exec). A profile that denies any of them has the program load the
 * filter itself, right before its execve, as the only call after the load. */
static const char *const early_calls[] = {
    "read",         "write",        "close",        "close_range", "dup",         "dup2",
    "chdir",        "exit",         "exit_group",   "wait4",       "setsid",      "clone",
    "landlock_restrict_self",       "rt_sigprocmask", "rt_sigaction", "rt_sigreturn", "kill",
    "restart_syscall", "mmap",      "recvmsg",      "sendmsg",      "sched_yield",
};

bool seccomp_may_load_early(const struct sandbox_seccomp *s)
{
    const uint32_t need = SANDBOX_SC_BASIC_IO | SANDBOX_SC_FILE_READ | SANDBOX_SC_PROCESS |
                          SANDBOX_SC_SIGNAL | SANDBOX_SC_MEMORY | SANDBOX_SC_NETWORK_IO;
    if ((s->groups & need) != need)
        return false;
    for (size_t i = 0; i < ARRAY_SIZE(early_calls); i++)
        if (!allowed(s, early_calls[i]))
            return false;
    return true;
}

/* ---- the exported filter, cached ----
 * Building with libseccomp costs ~2 ms in a fresh process, most of a sandbox's start. The BPF
 * depends only on the seccomp profile, libseccomp's version and this file's rules, so it is
 * cached under a root-only directory, keyed by a BLAKE2b hash of exactly those inputs. */
#define CACHE_DIR "/run/corral/seccomp"
#define FILTER_FORMAT "corral-seccomp-7" /* bump when the rules above or their layout change */

static void cache_key(const struct sandbox_seccomp *s, bool first_exec, char hex[65])
{
    crypto_generichash_state st;
    unsigned char h[32];
    const struct scmp_version *v = seccomp_version();
    char buf[128];
    /* The default action (errno or notify) is part of the program, so of the key. */
    int n = snprintf(buf, sizeof(buf), "%s|%u.%u.%u|%u|%d|%d|%s|", FILTER_FORMAT, v->major, v->minor,
                     v->micro, s->groups, s->network, first_exec, s->notify ? "notify" : "errno");
    crypto_generichash_init(&st, NULL, 0, sizeof(h));
    crypto_generichash_update(&st, (const unsigned char *)buf, (unsigned long long)n);
    for (size_t i = 0; i < s->n_allow; i++)
        crypto_generichash_update(&st, (const unsigned char *)s->allow[i], strlen(s->allow[i]) + 1);
    crypto_generichash_update(&st, (const unsigned char *)"|deny|", 6);
    for (size_t i = 0; i < s->n_deny; i++)
        crypto_generichash_update(&st, (const unsigned char *)s->deny[i], strlen(s->deny[i]) + 1);
    crypto_generichash_final(&st, h, sizeof(h));
    sodium_bin2hex(hex, 65, h, sizeof(h));
}

static int read_prog(int fd, struct seccomp_prog *out)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) ||
        st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
        return -EINVAL;
    out->insns = malloc((size_t)st.st_size);
    if (!out->insns)
        return -ENOMEM;
    if (pread(fd, out->insns, (size_t)st.st_size, 0) != st.st_size) {
        free(out->insns);
        out->insns = NULL;
        return -EIO;
    }
    out->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
    return 0;
}

static int cache_load(const char *key, struct seccomp_prog *out)
{
    char path[256];
    snprintf(path, sizeof(path), CACHE_DIR "/%s.bpf", key);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat st;
    /* Only a file root wrote, in a directory only root can write, is trusted. */
    int r = fstat(fd, &st) == 0 && st.st_uid == 0 && !(st.st_mode & 022) ? read_prog(fd, out) : -EPERM;
    close(fd);
    return r;
}

static void cache_store(const char *key, const struct seccomp_prog *p)
{
    if (geteuid() != 0)
        return;
    (void)mkdir("/run/corral", 0700);
    (void)mkdir(CACHE_DIR, 0700);
    struct stat st;
    if (lstat(CACHE_DIR, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077))
        return;
    char tmp[256], path[256];
    snprintf(tmp, sizeof(tmp), CACHE_DIR "/.%s.%ld", key, (long)getpid());
    snprintf(path, sizeof(path), CACHE_DIR "/%s.bpf", key);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int w = util_write_all(fd, p->insns, (size_t)p->len * sizeof(struct sock_filter));
    close(fd);
    if (w < 0 || rename(tmp, path) < 0)
        unlink(tmp);
}

/* The second, fixed-shape filter. The kernel runs every stacked filter and takes the most
 * restrictive answer, so this one only ever narrows the main one. It holds what libseccomp
 * cannot say next to an unconditional allow: ioctl TIOCSTI / TIOCLINUX compared on the low 32
 * bits (the kernel ignores the high half, so must we), and, for a profile without @exec, the one
 * execve allowed: the program's own start, whose path pointer is a page at a random address the
 * program does not know. */
static void build_extra(struct seccomp_prog *out, bool exec_restricted, const void *exec_ptr)
{
    struct sock_filter *f = out->extra;
    unsigned n = 0;
    uint64_t ptr = (uint64_t)(uintptr_t)exec_ptr;
#define EMIT(x) (f[n++] = (struct sock_filter)x)
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)); /* other ABIs: the main filter refuses */
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 5)); /* not ioctl: past its 5 */
    EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 1, 0));
    EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 0, 1));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    if (exec_restricted) {
        /* the accumulator still holds nr */
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 5));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ptr, 0, 2));
        EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]) + 4));
        EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ptr >> 32), 1, 0));
        EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
    }
    EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
#undef EMIT
    out->extra_len = (unsigned short)n;
}

/* With a listener there is one filter, not two: a filter without the listener could only
 * answer its denials silently (a USER_NOTIF from it fails with ENOSYS). So the second filter's
 * checks go in front of the main program: its allows become jumps into the main program (which
 * starts by loading the arch itself), its denials notifications. The answer is the same as the
 * two filters' most restrictive one. */
static int merge_extra(struct seccomp_prog *p, struct cerr *err)
{
    unsigned n = p->extra_len;
    if ((size_t)p->len + n > BPF_MAXINSNS)
        return cerr_set(err, E2BIG, "seccomp: the filter is too long to take the second filter's rules");
    struct sock_filter *all = malloc(((size_t)p->len + n) * sizeof(*all));
    if (!all)
        return cerr_set(err, ENOMEM, "out of memory");
    for (unsigned i = 0; i < n; i++) {
        struct sock_filter f = p->extra[i];
        if (f.code == (BPF_RET | BPF_K) && f.k == SECCOMP_RET_ALLOW)
            f = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, n - 1 - i, 0, 0);
        else if (f.code == (BPF_RET | BPF_K))
            f.k = SECCOMP_RET_USER_NOTIF;
        all[i] = f;
    }
    memcpy(all + n, p->insns, (size_t)p->len * sizeof(*all));
    free(p->insns);
    p->insns = all;
    p->len = (unsigned short)(p->len + n);
    p->extra_len = 0;
    return 0;
}

int seccomp_build(const struct sandbox_seccomp *s, const void *exec_ptr, struct seccomp_prog *out,
                  struct cerr *err)
{
    memset(out, 0, sizeof(*out));
    build_extra(out, !(s->groups & SANDBOX_SC_EXEC), exec_ptr);
    char key[65];
    cache_key(s, true, key);
    if (cache_load(key, out) == 0)
        return s->notify ? merge_extra(out, err) : 0;

    scmp_filter_ctx ctx;
    int r = build_ctx(s, true, &ctx, err);
    if (r < 0)
        return r;
    int fd = memfd_create("corral-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        r = cerr_set(err, errno, "seccomp: memfd_create: %s", strerror(errno));
        seccomp_release(ctx);
        return r;
    }
    r = seccomp_export_bpf(ctx, fd);
    seccomp_release(ctx);
    if (r < 0 || (r = read_prog(fd, out)) < 0) {
        close(fd);
        return cerr_set(err, r, "seccomp: cannot export the filter: %s", strerror(-r));
    }
    close(fd);
    cache_store(key, out);
    return s->notify ? merge_extra(out, err) : 0;
}

void seccomp_prog_release(struct seccomp_prog *p)
{
    free(p->insns);
    p->insns = NULL;
    p->len = 0;
}
