/* bench/listener_start.c: what the seccomp listener adds to a sandbox's start, alone: sandbox_spawn
 * of /bin/true to its end, with the default profile, notify off and on, interleaved round by
 * round (no trail, no SQLite: the difference is the merged filter, CLONE_FILES, the socketpair,
 * init's SCM_RIGHTS send and the parent's receive and check). Prints medians and p90 in ms.
 * usage: listener_start ROUNDS */
#include "sandbox/sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double one(bool notify)
{
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    p.seccomp.notify = notify;
    char *argv[] = {"/bin/true", NULL};
    struct sandbox_child *c = NULL;
    struct cerr err = {0};
    double t0 = util_now();
    if (sandbox_spawn(&p, "/bin/true", argv, NULL, &c, &err) < 0) {
        fprintf(stderr, "spawn: %s\n", err.msg);
        exit(1);
    }
    int fd = sandbox_child_take_notify_fd(c);
    if (notify != (fd >= 0)) {
        fprintf(stderr, "listener %s\n", fd >= 0 ? "unexpected" : "missing");
        exit(1);
    }
    struct sandbox_result r;
    if (sandbox_child_wait(c, &r, &err) < 0) {
        fprintf(stderr, "wait: %s\n", err.msg);
        exit(1);
    }
    double ms = (util_now() - t0) * 1e3;
    if (fd >= 0)
        close(fd);
    sandbox_child_free(c);
    return ms;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200;
    if (n < 1)
        return 2;
    double *t[2] = {calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(double))};
    one(false);
    one(true); /* warm both filters' caches */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            t[(i + k) % 2 == 0 ? 0 : 1][i] = one((i + k) % 2 != 0); /* alternate which goes first */
    const char *name[2] = {"filter answers EPERM (no listener)", "filter notifies (listener)"};
    double med[2];
    for (int k = 0; k < 2; k++) {
        qsort(t[k], (size_t)n, sizeof(double), cmp);
        med[k] = t[k][n / 2];
        printf("  %-36s median %6.2f ms  p90 %6.2f ms\n", name[k], med[k], t[k][n * 9 / 10]);
    }
    printf("  listener - none = %+.3f ms per start (%d rounds)\n", med[1] - med[0], n);
    free(t[0]);
    free(t[1]);
    return 0;
}
