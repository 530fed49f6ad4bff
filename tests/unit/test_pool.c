/* tests/unit/test_pool.c: the worker pool's background jobs (the model's workspace copies,
 * snapshots and integration writes) run at a lower CPU priority on their thread, and the thread
 * is back at the normal priority for the short jobs it takes next (real threads, a real loop). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/conn/loop.h"
#include "supervisor/conn/pool.h"

struct probe {
    struct pool_job pj;
    int nice_seen; /* the worker thread's nice value while the job ran */
    pid_t tid;     /* and which thread it was */
    int *done;
};

static void probe_run(struct pool_job *j)
{
    struct probe *p = (struct probe *)j;
    p->tid = (pid_t)syscall(SYS_gettid);
    errno = 0;
    p->nice_seen = getpriority(PRIO_PROCESS, (id_t)p->tid);
}

static void probe_done(struct pool_job *j)
{
    (*((struct probe *)j)->done)++;
}

/* Runs JOBS one after the other on a pool of one thread, waiting for each. */
static void run_in_order(struct probe *jobs, int n)
{
    struct cerr err = {0};
    struct loop *l;
    struct pool *pool;
    assert_int_equal(loop_new(&l, &err), 0);
    assert_int_equal(pool_new(l, 1, &pool, &err), 0);
    int done = 0;
    for (int i = 0; i < n; i++) {
        jobs[i].pj.run = probe_run;
        jobs[i].pj.done = probe_done;
        jobs[i].done = &done;
        pool_submit(pool, &jobs[i].pj);
        while (done < i + 1)
            assert_true(loop_run_once(l, 1000, &err) >= 0);
    }
    pool_free(pool);
    loop_free(l);
}

static void background_job_runs_lowered_then_thread_restored(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* raising the thread back needs CAP_SYS_NICE: the pool then does not lower it */
    struct probe jobs[3] = {{.pj.background = false}, {.pj.background = true}, {.pj.background = false}};
    run_in_order(jobs, 3);
    /* One thread ran all three: the short job after the background one found it restored. */
    assert_int_equal(jobs[0].tid, jobs[1].tid);
    assert_int_equal(jobs[1].tid, jobs[2].tid);
    assert_int_equal(jobs[0].nice_seen, 0);
    assert_int_equal(jobs[1].nice_seen, 10);
    assert_int_equal(jobs[2].nice_seen, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(background_job_runs_lowered_then_thread_restored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
