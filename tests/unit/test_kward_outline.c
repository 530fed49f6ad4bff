/* tests/unit/test_kward_outline.c: the Kward outliner (universal-ctags in a command sandbox) on
 * one real sample file per language (tests/fixtures/outline/sample.*), each against its
 * checked-in expected outline (sample.*.outline), plus the language table, the 80-entry cap,
 * hostile text through ctags, hostile ctags output through the in-process parser, and the error
 * that names the package when a tool is missing. */
#include "wap_fixture.h"

#include "tools/kward/kward.h"

#include <stdlib.h>

static char *slurp(const char *rel, size_t *len)
{
    const char *top = getenv("TOP");
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", top ? top : ".", rel);
    FILE *fp = fopen(p, "rb");
    if (!fp) {
        print_error("cannot open %s (set TOP to the source tree)\n", p);
        fail();
    }
    char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static void build(struct fx *f, const char *lang, const char *text, size_t len, size_t max,
                  struct kward_outline *o)
{
    struct broker_err e = {0};
    if (kward_outline_build(&f->ctx, lang, text, len, max, o, &e) < 0) {
        print_error("outline (%s) failed: %s\n", lang, e.msg);
        fail();
    }
}

static void check_sample(void **state, const char *name, const char *want_lang, size_t min_entries)
{
    struct fx *f = *state;
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
    build(f, lang, text, len, KWARD_OUTLINE_ENTRIES, &o);
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

static void ruby(void **s)
{
    check_sample(s, "sample.rb", "ruby", 10);
}
static void python(void **s)
{
    check_sample(s, "sample.py", "python", 8);
}
static void javascript(void **s)
{
    check_sample(s, "sample.js", "javascript", 7);
}
static void typescript(void **s)
{
    check_sample(s, "sample.ts", "typescript", 6);
}
static void go(void **s)
{
    check_sample(s, "sample.go", "go", 6);
}
static void rust(void **s)
{
    check_sample(s, "sample.rs", "rust", 12);
}
static void java(void **s)
{
    check_sample(s, "sample.java", "java", 9);
}
static void csharp(void **s)
{
    check_sample(s, "sample.cs", "csharp", 12);
}
static void c_lang(void **s)
{
    check_sample(s, "sample.c", "c", 8);
}

/* Kinds and ranges the seed asks for, checked field by field on one file. */
static void entry_fields(void **state)
{
    struct fx *f = *state;
    const char *src = "module A\n  class B\n    def c\n      1\n    end\n\n    def d; end\n  end\nend\n";
    struct kward_outline o;
    build(f, "ruby", src, strlen(src), 80, &o);
    assert_int_equal(o.n, 4);
    assert_string_equal(o.v[0].kind, "module");
    assert_int_equal(o.v[0].line, 1);
    assert_int_equal(o.v[0].end_line, 9);
    assert_string_equal(o.v[1].kind, "class");
    assert_int_equal(o.v[1].end_line, 8);
    assert_string_equal(o.v[2].kind, "method");
    assert_string_equal(o.v[2].signature, "def c");
    assert_int_equal(o.v[2].line, 3);
    assert_int_equal(o.v[2].end_line, 5);
    assert_int_equal(o.v[2].indent, 4);
    assert_int_equal(o.v[3].line, 7);
    assert_int_equal(o.v[3].end_line, 7);
    char *r = kward_outline_render(&o);
    assert_string_equal(r, "line 1: module A (range 1-9, module)\n"
                           "line 2:   class B (range 2-8, class)\n"
                           "line 3:     def c (range 3-5, method)\n"
                           "line 7:     def d; end (method)");
    free(r);
    kward_outline_clear(&o);
}

static void languages(void **state)
{
    struct fx *f = *state;
    static const char *const cases[][2] = {
        {"a.rb", "ruby"},
        {"lib/x.rake", "ruby"},
        {"Gemfile", "ruby"},
        {"app/Rakefile", "ruby"},
        {"a.py", "python"},
        {"a.js", "javascript"},
        {"a.mjs", "javascript"},
        {"a.jsx", "javascript"},
        {"a.ts", "typescript"},
        {"a.tsx", "typescript"},
        {"main.go", "go"},
        {"lib.rs", "rust"},
        {"A.java", "java"},
        {"P.cs", "csharp"},
        {"x.c", "c"},
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
    /* No language: an empty outline, and nothing run. */
    struct kward_outline o;
    struct broker_err e;
    f->ctx.root_fd = -1;
    assert_int_equal(kward_outline_build(&f->ctx, NULL, "def x\nend\n", 10, 80, &o, &e), 0);
    assert_int_equal(o.n, 0);
    assert_int_equal(o.total, 0);
    char *r = kward_outline_render(&o);
    assert_string_equal(r, "");
    free(r);
    f->ctx.root_fd = open(f->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void capped_at_80(void **state)
{
    struct fx *f = *state;
    size_t cap = 200 * 32, n = 0;
    char *src = malloc(cap);
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(src + n, cap - n, "def f%d(x):\n    return x\n", i);
    struct kward_outline o;
    build(f, "python", src, n, KWARD_OUTLINE_ENTRIES, &o);
    assert_int_equal(o.n, 80);
    assert_int_equal(o.total, 200);
    assert_string_equal(o.v[79].signature, "def f79(x):");
    assert_int_equal(o.v[79].line, 159);
    assert_int_equal(o.v[79].end_line, 160);
    kward_outline_clear(&o);
    free(src);
}

/* Hostile text through the real ctags: a 256 KB line, invalid UTF-8, CRLF, an option file in
 * the workspace (never read: --options=NONE). */
static void hostile_text(void **state)
{
    struct fx *f = *state;
    size_t n = 256 * 1024;
    char *src = malloc(n + 64);
    memcpy(src, "static int ", 11);
    for (size_t i = 11; i < n; i++)
        src[i] = (i % 3) ? 'a' : ' ';
    memcpy(src + n, "(\n", 3);
    const char *langs[] = {"c",    "java", "csharp", "javascript", "typescript",
                           "rust", "go",   "ruby",   "python"};
    for (size_t l = 0; l < sizeof(langs) / sizeof(langs[0]); l++) {
        struct kward_outline o;
        build(f, langs[l], src, n + 2, 80, &o);
        for (size_t i = 0; i < o.n; i++)
            assert_true(strlen(o.v[i].signature) <= 200);
        kward_outline_clear(&o);
    }
    free(src);
    fx_put(f, ".ctags.d/evil.ctags", "--regex-Ruby=/^(.*)$/\\1/x/\n");
    const char *crlf = "class A\r\n  def b\xff\xfe\r\n  end\r\nend\r\n";
    struct kward_outline o;
    build(f, "ruby", crlf, strlen(crlf), 80, &o);
    assert_int_equal(o.n, 2);
    assert_string_equal(o.v[0].signature, "class A");
    assert_int_equal(o.v[0].end_line, 4);
    assert_string_equal(o.v[1].kind, "method");
    kward_outline_clear(&o);
}

/* ctags' output is untrusted: garbage lines, out-of-range numbers, wrong types, a missing end,
 * unsorted and duplicate lines, an over-long line and a cut last line. */
static void hostile_tags(void **s)
{
    (void)s;
    const char *text = "class A {\n  m() {\n    x();\n  }\n\n  n() {}\n}\nfunction g() {\n}\n";
    char big[KWARD_TAGS_MAX_LINE + 64];
    memset(big, ' ', sizeof(big));
    const char *big_head = "{\"_type\":\"tag\",\"kind\":\"function\",\"line\":9";
    memcpy(big, big_head, strlen(big_head));
    memcpy(big + sizeof(big) - 3, "}\n", 2);
    big[sizeof(big) - 1] = '\0';
    char *tags = util_printf(
        "not json\n"
        "{\"_type\":\"tag\",\"kind\":\"method\",\"line\":6,\"scope\":\"A\",\"scopeKind\":\"class\"}\n"
        "{\"_type\":\"tag\",\"kind\":\"class\",\"line\":1}\n"
        "{\"_type\":\"tag\",\"kind\":\"method\",\"line\":2,\"scope\":\"A\",\"scopeKind\":\"class\"}\n"
        "{\"_type\":\"tag\",\"kind\":\"method\",\"line\":2,\"name\":\"dup\"}\n"
        "{\"_type\":\"tag\",\"kind\":\"function\",\"line\":999}\n"
        "{\"_type\":\"tag\",\"kind\":\"function\",\"line\":-1}\n"
        "{\"_type\":\"tag\",\"kind\":\"function\",\"line\":\"8\"}\n"
        "{\"_type\":\"tag\",\"kind\":7,\"line\":8}\n"
        "{\"_type\":\"ptag\",\"kind\":\"function\",\"line\":8}\n"
        "{\"_type\":\"tag\",\"kind\":\"field\",\"line\":3}\n"
        "[1,2]\n"
        "%s"
        "{\"_type\":\"tag\",\"kind\":\"function\",\"line\":8,\"end\":1e300}",
        big);
    struct kward_outline o;
    assert_int_equal(
        kward_outline_from_tags("javascript", tags, strlen(tags), text, strlen(text), 80, &o), 0);
    char *r = kward_outline_render(&o);
    assert_string_equal(r, "line 1: class A { (range 1-9, class)\n"
                           "line 2:   m() { (range 2-4, method)\n"
                           "line 6:   n() {} (method)");
    free(r);
    assert_int_equal(o.total, 3);
    kward_outline_clear(&o);
    /* With the cut line ended, line 8 is a function whose bogus end is ignored. */
    size_t tl = strlen(tags);
    char *t2 = util_printf("%s\n", tags);
    assert_int_equal(kward_outline_from_tags("javascript", t2, tl + 1, text, strlen(text), 2, &o), 0);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.total, 4);
    kward_outline_clear(&o);
    assert_int_equal(kward_outline_from_tags("javascript", t2, tl + 1, text, strlen(text), 80, &o), 0);
    assert_int_equal(o.v[3].line, 8);
    assert_int_equal(o.v[3].end_line, 9);
    kward_outline_clear(&o);
    /* No text at all: every line number is out of range. */
    assert_int_equal(kward_outline_from_tags("javascript", t2, tl + 1, "", 0, 80, &o), 0);
    assert_int_equal(o.n, 0);
    kward_outline_clear(&o);
    free(t2);
    free(tags);
}

/* A tool that is not installed (the shell's 127) fails with the package's name, no fallback. */
static void missing_tool(void **state)
{
    struct fx *f = *state;
    struct broker_command_result r;
    struct broker_err e = {0};
    assert_int_equal(kward_tool_run(&f->ctx, "universal-ctags (ctags)", "universal-ctags",
                                    "exec no-such-ctags-binary", NULL, 0, "x", 1, &r, &e),
                     -1);
    assert_int_equal(e.kind, BROKER_E_EXEC);
    assert_non_null(strstr(e.msg, "install the Debian package universal-ctags"));
    /* And the sandbox is read-only on the workspace, whatever the role. */
    assert_int_equal(
        kward_tool_run(&f->ctx, "t", "p", "echo x > /workspace/w; echo $?", NULL, 0, NULL, 0, &r, &e),
        0);
    char p[160];
    snprintf(p, sizeof(p), "%s/w", f->ws);
    assert_false(fx_exists_host(p));
    assert_string_not_equal(r.out, "0\n");
    broker_command_result_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TEST(ruby),         FX_TEST(python),
        FX_TEST(javascript),   FX_TEST(typescript),
        FX_TEST(go),           FX_TEST(rust),
        FX_TEST(java),         FX_TEST(csharp),
        FX_TEST(c_lang),       FX_TEST(entry_fields),
        FX_TEST(languages),    FX_TEST(capped_at_80),
        FX_TEST(hostile_text), cmocka_unit_test(hostile_tags),
        FX_TEST(missing_tool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
