/* supervisor/egress/resolve.c: see resolve.h. The resolver is shared by the loop and its two
 * threads and freed by whichever lets go of it last (a reference count under its mutex). */
#include "supervisor/egress/resolve.h"
#include "supervisor/conn/loop.h"

#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

#define RESOLVE_THREADS 2

struct egress_resolver {
    pthread_mutex_t lock;
    pthread_cond_t more;
    unsigned refs;              /* the loop's, and one per thread */
    bool closed;                /* the loop let go: threads end, nothing is delivered */
    struct egress_lookup *todo; /* queued, oldest last */
    struct egress_lookup *done; /* finished, for the loop */
    int efd;                    /* wakes the loop when done is not empty */
    struct loop *loop;
    struct loop_watch w;
    void (*deliver)(void *owner, const struct egress_lookup *lk);
};

static void free_list(struct egress_lookup *l)
{
    while (l) {
        struct egress_lookup *n = l->next;
        free(l);
        l = n;
    }
}

/* Called with the lock held; unlocks. */
static void unref_unlock(struct egress_resolver *r)
{
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (!last)
        return;
    free_list(r->todo);
    free_list(r->done);
    if (r->efd >= 0)
        close(r->efd);
    pthread_cond_destroy(&r->more);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static void lookup(struct egress_lookup *lk)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    lk->gai_err = getaddrinfo(lk->host, NULL, &hints, &res);
    lk->n = 0;
    for (struct addrinfo *a = res; a && lk->n < EGRESS_RESOLVE_MAX; a = a->ai_next) {
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) || a->ai_addrlen > sizeof(lk->addr[0]))
            continue;
        memcpy(&lk->addr[lk->n], a->ai_addr, a->ai_addrlen);
        lk->len[lk->n++] = a->ai_addrlen;
    }
    if (res)
        freeaddrinfo(res);
}

static void *worker(void *arg)
{
    struct egress_resolver *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->todo && !r->closed)
            pthread_cond_wait(&r->more, &r->lock);
        if (r->closed)
            break;
        /* The oldest: the list's tail. */
        struct egress_lookup **pp = &r->todo;
        while ((*pp)->next)
            pp = &(*pp)->next;
        struct egress_lookup *lk = *pp;
        *pp = NULL;
        pthread_mutex_unlock(&r->lock);
        lookup(lk);
        pthread_mutex_lock(&r->lock);
        if (r->closed || !lk->owner) {
            free(lk);
            continue;
        }
        lk->next = r->done;
        r->done = lk;
        uint64_t one = 1;
        (void)!write(r->efd, &one, sizeof(one));
    }
    unref_unlock(r);
    return NULL;
}

static void on_done(void *data, uint32_t events)
{
    struct egress_resolver *r = data;
    uint64_t v;
    (void)!read(r->efd, &v, sizeof(v));
    pthread_mutex_lock(&r->lock);
    struct egress_lookup *l = r->done;
    r->done = NULL;
    pthread_mutex_unlock(&r->lock);
    while (l) {
        struct egress_lookup *n = l->next;
        if (l->owner)
            r->deliver(l->owner, l);
        free(l);
        l = n;
    }
}

int egress_resolver_new(struct loop *l, void (*done)(void *owner, const struct egress_lookup *lk),
                        struct egress_resolver **out, struct cerr *err)
{
    struct egress_resolver *r = calloc(1, sizeof(*r));
    if (!r)
        return cerr_set(err, ENOMEM, "egress: out of memory");
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->more, NULL);
    r->refs = 1;
    r->loop = l;
    r->deliver = done;
    r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->efd < 0 || loop_watch_add(l, &r->w, r->efd, EPOLLIN, on_done, r) < 0) {
        int e = errno;
        pthread_mutex_lock(&r->lock);
        unref_unlock(r);
        return cerr_set(err, e, "egress: resolver: %s", strerror(e));
    }
    /* Detached, with every signal blocked: the supervisor's signals stay its loop's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256u << 10);
    int started = 0;
    for (int i = 0; i < RESOLVE_THREADS; i++) {
        pthread_t t;
        pthread_mutex_lock(&r->lock);
        r->refs++;
        pthread_mutex_unlock(&r->lock);
        if (pthread_create(&t, &attr, worker, r) != 0) {
            pthread_mutex_lock(&r->lock);
            r->refs--;
            pthread_mutex_unlock(&r->lock);
            continue;
        }
        started++;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!started) {
        egress_resolver_free(r);
        return cerr_set(err, EAGAIN, "egress: cannot start the resolver's threads");
    }
    *out = r;
    return 0;
}

void egress_resolver_free(struct egress_resolver *r)
{
    if (!r)
        return;
    loop_watch_del(r->loop, &r->w);
    pthread_mutex_lock(&r->lock);
    r->closed = true;
    pthread_cond_broadcast(&r->more);
    unref_unlock(r);
}

int egress_resolve(struct egress_resolver *r, const char *host, void *owner, struct egress_lookup **out)
{
    struct egress_lookup *lk = calloc(1, sizeof(*lk));
    if (!lk)
        return -ENOMEM;
    snprintf(lk->host, sizeof(lk->host), "%s", host);
    lk->owner = owner;
    pthread_mutex_lock(&r->lock);
    lk->next = r->todo;
    r->todo = lk;
    pthread_cond_signal(&r->more);
    pthread_mutex_unlock(&r->lock);
    if (out)
        *out = lk;
    return 0;
}

void egress_resolve_cancel(struct egress_resolver *r, struct egress_lookup *lk)
{
    pthread_mutex_lock(&r->lock);
    lk->owner = NULL;
    pthread_mutex_unlock(&r->lock);
}
