/* tests/unit/test_broker_ops.c: the broker operations the other surfaces (file, voltagent,
 * kward) map onto, called directly: remove, mkdir, exact edits, case-insensitive search with an
 * include glob, byte-capped reads; each with its containment pair (allowed inside, refused out). */
#include "wap_fixture.h"

static void remove_files_and_dirs(void **state)
{
    struct fx *f = *state;
    struct broker_err e;
    fx_put(f, "a/b.txt", "x");
    fx_put(f, "c.txt", "x");
    assert_true(broker_remove(&f->ctx, "a", false, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_IS_DIR);
    assert_true(broker_remove(&f->ctx, "a", true, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_INVALID); /* not empty */
    assert_int_equal(broker_remove(&f->ctx, "a/b.txt", false, &e), 0);
    assert_int_equal(broker_remove(&f->ctx, "a", true, &e), 0);
    assert_true(broker_remove(&f->ctx, "c.txt", true, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_NOT_DIR);
    assert_true(broker_remove(&f->ctx, "nope", false, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_NOT_FOUND);
    assert_true(broker_remove(&f->ctx, "/", true, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
    f->ctx.read_only = true;
    assert_true(broker_remove(&f->ctx, "c.txt", false, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
}

static void remove_never_reaches_outside(void **state)
{
    struct fx *f = *state;
    struct broker_err e;
    char p[256], t[256];
    snprintf(p, sizeof(p), "%s/victim.txt", f->out);
    FILE *fp = fopen(p, "w");
    fputs("keep", fp);
    fclose(fp);
    snprintf(t, sizeof(t), "%s/link", f->ws);
    assert_int_equal(symlink(p, t), 0);
    snprintf(t, sizeof(t), "%s/dirlink", f->ws);
    assert_int_equal(symlink(f->out, t), 0);
    assert_true(broker_remove(&f->ctx, "../outside/victim.txt", false, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
    assert_true(broker_remove(&f->ctx, "dirlink/victim.txt", false, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
    /* removing the link removes the link, not its target */
    assert_int_equal(broker_remove(&f->ctx, "link", false, &e), 0);
    assert_true(fx_exists_host(p));
}

static void mkdir_parents_and_escapes(void **state)
{
    struct fx *f = *state;
    struct broker_err e;
    assert_true(broker_mkdir(&f->ctx, "x/y/z", false, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_NOT_FOUND);
    assert_int_equal(broker_mkdir(&f->ctx, "x/y/z", true, &e), 0);
    assert_int_equal(broker_mkdir(&f->ctx, "x/y/z", true, &e), 0);
    assert_true(broker_mkdir(&f->ctx, "x/y/z", false, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_EXISTS);
    char p[256];
    snprintf(p, sizeof(p), "%s/x/y/z", f->ws);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_true(broker_mkdir(&f->ctx, "../outside/new", true, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
    char t[256];
    snprintf(t, sizeof(t), "%s/dirlink", f->ws);
    assert_int_equal(symlink("../outside", t), 0);
    assert_true(broker_mkdir(&f->ctx, "dirlink/sub/new", true, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
    snprintf(p, sizeof(p), "%s/sub", f->out);
    assert_false(fx_exists_host(p));
}

static void exact_edits(void **state)
{
    struct fx *f = *state;
    struct broker_err e;
    fx_put(f, "config.py", "DEBUG = True\nDEBUG_SQL = True\ndef connect():\n    return 1\n");
    struct broker_edit ok[] = {
        {.kind = BROKER_EDIT_EXACT, .pattern = "DEBUG = True", .replacement = "DEBUG = False"},
        {.kind = BROKER_EDIT_EXACT, .pattern = "return 1", .replacement = "return 2"},
    };
    char *disp = NULL;
    assert_int_equal(broker_modify(&f->ctx, "config.py", ok, 2, &disp, &e), 0);
    assert_string_equal(disp, "/config.py");
    free(disp);
    char *c = fx_get(f, "config.py");
    assert_string_equal(c, "DEBUG = False\nDEBUG_SQL = True\ndef connect():\n    return 2\n");
    free(c);
    struct broker_edit two[] = {{.kind = BROKER_EDIT_EXACT, .pattern = "DEBUG", .replacement = "x"}};
    assert_true(broker_modify(&f->ctx, "config.py", two, 1, NULL, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_NOT_UNIQUE);
    struct broker_edit none[] = {{.kind = BROKER_EDIT_EXACT, .pattern = "absent", .replacement = "x"}};
    assert_true(broker_modify(&f->ctx, "config.py", none, 1, NULL, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_NO_MATCH);
    assert_string_equal(e.field, "operations[0].find");
}

static void search_ignore_case_and_include_glob(void **state)
{
    struct fx *f = *state;
    struct broker_err e;
    fx_put(f, "src/db/connection.py", "# x\ndef Connect(host):\n    pass\n");
    fx_put(f, "src/db/notes.txt", "def connect\n");
    struct broker_search_opts o = {
        .query = "def\\s+connect",
        .ignore_case = true,
        .recursive = true,
        .include_glob = "**/*.py",
        .context = 1,
        .max_results = 10,
    };
    struct broker_search_result r;
    assert_int_equal(broker_search(&f->ctx, &o, &r, &e), 0);
    assert_int_equal(r.total, 1);
    assert_string_equal(r.v[0].path, "/src/db/connection.py");
    assert_int_equal(r.v[0].line, 2);
    assert_string_equal(r.v[0].before[0], "# x");
    broker_search_result_clear(&r);
    o.include_glob = NULL;
    o.ignore_case = false;
    assert_int_equal(broker_search(&f->ctx, &o, &r, &e), 0);
    assert_int_equal(r.total, 1);
    assert_string_equal(r.v[0].path, "/src/db/notes.txt");
    broker_search_result_clear(&r);
}

static void search_answer_is_byte_capped(void **state)
{
    struct fx *f = *state;
    struct broker_err e;
    char line[1100];
    memset(line, 'z', 1000);
    strcpy(line + 1000, " hit\n");
    for (int i = 0; i < 10; i++) {
        char p[32];
        snprintf(p, sizeof(p), "f%d.txt", i);
        fx_put(f, p, i == 5 ? "hit\n" : line); /* a small one after the cap is not added */
    }
    struct broker_search_opts o = {
        .query = "hit", .literal = true, .max_results = 100, .max_bytes = 3500};
    struct broker_search_result r;
    assert_int_equal(broker_search(&f->ctx, &o, &r, &e), 0);
    assert_int_equal(r.total, 10);
    assert_int_equal(r.n, 3); /* about 1 KB each */
    assert_string_equal(r.v[2].path, "/f2.txt");
    assert_true(r.truncated);
    assert_true(r.bytes <= 3500);
    broker_search_result_clear(&r);
}

static void read_with_byte_cap(void **state)
{
    struct fx *f = *state;
    struct broker_err e;
    fx_put(f, "a.txt", "0123456789\nabcdefghij\n");
    struct broker_read_opts o = {.max_bytes = 15};
    struct broker_read_result r;
    assert_int_equal(broker_read(&f->ctx, "a.txt", &o, &r, &e), 0);
    assert_string_equal(r.content, "0123456789\n");
    assert_true(r.truncated);
    assert_int_equal(r.total_lines, 2);
    broker_read_result_clear(&r);
    struct broker_meta m;
    assert_int_equal(broker_info(&f->ctx, "a.txt", "path", &m, &e), 0);
    assert_int_equal(m.size, 22);
    assert_string_equal(m.path, "/a.txt");
    broker_meta_clear(&m);
    assert_true(broker_info(&f->ctx, "../outside", "path", &m, &e) < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TEST(remove_files_and_dirs),
        FX_TEST(remove_never_reaches_outside),
        FX_TEST(mkdir_parents_and_escapes),
        FX_TEST(exact_edits),
        FX_TEST(search_ignore_case_and_include_glob),
        FX_TEST(search_answer_is_byte_capped),
        FX_TEST(read_with_byte_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
