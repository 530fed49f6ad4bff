/* tests/unit/test_kward_outline.c: the Kward outliner on one real sample file per language
 * (tests/fixtures/outline/sample.*), each against its checked-in expected outline
 * (sample.*.outline), plus the language table, the 80-entry cap and hostile lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tools/kward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *rel, size_t *len)
{
    const char *top = getenv("TOP");
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", top ? top : ".", rel);
    FILE *f = fopen(p, "rb");
    if (!f) {
        print_error("cannot open %s (set TOP to the source tree)\n", p);
        fail();
    }
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static void check_sample(const char *name, const char *want_lang, size_t min_entries)
{
    char src[128], exp[128];
    snprintf(src, sizeof(src), "tests/fixtures/outline/%s", name);
    snprintf(exp, sizeof(exp), "tests/fixtures/outline/%s.outline", name);
    size_t len;
    char *text = slurp(src, &len);
    char *want = slurp(exp, NULL);
    size_t wl = strlen(want);
    if (wl && want[wl - 1] == '\n')
        want[wl - 1] = '\0';
    const char *lang = kward_language(name);
    assert_non_null(lang);
    assert_string_equal(lang, want_lang);
    struct kward_outline o;
    assert_int_equal(kward_outline_build(lang, text, len, KWARD_OUTLINE_ENTRIES, &o), 0);
    assert_true(o.n >= min_entries);
    assert_int_equal(o.n, o.total);
    for (size_t i = 0; i < o.n; i++) {
        assert_true(o.v[i].end_line >= o.v[i].line);
        if (i)
            assert_true(o.v[i].line > o.v[i - 1].line);
    }
    char *got = kward_outline_render(&o);
    if (strcmp(got, want)) {
        print_error("%s: outline differs\n--- want\n%s\n--- got\n%s\n", name, want, got);
        fail();
    }
    free(got);
    kward_outline_clear(&o);
    free(text);
    free(want);
}

static void ruby(void **s) { (void)s; check_sample("sample.rb", "ruby", 10); }
static void python(void **s) { (void)s; check_sample("sample.py", "python", 8); }
static void javascript(void **s) { (void)s; check_sample("sample.js", "javascript", 7); }
static void typescript(void **s) { (void)s; check_sample("sample.ts", "typescript", 9); }
static void go(void **s) { (void)s; check_sample("sample.go", "go", 6); }
static void rust(void **s) { (void)s; check_sample("sample.rs", "rust", 12); }
static void java(void **s) { (void)s; check_sample("sample.java", "java", 9); }
static void csharp(void **s) { (void)s; check_sample("sample.cs", "csharp", 12); }
static void c_lang(void **s) { (void)s; check_sample("sample.c", "c", 8); }

/* Kinds and ranges the seed asks for, checked field by field on one file. */
static void entry_fields(void **s)
{
    (void)s;
    const char *src = "module A\n  class B\n    def c\n      1\n    end\n\n    def d; end\n  end\nend\n";
    struct kward_outline o;
    assert_int_equal(kward_outline_build("ruby", src, strlen(src), 80, &o), 0);
    assert_int_equal(o.n, 4);
    assert_string_equal(o.v[0].kind, "module");
    assert_int_equal(o.v[0].line, 1);
    assert_int_equal(o.v[0].end_line, 9);
    assert_string_equal(o.v[1].kind, "class");
    assert_int_equal(o.v[1].end_line, 8);
    assert_string_equal(o.v[2].kind, "method");
    assert_string_equal(o.v[2].signature, "def c");
    assert_int_equal(o.v[2].line, 3);
    assert_int_equal(o.v[2].end_line, 5); /* blank line before the next def trimmed */
    assert_int_equal(o.v[2].indent, 4);
    assert_int_equal(o.v[3].line, 7);
    assert_int_equal(o.v[3].end_line, 7); /* "def d; end": the enclosing "end"s are not its own */
    char *r = kward_outline_render(&o);
    assert_string_equal(r, "line 1: module A (range 1-9, module)\n"
                           "line 2:   class B (range 2-8, class)\n"
                           "line 3:     def c (range 3-5, method)\n"
                           "line 7:     def d; end (method)");
    free(r);
    kward_outline_clear(&o);
}

static void languages(void **s)
{
    (void)s;
    static const char *const cases[][2] = {
        {"a.rb", "ruby"},         {"lib/x.rake", "ruby"},   {"Gemfile", "ruby"},
        {"app/Rakefile", "ruby"}, {"a.py", "python"},       {"a.js", "javascript"},
        {"a.mjs", "javascript"},  {"a.jsx", "javascript"},  {"a.ts", "typescript"},
        {"a.tsx", "typescript"},  {"main.go", "go"},        {"lib.rs", "rust"},
        {"A.java", "java"},       {"P.cs", "csharp"},       {"x.c", "c"},
        {"x.h", "c"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *l = kward_language(cases[i][0]);
        if (!l || strcmp(l, cases[i][1])) {
            print_error("%s: want %s, got %s\n", cases[i][0], cases[i][1], l ? l : "NULL");
            fail();
        }
    }
    assert_null(kward_language("README.md"));
    assert_null(kward_language("Makefile"));
    assert_null(kward_language(".rb")); /* a dot file, not a Ruby file */
    assert_null(kward_language("xGemfile"));
    struct kward_outline o;
    assert_int_equal(kward_outline_build(NULL, "def x\nend\n", 10, 80, &o), 0);
    assert_int_equal(o.n, 0);
    assert_int_equal(o.total, 0);
    char *r = kward_outline_render(&o);
    assert_string_equal(r, "");
    free(r);
}

static void capped_at_80(void **s)
{
    (void)s;
    size_t cap = 200 * 32, n = 0;
    char *src = malloc(cap);
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(src + n, cap - n, "def f%d(x):\n    return x\n", i);
    struct kward_outline o;
    assert_int_equal(kward_outline_build("python", src, n, KWARD_OUTLINE_ENTRIES, &o), 0);
    assert_int_equal(o.n, 80);
    assert_int_equal(o.total, 200);
    assert_string_equal(o.v[79].signature, "def f79(x):");
    assert_int_equal(o.v[79].end_line, 160);
    kward_outline_clear(&o);
    free(src);
}

/* Lines built to make backtracking patterns work hard, a 256 KB line, invalid UTF-8, CRLF: the
 * outliner finishes (PCRE2 limits) and finds only what is there. */
static void hostile_lines(void **s)
{
    (void)s;
    size_t n = 256 * 1024;
    char *src = malloc(n + 64);
    memcpy(src, "static int ", 11);
    for (size_t i = 11; i < n; i++)
        src[i] = (i % 3) ? 'a' : ' ';
    memcpy(src + n, "(\n", 3);
    const char *langs[] = {"c", "java", "csharp", "javascript", "typescript", "rust", "go", "ruby", "python"};
    for (size_t l = 0; l < sizeof(langs) / sizeof(langs[0]); l++) {
        struct kward_outline o;
        assert_int_equal(kward_outline_build(langs[l], src, n + 2, 80, &o), 0);
        for (size_t i = 0; i < o.n; i++)
            assert_true(strlen(o.v[i].signature) <= 200);
        kward_outline_clear(&o);
    }
    free(src);
    const char *crlf = "class A\r\n  def b\xff\xfe\r\n  end\r\nend\r\n";
    struct kward_outline o;
    assert_int_equal(kward_outline_build("ruby", crlf, strlen(crlf), 80, &o), 0);
    assert_int_equal(o.n, 2);
    assert_string_equal(o.v[0].signature, "class A");
    assert_int_equal(o.v[0].end_line, 4);
    kward_outline_clear(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ruby),         cmocka_unit_test(python),   cmocka_unit_test(javascript),
        cmocka_unit_test(typescript),   cmocka_unit_test(go),       cmocka_unit_test(rust),
        cmocka_unit_test(java),         cmocka_unit_test(csharp),   cmocka_unit_test(c_lang),
        cmocka_unit_test(entry_fields), cmocka_unit_test(languages), cmocka_unit_test(capped_at_80),
        cmocka_unit_test(hostile_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
