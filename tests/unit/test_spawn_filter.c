/* tests/unit/test_spawn_filter.c: who loads a sandbox's seccomp filter. When the profile allows
 * every call init and the program make after the load (seccomp_may_load_early), init loads it
 * while the sandbox is prepared and the program inherits it: a command's start no longer pays
 * the kernel's load. Otherwise the program loads it right before its execve, as before. Proven
 * from inside real sandboxes by the Seccomp line of /proc/1/status (init) and /proc/self/status
 * (the program), started directly and through the zygote (which must carry the decision: it
 * clones init from a profile without the filter's groups). */
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"
#include "sandbox/zygote.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Builtins only: a profile without @exec runs no other program after its start. It prints,
 * then waits for its stdin to close. */
static char *const status_argv[] = {
    "sh", "-c",
    "for f in /proc/1/status /proc/self/status; do while read -r k v; do "
    "case $k in Seccomp:) printf '%s ' \"$v\";; esac; done < $f; done; echo; read -r x; exit 0",
    NULL};

/* "INIT PROGRAM": the Seccomp mode of each (0 none, 2 filter), after a run of P. And init's
 * stdio while the program runs: /dev/null, never the caller's (init opens it before its filter,
 * which may refuse an open for writing). */
static void seccomp_modes(const struct sandbox_profile *p, char *out, size_t cap, int *notify_fd)
{
    int ip[2], op[2];
    assert_int_equal(pipe2(ip, O_CLOEXEC), 0);
    assert_int_equal(pipe2(op, O_CLOEXEC), 0);
    struct sandbox_stdio io = {ip[0], op[1], -1};
    struct sandbox_child *c = NULL;
    struct cerr e = {0};
    int r = sandbox_spawn(p, "/bin/sh", status_argv, &io, &c, &e);
    close(ip[0]);
    close(op[1]);
    if (r < 0)
        fail_msg("spawn: %s", e.msg);
    if (notify_fd)
        *notify_fd = sandbox_child_take_notify_fd(c);
    size_t n = 0;
    while (n < cap - 1 && (n == 0 || out[n - 1] != '\n')) {
        ssize_t k = read(op[0], out + n, 1);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    out[n && out[n - 1] == '\n' ? n - 1 : n] = '\0';
    for (int fd = 0; fd < 3; fd++) {
        char link[64], target[64] = "";
        snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)sandbox_child_pid(c), fd);
        ssize_t l = readlink(link, target, sizeof(target) - 1);
        target[l > 0 ? l : 0] = '\0';
        if (strcmp(target, "/dev/null") != 0)
            fail_msg("init's fd %d is \"%s\", not /dev/null", fd, target);
    }
    close(ip[1]);
    close(op[0]);
    struct sandbox_result res;
    assert_int_equal(sandbox_child_wait(c, &res, &e), 0);
    sandbox_child_free(c);
    if (!res.exited || res.exit_code != 0)
        fail_msg("the program failed (status %d, signal %d): \"%s\"", res.exit_code, res.signal, out);
}

static void gate_follows_the_profile(void **state)
{
    (void)state;
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    assert_true(seccomp_may_load_early(&p.seccomp));
    /* An observer: no writes, no exec after the start. Init's /dev/null is opened before. */
    p.seccomp.groups &= ~(uint32_t)(SANDBOX_SC_FILE_WRITE | SANDBOX_SC_EXEC);
    assert_true(seccomp_may_load_early(&p.seccomp));
    p.seccomp.groups &= ~(uint32_t)SANDBOX_SC_NETWORK_IO; /* init's recvmsg */
    assert_false(seccomp_may_load_early(&p.seccomp));
    sandbox_profile_default(&p);
    const char *deny[] = {"wait4"};
    p.seccomp.deny = deny;
    p.seccomp.n_deny = 1;
    assert_false(seccomp_may_load_early(&p.seccomp));
}

/* Each case run directly and through the zygote. */
static void check_cases(void)
{
    char out[64];
    struct sandbox_profile p;

    sandbox_profile_default(&p);
    seccomp_modes(&p, out, sizeof(out), NULL);
    assert_string_equal(out, "2 2 "); /* init filtered: loaded early */

    sandbox_profile_default(&p);
    p.seccomp.groups &= ~(uint32_t)(SANDBOX_SC_FILE_WRITE | SANDBOX_SC_EXEC);
    seccomp_modes(&p, out, sizeof(out), NULL);
    assert_string_equal(out, "2 2 ");

    /* A notifying filter: its listener leaves init at the load, not at the program's start. */
    sandbox_profile_default(&p);
    p.seccomp.notify = true;
    int lfd = -1;
    seccomp_modes(&p, out, sizeof(out), &lfd);
    assert_string_equal(out, "2 2 ");
    assert_true(lfd >= 0);
    close(lfd);

    /* Without @network-io init could not take its start message once filtered: the program
     * loads the filter itself, and init stays unfiltered. */
    sandbox_profile_default(&p);
    p.seccomp.groups &= ~(uint32_t)SANDBOX_SC_NETWORK_IO;
    seccomp_modes(&p, out, sizeof(out), NULL);
    assert_string_equal(out, "0 2 ");

    p.seccomp.notify = true;
    lfd = -1;
    seccomp_modes(&p, out, sizeof(out), &lfd);
    assert_string_equal(out, "0 2 ");
    assert_true(lfd >= 0);
    close(lfd);
}

static void direct(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    check_cases();
}

static void through_the_zygote(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    struct cerr e;
    if (zygote_start(&e) < 0) /* no thread exists yet: cmocka makes none */
        fail_msg("zygote_start: %s", e.msg);
    check_cases();
    zygote_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gate_follows_the_profile),
        cmocka_unit_test(direct),
        cmocka_unit_test(through_the_zygote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
