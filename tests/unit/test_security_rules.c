/* tests/unit/test_security_rules.c: the small rules behind issue 12's fixes, as tables: which
 * paths the default protected_paths cover (and which they must not), the token bucket of the
 * rate limits, the safe-place checks of the run directory (a directory others can write, one
 * of another user's, a sticky ancestor), and the storage measure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/rate.h"
#include "supervisor/runtime/rundir.h"
#include "tools/broker/protect.h"
#include "tools/broker/storage.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t n_default(void)
{
    size_t n = 0;
    while (broker_protected_default[n])
        n++;
    return n;
}

static void protected_defaults(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        bool want;
    } t[] = {
        {".git/config", true},
        {".git/hooks/pre-commit", true},
        {".git/hooks", true},
        {"sub/.git/config", true},
        {".git", true},
        {"a/b/.git", true},
        {".git/modules/x/config", true},
        {".git/worktrees/w/config", true},
        {".git/config.worktree", true},
        {".git/info/attributes", true},
        {".git/objects/ab/cdef", false},
        {".git/HEAD", false},
        {".gitignore", false},
        {"src/config", false},
        {"git/config", false},
        {".github/workflows/ci.yml", false},
        {"config", false},
        {".git/refs/heads/main", false},
    };
    size_t n = n_default();
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        bool got = broker_protected_match(broker_protected_default, n, t[i].path) != NULL;
        if (got != t[i].want)
            fail_msg("%s: want %s", t[i].path, t[i].want ? "protected" : "free");
    }
    assert_null(broker_protected_match(broker_protected_default, 0, ".git/config"));
}

static void rate_bucket(void **state)
{
    (void)state;
    struct rate_bucket b = {0};
    int ok = 0;
    for (int i = 0; i < 100; i++)
        ok += rate_take(&b, 20, 100, 1000);
    assert_int_equal(ok, 100); /* the burst */
    assert_false(rate_take(&b, 20, 100, 1000));
    assert_false(rate_take(&b, 20, 100, 1040)); /* 0.8 of a token */
    assert_true(rate_take(&b, 20, 100, 1050));  /* one token after 50 ms at 20/s */
    assert_false(rate_take(&b, 20, 100, 1050));
    ok = 0;
    for (int i = 0; i < 1000; i++)
        ok += rate_take(&b, 20, 100, 100000); /* long idle: refilled to the burst, not beyond */
    assert_int_equal(ok, 100);
    struct rate_bucket u = {0};
    for (int i = 0; i < 10000; i++)
        assert_true(rate_take(&u, 0, 0, 5)); /* 0: no limit */
}

static char *tmpdir(void)
{
    char *d = strdup("/tmp/corral-ut.XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static void rundir_places(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    char *d = tmpdir(); /* root's, 0700, in sticky /tmp: a safe place */
    char p[512];
    struct cerr e = {0};
    assert_int_equal(rundir_check_dir(d, "t", &e), 0);
    snprintf(p, sizeof(p), "%s/ww", d);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(chmod(p, 01777), 0);
    assert_int_equal(rundir_check_dir(p, "t", &e), -EPERM); /* sticky is not enough for itself */
    assert_non_null(strstr(e.msg, "writable by others"));
    snprintf(p, sizeof(p), "%s/ww/sub", d);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(rundir_check_dir(p, "t", &e), 0); /* ... but fine above a root-only one */
    snprintf(p, sizeof(p), "%s/theirs", d);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(chown(p, 65534, 65534), 0);
    assert_int_equal(rundir_check_dir(p, "t", &e), -EPERM);
    assert_non_null(strstr(e.msg, "uid 65534"));
    snprintf(p, sizeof(p), "%s/theirs/trail.db", d);
    assert_int_equal(rundir_check_file(p, "the trail", false, &e), -EPERM);
    snprintf(p, sizeof(p), "%s/f.db", d);
    int fd = open(p, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    assert_int_equal(fchown(fd, 65534, 65534), 0);
    close(fd);
    assert_int_equal(rundir_check_file(p, "the trail", false, &e), -EPERM); /* not adopted */
    snprintf(p, sizeof(p), "%s/run", d);
    fd = rundir_create(p, &e);
    assert_true(fd >= 0);
    close(fd);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(mkdir(strcat(p, "/x"), 0700), 0);
    snprintf(p, sizeof(p), "%s/run", d);
    assert_true(rundir_create(p, &e) < 0); /* exists and is not empty */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

static void storage_measure(void **state)
{
    (void)state;
    char *d = tmpdir();
    char p[512];
    snprintf(p, sizeof(p), "%s/a", d);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/a/f", d);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    for (int i = 0; i < 1000; i++)
        fputc('x', f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/link", d);
    assert_int_equal(symlink("/etc/passwd", p), 0); /* never followed, never counted */
    int fd = open(d, O_PATH | O_DIRECTORY);
    uint64_t used = 0;
    assert_int_equal(broker_storage_used(fd, &used), 0);
    assert_int_equal(used, 1000);
    close(fd);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(protected_defaults),
        cmocka_unit_test(rate_bucket),
        cmocka_unit_test(rundir_places),
        cmocka_unit_test(storage_measure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
