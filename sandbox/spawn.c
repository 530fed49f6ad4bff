/* sandbox/spawn.c: start a program in a new sandbox. The caller (corral, host root) prepares
 * everything that needs the host's view (cgroup, seccomp BPF, the detached mounts of the root),
 * then clones "init" into new user/mount/pid/ipc/uts/net namespaces, writes its id maps and puts
 * it in the cgroup. init builds the root, drops every privilege, forks the program (pid 2), and
 * stays as pid 1 to reap and forward signals. Nothing runs the program with less isolation than
 * asked: any failure before execve is reported on a pipe and the sandbox is torn down. */
#include "sandbox/root.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

struct sandbox_child {
    pid_t pid; /* host pid of init */
    int pidfd;
    int status_fd; /* our end of the control socket: the go byte, the filter and the start
                         * message go out on it, the program's wait status comes back on it, and
                         * init watches it for hangup (we died). One fd per sandbox for all. */
    int err_fd;    /* set-up failures and the program's execve error, until started */
    int np_fd;     /* seccomp.notify: where init passes the listener, until started */
    char *program;
    bool started_prog;
    void *refill; /* warm.c's request for the next sandbox of this profile, at our end */
    const struct sandbox_child *parent; /* the sandbox whose cgroup holds ours (warm.c) */
    int notify_fd;                      /* the seccomp listener, until the caller takes it */
    int eg_fd;   /* SANDBOX_NET_PROXY: where init passes the egress listeners, until started */
    size_t n_eg; /* how many it passes */
    int egress_fds[SANDBOX_EGRESS_MAX_FDS]; /* received at the start, until the caller takes them */
    size_t n_egress;
    struct cgroup *cg;
    double started;
    bool reaped;
    bool waited;     /* child_wait ran */
    bool status_got; /* init reported the program's end, every other process reaped: see init_main */
    bool status_hup; /* init's socket hung up without a report (init was killed): its pidfd tells */
    int status;      /* the program's wait status, when status_got */
};

/* Set by zygote_start (see spawn_hooks_set). */
static struct spawn_hooks spawn_hooks;

void spawn_hooks_set(const struct spawn_hooks *h)
{
    spawn_hooks = h ? *h : (struct spawn_hooks){0};
}

/* The start message's header (see init_receive_start). */
#define SPAWN_START_MAGIC 0x54535a43u /* "CZST" */
#define SPAWN_START_MAX (8u << 20)
struct spawn_start_hdr {
    uint32_t magic;
    uint32_t len;
};

/* Messages from the child to the parent on the error pipe: one record each. */
enum { MSG_SETUP = 'S', MSG_EXEC = 'X' };

const char *const sandbox_default_env[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "HOME=/tmp",
    "LANG=C.UTF-8",
    "USER=agent",
    "LOGNAME=agent",
    "TMPDIR=/tmp",
    NULL,
};

void sandbox_profile_default(struct sandbox_profile *p)
{
    memset(p, 0, sizeof(*p));
    p->net = SANDBOX_NET_NONE;
    p->limits.memory = 256ull << 20;
    p->limits.pids = 256;
    p->limits.tmp_size = 64ull << 20;
    p->limits.nofile = 1024;
    p->seccomp.groups = SANDBOX_SC_DEFAULT_GROUPS;
    p->landlock = true;
    p->uid = 1000;
    p->gid = 1000;
    p->host_uid = 65534;
    p->host_gid = 65534;
    p->hostname = "corral";
}

int sandbox_find_program(const char *program, char **out)
{
    if (!program || !*program)
        return -ENOENT;
    if (strchr(program, '/')) {
        char *abs = realpath(program, NULL);
        if (!abs)
            return -errno;
        struct stat st;
        if (stat(abs, &st) < 0 || !S_ISREG(st.st_mode) || access(abs, X_OK) < 0) {
            free(abs);
            return -EACCES;
        }
        /* Keep the name the user gave (made absolute) so argv[0] and the bind look familiar. */
        if (program[0] == '/') {
            free(abs);
            abs = strdup(program);
        }
        *out = abs;
        return abs ? 0 : -ENOMEM;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int saw_eacces = 0;
    for (const char *s = path; *s;) {
        size_t len = strcspn(s, ":");
        char *cand = util_printf("%.*s/%s", (int)len, s, program);
        if (!cand)
            return -ENOMEM;
        struct stat st;
        if (cand[0] == '/' && stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(cand, X_OK) == 0) {
                *out = cand;
                return 0;
            }
            saw_eacces = 1;
        }
        free(cand);
        s += len;
        if (*s == ':')
            s++;
    }
    return saw_eacces ? -EACCES : -ENOENT;
}

/* ---- child side ---- */

struct spawn_args {
    const struct sandbox_profile *p;
    struct net_request lo_req; /* --net loopback: the request, built before the clone */
    const struct root_plan *plan;
    struct seccomp_prog prog; /* received from the parent over the go pipe */
    const char *exec_path;    /* in the random page: the one execve the filter allows */
    char *const *argv;        /* the program's argv, environment and directory: from the start */
    char *const *envp;        /* message (init_receive_start) */
    const char *cwd;
    const char *const *ll_paths;
    size_t n_ll;
    int ll_rs; /* the landlock ruleset init made ahead (close-on-exec), or -1 */
    int in, out, err; /* stdio for the program, -1: inherit */
    int go_rd, err_wr, status_wr, alive_rd;
    int notify_wr;   /* seccomp.notify: init passes the listener to the parent here */
    int egress_wr;   /* SANDBOX_NET_PROXY: init passes the egress listeners here */
    int listener;    /* set by the program (memory shared until its execve), or -1 */
    bool early;      /* init loads the filter while prepared (seccomp_may_load_early) */
    int devnull;     /* opened by init before its filter: /dev/null for its own stdio */
    cap_t no_caps;   /* an empty capability set, allocated by the parent (no malloc in the child) */
    char *arg_start; /* corral's own argv strings, which init inherits: blanked so the */
    size_t arg_len;  /* program reading /proc/1/cmdline learns no host path or option */
};

/* Child-side failure: one record on the error pipe, then exit. Only before execve. */
__attribute__((noreturn)) static void child_fail(int fd, const char *msg)
{
    size_t n = strlen(msg);
    char buf[sizeof(((struct cerr *)0)->msg) + 1];
    buf[0] = MSG_SETUP;
    if (n > sizeof(buf) - 1)
        n = sizeof(buf) - 1;
    memcpy(buf + 1, msg, n);
    (void)!write(fd, buf, n + 1);
    _exit(125);
}

#define CHILD_CHECK(cond, fd, ...)             \
    do {                                       \
        if (!(cond)) {                         \
            struct cerr e_;                    \
            cerr_set(&e_, errno, __VA_ARGS__); \
            child_fail(fd, e_.msg);            \
        }                                      \
    } while (0)

/* Build with -DSPAWN_TRACE to print a timeline of a sandbox's start (for bench work). */
#ifdef SPAWN_TRACE
#include <math.h>
static double DBG_T0;
static int DBG_FD = 2; /* the program's own stderr is the command's: it traces to a copy */
#define CTT(x)                                                                                     \
    dprintf(DBG_FD, "  [%d] %-12s %.3f ms  @%.3f\n", getpid(), x, (util_now() - DBG_T0) * 1e3,    \
            fmod(util_now() * 1e3, 1e5))
#define TRACE_START() (DBG_T0 = util_now())
#else
#define CTT(x) ((void)0)
#define TRACE_START() ((void)0)
#endif
static void set_rlimit(int res, uint64_t v)
{
    struct rlimit rl = {v, v};
    struct rlimit cur;
    if (getrlimit(res, &cur) == 0 && cur.rlim_max != RLIM_INFINITY && cur.rlim_max < v)
        rl.rlim_cur = rl.rlim_max = cur.rlim_max; /* only ever lower */
    (void)setrlimit(res, &rl);
}

/* Every capability set emptied, the bounding set included, then the unprivileged ids. */
static void drop_privileges(const struct spawn_args *a)
{
    int fd = a->err_wr;
    for (cap_value_t c = 0; c <= CAP_LAST_CAP || CAP_IS_SUPPORTED(c); c++) {
        if (!CAP_IS_SUPPORTED(c))
            break;
        CHILD_CHECK(cap_drop_bound(c) == 0, fd, "caps: cannot drop %s from the bounding set: %s",
                    cap_to_name(c), strerror(errno));
    }
    CHILD_CHECK(cap_reset_ambient() == 0 || errno == EINVAL, fd,
                "caps: cannot clear the ambient set: %s", strerror(errno));
    /* Raw system calls, not glibc's setgroups / setres[ug]id: in a process cloned from a
     * multithreaded one (commands are started from worker threads), glibc's wrappers try to
     * change the ids of every thread the parent had, and wait forever on one the parent was
     * creating at that instant. This process has one thread: the kernel call is all it needs. */
    CHILD_CHECK(syscall(SYS_setgroups, 0, NULL) == 0, fd, "ids: setgroups: %s", strerror(errno));
    CHILD_CHECK(syscall(SYS_setresgid, a->p->gid, a->p->gid, a->p->gid) == 0, fd,
                "ids: setresgid(%u): %s", (unsigned)a->p->gid, strerror(errno));
    CHILD_CHECK(syscall(SYS_setresuid, a->p->uid, a->p->uid, a->p->uid) == 0, fd,
                "ids: setresuid(%u): %s", (unsigned)a->p->uid, strerror(errno));
    CHILD_CHECK(a->no_caps && cap_set_proc(a->no_caps) == 0, fd,
                "caps: cannot clear the capability sets: %s", strerror(errno));
    CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, fd, "no_new_privs: %s", strerror(errno));
    /* Changing credentials cleared the parent-death signal: set it again, then make sure the
     * parent did not die in between (the liveness pipe hangs up when it does). */
    CHILD_CHECK(prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, fd, "pdeathsig: %s", strerror(errno));
    struct pollfd pfd = {.fd = a->alive_rd, .events = POLLIN};
    if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
        _exit(125);
}

/* Loads the profile's filter into the calling process: by init while the sandbox is prepared
 * (a->early), or by the program right before its execve. */
static void load_filter(struct spawn_args *a)
{
    int fd = a->err_wr;
    struct sock_fprog fp = {.len = a->prog.len, .filter = a->prog.insns};
    struct sock_fprog fx = {.len = a->prog.extra_len, .filter = (struct sock_filter *)a->prog.extra};
    /* No second filter when it was merged into the main one (a notifying filter: seccomp.c). */
    CHILD_CHECK(fx.len == 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fx) == 0, fd,
                "seccomp: cannot load the second filter: %s", strerror(errno));
    if (a->notify_wr >= 0) {
        /* Init passes the listener to the parent. Loaded by the program, it lands in the fd
         * table the program shares with init (CLONE_FILES), close-on-exec: execve gives the
         * program a private copy without it, so the program never holds its own listener. */
        long lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
        CHILD_CHECK(lfd >= 0, fd, "seccomp: cannot load the filter with a listener: %s",
                    strerror(errno));
        a->listener = (int)lfd;
    } else {
        CHILD_CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) == 0, fd,
                    "seccomp: cannot load the filter: %s", strerror(errno));
    }
}

__attribute__((noreturn)) static void program_main(struct spawn_args *a)
{
    int fd = a->err_wr;
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    CHILD_CHECK(setsid() >= 0, fd, "setsid: %s", strerror(errno));
#ifdef SPAWN_TRACE
    DBG_FD = fcntl(2, F_DUPFD, 200);
    CTT("prog-in");
#endif
    int std[3] = {a->in, a->out, a->err};
    for (int i = 0; i < 3; i++)
        if (std[i] >= 0 && std[i] != i)
            CHILD_CHECK(dup2(std[i], i) == i, fd, "stdio: dup2: %s", strerror(errno));
    /* Only 0, 1, 2 cross execve; the error pipe stays usable until then. */
    CHILD_CHECK(syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) == 0, fd, "close_range: %s",
                strerror(errno));
    CHILD_CHECK(chdir(a->cwd) == 0, fd, "cannot change to the directory %s inside the sandbox: %s",
                a->cwd, strerror(errno));
    CTT("prog-start");
    if (a->ll_rs >= 0) {
        struct cerr e;
        if (landlock_restrict_to(a->ll_rs, &e) < 0)
            child_fail(fd, e.msg);
    }
    CTT("landlock");
    /* Loaded by init already (it is inherited), or now: then nothing runs between this load
     * and execve that the filter could refuse or hold up. */
    if (!a->early)
        load_filter(a);
    CTT("prog-setup");
    execve(a->exec_path, a->argv, a->envp);
    int e = errno;
    char rec[1 + sizeof(int)];
    rec[0] = MSG_EXEC;
    memcpy(rec + 1, &e, sizeof(int));
    (void)!write(fd, rec, sizeof(rec));
    _exit(e == ENOENT ? 127 : 126);
}

static volatile sig_atomic_t init_prog_pid;

static int program_start(void *arg)
{
    program_main(arg);
}

/* One byte with FDS (at most CGROUP_MAX_TASK_FDS, or none) as SCM_RIGHTS: a step of init's
 * set-up ('g': the id maps are written; 'c': the cgroup is made, with a v1 cgroup's tasks
 * files), or init's seccomp listener ('L'). The message holds a reference to each fd, so the
 * sender may close its copy at once (no round trip, unlike pidfd_getfd, where init would have
 * to keep the listener until the parent took it, and the parent would need ptrace access). */
static int send_byte_fds(int sock, char byte, const int *fds, size_t n)
{
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(CGROUP_MAX_TASK_FDS * sizeof(int))];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n) {
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(n * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n * sizeof(int));
    }
    return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* Init passes the filter's listener to the parent ('L'), then closes its own copy. */
static void init_pass_listener(struct spawn_args *a, pid_t prog)
{
    if (a->listener < 0 || send_byte_fds(a->notify_wr, 'L', &a->listener, 1) < 0) {
        if (prog > 0)
            kill(prog, SIGKILL);
        CHILD_CHECK(0, a->err_wr, "seccomp: cannot pass the listener to the supervisor: %s",
                    strerror(errno));
    }
    close(a->listener);
    a->listener = -1;
}

/* A move into the cgroup failed: say into which hierarchy, and why when the cause is known. */
__attribute__((noreturn)) static void init_move_failed(int fd, int t, int e)
{
    char link[32], path[512];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", t);
    /* The sandbox's /proc by now (the root is built): the file lies outside that root, and the
     * kernel names it from the host's root all the same. */
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    path[n > 0 ? n : 0] = '\0';
    char *slash = n > 0 ? strrchr(path, '/') : NULL;
    if (slash)
        *slash = '\0'; /* the cgroup, not its tasks file */
    /* The kernel admits a real-time task only into a cpu cgroup given rt runtime, which a
     * sandbox's is not: EINVAL (sched_rt_can_attach). */
    int pol = sched_getscheduler(0);
    bool rt = e == EINVAL && (pol == SCHED_FIFO || pol == SCHED_RR);
    struct cerr err;
    cerr_set(&err, e, "cgroup: cannot move the sandbox into %s: %s%s", slash ? path : "its cgroup",
             strerror(e),
             rt ? " (corral runs under a real-time scheduling policy, which a sandbox's cpu cgroup "
                  "does not admit; start corral under SCHED_OTHER)"
                : "");
    child_fail(fd, err.msg);
}

/* Init's side: the step byte WANT, and into the cgroup (v1) by the tasks files that came with
 * it. */
static void init_receive_step(const struct spawn_args *a, char want)
{
    int fd = a->err_wr;
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(CGROUP_MAX_TASK_FDS * sizeof(int))];
    } u;
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t got;
    while ((got = recvmsg(a->go_rd, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (got != 1 || byte != want)
        _exit(125); /* the parent died or gave up before finishing our set-up */
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHILD_CHECK(!(m.msg_flags & MSG_CTRUNC), fd, "start: too many cgroup files");
    if (!c)
        return;
    CHILD_CHECK(c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                    c->cmsg_len >= CMSG_LEN(0),
                fd, "start: a malformed go message");
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
        int t;
        memcpy(&t, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        /* "0": the writer itself. One thread, no children yet: the whole of init. */
        if (write(t, "0", 1) != 1)
            init_move_failed(fd, t, errno);
        close(t);
    }
}

static void init_forward(int sig)
{
    /* From pid 1, kill(-1) reaches every other process of the sandbox. */
    int saved = errno;
    kill(-1, sig);
    errno = saved;
}

static int receive_filter(struct spawn_args *a)
{
    uint16_t hdr[2];
    if (util_read_all(a->go_rd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) || hdr[0] == 0 ||
        hdr[0] > BPF_MAXINSNS || hdr[1] > ARRAY_SIZE(a->prog.extra))
        return -EIO;
    size_t len = (size_t)hdr[0] * sizeof(struct sock_filter);
    /* The buffer was allocated by the parent before the clone: a child cloned from one thread
     * of a threaded supervisor must not call malloc (another thread may have held its lock). */
    if (!a->prog.insns || util_read_all(a->go_rd, a->prog.insns, len) != (ssize_t)len ||
        util_read_all(a->go_rd, a->prog.extra, (size_t)hdr[1] * sizeof(struct sock_filter)) !=
            (ssize_t)((size_t)hdr[1] * sizeof(struct sock_filter)))
        return -EIO;
    a->prog.len = hdr[0];
    a->prog.extra_len = hdr[1];
    return 0;
}

static int send_filter(int fd, const struct seccomp_prog *p)
{
    uint16_t hdr[2] = {p->len, p->extra_len};
    int r = util_write_all(fd, hdr, sizeof(hdr));
    if (r == 0)
        r = util_write_all(fd, p->insns, (size_t)p->len * sizeof(struct sock_filter));
    if (r == 0)
        r = util_write_all(fd, p->extra, (size_t)p->extra_len * sizeof(struct sock_filter));
    return r;
}

/* The start message (see sandbox_start): a header with the program's three stdio fds as
 * SCM_RIGHTS, then LEN bytes: argc, envc, the directory, the arguments, the environment, each
 * string length-prefixed and NUL-ended. Read into pages of its own (mmap: no allocator in a
 * clone of a threaded process) and checked like any input. A short read: the parent is gone or
 * gave up (a prepared sandbox it never used), and init leaves. */
static void init_receive_start(struct spawn_args *a)
{
    int fd = a->err_wr;
    struct spawn_start_hdr h;
    union {
        struct cmsghdr c;
        char buf[CMSG_SPACE(3 * sizeof(int))];
    } u;
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    while ((n = recvmsg(a->go_rd, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL)) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(h))
        _exit(125);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    CHILD_CHECK(h.magic == SPAWN_START_MAGIC && h.len >= 8 && h.len <= SPAWN_START_MAX && c &&
                    c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                    c->cmsg_len == CMSG_LEN(3 * sizeof(int)) && !(m.msg_flags & MSG_CTRUNC),
                fd, "start: a malformed start message");
    int std[3];
    memcpy(std, CMSG_DATA(c), sizeof(std));
    a->in = std[0];
    a->out = std[1];
    a->err = std[2];
    unsigned char *b = mmap(NULL, h.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHILD_CHECK(b != MAP_FAILED, fd, "start: cannot map %u bytes: %s", h.len, strerror(errno));
    if (util_read_all(a->go_rd, b, h.len) != (ssize_t)h.len)
        _exit(125);
    uint32_t argc, envc;
    memcpy(&argc, b, 4);
    memcpy(&envc, b + 4, 4);
    CHILD_CHECK(argc >= 1 && argc <= h.len / 5 && envc <= h.len / 5, fd,
                "start: %u arguments, %u variables: malformed", argc, envc);
    char **v = mmap(NULL, ((size_t)argc + envc + 2) * sizeof(char *), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHILD_CHECK(v != MAP_FAILED, fd, "start: cannot map the argument vector: %s", strerror(errno));
    size_t off = 8;
    for (uint32_t i = 0; i < 1 + argc + envc; i++) {
        uint32_t l;
        CHILD_CHECK(h.len - off >= 4, fd, "start: a string runs past the message");
        memcpy(&l, b + off, 4);
        off += 4;
        CHILD_CHECK(h.len - off >= (size_t)l + 1 && b[off + l] == 0 && !memchr(b + off, 0, l), fd,
                    "start: a malformed string");
        char *str = (char *)b + off;
        off += (size_t)l + 1;
        if (i == 0)
            a->cwd = str;
        else if (i <= argc)
            v[i - 1] = str;
        else
            v[argc + 1 + (i - 1 - argc)] = str;
    }
    CHILD_CHECK(off == h.len, fd, "start: bytes left over");
    v[argc] = NULL;
    v[argc + 1 + envc] = NULL;
    a->argv = v;
    a->envp = v + argc + 1;
}

/* The first thing init does: close every fd it does not need. A clone copies its parent's whole
 * fd table (in a supervisor: the trail, the control socket, every agent's pipes) and nothing of
 * that may live in a sandbox, or count against the nofile budget applied below (a role's small
 * RLIMIT_NOFILE made landlock fail with EMFILE while init still held a big supervisor's fds). */
static void init_close_inherited(const struct spawn_args *a)
{
    int keep[SPAWN_MAX_KEEP];
    size_t n = 0;
    int mine[] = {0,     1,      2,      a->go_rd,    a->err_wr, a->status_wr, a->notify_wr,
                  a->in, a->out, a->err, a->egress_wr};
    for (size_t i = 0; i < ARRAY_SIZE(mine); i++)
        if (mine[i] >= 0)
            keep[n++] = mine[i];
    for (size_t i = 0; i < a->plan->n && n < ARRAY_SIZE(keep); i++)
        if (a->plan->e[i].fd >= 0)
            keep[n++] = a->plan->e[i].fd;
    for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen fds, and no malloc here */
        for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    int next = 0;
    for (size_t i = 0; i < n; i++) {
        if (keep[i] > next)
            syscall(SYS_close_range, (unsigned)next, (unsigned)keep[i] - 1, 0);
        if (keep[i] + 1 > next)
            next = keep[i] + 1;
    }
    syscall(SYS_close_range, (unsigned)next, ~0U, 0);
}

__attribute__((noreturn)) static void init_main(struct spawn_args *a)
{
    int fd = a->err_wr;
    init_close_inherited(a);
    (void)prctl(PR_SET_NAME, "corral", 0, 0, 0); /* the supervisor's name, not the zygote's */
    /* If corral dies, so does the whole sandbox (killing pid 1 kills the namespace). */
    CHILD_CHECK(prctl(PR_SET_PDEATHSIG, SIGKILL) == 0, fd, "pdeathsig: %s", strerror(errno));
    init_receive_step(a, 'g');

    /* Files we create in our own tmpfs must belong to an id mapped in our user namespace. */
    (void)setfsgid(a->p->gid); /* returns the previous id, never an error */
    (void)setfsuid(a->p->uid);
    struct cerr e;
    CTT("go-read");
    if (root_assemble(a->plan, a->p, &e) < 0)
        child_fail(fd, e.msg);
    CTT("root");
    const char *hn = a->p->hostname ? a->p->hostname : "corral";
    CHILD_CHECK(sethostname(hn, strlen(hn)) == 0, fd, "uts: sethostname: %s", strerror(errno));
    if (a->p->net != SANDBOX_NET_NONE && net_loopback_up(&a->lo_req, &e) < 0)
        child_fail(fd, e.msg);
    /* Still privileged in our namespaces: ports below 1024 (the DNS stub) are ours to bind. */
    if (a->egress_wr >= 0 && a->p->egress && sandbox_egress_hand_up(a->p->egress, a->egress_wr, &e) < 0)
        child_fail(fd, e.msg);
    /* Phase two: into the cgroup the parent made meanwhile (v1), then the seccomp filter it
     * built. A short read means it died or gave up. */
    init_receive_step(a, 'c');
    if (receive_filter(a) < 0)
        _exit(125);
    /* We are in our cgroup (born there, or moved ourselves): the root of what we see. */
    CHILD_CHECK(unshare(CLONE_NEWCGROUP) == 0, fd, "cgroup namespace: %s", strerror(errno));

    CTT("net+cgns");
    set_rlimit(RLIMIT_CORE, 0);
    if (a->p->limits.nofile)
        set_rlimit(RLIMIT_NOFILE, a->p->limits.nofile);
    if (a->p->limits.fsize)
        set_rlimit(RLIMIT_FSIZE, a->p->limits.fsize);
    drop_privileges(a);
    /* The uid change already made init non-dumpable; say so rather than rely on it, so the
     * program (same uid) can never open init's /proc files whatever fs.suid_dumpable is. */
    CHILD_CHECK(prctl(PR_SET_DUMPABLE, 0) == 0, fd, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
    /* The landlock ruleset is made now, not when the program starts: opening its paths and
     * adding its rules is work a prepared sandbox does before its command is known. The
     * program applies it (landlock_restrict_to) before its filter and execve, as before. */
    if (a->p->landlock) {
        a->ll_rs = landlock_ruleset_for_writes(a->ll_paths, a->n_ll, &e);
        if (a->ll_rs < 0)
            child_fail(fd, e.msg);
    }
    CTT("privs");

    /* Init's own stdio once the program has started (see below), opened while the filter does
     * not apply yet: a read-only profile refuses an open for writing. */
    a->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    /* The filter, now when the profile allows all that init and the program do from here to
     * the program's execve (seccomp_may_load_early): the program inherits it, and a prepared
     * sandbox's start is spared the load (the kernel converts, compiles and caches a filter at
     * each load: 0.1-0.17 ms, the largest step of a command's start before its execve). */
    if (a->early) {
        load_filter(a);
        if (a->notify_wr >= 0)
            init_pass_listener(a, 0);
    }
    CTT(a->early ? "filter-early" : "filter-late");

    /* Ready. A prepared sandbox waits here for its program (sandbox_start); everything that
     * made it a sandbox is done, and the program gets nothing init did not check. */
    init_receive_start(a);
    CTT("start-msg");
    /* corral's own argv strings, which init inherits, are blanked before the program starts, so
     * it never reads a host path or option in /proc/1/cmdline. (The program's argv came in the
     * start message, in pages of its own.) */
    if (a->arg_start && a->arg_len > 12) {
        memset(a->arg_start, 0, a->arg_len);
        memcpy(a->arg_start, "corral-init", 11);
    }

    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    /* vfork semantics (CLONE_VM | CLONE_VFORK): the program shares init's memory only until its
     * execve, and init waits for that; it saves copying the address space (a measurable part of
     * a sandbox's start). With a seccomp listener, the fd table is shared too (CLONE_FILES)
     * until that execve: see program_main. The program runs on a stack of its own, as with
     * posix_spawn: a buffer in this frame, which stays put while init is suspended (and lies
     * within this thread's stack, which AddressSanitizer expects of a stack). */
    char stack[64u << 10] __attribute__((aligned(16)));
    a->listener = -1;
    bool pass = a->notify_wr >= 0 && !a->early; /* the program loads a listener init passes */
    int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | (pass ? CLONE_FILES : 0);
    pid_t pid = clone(program_start, stack + sizeof(stack), flags, a);
    CHILD_CHECK(pid >= 0, fd, "fork: %s", strerror(errno));
#ifdef SPAWN_TRACE
    DBG_FD = 2; /* the program's copy was set in this memory, before its execve */
#endif
    CTT("vforked");
    init_prog_pid = pid;
    if (pass)
        init_pass_listener(a, pid); /* before anything below reuses fd numbers */
    /* init keeps nothing of corral's but its status pipe: corral's other fds (a trail, agent
     * pipes, a workspace) were inherited by the clone and must not sit in the sandbox. Its fd
     * table is made final before the close_range below, which closes the error pipe: the
     * caller takes that EOF as "started" and must find init holding 0-2 on /dev/null and 3,
     * not its caller's stderr or a /dev/null fd still open above 3 (seen by test_zygote when
     * the /dev/null came after). The EOF reaches the caller only once close_range returns. */
    int devnull = a->devnull;
    if (a->status_wr != 3 && devnull == 3)
        devnull = dup(3); /* past the dup2 onto 3 */
    if (a->status_wr != 3 && dup2(a->status_wr, 3) == 3)
        a->status_wr = a->alive_rd = a->go_rd = 3;
    for (int i = 0; i < 3 && devnull >= 0; i++)
        if (devnull != i)
            dup2(devnull, i); /* init must not hold the program's pipes open */
    syscall(SYS_close_range, a->status_wr == 3 ? 4 : 3, ~0U, 0); /* devnull too, when above 3 */
    CTT("closed");
    static const int fwd[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT};
    struct sigaction sa = {.sa_handler = init_forward};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < ARRAY_SIZE(fwd); i++)
        sigaction(fwd[i], &sa, NULL);
    /* Not the caller's mask: a supervisor that blocks SIGTERM for its signalfd would leave init
     * deaf to the very signals it forwards (a timeout's SIGTERM never arriving). */
    sigemptyset(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w == pid) {
            CTT("prog-exit");
            /* The program ended: end everything else it left running, and reap it all, before
             * the status goes out. The status then means "nothing of this sandbox runs any
             * more" (its pipes hold all the output there will be), and the caller can answer
             * on it without waiting for our own exit, which tears the namespaces down (0.4 ms
             * and an RCU grace period here). Orphans are reparented to us, pid 1 of the
             * namespace, so no child left means no process left; kill(-1) from pid 1 reaches
             * every other process of the namespace, and one being forked meanwhile gets the
             * signal too. */
            pid_t more;
            while ((more = waitpid(-1, NULL, WNOHANG)) < 0 && errno == EINTR)
                ;
            if (more >= 0) {
                kill(-1, SIGKILL);
                while (waitpid(-1, NULL, 0) >= 0 || errno == EINTR)
                    ;
            }
            (void)util_write_all(a->status_wr, &st, sizeof(st));
            CTT("reported");
            /* What is left of us is our exit, off every caller's path: at idle priority, the
             * caller the report woke runs at once, not after our exit on this CPU. Only after
             * the report: at idle priority before it, a busy CPU would hold the report back.
             * Under the filter (loaded early), which allows no sched_setscheduler, we yield our
             * CPU to that caller instead. */
            if (!a->early)
                (void)sched_setscheduler(0, SCHED_IDLE, &(struct sched_param){0});
            else
                (void)sched_yield();
            _exit(0);
        }
        if (w < 0 && errno == ECHILD)
            _exit(0);
    }
}

/* ---- parent side ---- */

/* Where this process's argv strings live (fields 48 and 49 of /proc/self/stat). */
static void own_args(char **start, size_t *len)
{
    char buf[2048];
    *start = NULL;
    *len = 0;
    if (util_read_file("/proc/self/stat", buf, sizeof(buf)) < 0)
        return;
    char *p = strrchr(buf, ')');
    unsigned long long v[50] = {0};
    int field = 2;
    for (char *tok = p ? strtok(p + 1, " ") : NULL; tok && field < 49; tok = strtok(NULL, " "))
        v[++field] = strtoull(tok, NULL, 10);
    if (field >= 49 && v[49] > v[48] && v[49] - v[48] < (1u << 20)) {
        *start = (char *)(uintptr_t)v[48];
        *len = (size_t)(v[49] - v[48]);
    }
}

static void *map_exec_page(const char *program)
{
    /* A page at a random address holds the program's path: the filter of a profile without
     * exec authority allows exactly one execve, the one whose path pointer is this address. */
    for (int tries = 0; tries < 16; tries++) {
        uint64_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
            return NULL;
        uintptr_t addr = 0x100000000000ull + (rnd % (0x500000000000ull / 4096)) * 4096;
        void *p = mmap((void *)addr, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == MAP_FAILED)
            continue;
        if (p != (void *)addr) {
            munmap(p, 4096);
            continue;
        }
        snprintf(p, 4096, "%s", program);
        return p;
    }
    return NULL;
}

static int write_id_maps(pid_t pid, const struct sandbox_profile *p, struct cerr *err)
{
    char path[64], map[64];
    snprintf(path, sizeof(path), "/proc/%ld/uid_map", (long)pid);
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->uid, (unsigned)p->host_uid);
    int r = util_write_file(path, map);
    if (r < 0)
        return cerr_set(err, r, "user namespace: cannot write %s: %s", path, strerror(-r));
    snprintf(path, sizeof(path), "/proc/%ld/gid_map", (long)pid);
    snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)p->gid, (unsigned)p->host_gid);
    r = util_write_file(path, map);
    if (r < 0)
        return cerr_set(err, r, "user namespace: cannot write %s: %s", path, strerror(-r));
    return 0;
}

/* The listener init sent (see init_main), checked to be one: it arrived before the error pipe
 * closed, so it is waiting. */
static int recv_listener(int sock)
{
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    if (recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
        return -EPROTO;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(sizeof(int)) || (m.msg_flags & MSG_CTRUNC))
        return -EPROTO;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    char path[64], link[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n < 0 || (link[n] = '\0', strcmp(link, "anon_inode:seccomp notify") != 0)) {
        close(fd);
        return -EPROTO;
    }
    return fd;
}

/* Reads the child's error records until the pipe closes (the program was exec'd, or set-up
 * failed). Returns 0, or the failure with err set. */
static int read_setup_outcome(int fd, const char *program, struct cerr *err)
{
    char buf[sizeof(err->msg) + 8];
    size_t got = 0;
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, 60 * 1000);
        if (pr == 0)
            return cerr_set(err, ETIMEDOUT, "sandbox set-up did not finish within 60 s");
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            return cerr_set(err, errno, "poll: %s", strerror(errno));
        }
        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (got >= sizeof(buf) - 1)
            break;
    }
    if (got == 0)
        return 0;
    buf[got] = '\0';
    if (buf[0] == MSG_EXEC && got >= 1 + sizeof(int)) {
        int e;
        memcpy(&e, buf + 1, sizeof(int));
        return cerr_set(err, e, "cannot execute %s inside the sandbox: %s%s", program, strerror(e),
                        e == ENOENT ? " (is its interpreter or loader visible inside? add it with --ro)"
                                    : "");
    }
    return cerr_set(err, EPERM, "sandbox set-up failed: %s", buf + 1);
}

/* A send of init's set-up on SOCK failed with E: init died (EPIPE; its own reason, when it sent
 * one, comes from EP), or it lives and waits for what was not sent (ENOMEM, say). The socket is
 * shut first, so that a living init reads EOF and leaves rather than hold EP open: the outcome
 * is then read at once, not after read_setup_outcome's 60 s. */
static int setup_send_failed(int sock, int ep, const char *program, int e, struct cerr *err)
{
    int r = e == EPIPE ? cerr_set(err, EPIPE, "the sandbox's init died during set-up")
                       : cerr_set(err, e, "start: cannot send the sandbox's init its set-up: %s",
                                  strerror(e));
    (void)shutdown(sock, SHUT_WR);
    (void)read_setup_outcome(ep, program, err);
    return r;
}

/* The half of a start that needs a process to clone from: the root's detached mounts (host
 * lookups, id-mapped binds), the exec page, and clone3 of init. It runs in the zygote (a fork
 * server made before the supervisor had threads; see zygote.c) or, when none was started, in
 * the caller. SIBLING (the zygote): CLONE_PARENT makes init the supervisor's child, not the
 * zygote's, so the supervisor waits for it, signals it and is its parent for PR_SET_PDEATHSIG,
 * exactly as if it had cloned init itself. F holds init's ends of the supervisor's pipes; they
 * stay the caller's to close. */
int spawn_clone(const struct sandbox_profile *p, const char *program, const struct spawn_fds *f,
                bool sibling, struct spawn_cloned *out, struct cerr *err)
{
    int r;
    struct root_plan plan = {0};
    const char *ll_paths[64];
    size_t n_ll = 0;
    if (sibling)
        TRACE_START();
    void *exec_page = map_exec_page(program);
    if (!exec_page)
        return cerr_set(err, ENOMEM, "cannot map the exec page");
    CTT("start");
    if ((r = root_plan_build(&plan, p, program, err)) < 0)
        goto out;
    if (plan.n > SPAWN_MAX_KEEP - 11) {
        r = cerr_set(err, E2BIG, "too many binds (%zu; at most %d)", plan.n, SPAWN_MAX_KEEP - 11);
        goto out;
    }
    CTT("plan");
    ll_paths[n_ll++] = "/tmp";
    ll_paths[n_ll++] = "/dev/null";
    ll_paths[n_ll++] = "/dev/zero";
    ll_paths[n_ll++] = "/dev/full";
    for (size_t i = 0; i < p->n_binds && n_ll < ARRAY_SIZE(ll_paths); i++)
        if (p->binds[i].writable)
            ll_paths[n_ll++] = p->binds[i].inside ? p->binds[i].inside : p->binds[i].host;

    struct spawn_args a = {
        .p = p,
        .plan = &plan,
        .exec_path = exec_page,
        .ll_paths = ll_paths,
        .n_ll = n_ll,
        .in = f->in,
        .out = f->out,
        .err = f->err,
        .go_rd = f->go_rd,
        .err_wr = f->err_wr,
        .status_wr = f->status_wr,
        .alive_rd = f->go_rd,
        .notify_wr = f->notify_wr,
        .egress_wr = f->egress_wr,
        .listener = -1,
        .ll_rs = -1,
        .early = f->filter_early,
        .devnull = -1,
    };
    own_args(&a.arg_start, &a.arg_len);
    a.no_caps = cap_init();
    a.prog.insns = malloc(BPF_MAXINSNS * sizeof(struct sock_filter));
    if (!a.no_caps || !a.prog.insns) {
        r = cerr_set(err, ENOMEM, "out of memory");
        goto out_args;
    }
    if (p->net != SANDBOX_NET_NONE && (r = net_loopback_prepare(&a.lo_req, err)) < 0)
        goto out_args;
    int pidfd = -1;
    struct clone_args ca = {
        .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                 CLONE_NEWNET | CLONE_PIDFD,
        .pidfd = (uint64_t)(uintptr_t)&pidfd,
        .exit_signal = SIGCHLD,
    };
    if (sibling) {
        /* The kernel refuses an exit signal with CLONE_PARENT: init gets the zygote's own, which
         * is SIGCHLD (it was forked). */
        ca.flags |= CLONE_PARENT;
        ca.exit_signal = 0;
    }
    if (f->cgroup >= 0) {
        /* cgroup v2: born in its cgroup, so no move (and no wait on the cgroup lock) later. */
        ca.flags |= CLONE_INTO_CGROUP;
        ca.cgroup = (uint64_t)f->cgroup;
    }
    fflush(NULL);
    pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
    if (pid < 0) {
        r = cerr_set(err, errno, "cannot create the namespaces (clone3): %s%s", strerror(errno),
                     errno == EPERM || errno == ENOSPC
                         ? " (are user namespaces enabled? see /proc/sys/user/max_user_namespaces)"
                         : "");
        goto out_args;
    }
    if (pid == 0)
        init_main(&a);
    CTT("clone");
    out->pid = pid;
    out->pidfd = pidfd;
    out->exec_ptr = (uint64_t)(uintptr_t)exec_page;
    r = 0;
out_args:
    cap_free(a.no_caps); /* the child has its own copies */
    free(a.prog.insns);
out:
    root_plan_free(&plan);
    munmap(exec_page, 4096); /* init has its own copy, at the same address */
    return r;
}

int sandbox_prepare(const struct sandbox_profile *p, const char *program, struct sandbox_child **out,
                    struct cerr *err)
{
    if (!program || program[0] != '/')
        return cerr_set(err, EINVAL,
                        "program path must be absolute (resolve it with sandbox_find_program)");
    if (p->host_uid == 0 || p->host_gid == 0)
        return cerr_set(
            err, EPERM,
            "refusing to map the sandbox's user to host root; choose an unprivileged host uid/gid");
    if (strlen(program) >= 4000)
        return cerr_set(err, ENAMETOOLONG, "program path too long");
    if (p->no_cgroup && (p->limits.memory || p->limits.pids || p->limits.cpus > 0))
        return cerr_set(err, EINVAL, "budgets need a cgroup, but the profile runs without one");

    int r;
    struct sandbox_child *c = calloc(1, sizeof(*c));
    if (!c || !(c->program = strdup(program))) {
        free(c);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    c->pidfd = c->status_fd = c->notify_fd = c->err_fd = c->np_fd = c->eg_fd = -1;
    c->pid = -1;
    c->parent = p->cgroup_parent;
    struct seccomp_prog prog = {0};
    int go[2] = {-1, -1}, ep[2] = {-1, -1}, np[2] = {-1, -1}, eg[2] = {-1, -1};
    int cgfd = -1;
    size_t n_eg = p->net == SANDBOX_NET_PROXY && p->egress ? sandbox_egress_count(p->egress) : 0;
    if (p->net == SANDBOX_NET_PROXY && !n_eg) {
        r = cerr_set(err, EINVAL, "network \"proxy\" needs the egress listeners to make");
        goto fail;
    }

    TRACE_START();
    /* On v2 init is born in its cgroup (CLONE_INTO_CGROUP): the cgroup is made (and its budgets
     * set) before the clone. On v1 it is made while init builds its root, and init moves itself
     * into it with the tasks files sent after that (see cgroup_task_fds: a move made by another
     * process waits for an RCU grace period). Not root: made first all the same, so that a
     * corral without the rights to make sandboxes fails on the cgroup, with its fix in the
     * message, rather than on whatever step of init's set-up comes first
     * (tests/e2e/exec_sandbox.sh). */
    const struct cgroup *cg_parent = p->cgroup_parent ? p->cgroup_parent->cg : NULL;
    bool early = !p->no_cgroup && (cgroup_born_in() || geteuid() != 0);
    if (early) {
        if ((r = cgroup_create(&p->limits, cg_parent, &c->cg, err)) < 0)
            goto fail;
        cgfd = cgroup_clone_fd(c->cg);
    }
    CTT("cgroup-made");
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0 || pipe2(ep, O_CLOEXEC) < 0 ||
        (p->seccomp.notify && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, np) < 0) ||
        (n_eg && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, eg) < 0)) {
        r = cerr_set(err, errno, "pipe: %s", strerror(errno));
        goto fail;
    }
    struct spawn_fds f = {
        .go_rd = go[0],
        .err_wr = ep[1],
        .status_wr = go[0],
        .notify_wr = np[1],
        .egress_wr = eg[1],
        .in = -1,
        .out = -1,
        .err = -1,
        .cgroup = cgfd,
        .filter_early = seccomp_may_load_early(&p->seccomp),
    };
    struct spawn_cloned cl = {.pid = -1, .pidfd = -1};
    c->started = util_now();
    /* With a zygote every sandbox is cloned by it, a proxy one too (its request carries the
     * listener spec and egress_wr): a threaded supervisor never clones. */
    if (spawn_hooks.clone)
        r = spawn_hooks.clone(p, program, &f, &cl, err);
    else
        r = spawn_clone(p, program, &f, false, &cl, err);
    if (r < 0)
        goto fail;
    pid_t pid = cl.pid;
    c->pid = pid;
    c->pidfd = cl.pidfd;
    close(go[0]);
    go[0] = -1;
    close(ep[1]);
    ep[1] = -1;
    if (np[1] >= 0)
        close(np[1]);
    np[1] = -1;
    if (eg[1] >= 0)
        close(eg[1]);
    eg[1] = -1;

    CTT("cloned");
    if ((r = write_id_maps(pid, p, err)) < 0)
        goto fail;
    CTT("idmaps");
    if (send_byte_fds(go[1], 'g', NULL, 0) < 0) {
        r = cerr_set(err, EPIPE, "the sandbox's init died before set-up");
        goto fail;
    }
    CTT("go-sent");
    /* While init builds its root: a v1 cgroup, and its tasks files for init to move itself. */
    int tfds[CGROUP_MAX_TASK_FDS];
    int ntfds = 0;
    if (!p->no_cgroup && !early && (r = cgroup_create(&p->limits, cg_parent, &c->cg, err)) < 0)
        goto fail;
    if (c->cg && cgfd < 0 && (ntfds = cgroup_task_fds(c->cg, tfds, err)) < 0) {
        r = ntfds;
        goto fail;
    }
    r = send_byte_fds(go[1], 'c', tfds, (size_t)ntfds);
    int send_errno = errno;
    for (int i = 0; i < ntfds; i++)
        close(tfds[i]);
    if (r < 0) {
        r = setup_send_failed(go[1], ep[0], program, send_errno, err);
        goto fail;
    }
    CTT("cgroup");
    if ((r = seccomp_build(&p->seccomp, (const void *)(uintptr_t)cl.exec_ptr, &prog, err)) < 0)
        goto fail;
    CTT("seccomp");
    if ((r = send_filter(go[1], &prog)) < 0) {
        r = setup_send_failed(go[1], ep[0], program, -r, err);
        goto fail;
    }
    CTT("go");
    c->status_fd = steal_fd(&go[1]);
    c->err_fd = steal_fd(&ep[0]);
    c->np_fd = steal_fd(&np[0]);
    c->eg_fd = steal_fd(&eg[0]);
    c->n_eg = n_eg;
    if (cgfd >= 0)
        close(cgfd);
    seccomp_prog_release(&prog);
    *out = c;
    return 0;

fail:
    for (int i = 0; i < 2; i++) {
        if (go[i] >= 0)
            close(go[i]);
        if (ep[i] >= 0)
            close(ep[i]);
        if (np[i] >= 0)
            close(np[i]);
        if (eg[i] >= 0)
            close(eg[i]);
    }
    if (cgfd >= 0)
        close(cgfd);
    seccomp_prog_release(&prog);
    sandbox_child_free(c);
    return r;
}

static void put_str(unsigned char *b, size_t *off, const char *str)
{
    uint32_t l = (uint32_t)strlen(str);
    memcpy(b + *off, &l, 4);
    memcpy(b + *off + 4, str, (size_t)l + 1);
    *off += 4 + (size_t)l + 1;
}

int sandbox_start(struct sandbox_child *c, char *const argv[], char *const envp[], const char *cwd,
                  const struct sandbox_stdio *stdio, struct cerr *err)
{
    if (c->started_prog)
        return cerr_set(err, EALREADY, "sandbox already started");
    if (!argv || !argv[0])
        return cerr_set(err, EINVAL, "start: an empty argv");
    c->started_prog = true;
    if (!envp)
        envp = (char *const *)sandbox_default_env;
    if (!cwd)
        cwd = "/";
    size_t argc = 0, envc = 0, len = 8 + 5 + strlen(cwd);
    for (; argv[argc]; argc++)
        len += 5 + strlen(argv[argc]);
    for (; envp[envc]; envc++)
        len += 5 + strlen(envp[envc]);
    if (len > SPAWN_START_MAX)
        return cerr_set(err, E2BIG,
                        "the program's arguments and environment are too large (%zu bytes; at most %u)",
                        len, SPAWN_START_MAX);
    unsigned char *b = malloc(len);
    if (!b)
        return cerr_set(err, ENOMEM, "out of memory");
    uint32_t n32 = (uint32_t)argc;
    memcpy(b, &n32, 4);
    n32 = (uint32_t)envc;
    memcpy(b + 4, &n32, 4);
    size_t off = 8;
    put_str(b, &off, cwd);
    for (size_t i = 0; i < argc; i++)
        put_str(b, &off, argv[i]);
    for (size_t i = 0; i < envc; i++)
        put_str(b, &off, envp[i]);
    /* The program's stdio travels with the header; -1 is the caller's own. */
    int std[3] = {stdio && stdio->in >= 0 ? stdio->in : 0, stdio && stdio->out >= 0 ? stdio->out : 1,
                  stdio && stdio->err >= 0 ? stdio->err : 2};
    struct spawn_start_hdr h = {.magic = SPAWN_START_MAGIC, .len = (uint32_t)len};
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
    union {
        struct cmsghdr cm;
        char buf[CMSG_SPACE(sizeof(std))];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(std));
    memcpy(CMSG_DATA(cm), std, sizeof(std));
    int r = 0;
    c->started = util_now();
    if (sendmsg(c->status_fd, &m, MSG_NOSIGNAL) != (ssize_t)sizeof(h) ||
        util_write_all(c->status_fd, b, len) < 0)
        r = cerr_set(err, EPIPE, "the sandbox's init died before its program started");
    free(b);
    /* The outcome: EOF on the error pipe once the program is exec'd, or init's reason. */
    int rr = read_setup_outcome(c->err_fd, c->program, err);
    if (r == 0)
        r = rr;
    else if (rr < 0)
        r = rr; /* its own reason is the better message */
    CTT("execd");
    close(c->err_fd);
    c->err_fd = -1;
    if (r == 0 && c->np_fd >= 0 && (c->notify_fd = recv_listener(c->np_fd)) < 0)
        r = cerr_set(err, EPROTO, "seccomp: the sandbox's init did not pass the filter's listener");
    if (c->np_fd >= 0)
        close(c->np_fd);
    c->np_fd = -1;
    /* Sent by init while it was prepared: waiting in the socket now. */
    if (r == 0 && c->eg_fd >= 0) {
        if (sandbox_egress_recv(c->eg_fd, c->egress_fds, c->n_eg) < 0)
            r = cerr_set(err, EPROTO, "egress: the sandbox's init did not pass its listeners");
        else
            c->n_egress = c->n_eg;
    }
    if (c->eg_fd >= 0)
        close(c->eg_fd);
    c->eg_fd = -1;
    return r;
}

int sandbox_spawn(const struct sandbox_profile *p, const char *program, char *const argv[],
                  const struct sandbox_stdio *stdio, struct sandbox_child **out, struct cerr *err)
{
    struct sandbox_child *c = NULL;
#ifdef SPAWN_TRACE
    double t_in = util_now();
#endif
    /* A proxy sandbox is never one prepared ahead: its listeners are its own. */
    bool proxy = p->net == SANDBOX_NET_PROXY;
    int r = spawn_hooks.take && !proxy ? spawn_hooks.take(p, program, &c) : 0;
#ifdef SPAWN_TRACE
    double t_taken = util_now();
#endif
    if (r == 0 && !c)
        r = sandbox_prepare(p, program, &c, err);
    if (r < 0)
        return r;
#ifdef SPAWN_TRACE
    double t_prep = util_now();
    r = sandbox_start(c, argv, p->envp, p->cwd, stdio, err);
    fprintf(stderr, "  spawn: take %.3f prepare %.3f start %.3f ms\n", (t_taken - t_in) * 1e3,
            (t_prep - t_taken) * 1e3, (util_now() - t_prep) * 1e3);
    if (r < 0) {
#else
    if ((r = sandbox_start(c, argv, p->envp, p->cwd, stdio, err)) < 0) {
#endif
        sandbox_child_free(c);
        return r;
    }
    c->refill = spawn_hooks.refill_make && !proxy ? spawn_hooks.refill_make(p, program) : NULL;
    *out = c;
    return 0;
}

int sandbox_child_pidfd(const struct sandbox_child *c)
{
    return c->pidfd;
}
pid_t sandbox_child_pid(const struct sandbox_child *c)
{
    return c->pid;
}
const char *sandbox_child_cgroup(const struct sandbox_child *c)
{
    return cgroup_path(c->cg);
}

int sandbox_child_take_egress_fds(struct sandbox_child *c, int *fds, size_t n)
{
    if (!c->n_egress || n != c->n_egress)
        return -ENOENT;
    memcpy(fds, c->egress_fds, n * sizeof(int));
    c->n_egress = 0;
    return 0;
}

int sandbox_child_take_notify_fd(struct sandbox_child *c)
{
    return steal_fd(&c->notify_fd);
}

int sandbox_child_signal(struct sandbox_child *c, int sig)
{
    if (c->reaped || c->pidfd < 0)
        return -ESRCH;
    if (syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0) < 0)
        return -errno;
    if (sig == SIGKILL)
        cgroup_kill(c->cg);
    return 0;
}

int sandbox_child_usage(const struct sandbox_child *c, struct sandbox_result *r)
{
    cgroup_usage(c->cg, r);
    r->wall_sec = util_now() - c->started;
    return 0;
}

int sandbox_child_end_fd(const struct sandbox_child *c)
{
    return c->started_prog && c->status_fd >= 0 && !c->status_hup && !c->status_got ? c->status_fd
                                                                                     : c->pidfd;
}

bool sandbox_child_ended(struct sandbox_child *c)
{
    if (c->status_got || c->reaped)
        return true;
    if (c->started_prog && c->status_fd >= 0 && !c->status_hup) {
        struct pollfd pf = {.fd = c->status_fd, .events = POLLIN};
        if (poll(&pf, 1, 0) <= 0)
            return false;
        /* Init writes the 4 bytes at once, or hangs up without them. */
        int st;
        if (util_read_all(c->status_fd, &st, sizeof(st)) == (ssize_t)sizeof(st)) {
            c->status = st;
            c->status_got = true;
            return true;
        }
        c->status_hup = true;
    }
    struct pollfd pf = {.fd = c->pidfd, .events = POLLIN};
    return poll(&pf, 1, 0) > 0;
}

static void fill_status(struct sandbox_result *r, int st)
{
    r->exited = WIFEXITED(st);
    r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    r->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static int child_wait(struct sandbox_child *c, struct sandbox_result *r, bool usage, struct cerr *err)
{
#ifdef SPAWN_TRACE
    double t_w = util_now();
#endif
    memset(r, 0, sizeof(*r));
    if (c->reaped || c->waited)
        return cerr_set(err, ECHILD, "sandbox already waited for");
    c->waited = true;
    if (c->status_got) {
        /* Init reported the end and reaped everything else: nothing of the sandbox runs. Its
         * own exit (the namespaces' teardown) is not waited for here: sandbox_child_free hands
         * it to the background, and the cgroup goes once init is reaped. */
        r->wall_sec = util_now() - c->started;
        fill_status(r, c->status);
        if (usage)
            cgroup_usage(c->cg, r);
        return 0;
    }
    siginfo_t si = {0};
#ifdef SPAWN_TRACE
    struct pollfd tp = {.fd = c->status_fd, .events = POLLIN};
    poll(&tp, 1, -1);
    CTT("status-ready");
#endif
    while (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED) < 0)
        if (errno != EINTR)
            return cerr_set(err, errno, "waitid: %s", strerror(errno));
    c->reaped = true;
    r->wall_sec = util_now() - c->started;
    int st;
    ssize_t n = c->status_fd >= 0 ? util_read_all(c->status_fd, &st, sizeof(st)) : -1;
    if (n == (ssize_t)sizeof(st)) {
        fill_status(r, st);
    } else if (si.si_code == CLD_EXITED) {
        r->exited = true;
        r->exit_code = si.si_status;
    } else {
        r->exited = false;
        r->signal = si.si_status; /* init itself was killed: the whole sandbox ended with it */
    }
    CTT("waited");
    if (spawn_hooks.drop_children)
        spawn_hooks.drop_children(c);
    if (c->refill)
        spawn_hooks.refill(c->refill);
    c->refill = NULL;
    if (usage)
        cgroup_usage(c->cg, r);
    if (!spawn_hooks.destroy_later || !spawn_hooks.destroy_later(c->cg, c->parent))
        cgroup_destroy(c->cg);
#ifdef SPAWN_TRACE
    fprintf(stderr, "  wait: %.3f ms\n", (util_now() - t_w) * 1e3);
#endif
    CTT("destroyed");
    c->cg = NULL;
    return 0;
}

int sandbox_child_wait(struct sandbox_child *c, struct sandbox_result *r, struct cerr *err)
{
    return child_wait(c, r, true, err);
}

int sandbox_child_wait_status(struct sandbox_child *c, struct sandbox_result *r, struct cerr *err)
{
    return child_wait(c, r, false, err);
}

void spawn_child_finish(struct sandbox_child *c)
{
    /* Init has reported and has nothing left to do but exit; yet a host process of the
     * sandbox's uid may signal it, and one stopped between its report and its exit would hold
     * this wait for ever, and with it the background thread, the agent's end and corral's. A
     * SIGKILL ends a stopped process too (test_zygote stopped_init_after_report_still_ends). */
    syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
    /* It left for its exit at idle priority (init_main), which a busy CPU would put off for
     * ever; its exit is now on the path of the next prepared sandbox: normal priority again.
     * (It is our unreaped child: the pid cannot have been reused.) */
    (void)sched_setscheduler(c->pid, SCHED_OTHER, &(struct sched_param){0});
    siginfo_t si;
    while (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED) < 0 && errno == EINTR)
        ;
    c->reaped = true;
    if (c->refill)
        spawn_hooks.refill(c->refill); /* now that this one's cgroup is about to go */
    c->refill = NULL;
    sandbox_child_free(c);
}

void sandbox_child_free(struct sandbox_child *c)
{
    if (!c)
        return;
    /* Init reported the end and is exiting on its own: reaping it waits for its namespaces'
     * teardown, which the background does when it can (off a command's answer). */
    if (c->status_got && !c->reaped) {
        if (!spawn_hooks.release_later || !spawn_hooks.release_later(c, c->parent))
            spawn_child_finish(c);
        return;
    }
    if (spawn_hooks.drop_children)
        spawn_hooks.drop_children(c); /* prepared sandboxes nested in our cgroup go first */
    if (c->pid > 0 && !c->reaped) {
        if (c->pidfd >= 0)
            syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
        cgroup_kill(c->cg);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    cgroup_destroy(c->cg);
    if (c->pidfd >= 0)
        close(c->pidfd);
    if (c->status_fd >= 0)
        close(c->status_fd);
    if (c->notify_fd >= 0)
        close(c->notify_fd);
    if (c->err_fd >= 0)
        close(c->err_fd);
    if (c->np_fd >= 0)
        close(c->np_fd);
    if (c->eg_fd >= 0)
        close(c->eg_fd);
    for (size_t i = 0; i < c->n_egress; i++)
        close(c->egress_fds[i]);
    if (c->refill)
        spawn_hooks.refill_drop(c->refill);
    free(c->program);
    free(c);
}
