/* tests/unit/test_spawn_fds.c: a sandbox started by a process holding many fds (a supervisor
 * with a thousand agents holds thousands) with a small nofile budget. Regression (issue 17): the
 * cloned init applied the role's RLIMIT_NOFILE while it still held every inherited fd, so
 * landlock's ruleset (a new fd) failed with EMFILE past about 140 agents. init now closes what it
 * does not need first; the program gets 0, 1 and 2 only. */
#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

static void many_fds_small_nofile(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < 2100 && rl.rlim_max >= 2100) {
        rl.rlim_cur = 2100;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    if (rl.rlim_cur < 2100)
        skip();
    int held[1500];
    for (int i = 0; i < 1500; i++) {
        held[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(held[i] >= 0);
    }
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.limits.nofile = 64;
    p.landlock = true;
    int op[2];
    assert_int_equal(pipe2(op, O_CLOEXEC), 0);
    struct sandbox_stdio io = {-1, op[1], op[1]};
    char *const argv[] = {"sh", "-c", "ls /proc/self/fd | tr '\\n' ' '", NULL};
    struct sandbox_child *c = NULL;
    struct cerr e = {0};
    int r = sandbox_spawn(&p, "/bin/sh", argv, &io, &c, &e);
    close(op[1]);
    if (r < 0)
        fail_msg("spawn with 1500 fds held and nofile 64: %s", e.msg);
    char out[256];
    ssize_t n = util_read_all(op[0], out, sizeof(out) - 1);
    out[n > 0 ? n : 0] = '\0';
    close(op[0]);
    struct sandbox_result res;
    assert_int_equal(sandbox_child_wait(c, &res, &e), 0);
    sandbox_child_free(c);
    assert_true(res.exited);
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(out, "0 1 2 3 "); /* 3: ls's own directory fd */
    for (int i = 0; i < 1500; i++)
        close(held[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(many_fds_small_nofile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
