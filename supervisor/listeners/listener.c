/* supervisor/listeners/listener.c: see listeners/listener.h. The answer path is one RECV and one SEND
 * ioctl; only a recorded denial adds a /proc read (the pid inside the sandbox) and its share of
 * one commit per batch. */
#include "supervisor/listeners/listener.h"

#include "supervisor/trail/trail.h"

#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

/* Linux 6.6: the kernel wakes the waiting caller on this CPU at once when answered (older
 * headers lack the names; older kernels refuse the ioctl, which only costs latency). */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define TABLE_SLOTS 1024 /* distinct (arch, nr) pairs counted; the rest share one counter */
#define BATCH_MAX 64

struct counter {
    uint32_t arch;
    int nr;
    bool used;
    unsigned recorded; /* entries written one by one */
    uint64_t count;    /* denials in all */
};

struct listener {
    int fd;
    struct trail *trail;
    char *workspace;
    const struct sandbox_seccomp *profile;
    unsigned per_syscall;
    unsigned max_recorded, recorded; /* one-by-one entries: the run's cap, and so far */
    size_t req_size, resp_size;      /* the kernel's struct sizes (SECCOMP_GET_NOTIF_SIZES) */
    struct seccomp_notif *req;
    struct seccomp_notif_resp *resp;
    struct counter table[TABLE_SLOTS];
    uint64_t overflow; /* denials of pairs past TABLE_SLOTS */
    uint64_t total;
};

int listener_new(int listener, const struct listener_opts *o, struct listener **out, struct cerr *err)
{
    struct seccomp_notif_sizes sz = {0};
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0) {
        int e = errno;
        close(listener);
        return cerr_set(err, e, "seccomp: cannot read the notification sizes: %s", strerror(e));
    }
    struct listener *n = calloc(1, sizeof(*n));
    if (!n) {
        close(listener);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    n->fd = listener;
    (void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
    n->trail = o->trail;
    n->profile = o->profile;
    n->per_syscall = o->per_syscall ? o->per_syscall : SCNOTIFY_PER_SYSCALL;
    /* Many distinct syscalls (numbers with no syscall behind them cost nothing to call) must not
     * multiply the per-syscall bound: the run's total is capped too. */
    n->max_recorded = o->max_recorded ? o->max_recorded : SCNOTIFY_MAX_RECORDED;
    /* The kernel's structs may be larger than the ones this was compiled with. */
    n->req_size = sz.seccomp_notif > sizeof(*n->req) ? sz.seccomp_notif : sizeof(*n->req);
    n->resp_size = sz.seccomp_notif_resp > sizeof(*n->resp) ? sz.seccomp_notif_resp : sizeof(*n->resp);
    n->req = calloc(1, n->req_size);
    n->resp = calloc(1, n->resp_size);
    n->workspace = o->workspace ? strdup(o->workspace) : NULL;
    if (!n->req || !n->resp || (o->workspace && !n->workspace)) {
        listener_free(n);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    *out = n;
    return 0;
}

int listener_fd(const struct listener *n)
{
    return n->fd;
}
uint64_t listener_total(const struct listener *n)
{
    return n->total;
}

void listener_free(struct listener *n)
{
    if (!n)
        return;
    if (n->fd >= 0)
        close(n->fd);
    free(n->req);
    free(n->resp);
    free(n->workspace);
    free(n);
}

/* The counter of (arch, nr), or NULL once the table is full (open addressing, no removal). */
static struct counter *counter_of(struct listener *n, uint32_t arch, int nr)
{
    uint32_t h = (arch * 2654435761u) ^ ((uint32_t)nr * 40503u);
    for (size_t i = 0; i < TABLE_SLOTS; i++) {
        struct counter *c = &n->table[(h + i) % TABLE_SLOTS];
        if (!c->used) {
            *c = (struct counter){.arch = arch, .nr = nr, .used = true};
            return c;
        }
        if (c->arch == arch && c->nr == nr)
            return c;
    }
    return NULL;
}

static void answer(struct listener *n, uint64_t id)
{
    memset(n->resp, 0, n->resp_size);
    n->resp->id = id;
    n->resp->error = -EPERM;
    /* ENOENT: the caller was killed meanwhile; nothing to answer. */
    (void)ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SEND, n->resp);
}

/* The pid in the innermost pid namespace (the sandbox's): the last field of NSpid. */
static long pid_inside(uint32_t host_pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%u/status", host_pid);
    if (util_read_file(path, buf, sizeof(buf)) < 0)
        return -1;
    char *l = strstr(buf, "\nNSpid:");
    if (!l)
        return -1;
    l += 7;
    char *end = strchr(l, '\n');
    if (end)
        *end = '\0';
    char *last = strrchr(l, '\t');
    if (!last)
        last = l;
    long v = strtol(last, NULL, 10);
    return v > 0 ? v : -1;
}

static cJSON *denial_body(const struct listener *n, uint32_t arch, int nr)
{
    char name[64], abuf[32];
    sandbox_seccomp_syscall_name(arch, nr, name, sizeof(name));
    cJSON *b = cJSON_CreateObject();
    if (!b || !cJSON_AddStringToObject(b, "kind", "seccomp") ||
        !cJSON_AddStringToObject(b, "subject", name) || !cJSON_AddStringToObject(b, "syscall", name) ||
        !cJSON_AddNumberToObject(b, "nr", nr) ||
        !cJSON_AddStringToObject(b, "arch", sandbox_seccomp_arch_name(arch, nr, abuf, sizeof(abuf))) ||
        !cJSON_AddStringToObject(b, "rule", sandbox_seccomp_denial_rule(n->profile, arch, nr)) ||
        !cJSON_AddStringToObject(b, "reason", "EPERM")) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

static int stage(struct listener *n, const char *type, cJSON *body, struct cerr *err)
{
    int r = trail_append(n->trail, n->workspace, "protocol", type, body, NULL, err);
    cJSON_Delete(body);
    return r;
}

int listener_handle(struct listener *n, unsigned max, bool *hup, struct cerr *err)
{
    uint64_t pending[BATCH_MAX];
    unsigned n_pending = 0, handled = 0;
    int rc = 0;
    if (max > BATCH_MAX)
        max = BATCH_MAX;
    while (handled < max) {
        /* RECV blocks whatever O_NONBLOCK says: only ever call it when poll says one waits. */
        struct pollfd p = {.fd = n->fd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0)
            break;
        if (!(p.revents & POLLIN)) {
            if (hup && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
                *hup = true;
            break;
        }
        memset(n->req, 0, n->req_size);
        if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_RECV, n->req) < 0) {
            if (errno == EINTR || errno == ENOENT) /* ENOENT: its caller died before we got it */
                continue;
            break;
        }
        handled++;
        n->total++;
        uint32_t arch = n->req->data.arch;
        int nr = n->req->data.nr;
        struct counter *c = counter_of(n, arch, nr);
        if (c)
            c->count++;
        else
            n->overflow++;
        if (!n->trail || !c || c->recorded >= n->per_syscall || n->recorded >= n->max_recorded ||
            rc < 0) {
            answer(n, n->req->id);
            continue;
        }
        c->recorded++;
        n->recorded++;
        cJSON *b = denial_body(n, arch, nr);
        long pid = pid_inside(n->req->pid);
        /* The pid was read from /proc: it is the caller's only if the notification is still
         * live afterwards (the man page's check against pid reuse). */
        if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->req->id) < 0)
            pid = -1;
        if (b && !(pid > 0 ? cJSON_AddNumberToObject(b, "pid", (double)pid)
                           : cJSON_AddNullToObject(b, "pid"))) {
            cJSON_Delete(b);
            b = NULL;
        }
        if (!b)
            rc = cerr_set(err, ENOMEM, "out of memory recording a seccomp denial");
        else if (stage(n, "denial", b, err) < 0)
            rc = -EIO;
        pending[n_pending++] = n->req->id;
    }
    /* Write-ahead: the recorded denials are committed before they are answered. A failed commit
     * leaves the trail degraded (the caller refuses new work); the calls are refused all the
     * same, which is what the filter would have done on its own. */
    if (n_pending && rc == 0 && trail_commit(n->trail, err) < 0)
        rc = -EIO;
    for (unsigned i = 0; i < n_pending; i++)
        answer(n, pending[i]);
    return rc < 0 ? rc : (int)handled;
}

void listener_finish(struct listener *n)
{
    if (!n->trail)
        return;
    for (size_t i = 0; i < TABLE_SLOTS; i++) {
        const struct counter *c = &n->table[i];
        if (!c->used || c->count <= c->recorded)
            continue;
        cJSON *b = denial_body(n, c->arch, c->nr);
        if (b && (!cJSON_AddBoolToObject(b, "aggregate", true) ||
                  !cJSON_AddNumberToObject(b, "count", (double)c->count) ||
                  !cJSON_AddNumberToObject(b, "recorded", c->recorded))) {
            cJSON_Delete(b);
            b = NULL;
        }
        if (b)
            (void)stage(n, "denial", b, NULL);
    }
    if (n->overflow) {
        cJSON *b = cJSON_CreateObject();
        if (b && cJSON_AddStringToObject(b, "kind", "seccomp") &&
            cJSON_AddStringToObject(b, "subject", "(other syscalls)") &&
            cJSON_AddStringToObject(b, "rule", "more distinct syscalls than are counted one by one") &&
            cJSON_AddStringToObject(b, "reason", "EPERM") &&
            cJSON_AddBoolToObject(b, "aggregate", true) &&
            cJSON_AddNumberToObject(b, "count", (double)n->overflow) &&
            cJSON_AddNumberToObject(b, "recorded", 0))
            (void)stage(n, "denial", b, NULL);
        else
            cJSON_Delete(b);
    }
}
