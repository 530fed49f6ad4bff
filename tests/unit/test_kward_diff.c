/* tests/unit/test_kward_diff.c: the unified diff of write_file and edit_file: GNU diff run in a
 * command sandbox on the two texts, and the in-process counting of its output. Exact
 * texts for the small cases; for generated ones, the diff is applied back to the old text by a
 * strict hunk applier here and must give the new text, with + and - counts as stated; the
 * counter is also fed output no diff would print. */
#include "wap_fixture.h"

#include "tools/kward/kward.h"

#include <errno.h>
#include <stdlib.h>

/* The diff of f.txt from A (NULL: a new file) to B. */
static char *diff_of(struct fx *f, const char *a, const char *b, struct kward_diff_stats *st)
{
    char *out;
    size_t len;
    struct kward_diff_stats local;
    struct broker_err e = {0};
    if (kward_diff(&f->ctx, "f.txt", a, a ? strlen(a) : 0, b, strlen(b), &out, &len, st ? st : &local,
                   &e) < 0) {
        print_error("diff failed: %s\n", e.msg);
        fail();
    }
    assert_int_equal(strlen(out), len);
    struct kward_diff_stats again;
    assert_int_equal(kward_diff_count(out, len, &again), 0);
    return out;
}

/* "@@ -A[,B] +C[,D] @@": a count left out is 1. */
static void hunk_header(const char *p, size_t *a0, size_t *ac, size_t *b0, size_t *bc)
{
    int n = 0;
    assert_int_equal(sscanf(p, "@@ -%zu%n", a0, &n), 1);
    p += n;
    *ac = 1;
    if (*p == ',') {
        assert_int_equal(sscanf(p, ",%zu%n", ac, &n), 1);
        p += n;
    }
    assert_int_equal(sscanf(p, " +%zu%n", b0, &n), 1);
    p += n;
    *bc = 1;
    if (*p == ',')
        assert_int_equal(sscanf(p, ",%zu", bc), 1);
}

/* Applies a unified diff to A strictly (context and removed lines must match); returns the
 * result or fails the test. */
static char *apply(const char *a, const char *diff)
{
    size_t al = strlen(a), cap = al + strlen(diff) + 1;
    char *out = malloc(cap);
    size_t on = 0, ai = 0; /* byte offset in a */
    size_t aline = 1;
    const char *p = diff;
    /* skip headers */
    for (int h = 0; h < 2 && *p; h++) {
        assert_true(!strncmp(p, h ? "+++ " : "--- ", 4));
        p = strchr(p, '\n') + 1;
    }
    while (*p) {
        size_t a0, ac, b0, bc;
        hunk_header(p, &a0, &ac, &b0, &bc);
        p = strchr(p, '\n') + 1;
        size_t target = ac ? a0 : a0 + 1;
        while (aline < target) { /* copy unchanged lines */
            const char *nl = memchr(a + ai, '\n', al - ai);
            size_t end = nl ? (size_t)(nl - a) + 1 : al;
            memcpy(out + on, a + ai, end - ai);
            on += end - ai;
            ai = end;
            aline++;
        }
        while (*p && *p != '@') {
            char mark = *p++;
            const char *nl = strchr(p, '\n');
            size_t ll = (size_t)(nl - p) + 1;
            bool no_nl = !strncmp(nl + 1, "\\ No newline at end of file\n", 28);
            size_t text_len = no_nl ? ll - 1 : ll;
            if (mark == ' ' || mark == '-') {
                assert_true(ai + text_len <= al);
                assert_memory_equal(a + ai, p, text_len);
                ai += text_len;
                aline++;
            }
            if (mark == ' ' || mark == '+') {
                memcpy(out + on, p, text_len);
                on += text_len;
            }
            p = nl + 1;
            if (no_nl)
                p += 28;
        }
    }
    memcpy(out + on, a + ai, al - ai);
    on += al - ai;
    out[on] = '\0';
    return out;
}

static void equal_texts(void **s)
{
    struct fx *f = *s;
    struct kward_diff_stats st;
    char *d = diff_of(f, "a\nb\n", "a\nb\n", &st);
    assert_string_equal(d, "");
    assert_int_equal(st.additions + st.deletions, 0);
    free(d);
    d = diff_of(f, "", "", &st);
    assert_string_equal(d, "");
    free(d);
}

static void one_change_exact(void **s)
{
    struct fx *f = *s;
    struct kward_diff_stats st;
    char *d = diff_of(f, "1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n", &st);
    assert_string_equal(
        d, "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
    assert_int_equal(st.additions, 1);
    assert_int_equal(st.deletions, 1);
    free(d);
}

static void insert_delete_edges(void **s)
{
    struct fx *f = *s;
    char *d = diff_of(f, "b\n", "a\nb\n", NULL);
    assert_string_equal(d, "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1,2 @@\n+a\n b\n");
    free(d);
    d = diff_of(f, "a\nb\n", "a\n", NULL);
    assert_string_equal(d, "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1 @@\n a\n-b\n");
    free(d);
    d = diff_of(f, "", "new\n", NULL);
    assert_string_equal(d, "--- a/f.txt\n+++ b/f.txt\n@@ -0,0 +1 @@\n+new\n");
    free(d);
    d = diff_of(f, "old\n", "", NULL);
    assert_string_equal(d, "--- a/f.txt\n+++ b/f.txt\n@@ -1 +0,0 @@\n-old\n");
    free(d);
}

static void no_newline_at_end(void **s)
{
    struct fx *f = *s;
    char *d = diff_of(f, "a\nb", "a\nb\n", NULL);
    assert_string_equal(
        d, "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
    char *back = apply("a\nb", d);
    assert_string_equal(back, "a\nb\n");
    free(back);
    free(d);
}

static void hunks_split_and_merged(void **s)
{
    struct fx *f = *s;
    char a[512] = "", b[512] = "";
    for (int i = 1; i <= 30; i++) {
        char l[16];
        snprintf(l, sizeof(l), "%d\n", i);
        strcat(a, l);
        if (i == 3 || i == 25)
            strcat(b, "X\n");
        else if (i == 9) /* within 6 lines of 3: same hunk */
            strcat(b, "Y\n");
        else
            strcat(b, l);
    }
    struct kward_diff_stats st;
    char *d = diff_of(f, a, b, &st);
    int hunks = 0;
    for (const char *p = d; (p = strstr(p, "@@ -")); p += 4)
        hunks++;
    assert_int_equal(hunks, 2);
    assert_non_null(strstr(d, "@@ -1,12 +1,12 @@\n"));
    assert_non_null(strstr(d, "@@ -22,7 +22,7 @@\n"));
    assert_int_equal(st.additions, 3);
    assert_int_equal(st.deletions, 3);
    char *back = apply(a, d);
    assert_string_equal(back, b);
    free(back);
    free(d);
}

/* Pseudo-random edits (a fixed LCG): every diff applies back and its counts are minimal for
 * the case where the edit script is known (pure insertions). */
static void generated_roundtrips(void **s)
{
    struct fx *f = *s;
    uint32_t seed = 12345;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    for (int round = 0; round < 60; round++) {
        size_t n = 1 + RND() % 60;
        size_t cap = 4096;
        char *a = calloc(1, cap), *b = calloc(1, cap);
        for (size_t i = 0; i < n; i++) {
            char l[16];
            snprintf(l, sizeof(l), "L%u\n", (unsigned)(RND() % 8));
            strcat(a, l);
            unsigned op = RND() % 6;
            if (op == 0)
                continue; /* delete */
            if (op == 1)
                snprintf(l, sizeof(l), "M%u\n", (unsigned)(RND() % 8)); /* change */
            strcat(b, l);
            if (op == 2)
                strcat(b, "INS\n");
        }
        if (RND() % 4 == 0)
            a[strlen(a) - 1] = '\0'; /* sometimes no final newline */
        struct kward_diff_stats st;
        char *d = diff_of(f, a, b, &st);
        char *back = apply(a, d);
        if (strcmp(back, b)) {
            print_error("round %d: diff does not apply\n--- a\n%s--- b\n%s--- diff\n%s", round, a, b, d);
            fail();
        }
        size_t plus = 0, minus = 0;
        for (const char *p = d; *p; p = strchr(p, '\n') + 1) {
            if (p[0] == '+' && strncmp(p, "+++ ", 4))
                plus++;
            if (p[0] == '-' && strncmp(p, "--- ", 4))
                minus++;
        }
        assert_int_equal(plus, st.additions);
        assert_int_equal(minus, st.deletions);
        free(back);
        free(d);
        free(a);
        free(b);
    }
    /* A known shortest script: n insertions into an unchanged text give exactly n additions. */
    struct kward_diff_stats st;
    char *d = diff_of(f, "a\nb\nc\nd\n", "a\nx\nb\nc\ny\nd\n", &st);
    assert_int_equal(st.additions, 2);
    assert_int_equal(st.deletions, 0);
    free(d);
}

/* Thousands of changed lines: counted exactly, and cut to 8 KB with the seed's summary. */
static void large_diff_capped(void **s)
{
    struct fx *f = *s;
    size_t n = 3000, cap = n * 16;
    char *a = calloc(1, cap), *b = calloc(1, cap);
    size_t al = 0, bl = 0;
    for (size_t i = 0; i < n; i++) {
        al += (size_t)snprintf(a + al, cap - al, "a%zu\n", i);
        bl += (size_t)snprintf(b + bl, cap - bl, "b%zu\n", i);
    }
    strcat(a, "same\n");
    strcat(b, "same\n");
    struct kward_diff_stats st;
    char *d = diff_of(f, a, b, &st);
    assert_int_equal(st.additions, n);
    assert_int_equal(st.deletions, n);
    char *back = apply(a, d);
    assert_string_equal(back, b);
    free(back);

    bool cut;
    char *capped = kward_diff_cap(d, strlen(d), KWARD_DIFF_BYTES, &st, &cut);
    assert_true(cut);
    assert_true(strlen(capped) <= KWARD_DIFF_BYTES + 200);
    const char *tail = strstr(capped, "... diff truncated to 8192 bytes; full diff stats: +3000|-3000. "
                                      "Use read_file to inspect current content.");
    assert_non_null(tail);
    assert_true(tail > capped && tail[-1] == '\n'); /* cut at a line end */
    free(capped);
    capped = kward_diff_cap("--- x\n", 6, KWARD_DIFF_BYTES, &st, &cut);
    assert_false(cut);
    assert_string_equal(capped, "--- x\n");
    free(capped);
    free(d);
    free(a);
    free(b);
}

/* A new file diffs against /dev/null; a path with shell characters reaches diff as data only
 * (it goes through the environment, never into the command's text); the old text is the one
 * given, not whatever the workspace holds, so a file the sandbox's user may not read (0600,
 * owned by root) diffs all the same. */
static void new_file_and_odd_names(void **s)
{
    struct fx *f = *s;
    struct kward_diff_stats st;
    char *d = diff_of(f, NULL, "one\ntwo\n", &st);
    assert_string_equal(d, "--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n");
    assert_int_equal(st.additions, 2);
    free(d);
    const char *odd = "x $(touch pwned) `id` \"q\".txt";
    fx_put(f, odd, "something else\n");
    char p[200];
    snprintf(p, sizeof(p), "%s/%s", f->ws, odd);
    chmod(p, 0600);
    char *out;
    size_t len;
    struct broker_err e = {0};
    assert_int_equal(kward_diff(&f->ctx, odd, "old\n", 4, "new\n", 4, &out, &len, &st, &e), 0);
    char *want = util_printf("--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-old\n+new\n", odd, odd);
    assert_string_equal(out, want);
    snprintf(p, sizeof(p), "%s/pwned", f->ws);
    assert_false(fx_exists_host(p));
    free(want);
    free(out);
    /* An old text with no final newline and bytes dd must pass through untouched. */
    assert_int_equal(kward_diff(&f->ctx, "b", "a\n\xc3\xa9", 4, "a\n\xc3\xa9\n", 5, &out, &len, &st, &e),
                     0);
    assert_string_equal(
        out,
        "--- a/b\n+++ b/b\n@@ -1,2 +1,2 @@\n a\n-\xc3\xa9\n\\ No newline at end of file\n+\xc3\xa9\n");
    free(out);
}

/* The counter on output no diff would print: it refuses rather than miscount. */
static void count_hostile(void **s)
{
    (void)s;
    struct kward_diff_stats st;
    static const char *const bad[] = {
        "garbage\n",
        "--- a\n",
        "--- a\n+++ b\nnot a hunk\n",
        "--- a\n+++ b\n@@ -1 +1 @@\n-x\n",         /* fewer lines than the header says */
        "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n+z\n", /* more */
        "--- a\n+++ b\n@@ -1 +1 @@\n?x\n+y\n",
        "--- a\n+++ b\n@@ -99999999999999999999999 +1 @@\n",
        "--- a\n+++ b\n@@ -1,x +1 @@\n-x\n+y\n",
        "--- a\n+++ b\n@@ -1 +1\n-x\n+y\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (kward_diff_count(bad[i], strlen(bad[i]), &st) != -EINVAL) {
            print_error("accepted: %s\n", bad[i]);
            fail();
        }
    const char *ok = "--- a\n+++ b\n@@ -1,2 +1,2 @@\n--- x\n+++ y\n\\ No newline at end of file\n ctx\n";
    assert_int_equal(kward_diff_count(ok, strlen(ok), &st), 0);
    assert_int_equal(st.additions, 1);
    assert_int_equal(st.deletions, 1);
    assert_int_equal(kward_diff_count("", 0, &st), 0);
    assert_int_equal(st.additions + st.deletions, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TEST(equal_texts),       FX_TEST(one_change_exact),       FX_TEST(insert_delete_edges),
        FX_TEST(no_newline_at_end), FX_TEST(hunks_split_and_merged), FX_TEST(generated_roundtrips),
        FX_TEST(large_diff_capped), FX_TEST(new_file_and_odd_names), cmocka_unit_test(count_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
