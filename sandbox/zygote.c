/* sandbox/zygote.c: the fork server (see zygote.h).
 *
 * Why: sandbox_spawn used to clone init from whichever thread asked (a pool thread for every
 * executeCommand). A child of a threaded process inherits every fd of the process and locks
 * that other threads held at that instant; anything it did besides exec risked a hang (glibc's
 * set*id wrappers, malloc) or a leak (pipes of a sandbox another thread was starting). The
 * zygote is forked once, before the supervisor has a thread, closes everything but its socket,
 * and from then on clones on request: one thread, a near-empty fd table, nothing to inherit.
 *
 * Wire (a SOCK_STREAM socketpair, one request at a time):
 *   request: struct zygote_hdr with the fds of its mask as SCM_RIGHTS, then LEN bytes of body
 *            (zygote_encode: fixed fields, then length-prefixed strings)
 *   answer:  struct zygote_reply, with init's pidfd as SCM_RIGHTS when status is 0
 * The zygote checks every length (header, body, strings, counts) before use and answers a
 * malformed body with an error; a broken stream (bad magic, short read) ends it. */
#include "sandbox/zygote.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define ZYGOTE_REQ_MAGIC 0x315a5143u /* "CQZ1" */
#define ZYGOTE_REP_MAGIC 0x315a5243u /* "CRZ1" */
enum { ZYGOTE_NFDS = 9 };            /* the fields of struct spawn_fds, in order */
/* A bind named by an fd of the supervisor's (/proc/self/fd/N: the broker binds the workspace
 * through the directory fd it serves, so a renamed path cannot redirect it) travels as that fd,
 * since the same name in the zygote would be another file or none. */
enum { ZYGOTE_MAX_BIND_FDS = 8, ZYGOTE_MAX_FDS = ZYGOTE_NFDS + ZYGOTE_MAX_BIND_FDS };

struct zygote_hdr {
    uint32_t magic;
    uint32_t len;      /* body bytes that follow */
    uint32_t fdmask;   /* which of the ZYGOTE_NFDS slots came as SCM_RIGHTS, in slot order */
    uint32_t nbindfds; /* then this many binds' fds, in bind order (ZB_FD) */
};

struct zygote_reply {
    uint32_t magic;
    int32_t status; /* 0, or a negative errno with msg */
    int32_t pid;
    uint32_t reserved;
    uint64_t exec_ptr;
    char msg[sizeof(((struct cerr *)0)->msg)];
};

static int zygote_sock = -1; /* -1 once the stream broke: spawns then fail, never fall back */
static pid_t zygote_pid = -1;
static bool zygote_started;
static unsigned long zygote_proxy_clones; /* under zygote_lock */
static pthread_mutex_t zygote_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the body ---- */

struct zbuf {
    unsigned char *b;
    size_t len, cap;
    bool oom;
};

static void zb_put(struct zbuf *z, const void *p, size_t n)
{
    if (z->oom)
        return;
    if (z->len + n > z->cap) {
        size_t cap = z->cap ? z->cap : 1024;
        while (cap < z->len + n)
            cap *= 2;
        unsigned char *m = realloc(z->b, cap);
        if (!m) {
            z->oom = true;
            return;
        }
        z->b = m;
        z->cap = cap;
    }
    memcpy(z->b + z->len, p, n);
    z->len += n;
}
static void zb_u32(struct zbuf *z, uint32_t v)
{
    zb_put(z, &v, sizeof(v));
}
static void zb_u64(struct zbuf *z, uint64_t v)
{
    zb_put(z, &v, sizeof(v));
}
static void zb_str(struct zbuf *z, const char *s)
{
    size_t n = strlen(s);
    zb_u32(z, (uint32_t)n);
    zb_put(z, s, n + 1);
}

enum {
    ZF_LANDLOCK = 1u << 0,
    ZF_ENVP = 1u << 1,
    ZF_CWD = 1u << 2,
    ZF_HOSTNAME = 1u << 3,
    ZF_EGRESS = 1u << 4, /* the egress listener spec follows the environment */
    ZF_FILTER_EARLY = 1u << 5, /* init loads the filter while prepared (the profile allows it) */
    ZB_WRITABLE = 1u << 0,
    ZB_OPTIONAL = 1u << 1,
    ZB_INSIDE = 1u << 2,
    ZB_FD = 1u << 3, /* the host is the request's next bind fd, not a path */
};

/* The N of a host path "/proc/self/fd/N", or -1. */
static int self_fd_path(const char *host)
{
    static const char pre[] = "/proc/self/fd/";
    if (strncmp(host, pre, sizeof(pre) - 1))
        return -1;
    const char *d = host + sizeof(pre) - 1;
    long v = 0;
    if (!*d)
        return -1;
    for (; *d; d++) {
        if (*d < '0' || *d > '9' || v > 1 << 24)
            return -1;
        v = v * 10 + (*d - '0');
    }
    return (int)v;
}

static size_t count_strv(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/* Only what the cloning side reads: the root (binds, tmp size, ids), init's set-up (hostname,
 * network, rlimits, landlock, cwd) and the program's argv and environment. Budgets, seccomp and
 * the cgroup stay with the supervisor, which applies them; of the filter only whether init may load
 * it while prepared (ZF_FILTER_EARLY). */
int zygote_encode(const struct sandbox_profile *p, const char *program, char *const argv[],
                  unsigned char **buf, size_t *len, int *bind_fds, size_t *n_bind_fds, struct cerr *err)
{
    struct zbuf z = {0};
    *n_bind_fds = 0;
    /* The listener spec only with network "proxy" (spawn.c ignores it otherwise). */
    const struct sandbox_egress *eg = p->net == SANDBOX_NET_PROXY ? p->egress : NULL;
    uint32_t flags = (p->landlock ? ZF_LANDLOCK : 0) | (p->envp ? ZF_ENVP : 0) | (p->cwd ? ZF_CWD : 0) |
                     (p->hostname ? ZF_HOSTNAME : 0) | (eg ? ZF_EGRESS : 0) |
                     (seccomp_may_load_early(&p->seccomp) ? ZF_FILTER_EARLY : 0);
    size_t argc = count_strv(argv), envc = count_strv(p->envp);
    zb_u32(&z, (uint32_t)p->net);
    zb_u32(&z, flags);
    zb_u32(&z, (uint32_t)p->uid);
    zb_u32(&z, (uint32_t)p->gid);
    zb_u32(&z, (uint32_t)p->host_uid);
    zb_u32(&z, (uint32_t)p->host_gid);
    zb_u64(&z, p->limits.tmp_size);
    zb_u64(&z, p->limits.nofile);
    zb_u64(&z, p->limits.fsize);
    zb_u32(&z, (uint32_t)p->n_binds);
    zb_u32(&z, (uint32_t)argc);
    zb_u32(&z, (uint32_t)envc);
    zb_str(&z, program);
    if (p->hostname)
        zb_str(&z, p->hostname);
    if (p->cwd)
        zb_str(&z, p->cwd);
    for (size_t i = 0; i < p->n_binds; i++) {
        const struct sandbox_bind *b = &p->binds[i];
        int bfd = self_fd_path(b->host);
        if (bfd >= 0 && bind_fds) {
            if (*n_bind_fds == ZYGOTE_MAX_BIND_FDS) {
                free(z.b);
                return cerr_set(err, E2BIG, "zygote: more than %d binds name an fd",
                                ZYGOTE_MAX_BIND_FDS);
            }
            bind_fds[(*n_bind_fds)++] = bfd;
        } else
            bfd = -1;
        zb_u32(&z, (b->writable ? ZB_WRITABLE : 0) | (b->optional ? ZB_OPTIONAL : 0) |
                       (b->inside ? ZB_INSIDE : 0) | (bfd >= 0 ? ZB_FD : 0));
        if (bfd < 0)
            zb_str(&z, b->host);
        if (b->inside)
            zb_str(&z, b->inside);
    }
    for (size_t i = 0; i < argc; i++)
        zb_str(&z, argv[i]);
    for (size_t i = 0; i < envc; i++)
        zb_str(&z, p->envp[i]);
    if (eg) {
        const struct sandbox_egress *g = eg;
        if (g->n_capture > SANDBOX_EGRESS_MAX_CAPTURE) {
            free(z.b);
            return cerr_set(err, E2BIG, "zygote: more than %d capture ports",
                            SANDBOX_EGRESS_MAX_CAPTURE);
        }
        zb_u32(&z, g->http_port);
        zb_u32(&z, g->socks_port);
        zb_u32(&z, g->dns ? 1 : 0);
        zb_u32(&z, (uint32_t)g->n_capture);
        for (size_t i = 0; i < g->n_capture; i++)
            zb_u32(&z, g->capture[i]);
    }
    if (z.oom) {
        free(z.b);
        return cerr_set(err, ENOMEM, "zygote: out of memory");
    }
    if (z.len > ZYGOTE_MAX_REQUEST) {
        free(z.b);
        return cerr_set(
            err, E2BIG,
            "zygote: the command's arguments and environment are too large (%zu bytes; at most %u)",
            z.len, ZYGOTE_MAX_REQUEST);
    }
    *buf = z.b;
    *len = z.len;
    return 0;
}

struct zreader {
    const unsigned char *b;
    size_t len, off;
    bool bad;
};

static uint32_t zr_u32(struct zreader *r)
{
    uint32_t v = 0;
    if (r->bad || r->len - r->off < sizeof(v)) {
        r->bad = true;
        return 0;
    }
    memcpy(&v, r->b + r->off, sizeof(v));
    r->off += sizeof(v);
    return v;
}
static uint64_t zr_u64(struct zreader *r)
{
    uint64_t v = 0;
    if (r->bad || r->len - r->off < sizeof(v)) {
        r->bad = true;
        return 0;
    }
    memcpy(&v, r->b + r->off, sizeof(v));
    r->off += sizeof(v);
    return v;
}
/* A string of exactly its stated length, NUL-terminated, with no NUL inside. */
static const char *zr_str(struct zreader *r)
{
    uint32_t n = zr_u32(r);
    if (r->bad || r->len - r->off < (size_t)n + 1) {
        r->bad = true;
        return NULL;
    }
    const char *s = (const char *)r->b + r->off;
    if (s[n] != '\0' || memchr(s, '\0', n)) {
        r->bad = true;
        return NULL;
    }
    r->off += (size_t)n + 1;
    return s;
}

/* Ports fit 16 bits, dns is 0 or 1, the capture count fits its array, and at least one
 * listener is asked for (a proxy sandbox without one would have nothing to reach). */
static int decode_egress(struct zreader *r, struct sandbox_egress *g)
{
    uint32_t http = zr_u32(r), socks = zr_u32(r), dns = zr_u32(r), n = zr_u32(r);
    if (r->bad || http > 65535 || socks > 65535 || dns > 1 || n > SANDBOX_EGRESS_MAX_CAPTURE)
        return -1;
    g->http_port = (uint16_t)http;
    g->socks_port = (uint16_t)socks;
    g->dns = dns;
    g->n_capture = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t port = zr_u32(r);
        if (r->bad || port == 0 || port > 65535)
            return -1;
        g->capture[i] = (uint16_t)port;
    }
    return sandbox_egress_count(g) ? 0 : -1;
}

void zygote_decoded_free(struct zygote_decoded *d)
{
    free(d->fd_paths);
    free(d->argv);
    free(d->envp);
    free(d->binds);
    memset(d, 0, sizeof(*d));
}

int zygote_decode(const unsigned char *buf, size_t len, const int *bind_fds, size_t n_bind_fds,
                  struct zygote_decoded *d, struct cerr *err)
{
    size_t used_fds = 0;
    memset(d, 0, sizeof(*d));
    struct zreader r = {.b = buf, .len = len};
    struct sandbox_profile *p = &d->p;
    uint32_t net = zr_u32(&r), flags = zr_u32(&r);
    p->uid = zr_u32(&r);
    p->gid = zr_u32(&r);
    p->host_uid = zr_u32(&r);
    p->host_gid = zr_u32(&r);
    p->limits.tmp_size = zr_u64(&r);
    p->limits.nofile = zr_u64(&r);
    p->limits.fsize = zr_u64(&r);
    uint32_t nb = zr_u32(&r), argc = zr_u32(&r), envc = zr_u32(&r);
    if (r.bad)
        return cerr_set(err, EPROTO, "zygote: request too short");
    if (net > SANDBOX_NET_PROXY)
        return cerr_set(err, EPROTO, "zygote: unknown network mode %u", net);
    if ((net == SANDBOX_NET_PROXY) != !!(flags & ZF_EGRESS))
        return cerr_set(err, EPROTO, "zygote: the egress listeners come with network \"proxy\" only");
    p->net = (enum sandbox_net)net;
    p->landlock = flags & ZF_LANDLOCK;
    d->filter_early = flags & ZF_FILTER_EARLY;
    /* Each string takes at least 5 bytes: a count the body cannot hold is refused before any
     * allocation. */
    size_t left = len - r.off;
    if ((uint64_t)nb * 9 > left || (uint64_t)argc * 5 > left || (uint64_t)envc * 5 > left ||
        ((uint64_t)nb * 9 + (uint64_t)argc * 5 + (uint64_t)envc * 5) > left)
        return cerr_set(err, EPROTO,
                        "zygote: counts (%u binds, %u arguments, %u variables) exceed the request", nb,
                        argc, envc);
    d->program = zr_str(&r);
    if (flags & ZF_HOSTNAME)
        p->hostname = zr_str(&r);
    if (flags & ZF_CWD)
        p->cwd = zr_str(&r);
    d->binds = nb ? calloc(nb, sizeof(*d->binds)) : NULL;
    d->argv = calloc((size_t)argc + 1, sizeof(char *));
    d->envp = (flags & ZF_ENVP) ? calloc((size_t)envc + 1, sizeof(char *)) : NULL;
    d->fd_paths = n_bind_fds ? calloc(n_bind_fds, sizeof(*d->fd_paths)) : NULL;
    if ((nb && !d->binds) || !d->argv || ((flags & ZF_ENVP) && !d->envp) ||
        (n_bind_fds && !d->fd_paths)) {
        zygote_decoded_free(d);
        return cerr_set(err, ENOMEM, "zygote: out of memory");
    }
    for (uint32_t i = 0; i < nb && !r.bad; i++) {
        uint32_t bf = zr_u32(&r);
        d->binds[i].writable = bf & ZB_WRITABLE;
        d->binds[i].optional = bf & ZB_OPTIONAL;
        if (bf & ZB_FD) {
            if (used_fds == n_bind_fds) {
                r.bad = true;
                break;
            }
            snprintf(d->fd_paths[used_fds], sizeof(d->fd_paths[used_fds]), "/proc/self/fd/%d",
                     bind_fds[used_fds]);
            d->binds[i].host = d->fd_paths[used_fds++];
        } else
            d->binds[i].host = zr_str(&r);
        if (bf & ZB_INSIDE)
            d->binds[i].inside = zr_str(&r);
    }
    for (uint32_t i = 0; i < argc && !r.bad; i++)
        d->argv[i] = (char *)zr_str(&r);
    for (uint32_t i = 0; i < envc && d->envp && !r.bad; i++)
        d->envp[i] = (char *)zr_str(&r);
    if ((flags & ZF_EGRESS) && !r.bad && decode_egress(&r, &d->egress) < 0) {
        zygote_decoded_free(d);
        return cerr_set(err, EPROTO, "zygote: a malformed egress listener spec");
    }
    if (r.bad || r.off != len || !d->program || used_fds != n_bind_fds) {
        zygote_decoded_free(d);
        return cerr_set(
            err, EPROTO,
            "zygote: malformed request (a string runs past its end, or bytes are left over)");
    }
    p->binds = d->binds;
    p->n_binds = nb;
    p->envp = d->envp;
    p->egress = (flags & ZF_EGRESS) ? &d->egress : NULL;
    return 0;
}

/* ---- fds over the socket ---- */

static ssize_t send_with_fds(int sock, const void *data, size_t len, const int *fds, size_t nfds)
{
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * ZYGOTE_MAX_FDS)];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds) {
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    ssize_t n;
    while ((n = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return n;
}

/* Reads exactly LEN bytes; the first segment may carry up to MAXFDS fds (stored in FDS, count in
 * *NFDS; any beyond MAXFDS, or a truncated control message, is an error and closes what came). */
static int recv_with_fds(int sock, void *data, size_t len, int *fds, size_t maxfds, size_t *nfds)
{
    size_t got = 0;
    *nfds = 0;
    while (got < len) {
        struct iovec iov = {.iov_base = (char *)data + got, .iov_len = len - got};
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int) * ZYGOTE_MAX_FDS)];
        } u;
        struct msghdr m = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
        ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? -EPIPE : -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                if (*nfds < maxfds && got == 0)
                    fds[(*nfds)++] = fd;
                else {
                    close(fd);
                    m.msg_flags |= MSG_CTRUNC;
                }
            }
        }
        if (m.msg_flags & MSG_CTRUNC) {
            for (size_t i = 0; i < *nfds; i++)
                close(fds[i]);
            *nfds = 0;
            return -EPROTO;
        }
        got += (size_t)n;
    }
    return 0;
}

/* ---- the zygote's side ---- */

static void zygote_reply_send(int sock, int status, const struct spawn_cloned *cl, const struct cerr *e)
{
    struct zygote_reply rep = {.magic = ZYGOTE_REP_MAGIC, .status = status};
    int fds[1];
    size_t nfds = 0;
    if (status == 0) {
        rep.pid = cl->pid;
        rep.exec_ptr = cl->exec_ptr;
        fds[nfds++] = cl->pidfd;
    } else
        snprintf(rep.msg, sizeof(rep.msg), "%s", e->msg);
    if (send_with_fds(sock, &rep, sizeof(rep), fds, nfds) != (ssize_t)sizeof(rep))
        _exit(0); /* the supervisor is gone */
}

/* One request: everything received is closed before the next, so the zygote never holds a
 * pipe of a sandbox whose start is over (and no init cloned later inherits one). */
static void zygote_serve_one(int sock)
{
    struct zygote_hdr h;
    int fds[ZYGOTE_MAX_FDS];
    size_t nfds = 0;
    if (recv_with_fds(sock, &h, sizeof(h), fds, ZYGOTE_MAX_FDS, &nfds) < 0)
        _exit(0);
    if (h.magic != ZYGOTE_REQ_MAGIC || h.len == 0 || h.len > ZYGOTE_MAX_REQUEST ||
        (h.fdmask >> ZYGOTE_NFDS) || h.nbindfds > ZYGOTE_MAX_BIND_FDS ||
        (size_t)__builtin_popcount(h.fdmask) + h.nbindfds != nfds)
        _exit(0); /* out of step with the supervisor: nothing after this can be trusted */
    unsigned char *body = malloc(h.len);
    if (!body || util_read_all(sock, body, h.len) != (ssize_t)h.len)
        _exit(0);
    int slot[ZYGOTE_NFDS], k = 0;
    for (int i = 0; i < ZYGOTE_NFDS; i++)
        slot[i] = (h.fdmask & (1u << i)) ? fds[k++] : -1;
    struct spawn_fds f = {slot[0], slot[1], slot[2], slot[3], slot[4],
                          slot[5], slot[6], slot[7], slot[8], false};
    struct cerr e = {0};
    struct spawn_cloned cl = {.pid = -1, .pidfd = -1};
    struct zygote_decoded d;
    int r = zygote_decode(body, h.len, fds + k, h.nbindfds, &d, &e);
    if (r == 0 && (f.go_rd < 0 || f.err_wr < 0 || f.status_wr < 0))
        r = cerr_set(&e, EPROTO, "zygote: a request without init's pipes");
    if (r == 0 && (d.p.net == SANDBOX_NET_PROXY) != (f.egress_wr >= 0))
        r = cerr_set(&e, EPROTO, "zygote: network \"proxy\" needs its egress socket, and only it");
    if (r == 0) {
        f.filter_early = d.filter_early;
        r = spawn_clone(&d.p, d.program, &f, true, &cl, &e);
        zygote_decoded_free(&d);
    }
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    free(body);
    zygote_reply_send(sock, r, &cl, &e);
    if (cl.pidfd >= 0)
        close(cl.pidfd);
}

__attribute__((noreturn)) static void zygote_main(int sock, pid_t parent)
{
    /* Dies with the supervisor; the socket's EOF says the same when it exits cleanly. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(0);
    (void)prctl(PR_SET_NAME, "corral-zygote", 0, 0, 0);
    /* Only the socket and stderr (for SPAWN_TRACE and a crash report) stay; stdin and stdout
     * become /dev/null, so the zygote keeps no pipe of the caller's open. A program's stdio
     * (the supervisor's own when it inherits) reaches its init in the start message. */
    if (sock != 3) {
        if (dup2(sock, 3) < 0)
            _exit(0);
        sock = 3;
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    syscall(SYS_close_range, 4, ~0U, 0);
    /* Ctrl-C reaches the whole process group: the supervisor decides what ends, and may still
     * start sandboxes while it winds down. init resets its mask (see init_main). */
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGQUIT);
    sigaddset(&s, SIGPIPE);
    sigprocmask(SIG_BLOCK, &s, NULL);
    for (;;)
        zygote_serve_one(sock);
}

/* Threads of this process, from /proc/self/stat (field 20). */
static long own_threads(void)
{
    char buf[1024];
    if (util_read_file("/proc/self/stat", buf, sizeof(buf)) < 0)
        return -1;
    char *p = strrchr(buf, ')');
    int field = 2;
    for (char *tok = p ? strtok(p + 1, " ") : NULL; tok; tok = strtok(NULL, " "))
        if (++field == 20)
            return strtol(tok, NULL, 10);
    return -1;
}

int zygote_start(struct cerr *err)
{
    if (zygote_started)
        return 0;
    if (own_threads() != 1)
        return cerr_set(err, EBUSY, "zygote: must be started before the process has threads");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return cerr_set(err, errno, "zygote: socketpair: %s", strerror(errno));
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return cerr_set(err, e, "zygote: fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(sv[0]);
        zygote_main(sv[1], parent);
    }
    close(sv[1]);
    zygote_sock = sv[0];
    zygote_pid = pid;
    zygote_started = true;
    /* From now on sandbox_spawn clones through us, and keeps prepared sandboxes (warm.c). */
    static const struct spawn_hooks hooks = {
        .clone = zygote_clone,
        .take = warm_take,
        .refill_make = warm_refill_make,
        .refill = warm_refill,
        .refill_drop = warm_refill_drop,
        .drop_children = warm_drop_children,
        .destroy_later = warm_destroy_later,
        .release_later = warm_release_later,
    };
    spawn_hooks_set(&hooks);
    return 0;
}

/* True from zygote_start on, even when the zygote has died since: sandbox_spawn must then fail,
 * not clone from a threaded caller. */
bool zygote_running(void)
{
    return zygote_started;
}

/* The stream is out of step (a failed send or answer): no later request could be read right. */
static void zygote_broken(void)
{
    if (zygote_sock >= 0)
        close(zygote_sock);
    zygote_sock = -1;
}

void zygote_release(void)
{
    if (!zygote_started)
        return;
    warm_stop(); /* its prepares need the zygote */
    pthread_mutex_lock(&zygote_lock);
    zygote_broken(); /* EOF: it exits */
    pthread_mutex_unlock(&zygote_lock);
}

void zygote_stop(void)
{
    zygote_release();
    if (zygote_pid <= 0)
        return;
    while (waitpid(zygote_pid, NULL, 0) < 0 && errno == EINTR)
        ;
    zygote_pid = -1;
}

unsigned long zygote_proxy_clone_count(void)
{
    pthread_mutex_lock(&zygote_lock);
    unsigned long n = zygote_proxy_clones;
    pthread_mutex_unlock(&zygote_lock);
    return n;
}

int zygote_clone(const struct sandbox_profile *p, const char *program, const struct spawn_fds *f,
                 struct spawn_cloned *out, struct cerr *err)
{
    unsigned char *body = NULL;
    size_t len = 0;
    int bind_fds[ZYGOTE_MAX_BIND_FDS];
    size_t n_bind_fds = 0;
    /* The program's argv, environment and stdio come later, in sandbox_start. */
    struct sandbox_profile q = *p;
    q.envp = NULL;
    q.cwd = NULL;
    int r = zygote_encode(&q, program, NULL, &body, &len, bind_fds, &n_bind_fds, err);
    if (r < 0)
        return r;
    int slot[ZYGOTE_NFDS] = {f->go_rd, f->err_wr, f->status_wr, f->notify_wr, f->in,
                             f->out,   f->err,    f->cgroup,    f->egress_wr};
    int fds[ZYGOTE_MAX_FDS];
    size_t nfds = 0;
    struct zygote_hdr h = {
        .magic = ZYGOTE_REQ_MAGIC, .len = (uint32_t)len, .nbindfds = (uint32_t)n_bind_fds};
    for (int i = 0; i < ZYGOTE_NFDS; i++)
        if (slot[i] >= 0 && fcntl(slot[i], F_GETFD) >= 0) {
            h.fdmask |= 1u << i;
            fds[nfds++] = slot[i];
        }
    for (size_t i = 0; i < n_bind_fds; i++)
        fds[nfds++] = bind_fds[i];
    struct zygote_reply rep;
    int rfd[1];
    size_t nr = 0;
    pthread_mutex_lock(&zygote_lock);
    if (zygote_sock < 0)
        r = cerr_set(err, ESRCH, "zygote: the sandbox fork server has ended; no sandbox can start");
    else if (send_with_fds(zygote_sock, &h, sizeof(h), fds, nfds) != (ssize_t)sizeof(h) ||
             util_write_all(zygote_sock, body, len) < 0) {
        r = cerr_set(err, EPIPE, "zygote: the sandbox fork server has ended (%s); no sandbox can start",
                     strerror(errno));
        zygote_broken();
    } else if ((r = recv_with_fds(zygote_sock, &rep, sizeof(rep), rfd, 1, &nr)) < 0) {
        r = cerr_set(err, -r,
                     "zygote: no answer from the sandbox fork server (%s); no sandbox can start",
                     strerror(-r));
        zygote_broken();
    }
    if (r == 0 && rep.magic == ZYGOTE_REP_MAGIC && rep.status == 0 && p->net == SANDBOX_NET_PROXY)
        zygote_proxy_clones++;
    pthread_mutex_unlock(&zygote_lock);
    free(body);
    if (r < 0)
        return r;
    if (rep.magic != ZYGOTE_REP_MAGIC || (rep.status == 0 && (nr != 1 || rep.pid <= 0)) ||
        rep.status > 0) {
        for (size_t i = 0; i < nr; i++)
            close(rfd[i]);
        return cerr_set(err, EPROTO, "zygote: a malformed answer");
    }
    if (rep.status < 0) {
        for (size_t i = 0; i < nr; i++)
            close(rfd[i]);
        rep.msg[sizeof(rep.msg) - 1] = '\0';
        return cerr_set(err, -rep.status, "%s", rep.msg);
    }
    out->pid = rep.pid;
    out->pidfd = rfd[0];
    out->exec_ptr = rep.exec_ptr;
    return 0;
}
