/* supervisor/conn/loop.c: the epoll loop (see loop.h). */
#include "supervisor/conn/loop.h"

#include <math.h>
#include <string.h>
#include <sys/timerfd.h>

#define LOOP_BATCH 64

struct deferred {
    void (*fn)(void *data);
    void *data;
    struct deferred *next;
};

struct loop {
    int epfd;
    bool stop;
    struct epoll_event events[LOOP_BATCH];
    int n_events; /* events of the turn in progress, for loop_watch_del */
    void (*turn_end)(void *data);
    void *turn_data;
    struct deferred *deferred;
};

int loop_new(struct loop **out, struct cerr *err)
{
    struct loop *l = calloc(1, sizeof(*l));
    if (!l)
        return cerr_set(err, ENOMEM, "event loop: out of memory");
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0) {
        int e = errno;
        free(l);
        return cerr_set(err, e, "event loop: epoll_create1: %s", strerror(e));
    }
    *out = l;
    return 0;
}

static void run_deferred(struct loop *l)
{
    while (l->deferred) {
        struct deferred *d = l->deferred;
        l->deferred = d->next;
        d->fn(d->data);
        free(d);
    }
}

void loop_free(struct loop *l)
{
    if (!l)
        return;
    run_deferred(l);
    close(l->epfd);
    free(l);
}

int loop_watch_add(struct loop *l, struct loop_watch *w, int fd, uint32_t events, loop_fn fn, void *data)
{
    struct epoll_event ev = {.events = events, .data.ptr = w};
    w->fd = fd;
    w->events = events;
    w->fn = fn;
    w->data = data;
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    w->added = true;
    return 0;
}

int loop_watch_mod(struct loop *l, struct loop_watch *w, uint32_t events)
{
    if (!w->added)
        return -EINVAL;
    if (w->events == events)
        return 0;
    struct epoll_event ev = {.events = events, .data.ptr = w};
    if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
        return -errno;
    w->events = events;
    return 0;
}

void loop_watch_del(struct loop *l, struct loop_watch *w)
{
    if (!w->added)
        return;
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
    w->added = false;
    for (int i = 0; i < l->n_events; i++)
        if (l->events[i].data.ptr == w)
            l->events[i].data.ptr = NULL;
    if (w->owns_fd) {
        close(w->fd);
        w->owns_fd = false;
    }
    w->fd = -1;
}

int loop_timer_add(struct loop *l, struct loop_watch *w, double seconds, loop_fn fn, void *data)
{
    if (!(seconds > 0) || !isfinite(seconds))
        return -EINVAL;
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)seconds;
    its.it_value.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
        its.it_value.tv_nsec = 1;
    if (timerfd_settime(fd, 0, &its, NULL) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    int r = loop_watch_add(l, w, fd, EPOLLIN, fn, data);
    if (r < 0) {
        close(fd);
        return r;
    }
    w->owns_fd = true;
    return 0;
}

void loop_set_turn_end(struct loop *l, void (*fn)(void *data), void *data)
{
    l->turn_end = fn;
    l->turn_data = data;
}

int loop_defer(struct loop *l, void (*fn)(void *data), void *data)
{
    struct deferred *d = malloc(sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->fn = fn;
    d->data = data;
    d->next = l->deferred;
    l->deferred = d;
    return 0;
}

int loop_run_once(struct loop *l, int timeout_ms, struct cerr *err)
{
    int n = epoll_wait(l->epfd, l->events, LOOP_BATCH, timeout_ms);
    if (n < 0) {
        if (errno == EINTR)
            return 0;
        return cerr_set(err, errno, "event loop: epoll_wait: %s", strerror(errno));
    }
    l->n_events = n;
    for (int i = 0; i < n; i++) {
        struct loop_watch *w = l->events[i].data.ptr;
        if (w) /* NULL: removed by an earlier handler of this turn */
            w->fn(w->data, l->events[i].events);
    }
    l->n_events = 0;
    if (n > 0 && l->turn_end)
        l->turn_end(l->turn_data);
    run_deferred(l);
    return n;
}

int loop_run(struct loop *l, struct cerr *err)
{
    while (!l->stop) {
        int r = loop_run_once(l, -1, err);
        if (r < 0)
            return r;
    }
    return 0;
}

void loop_stop(struct loop *l)
{
    l->stop = true;
}
bool loop_stopped(const struct loop *l)
{
    return l->stop;
}
int loop_fd(const struct loop *l)
{
    return l->epfd;
}
