/* tests/unit/test_trail_faults.c: the trail when storage fails or the writer dies: a full disk (a
 * tiny tmpfs in a private mount namespace) degrades it and nothing more is committed; a read-only
 * file is refused before anything happens; SIGKILL at random points of a busy writer never loses
 * an acknowledged entry nor breaks the chain. Runs as root, as the rest of the suite. */
#include "supervisor/trail/internal.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>
#include <seccomp.h>

static char *tmpdir_new(void)
{
    char tmpl[] = "/tmp/corral-trail-faults.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    assert_int_equal(chmod(d, 0755), 0);
    return strdup(d);
}

static void tmpdir_free(char *d)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

/* In a child: report and leave without running cmocka's or the sanitizer's exit handlers. */
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

static void wait_child_ok(pid_t pid)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child failed (status 0x%x)", status);
}

static cJSON *body_with_text(size_t n, uint64_t i)
{
    char *text = malloc(n + 1);
    memset(text, 'a' + (int)(i % 26), n);
    text[n] = '\0';
    cJSON *b = cJSON_CreateObject();
    cJSON_AddNumberToObject(b, "i", (double)i);
    cJSON_AddStringToObject(b, "text", text);
    free(text);
    return b;
}

/* ---- full disk --------------------------------------------------------------------------------- */

static void full_disk_child(const char *dir, enum trail_durability d)
{
    if (unshare(CLONE_NEWNS) < 0)
        child_fail("unshare(CLONE_NEWNS): %s", strerror(errno));
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        child_fail("making mounts private: %s", strerror(errno));
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=320k,mode=0755") < 0)
        child_fail("mounting a tiny tmpfs: %s", strerror(errno));
    char *db = util_printf("%s/t.db", dir);
    struct trail *t = NULL;
    struct cerr err = {0};
    if (trail_open(db, d, &t, &err) < 0)
        child_fail("open: %s", err.msg);
    uint64_t acked = 1, effects = 0; /* entry 1 is trail_created */
    int r = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t seq = 0;
        char h[65];
        cJSON *b = body_with_text(3000, i);
        r = trail_blob_put(t, "x", 1, h, &err); /* deduplicated after the first */
        if (r == 0)
            r = trail_append(t, i % 2 ? "ws-a" : NULL, "worker", "tool_call", b, &seq, &err);
        cJSON_Delete(b);
        if (r == 0)
            r = trail_commit(t, &err);
        if (r < 0)
            break;
        acked = seq;
        effects++; /* released only now, after its commit */
    }
    if (r == 0)
        child_fail("the disk never filled up");
    if (r != -EIO || !strstr(err.msg, "cannot be written") || !trail_degraded(t))
        child_fail("the failure was not a degraded trail: %d %s", r, err.msg);
    if (effects != acked - 1)
        child_fail("%llu effects for %llu acknowledged entries", (unsigned long long)effects,
                   (unsigned long long)acked);
    /* degraded: every later write fails the same way */
    char h[65];
    struct cerr e2 = {0};
    if (trail_append(t, NULL, "system", "agent_log", NULL, NULL, &e2) != -EIO ||
        !strstr(e2.msg, "cannot be written"))
        child_fail("append after degrade: %s", e2.msg);
    if (trail_blob_put(t, "y", 1, h, &e2) != -EIO || trail_commit(t, &e2) != -EIO)
        child_fail("blob_put/commit after degrade did not fail");
    if (trail_pending(t) != 0 || trail_head_seq(t) != acked)
        child_fail("head %llu, want %llu", (unsigned long long)trail_head_seq(t),
                   (unsigned long long)acked);
    trail_close(t);
    /* What is in the SQLite file: a sound chain, and at most what was acknowledged; the rest of
     * the acknowledged entries are in the ahead log, which stays while they cannot be applied. */
    uint64_t n = 0, bad_seq = 0;
    if (trail_verify_file_count(db, &n, &bad_seq, &err) != 0)
        child_fail("verify after a full disk: %s", err.msg);
    if (n > acked || (n < acked && !trail_ahead_left(db)))
        child_fail("the file holds %llu entries, %llu were acknowledged, and no ahead log is left",
                   (unsigned long long)n, (unsigned long long)acked);
    /* Space comes back: the next writer applies them, and nothing after them. */
    if (mount(NULL, dir, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, "size=4m") < 0)
        child_fail("growing the tmpfs: %s", strerror(errno));
    if (trail_open(db, d, &t, &err) < 0)
        child_fail("open after space came back: %s", err.msg);
    trail_close(t);
    if (trail_ahead_left(db))
        child_fail("the ahead log is still there after a clean close");
    if (trail_verify_file_count(db, &n, &bad_seq, &err) != 0)
        child_fail("verify after space came back: %s", err.msg);
    if (n != acked)
        child_fail("the file holds %llu entries, %llu were acknowledged", (unsigned long long)n,
                   (unsigned long long)acked);
    free(db);
    _exit(0);
}

static void test_full_disk(void **state)
{
    (void)state;
    for (int d = 0; d < 2; d++) {
        char *dir = tmpdir_new();
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            full_disk_child(dir, d ? TRAIL_DURABILITY_NORMAL : TRAIL_DURABILITY_FULL);
        wait_child_ok(pid);
        tmpdir_free(dir);
    }
}

/* ---- a file that cannot be written ------------------------------------------------------------ */

static void test_read_only_file(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = util_printf("%s/t.db", dir), *sub = util_printf("%s/locked", dir);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_open(db, TRAIL_DURABILITY_FULL, &t, &err), 0);
    trail_close(t);
    assert_int_equal(chmod(db, 0644), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* root writes anything; an unprivileged writer meets the file's permissions */
        if (setgid(65534) < 0 || setuid(65534) < 0)
            child_fail("dropping to nobody: %s", strerror(errno));
        struct trail *w = NULL;
        struct cerr e = {0};
        int r = trail_open(db, TRAIL_DURABILITY_FULL, &w, &e);
        if (r != -EROFS || w || !strstr(e.msg, "read-only"))
            child_fail("opening a read-only trail gave %d '%s'", r, e.msg);
        char *fresh = util_printf("%s/new.db", sub);
        r = trail_open(fresh, TRAIL_DURABILITY_FULL, &w, &e);
        if (r >= 0 || w || !strstr(e.msg, "cannot be opened for writing"))
            child_fail("creating a trail in a read-only directory gave %d '%s'", r, e.msg);
        free(fresh);
        /* reading needs no write access */
        uint64_t n = 0, bad_seq = 0;
        if (trail_verify_file_count(db, &n, &bad_seq, &e) != 0 || n != 1)
            child_fail("verify as nobody: %s", e.msg);
        _exit(0);
    }
    wait_child_ok(pid);
    free(db);
    free(sub);
    tmpdir_free(dir);
}

/* ---- SIGKILL at random points ------------------------------------------------------------------ */

static void busy_writer(const char *db, int ack_fd, unsigned seed, enum trail_durability d)
{
    struct trail *t = NULL;
    struct cerr err = {0};
    if (trail_open(db, d, &t, &err) < 0)
        child_fail("open: %s", err.msg);
    for (uint64_t i = 0;; i++) {
        int batch = 1 + (int)(rand_r(&seed) % 16);
        for (int k = 0; k < batch; k++) {
            char ws[16], h[65];
            snprintf(ws, sizeof(ws), "ws-%u", rand_r(&seed) % 9);
            cJSON *b = body_with_text(40 + rand_r(&seed) % 400, i);
            if (k == 0 && trail_blob_put(t, &i, sizeof(i), h, &err) == 0)
                cJSON_AddStringToObject(b, "content_blob", h);
            int r = trail_append(t, rand_r(&seed) % 10 ? ws : NULL, "worker", "tool_call", b, NULL,
                                 &err);
            cJSON_Delete(b);
            if (r < 0)
                child_fail("append: %s", err.msg);
        }
        if (trail_commit(t, &err) < 0)
            child_fail("commit: %s", err.msg);
        uint64_t seq = trail_head_seq(t);
        if (util_write_all(ack_fd, &seq, sizeof(seq)) < 0) /* the effect, released after the commit */
            child_fail("ack: %s", strerror(errno));
    }
}

static int max_seq(const struct trail_entry *e, void *ctx)
{
    *(uint64_t *)ctx = e->seq;
    return 0;
}

static void test_sigkill_anywhere(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = util_printf("%s/t.db", dir);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_open(db, TRAIL_DURABILITY_FULL, &t, &err), 0);
    trail_close(t);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    print_message("# sigkill seed %u\n", seed);
    uint64_t last_acked = 1;
    for (int round = 0; round < 40; round++) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        unsigned child_seed = rand_r(&seed);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            busy_writer(db, p[1], child_seed,
                        round % 2 ? TRAIL_DURABILITY_NORMAL : TRAIL_DURABILITY_FULL);
        }
        close(p[1]);
        /* let it run 1 to 60 ms, reading acknowledgements as they come, then kill it mid-flight */
        double until = util_now() + (1 + rand_r(&seed) % 60) / 1000.0;
        uint64_t seq;
        for (;;) {
            double left = until - util_now();
            if (left <= 0)
                break;
            struct pollfd pfd = {.fd = p[0], .events = POLLIN};
            if (poll(&pfd, 1, (int)(left * 1000) + 1) > 0 &&
                read(p[0], &seq, sizeof(seq)) == (ssize_t)sizeof(seq)) {
                assert_true(seq >= last_acked);
                last_acked = seq;
            }
        }
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status))
            fail_msg("round %d: the writer exited on its own with %d", round, WEXITSTATUS(status));
        while (read(p[0], &seq, sizeof(seq)) == (ssize_t)sizeof(seq))
            last_acked = seq;
        close(p[0]);

        /* What it acknowledged may be only in the ahead log: the next writer applies it. */
        struct trail *w = NULL;
        if (trail_open(db, TRAIL_DURABILITY_NORMAL, &w, &err) != 0)
            fail_msg("round %d (seed %u): open after SIGKILL: %s", round, seed, err.msg);
        trail_close(w);
        uint64_t n = 0, bad_seq = 0;
        if (trail_verify_file_count(db, &n, &bad_seq, &err) != 0)
            fail_msg("round %d (seed %u): verify after SIGKILL: %s", round, seed, err.msg);
        struct trail_reader *r = NULL;
        assert_int_equal(trail_reader_open(db, &r, &err), 0);
        uint64_t top = 0;
        struct trail_filter f = {.after_seq = n > 0 ? n - 1 : 0};
        assert_int_equal(trail_query(r, &f, max_seq, &top, &err), 0);
        trail_reader_close(r);
        if (n < last_acked || top != n)
            fail_msg("round %d (seed %u): %llu entries in the file, %llu acknowledged", round, seed,
                     (unsigned long long)n, (unsigned long long)last_acked);
    }
    print_message("# %llu entries acknowledged over 40 kills\n", (unsigned long long)last_acked);
    assert_true(last_acked > 1);
    free(db);
    tmpdir_free(dir);
}

/* A commit whose record was written but whose flush failed (an I/O error, here fdatasync made to
 * fail by a seccomp filter on every thread) failed: its caller dropped the batch's effects. The
 * record used to stay whole in the ahead log, so when the writer died before anything wrote over
 * it, the next open applied a batch that never happened. */
static void test_failed_flush_not_recovered(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = util_printf("%s/t.db", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct trail *t = NULL;
        struct cerr err = {0};
        if (trail_open(db, TRAIL_DURABILITY_FULL, &t, &err) < 0)
            child_fail("open: %s", err.msg);
        cJSON *b = body_with_text(40, 1);
        if (trail_append(t, "w", "worker", "tool_call", b, NULL, &err) < 0 ||
            trail_commit(t, &err) < 0 || trail_sync(t, &err) < 0)
            child_fail("first commit: %s", err.msg);
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EIO), SCMP_SYS(fdatasync), 0) < 0 ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EIO), SCMP_SYS(fsync), 0) < 0 ||
            seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) < 0 || seccomp_load(ctx) < 0)
            child_fail("seccomp");
        if (trail_append(t, "w", "worker", "tool_call", b, NULL, &err) < 0)
            child_fail("second append: %s", err.msg);
        if (trail_commit(t, &err) != -EIO)
            child_fail("the commit whose flush failed was acknowledged");
        cJSON_Delete(b);
        _exit(0); /* dies before anything writes over the failed record */
    }
    wait_child_ok(pid);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_open(db, TRAIL_DURABILITY_FULL, &t, &err), 0);
    assert_int_equal(trail_head_seq(t), 2);
    trail_close(t);
    uint64_t n = 0, bad_seq = 0;
    assert_int_equal(trail_verify_file_count(db, &n, &bad_seq, &err), 0);
    assert_int_equal(n, 2);
    free(db);
    tmpdir_free(dir);
}

/* Readers ask whether a writer died with its ahead log (trail_ahead_left: corral trail, corral
 * run before it looks for an unfinished run). They used to take a shared flock on FILE-ahead for
 * that, and a writer opening the trail at that moment failed with EBUSY ("being written by
 * another corral process"). Now they only test the writer's lock: with flock itself refused (a
 * seccomp filter), the answers are still right. */
static void test_readers_take_no_lock(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = util_printf("%s/t.db", dir);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_open(db, TRAIL_DURABILITY_NORMAL, &t, &err), 0);
    trail_close(t);
    for (int round = 0; round < 2; round++) {
        int p[2], q[2];
        assert_int_equal(pipe(p), 0);
        assert_int_equal(pipe(q), 0);
        pid_t writer = fork();
        assert_true(writer >= 0);
        if (writer == 0) { /* commits, then stays (round 0) or dies without closing (round 1) */
            close(p[0]);
            close(q[1]);
            if (trail_open(db, TRAIL_DURABILITY_NORMAL, &t, &err) < 0)
                child_fail("open: %s", err.msg);
            trail_applier_hold(t, true);
            cJSON *b = body_with_text(40, 1);
            if (trail_append(t, "w", "worker", "tool_call", b, NULL, &err) < 0 ||
                trail_commit(t, &err) < 0)
                child_fail("commit: %s", err.msg);
            cJSON_Delete(b);
            char c = 'x';
            if (write(p[1], &c, 1) != 1)
                child_fail("write");
            if (round == 0 && read(q[0], &c, 1) < 0)
                child_fail("read");
            _exit(0);
        }
        close(p[1]);
        close(q[0]);
        char c;
        assert_int_equal(read(p[0], &c, 1), 1);
        if (round == 1)
            wait_child_ok(writer);
        pid_t reader = fork();
        assert_true(reader >= 0);
        if (reader == 0) {
            scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
            if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(flock), 0) < 0 ||
                seccomp_load(ctx) < 0)
                child_fail("seccomp");
            bool left = trail_ahead_left(db);
            if (left != (round == 1))
                child_fail("round %d: trail_ahead_left said %d", round, left);
            _exit(0);
        }
        wait_child_ok(reader);
        close(q[1]);
        close(p[0]);
        if (round == 0)
            wait_child_ok(writer);
    }
    assert_int_equal(trail_open(db, TRAIL_DURABILITY_NORMAL, &t, &err), 0);
    assert_int_equal(trail_head_seq(t), 3);
    trail_close(t);
    free(db);
    tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_disk),
        cmocka_unit_test(test_read_only_file),
        cmocka_unit_test(test_sigkill_anywhere),
        cmocka_unit_test(test_failed_flush_not_recovered),
        cmocka_unit_test(test_readers_take_no_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
