/* supervisor/listeners/handoff.c: see listeners/handoff.h. The handover is a mutex-protected queue and an
 * eventfd that wakes the loop; everything after it happens on the loop thread, where the trail
 * is written. */
#include "supervisor/listeners/handoff.h"

#include "supervisor/listeners/listener.h"
#include "supervisor/trail/trail.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct handed {
    int fd;
    char *tag;
    struct sandbox_seccomp rules;
    struct handed *next;
};

struct watched {
    struct handoff *c;
    struct listener *n;
    struct loop_watch w;
    char *tag;
    struct sandbox_seccomp rules; /* the listener borrows it */
    struct watched *next, **pprev;
};

struct handoff {
    struct loop *loop;
    struct trail *trail;
    int efd;
    struct loop_watch ew;
    pthread_mutex_t lock; /* guards queue */
    struct handed *queue;
    struct watched *live;
};

static void handed_free(struct handed *h)
{
    if (h->fd >= 0)
        close(h->fd);
    free(h->tag);
    free(h);
}

static void watched_free(struct watched *x)
{
    listener_free(x->n);
    free(x->tag);
    free(x);
}

static void watched_end(void *data)
{
    watched_free(data);
}

static void on_notify(void *data, uint32_t events)
{
    struct watched *x = data;
    bool hup = false;
    struct cerr e = {0};
    if (listener_handle(x->n, 64, &hup, &e) < 0)
        fprintf(stderr, "corral: trail: cannot record a command's seccomp denial: %s\n", e.msg);
    if (!hup && !(events & (EPOLLHUP | EPOLLERR)))
        return;
    /* No filtered process left: the per-syscall totals, then the listener goes. */
    listener_finish(x->n);
    loop_watch_del(x->c->loop, &x->w);
    *x->pprev = x->next;
    if (x->next)
        x->next->pprev = x->pprev;
    if (loop_defer(x->c->loop, watched_end, x) < 0)
        watched_free(x);
}

static void on_handed(void *data, uint32_t events)
{
    struct handoff *c = data;
    (void)events;
    uint64_t v;
    if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return;
    pthread_mutex_lock(&c->lock);
    struct handed *q = c->queue;
    c->queue = NULL;
    pthread_mutex_unlock(&c->lock);
    while (q) {
        struct handed *h = q;
        q = q->next;
        struct watched *x = calloc(1, sizeof(*x));
        struct cerr e = {0};
        if (!x) {
            handed_free(h);
            continue;
        }
        x->c = c;
        x->tag = h->tag;
        h->tag = NULL;
        x->rules = h->rules;
        struct listener_opts o = {.trail = c->trail, .workspace = x->tag, .profile = &x->rules};
        int fd = h->fd;
        h->fd = -1;
        handed_free(h);
        if (listener_new(fd, &o, &x->n, &e) < 0 ||
            loop_watch_add(c->loop, &x->w, listener_fd(x->n), EPOLLIN, on_notify, x) < 0) {
            fprintf(stderr, "corral: cannot watch a command sandbox's seccomp listener: %s\n",
                    e.msg[0] ? e.msg : "out of memory");
            watched_free(x); /* closes it: the command's denied calls fail with ENOSYS */
            continue;
        }
        x->next = c->live;
        if (c->live)
            c->live->pprev = &x->next;
        x->pprev = &c->live;
        c->live = x;
    }
}

int handoff_new(struct loop *loop, struct trail *trail, struct handoff **out, struct cerr *err)
{
    struct handoff *c = calloc(1, sizeof(*c));
    if (!c)
        return cerr_set(err, ENOMEM, "out of memory");
    c->loop = loop;
    c->trail = trail;
    pthread_mutex_init(&c->lock, NULL);
    c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->efd < 0 || loop_watch_add(loop, &c->ew, c->efd, EPOLLIN, on_handed, c) < 0) {
        int e = errno;
        if (c->efd >= 0)
            close(c->efd);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return cerr_set(err, e ? e : EIO, "cannot watch command sandboxes' denials: %s", strerror(e));
    }
    *out = c;
    return 0;
}

void handoff_free(struct handoff *c)
{
    if (!c)
        return;
    loop_watch_del(c->loop, &c->ew);
    close(c->efd);
    for (struct handed *h = c->queue, *n; h; h = n) {
        n = h->next;
        handed_free(h);
    }
    for (struct watched *x = c->live, *n; x; x = n) {
        n = x->next;
        loop_watch_del(c->loop, &x->w);
        /* Not hung up yet is not still running: the sandbox's init holds the filter too when it
         * loaded it (sandbox/spawn.c), until the background reaps it, after the command's end.
         * What waits is answered and the per-syscall totals staged, as at a hang-up (the caller
         * commits them). */
        struct cerr e = {0};
        (void)listener_handle(x->n, 64, NULL, &e);
        listener_finish(x->n);
        watched_free(x);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void handoff_adopt(void *data, const char *tag, int listener, const struct sandbox_seccomp *rules)
{
    struct handoff *c = data;
    struct handed *h = calloc(1, sizeof(*h));
    if (!h || !(h->tag = strdup(tag ? tag : "agent"))) {
        free(h);
        close(listener);
        return;
    }
    h->fd = listener;
    h->rules = *rules;
    pthread_mutex_lock(&c->lock);
    h->next = c->queue;
    c->queue = h;
    pthread_mutex_unlock(&c->lock);
    uint64_t one = 1;
    if (write(c->efd, &one, sizeof(one)) < 0) {
        /* The counter is full only after 2^64-1 wakes not yet read: the loop is reading. */
    }
}
