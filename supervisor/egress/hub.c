/* supervisor/egress/hub.c: see hub.h. The handover is a mutex-protected queue and an eventfd
 * that wakes the loop (as supervisor/listeners/handoff.c does for seccomp listeners); the proxies
 * themselves live on the loop thread only. */
#include "supervisor/egress/hub.h"
#include "supervisor/conn/loop.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

struct handed {
    int fds[SANDBOX_EGRESS_MAX_FDS];
    size_t n;
    int pidfd;
    struct handed *next;
};

struct live {
    struct egress_hub *h;
    struct egress *e;
    int pidfd;
    struct loop_watch w;
    struct live *next, **pprev;
};

struct egress_hub {
    struct loop *loop;
    const struct egress_policy *p;
    const struct sandbox_egress *spec;
    struct egress_opts o;
    char *workspace, *actor;
    int efd;
    struct loop_watch ew;
    pthread_mutex_t lock; /* guards queue */
    struct handed *queue;
    struct live *live;
    unsigned commands; /* to label each command sandbox's connections */
};

static void handed_free(struct handed *x)
{
    for (size_t i = 0; i < x->n; i++)
        close(x->fds[i]);
    if (x->pidfd >= 0)
        close(x->pidfd);
    free(x);
}

static void live_end(struct live *x)
{
    egress_free(x->e);
    loop_watch_del(x->h->loop, &x->w);
    close(x->pidfd);
    *x->pprev = x->next;
    if (x->next)
        x->next->pprev = x->pprev;
}

static void live_free(void *data)
{
    free(data);
}

static void on_command_end(void *data, uint32_t events)
{
    struct live *x = data;
    live_end(x);
    if (loop_defer(x->h->loop, live_free, x) < 0)
        free(x);
}

static void on_handed(void *data, uint32_t events)
{
    struct egress_hub *h = data;
    uint64_t v;
    (void)!read(h->efd, &v, sizeof(v));
    pthread_mutex_lock(&h->lock);
    struct handed *q = h->queue;
    h->queue = NULL;
    pthread_mutex_unlock(&h->lock);
    while (q) {
        struct handed *x = q;
        q = q->next;
        struct live *l = calloc(1, sizeof(*l));
        struct cerr e = {0};
        char label[32];
        snprintf(label, sizeof(label), "command-%u", ++h->commands);
        struct egress_opts o = h->o;
        o.policy = h->p;
        o.sandbox = label;
        if (!l || egress_new(h->loop, &o, h->spec, x->fds, x->n, &l->e, &e) < 0) {
            /* egress_new took the fds either way: the command's connections are refused */
            fprintf(stderr, "corral: cannot serve a command sandbox's egress: %s\n",
                    e.msg[0] ? e.msg : "out of memory");
            x->n = 0;
            handed_free(x);
            free(l);
            continue;
        }
        x->n = 0;
        l->h = h;
        l->pidfd = x->pidfd;
        x->pidfd = -1;
        handed_free(x);
        if (loop_watch_add(h->loop, &l->w, l->pidfd, EPOLLIN, on_command_end, l) < 0) {
            egress_free(l->e);
            close(l->pidfd);
            free(l);
            continue;
        }
        l->next = h->live;
        if (h->live)
            h->live->pprev = &l->next;
        l->pprev = &h->live;
        h->live = l;
    }
}

int egress_hub_new(struct loop *l, const struct egress_policy *p, const struct sandbox_egress *spec,
                   const struct egress_opts *o, struct egress_hub **out, struct cerr *err)
{
    struct egress_hub *h = calloc(1, sizeof(*h));
    if (!h)
        return cerr_set(err, ENOMEM, "egress: out of memory");
    h->loop = l;
    h->p = p;
    h->spec = spec;
    h->o = *o;
    h->efd = -1;
    h->workspace = o->workspace ? strdup(o->workspace) : NULL;
    h->actor = o->actor ? strdup(o->actor) : NULL;
    h->o.workspace = h->workspace;
    h->o.actor = h->actor;
    pthread_mutex_init(&h->lock, NULL);
    h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h->efd < 0 || loop_watch_add(l, &h->ew, h->efd, EPOLLIN, on_handed, h) < 0) {
        int e = errno;
        egress_hub_free(h);
        return cerr_set(err, e, "egress: cannot watch the command handover: %s", strerror(e));
    }
    *out = h;
    return 0;
}

void egress_hub_free(struct egress_hub *h)
{
    if (!h)
        return;
    while (h->live) {
        struct live *x = h->live;
        live_end(x);
        free(x);
    }
    pthread_mutex_lock(&h->lock);
    struct handed *q = h->queue;
    h->queue = NULL;
    pthread_mutex_unlock(&h->lock);
    while (q) {
        struct handed *x = q;
        q = q->next;
        handed_free(x);
    }
    loop_watch_del(h->loop, &h->ew);
    if (h->efd >= 0)
        close(h->efd);
    pthread_mutex_destroy(&h->lock);
    free(h->workspace);
    free(h->actor);
    free(h);
}

void egress_hub_adopt(void *hub, int *fds, size_t n, int pidfd)
{
    struct egress_hub *h = hub;
    struct handed *x = calloc(1, sizeof(*x));
    if (!x || n > SANDBOX_EGRESS_MAX_FDS || pidfd < 0) {
        for (size_t i = 0; i < n; i++)
            close(fds[i]);
        if (pidfd >= 0)
            close(pidfd);
        free(x);
        return;
    }
    memcpy(x->fds, fds, n * sizeof(int));
    x->n = n;
    x->pidfd = pidfd;
    pthread_mutex_lock(&h->lock);
    x->next = h->queue;
    h->queue = x;
    pthread_mutex_unlock(&h->lock);
    uint64_t one = 1;
    (void)!write(h->efd, &one, sizeof(one));
}
