/* tests/hostile/probe.c: runs INSIDE a sandbox and tries one escape or abuse per subcommand,
 * printing what it observed as "RESULT <what> <value>" lines for tests/e2e/exec_*.sh to assert.
 * It never decides pass/fail itself: the test does, so a probe that silently did nothing
 * cannot pass. */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void result(const char *what, long rc, int err)
{
    if (rc < 0)
        printf("RESULT %s %s\n", what, strerrorname_np(err) ? strerrorname_np(err) : "E?");
    else
        printf("RESULT %s OK\n", what);
    fflush(stdout);
}
#define TRY(what, expr)           \
    do {                          \
        errno = 0;                \
        long rc_ = (long)(expr);  \
        result(what, rc_, errno); \
    } while (0)

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static pid_t spawn_sleeper(void)
{
    pid_t p = fork();
    if (p == 0) {
        pause();
        _exit(0);
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: probe WHAT [ARGS]\n");
        return 2;
    }
    const char *w = argv[1];
    if (!strcmp(w, "read")) { /* read a host file */
        int fd = open(argv[2], O_RDONLY);
        result("read", fd, errno);
    } else if (!strcmp(w, "create")) { /* create a file */
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        result("create", fd, errno);
    } else if (!strcmp(w, "mount")) {
        TRY("mount", mount("none", "/tmp", "tmpfs", 0, NULL));
    } else if (!strcmp(w, "unshare")) {
        TRY("unshare-user", unshare(CLONE_NEWUSER));
        TRY("unshare-net", unshare(CLONE_NEWNET));
        TRY("unshare-mount", unshare(CLONE_NEWNS));
    } else if (!strcmp(w, "setns")) {
        int fd = open("/proc/self/ns/net", O_RDONLY);
        TRY("setns", setns(fd, 0));
    } else if (!strcmp(w, "clone-ns")) {
        long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (r == 0)
            _exit(0);
        result("clone-newuser", r, errno);
        TRY("clone3", syscall(SYS_clone3, NULL, 0));
    } else if (!strcmp(w, "ptrace")) {
        pid_t child = spawn_sleeper();
        TRY("ptrace-attach", ptrace(PTRACE_ATTACH, child, 0, 0));
        TRY("ptrace-init", ptrace(PTRACE_ATTACH, 1, 0, 0));
        TRY("ptrace-traceme", ptrace(PTRACE_TRACEME, 0, 0, 0));
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    } else if (!strcmp(w, "process_vm_readv")) {
        pid_t child = spawn_sleeper();
        char buf[8];
        static char src[8] = "secret";
        struct iovec l = {buf, sizeof(buf)}, r = {src, sizeof(src)};
        TRY("process_vm_readv", process_vm_readv(child, &l, 1, &r, 1, 0));
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    } else if (!strcmp(w, "kernel")) { /* attack surface with no use to an agent */
        union bpf_attr a;
        memset(&a, 0, sizeof(a));
        TRY("bpf", syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a)));
        struct perf_event_attr pa;
        memset(&pa, 0, sizeof(pa));
        pa.size = sizeof(pa);
        pa.type = PERF_TYPE_SOFTWARE;
        pa.config = PERF_COUNT_SW_CPU_CLOCK;
        TRY("perf_event_open", syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0));
        TRY("userfaultfd", syscall(SYS_userfaultfd, 0));
        char params[120] = {0};
        TRY("io_uring_setup", syscall(SYS_io_uring_setup, 8, params));
        TRY("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
        TRY("add_key", syscall(SYS_add_key, "user", "x", "y", 1, -3));
        TRY("init_module", syscall(SYS_init_module, NULL, 0, ""));
        TRY("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
        TRY("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0));
        TRY("x32-getpid", syscall(0x40000000 | SYS_getpid));
    } else if (!strcmp(w, "tiocsti")) {
        char c = 'x';
        TRY("tiocsti", ioctl(0, TIOCSTI, &c));
        TRY("tiocsti-high-bits", syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c));
        TRY("tioclinux", ioctl(0, 0x541C, &c));
        struct winsize ws;
        TRY("tiocgwinsz", ioctl(0, TIOCGWINSZ, &ws)); /* allowed by the filter: ENOTTY on a pipe */
    } else if (!strcmp(w, "socket")) {
        TRY("socket-inet", socket(AF_INET, SOCK_STREAM, 0));
        TRY("socket-inet6", socket(AF_INET6, SOCK_STREAM, 0));
        TRY("socket-netlink", socket(AF_NETLINK, SOCK_RAW, 0));
        TRY("socket-packet", socket(AF_PACKET, SOCK_RAW, 0));
        TRY("socket-vsock", socket(AF_VSOCK, SOCK_STREAM, 0));
        TRY("socket-unix", socket(AF_UNIX, SOCK_STREAM, 0));
    } else if (!strcmp(w, "connect")) { /* connect 127.0.0.1 PORT */
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        if (s < 0)
            result("connect", -1, errno);
        else
            TRY("connect", connect(s, (struct sockaddr *)&a, sizeof(a)));
    } else if (!strcmp(w, "loopback")) { /* listen and connect to ourselves on 127.0.0.1 */
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        socklen_t al = sizeof(a);
        if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
            getsockname(l, (struct sockaddr *)&a, &al) < 0) {
            result("loopback", -1, errno);
            return 0;
        }
        int c = socket(AF_INET, SOCK_STREAM, 0);
        TRY("loopback", connect(c, (struct sockaddr *)&a, sizeof(a)));
    } else if (!strcmp(w, "ids")) {
        printf("RESULT uid %d\nRESULT euid %d\nRESULT gid %d\n", getuid(), geteuid(), getgid());
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        while (f && fgets(line, sizeof(line), f))
            if (!strncmp(line, "Cap", 3) || !strncmp(line, "NoNewPrivs", 10) ||
                !strncmp(line, "Seccomp:", 8)) {
                char k[64], v[64];
                if (sscanf(line, "%63[^:]:%63s", k, v) == 2)
                    printf("RESULT %s %s\n", k, v);
            }
    } else if (!strcmp(w, "fds")) {
        int open_fds = 0;
        for (int fd = 0; fd < 4096; fd++)
            if (fcntl(fd, F_GETFD) >= 0) {
                printf("RESULT fd %d\n", fd);
                open_fds++;
            }
        printf("RESULT open_fds %d\n", open_fds);
    } else if (!strcmp(w, "pid")) {
        char comm[64] = "";
        FILE *f = fopen("/proc/1/comm", "r");
        if (f && fgets(comm, sizeof(comm), f))
            comm[strcspn(comm, "\n")] = '\0';
        printf("RESULT pid %d\nRESULT ppid %d\nRESULT init %s\n", getpid(), getppid(), comm);
        printf("RESULT sid %d\n", getsid(0));
        int tty = open("/dev/tty", O_RDWR);
        result("dev-tty", tty, errno);
    } else if (!strcmp(w, "forkbomb")) {
        int n = 0, err = 0;
        pid_t kids[4096];
        while (n < 4096) {
            pid_t p = fork();
            if (p < 0) {
                err = errno;
                break;
            }
            if (p == 0) {
                pause();
                _exit(0);
            }
            kids[n++] = p;
        }
        printf("RESULT forked %d\nRESULT fork-error %s\n", n, err ? strerrorname_np(err) : "none");
        fflush(stdout);
        for (int i = 0; i < n; i++)
            kill(kids[i], SIGKILL);
        while (wait(NULL) > 0)
            ;
    } else if (!strcmp(w, "memhog")) { /* touch MiB after MiB until killed */
        size_t mib = 0;
        for (;;) {
            char *p = malloc(1 << 20);
            if (!p)
                break;
            memset(p, 1, 1 << 20);
            mib++;
            if (mib % 16 == 0) {
                printf("RESULT allocated %zu\n", mib);
                fflush(stdout);
            }
            if (mib > 8192)
                break;
        }
        printf("RESULT survived %zu\n", mib);
    } else if (!strcmp(w, "spin")) { /* spin for N seconds of wall time; report cpu share */
        double secs = argc > 2 ? atof(argv[2]) : 1.0;
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        volatile unsigned long x = 0;
        while (now(CLOCK_MONOTONIC) - t0 < secs)
            for (int i = 0; i < 100000; i++)
                x += (unsigned long)i;
        double share = (now(CLOCK_PROCESS_CPUTIME_ID) - c0) / (now(CLOCK_MONOTONIC) - t0);
        printf("RESULT cpu-share-pct %d\n", (int)(share * 100.0 + 0.5));
    } else if (!strcmp(w, "exec")) { /* execve after start */
        char *args[] = {argv[2], NULL};
        execv(argv[2], args);
        result("exec", -1, errno);
    } else if (!strcmp(w, "write-open")) { /* open for writing in /tmp */
        int fd = open("/tmp/probe-write", O_WRONLY | O_CREAT, 0644);
        result("write-open", fd, errno);
    } else {
        fprintf(stderr, "probe: unknown test '%s'\n", w);
        return 2;
    }
    return 0;
}
