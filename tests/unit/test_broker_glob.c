/* tests/unit/test_broker_glob.c: the glob matcher behind excludePatterns (tables of pattern,
 * path, expected), the exclusion filter's name and path rules, path cleaning, and UTF-8 helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tools/broker/broker.h"
#include "tools/broker/glob.h"

#include <string.h>
#include <time.h>

static void glob_table(void **state)
{
    (void)state;
    static const struct {
        const char *pat, *path;
        bool want;
    } t[] = {
        {"**/node_modules/**", "node_modules/a.js", true},
        {"**/node_modules/**", "src/node_modules/x/y.js", true},
        {"**/node_modules/**", "node_modules/", true},
        {"**/node_modules/**", "node_modules", false},
        {"**/node_modules/**", "src/my_node_modules/a", false},
        {"**/*.js", "a.js", true},
        {"**/*.js", "a/b/c.js", true},
        {"**/*.js", "a/b/c.ts", false},
        {"*.js", "a.js", true},
        {"*.js", "a/b.js", false},
        {"src/**/test_*.c", "src/test_a.c", true},
        {"src/**/test_*.c", "src/x/y/test_a.c", true},
        {"src/**/test_*.c", "src/x/y/atest_a.c", false},
        {"a?c", "abc", true},
        {"a?c", "a/c", false},
        {"[abc].txt", "b.txt", true},
        {"[!abc].txt", "b.txt", false},
        {"[!abc].txt", "d.txt", true},
        {"[a-c]x", "bx", true},
        {"[a-c]x", "dx", false},
        {"\\*.txt", "*.txt", true},
        {"\\*.txt", "a.txt", false},
        {"a**b", "axxb", true},
        {"a**b", "ax/xb", false},
        {"src/**", "src/a/b", true},
        {"src/**", "srcx/a", false},
        {"**", "anything/at/all", true},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (glob_match(t[i].pat, t[i].path) != t[i].want) {
            print_error("glob_match(%s, %s) != %d\n", t[i].pat, t[i].path, t[i].want);
            fail();
        }
    }
    struct glob *g;
    assert_int_equal(glob_new("[abc", &g), -EINVAL);
    assert_int_equal(glob_new("", &g), -EINVAL);
    assert_int_equal(glob_new("abc\\", &g), -EINVAL);
}

static void glob_hostile_pattern_is_linear(void **state)
{
    (void)state;
    /* a*a*a*...a*b against aaaa...: exponential for a backtracking matcher */
    char pat[300], path[2000];
    size_t o = 0;
    for (int i = 0; i < 100; i++)
        pat[o++] = 'a', pat[o++] = '*';
    pat[o++] = 'b';
    pat[o] = '\0';
    memset(path, 'a', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    assert_false(glob_match(pat, path));
    char big[GLOB_MAX_PATTERN + 2];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct glob *g;
    assert_int_equal(glob_new(big, &g), -EINVAL);
}

static void filter_rules(void **state)
{
    (void)state;
    const char *pats[] = {"**/node_modules/**", "*.log", "docs/private/**", "/build"};
    struct broker_filter *f;
    struct broker_err e;
    assert_int_equal(broker_filter_new(pats, 4, "excludePatterns", &f, &e), 0);
    assert_true(broker_filter_prunes(f, "a/node_modules", "node_modules", false));
    assert_false(broker_filter_excludes(f, "a/node_modules", "node_modules"));
    assert_true(broker_filter_prunes(f, "x/node_modules/y", "", true));
    assert_true(broker_filter_excludes(f, "deep/x/app.log", "app.log"));
    assert_false(broker_filter_excludes(f, "deep/x/app.txt", "app.txt"));
    assert_true(broker_filter_prunes(f, "docs/private", "private", false));
    assert_true(broker_filter_excludes(f, "docs/private/a.md", "a.md"));
    assert_true(broker_filter_excludes(f, "build", "build"));
    assert_false(broker_filter_excludes(f, "src/build", "build"));
    broker_filter_free(f);
    const char *bad[] = {"ok", "[bad"};
    assert_true(broker_filter_new(bad, 2, "excludePatterns", &f, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_PATTERN);
    assert_string_equal(e.field, "excludePatterns");
}

static void path_cleaning(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"src/app.js", "src/app.js"},
        {"/src/app.js", "src/app.js"},
        {"./src//app.js", "src/app.js"},
        {".", ""},
        {"", ""},
        {"/", ""},
        {"a/b/../c", "a/c"},
        {"a/..", ""},
        {"~/x", "~/x"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char *rel = NULL;
        struct broker_err e;
        assert_int_equal(broker_path_clean(ok[i].in, "path", &rel, &e), 0);
        assert_string_equal(rel, ok[i].out);
        free(rel);
    }
    const char *denied[] = {"..", "../x", "a/../../x", "/../etc"};
    for (size_t i = 0; i < 4; i++) {
        char *rel = NULL;
        struct broker_err e;
        assert_true(broker_path_clean(denied[i], "path", &rel, &e) < 0);
        assert_int_equal(e.kind, BROKER_E_DENIED);
    }
    char *rel = NULL;
    struct broker_err e;
    assert_true(broker_path_clean("bad\xff", "path", &rel, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_INVALID);
}

static void utf8_helpers(void **state)
{
    (void)state;
    assert_true(broker_utf8_valid("plain ascii text here", 21));
    assert_true(broker_utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
    assert_false(broker_utf8_valid("\xc0\xaf", 2));         /* overlong */
    assert_false(broker_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    assert_false(broker_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_false(broker_utf8_valid("\xe2\x82", 2));         /* cut short */
    size_t n;
    char *s = broker_utf8_sanitize("a\xffz", 3, 0, &n);
    assert_string_equal(s, "a\xef\xbf\xbdz");
    free(s);
    assert_int_equal(broker_utf8_cut("\xc3\xa9\xc3\xa9", 4, 3), 2);
    char iso[32];
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 5000000};
    broker_iso_time(&ts, iso);
    assert_string_equal(iso, "1970-01-01T00:00:00.005Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(glob_table),   cmocka_unit_test(glob_hostile_pattern_is_linear),
        cmocka_unit_test(filter_rules), cmocka_unit_test(path_cleaning),
        cmocka_unit_test(utf8_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
