/* tests/unit/test_trail_degraded.c: degraded mode's way back. A trail on a full disk (a tiny
 * tmpfs in a private mount namespace, under a directory of the test's own) degrades; retrying
 * while the disk is still full fails again, boundedly, losing nothing; once space is freed,
 * trail_retry makes it writable, system_degraded is recorded, workspace chains go on where they
 * were, and the file verifies with every acknowledged entry. */
#include "supervisor/trail/internal.h"

#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

__attribute__((format(printf, 1, 2), noreturn)) static void child_fail(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    fprintf(stderr, "child: %s\n", buf);
    fflush(stderr);
    _exit(1);
}

static int put(struct trail *t, uint64_t i, uint64_t *seq, struct cerr *err)
{
    char text[3001];
    memset(text, 'a' + (int)(i % 26), 3000);
    text[3000] = '\0';
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "i", (double)i);
    cJSON_AddStringToObject(b, "text", text);
    int r = trail_append(t, i % 2 ? "ws-a" : NULL, "worker", "tool_call", b, seq, err);
    cJSON_Delete(b);
    return r == 0 ? trail_commit(t, err) : r;
}

static void child(const char *dir)
{
    if (unshare(CLONE_NEWNS) < 0)
        child_fail("unshare(CLONE_NEWNS): %s", strerror(errno));
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        child_fail("making mounts private: %s", strerror(errno));
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=4096k,mode=0755") < 0)
        child_fail("mounting a tiny tmpfs: %s", strerror(errno));
    /* ballast the "admin" deletes later to free space: more than the trail's ahead log can
     * have run ahead of SQLite when the disk filled, which the retry must then store */
    char *ballast = util_printf("%s/ballast", dir);
    int fd = open(ballast, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    static char zeros[3072 << 10];
    if (fd < 0 || write(fd, zeros, sizeof zeros) != (ssize_t)sizeof zeros || close(fd) < 0)
        child_fail("ballast: %s", strerror(errno));
    char *db = util_printf("%s/t.db", dir);
    struct trail *t = NULL;
    struct cerr err = {0};
    if (trail_open(db, TRAIL_DURABILITY_FULL, &t, &err) < 0)
        child_fail("open: %s", err.msg);
    uint64_t acked = 1, i = 0, seq = 0;
    int r = 0;
    for (; i < 100000 && (r = put(t, i, &seq, &err)) == 0; i++)
        acked = seq;
    if (r != -EIO || !trail_degraded(t) || !trail_degraded_why(t)[0])
        child_fail("the disk never filled up, or not degraded: %d %s", r, err.msg);
    /* Bounded retries while the disk is still full: each fails again, nothing is lost. */
    int failures = 0;
    for (int k = 0; k < 3; k++) {
        struct cerr e = {0};
        if (trail_retry(t, &e) == 0 && put(t, i, &seq, &e) == 0)
            child_fail("a write succeeded on a full disk");
        failures += trail_degraded(t);
    }
    if (failures != 3 || trail_head_seq(t) != acked)
        child_fail("retries on a full disk: %d degraded, head %llu want %llu", failures,
                   (unsigned long long)trail_head_seq(t), (unsigned long long)acked);
    /* Space comes back: retry, record system_degraded, and go on. */
    if (unlink(ballast) < 0)
        child_fail("unlink: %s", strerror(errno));
    if (trail_retry(t, &err) < 0 || trail_degraded(t))
        child_fail("retry after freeing space: %s", err.msg);
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "scope", "trail_storage");
    cJSON_AddNumberToObject(b, "failed_attempts", failures + 1);
    r = trail_append(t, NULL, "system", "system_degraded", b, &seq, &err);
    cJSON_Delete(b);
    if (r < 0 || trail_commit(t, &err) < 0 || seq != acked + 1)
        child_fail("system_degraded: %s (seq %llu)", err.msg, (unsigned long long)seq);
    if (put(t, 1, &seq, &err) < 0 || seq != acked + 2) /* a ws-a entry: its local chain goes on */
        child_fail("after recovery: %s", err.msg);
    trail_close(t);
    uint64_t n = 0, bad = 0;
    if (trail_verify_file_count(db, &n, &bad, &err) != 0)
        child_fail("verify after recovery: %s (bad seq %llu)", err.msg, (unsigned long long)bad);
    if (n != acked + 2)
        child_fail("the file holds %llu entries, want %llu", (unsigned long long)n,
                   (unsigned long long)acked + 2);
    free(db);
    free(ballast);
    _exit(0);
}

static void test_full_disk_then_space_back(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/corral-trail-degraded.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child(dir); /* the mount lives in the child's namespace: gone when it exits */
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(rmdir(dir), 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child failed (status 0x%x)", status);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_full_disk_then_space_back)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
