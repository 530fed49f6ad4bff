/* tests/unit/test_kward.c: the Kward surface (seed 004) through its own `call`: every tool, its
 * caps and texts, every error code, the read-before-write rule (a change behind the agent's
 * back too), read-only, approval, denials, the context budget counters, and commands run for
 * real in a command sandbox. */
#include "wap_fixture.h"

#include "tools/kward/kward.h"
#include "tools/session.h"

static int kw_setup(void **state)
{
    if (fx_setup(state) < 0)
        return -1;
    struct fx *f = *state;
    f->s = tool_surface_find("kward");
    if (!f->s || tool_session_new(&f->ctx.session) < 0)
        return -1;
    return 0;
}

static int kw_teardown(void **state)
{
    struct fx *f = *state;
    tool_session_free(f->ctx.session);
    free((void *)f->ctx.command_profile);
    return fx_teardown(state);
}

#define KW_TEST(fn) cmocka_unit_test_setup_teardown(fn, kw_setup, kw_teardown)

/* Expects an error with CODE whose text starts "Error: " and holds SUB (when not NULL). */
static void kw_err(struct fx *f, const char *tool, const char *args, const char *code, const char *sub)
{
    bool err;
    cJSON *res = fx_call(f, tool, args, &err);
    char *t = cJSON_PrintUnformatted(res);
    const cJSON *c = cJSON_GetObjectItem(res, "code");
    const cJSON *m = cJSON_GetObjectItem(res, "error");
    if (!err || !cJSON_IsString(c) || strcmp(c->valuestring, code) || !cJSON_IsString(m) ||
        strncmp(m->valuestring, "Error: ", 7) || (sub && !strstr(m->valuestring, sub))) {
        print_error("%s(%s): want error %s (%s), got %s\n", tool, args, code, sub ? sub : "", t);
        fail();
    }
    free(t);
    cJSON_Delete(res);
}

static const char *out_of(const cJSON *r)
{
    return fx_str(r, "output");
}

/* ---- list_directory ---- */

static void list_directory(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/b.rb", "x\n");
    fx_put(f, "src/a.rb", "x\n");
    fx_put(f, "src/lib/c.rb", "x\n");
    cJSON *r = fx_ok(f, "list_directory", "{\"path\":\"src\"}");
    assert_string_equal(out_of(r), "a.rb\nb.rb\nlib/");
    assert_string_equal(fx_str(r, "path"), "src");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "entries")), 3);
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "list_directory", "{\"path\":\".\"}");
    assert_string_equal(out_of(r), "src/");
    cJSON_Delete(r);
    kw_err(f, "list_directory", "{\"path\":\"src/a.rb\"}", "not_a_directory",
           "not a directory: src/a.rb");
    kw_err(f, "list_directory", "{\"path\":\"nope\"}", "not_found", NULL);
    kw_err(f, "list_directory", "{\"path\":\"../outside\"}", "permission_denied", NULL);
    kw_err(f, "list_directory", "{}", "invalid_argument", "path is required");
    kw_err(f, "list_directory", "{\"path\":1}", "invalid_argument", "path must be a string");
    kw_err(f, "list_directory", "{\"path\":\".\",\"recursive\":true}", "invalid_argument",
           "no argument");
}

static void list_directory_capped(void **state)
{
    struct fx *f = *state;
    f->ctx.limits.max_explore_entries = 3;
    for (int i = 0; i < 5; i++) {
        char n[16];
        snprintf(n, sizeof(n), "f%d", i);
        fx_put(f, n, "");
    }
    cJSON *r = fx_ok(f, "list_directory", "{\"path\":\".\"}");
    assert_string_equal(out_of(r), "f0\nf1\nf2\n[2 more entries not shown]");
    assert_true(fx_bool(r, "truncated"));
    cJSON_Delete(r);
}

/* ---- read_file ---- */

static void read_file_basic(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "one\ntwo\nthree\nfour\n");
    cJSON *r = fx_ok(f, "read_file", "{\"path\":\"a.txt\"}");
    assert_string_equal(out_of(r), "one\ntwo\nthree\nfour\n");
    assert_string_equal(fx_str(r, "mode"), "default");
    assert_int_equal((int)fx_num(r, "total_lines"), 4);
    assert_int_equal((int)fx_num(r, "start_line"), 1);
    assert_int_equal((int)fx_num(r, "end_line"), 4);
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "read_file", "{\"path\":\"a.txt\",\"offset\":2,\"limit\":2}");
    assert_string_equal(out_of(r), "two\nthree\n\n[1 more lines in file. Use offset=4 to continue.]");
    assert_true(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "read_file", "{\"path\":\"a.txt\",\"offset\":3,\"mode\":\"range\"}");
    assert_string_equal(out_of(r), "three\nfour\n");
    cJSON_Delete(r);
    r = fx_ok(f, "read_file", "{\"path\":\"a.txt\",\"offset\":2,\"mode\":\"full\"}");
    assert_string_equal(out_of(r), "two\nthree\nfour\n");
    cJSON_Delete(r);
    fx_put(f, "empty.txt", "");
    r = fx_ok(f, "read_file", "{\"path\":\"empty.txt\"}");
    assert_string_equal(out_of(r), "");
    assert_int_equal((int)fx_num(r, "total_lines"), 0);
    cJSON_Delete(r);
    fx_put(f, "nonl.txt", "x\ny");
    r = fx_ok(f, "read_file", "{\"path\":\"nonl.txt\",\"limit\":1}");
    assert_string_equal(out_of(r), "x\n\n[1 more lines in file. Use offset=2 to continue.]");
    cJSON_Delete(r);
}

static void read_file_errors(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "one\ntwo\n");
    kw_err(f, "read_file", "{\"path\":\"a.txt\",\"offset\":3}", "invalid_argument",
           "offset 3 is beyond end of file (2 lines total)");
    kw_err(f, "read_file", "{\"path\":\"a.txt\",\"offset\":0}", "invalid_argument", "offset");
    kw_err(f, "read_file", "{\"path\":\"a.txt\",\"limit\":0}", "invalid_argument",
           "limit must be positive");
    kw_err(f, "read_file", "{\"path\":\"a.txt\",\"max_bytes\":-5}", "invalid_argument",
           "max_bytes must be positive");
    kw_err(f, "read_file", "{\"path\":\"a.txt\",\"limit\":1.5}", "invalid_argument",
           "limit must be an integer");
    kw_err(f, "read_file", "{\"path\":\"a.txt\",\"mode\":\"all\"}", "invalid_argument",
           "mode must be one of preview, outline, range, full");
    kw_err(f, "read_file", "{\"path\":\"missing.txt\"}", "not_found", NULL);
    mkdir(f->ws, 0755);
    char p[256];
    snprintf(p, sizeof(p), "%s/dir", f->ws);
    mkdir(p, 0755);
    kw_err(f, "read_file", "{\"path\":\"dir\"}", "not_a_file", "not a file: dir");
    fx_put_bytes(f, "blob.bin", "ab\0cd", 5);
    kw_err(f, "read_file", "{\"path\":\"blob.bin\"}", "not_a_text_file", "not a text file: blob.bin");
    kw_err(f, "summarize_file_structure", "{\"path\":\"blob.bin\"}", "not_a_text_file", NULL);
    /* over 256 KB: neither read nor summarized nor edited */
    char *big = malloc(KWARD_MAX_FILE_BYTES + 2);
    memset(big, 'x', KWARD_MAX_FILE_BYTES + 1);
    big[KWARD_MAX_FILE_BYTES + 1] = '\0';
    fx_put(f, "big.txt", big);
    free(big);
    kw_err(f, "read_file", "{\"path\":\"big.txt\"}", "file_too_large",
           "file too large: big.txt is 262145 bytes; limit is 262144 bytes");
    kw_err(f, "summarize_file_structure", "{\"path\":\"big.txt\"}", "file_too_large", NULL);
    kw_err(f, "edit_file", "{\"path\":\"big.txt\",\"edits\":[{\"old_text\":\"x\",\"new_text\":\"y\"}]}",
           "read_required", NULL);
    /* one line longer than the byte budget */
    kw_err(f, "read_file", "{\"path\":\"a.txt\",\"max_bytes\":2}", "invalid_argument",
           "first line is 4 bytes, exceeds 2 byte read limit");
}

static void read_file_caps(void **state)
{
    struct fx *f = *state;
    /* 2,500 short lines, no structure: the 2,000-line cap */
    size_t cap = 2500 * 8, n = 0;
    char *t = malloc(cap);
    for (int i = 1; i <= 2500; i++)
        n += (size_t)snprintf(t + n, cap - n, "l%d\n", i);
    fx_put(f, "many.txt", t);
    cJSON *r = fx_ok(f, "read_file", "{\"path\":\"many.txt\",\"mode\":\"full\"}");
    const char *o = out_of(r);
    assert_non_null(strstr(
        o, "l2000\n\n[Showing lines 1-2000 of 2500 (2000 line limit). Use offset=2001 to continue.]"));
    assert_null(strstr(o, "l2001"));
    assert_int_equal((int)fx_num(r, "end_line"), 2000);
    cJSON_Delete(r);
    /* no options on a file over 2,000 lines (under 50 KB), even without structure: the seed's
     * outline answer and the first 120 lines, not 2,000 lines of context */
    r = fx_ok(f, "read_file", "{\"path\":\"many.txt\"}");
    assert_string_equal(fx_str(r, "mode"), "large_file_outline");
    assert_true(fx_bool(r, "truncated"));
    assert_non_null(strstr(out_of(r), "Outline:\n(no classes, functions or sections recognized)"));
    assert_non_null(strstr(out_of(r), "\nl120\n"));
    assert_null(strstr(out_of(r), "l121"));
    cJSON_Delete(r);
    r = fx_ok(f, "read_file", "{\"path\":\"many.txt\",\"offset\":2400}");
    assert_int_equal((int)fx_num(r, "start_line"), 2400);
    assert_int_equal((int)fx_num(r, "end_line"), 2500);
    cJSON_Delete(r);
    /* max_bytes, and 50 KB whatever max_bytes asks */
    r = fx_ok(f, "read_file", "{\"path\":\"many.txt\",\"max_bytes\":20,\"mode\":\"range\"}");
    assert_string_equal(out_of(r), "l1\nl2\nl3\nl4\nl5\nl6\n\n[Showing lines 1-6 of 2500 (20 byte "
                                   "limit). Use offset=7 to continue.]");
    cJSON_Delete(r);
    free(t);
    cap = 100 * 1024;
    t = malloc(cap + 1);
    for (size_t i = 0; i < cap; i++)
        t[i] = (i % 100 == 99) ? '\n' : 'y';
    t[cap] = '\0';
    fx_put(f, "wide.txt", t);
    free(t);
    r = fx_ok(f, "read_file", "{\"path\":\"wide.txt\",\"max_bytes\":1000000,\"mode\":\"range\"}");
    assert_true(strlen(out_of(r)) <= KWARD_READ_OUTPUT_BYTES + 200);
    assert_non_null(strstr(out_of(r), "(51200 byte limit)"));
    cJSON_Delete(r);
}

static void read_file_preview_outline_large(void **state)
{
    struct fx *f = *state;
    size_t cap = 3000 * 40, n = 0;
    char *t = malloc(cap);
    n += (size_t)snprintf(t + n, cap - n, "class Big\n");
    for (int i = 1; i <= 2100; i++)
        n += (size_t)snprintf(t + n, cap - n,
                              i % 100 == 1 ? "  def m%d\n"
                              : i % 100    ? "    x = %d\n"
                                           : "  end\n",
                              i);
    n += (size_t)snprintf(t + n, cap - n, "end\n");
    fx_put(f, "big.rb", t);
    free(t);
    cJSON *r = fx_ok(f, "read_file", "{\"path\":\"big.rb\"}");
    const char *o = out_of(r);
    assert_string_equal(fx_str(r, "mode"), "large_file_outline");
    assert_true(!strncmp(o, "File has 2102 lines (", 21));
    assert_non_null(strstr(
        o, "Showing an outline and the first 120 lines to reduce model context.\n\nOutline:\nline 1: "
           "class Big (range 1-2102, class)\nline 2:   def m1 (range 2-101, method)"));
    assert_non_null(strstr(o, "\n\nFirst 120 lines:\nclass Big\n  def m1\n"));
    assert_non_null(strstr(
        o, "    x = 119\n\n[Use read_file with mode=\"range\", offset=121, and limit to continue; "
           "mode=\"outline\" for only the outline; or request a specific section from the outline.]"));
    assert_null(strstr(o, "x = 120\n"));
    cJSON_Delete(r);
    r = fx_ok(f, "read_file", "{\"path\":\"big.rb\",\"mode\":\"preview\"}");
    assert_non_null(
        strstr(out_of(r), "    x = 119\n\n[1982 more lines in file. Use offset=121 to continue.]"));
    assert_int_equal((int)fx_num(r, "end_line"), 120);
    cJSON_Delete(r);
    r = fx_ok(f, "read_file", "{\"path\":\"big.rb\",\"mode\":\"preview\",\"limit\":3,\"offset\":2}");
    assert_string_equal(
        out_of(r),
        "  def m1\n    x = 2\n    x = 3\n\n[2098 more lines in file. Use offset=5 to continue.]");
    cJSON_Delete(r);
    r = fx_ok(f, "read_file", "{\"path\":\"big.rb\",\"mode\":\"outline\"}");
    o = out_of(r);
    assert_true(!strncmp(o, "# File structure: big.rb\n- Lines: 2102\n- Bytes: ", 47));
    assert_non_null(strstr(o, "\n\n## Outline\nline 1: class Big (range 1-2102, class)\n"));
    assert_non_null(strstr(o, "line 2002:   def m2001 (range 2002-2101, method)"));
    assert_null(strstr(o, "x = 5"));
    cJSON_Delete(r);
}

/* ---- summarize_file_structure ---- */

static void summarize(void **state)
{
    struct fx *f = *state;
    fx_put(f, "lib/x.go",
           "package x\n\ntype T struct {\n\tA int\n}\n\nfunc (t *T) Get() int {\n\treturn t.A\n}\n");
    cJSON *r = fx_ok(f, "summarize_file_structure", "{\"path\":\"lib/x.go\"}");
    assert_string_equal(out_of(r), "# File structure: lib/x.go\n- Lines: 9\n- Bytes: 75\n\n## Outline\n"
                                   "line 3: type T struct { (range 3-5, struct)\n"
                                   "line 7: func (t *T) Get() int { (range 7-9, method)");
    assert_string_equal(fx_str(r, "language"), "go");
    const cJSON *e = cJSON_GetArrayItem(fx_item(r, "entries"), 1);
    assert_int_equal((int)fx_num(e, "line"), 7);
    assert_int_equal((int)fx_num(e, "end_line"), 9);
    assert_string_equal(fx_str(e, "kind"), "method");
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    fx_put(f, "notes.md", "# Title\n");
    r = fx_ok(f, "summarize_file_structure", "{\"path\":\"notes.md\"}");
    assert_string_equal(out_of(r), "No recognizable source structure found in notes.md.");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "entries")), 0);
    cJSON_Delete(r);
    size_t cap = 100 * 24, n = 0;
    char *t = malloc(cap);
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(t + n, cap - n, "func F%d() {\n}\n", i);
    fx_put(f, "many.go", t);
    free(t);
    r = fx_ok(f, "summarize_file_structure", "{\"path\":\"many.go\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "entries")), 80);
    assert_true(fx_bool(r, "truncated"));
    assert_non_null(strstr(
        out_of(r), "line 159: func F79() { (range 159-160, function)\n[Outline capped at 80 entries.]"));
    cJSON_Delete(r);
    kw_err(f, "summarize_file_structure", "{\"path\":\"../x.go\"}", "permission_denied", NULL);
}

/* ---- context_for_task: ranking on a small corpus with known answers ---- */

static void put_corpus(struct fx *f)
{
    fx_put(f, "lib/config_loader.rb",
           "module Config\n  class Loader\n    def load(path)\n      YAML.load_file(path)\n    end\n  "
           "end\nend\n");
    fx_put(f, "lib/server.rb",
           "class Server\n  def start\n    config = Config::Loader.new.load('x')\n  end\nend\n");
    fx_put(f, "lib/util.rb", "def helper\n  42\nend\n");
    fx_put(f, "README.md", "# App\nNothing about it.\n");
    fx_put(f, "node_modules/config/index.js", "function config() { load(); }\n");
    fx_put(f, "image.png", "config config config\n");
}

static void context_for_task(void **state)
{
    struct fx *f = *state;
    put_corpus(f);
    cJSON *r = fx_ok(f, "context_for_task",
                     "{\"task\":\"Find where configuration is loaded by the config loader\"}");
    const char *o = out_of(r);
    /* terms: stopwords and short words dropped, order kept, duplicates once */
    const cJSON *terms = fx_item(r, "terms");
    assert_int_equal(cJSON_GetArraySize(terms), 5);
    assert_string_equal(cJSON_GetArrayItem(terms, 0)->valuestring, "find");
    assert_string_equal(cJSON_GetArrayItem(terms, 4)->valuestring, "loader");
    const cJSON *files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 2);
    assert_string_equal(fx_str(cJSON_GetArrayItem(files, 0), "path"), "lib/config_loader.rb");
    assert_string_equal(fx_str(cJSON_GetArrayItem(files, 1), "path"), "lib/server.rb");
    assert_true(fx_num(cJSON_GetArrayItem(files, 0), "score") >
                fx_num(cJSON_GetArrayItem(files, 1), "score"));
    assert_true(
        !strncmp(o,
                 "# Focused context\n- Task: Find where configuration is loaded by the config loader\n- "
                 "Budget: 4000 bytes\n- Search terms: find, configuration, loaded, config, loader\n",
                 150));
    assert_non_null(strstr(o, "\n## lib/config_loader.rb\n- Score: "));
    assert_non_null(strstr(o, "\n# File structure: lib/config_loader.rb\n"));
    assert_non_null(strstr(o, "line 2:   class Loader (range 2-6, class)"));
    assert_non_null(strstr(o, "### Matching excerpts\n   1: module Config\n   2:   class Loader\n"));
    assert_null(strstr(o, "node_modules"));
    assert_null(strstr(o, "image.png"));
    assert_null(strstr(o, "util.rb"));
    assert_int_equal((int)fx_num(r, "budget"), 4000);
    cJSON_Delete(r);
    /* paths focus the search; the budget is capped at 20000 */
    r = fx_ok(f, "context_for_task",
              "{\"task\":\"config loader\",\"paths\":[\"lib/server.rb\"],\"budget\":999999}");
    files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(files, 0), "path"), "lib/server.rb");
    assert_int_equal((int)fx_num(r, "budget"), 20000);
    cJSON_Delete(r);
    /* a small budget cuts the first section and says so */
    r = fx_ok(f, "context_for_task", "{\"task\":\"config loader\",\"budget\":400}");
    o = out_of(r);
    assert_non_null(strstr(o, "\n[Context budget reached.]"));
    assert_true(strlen(o) < 460);
    cJSON_Delete(r);
    r = fx_ok(f, "context_for_task", "{\"task\":\"zebra unicorn\"}");
    assert_string_equal(out_of(r), "No matching candidate files found for focused context.");
    cJSON_Delete(r);
    r = fx_ok(f, "context_for_task", "{\"task\":\"config\",\"paths\":[\"image.png\"]}");
    assert_string_equal(out_of(r), "No readable candidate files found for focused context.");
    cJSON_Delete(r);
    kw_err(f, "context_for_task", "{\"task\":\"   \"}", "invalid_argument", "task is required");
    kw_err(f, "context_for_task", "{\"task\":\"x\",\"budget\":0}", "invalid_argument",
           "budget must be positive");
    kw_err(f, "context_for_task", "{\"task\":\"x\",\"paths\":[\"../outside\"]}", "permission_denied",
           NULL);
    kw_err(f, "context_for_task", "{\"task\":\"x\",\"paths\":[\"nope\"]}", "not_found", NULL);
    kw_err(f, "context_for_task", "{\"task\":\"x\",\"paths\":[1]}", "invalid_argument",
           "paths[0] must be a string");
}

/* ---- write_file / edit_file and the read-first rule ---- */

static void write_new_and_existing(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "write_file", "{\"path\":\"new.txt\",\"content\":\"a\\nb\\n\"}");
    assert_string_equal(
        out_of(r), "Wrote 4 bytes to new.txt\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n");
    assert_int_equal((int)fx_num(r, "bytes_written"), 4);
    assert_int_equal((int)fx_num(r, "additions"), 2);
    cJSON_Delete(r);
    char *got = fx_get(f, "new.txt");
    assert_string_equal(got, "a\nb\n");
    free(got);
    /* its own write counts as read: a second write needs no read */
    r = fx_ok(f, "write_file", "{\"path\":\"new.txt\",\"content\":\"a\\nB\\n\"}");
    assert_string_equal(
        out_of(r),
        "Wrote 4 bytes to new.txt\n--- a/new.txt\n+++ b/new.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n");
    cJSON_Delete(r);
    /* an existing file the agent never read */
    fx_put(f, "old.txt", "keep\n");
    kw_err(f, "write_file", "{\"path\":\"old.txt\",\"content\":\"x\"}", "read_required",
           "existing file must be read before writing: old.txt");
    got = fx_get(f, "old.txt");
    assert_string_equal(got, "keep\n");
    free(got);
    cJSON_Delete(fx_ok(f, "read_file", "{\"path\":\"old.txt\"}"));
    r = fx_ok(f, "write_file", "{\"path\":\"old.txt\",\"content\":\"keep\\n\"}");
    assert_string_equal(out_of(r), "Wrote 5 bytes to old.txt"); /* unchanged: no diff */
    cJSON_Delete(r);
    kw_err(f, "write_file", "{\"path\":\"no/such/dir/x.txt\",\"content\":\"x\"}", "not_found", NULL);
    kw_err(f, "write_file", "{\"path\":\"../outside/x.txt\",\"content\":\"x\"}", "permission_denied",
           NULL);
    kw_err(f, "write_file", "{\"path\":\"x.txt\"}", "invalid_argument", "content is required");
    char outside[256];
    snprintf(outside, sizeof(outside), "%s/x.txt", f->out);
    assert_false(fx_exists_host(outside)); /* nothing created outside */
}

static void changed_behind_the_agents_back(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.rb", "x = 1\n");
    cJSON_Delete(fx_ok(f, "read_file", "{\"path\":\"a.rb\"}"));
    fx_put(f, "a.rb", "x = 2\n"); /* someone else */
    kw_err(f, "edit_file",
           "{\"path\":\"a.rb\",\"edits\":[{\"old_text\":\"x = 2\",\"new_text\":\"x = 3\"}]}",
           "stale_read", "a.rb has changed since it was last read; read it again before editing");
    kw_err(f, "write_file", "{\"path\":\"a.rb\",\"content\":\"y\"}", "stale_read", NULL);
    char *got = fx_get(f, "a.rb");
    assert_string_equal(got, "x = 2\n");
    free(got);
    cJSON_Delete(
        fx_ok(f, "read_file", "{\"path\":\"a.rb\",\"mode\":\"outline\"}")); /* any successful read */
    cJSON *r = fx_ok(f, "edit_file",
                     "{\"path\":\"a.rb\",\"edits\":[{\"old_text\":\"x = 2\",\"new_text\":\"x = 3\"}]}");
    assert_string_equal(
        out_of(r),
        "Edited a.rb: replaced 1 block(s)\n--- a/a.rb\n+++ b/a.rb\n@@ -1 +1 @@\n-x = 2\n+x = 3\n");
    cJSON_Delete(r);
    /* a summary is not a read */
    fx_put(f, "b.rb", "y = 1\n");
    cJSON_Delete(fx_ok(f, "summarize_file_structure", "{\"path\":\"b.rb\"}"));
    kw_err(f, "edit_file", "{\"path\":\"b.rb\",\"edits\":[{\"old_text\":\"y\",\"new_text\":\"z\"}]}",
           "read_required", "existing file must be read before editing: b.rb");
}

static void edit_rules(void **state)
{
    struct fx *f = *state;
    fx_put(f, "e.txt", "alpha beta\ngamma beta\ndelta\n");
    cJSON_Delete(fx_ok(f, "read_file", "{\"path\":\"e.txt\"}"));
#define E(a) "{\"path\":\"e.txt\",\"edits\":" a "}"
    kw_err(f, "edit_file", E("[{\"old_text\":\"\",\"new_text\":\"x\"}]"), "invalid_argument",
           "edits[0].old_text must not be empty");
    kw_err(f, "edit_file", E("[{\"old_text\":\"beta\",\"new_text\":\"x\"}]"), "old_text_not_unique",
           "edits[0].old_text appears 2 times in e.txt; provide more context");
    kw_err(f, "edit_file", E("[{\"old_text\":\"omega\",\"new_text\":\"x\"}]"), "old_text_not_found",
           "edits[0].old_text was not found in e.txt");
    kw_err(f, "edit_file",
           E("[{\"old_text\":\"delta\",\"new_text\":\"x\"},{\"old_text\":\"alpha "
             "beta\",\"new_text\":\"y\"},{\"old_text\":\"a beta\\ngam\",\"new_text\":\"z\"}]"),
           "edits_overlap", "edits[1] and edits[2] overlap in e.txt");
    kw_err(f, "edit_file", E("[{\"old_text\":\"delta\",\"new_text\":\"delta\"}]"), "no_changes",
           "no changes made to e.txt");
    kw_err(f, "edit_file", E("[]"), "invalid_argument", "edits must contain at least one replacement");
    kw_err(f, "edit_file", E("[{\"old_text\":\"delta\"}]"), "invalid_argument",
           "edits[0].new_text must be a string");
    kw_err(f, "edit_file", E("[{\"old_text\":\"delta\",\"new_text\":\"x\",\"all\":true}]"),
           "invalid_argument", NULL);
    kw_err(f, "edit_file", E("\"delta\""), "invalid_argument", NULL);
    char *got = fx_get(f, "e.txt");
    assert_string_equal(got, "alpha beta\ngamma beta\ndelta\n"); /* all refused: untouched */
    free(got);
    /* replacements are against the original: a new_text holding a later old_text is not matched */
    cJSON *r = fx_ok(f, "edit_file",
                     E("[{\"old_text\":\"delta\",\"new_text\":\"alpha\"},{\"old_text\":\"alpha "
                       "beta\",\"new_text\":\"A\"}]"));
    assert_string_equal(out_of(r), "Edited e.txt: replaced 2 block(s)\n--- a/e.txt\n+++ b/e.txt\n@@ "
                                   "-1,3 +1,3 @@\n-alpha beta\n+A\n gamma beta\n-delta\n+alpha\n");
    assert_int_equal((int)fx_num(r, "additions"), 2);
    assert_int_equal((int)fx_num(r, "deletions"), 2);
    cJSON_Delete(r);
    got = fx_get(f, "e.txt");
    assert_string_equal(got, "A\ngamma beta\nalpha\n");
    free(got);
    kw_err(f, "edit_file", "{\"path\":\"nope.txt\",\"edits\":[{\"old_text\":\"a\",\"new_text\":\"b\"}]}",
           "not_found", NULL);
#undef E
}

/* The diff is made from the text the supervisor read, so a file the command sandbox's user may
 * not read (0600, owned by root) is edited with its diff like any other. */
static void edit_file_the_sandbox_cannot_read(void **state)
{
    struct fx *f = *state;
    fx_put(f, "private.txt", "one\ntwo\n");
    char p[160];
    snprintf(p, sizeof(p), "%s/private.txt", f->ws);
    assert_int_equal(chmod(p, 0600), 0);
    cJSON *r = fx_ok(f, "read_file", "{\"path\":\"private.txt\"}");
    cJSON_Delete(r);
    r = fx_ok(f, "edit_file",
              "{\"path\":\"private.txt\",\"edits\":[{\"old_text\":\"two\",\"new_text\":\"2\"}]}");
    assert_string_equal(out_of(r), "Edited private.txt: replaced 1 block(s)\n--- a/private.txt\n+++ "
                                   "b/private.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n");
    assert_int_equal((int)fx_num(r, "additions"), 1);
    assert_int_equal((int)fx_num(r, "deletions"), 1);
    cJSON_Delete(r);
    char *got = fx_get(f, "private.txt");
    assert_string_equal(got, "one\n2\n");
    free(got);
}

static void diff_capped_at_8k(void **state)
{
    struct fx *f = *state;
    size_t cap = 2000 * 16, n = 0;
    char *t = malloc(cap);
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(t + n, cap - n, "line %d\n", i);
    fx_put(f, "d.txt", t);
    cJSON_Delete(fx_ok(f, "read_file", "{\"path\":\"d.txt\",\"limit\":1}"));
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "path", "d.txt");
    cJSON_AddStringToObject(body, "content", "replaced\n");
    char *args = cJSON_PrintUnformatted(body);
    cJSON *r = fx_ok(f, "write_file", args);
    const char *o = out_of(r);
    assert_true(strlen(o) < KWARD_DIFF_BYTES + 300);
    assert_non_null(strstr(o, "\n... diff truncated to 8192 bytes; full diff stats: +1|-2000. Use "
                              "read_file to inspect current content."));
    assert_true(fx_bool(r, "diff_truncated"));
    cJSON_Delete(r);
    free(args);
    cJSON_Delete(body);
    free(t);
}

static void read_only_rules_and_approval(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "a\n");
    cJSON_Delete(fx_ok(f, "read_file", "{\"path\":\"a.txt\"}"));
    f->ctx.read_only = true;
    kw_err(f, "write_file", "{\"path\":\"a.txt\",\"content\":\"b\"}", "read_only", NULL);
    kw_err(f, "edit_file", "{\"path\":\"a.txt\",\"edits\":[{\"old_text\":\"a\",\"new_text\":\"b\"}]}",
           "read_only", NULL);
    f->ctx.read_only = false;
    /* the policy turns the guardrail off for write_file, and asks approval for edit_file */
    struct tool_rule rules[] = {
        {.name = "write_file", .enabled = true, .read_before_write = false},
        {.name = "edit_file", .enabled = true, .needs_approval = true, .read_before_write = true},
    };
    f->ctx.rules = rules;
    f->ctx.n_rules = 2;
    fx_put(f, "unread.txt", "u\n");
    cJSON_Delete(fx_ok(f, "write_file", "{\"path\":\"unread.txt\",\"content\":\"v\\n\"}"));
    kw_err(f, "edit_file", "{\"path\":\"a.txt\",\"edits\":[{\"old_text\":\"a\",\"new_text\":\"b\"}]}",
           "approval_required", "needs a person's approval");
    char *got = fx_get(f, "a.txt");
    assert_string_equal(got, "a\n");
    free(got);
    f->ctx.rules = NULL;
    f->ctx.n_rules = 0;
}

static void denials_and_unknown(void **state)
{
    struct fx *f = *state;
    static const char *const yes[] = {"permission_denied", "read_only",         "read_required",
                                      "stale_read",        "approval_required", "commands_disabled"};
    static const char *const no[] = {"not_found",           "invalid_argument", "file_too_large",
                                     "old_text_not_unique", "timeout",          "not_a_text_file"};
    for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", yes[i]);
        assert_non_null(f->s->denial(e));
        cJSON_Delete(e);
    }
    for (size_t i = 0; i < ARRAY_SIZE(no); i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", no[i]);
        assert_null(f->s->denial(e));
        cJSON_Delete(e);
    }
    cJSON *res = NULL;
    bool err;
    assert_int_equal(tool_surface_call(f->s, &f->ctx, "readFile", NULL, &res, &err), -ENOENT);
    cJSON *list = f->s->list(&f->ctx);
    assert_int_equal(cJSON_GetArraySize(list), 8);
    static const char *const names[] = {"list_directory",
                                        "read_file",
                                        "summarize_file_structure",
                                        "context_for_task",
                                        "context_budget_stats",
                                        "write_file",
                                        "edit_file",
                                        "run_shell_command"};
    for (int i = 0; i < 8; i++) {
        const cJSON *t = cJSON_GetArrayItem(list, i);
        assert_string_equal(cJSON_GetObjectItem(t, "name")->valuestring, names[i]);
        assert_true(cJSON_IsFalse(
            cJSON_GetObjectItem(cJSON_GetObjectItem(t, "inputSchema"), "additionalProperties")));
    }
    cJSON_Delete(list);
    kw_err(f, "run_shell_command", "{\"command\":\"true\"}", "commands_disabled", NULL);
    kw_err(f, "context_budget_stats", "{\"x\":1}", "invalid_argument", NULL);
}

static void budget_stats(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "context_budget_stats", NULL);
    assert_string_equal(out_of(r), "# Context budget stats\n- Calls: 0\n- Original bytes: 0\n- Returned "
                                   "bytes: 0\n- Saved bytes: 0\n- Estimated tokens saved: 0");
    cJSON_Delete(r);
    size_t cap = 3000 * 8, n = 0;
    char *t = malloc(cap);
    for (int i = 1; i <= 3000; i++)
        n += (size_t)snprintf(t + n, cap - n, "l%d\n", i);
    fx_put(f, "long.txt", t);
    free(t);
    cJSON *first_read = fx_ok(f, "read_file", "{\"path\":\"long.txt\",\"limit\":10}");
    size_t shown = strlen(out_of(first_read)); /* the file is n bytes; this much went back */
    cJSON_Delete(first_read);
    cJSON_Delete(fx_ok(f, "list_directory", "{\"path\":\".\"}"));     /* nothing saved */
    kw_err(f, "read_file", "{\"path\":\"none\"}", "not_found", NULL); /* an error counts */
    r = fx_ok(f, "context_budget_stats", "{}");
    assert_int_equal((int)fx_num(r, "calls"), 3);
    double orig = fx_num(r, "original_bytes"), ret = fx_num(r, "returned_bytes");
    assert_true(orig > ret);
    assert_int_equal((int)fx_num(r, "saved_bytes"), (int)(orig - ret));
    assert_int_equal((int)fx_num(r, "estimated_tokens_saved"), ((int)(orig - ret) + 3) / 4);
    const cJSON *by = fx_item(r, "by_tool");
    assert_int_equal(cJSON_GetArraySize(by), 2);
    const cJSON *first = cJSON_GetArrayItem(by, 0);
    assert_string_equal(fx_str(first, "tool"), "read_file");
    assert_int_equal((int)fx_num(first, "calls"), 2);
    /* the error's bytes count on both sides, so the read's saving is all the tool saved */
    assert_int_equal((int)fx_num(first, "saved_bytes"), (int)(n - shown));
    assert_int_equal((int)fx_num(r, "saved_bytes"), (int)(n - shown));
    assert_non_null(strstr(out_of(r), "\n\n## By tool\n- read_file: 2 call(s), "));
    assert_non_null(strstr(out_of(r), "\n- list_directory: 1 call(s), 0 bytes saved, "));
    cJSON_Delete(r);
}

/* ---- run_shell_command, for real ---- */

static void with_commands(struct fx *f)
{
    struct sandbox_profile *p = calloc(1, sizeof(*p));
    sandbox_profile_default(p);
    f->ctx.command_profile = p;
    f->ctx.allow_commands = true;
    chmod(f->ws, 0777);
}

static void shell_format(void **state)
{
    struct fx *f = *state;
    with_commands(f);
    cJSON *r = fx_ok(f, "run_shell_command",
                     "{\"command\":\"  echo out; echo err >&2; pwd; exit 3  \"}");
    assert_string_equal(out_of(r), "Exit status: 3\n\nSTDOUT:\nout\n/workspace\n\nSTDERR:\nerr\n");
    assert_int_equal((int)fx_num(r, "exit_status"), 3);
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "run_shell_command", "{\"command\":\"true\"}");
    assert_string_equal(out_of(r), "Exit status: 0\n\nSTDOUT:\n\nSTDERR:\n");
    cJSON_Delete(r);
    kw_err(f, "run_shell_command", "{\"command\":\"   \"}", "invalid_argument", "command is required");
    kw_err(f, "run_shell_command", "{}", "invalid_argument", "command is required");
    kw_err(f, "run_shell_command", "{\"command\":\"true\",\"timeout_seconds\":\"5\"}",
           "invalid_argument", NULL);
}

static void shell_timeout_and_cap(void **state)
{
    struct fx *f = *state;
    with_commands(f);
    /* ignores SIGTERM: only the SIGKILL after the grace period ends it */
    bool err;
    cJSON *r = fx_call(f, "run_shell_command",
                       "{\"command\":\"trap '' TERM; echo started; sleep 30\",\"timeout_seconds\":1}",
                       &err);
    assert_true(err);
    assert_string_equal(fx_str(r, "code"), "timeout");
    assert_string_equal(fx_str(r, "error"), "Error: command timed out after 1 seconds");
    assert_non_null(strstr(fx_str(r, "output"), "STDOUT:\nstarted\n"));
    cJSON_Delete(r);
    r = fx_ok(f, "run_shell_command", "{\"command\":\"head -c 300000 /dev/zero | tr '\\\\0' x\"}");
    const char *o = out_of(r);
    assert_true(strlen(o) <= KWARD_COMMAND_OUTPUT_BYTES + 64);
    assert_non_null(strstr(o, "\n... truncated to 131072 bytes"));
    assert_true(fx_bool(r, "truncated"));
    cJSON_Delete(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        KW_TEST(list_directory),
        KW_TEST(list_directory_capped),
        KW_TEST(read_file_basic),
        KW_TEST(read_file_errors),
        KW_TEST(read_file_caps),
        KW_TEST(read_file_preview_outline_large),
        KW_TEST(summarize),
        KW_TEST(context_for_task),
        KW_TEST(write_new_and_existing),
        KW_TEST(changed_behind_the_agents_back),
        KW_TEST(edit_rules),
        KW_TEST(edit_file_the_sandbox_cannot_read),
        KW_TEST(diff_capped_at_8k),
        KW_TEST(read_only_rules_and_approval),
        KW_TEST(denials_and_unknown),
        KW_TEST(budget_stats),
        KW_TEST(shell_format),
        KW_TEST(shell_timeout_and_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
