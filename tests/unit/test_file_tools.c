/* tests/unit/test_file_tools.c: every File Tools tool and every error code through the surface's
 * call, on real files in a temp workspace: the seed's shapes field for field, its examples, the
 * limits, the policy rules (approval, read-only, read first) and the denial spelling. */
#include "wap_fixture.h"

#include "tools/session.h"

#include <time.h>

static int ft_setup(void **state)
{
    if (fx_setup(state) < 0)
        return -1;
    struct fx *f = *state;
    f->s = tool_surface_find("file");
    return f->s ? 0 : -1;
}

#define FT_TEST(fn) cmocka_unit_test_setup_teardown(fn, ft_setup, fx_teardown)

/* Expects the error object {error: CODE, message: non-empty}, and nothing else in it. */
static void ft_err(struct fx *f, const char *tool, const char *args, const char *code)
{
    bool err;
    cJSON *res = fx_call(f, tool, args, &err);
    char *t = cJSON_PrintUnformatted(res);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(res, "message");
    if (!err || !cJSON_IsString(e) || strcmp(e->valuestring, code) != 0 || !cJSON_IsString(m) ||
        !*m->valuestring || cJSON_GetArraySize(res) != 2) {
        print_error("%s(%s): want {error: %s, message}, got %s (isError %d)\n", tool, args, code, t,
                    err);
        fail();
    }
    free(t);
    cJSON_Delete(res);
}

/* The message of an expected error (owned by the caller). */
static char *ft_msg(struct fx *f, const char *tool, const char *args)
{
    bool err;
    cJSON *res = fx_call(f, tool, args, &err);
    assert_true(err);
    char *m = strdup(fx_str(res, "message"));
    cJSON_Delete(res);
    return m;
}

/* ---- the surface ---------------------------------------------------------------------------- */

static void list_has_six_tools_with_schemas(void **state)
{
    struct fx *f = *state;
    cJSON *arr = f->s->list(&f->ctx);
    const char *names[] = {"file.read",   "file.write", "file.patch",
                           "file.delete", "file.list",  "file.search"};
    const char *required[] = {"path", "path", "path", "path", NULL, "pattern"};
    assert_int_equal(cJSON_GetArraySize(arr), 6);
    for (int i = 0; i < 6; i++) {
        const cJSON *t = cJSON_GetArrayItem(arr, i);
        assert_string_equal(fx_str(t, "name"), names[i]);
        assert_true(strlen(fx_str(t, "description")) > 10);
        const cJSON *s = fx_item(t, "inputSchema");
        assert_string_equal(fx_str(s, "type"), "object");
        assert_true(cJSON_IsFalse(fx_item(s, "additionalProperties")));
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
        if (required[i])
            assert_string_equal(cJSON_GetArrayItem(req, 0)->valuestring, required[i]);
        else
            assert_null(req);
    }
    const cJSON *props = fx_item(fx_item(cJSON_GetArrayItem(arr, 5), "inputSchema"), "properties");
    const char *search[] = {"pattern", "path", "glob", "case_sensitive", "context_lines", "max_results"};
    assert_int_equal(cJSON_GetArraySize(props), 6);
    for (int i = 0; i < 6; i++)
        assert_non_null(cJSON_GetObjectItemCaseSensitive(props, search[i]));
    const cJSON *patches = fx_item(
        fx_item(fx_item(cJSON_GetArrayItem(arr, 2), "inputSchema"), "properties"), "patches");
    const cJSON *item = fx_item(patches, "items");
    assert_string_equal(cJSON_GetArrayItem(fx_item(item, "required"), 1)->valuestring, "replace");
    cJSON_Delete(arr);
    assert_non_null(tool_surface_find("file"));
    assert_string_equal(tool_surface_find("file")->name, "file");
}

static void unknown_tool_is_enoent(void **state)
{
    struct fx *f = *state;
    cJSON *res = NULL;
    bool err = false;
    assert_int_equal(tool_surface_call(f->s, &f->ctx, "readFile", NULL, &res, &err), -ENOENT);
    assert_int_equal(tool_surface_call(f->s, &f->ctx, "file.move", NULL, &res, &err), -ENOENT);
    assert_null(res);
}

static void bad_arguments_are_invalid_argument(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "x\n");
    ft_err(f, "file.read", "{\"path\":7}", "invalid_argument");
    ft_err(f, "file.read", "{}", "invalid_argument");
    ft_err(f, "file.read", NULL, "invalid_argument");
    ft_err(f, "file.read", "[1]", "invalid_argument");
    ft_err(f, "file.read", "{\"path\":\"a.txt\",\"ofset\":2}", "invalid_argument");
    ft_err(f, "file.read", "{\"path\":\"a.txt\",\"offset\":0}", "invalid_argument");
    ft_err(f, "file.read", "{\"path\":\"a.txt\",\"offset\":1.5}", "invalid_argument");
    ft_err(f, "file.read", "{\"path\":\"a.txt\",\"limit\":0}", "invalid_argument");
    ft_err(f, "file.read", "{\"path\":\"a.txt\",\"limit\":\"3\"}", "invalid_argument");
    ft_err(f, "file.write", "{\"path\":\"a.txt\"}", "invalid_argument");
    ft_err(f, "file.patch", "{\"path\":\"a.txt\",\"patches\":[]}", "invalid_argument");
    ft_err(f, "file.patch", "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"x\"}]}", "invalid_argument");
    ft_err(f, "file.patch", "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"\",\"replace\":\"y\"}]}",
           "invalid_argument");
    ft_err(f, "file.patch",
           "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"x\",\"replace\":\"y\",\"all\":true}]}",
           "invalid_argument");
    ft_err(f, "file.patch", "{\"path\":\"a.txt\",\"patches\":[\"x\"]}", "invalid_argument");
    ft_err(f, "file.search", "{\"pattern\":\"x\",\"case_sensitive\":\"no\"}", "invalid_argument");
    ft_err(f, "file.search", "{\"pattern\":\"x\",\"context_lines\":101}", "invalid_argument");
    ft_err(f, "file.search", "{\"pattern\":\"x\",\"max_results\":0}", "invalid_argument");
    ft_err(f, "file.search", "{\"pattern\":\"\"}", "invalid_argument");
    /* the message names this surface's argument, not the broker's */
    char *m = ft_msg(f, "file.read", "{\"path\":\"a.txt\",\"offset\":5}");
    assert_non_null(strstr(m, "offset"));
    assert_null(strstr(m, "startLine"));
    free(m);
    m = ft_msg(f, "file.search", "{\"pattern\":\"\"}");
    assert_non_null(strstr(m, "pattern"));
    assert_null(strstr(m, "query"));
    free(m);
    /* null reads as absent */
    cJSON *r = fx_ok(f, "file.read", "{\"path\":\"a.txt\",\"offset\":null}");
    cJSON_Delete(r);
}

/* ---- file.read ------------------------------------------------------------------------------ */

static void read_numbers_lines_and_pages(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/app.py", "one\ntwo\nthree\nfour\nfive");
    cJSON *r = fx_ok(f, "file.read", "{\"path\":\"src/app.py\"}");
    assert_int_equal(cJSON_GetArraySize(r), 3);
    assert_string_equal(fx_str(r, "content"),
                        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive");
    assert_int_equal(fx_num(r, "total_lines"), 5);
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "file.read", "{\"path\":\"src/app.py\",\"offset\":2,\"limit\":2}");
    assert_string_equal(fx_str(r, "content"), "     2\ttwo\n     3\tthree\n");
    assert_int_equal(fx_num(r, "total_lines"), 5);
    assert_true(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "file.read", "{\"path\":\"src/app.py\",\"offset\":4,\"limit\":10}");
    assert_string_equal(fx_str(r, "content"), "     4\tfour\n     5\tfive");
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "file.read", "{\"path\":\"./src/../src/app.py\",\"offset\":5}");
    assert_string_equal(fx_str(r, "content"), "     5\tfive");
    cJSON_Delete(r);
    ft_err(f, "file.read", "{\"path\":\"src/app.py\",\"offset\":6}", "invalid_argument");
    fx_put(f, "empty.txt", "");
    r = fx_ok(f, "file.read", "{\"path\":\"empty.txt\"}");
    assert_string_equal(fx_str(r, "content"), "");
    assert_int_equal(fx_num(r, "total_lines"), 0);
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    /* wide numbers keep their digits */
    char *big = malloc(2000000);
    size_t o = 0;
    for (int i = 0; i < 1000001; i++)
        big[o++] = '\n';
    big[o] = '\0';
    fx_put(f, "many.txt", big);
    free(big);
    r = fx_ok(f, "file.read", "{\"path\":\"many.txt\",\"offset\":1000000,\"limit\":2}");
    assert_string_equal(fx_str(r, "content"), "1000000\t\n1000001\t\n");
    assert_int_equal(fx_num(r, "total_lines"), 1000001);
    cJSON_Delete(r);
}

static void read_is_capped_and_resumes(void **state)
{
    struct fx *f = *state;
    f->ctx.limits.max_file_size = 40;
    fx_put(f, "long.txt", "aaaaaaaaaa\nbbbbbbbbbb\ncccccccccc\ndddddddddd\neeeeeeeeee\n");
    /* at most 40 bytes of the file (whole lines), numbered */
    cJSON *r = fx_ok(f, "file.read", "{\"path\":\"long.txt\"}");
    assert_string_equal(fx_str(r, "content"),
                        "     1\taaaaaaaaaa\n     2\tbbbbbbbbbb\n     3\tcccccccccc\n");
    assert_true(fx_bool(r, "truncated"));
    assert_int_equal(fx_num(r, "total_lines"), 5);
    cJSON_Delete(r);
    r = fx_ok(f, "file.read", "{\"path\":\"long.txt\",\"offset\":4}");
    assert_string_equal(fx_str(r, "content"), "     4\tdddddddddd\n     5\teeeeeeeeee\n");
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    /* a single line over the cap: cut, never more than the cap */
    f->ctx.limits.max_file_size = 16;
    fx_put(f, "one.txt", "0123456789abcdefghijklmnopqrstuvwxyz\n");
    r = fx_ok(f, "file.read", "{\"path\":\"one.txt\"}");
    assert_true(fx_bool(r, "truncated"));
    assert_true(strncmp(fx_str(r, "content"), "     1\t0123456789", 17) == 0);
    assert_true(strlen(fx_str(r, "content")) <= 32);
    cJSON_Delete(r);
}

static void read_errors(void **state)
{
    struct fx *f = *state;
    fx_put(f, "dir/in.txt", "in\n");
    fx_put_bytes(f, "blob.bin", "a\0b", 3);
    char p[512];
    snprintf(p, sizeof(p), "%s/secret.txt", f->out);
    FILE *fp = fopen(p, "w");
    fputs("SECRET\n", fp);
    fclose(fp);
    char l[512];
    snprintf(l, sizeof(l), "%s/link", f->ws);
    assert_int_equal(symlink(p, l), 0);
    ft_err(f, "file.read", "{\"path\":\"nope.txt\"}", "file_not_found");
    ft_err(f, "file.read", "{\"path\":\"dir\"}", "is_directory");
    ft_err(f, "file.read", "{\"path\":\".\"}", "is_directory");
    ft_err(f, "file.read", "{\"path\":\"../outside/secret.txt\"}", "path_outside_workspace");
    ft_err(f, "file.read", "{\"path\":\"dir/../../outside/secret.txt\"}", "path_outside_workspace");
    ft_err(f, "file.read", "{\"path\":\"/etc/passwd\"}", "path_outside_workspace");
    ft_err(f, "file.read", "{\"path\":\"/dir/in.txt\"}", "path_outside_workspace");
    ft_err(f, "file.read", "{\"path\":\"link\"}", "path_outside_workspace");
    ft_err(f, "file.read", "{\"path\":\"blob.bin\"}", "binary_file");
    ft_err(f, "file.read", "{\"path\":\"dir/in.txt/x\"}", "not_a_directory");
    mkfifo(strcat(strcpy(p, f->ws), "/fifo"), 0644);
    ft_err(f, "file.read", "{\"path\":\"fifo\"}", "not_a_regular_file");
}

/* ---- file.write ----------------------------------------------------------------------------- */

static void write_creates_and_overwrites(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "file.write", "{\"path\":\"a/b/c.txt\",\"content\":\"héllo\\n\"}");
    assert_int_equal(cJSON_GetArraySize(r), 2);
    assert_true(fx_bool(r, "success"));
    assert_int_equal(fx_num(r, "bytes_written"), 7);
    cJSON_Delete(r);
    char *got = fx_get(f, "a/b/c.txt");
    assert_string_equal(got, "héllo\n");
    free(got);
    r = fx_ok(f, "file.write", "{\"path\":\"a/b/c.txt\",\"content\":\"\"}");
    assert_int_equal(fx_num(r, "bytes_written"), 0);
    cJSON_Delete(r);
    got = fx_get(f, "a/b/c.txt");
    assert_string_equal(got, "");
    free(got);
}

static void write_errors(void **state)
{
    struct fx *f = *state;
    fx_put(f, "dir/x.txt", "x");
    char l[512];
    snprintf(l, sizeof(l), "%s/outlink", f->ws);
    assert_int_equal(symlink(f->out, l), 0);
    snprintf(l, sizeof(l), "%s/dangling", f->ws);
    char t[512];
    snprintf(t, sizeof(t), "%s/planted.txt", f->out);
    assert_int_equal(symlink(t, l), 0);
    ft_err(f, "file.write", "{\"path\":\"../outside/w.txt\",\"content\":\"x\"}",
           "path_outside_workspace");
    ft_err(f, "file.write", "{\"path\":\"/tmp/w.txt\",\"content\":\"x\"}", "path_outside_workspace");
    ft_err(f, "file.write", "{\"path\":\"outlink/w.txt\",\"content\":\"x\"}", "path_outside_workspace");
    ft_err(f, "file.write", "{\"path\":\"dangling\",\"content\":\"x\"}", "path_outside_workspace");
    ft_err(f, "file.write", "{\"path\":\"dir\",\"content\":\"x\"}", "is_directory");
    ft_err(f, "file.write", "{\"path\":\"\",\"content\":\"x\"}", "is_directory");
    ft_err(f, "file.write", "{\"path\":\"dir/x.txt/y\",\"content\":\"x\"}", "not_a_directory");
    assert_false(fx_exists_host(t));
    snprintf(t, sizeof(t), "%s/w.txt", f->out);
    assert_false(fx_exists_host(t));
    f->ctx.limits.max_file_size = 4;
    ft_err(f, "file.write", "{\"path\":\"big.txt\",\"content\":\"12345\"}", "file_too_large");
    f->ctx.limits.max_file_size = 1048576;
    f->ctx.read_only = true;
    ft_err(f, "file.write", "{\"path\":\"dir/x.txt\",\"content\":\"y\"}", "permission_denied");
    ft_err(f, "file.patch", "{\"path\":\"dir/x.txt\",\"patches\":[{\"find\":\"x\",\"replace\":\"y\"}]}",
           "permission_denied");
    ft_err(f, "file.delete", "{\"path\":\"dir/x.txt\"}", "permission_denied");
    char *got = fx_get(f, "dir/x.txt");
    assert_string_equal(got, "x");
    free(got);
    /* reading is still fine */
    cJSON *r = fx_ok(f, "file.read", "{\"path\":\"dir/x.txt\"}");
    cJSON_Delete(r);
}

/* ---- file.patch ----------------------------------------------------------------------------- */

static void patch_applies_the_seed_example(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/config.py", "DEBUG = True\n\ndef connect():\n    return db.connect(timeout=30)\n");
    cJSON *r = fx_ok(f, "file.patch",
                     "{\"path\":\"src/config.py\",\"patches\":[{\"find\":\"DEBUG = "
                     "True\",\"replace\":\"DEBUG = False\"},"
                     "{\"find\":\"def connect():\\n    return db.connect(timeout=30)\","
                     "\"replace\":\"def connect():\\n    return db.connect(timeout=60, retry=3)\"}]}");
    assert_int_equal(cJSON_GetArraySize(r), 2);
    assert_true(fx_bool(r, "success"));
    assert_int_equal(fx_num(r, "patches_applied"), 2);
    cJSON_Delete(r);
    char *got = fx_get(f, "src/config.py");
    assert_string_equal(got,
                        "DEBUG = False\n\ndef connect():\n    return db.connect(timeout=60, retry=3)\n");
    free(got);
}

static void patch_in_order_all_or_none(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "alpha beta\ngamma\n");
    /* the second patch sees the first's result */
    cJSON *r = fx_ok(f, "file.patch",
                     "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"alpha\",\"replace\":\"delta\"},"
                     "{\"find\":\"delta beta\",\"replace\":\"epsilon\"}]}");
    cJSON_Delete(r);
    char *got = fx_get(f, "a.txt");
    assert_string_equal(got, "epsilon\ngamma\n");
    free(got);
    /* a later patch that fails leaves the file as it was */
    ft_err(f, "file.patch",
           "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"gamma\",\"replace\":\"G\"},"
           "{\"find\":\"zeta\",\"replace\":\"Z\"}]}",
           "find_not_found");
    got = fx_get(f, "a.txt");
    assert_string_equal(got, "epsilon\ngamma\n");
    free(got);
    fx_put(f, "b.txt", "x = 1\nx = 1\n");
    ft_err(f, "file.patch", "{\"path\":\"b.txt\",\"patches\":[{\"find\":\"x = 1\",\"replace\":\"y\"}]}",
           "find_not_unique");
    /* overlapping occurrences count too */
    fx_put(f, "c.txt", "aaa");
    ft_err(f, "file.patch", "{\"path\":\"c.txt\",\"patches\":[{\"find\":\"aa\",\"replace\":\"b\"}]}",
           "find_not_unique");
    /* a patch that makes a later find ambiguous fails the whole call */
    fx_put(f, "d.txt", "one two\n");
    ft_err(f, "file.patch",
           "{\"path\":\"d.txt\",\"patches\":[{\"find\":\"one\",\"replace\":\"two\"},"
           "{\"find\":\"two\",\"replace\":\"three\"}]}",
           "find_not_unique");
    got = fx_get(f, "d.txt");
    assert_string_equal(got, "one two\n");
    free(got);
    char *m = ft_msg(f, "file.patch",
                     "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"gamma\",\"replace\":\"G\"},"
                     "{\"find\":\"zeta\",\"replace\":\"Z\"}]}");
    assert_non_null(strstr(m, "patches[1].find"));
    free(m);
}

static void patch_errors(void **state)
{
    struct fx *f = *state;
    fx_put(f, "dir/x.txt", "x\n");
    fx_put_bytes(f, "blob.bin", "x\0x", 3);
    const char *p = "\"patches\":[{\"find\":\"x\",\"replace\":\"y\"}]";
    char a[256];
    snprintf(a, sizeof(a), "{\"path\":\"nope.txt\",%s}", p);
    ft_err(f, "file.patch", a, "file_not_found");
    snprintf(a, sizeof(a), "{\"path\":\"../outside/x\",%s}", p);
    ft_err(f, "file.patch", a, "path_outside_workspace");
    snprintf(a, sizeof(a), "{\"path\":\"dir\",%s}", p);
    ft_err(f, "file.patch", a, "is_directory");
    snprintf(a, sizeof(a), "{\"path\":\"blob.bin\",%s}", p);
    ft_err(f, "file.patch", a, "binary_file");
    f->ctx.limits.max_file_size = 3;
    snprintf(a, sizeof(a),
             "{\"path\":\"dir/x.txt\",\"patches\":[{\"find\":\"x\",\"replace\":\"long\"}]}");
    ft_err(f, "file.patch", a, "file_too_large");
}

/* ---- file.delete ---------------------------------------------------------------------------- */

static void delete_files_only(void **state)
{
    struct fx *f = *state;
    fx_put(f, "dir/x.txt", "x");
    char t[512], l[512];
    snprintf(t, sizeof(t), "%s/keep.txt", f->out);
    FILE *fp = fopen(t, "w");
    fputs("keep", fp);
    fclose(fp);
    snprintf(l, sizeof(l), "%s/link", f->ws);
    assert_int_equal(symlink(t, l), 0);
    cJSON *r = fx_ok(f, "file.delete", "{\"path\":\"dir/x.txt\"}");
    assert_int_equal(cJSON_GetArraySize(r), 1);
    assert_true(fx_bool(r, "success"));
    cJSON_Delete(r);
    assert_null(fx_get(f, "dir/x.txt"));
    ft_err(f, "file.delete", "{\"path\":\"dir/x.txt\"}", "file_not_found");
    ft_err(f, "file.delete", "{\"path\":\"dir\"}", "is_directory");
    ft_err(f, "file.delete", "{\"path\":\".\"}", "is_directory");
    ft_err(f, "file.delete", "{\"path\":\"../outside/keep.txt\"}", "path_outside_workspace");
    ft_err(f, "file.delete", "{\"path\":\"/etc/hostname\"}", "path_outside_workspace");
    /* a symlink is removed as itself; what it points to stays */
    r = fx_ok(f, "file.delete", "{\"path\":\"link\"}");
    cJSON_Delete(r);
    assert_false(fx_exists_host(l));
    assert_true(fx_exists_host(t));
}

/* ---- file.list ------------------------------------------------------------------------------ */

static bool list_has(const cJSON *files, const char *path)
{
    for (const cJSON *it = files->child; it; it = it->next)
        if (strcmp(fx_str(it, "path"), path) == 0)
            return true;
    return false;
}

static void list_globs(void **state)
{
    struct fx *f = *state;
    fx_put(f, "README.md", "# r\n");
    fx_put(f, "setup.py", "1234567\n");
    fx_put(f, "src/app.ts", "a\n");
    fx_put(f, "src/lib/util.ts", "u\n");
    fx_put(f, "src/lib/util.py", "u\n");
    fx_put(f, "node_modules/x/index.ts", "i\n");
    cJSON *r = fx_ok(f, "file.list", "{}");
    const cJSON *files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(r), 1);
    assert_int_equal(cJSON_GetArraySize(files), 2); /* files only, this directory only */
    const cJSON *first = cJSON_GetArrayItem(files, 0);
    assert_int_equal(cJSON_GetArraySize(first), 3);
    assert_string_equal(fx_str(first, "path"), "README.md");
    assert_int_equal(fx_num(first, "size"), 4);
    const char *mod = fx_str(first, "modified");
    assert_int_equal(strlen(mod), 24);
    assert_true(mod[4] == '-' && mod[10] == 'T' && mod[23] == 'Z');
    assert_int_equal(fx_num(cJSON_GetArrayItem(files, 1), "size"), 8);
    cJSON_Delete(r);

    r = fx_ok(f, "file.list", "{\"pattern\":\"**/*.ts\"}");
    files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 2);
    assert_true(list_has(files, "src/app.ts"));
    assert_true(list_has(files, "src/lib/util.ts"));
    assert_false(list_has(files, "node_modules/x/index.ts")); /* the default exclusions */
    cJSON_Delete(r);

    r = fx_ok(f, "file.list", "{\"path\":\"src\",\"pattern\":\"*.ts\"}");
    files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 1);
    assert_true(list_has(files, "src/app.ts"));
    cJSON_Delete(r);

    r = fx_ok(f, "file.list", "{\"path\":\"src\",\"pattern\":\"lib/util.*\"}");
    files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 2);
    assert_true(list_has(files, "src/lib/util.py"));
    cJSON_Delete(r);

    r = fx_ok(f, "file.list", "{\"path\":\"src\",\"pattern\":\"./lib/*.py\"}");
    files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 1);
    assert_true(list_has(files, "src/lib/util.py"));
    cJSON_Delete(r);

    r = fx_ok(f, "file.list", "{\"path\":\"src/lib\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "files")), 2);
    cJSON_Delete(r);
    /* named on purpose, an excluded directory is listed whole, by any pattern */
    r = fx_ok(f, "file.list", "{\"path\":\"node_modules\",\"pattern\":\"**/*.ts\"}");
    files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 1);
    assert_true(list_has(files, "node_modules/x/index.ts"));
    cJSON_Delete(r);
    r = fx_ok(f, "file.list", "{\"path\":\"node_modules/x\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "files")), 1);
    cJSON_Delete(r);
    r = fx_ok(f, "file.search", "{\"pattern\":\"i\",\"path\":\"node_modules/x\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 1);
    cJSON_Delete(r);
    r = fx_ok(f, "file.search", "{\"pattern\":\"i\",\"glob\":\"*.ts\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 0);
    cJSON_Delete(r);
    r = fx_ok(f, "file.list", "{\"pattern\":\"*.rs\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "files")), 0);
    cJSON_Delete(r);

    ft_err(f, "file.list", "{\"path\":\"setup.py\"}", "not_a_directory");
    ft_err(f, "file.list", "{\"path\":\"nope\"}", "file_not_found");
    ft_err(f, "file.list", "{\"path\":\"..\"}", "path_outside_workspace");
    ft_err(f, "file.list", "{\"path\":\"/\"}", "path_outside_workspace");
    ft_err(f, "file.list", "{\"pattern\":\"[abc\"}", "invalid_pattern");
}

static void list_is_capped(void **state)
{
    struct fx *f = *state;
    for (int i = 0; i < 12; i++) {
        char n[32];
        snprintf(n, sizeof(n), "d/f%02d.txt", i);
        fx_put(f, n, "x");
    }
    f->ctx.limits.max_explore_entries = 5;
    cJSON *r = fx_ok(f, "file.list", "{\"pattern\":\"**/*.txt\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "files")), 5);
    assert_true(fx_bool(r, "truncated"));
    assert_string_equal(fx_str(cJSON_GetArrayItem(fx_item(r, "files"), 0), "path"), "d/f00.txt");
    cJSON_Delete(r);
}

/* ---- file.search ---------------------------------------------------------------------------- */

static void search_reproduces_the_seed_example(void **state)
{
    struct fx *f = *state;
    char body[4096] = "";
    for (int i = 1; i <= 40; i++)
        strcat(body, "pass\n");
    strcat(body, "# Establish database connection\n"
                 "def connect(host, port):\n"
                 "    return Client(host, port)\n");
    fx_put(f, "src/db/connection.py", body);
    fx_put(f, "src/db/notes.txt", "def connect(a):\n");
    cJSON *r = fx_ok(f, "file.search",
                     "{\"pattern\":\"def\\\\s+connect\",\"glob\":\"**/*.py\",\"context_lines\":1}");
    char *txt = cJSON_PrintUnformatted(r);
    assert_string_equal(
        txt, "{\"matches\":[{\"path\":\"src/db/connection.py\",\"line\":42,\"content\":\"    "
             "# Establish database connection\\n--> def connect(host, port):\\n        return "
             "Client(host, port)\"}],\"truncated\":false}");
    free(txt);
    cJSON_Delete(r);
    /* without context, the line itself */
    r = fx_ok(f, "file.search", "{\"pattern\":\"def\\\\s+connect\",\"glob\":\"*.py\"}");
    const cJSON *m = cJSON_GetArrayItem(fx_item(r, "matches"), 0);
    assert_string_equal(fx_str(m, "content"), "def connect(host, port):");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 1);
    cJSON_Delete(r);
}

static void search_options(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "Hello\nhello\nHELLO\n");
    fx_put(f, "sub/b.txt", "hello there\n");
    fx_put(f, ".git/c.txt", "hello\n");
    cJSON *r = fx_ok(f, "file.search", "{\"pattern\":\"hello\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 2); /* case-sensitive by default */
    cJSON_Delete(r);
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"case_sensitive\":false}");
    const cJSON *ms = fx_item(r, "matches");
    assert_int_equal(cJSON_GetArraySize(ms), 4);
    assert_string_equal(fx_str(cJSON_GetArrayItem(ms, 0), "path"), "a.txt");
    assert_int_equal(fx_num(cJSON_GetArrayItem(ms, 2), "line"), 3);
    assert_string_equal(fx_str(cJSON_GetArrayItem(ms, 3), "path"), "sub/b.txt");
    assert_false(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"case_sensitive\":false,\"max_results\":2}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 2);
    assert_true(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"path\":\"sub\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 1);
    cJSON_Delete(r);
    /* a glob with '/' reads from the directory searched, like file.list's pattern */
    fx_put(f, "sub/deep/d.txt", "hello\n");
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"path\":\"sub\",\"glob\":\"deep/*.txt\"}");
    ms = fx_item(r, "matches");
    assert_int_equal(cJSON_GetArraySize(ms), 1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(ms, 0), "path"), "sub/deep/d.txt");
    cJSON_Delete(r);
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"glob\":\"./sub/*.txt\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 1);
    cJSON_Delete(r);
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"path\":\"sub\",\"glob\":\"../**\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 0);
    cJSON_Delete(r);
    fx_put(f, "sub/deep/d.txt", "bye\n");
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"path\":\"sub/b.txt\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 1);
    cJSON_Delete(r);
    /* the workspace's cap bounds max_results */
    f->ctx.limits.max_search_results = 1;
    r = fx_ok(f, "file.search", "{\"pattern\":\"hello\",\"case_sensitive\":false,\"max_results\":50}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 1);
    assert_true(fx_bool(r, "truncated"));
    cJSON_Delete(r);
    /* context at the edges of a file */
    r = fx_ok(f, "file.search", "{\"pattern\":\"^Hello\",\"context_lines\":2}");
    assert_string_equal(fx_str(cJSON_GetArrayItem(fx_item(r, "matches"), 0), "content"),
                        "--> Hello\n    hello\n    HELLO");
    cJSON_Delete(r);
}

static void search_errors(void **state)
{
    struct fx *f = *state;
    char line[4096];
    memset(line, 'a', 4000);
    strcpy(line + 4000, "!\n");
    fx_put(f, "a.txt", line);
    ft_err(f, "file.search", "{\"pattern\":\"(unclosed\"}", "invalid_pattern");
    ft_err(f, "file.search", "{\"pattern\":\"x\",\"glob\":\"[a\"}", "invalid_pattern");
    ft_err(f, "file.search", "{\"pattern\":\"x\",\"path\":\"../outside\"}", "path_outside_workspace");
    ft_err(f, "file.search", "{\"pattern\":\"x\",\"path\":\"/etc\"}", "path_outside_workspace");
    ft_err(f, "file.search", "{\"pattern\":\"x\",\"path\":\"nope\"}", "file_not_found");
    ft_err(f, "file.search", "{\"pattern\":\"(a|aa)+$\"}", "invalid_pattern"); /* catastrophic */
    char *m = ft_msg(f, "file.search", "{\"pattern\":\"(unclosed\"}");
    assert_true(strncmp(m, "pattern", 7) == 0);
    free(m);
}

/* ---- policy rules --------------------------------------------------------------------------- */

static void approval_is_refused_until_a_highway(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "a\n");
    struct tool_rule rules[] = {{.name = "file.write", .enabled = true, .needs_approval = true}};
    f->ctx.rules = rules;
    f->ctx.n_rules = 1;
    ft_err(f, "file.write", "{\"path\":\"a.txt\",\"content\":\"b\"}", "approval_required");
    char *got = fx_get(f, "a.txt");
    assert_string_equal(got, "a\n");
    free(got);
    cJSON *r = fx_ok(f, "file.read", "{\"path\":\"a.txt\"}");
    cJSON_Delete(r);
    f->ctx.rules = NULL;
    f->ctx.n_rules = 0;
}

static void read_before_write(void **state)
{
    struct fx *f = *state;
    struct tool_session *s = NULL;
    assert_int_equal(tool_session_new(&s), 0);
    f->ctx.session = s;
    struct tool_rule rules[] = {
        {.name = "file.write", .enabled = true, .read_before_write = true},
        {.name = "file.patch", .enabled = true, .read_before_write = true},
        {.name = "file.delete", .enabled = true, .read_before_write = true},
    };
    f->ctx.rules = rules;
    f->ctx.n_rules = 3;
    fx_put(f, "a.txt", "one\ntwo\n");
    ft_err(f, "file.write", "{\"path\":\"a.txt\",\"content\":\"x\"}", "read_required");
    ft_err(f, "file.patch", "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"one\",\"replace\":\"1\"}]}",
           "read_required");
    ft_err(f, "file.delete", "{\"path\":\"a.txt\"}", "read_required");
    /* a new file needs no read */
    cJSON *r = fx_ok(f, "file.write", "{\"path\":\"new.txt\",\"content\":\"n\\n\"}");
    cJSON_Delete(r);
    /* a partial read counts; then the agent's own write counts as read */
    r = fx_ok(f, "file.read", "{\"path\":\"a.txt\",\"limit\":1}");
    cJSON_Delete(r);
    r = fx_ok(f, "file.patch",
              "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"one\",\"replace\":\"1\"}]}");
    cJSON_Delete(r);
    r = fx_ok(f, "file.patch",
              "{\"path\":\"a.txt\",\"patches\":[{\"find\":\"two\",\"replace\":\"2\"}]}");
    cJSON_Delete(r);
    /* changed behind the agent's back: read again first */
    fx_put(f, "a.txt", "changed\n");
    char *m = ft_msg(f, "file.write", "{\"path\":\"a.txt\",\"content\":\"x\"}");
    assert_non_null(strstr(m, "changed since"));
    free(m);
    r = fx_ok(f, "file.read", "{\"path\":\"a.txt\"}");
    cJSON_Delete(r);
    r = fx_ok(f, "file.delete", "{\"path\":\"a.txt\"}");
    cJSON_Delete(r);
    f->ctx.rules = NULL;
    f->ctx.n_rules = 0;
    f->ctx.session = NULL;
    tool_session_free(s);
}

static void denials_name_the_rule(void **state)
{
    (void)state;
    const struct tool_surface *s = tool_surface_find("file");
    assert_non_null(s->denial);
    const struct {
        const char *code, *rule;
    } cases[] = {
        {"path_outside_workspace", "workspace containment"},
        {"permission_denied", "read-only"},
        {"approval_required", "needs approval"},
        {"read_required", "read before write"},
        {"file_not_found", NULL},
        {"find_not_unique", NULL},
        {"invalid_argument", NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        cJSON *res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "error", cases[i].code);
        cJSON_AddStringToObject(res, "message", "m");
        const char *rule = s->denial(res);
        if (cases[i].rule)
            assert_string_equal(rule, cases[i].rule);
        else
            assert_null(rule);
        cJSON_Delete(res);
    }
    cJSON *odd = cJSON_CreateObject();
    cJSON_AddNumberToObject(odd, "error", 3);
    assert_null(s->denial(odd));
    cJSON_Delete(odd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FT_TEST(list_has_six_tools_with_schemas),
        FT_TEST(unknown_tool_is_enoent),
        FT_TEST(bad_arguments_are_invalid_argument),
        FT_TEST(read_numbers_lines_and_pages),
        FT_TEST(read_is_capped_and_resumes),
        FT_TEST(read_errors),
        FT_TEST(write_creates_and_overwrites),
        FT_TEST(write_errors),
        FT_TEST(patch_applies_the_seed_example),
        FT_TEST(patch_in_order_all_or_none),
        FT_TEST(patch_errors),
        FT_TEST(delete_files_only),
        FT_TEST(list_globs),
        FT_TEST(list_is_capped),
        FT_TEST(search_reproduces_the_seed_example),
        FT_TEST(search_options),
        FT_TEST(search_errors),
        FT_TEST(approval_is_refused_until_a_highway),
        FT_TEST(read_before_write),
        FT_TEST(denials_name_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
