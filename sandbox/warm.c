/* sandbox/warm.c: prepared command sandboxes, so that a command's start costs its program's
 * start and not a sandbox's.
 *
 * An agent's commands all run with one profile (its workspace bound by the same directory fd,
 * the same budgets, filter and ids); only argv, environment, directory and stdio differ, and
 * those reach init in sandbox_start. So after a command sandbox starts, a background thread
 * prepares the next one of that profile (sandbox_prepare: cgroup, namespaces, root, filter,
 * privileges dropped, init waiting), and the next sandbox_spawn of that profile takes it.
 *
 * Only sandboxes nested in another's cgroup (commands of an agent) and profiles that ask for it
 * (prepare_next: every command, a host's too; a run's agents, whose workers share a profile)
 * are kept warm, and only in a
 * supervisor with a zygote: a one-shot `corral exec` never leaves an unused sandbox behind. At
 * most one per profile and WARM_MAX in all; those of an agent end
 * before its own cgroup goes (warm_drop_children), the rest at zygote_stop. A prepared sandbox
 * has every property a fresh one has: it was made by the same code, and a profile matches only
 * when every field that shapes the sandbox is equal (binds named by an fd compare by the
 * directory's device and inode, and the prepared one holds its own dup of that fd). */
#include "sandbox/internal.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum { WARM_MAX = 32 };

struct warm_key {
    unsigned char *b;
    size_t len;
};

struct warm_req {
    struct warm_key key;
    struct sandbox_profile p;
    struct sandbox_bind *binds;
    char **strs; /* every string the copy owns */
    size_t n_strs;
    int *fds; /* dups of binds named by an fd */
    size_t n_fds;
    char *program;
    struct warm_req *next;
    struct warm_req *held_next; /* on warm_held from warm_refill_make until queued or dropped */
    bool cancelled;             /* its parent ended meanwhile: never queued */
};

static struct {
    struct warm_key key;
    struct sandbox_child *c;
    const struct sandbox_child *parent;
    unsigned long used;
} warm_slot[WARM_MAX];
static unsigned long warm_clock;
static struct warm_req *warm_queue;
/* cgroups of ended command sandboxes, removed here rather than on the caller's path (a v1
 * rmdir in four hierarchies costs a command's answer a good part of a millisecond) */
struct warm_rm {
    struct cgroup *cg;       /* a cgroup to remove, or */
    struct sandbox_child *c; /* a sandbox whose init is exiting: reaped, then freed (its cgroup too) */
    const struct sandbox_child *parent;
    struct warm_rm *next;
};
static struct warm_rm *warm_rm_queue;
/* Requests made at a start, held by their sandbox until it ends: an agent that ends first must
 * cancel them, or a prepare would use its freed sandbox as the cgroup parent. */
static struct warm_req *warm_held;
static const struct sandbox_child *warm_busy_parent; /* the prepare under way is nested in it */
static const struct warm_key *warm_busy_key;         /* and is of this profile */
static bool warm_busy_cancel;
static bool warm_thread_started, warm_stopping;
static pthread_t warm_thread;
static pthread_mutex_t warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t warm_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t warm_idle = PTHREAD_COND_INITIALIZER;

/* ---- the profile's fingerprint ---- */

struct kbuf {
    unsigned char *b;
    size_t len, cap;
    bool oom;
};

static void kput(struct kbuf *k, const void *p, size_t n)
{
    if (k->oom)
        return;
    if (k->len + n > k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 512;
        while (cap < k->len + n)
            cap *= 2;
        unsigned char *m = realloc(k->b, cap);
        if (!m) {
            k->oom = true;
            return;
        }
        k->b = m;
        k->cap = cap;
    }
    memcpy(k->b + k->len, p, n);
    k->len += n;
}
static void kstr(struct kbuf *k, const char *s)
{
    if (!s)
        s = "\x01(null)";
    kput(k, s, strlen(s) + 1);
}
static void ku64(struct kbuf *k, uint64_t v)
{
    kput(k, &v, sizeof(v));
}

/* The N of "/proc/self/fd/N", or -1. */
static int fd_of_path(const char *host)
{
    static const char pre[] = "/proc/self/fd/";
    if (strncmp(host, pre, sizeof(pre) - 1) || !host[sizeof(pre) - 1])
        return -1;
    char *end;
    long v = strtol(host + sizeof(pre) - 1, &end, 10);
    return *end || v < 0 || v > 1 << 24 ? -1 : (int)v;
}

/* Everything of P that shapes a prepared sandbox; not envp or cwd (sandbox_start's). */
static int key_make(const struct sandbox_profile *p, const char *program, struct warm_key *out)
{
    struct kbuf k = {0};
    kstr(&k, program);
    ku64(&k, (uint64_t)p->net);
    ku64(&k, (uint64_t)p->landlock | (uint64_t)p->no_cgroup << 1 | (uint64_t)p->seccomp.network << 2 |
                 (uint64_t)p->seccomp.notify << 3);
    ku64(&k, (uint64_t)p->uid << 32 | p->gid);
    ku64(&k, (uint64_t)p->host_uid << 32 | p->host_gid);
    kstr(&k, p->hostname);
    ku64(&k, p->limits.memory);
    ku64(&k, p->limits.pids);
    uint64_t cpus;
    memcpy(&cpus, &p->limits.cpus, sizeof(cpus));
    ku64(&k, cpus);
    ku64(&k, p->limits.tmp_size);
    ku64(&k, p->limits.nofile);
    ku64(&k, p->limits.fsize);
    ku64(&k, p->seccomp.groups);
    ku64(&k, p->seccomp.n_allow);
    for (size_t i = 0; i < p->seccomp.n_allow; i++)
        kstr(&k, p->seccomp.allow[i]);
    ku64(&k, p->seccomp.n_deny);
    for (size_t i = 0; i < p->seccomp.n_deny; i++)
        kstr(&k, p->seccomp.deny[i]);
    ku64(&k, (uint64_t)(uintptr_t)p->cgroup_parent);
    ku64(&k, p->n_binds);
    for (size_t i = 0; i < p->n_binds; i++) {
        const struct sandbox_bind *b = &p->binds[i];
        ku64(&k, (uint64_t)b->writable | (uint64_t)b->optional << 1);
        kstr(&k, b->inside);
        int fd = fd_of_path(b->host);
        struct stat st;
        if (fd >= 0) {
            if (fstat(fd, &st) < 0) {
                free(k.b);
                return -errno;
            }
            ku64(&k, st.st_dev);
            ku64(&k, st.st_ino);
        } else
            kstr(&k, b->host);
    }
    if (k.oom) {
        free(k.b);
        return -ENOMEM;
    }
    out->b = k.b;
    out->len = k.len;
    return 0;
}

static bool key_eq(const struct warm_key *a, const struct warm_key *b)
{
    return a->b && b->b && a->len == b->len && !memcmp(a->b, b->b, a->len);
}

/* ---- requests: a deep copy of the profile, its fd binds held by dups ---- */

static void req_free(struct warm_req *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_strs; i++)
        free(r->strs[i]);
    for (size_t i = 0; i < r->n_fds; i++)
        close(r->fds[i]);
    free(r->strs);
    free(r->fds);
    free(r->binds);
    free((void *)r->p.seccomp.allow);
    free((void *)r->p.seccomp.deny);
    free(r->program);
    free(r->key.b);
    free(r);
}

static char *own(struct warm_req *r, const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (d)
        r->strs[r->n_strs++] = d;
    return d;
}

static struct warm_req *req_make(const struct sandbox_profile *p, const char *program)
{
    struct warm_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    size_t ns = 2 + 2 * p->n_binds + p->seccomp.n_allow + p->seccomp.n_deny;
    r->strs = calloc(ns, sizeof(char *));
    r->fds = calloc(p->n_binds + 1, sizeof(int));
    r->binds = calloc(p->n_binds + 1, sizeof(*r->binds));
    const char **allow = calloc(p->seccomp.n_allow + 1, sizeof(char *));
    const char **deny = calloc(p->seccomp.n_deny + 1, sizeof(char *));
    r->p = *p;
    r->p.seccomp.allow = allow;
    r->p.seccomp.deny = deny;
    r->p.envp = NULL;
    r->p.cwd = NULL;
    r->p.binds = r->binds;
    if (!r->strs || !r->fds || !r->binds || !allow || !deny || !(r->program = strdup(program)) ||
        key_make(p, program, &r->key) < 0)
        goto fail;
    r->p.hostname = p->hostname ? own(r, p->hostname) : NULL;
    if (p->hostname && !r->p.hostname)
        goto fail;
    for (size_t i = 0; i < p->seccomp.n_allow; i++)
        if (!(allow[i] = own(r, p->seccomp.allow[i])))
            goto fail;
    for (size_t i = 0; i < p->seccomp.n_deny; i++)
        if (!(deny[i] = own(r, p->seccomp.deny[i])))
            goto fail;
    for (size_t i = 0; i < p->n_binds; i++) {
        const struct sandbox_bind *b = &p->binds[i];
        r->binds[i] = *b;
        int fd = fd_of_path(b->host);
        if (fd >= 0) {
            /* Our own reference to the very directory the caller binds: its fd number may be
             * closed and reused before the background prepare runs. */
            int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
            char path[64];
            if (d < 0)
                goto fail;
            r->fds[r->n_fds++] = d;
            snprintf(path, sizeof(path), "/proc/self/fd/%d", d);
            if (!(r->binds[i].host = own(r, path)))
                goto fail;
        } else if (!(r->binds[i].host = own(r, b->host)))
            goto fail;
        if (b->inside && !(r->binds[i].inside = own(r, b->inside)))
            goto fail;
    }
    return r;
fail:
    req_free(r);
    return NULL;
}

/* ---- the slots ---- */

/* Under warm_lock: empties slot I, returning its child for the caller to free unlocked. */
static struct sandbox_child *slot_clear(size_t i)
{
    struct sandbox_child *c = warm_slot[i].c;
    free(warm_slot[i].key.b);
    memset(&warm_slot[i], 0, sizeof(warm_slot[i]));
    return c;
}

static void rm_run(struct warm_rm *x)
{
    if (x->c)
        spawn_child_finish(x->c);
    else
        cgroup_destroy(x->cg);
    free(x);
}

static void *warm_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&warm_lock);
    for (;;) {
        while (!warm_queue && !warm_rm_queue && !warm_stopping)
            pthread_cond_wait(&warm_wake, &warm_lock);
        if (warm_stopping)
            break;
        if (warm_rm_queue && !warm_queue) { /* prepares first: a command may be waiting */
            struct warm_rm *x = warm_rm_queue;
            warm_rm_queue = x->next;
            warm_busy_parent = x->parent;
            pthread_mutex_unlock(&warm_lock);
            rm_run(x);
            pthread_mutex_lock(&warm_lock);
            warm_busy_parent = NULL;
            pthread_cond_broadcast(&warm_idle);
            continue;
        }
        struct warm_req *r = warm_queue;
        warm_queue = r->next;
        warm_busy_parent = r->p.cgroup_parent;
        warm_busy_key = &r->key;
        warm_busy_cancel = false;
        pthread_mutex_unlock(&warm_lock);

        struct sandbox_child *c = NULL;
        struct cerr e;
        if (sandbox_prepare(&r->p, r->program, &c, &e) < 0)
            c = NULL; /* the command that follows prepares its own and reports the reason */

        struct sandbox_child *drop = NULL;
        pthread_mutex_lock(&warm_lock);
        if (c && (warm_busy_cancel || warm_stopping))
            drop = c;
        else if (c) {
            size_t victim = 0;
            for (size_t i = 0; i < WARM_MAX; i++) {
                if (!warm_slot[i].c) {
                    victim = i;
                    break;
                }
                if (warm_slot[i].used < warm_slot[victim].used)
                    victim = i;
            }
            drop = warm_slot[victim].c ? slot_clear(victim) : NULL;
            warm_slot[victim].key = r->key;
            r->key.b = NULL;
            warm_slot[victim].c = c;
            warm_slot[victim].parent = r->p.cgroup_parent;
            warm_slot[victim].used = ++warm_clock;
        }
        warm_busy_parent = NULL;
        warm_busy_key = NULL;
        pthread_cond_broadcast(&warm_idle);
        pthread_mutex_unlock(&warm_lock);
        sandbox_child_free(drop);
        req_free(r);
        pthread_mutex_lock(&warm_lock);
    }
    pthread_mutex_unlock(&warm_lock);
    return NULL;
}

static bool warm_wanted(const struct sandbox_profile *p)
{
    return p->cgroup_parent || p->prepare_next; /* and only while the zygote runs: see zygote_start */
}

int warm_take(const struct sandbox_profile *p, const char *program, struct sandbox_child **out)
{
    *out = NULL;
    if (!warm_wanted(p))
        return 0;
    struct warm_key k;
    if (key_make(p, program, &k) < 0)
        return 0; /* no match is no harm: a fresh prepare follows */
    struct sandbox_child *c = NULL;
    struct warm_req *mine = NULL;
    pthread_mutex_lock(&warm_lock);
    /* One of this profile under way finishes sooner than a fresh one would: wait for it (commands
     * sent back to back come faster than a prepare). One queued but not begun is ours to do. */
    while (warm_busy_key && key_eq(warm_busy_key, &k))
        pthread_cond_wait(&warm_idle, &warm_lock);
    for (size_t i = 0; i < WARM_MAX; i++)
        if (warm_slot[i].c && key_eq(&warm_slot[i].key, &k)) {
            c = slot_clear(i);
            break;
        }
    for (struct warm_req **q = &warm_queue; *q && !c; q = &(*q)->next)
        if (key_eq(&(*q)->key, &k)) {
            mine = *q;
            *q = mine->next;
            break;
        }
    pthread_mutex_unlock(&warm_lock);
    req_free(mine);
    free(k.b);
    /* An init that ended while it waited (killed with its cgroup, say) is no use. */
    struct pollfd pf = {.fd = c ? sandbox_child_pidfd(c) : -1, .events = POLLIN};
    if (c && poll(&pf, 1, 0) != 0) {
        sandbox_child_free(c);
        c = NULL;
    }
#ifdef SPAWN_TRACE
    fprintf(stderr, "  warm: %s\n", c ? "hit" : "miss");
#endif
    *out = c;
    return 0;
}

/* Under warm_lock: takes R off warm_held. */
static void held_remove(struct warm_req *r)
{
    for (struct warm_req **q = &warm_held; *q; q = &(*q)->held_next)
        if (*q == r) {
            *q = r->held_next;
            return;
        }
}

void *warm_refill_make(const struct sandbox_profile *p, const char *program)
{
    struct warm_req *r = warm_wanted(p) ? req_make(p, program) : NULL;
    if (r) {
        pthread_mutex_lock(&warm_lock);
        r->held_next = warm_held;
        warm_held = r;
        pthread_mutex_unlock(&warm_lock);
    }
    return r;
}

void warm_refill_drop(void *req)
{
    if (!req)
        return;
    pthread_mutex_lock(&warm_lock);
    held_remove(req);
    pthread_mutex_unlock(&warm_lock);
    req_free(req);
}

/* Under warm_lock: the background thread, started when first needed. */
static void thread_start_locked(void)
{
    if (warm_stopping || warm_thread_started)
        return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals belong to the supervisor's loop */
    warm_thread_started = pthread_create(&warm_thread, NULL, warm_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Queued when the sandbox that asked for it ends, not when it starts: the next one is then made
 * while the agent thinks, instead of competing for the CPUs with the command that runs. */
void warm_refill(void *req)
{
    struct warm_req *r = req;
    if (!r)
        return;
    pthread_mutex_lock(&warm_lock);
    held_remove(r);
    bool have = r->cancelled;
    for (size_t i = 0; i < WARM_MAX && !have; i++)
        have = warm_slot[i].c && key_eq(&warm_slot[i].key, &r->key);
    for (struct warm_req *q = warm_queue; q && !have; q = q->next)
        have = key_eq(&q->key, &r->key);
    if (!have)
        thread_start_locked();
    if (!have && warm_thread_started && !warm_stopping) {
        struct warm_req **tail = &warm_queue;
        while (*tail)
            tail = &(*tail)->next;
        *tail = r;
        r = NULL;
        pthread_cond_signal(&warm_wake);
    }
    pthread_mutex_unlock(&warm_lock);
    req_free(r);
}

static bool rm_later(struct cgroup *cg, struct sandbox_child *c, const struct sandbox_child *parent)
{
    /* A cgroup nested in PARENT's goes before PARENT's (warm_drop_children); a sandbox without
     * one (a host's command) has no order to keep, but a bare cgroup is removed by its caller. */
    if (!parent && !c)
        return false;
    struct warm_rm *x = malloc(sizeof(*x));
    if (!x)
        return false;
    pthread_mutex_lock(&warm_lock);
    if (c)
        thread_start_locked();
    bool ok = warm_thread_started && !warm_stopping;
    if (ok) {
        x->cg = cg;
        x->c = c;
        x->parent = parent;
        x->next = warm_rm_queue;
        warm_rm_queue = x;
        pthread_cond_signal(&warm_wake);
    }
    pthread_mutex_unlock(&warm_lock);
    if (!ok)
        free(x);
    return ok;
}

bool warm_destroy_later(struct cgroup *cg, const struct sandbox_child *parent)
{
    return cg && rm_later(cg, NULL, parent);
}

bool warm_release_later(struct sandbox_child *c, const struct sandbox_child *parent)
{
    return c && rm_later(NULL, c, parent);
}

void warm_drop_children(const struct sandbox_child *parent)
{
    struct sandbox_child *drop[WARM_MAX];
    size_t n = 0;
    struct warm_req *cancelled = NULL;
    struct warm_rm *rm = NULL;
    pthread_mutex_lock(&warm_lock);
    for (struct warm_req *h = warm_held; h; h = h->held_next)
        if (h->p.cgroup_parent == parent)
            h->cancelled = true;
    if (!warm_thread_started) {
        pthread_mutex_unlock(&warm_lock);
        return;
    }
    for (size_t i = 0; i < WARM_MAX; i++)
        if (warm_slot[i].c && warm_slot[i].parent == parent)
            drop[n++] = slot_clear(i);
    for (struct warm_rm **q = &warm_rm_queue; *q;) {
        if ((*q)->parent == parent) {
            struct warm_rm *x = *q;
            *q = x->next;
            x->next = rm;
            rm = x;
        } else
            q = &(*q)->next;
    }
    for (struct warm_req **q = &warm_queue; *q;) {
        if ((*q)->p.cgroup_parent == parent) {
            struct warm_req *x = *q;
            *q = x->next;
            x->next = cancelled;
            cancelled = x;
        } else
            q = &(*q)->next;
    }
    /* A prepare nested in PARENT's cgroup is under way: it must end before that cgroup goes. */
    while (warm_busy_parent && warm_busy_parent == parent) {
        warm_busy_cancel = true;
        pthread_cond_wait(&warm_idle, &warm_lock);
    }
    pthread_mutex_unlock(&warm_lock);
    for (size_t i = 0; i < n; i++)
        sandbox_child_free(drop[i]);
    while (rm) { /* nested in PARENT's cgroup: gone before it */
        struct warm_rm *x = rm;
        rm = x->next;
        rm_run(x);
    }
    while (cancelled) {
        struct warm_req *x = cancelled;
        cancelled = x->next;
        req_free(x);
    }
}

void warm_stop(void)
{
    pthread_mutex_lock(&warm_lock);
    if (!warm_thread_started) {
        pthread_mutex_unlock(&warm_lock);
        return;
    }
    warm_stopping = true;
    pthread_cond_broadcast(&warm_wake);
    pthread_mutex_unlock(&warm_lock);
    pthread_join(warm_thread, NULL);
    pthread_mutex_lock(&warm_lock);
    struct sandbox_child *drop[WARM_MAX];
    size_t n = 0;
    for (size_t i = 0; i < WARM_MAX; i++)
        if (warm_slot[i].c)
            drop[n++] = slot_clear(i);
    struct warm_req *q = warm_queue;
    warm_queue = NULL;
    struct warm_rm *rm = warm_rm_queue;
    warm_rm_queue = NULL;
    warm_thread_started = false;
    pthread_mutex_unlock(&warm_lock);
    while (rm) {
        struct warm_rm *x = rm;
        rm = x->next;
        rm_run(x);
    }
    for (size_t i = 0; i < n; i++)
        sandbox_child_free(drop[i]);
    while (q) {
        struct warm_req *x = q;
        q = x->next;
        req_free(x);
    }
}
