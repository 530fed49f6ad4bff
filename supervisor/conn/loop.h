/* supervisor/conn/loop.h: the supervisor's one event loop (epoll, level-triggered). Everything long-lived
 * is a watch on an fd: agent pipes, pidfds, timerfds, the worker pool's eventfd. A turn is one
 * epoll_wait and the handlers it wakes, then the turn-end hook (where the trail commits and the
 * turn's responses are released), then deferred frees. Single-threaded: only the loop's own
 * thread may call these functions. */
#ifndef CORRAL_LOOP_H
#define CORRAL_LOOP_H

#include "common/util.h"

#include <stdint.h>
#include <sys/epoll.h>

struct loop;

typedef void (*loop_fn)(void *data, uint32_t events);

/* Embedded in its owner; the loop holds a pointer to it between add and del. */
struct loop_watch {
    int fd;
    uint32_t events;
    loop_fn fn;
    void *data;
    bool added;
    bool owns_fd; /* timers: the timerfd is closed by loop_watch_del */
};

int loop_new(struct loop **out, struct cerr *err);
/* The epoll fd: readable when a turn has work, for a caller that polls the loop among its own fds. */
int loop_fd(const struct loop *l);
/* Every watch must have been removed first. NULL is a no-op. */
void loop_free(struct loop *l);

/* Watches FD (borrowed) for EVENTS (EPOLLIN / EPOLLOUT; 0 is allowed: errors and hang-ups only). */
int loop_watch_add(struct loop *l, struct loop_watch *w, int fd, uint32_t events, loop_fn fn,
                   void *data);
int loop_watch_mod(struct loop *l, struct loop_watch *w, uint32_t events);
/* Safe from inside a handler of the same turn: a pending event for W is dropped. */
void loop_watch_del(struct loop *l, struct loop_watch *w);

/* A one-shot timer firing after SECONDS (a timerfd owned by the watch; loop_watch_del closes it). */
int loop_timer_add(struct loop *l, struct loop_watch *w, double seconds, loop_fn fn, void *data);

/* Called once at the end of every turn that handled at least one event. */
void loop_set_turn_end(struct loop *l, void (*fn)(void *data), void *data);

/* Runs fn(data) after the current turn's handlers and turn-end hook: for freeing objects whose
 * watches may still be referenced by events of this turn. Returns -ENOMEM if it cannot queue. */
int loop_defer(struct loop *l, void (*fn)(void *data), void *data);

/* Runs turns until loop_stop. Returns 0, or a negative code with err set if epoll fails. */
int loop_run(struct loop *l, struct cerr *err);
/* One turn, waiting at most timeout_ms (-1: forever). Returns the number of events handled. */
int loop_run_once(struct loop *l, int timeout_ms, struct cerr *err);
void loop_stop(struct loop *l);
bool loop_stopped(const struct loop *l);

#endif
