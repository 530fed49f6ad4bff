/* tests/hostile/sysprobe_policy.c: attempts each named syscall with harmless arguments inside a
 * sandbox and prints NAME=0 or NAME=ERRNONAME, one per line, so a test can compare what a role's
 * derived seccomp filter allowed with what its table expects. Usage: sysprobe_policy NAME... */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* Each returns 0 or an errno value. */
static int rc(long r)
{
    return r < 0 ? errno : 0;
}

static int p_execve(void)
{
    char *argv[] = {"/nonexistent-corral-probe", NULL};
    execve(argv[0], argv, argv + 1); /* never succeeds: the path does not exist */
    return errno;
}
static int p_openat_rdonly(void)
{
    int fd = openat(AT_FDCWD, "/proc/self/status", O_RDONLY);
    if (fd >= 0)
        close(fd);
    return rc(fd);
}
static int p_openat_wronly(void)
{
    int fd = openat(AT_FDCWD, "/tmp/corral-probe-file", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0)
        close(fd);
    return rc(fd);
}
static int p_mkdir(void)
{
    int r = mkdir("/tmp/corral-probe-dir", 0700);
    if (r < 0 && errno == EEXIST)
        return 0;
    return rc(r);
}
static int p_socket_unix(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0)
        close(fd);
    return rc(fd);
}
static int p_socket_inet(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0)
        close(fd);
    return rc(fd);
}
static int p_socket_vsock(void)
{
    int fd = socket(AF_VSOCK, SOCK_STREAM, 0);
    if (fd >= 0)
        close(fd);
    return rc(fd);
}
static int p_ptrace(void)
{
    return rc(ptrace(PTRACE_PEEKUSER, getppid(), 0, 0));
}
static int p_unshare(void)
{
    return rc(unshare(CLONE_NEWUSER));
}
static int p_mount(void)
{
    return rc(mount("none", "/tmp", "tmpfs", 0, NULL));
}
static int p_bpf(void)
{
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    return rc(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a)));
}
static int p_keyctl(void)
{
    return rc(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -1, 0));
}
static int p_io_uring_setup(void)
{
    return rc(syscall(SYS_io_uring_setup, 1, NULL));
}
static int p_kill(void)
{
    return rc(kill(getpid(), 0));
}
static int p_shmget(void)
{
    int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    if (id >= 0)
        shmctl(id, IPC_RMID, NULL);
    return rc(id);
}
static int p_uname(void)
{
    struct utsname u;
    return rc(uname(&u));
}
static int p_getrandom(void)
{
    char b[8];
    return rc(syscall(SYS_getrandom, b, sizeof(b), 0));
}
static int p_clone_newuser(void)
{
    long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (r == 0)
        _exit(0);
    if (r > 0) {
        waitpid((pid_t)r, NULL, 0);
        return 0;
    }
    return errno;
}
static int p_ioctl_tiocsti(void)
{
    char c = ' ';
    return rc(ioctl(0, TIOCSTI, &c)); /* ENOTTY on a pipe when allowed */
}
static int p_personality(void)
{
    return rc(syscall(SYS_personality, 0xffffffff));
}
static int p_fork(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    if (p > 0) {
        waitpid(p, NULL, 0);
        return 0;
    }
    return errno;
}

static const struct {
    const char *name;
    int (*fn)(void);
} probes[] = {
    {"execve", p_execve},
    {"openat_rdonly", p_openat_rdonly},
    {"openat_wronly", p_openat_wronly},
    {"mkdir", p_mkdir},
    {"socket_unix", p_socket_unix},
    {"socket_inet", p_socket_inet},
    {"socket_vsock", p_socket_vsock},
    {"ptrace", p_ptrace},
    {"unshare", p_unshare},
    {"mount", p_mount},
    {"bpf", p_bpf},
    {"keyctl", p_keyctl},
    {"io_uring_setup", p_io_uring_setup},
    {"kill", p_kill},
    {"shmget", p_shmget},
    {"uname", p_uname},
    {"getrandom", p_getrandom},
    {"clone_newuser", p_clone_newuser},
    {"ioctl_tiocsti", p_ioctl_tiocsti},
    {"personality", p_personality},
    {"fork", p_fork},
};

int main(int argc, char **argv)
{
    int status = 0;
    for (int i = 1; i < argc; i++) {
        size_t k;
        for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++)
            if (!strcmp(probes[k].name, argv[i]))
                break;
        if (k == sizeof(probes) / sizeof(probes[0])) {
            printf("%s=UNKNOWN_PROBE\n", argv[i]);
            status = 2;
            continue;
        }
        errno = 0;
        int e = probes[k].fn();
        const char *n = e ? strerrorname_np(e) : "0";
        printf("%s=%s\n", argv[i], n ? n : "?");
        fflush(stdout);
    }
    return status;
}
