/* tests/unit/test_wap.c: every WAP tool and every error code through the surface's call, on real
 * files in a temp workspace: shapes field for field, limits, exclusions, atomic edits. */
#include "wap_fixture.h"

#include <time.h>

/* ---- surface -------------------------------------------------------------------------------- */

static void list_has_seven_tools_with_schemas(void **state)
{
    struct fx *f = *state;
    cJSON *arr = f->s->list(&f->ctx);
    assert_int_equal(cJSON_GetArraySize(arr), 7);
    const char *names[] = {"exploreFiles", "readFile",       "writeFile",       "modifyFile",
                           "searchFiles",  "executeCommand", "getWorkspaceInfo"};
    for (int i = 0; i < 7; i++) {
        const cJSON *t = cJSON_GetArrayItem(arr, i);
        assert_string_equal(fx_str(t, "name"), names[i]);
        assert_true(strlen(fx_str(t, "description")) > 10);
        const cJSON *s = fx_item(t, "inputSchema");
        assert_string_equal(fx_str(s, "type"), "object");
        assert_true(cJSON_IsObject(fx_item(s, "properties")));
    }
    const cJSON *ops = fx_item(fx_item(fx_item(cJSON_GetArrayItem(arr, 3), "inputSchema"), "properties"),
                               "operations");
    assert_int_equal(cJSON_GetArraySize(fx_item(fx_item(ops, "items"), "oneOf")), 4);
    const cJSON *env = fx_item(fx_item(fx_item(cJSON_GetArrayItem(arr, 5), "inputSchema"), "properties"),
                               "environment");
    assert_string_equal(fx_str(fx_item(env, "additionalProperties"), "type"), "string");
    const cJSON *rf = cJSON_GetArrayItem(arr, 1);
    const cJSON *req = fx_item(fx_item(rf, "inputSchema"), "required");
    assert_string_equal(cJSON_GetArrayItem(req, 0)->valuestring, "path");
    cJSON_Delete(arr);
    assert_null(tool_surface_find("nope"));
    assert_non_null(tool_surface_find("wap"));
}

static void unknown_tool_is_enoent(void **state)
{
    struct fx *f = *state;
    cJSON *res = NULL;
    bool err = false;
    assert_int_equal(tool_surface_call(f->s, &f->ctx, "deleteEverything", NULL, &res, &err), -ENOENT);
    assert_null(res);
}

static void wrong_types_name_the_field(void **state)
{
    struct fx *f = *state;
    bool err;
    cJSON *r = fx_call(f, "readFile", "{\"path\":\"a\",\"startLine\":\"3\"}", &err);
    assert_true(err);
    assert_string_equal(fx_str(r, "code"), "INVALID_ARGUMENT");
    assert_string_equal(fx_str(fx_item(r, "details"), "field"), "startLine");
    cJSON_Delete(r);
    fx_err(f, "readFile", "{\"path\":7}", "INVALID_ARGUMENT", "invalid_argument");
    fx_err(f, "readFile", "{}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "readFile", "[1,2]", "INVALID_ARGUMENT", NULL);
    fx_err(f, "readFile", "{\"path\":\"a\",\"startline\":3}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "readFile", "{\"path\":\"a\",\"startLine\":1.5}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "readFile", "{\"path\":\"a\",\"startLine\":0}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "exploreFiles", "{\"path\":\".\",\"recursive\":\"yes\"}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "exploreFiles", "{\"path\":\".\",\"excludePatterns\":[1]}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "writeFile", "{\"path\":\"a\",\"content\":\"x\",\"mode\":\"truncate\"}",
           "INVALID_ARGUMENT", NULL);
    fx_err(f, "searchFiles", "{\"paths\":\"src\",\"query\":\"x\",\"type\":\"regex\"}",
           "INVALID_ARGUMENT", NULL);
    fx_err(f, "searchFiles", "{\"paths\":[\"src\"],\"query\":\"x\",\"type\":\"fuzzy\"}",
           "INVALID_ARGUMENT", NULL);
    fx_err(f, "executeCommand", "{\"command\":\"ls\",\"environment\":{\"A\":1}}", "INVALID_ARGUMENT",
           NULL);
    fx_err(f, "modifyFile", "{\"path\":\"a\",\"operations\":[{\"type\":\"replace\",\"startLine\":1}]}",
           "INVALID_ARGUMENT", NULL);
    fx_err(f, "modifyFile", "{\"path\":\"a\",\"operations\":[]}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "modifyFile", "{\"path\":\"a\",\"operations\":[{\"type\":\"rename\"}]}",
           "INVALID_ARGUMENT", NULL);
}

/* ---- exploreFiles --------------------------------------------------------------------------- */

static void build_tree(struct fx *f)
{
    fx_put(f, "README.md", "# hi\n");
    fx_put(f, "src/app.js", "console.log(1)\n");
    fx_put(f, "src/lib/util.js", "x\n");
    fx_put(f, "src/lib/deep/more/x.js", "x\n");
    fx_put(f, "node_modules/left-pad/index.js", "x\n");
    fx_put(f, ".git/HEAD", "ref\n");
    fx_put(f, "build/out.o", "o\n");
}

static bool has_path(const cJSON *files, const char *p)
{
    for (const cJSON *it = files->child; it; it = it->next)
        if (strcmp(cJSON_GetObjectItem(it, "path")->valuestring, p) == 0)
            return true;
    return false;
}

static void explore_flat_sorted(void **state)
{
    struct fx *f = *state;
    build_tree(f);
    cJSON *r = fx_ok(f, "exploreFiles", "{\"path\":\".\"}");
    const cJSON *files = fx_item(r, "files");
    assert_int_equal(cJSON_GetArraySize(files), 5);
    const char *want[] = {"/.git", "/README.md", "/build", "/node_modules", "/src"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(fx_str(cJSON_GetArrayItem(files, i), "path"), want[i]);
    assert_true(fx_bool(cJSON_GetArrayItem(files, 4), "isDirectory"));
    assert_false(fx_bool(cJSON_GetArrayItem(files, 1), "isDirectory"));
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(files, 1), "metadata"));
    assert_false(fx_bool(r, "isTruncated"));
    assert_int_equal((int)fx_num(r, "totalFound"), 5);
    cJSON_Delete(r);
}

static void explore_recursive_default_exclusions(void **state)
{
    struct fx *f = *state;
    build_tree(f);
    cJSON *r = fx_ok(f, "exploreFiles", "{\"path\":\".\",\"recursive\":true}");
    const cJSON *files = fx_item(r, "files");
    assert_true(has_path(files, "/src/lib/util.js"));
    assert_true(has_path(files, "/node_modules")); /* the directory, not what is in it */
    assert_false(has_path(files, "/node_modules/left-pad"));
    assert_false(has_path(files, "/.git/HEAD"));
    assert_false(has_path(files, "/build/out.o"));
    /* maxDepth 3 by default: src(1)/lib(2)/deep(3) listed, deep/more not */
    assert_true(has_path(files, "/src/lib/deep"));
    assert_false(has_path(files, "/src/lib/deep/more"));
    cJSON_Delete(r);
}

static void explore_exclude_patterns_replace_defaults(void **state)
{
    struct fx *f = *state;
    build_tree(f);
    cJSON *r = fx_ok(
        f, "exploreFiles",
        "{\"path\":\".\",\"recursive\":true,\"maxDepth\":10,\"excludePatterns\":[\"*.js\"]}");
    const cJSON *files = fx_item(r, "files");
    assert_true(has_path(files, "/node_modules/left-pad"));
    assert_true(has_path(files, "/.git/HEAD"));
    assert_false(has_path(files, "/src/app.js"));
    assert_true(has_path(files, "/src/lib/deep/more"));
    cJSON_Delete(r);
    r = fx_ok(f, "exploreFiles",
              "{\"path\":\"src\",\"recursive\":true,\"excludePatterns\":[\"src/lib/**\"]}");
    files = fx_item(r, "files");
    assert_true(has_path(files, "/src/lib"));
    assert_false(has_path(files, "/src/lib/util.js"));
    assert_int_equal((int)fx_num(r, "totalFound"), 2);
    cJSON_Delete(r);
    fx_err(f, "exploreFiles", "{\"path\":\".\",\"excludePatterns\":[\"[abc\"]}", "INVALID_ARGUMENT",
           "invalid_pattern");
}

static void explore_metadata(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/app.js", "12345");
    time_t before = time(NULL);
    cJSON *r = fx_ok(f, "exploreFiles", "{\"path\":\"src\",\"returnMetadata\":true}");
    const cJSON *e = cJSON_GetArrayItem(fx_item(r, "files"), 0);
    assert_string_equal(fx_str(e, "path"), "/src/app.js");
    const cJSON *m = fx_item(e, "metadata");
    assert_string_equal(fx_str(m, "path"), "/src/app.js");
    assert_int_equal((int)fx_num(m, "size"), 5);
    assert_false(fx_bool(m, "isDirectory"));
    const char *iso = fx_str(m, "lastModified");
    assert_int_equal(strlen(iso), 24);
    assert_int_equal(iso[10], 'T');
    assert_int_equal(iso[23], 'Z');
    struct tm tm = {0};
    assert_non_null(strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm));
    assert_true(labs((long)(timegm(&tm) - before)) < 120);
    cJSON_Delete(r);
}

static void explore_truncation_counts_exactly(void **state)
{
    struct fx *f = *state;
    for (int i = 0; i < 12; i++) {
        char p[32];
        snprintf(p, sizeof(p), "d%d/f%d.txt", i % 3, i);
        fx_put(f, p, "x");
    }
    f->ctx.limits.max_explore_entries = 4;
    cJSON *r = fx_ok(f, "exploreFiles", "{\"path\":\".\",\"recursive\":true}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "files")), 4);
    assert_true(fx_bool(r, "isTruncated"));
    assert_int_equal((int)fx_num(r, "totalFound"), 15);
    cJSON_Delete(r);
}

static void explore_errors(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "x");
    fx_err(f, "exploreFiles", "{\"path\":\"a.txt\"}", "INVALID_ARGUMENT", "not_a_directory");
    fx_err(f, "exploreFiles", "{\"path\":\"missing\"}", "FILE_NOT_FOUND", "not_found");
    fx_err(f, "exploreFiles", "{\"path\":\".\",\"maxDepth\":0}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "exploreFiles", "{\"path\":\".\",\"maxDepth\":65}", "INVALID_ARGUMENT", NULL);
}

/* ---- readFile ------------------------------------------------------------------------------- */

static void read_whole_and_ranges(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/app.js", "one\ntwo\nthree\nfour\nfive");
    cJSON *r = fx_ok(f, "readFile", "{\"path\":\"src/app.js\"}");
    assert_string_equal(fx_str(r, "content"), "one\ntwo\nthree\nfour\nfive");
    assert_int_equal((int)fx_num(r, "totalLines"), 5);
    assert_int_equal((int)fx_num(r, "returnedLines"), 5);
    assert_false(fx_bool(r, "isTruncated"));
    const cJSON *m = fx_item(r, "metadata");
    assert_string_equal(fx_str(m, "path"), "/src/app.js");
    assert_int_equal((int)fx_num(m, "size"), 23);
    assert_false(fx_bool(m, "isDirectory"));
    fx_str(m, "lastModified");
    cJSON_Delete(r);
    r = fx_ok(f, "readFile", "{\"path\":\"/src/app.js\",\"startLine\":2,\"endLine\":3}");
    assert_string_equal(fx_str(r, "content"), "two\nthree\n");
    assert_int_equal((int)fx_num(r, "returnedLines"), 2);
    assert_int_equal((int)fx_num(r, "totalLines"), 5);
    cJSON_Delete(r);
    r = fx_ok(f, "readFile", "{\"path\":\"src/app.js\",\"startLine\":4,\"endLine\":99}");
    assert_string_equal(fx_str(r, "content"), "four\nfive");
    assert_int_equal((int)fx_num(r, "returnedLines"), 2);
    cJSON_Delete(r);
    fx_err(f, "readFile", "{\"path\":\"src/app.js\",\"startLine\":9}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "readFile", "{\"path\":\"src/app.js\",\"startLine\":3,\"endLine\":2}", "INVALID_ARGUMENT",
           NULL);
}

static void read_empty_file(void **state)
{
    struct fx *f = *state;
    fx_put(f, "empty", "");
    cJSON *r = fx_ok(f, "readFile", "{\"path\":\"empty\"}");
    assert_string_equal(fx_str(r, "content"), "");
    assert_int_equal((int)fx_num(r, "totalLines"), 0);
    assert_int_equal((int)fx_num(r, "returnedLines"), 0);
    cJSON_Delete(r);
}

/* The size first: a 10 GiB sparse file (all zeros) is SIZE_LIMIT_EXCEEDED by its size, not
 * "binary file" after reading; a huge text file is not read to its end to count its lines. */
static void read_checks_size_before_content(void **state)
{
    struct fx *f = *state;
    fx_put(f, "sparse.bin", "");
    char p[512];
    snprintf(p, sizeof(p), "%s/sparse.bin", f->ws);
    assert_int_equal(truncate(p, (off_t)10 << 30), 0);
    fx_err(f, "readFile", "{\"path\":\"sparse.bin\"}", "SIZE_LIMIT_EXCEEDED", NULL);
    /* within 64 x maxFileSize: read and truncated at the cap as before */
    f->ctx.limits.max_file_size = 4;
    fx_put(f, "small.txt", "ab\ncd\nef\n");
    cJSON *r = fx_ok(f, "readFile", "{\"path\":\"small.txt\"}");
    assert_true(fx_bool(r, "isTruncated"));
    cJSON_Delete(r);
}

static void read_truncates_at_size_limit(void **state)
{
    struct fx *f = *state;
    fx_put(f, "big.txt", "aaaa\nbbbb\ncccc\ndddd\n");
    f->ctx.limits.max_file_size = 12;
    cJSON *r = fx_ok(f, "readFile", "{\"path\":\"big.txt\"}");
    assert_string_equal(fx_str(r, "content"), "aaaa\nbbbb\n"); /* whole lines only */
    assert_true(fx_bool(r, "isTruncated"));
    assert_int_equal((int)fx_num(r, "returnedLines"), 2);
    assert_int_equal((int)fx_num(r, "totalLines"), 4);
    cJSON_Delete(r);
    /* one line longer than the cap: cut at a character boundary, never mid UTF-8 */
    fx_put(f, "long.txt", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\n");
    f->ctx.limits.max_file_size = 5;
    r = fx_ok(f, "readFile", "{\"path\":\"long.txt\"}");
    assert_string_equal(fx_str(r, "content"), "\xc3\xa9\xc3\xa9");
    assert_true(fx_bool(r, "isTruncated"));
    cJSON_Delete(r);
}

static void read_refuses_binary(void **state)
{
    struct fx *f = *state;
    fx_put_bytes(f, "img.png", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
    fx_err(f, "readFile", "{\"path\":\"img.png\"}", "INVALID_ARGUMENT", "binary_file");
    fx_put_bytes(f, "latin1.txt", "caf\xe9\n", 5);
    fx_err(f, "readFile", "{\"path\":\"latin1.txt\"}", "INVALID_ARGUMENT", "binary_file");
    fx_put(f, "utf8.txt", "caf\xc3\xa9\n");
    cJSON_Delete(fx_ok(f, "readFile", "{\"path\":\"utf8.txt\"}"));
}

static void read_errors(void **state)
{
    struct fx *f = *state;
    fx_put(f, "dir/a", "x");
    fx_err(f, "readFile", "{\"path\":\"dir\"}", "INVALID_ARGUMENT", "is_directory");
    fx_err(f, "readFile", "{\"path\":\"nope.txt\"}", "FILE_NOT_FOUND", "not_found");
    fx_err(f, "readFile", "{\"path\":\"dir/a/b\"}", "INVALID_ARGUMENT", "not_a_directory");
    fx_err(f, "readFile", "{\"path\":\"\"}", "INVALID_ARGUMENT", "is_directory");
}

/* ---- writeFile ------------------------------------------------------------------------------ */

static void write_modes(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"hello\\n\"}");
    assert_true(fx_bool(r, "success"));
    assert_string_equal(fx_str(r, "path"), "/a.txt");
    assert_int_equal((int)fx_num(r, "bytesWritten"), 6);
    cJSON_Delete(r);
    r = fx_ok(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"more\\n\",\"mode\":\"append\"}");
    assert_int_equal((int)fx_num(r, "bytesWritten"), 5);
    cJSON_Delete(r);
    char *c = fx_get(f, "a.txt");
    assert_string_equal(c, "hello\nmore\n");
    free(c);
    cJSON_Delete(
        fx_ok(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"new\",\"mode\":\"overwrite\"}"));
    c = fx_get(f, "a.txt");
    assert_string_equal(c, "new");
    free(c);
    fx_err(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"x\",\"mode\":\"create\"}",
           "INVALID_ARGUMENT", "file_exists");
    cJSON_Delete(fx_ok(f, "writeFile", "{\"path\":\"b.txt\",\"content\":\"b\",\"mode\":\"create\"}"));
    cJSON_Delete(fx_ok(f, "writeFile", "{\"path\":\"c.log\",\"content\":\"c\",\"mode\":\"append\"}"));
    c = fx_get(f, "c.log");
    assert_string_equal(c, "c");
    free(c);
}

static void write_keeps_mode_and_creates_dirs(void **state)
{
    struct fx *f = *state;
    fx_put(f, "run.sh", "#!/bin/sh\n");
    char p[256];
    snprintf(p, sizeof(p), "%s/run.sh", f->ws);
    chmod(p, 0751);
    cJSON_Delete(fx_ok(f, "writeFile", "{\"path\":\"run.sh\",\"content\":\"#!/bin/sh\\necho\\n\"}"));
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0751);
    fx_err(f, "writeFile", "{\"path\":\"src/utils/helper.js\",\"content\":\"x\"}", "FILE_NOT_FOUND",
           NULL);
    cJSON *r = fx_ok(f, "writeFile",
                     "{\"path\":\"src/utils/helper.js\",\"content\":\"function helper() { return true; "
                     "}\",\"createDirectories\":true}");
    assert_string_equal(fx_str(r, "path"), "/src/utils/helper.js");
    cJSON_Delete(r);
    char *c = fx_get(f, "src/utils/helper.js");
    assert_string_equal(c, "function helper() { return true; }");
    free(c);
    snprintf(p, sizeof(p), "%s/src/utils/helper.js", f->ws);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
}

static void write_limits_and_read_only(void **state)
{
    struct fx *f = *state;
    f->ctx.limits.max_file_size = 8;
    fx_err(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"123456789\"}", "SIZE_LIMIT_EXCEEDED",
           "too_large");
    cJSON_Delete(fx_ok(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"12345\"}"));
    fx_err(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"6789\",\"mode\":\"append\"}",
           "SIZE_LIMIT_EXCEEDED", NULL);
    f->ctx.read_only = true;
    fx_err(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"x\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "modifyFile",
           "{\"path\":\"a.txt\",\"operations\":[{\"type\":\"delete\",\"startLine\":1,\"endLine\":1}]}",
           "PERMISSION_DENIED", NULL);
    char *c = fx_get(f, "a.txt");
    assert_string_equal(c, "12345");
    free(c);
    fx_err(f, "writeFile", "{\"path\":\".\",\"content\":\"x\"}", "PERMISSION_DENIED", NULL);
}

/* ---- modifyFile ----------------------------------------------------------------------------- */

static void modify_lines(void **state)
{
    struct fx *f = *state;
    fx_put(f, "f.txt", "1\n2\n3\n4\n5\n");
    cJSON *r = fx_ok(
        f, "modifyFile",
        "{\"path\":\"f.txt\",\"operations\":["
        "{\"type\":\"replace\",\"startLine\":2,\"endLine\":3,\"newContent\":\"two\\nthree\\nthree-b\"},"
        "{\"type\":\"insert\",\"afterLine\":0,\"newContent\":\"zero\"},"
        "{\"type\":\"delete\",\"startLine\":6,\"endLine\":6}]}");
    assert_true(fx_bool(r, "success"));
    assert_string_equal(fx_str(r, "path"), "/f.txt");
    cJSON_Delete(r);
    char *c = fx_get(f, "f.txt");
    assert_string_equal(c, "zero\n1\ntwo\nthree\nthree-b\n5\n");
    free(c);
    /* insert after the last line of a file without a final newline */
    fx_put(f, "g.txt", "a\nb");
    cJSON_Delete(fx_ok(f, "modifyFile",
                       "{\"path\":\"g.txt\",\"operations\":[{\"type\":\"insert\",\"afterLine\":2,"
                       "\"newContent\":\"c\"}]}"));
    c = fx_get(f, "g.txt");
    assert_string_equal(c, "a\nb\nc\n");
    free(c);
}

static void modify_regex_replace(void **state)
{
    struct fx *f = *state;
    fx_put(f, "client.js", "oldAPI.method(a);\noldAPI.method(b, c);\nOLDAPI.method(d);\n");
    cJSON_Delete(fx_ok(f, "modifyFile",
                       "{\"path\":\"client.js\",\"operations\":[{\"type\":\"regexReplace\","
                       "\"pattern\":\"oldAPI\\\\.method\\\\(([^)]+)\\\\)\",\"replacement\":\"newAPI."
                       "improvedMethod($1)\",\"flags\":\"g\"}]}"));
    char *c = fx_get(f, "client.js");
    assert_string_equal(c,
                        "newAPI.improvedMethod(a);\nnewAPI.improvedMethod(b, c);\nOLDAPI.method(d);\n");
    free(c);
    /* without g: the first only; i: case-insensitive; $& and $$ */
    fx_put(f, "x.txt", "cat Cat cat\n");
    cJSON_Delete(
        fx_ok(f, "modifyFile",
              "{\"path\":\"x.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"CAT\","
              "\"replacement\":\"[$&$$]\",\"flags\":\"i\"}]}"));
    c = fx_get(f, "x.txt");
    assert_string_equal(c, "[cat$] Cat cat\n");
    free(c);
    /* m: ^ at every line */
    fx_put(f, "m.txt", "a\nb\n");
    cJSON_Delete(
        fx_ok(f, "modifyFile",
              "{\"path\":\"m.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"^\","
              "\"replacement\":\"> \",\"flags\":\"gm\"}]}"));
    c = fx_get(f, "m.txt");
    assert_string_equal(c, "> a\n> b\n> ");
    free(c);
}

static void modify_all_or_none(void **state)
{
    struct fx *f = *state;
    fx_put(f, "f.txt", "1\n2\n3\n");
    fx_err(f, "modifyFile",
           "{\"path\":\"f.txt\",\"operations\":["
           "{\"type\":\"replace\",\"startLine\":1,\"endLine\":1,\"newContent\":\"one\"},"
           "{\"type\":\"delete\",\"startLine\":3,\"endLine\":9}]}",
           "INVALID_ARGUMENT", "invalid_argument");
    char *c = fx_get(f, "f.txt");
    assert_string_equal(c, "1\n2\n3\n");
    free(c);
    fx_err(f, "modifyFile",
           "{\"path\":\"f.txt\",\"operations\":["
           "{\"type\":\"insert\",\"afterLine\":1,\"newContent\":\"x\"},"
           "{\"type\":\"regexReplace\",\"pattern\":\"nothing-like-this\",\"replacement\":\"y\"}]}",
           "INVALID_ARGUMENT", "no_match");
    c = fx_get(f, "f.txt");
    assert_string_equal(c, "1\n2\n3\n");
    free(c);
}

static void modify_hostile_regex_stops(void **state)
{
    struct fx *f = *state;
    char line[4096];
    memset(line, 'a', 4000);
    strcpy(line + 4000, "!\n");
    fx_put(f, "a.txt", line);
    fx_err(f, "modifyFile",
           "{\"path\":\"a.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"^(a|a)+$\","
           "\"replacement\":\"x\"}]}",
           "INVALID_ARGUMENT", "regex_limit");
    fx_err(f, "searchFiles", "{\"paths\":[\"a.txt\"],\"query\":\"(a|aa)+$\",\"type\":\"regex\"}",
           "INVALID_ARGUMENT", "regex_limit");
    fx_err(f, "modifyFile",
           "{\"path\":\"a.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"(unclosed\","
           "\"replacement\":\"x\"}]}",
           "INVALID_ARGUMENT", "invalid_pattern");
    fx_err(f, "modifyFile",
           "{\"path\":\"a.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"a\","
           "\"replacement\":\"x\",\"flags\":\"gq\"}]}",
           "INVALID_ARGUMENT", NULL);
}

static void modify_errors(void **state)
{
    struct fx *f = *state;
    fx_err(
        f, "modifyFile",
        "{\"path\":\"none.txt\",\"operations\":[{\"type\":\"delete\",\"startLine\":1,\"endLine\":1}]}",
        "FILE_NOT_FOUND", NULL);
    fx_put(f, "a.txt", "abc\n");
    f->ctx.limits.max_file_size = 10;
    fx_err(f, "modifyFile",
           "{\"path\":\"a.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"b\","
           "\"replacement\":\"0123456789\"}]}",
           "SIZE_LIMIT_EXCEEDED", NULL);
    /* a replacement that would explode is refused before its size is allocated */
    f->ctx.limits.max_file_size = 1 << 20;
    char *big = calloc(1, 1 << 19);
    memset(big, 'a', (1 << 19) - 2);
    big[(1 << 19) - 2] = '\n';
    fx_put(f, "many.txt", big);
    free(big);
    fx_err(f, "modifyFile",
           "{\"path\":\"many.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"a\","
           "\"replacement\":\"$&$&$&$&$&$&$&$&$&$&$&$&$&$&$&$&\",\"flags\":\"g\"}]}",
           "SIZE_LIMIT_EXCEEDED", "too_large");
    fx_put_bytes(f, "bin", "a\0b\n", 4);
    fx_err(f, "modifyFile",
           "{\"path\":\"bin\",\"operations\":[{\"type\":\"delete\",\"startLine\":1,\"endLine\":1}]}",
           "INVALID_ARGUMENT", "binary_file");
}

/* ---- searchFiles ---------------------------------------------------------------------------- */

static void search_literal_with_context(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/a.js", "l1\nl2\n// TODO: fix\nl4\nl5\n");
    fx_put(f, "src/sub/b.js", "TODO: x TODO: y\n");
    fx_put(f, "node_modules/m.js", "TODO: hidden\n");
    fx_put_bytes(f, "src/bin.dat", "TODO:\0", 6);
    cJSON *r = fx_ok(f, "searchFiles",
                     "{\"paths\":[\"src\"],\"query\":\"TODO:\",\"type\":\"literal\",\"recursive\":true,"
                     "\"excludePatterns\":[\"**/node_modules/**\"],\"contextLines\":2}");
    const cJSON *m = fx_item(r, "matches");
    assert_int_equal(cJSON_GetArraySize(m), 2);
    assert_int_equal((int)fx_num(r, "totalMatches"), 2);
    assert_false(fx_bool(r, "isTruncated"));
    const cJSON *m0 = cJSON_GetArrayItem(m, 0);
    assert_string_equal(fx_str(m0, "path"), "/src/a.js");
    assert_int_equal((int)fx_num(m0, "line"), 3);
    assert_string_equal(fx_str(m0, "matchText"), "// TODO: fix");
    const cJSON *cb = fx_item(m0, "contextBefore"), *ca = fx_item(m0, "contextAfter");
    assert_int_equal(cJSON_GetArraySize(cb), 2);
    assert_string_equal(cJSON_GetArrayItem(cb, 0)->valuestring, "l1");
    assert_string_equal(cJSON_GetArrayItem(cb, 1)->valuestring, "l2");
    assert_int_equal(cJSON_GetArraySize(ca), 2);
    assert_string_equal(cJSON_GetArrayItem(ca, 1)->valuestring, "l5");
    const cJSON *m1 = cJSON_GetArrayItem(m, 1);
    assert_string_equal(fx_str(m1, "path"), "/src/sub/b.js");
    assert_int_equal(cJSON_GetArraySize(fx_item(m1, "contextBefore")), 0);
    cJSON_Delete(r);
    /* non-recursive: only src itself */
    r = fx_ok(f, "searchFiles", "{\"paths\":[\"src\"],\"query\":\"TODO:\",\"type\":\"literal\"}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 1);
    cJSON_Delete(r);
    /* literal means literal: regex characters match themselves */
    fx_put(f, "re.txt", "a.c\nabc\n");
    r = fx_ok(f, "searchFiles", "{\"paths\":[\"re.txt\"],\"query\":\"a.c\",\"type\":\"literal\"}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 1);
    cJSON_Delete(r);
}

static void search_regex_and_default_exclusions(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/api/c.js", "api.get(1)\napi.post(2)\napi.patch(3)\n");
    fx_put(f, "dist/bundle.js", "api.get(9)\n");
    fx_put(f, "vendor/x.js", "api.get(9)\n");
    cJSON *r = fx_ok(f, "searchFiles",
                     "{\"paths\":[\".\"],\"query\":\"api\\\\.(get|post|put|delete)\\\\(\",\"type\":"
                     "\"regex\",\"recursive\":true}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 2);
    cJSON_Delete(r);
    r = fx_ok(f, "searchFiles",
              "{\"paths\":[\".\"],\"query\":\"^api\\\\.get\",\"type\":\"regex\",\"recursive\":true,"
              "\"excludePatterns\":[]}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 3);
    cJSON_Delete(r);
    /* a match never spans lines */
    r = fx_ok(
        f, "searchFiles",
        "{\"paths\":[\"src\"],\"query\":\"1\\\\)\\\\s+api\",\"type\":\"regex\",\"recursive\":true}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 0);
    cJSON_Delete(r);
    fx_err(f, "searchFiles", "{\"paths\":[\".\"],\"query\":\"(\",\"type\":\"regex\"}",
           "INVALID_ARGUMENT", "invalid_pattern");
    fx_err(f, "searchFiles", "{\"paths\":[\"nope\"],\"query\":\"x\",\"type\":\"regex\"}",
           "FILE_NOT_FOUND", NULL);
    fx_err(f, "searchFiles", "{\"paths\":[],\"query\":\"x\",\"type\":\"regex\"}", "INVALID_ARGUMENT",
           NULL);
    fx_err(f, "searchFiles", "{\"paths\":[\".\"],\"query\":\"\",\"type\":\"regex\"}", "INVALID_ARGUMENT",
           NULL);
}

static void search_empty_matches_count_lines(void **state)
{
    struct fx *f = *state;
    fx_put(f, "two.txt", "a\nb\n");
    fx_put(f, "open.txt", "abc");
    fx_put(f, "empty.txt", "");
    cJSON *r = fx_ok(f, "searchFiles", "{\"paths\":[\"two.txt\"],\"query\":\"x*\",\"type\":\"regex\"}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 2); /* like grep: two lines, no phantom third */
    cJSON_Delete(r);
    r = fx_ok(f, "searchFiles", "{\"paths\":[\"open.txt\"],\"query\":\"$\",\"type\":\"regex\"}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(fx_item(r, "matches"), 0), "matchText"), "abc");
    cJSON_Delete(r);
    r = fx_ok(f, "searchFiles", "{\"paths\":[\"empty.txt\"],\"query\":\"^\",\"type\":\"regex\"}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 0);
    cJSON_Delete(r);
}

static void search_truncation_counts_exactly(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "hit\nhit\nmiss\nhit\n");
    fx_put(f, "b.txt", "hit hit\n");
    f->ctx.limits.max_search_results = 2;
    cJSON *r = fx_ok(f, "searchFiles", "{\"paths\":[\".\"],\"query\":\"hit\",\"type\":\"literal\"}");
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "matches")), 2);
    assert_int_equal((int)fx_num(r, "totalMatches"), 4);
    assert_true(fx_bool(r, "isTruncated"));
    cJSON_Delete(r);
}

static void search_many_files_in_walk_order(void **state)
{
    struct fx *f = *state;
    /* More files than the search queue holds, so the workers and the merge both cycle. */
    for (int i = 0; i < 400; i++) {
        char p[64], c[64];
        snprintf(p, sizeof(p), "d%02d/f%03d.txt", i % 7, i);
        snprintf(c, sizeof(c), "x\nneedle %d\ny\n", i);
        fx_put(f, p, c);
    }
    f->ctx.limits.max_search_results = 1000;
    cJSON *r = fx_ok(f, "searchFiles",
                     "{\"paths\":[\".\"],\"query\":\"needle "
                     "\\\\d+\",\"type\":\"regex\",\"recursive\":true,\"contextLines\":1}");
    const cJSON *m = fx_item(r, "matches");
    assert_int_equal(cJSON_GetArraySize(m), 400);
    assert_int_equal((int)fx_num(r, "totalMatches"), 400);
    char prev[64] = "";
    for (const cJSON *it = m->child; it; it = it->next) {
        const char *p = fx_str(it, "path");
        assert_true(strcmp(prev, p) < 0); /* sorted walk order, each file once */
        snprintf(prev, sizeof(prev), "%s", p);
        assert_int_equal((int)fx_num(it, "line"), 2);
        assert_string_equal(cJSON_GetArrayItem(fx_item(it, "contextBefore"), 0)->valuestring, "x");
    }
    cJSON_Delete(r);
    f->ctx.limits.max_search_results = 5;
    r = fx_ok(f, "searchFiles",
              "{\"paths\":[\".\"],\"query\":\"needle\",\"type\":\"literal\",\"recursive\":true}");
    m = fx_item(r, "matches");
    assert_int_equal(cJSON_GetArraySize(m), 5);
    assert_int_equal((int)fx_num(r, "totalMatches"), 400);
    assert_true(fx_bool(r, "isTruncated"));
    assert_string_equal(fx_str(cJSON_GetArrayItem(m, 0), "path"), "/d00/f000.txt");
    assert_string_equal(fx_str(cJSON_GetArrayItem(m, 1), "path"), "/d00/f007.txt");
    cJSON_Delete(r);
}

/* ---- getWorkspaceInfo ----------------------------------------------------------------------- */

static void workspace_info(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "getWorkspaceInfo", "{}");
    assert_string_equal(fx_str(r, "root"), "/");
    const cJSON *ex = fx_item(r, "defaultExclusions");
    assert_int_equal(cJSON_GetArraySize(ex), 8);
    assert_string_equal(cJSON_GetArrayItem(ex, 0)->valuestring, "**/node_modules/**");
    assert_string_equal(cJSON_GetArrayItem(ex, 7)->valuestring, "**/vendor/**");
    const cJSON *l = fx_item(r, "limits");
    assert_int_equal((int)fx_num(l, "maxFileSize"), 1048576);
    assert_int_equal((int)fx_num(l, "maxDirectoryEntries"), 500);
    assert_int_equal((int)fx_num(l, "maxSearchResults"), 100);
    assert_int_equal((int)fx_num(l, "maxOutputSize"), 1048576);
    assert_int_equal(cJSON_GetArraySize(l), 4);
    assert_int_equal(cJSON_GetArraySize(r), 3);
    cJSON_Delete(r);
    cJSON_Delete(fx_ok(f, "getWorkspaceInfo", NULL));
    fx_err(f, "getWorkspaceInfo", "{\"x\":1}", "INVALID_ARGUMENT", NULL);
}

static void execute_command_denied_without_role(void **state)
{
    struct fx *f = *state;
    f->ctx.allow_commands = false;
    fx_err(f, "executeCommand", "{\"command\":\"true\"}", "PERMISSION_DENIED", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TEST(list_has_seven_tools_with_schemas),
        FX_TEST(unknown_tool_is_enoent),
        FX_TEST(wrong_types_name_the_field),
        FX_TEST(explore_flat_sorted),
        FX_TEST(explore_recursive_default_exclusions),
        FX_TEST(explore_exclude_patterns_replace_defaults),
        FX_TEST(explore_metadata),
        FX_TEST(explore_truncation_counts_exactly),
        FX_TEST(explore_errors),
        FX_TEST(read_whole_and_ranges),
        FX_TEST(read_empty_file),
        FX_TEST(read_truncates_at_size_limit),
        FX_TEST(read_checks_size_before_content),
        FX_TEST(read_refuses_binary),
        FX_TEST(read_errors),
        FX_TEST(write_modes),
        FX_TEST(write_keeps_mode_and_creates_dirs),
        FX_TEST(write_limits_and_read_only),
        FX_TEST(modify_lines),
        FX_TEST(modify_regex_replace),
        FX_TEST(modify_all_or_none),
        FX_TEST(modify_hostile_regex_stops),
        FX_TEST(modify_errors),
        FX_TEST(search_literal_with_context),
        FX_TEST(search_regex_and_default_exclusions),
        FX_TEST(search_empty_matches_count_lines),
        FX_TEST(search_truncation_counts_exactly),
        FX_TEST(search_many_files_in_walk_order),
        FX_TEST(workspace_info),
        FX_TEST(execute_command_denied_without_role),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
