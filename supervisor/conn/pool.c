/* supervisor/conn/pool.c: worker threads and the completion eventfd (see pool.h). */
#include "supervisor/conn/pool.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct pool {
    struct loop *loop;
    struct loop_watch watch; /* the eventfd */
    int efd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct pool_job *queue_head, *queue_tail; /* submitted, not started */
    struct pool_job *done_head;               /* finished, waiting for the loop */
    size_t inflight;                          /* loop thread only */
    bool stop;
    unsigned n_threads;
    unsigned running_long, max_long; /* long jobs on a worker now; at most max_long at once */
    unsigned share_long;             /* at most this many of one owner's at once */
    bool can_renice;                 /* a worker may lower its priority and raise it back */
    pthread_t *threads;
};

static bool eligible(const struct pool *p, const struct pool_job *j)
{
    if (!j->is_long)
        return true;
    return p->running_long < p->max_long && (!j->share || j->share->running_long < p->share_long);
}

/* The first queued job that may run now (FIFO among the eligible), unlinked; NULL if none. */
static struct pool_job *take(struct pool *p)
{
    struct pool_job *prev = NULL;
    for (struct pool_job *j = p->queue_head; j; prev = j, j = j->next) {
        if (!eligible(p, j))
            continue;
        if (prev)
            prev->next = j->next;
        else
            p->queue_head = j->next;
        if (p->queue_tail == j)
            p->queue_tail = prev;
        if (j->is_long) {
            p->running_long++;
            if (j->share)
                j->share->running_long++;
        }
        return j;
    }
    return NULL;
}

/* Background jobs run at this nice value (CFS weight 110 against 1024 at 0): the loop's
 * thread and the agents keep ~90% of a CPU they contend for with a 5,000-file copy. */
enum { POOL_BACKGROUND_NICE = 10 };

/* Sets the calling thread's nice value (Linux: per thread, PRIO_PROCESS with its tid). */
static int thread_nice(int v)
{
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), v);
}

static void *worker_main(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        struct pool_job *j;
        while (!(j = take(p)) && (p->queue_head || !p->stop))
            pthread_cond_wait(&p->cv, &p->mu);
        if (!j)
            break; /* stopping and nothing left */
        pthread_mutex_unlock(&p->mu);
        bool is_long = j->is_long;
        struct pool_share *share = j->share;
        bool bg = j->background && p->can_renice;
        if (bg)
            (void)thread_nice(POOL_BACKGROUND_NICE);
        j->run(j);
        /* Back to 0 for the short jobs this thread takes next: can_renice says this works. */
        if (bg)
            (void)thread_nice(0);
        pthread_mutex_lock(&p->mu);
        if (is_long) {
            /* A slot for long jobs is free again: a waiting worker may take one. Only when a
             * job waits: waking every idle worker for nothing (a command's end, 15 threads on
             * 2 cores) held up the very answer this worker is about to hand to the loop. */
            p->running_long--;
            if (share)
                share->running_long--;
            if (p->queue_head)
                pthread_cond_broadcast(&p->cv);
        }
        j->next = p->done_head;
        p->done_head = j;
        uint64_t one = 1;
        /* An eventfd write fails only on counter overflow (2^64-2): not reachable. */
        (void)!write(p->efd, &one, sizeof(one));
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pool_on_event(void *data, uint32_t events)
{
    struct pool *p = data;
    uint64_t n;
    (void)!read(p->efd, &n, sizeof(n));
    pthread_mutex_lock(&p->mu);
    struct pool_job *list = p->done_head;
    p->done_head = NULL;
    pthread_mutex_unlock(&p->mu);
    /* The list is newest first: reverse it so completions are finished in the order they ended. */
    struct pool_job *rev = NULL;
    while (list) {
        struct pool_job *next = list->next;
        list->next = rev;
        rev = list;
        list = next;
    }
    while (rev) {
        struct pool_job *j = rev;
        rev = j->next;
        p->inflight--;
        j->done(j);
    }
}

int pool_new(struct loop *l, unsigned workers, struct pool **out, struct cerr *err)
{
    if (workers == 0) {
        /* Most calls wait (a command sandbox, the disk) rather than compute, and one agent may
         * hold 4 at once: enough threads that a few agents' slow calls leave room for others. */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cpus > 0 ? (unsigned)cpus * 4 : 16;
        if (workers < 16)
            workers = 16;
    }
    if (workers > 256)
        workers = 256;
    struct pool *p = calloc(1, sizeof(*p));
    if (!p)
        return cerr_set(err, ENOMEM, "worker pool: out of memory");
    p->loop = l;
    /* A quarter of the threads (at least 2) only ever run short jobs; an owner's long jobs take
     * at most a quarter of the rest (at least 1). */
    unsigned reserve = workers / 4 > 2 ? workers / 4 : 2;
    p->max_long = workers > reserve ? workers - reserve : 1;
    p->share_long = p->max_long / 4 ? p->max_long / 4 : 1;
    /* Raising a thread's priority back needs CAP_SYS_NICE or RLIMIT_NICE: without them (an
     * unprivileged `corral mcp`), background jobs run at the normal priority instead of
     * leaving a worker lowered for the short jobs it takes next. */
    struct rlimit rn;
    p->can_renice = geteuid() == 0 || (getrlimit(RLIMIT_NICE, &rn) == 0 && rn.rlim_cur >= 20);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    p->threads = calloc(workers, sizeof(*p->threads));
    if (p->efd < 0 || !p->threads) {
        int e = p->efd < 0 ? errno : ENOMEM;
        pool_free(p);
        return cerr_set(err, e, "worker pool: %s", strerror(e));
    }
    int r = loop_watch_add(l, &p->watch, p->efd, EPOLLIN, pool_on_event, p);
    if (r < 0) {
        pool_free(p);
        return cerr_set(err, r, "worker pool: epoll: %s", strerror(-r));
    }
    /* Workers take no signals: SIGCHLD, SIGTERM and friends belong to the loop's thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < workers; i++) {
        int e = pthread_create(&p->threads[i], NULL, worker_main, p);
        if (e) {
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            pool_free(p);
            return cerr_set(err, e, "worker pool: starting thread %u: %s", i, strerror(e));
        }
        p->n_threads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    *out = p;
    return 0;
}

void pool_free(struct pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    /* Workers drain the queue before they leave: every job is now finished; finish it here. */
    if (p->n_threads)
        pool_on_event(p, EPOLLIN);
    loop_watch_del(p->loop, &p->watch);
    if (p->efd >= 0)
        close(p->efd);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}

void pool_submit(struct pool *p, struct pool_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->queue_tail)
        p->queue_tail->next = j;
    else
        p->queue_head = j;
    p->queue_tail = j;
    p->inflight++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

size_t pool_inflight(const struct pool *p)
{
    return p->inflight;
}
unsigned pool_workers(const struct pool *p)
{
    return p->n_threads;
}
