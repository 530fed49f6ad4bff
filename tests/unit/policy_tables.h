/* tests/unit/policy_tables.h: for each example role, syscall (with arguments) -> expected outcome,
 * in the spirit of libseccomp's tests/ files. Checked in simulation against the BPF program the
 * derived profile compiles to (test_policy_seccomp.c) and live inside a real sandbox with
 * tests/hostile/sysprobe_policy (test_policy_live.c). */
#ifndef POLICY_TABLES_H
#define POLICY_TABLES_H

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#define A 'A' /* allowed */
#define D 'D' /* denied with EPERM */

struct probe_row {
    const char *probe; /* name understood by sysprobe_policy */
    long nr;           /* syscall number for the simulation; -1: live only */
    uint64_t args[6];
    /* expected per role, in the order of roles[] below */
    char want[7];
};

struct role_case {
    const char *file; /* relative to the source tree; NULL: the embedded default policy */
    const char *role;
};

static const struct role_case roles[] = {
    {NULL, "default"},
    {"examples/policies/worker.json", "worker"},
    {"examples/policies/worker.json", "fetcher"},
    {"examples/policies/reviewer.json", "reviewer"},
    {"examples/policies/observer.json", "observer"},
    {"examples/policies/observer.json", "auditor"},
    {"examples/policies/session.json", "coordinator"},
};
#define N_ROLES (sizeof(roles) / sizeof(roles[0]))

#define AT_FDCWD_U64 ((uint64_t)(int64_t)AT_FDCWD)
#define FORK_FLAGS (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD)

/*                                                               default worker fetcher reviewer observer auditor coordinator */
static const struct probe_row rows[] = {
    {"execve", SYS_execve, {0x1000, 0x2000, 0x3000}, "AAADDDD"},
    {"openat_rdonly", SYS_openat, {AT_FDCWD_U64, 0x1000, O_RDONLY}, "AAAAAAA"},
    {"openat_wronly", SYS_openat, {AT_FDCWD_U64, 0x1000, O_WRONLY | O_CREAT | O_TRUNC, 0600}, "AAAADDA"},
    {"mkdir", SYS_mkdir, {0x1000, 0700}, "AAAADDA"},
    {"socket_unix", SYS_socket, {AF_UNIX, SOCK_STREAM, 0}, "AAADAAA"},
    {"socket_inet", SYS_socket, {AF_INET, SOCK_STREAM, 0}, "DDADDDD"},
    {"socket_vsock", SYS_socket, {40 /* AF_VSOCK */, SOCK_STREAM, 0}, "DDDDDDD"},
    {"ptrace", SYS_ptrace, {3 /* PTRACE_PEEKUSER */, 1, 0, 0}, "DDDDDDD"},
    {"unshare", SYS_unshare, {CLONE_NEWUSER}, "DDDDDDD"},
    {"mount", SYS_mount, {0x1000, 0x2000, 0x3000, 0, 0}, "DDDDDDD"},
    {"bpf", SYS_bpf, {5 /* BPF_PROG_LOAD */, 0x1000, 128}, "DDDDDDD"},
    {"keyctl", SYS_keyctl, {0, (uint64_t)-1, 0}, "DDDDDDD"},
    {"io_uring_setup", SYS_io_uring_setup, {1, 0}, "DDDDDDD"},
    {"kill", SYS_kill, {1, 0}, "AAADAAA"},
    {"shmget", SYS_shmget, {0 /* IPC_PRIVATE */, 4096, 01000 | 0600}, "AAADAAA"},
    {"uname", SYS_uname, {0x1000}, "AAAAAAA"},
    {"getrandom", SYS_getrandom, {0x1000, 8, 0}, "AAAAAAA"},
    {"clone_newuser", SYS_clone, {CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0}, "DDDDDDD"},
    {"fork", SYS_clone, {FORK_FLAGS, 0, 0, 0, 0}, "AAAAAAA"},
    {"personality", SYS_personality, {0xffffffff}, "DDDDDDD"},
    /* TIOCSTI is refused by a second, ioctl-only filter the sandbox stacks: live only. */
    {"ioctl_tiocsti", -1, {0}, "DDDDDDD"},
};
#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

#endif
