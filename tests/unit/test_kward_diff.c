/* tests/unit/test_kward_diff.c: the bounded unified diff of write_file and edit_file. Exact
 * texts for the small cases; for generated ones, the diff is applied back to the old text by a
 * strict hunk applier here and must give the new text, with + and - counts as stated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tools/kward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *diff_of(const char *a, const char *b, struct kward_diff_stats *st)
{
    char *out;
    size_t len;
    struct kward_diff_stats local;
    assert_int_equal(kward_diff("f.txt", a, strlen(a), b, strlen(b), &out, &len, st ? st : &local), 0);
    assert_int_equal(strlen(out), len);
    return out;
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
        assert_int_equal(sscanf(p, "@@ -%zu,%zu +%zu,%zu @@", &a0, &ac, &b0, &bc), 4);
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
    (void)s;
    struct kward_diff_stats st;
    char *d = diff_of("a\nb\n", "a\nb\n", &st);
    assert_string_equal(d, "");
    assert_int_equal(st.additions + st.deletions, 0);
    free(d);
    d = diff_of("", "", &st);
    assert_string_equal(d, "");
    free(d);
}

static void one_change_exact(void **s)
{
    (void)s;
    struct kward_diff_stats st;
    char *d = diff_of("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nFIVE\n6\n7\n8\n", &st);
    assert_string_equal(d, "--- f.txt\n+++ f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
    assert_int_equal(st.additions, 1);
    assert_int_equal(st.deletions, 1);
    assert_true(st.minimal);
    free(d);
}

static void insert_delete_edges(void **s)
{
    (void)s;
    char *d = diff_of("b\n", "a\nb\n", NULL);
    assert_string_equal(d, "--- f.txt\n+++ f.txt\n@@ -1,1 +1,2 @@\n+a\n b\n");
    free(d);
    d = diff_of("a\nb\n", "a\n", NULL);
    assert_string_equal(d, "--- f.txt\n+++ f.txt\n@@ -1,2 +1,1 @@\n a\n-b\n");
    free(d);
    d = diff_of("", "new\n", NULL);
    assert_string_equal(d, "--- f.txt\n+++ f.txt\n@@ -0,0 +1,1 @@\n+new\n");
    free(d);
    d = diff_of("old\n", "", NULL);
    assert_string_equal(d, "--- f.txt\n+++ f.txt\n@@ -1,1 +0,0 @@\n-old\n");
    free(d);
}

static void no_newline_at_end(void **s)
{
    (void)s;
    char *d = diff_of("a\nb", "a\nb\n", NULL);
    assert_string_equal(d, "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n");
    char *back = apply("a\nb", d);
    assert_string_equal(back, "a\nb\n");
    free(back);
    free(d);
}

static void hunks_split_and_merged(void **s)
{
    (void)s;
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
    char *d = diff_of(a, b, &st);
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
    (void)s;
    uint32_t seed = 12345;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    for (int round = 0; round < 200; round++) {
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
        char *d = diff_of(a, b, &st);
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
        assert_true(st.minimal);
        free(back);
        free(d);
        free(a);
        free(b);
    }
    /* A known shortest script: n insertions into an unchanged text give exactly n additions. */
    struct kward_diff_stats st;
    char *d = diff_of("a\nb\nc\nd\n", "a\nx\nb\nc\ny\nd\n", &st);
    assert_int_equal(st.additions, 2);
    assert_int_equal(st.deletions, 0);
    free(d);
}

/* Past KWARD_DIFF_MAX_D differences the middle is one hunk: correct, not minimal, bounded. */
static void bounded_fallback(void **s)
{
    (void)s;
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
    char *d = diff_of(a, b, &st);
    assert_false(st.minimal);
    assert_int_equal(st.additions, n);
    assert_int_equal(st.deletions, n);
    char *back = apply(a, d);
    assert_string_equal(back, b);
    free(back);

    bool cut;
    char *capped = kward_diff_cap(d, strlen(d), KWARD_DIFF_BYTES, &st, &cut);
    assert_true(cut);
    assert_true(strlen(capped) <= KWARD_DIFF_BYTES + 200);
    const char *tail = strstr(capped, "... diff truncated to 8192 bytes; full diff stats: +3000|-3000. Use read_file to inspect current content.");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(equal_texts),          cmocka_unit_test(one_change_exact),
        cmocka_unit_test(insert_delete_edges),  cmocka_unit_test(no_newline_at_end),
        cmocka_unit_test(hunks_split_and_merged), cmocka_unit_test(generated_roundtrips),
        cmocka_unit_test(bounded_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
