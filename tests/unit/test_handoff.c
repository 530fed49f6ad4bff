/* tests/unit/test_handoff.c: a command sandbox's seccomp listener handed to the event loop
 * (supervisor/listeners/handoff.c). A syscall denied more often than it is recorded one by one
 * gets its aggregate entry even when the run ends before the listener hung up. When init loaded
 * the filter (sandbox/spawn.c) it holds the filter too, so the hang-up comes only with init's
 * exit, after the command's end was reported: a run ending then lost the entry. Here the program
 * is still waiting on its stdin when the run ends, which leaves no hang-up to race with. */
#include "sandbox/sandbox.h"
#include "supervisor/conn/loop.h"
#include "supervisor/listeners/handoff.h"
#include "supervisor/trail/trail.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* 20 opens for writing, each refused (no @file-write: read-only opens only): past the 16
 * recorded one by one (SCNOTIFY_PER_SYSCALL). Then "done", and a wait for stdin to close. */
static char *const denied_argv[] = {
    "sh", "-c",
    "i=0; while [ $i -lt 20 ]; do true >/tmp/f; i=$((i+1)); done; echo done; read -r x; "
    "exit 0",
    NULL};

struct found {
    unsigned denials, aggregates;
};

static int count_denials(const struct trail_entry *e, void *ctx)
{
    struct found *f = ctx;
    f->denials++;
    if (memmem(e->body, e->body_len, "\"aggregate\":true", 16))
        f->aggregates++;
    return 0;
}

static void totals_kept_when_the_run_ends_before_the_hangup(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char dir[] = "/tmp/corral-handoff.XXXXXX", db[64];
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/t.db", dir);
    struct cerr e = {0};
    struct trail *t = NULL;
    struct loop *l = NULL;
    struct handoff *h = NULL;
    if (trail_open(db, TRAIL_DURABILITY_NORMAL, &t, &e) < 0 || loop_new(&l, &e) < 0 ||
        handoff_new(l, t, &h, &e) < 0)
        fail_msg("set-up: %s", e.msg);

    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.seccomp.groups &= ~(uint32_t)SANDBOX_SC_FILE_WRITE;
    p.seccomp.notify = true;
    struct sandbox_child *c = NULL;
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC); /* the shell's complaints */
    struct sandbox_stdio io = {in[0], out[1], devnull};
    if (sandbox_spawn(&p, "/bin/sh", denied_argv, &io, &c, &e) < 0)
        fail_msg("spawn: %s", e.msg);
    close(in[0]);
    close(out[1]);
    close(devnull);
    int lfd = sandbox_child_take_notify_fd(c);
    assert_true(lfd >= 0);
    handoff_adopt(h, "ws-handoff", lfd, &p.seccomp);
    /* The loop answers each denial; "done" comes once all were answered. */
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    char buf[16];
    ssize_t n = 0;
    for (int i = 0; i < 200 && n <= 0; i++) {
        assert_true(loop_run_once(l, 50, &e) >= 0);
        n = read(out[0], buf, sizeof(buf));
    }
    assert_true(n == 5 && !memcmp(buf, "done\n", 5));
    for (int i = 0; i < 3; i++) /* whatever else is ready */
        assert_true(loop_run_once(l, 0, &e) >= 0);
    /* The run ends with the listener not hung up. */
    handoff_free(h);
    if (trail_pending(t) > 0 && trail_commit(t, &e) < 0)
        fail_msg("commit: %s", e.msg);
    trail_close(t);
    loop_free(l);
    close(in[1]);
    close(out[0]);
    struct sandbox_result res;
    assert_int_equal(sandbox_child_wait(c, &res, &e), 0);
    sandbox_child_free(c);
    assert_true(res.exited && res.exit_code == 0);

    struct trail_reader *r = NULL;
    struct found f = {0};
    struct trail_filter flt = {.type = "denial"};
    if (trail_reader_open(db, &r, &e) < 0 || trail_query(r, &flt, count_denials, &f, &e) < 0)
        fail_msg("query: %s", e.msg);
    trail_reader_close(r);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    (void)!system(cmd);
    if (f.denials < 16 || f.aggregates != 1)
        fail_msg("%u denial entries, %u aggregate (want 16 one by one and 1 aggregate)", f.denials,
                 f.aggregates);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(totals_kept_when_the_run_ends_before_the_hangup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
