/* tests/unit/test_voltagent.c: the VoltAgent surface's filesystem and sandbox toolkits through
 * the surface's own call, on real files: upstream's texts and messages, the path rule, read-only
 * mode, read-before-write (a change behind the agent's back included), needs_approval, and the
 * denial rules. */
#include "wap_fixture.h"

#include "tools/session.h"
#include "tools/voltagent/voltagent.h"

struct vfx {
    struct fx *f;
    struct tool_session *session;
    struct tool_rule rules[4];
};

static int v_setup(void **state)
{
    if (fx_setup(state) < 0)
        return -1;
    struct fx *f = *state;
    f->s = tool_surface_find("voltagent");
    if (!f->s || tool_session_new(&f->ctx.session) < 0)
        return -1;
    return 0;
}

static int v_teardown(void **state)
{
    struct fx *f = *state;
    tool_session_free(f->ctx.session);
    return fx_teardown(state);
}

#define VT(fn) cmocka_unit_test_setup_teardown(fn, v_setup, v_teardown)

/* The success text of TOOL(ARGS). */
static char *out_of(struct fx *f, const char *tool, const char *args)
{
    cJSON *r = fx_ok(f, tool, args);
    char *s = strdup(fx_str(r, "output"));
    cJSON_Delete(r);
    return s;
}

static void expect_out(struct fx *f, const char *tool, const char *args, const char *want)
{
    char *s = out_of(f, tool, args);
    if (strcmp(s, want)) {
        print_error("%s(%s):\nwant [%s]\ngot  [%s]\n", tool, args, want, s);
        free(s);
        fail();
    }
    free(s);
}

/* Expects an error with CODE whose text starts with PREFIX (NULL: any). */
static void expect_err(struct fx *f, const char *tool, const char *args, const char *code,
                       const char *prefix)
{
    bool err;
    cJSON *r = fx_call(f, tool, args, &err);
    char *t = cJSON_PrintUnformatted(r);
    const cJSON *c = cJSON_GetObjectItem(r, "code"), *m = cJSON_GetObjectItem(r, "error");
    if (!err || !cJSON_IsString(c) || strcmp(c->valuestring, code) || !cJSON_IsString(m) ||
        (prefix && strncmp(m->valuestring, prefix, strlen(prefix)))) {
        print_error("%s(%s): want %s [%s...], got %s\n", tool, args, code, prefix ? prefix : "", t);
        free(t);
        fail();
    }
    free(t);
    cJSON_Delete(r);
}

static void set_rule(struct fx *f, struct tool_rule *rules, size_t n)
{
    f->ctx.rules = rules;
    f->ctx.n_rules = n;
}

/* ---- registry and error shape --------------------------------------------------------------- */

static void lists_the_toolkits_in_order(void **state)
{
    struct fx *f = *state;
    f->ctx.allow_commands = true;
    cJSON *arr = tool_surface_list(f->s, &f->ctx);
    const char *names[] = {"ls",   "read_file", "write_file",     "edit_file", "delete_file",
                           "stat", "mkdir",     "rmdir",          "list_tree", "list_files",
                           "glob", "grep",      "execute_command"};
    assert_true(cJSON_GetArraySize(arr) >= 13);
    for (int i = 0; i < 13; i++)
        assert_string_equal(fx_str(cJSON_GetArrayItem(arr, i), "name"), names[i]);
    const cJSON *edit = fx_item(cJSON_GetArrayItem(arr, 3), "inputSchema");
    const cJSON *props = fx_item(edit, "properties");
    fx_item(props, "file_path");
    fx_item(props, "old_string");
    fx_item(props, "new_string");
    fx_item(props, "replace_all");
    assert_int_equal(cJSON_GetArraySize(fx_item(edit, "required")), 3);
    cJSON_Delete(arr);

    /* read-only mode and no command authority hide what upstream hides */
    f->ctx.read_only = true;
    f->ctx.allow_commands = false;
    arr = tool_surface_list(f->s, &f->ctx);
    for (const cJSON *t = arr->child; t; t = t->next) {
        const char *n = fx_str(t, "name");
        assert_true(strcmp(n, "write_file") && strcmp(n, "edit_file") && strcmp(n, "delete_file") &&
                    strcmp(n, "mkdir") && strcmp(n, "rmdir") && strcmp(n, "execute_command"));
    }
    cJSON_Delete(arr);
    /* a disabled tool is not listed either */
    f->ctx.read_only = false;
    struct tool_rule r = {.name = "grep", .enabled = false};
    set_rule(f, &r, 1);
    arr = tool_surface_list(f->s, &f->ctx);
    for (const cJSON *t = arr->child; t; t = t->next)
        assert_string_not_equal(fx_str(t, "name"), "grep");
    cJSON_Delete(arr);
}

static void unknown_tool_and_bad_arguments(void **state)
{
    struct fx *f = *state;
    cJSON *res = NULL;
    bool err = false;
    assert_int_equal(tool_surface_call(f->s, &f->ctx, "format_disk", NULL, &res, &err), -ENOENT);
    assert_null(res);
    expect_err(f, "read_file", "{}", "invalid_argument", "Error: file_path is required");
    expect_err(f, "read_file", "{\"file_path\":7}", "invalid_argument",
               "Error: file_path must be a string");
    expect_err(f, "read_file", "{\"filepath\":\"/a\"}", "invalid_argument",
               "Error: read_file takes no argument");
    expect_err(f, "read_file", "{\"file_path\":\"/a\",\"offset\":-1}", "invalid_argument", NULL);
    expect_err(f, "read_file", "{\"file_path\":\"/a\",\"limit\":\"x\"}", "invalid_argument", NULL);
    expect_err(f, "write_file", "{\"file_path\":\"/a\",\"content\":\"x\",\"overwrite\":\"yes\"}",
               "invalid_argument", NULL);
    expect_err(f, "list_tree", "{\"max_depth\":0}", "invalid_argument", NULL);
    /* z.coerce.number: a numeric string is a number */
    fx_put(f, "n.txt", "a\nb\nc\n");
    expect_out(f, "read_file", "{\"file_path\":\"/n.txt\",\"offset\":\"1\",\"limit\":\"1\"}",
               "     2\tb");
}

static void error_shape_and_denials(void **state)
{
    struct fx *f = *state;
    struct broker_err e = {0};
    broker_fail(&e, BROKER_E_NOT_FOUND, "path", "/x does not exist");
    cJSON *r = voltagent_error(&e);
    assert_string_equal(fx_str(r, "error"), "Error: /x does not exist");
    assert_string_equal(fx_str(r, "code"), "not_found");
    assert_null(f->s->denial(r));
    cJSON_Delete(r);
    const char *refusals[] = {
        "denied",          VOLTAGENT_E_TRAVERSAL, VOLTAGENT_E_READ_ONLY, VOLTAGENT_E_READ_FIRST,
        VOLTAGENT_E_STALE, VOLTAGENT_E_APPROVAL,  VOLTAGENT_E_COMMANDS,  VOLTAGENT_E_SYMLINK};
    for (size_t i = 0; i < ARRAY_SIZE(refusals); i++) {
        r = voltagent_error_text(refusals[i], "x");
        assert_non_null(f->s->denial(r));
        cJSON_Delete(r);
    }
    r = voltagent_error_text("no_match", "x");
    assert_null(f->s->denial(r));
    cJSON_Delete(r);
}

/* ---- paths ---------------------------------------------------------------------------------- */

static void path_rule(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "a\n");
    expect_err(f, "read_file", "{\"file_path\":\"a.txt\"}", "invalid_argument",
               "Error: file_path must be a workspace path starting with '/'");
    expect_err(f, "read_file", "{\"file_path\":\"\"}", "invalid_argument", NULL);
    const char *bad[] = {"/../outside/x", "/sub/../../x", "/..",  "/a/..",
                         "~/x",           "/~root/x",     "/a/~", "/..\\\\x"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        char args[128];
        snprintf(args, sizeof(args), "{\"file_path\":\"%s\"}", bad[i]);
        expect_err(f, "read_file", args, VOLTAGENT_E_TRAVERSAL, "Error: Path traversal is not allowed");
    }
    /* names that only look like it are fine */
    fx_put(f, "..x/a..b", "ok\n");
    expect_out(f, "read_file", "{\"file_path\":\"/..x/a..b\"}", "     1\tok");
    expect_err(f, "ls", "{\"path\":\"/..\"}", VOLTAGENT_E_TRAVERSAL, NULL);
    expect_err(f, "glob", "{\"pattern\":\"../**\"}", VOLTAGENT_E_TRAVERSAL, NULL);
    expect_err(f, "grep", "{\"pattern\":\"x\",\"glob\":\"~/*\"}", VOLTAGENT_E_TRAVERSAL, NULL);
    expect_err(f, "write_file", "{\"file_path\":\"/../w\",\"content\":\"x\"}", VOLTAGENT_E_TRAVERSAL,
               NULL);
    /* an absolute host path is a workspace path: not found inside */
    char args[256];
    snprintf(args, sizeof(args), "{\"file_path\":\"%s/secret\"}", f->out);
    fx_put_bytes(f, "../outside/secret", "S", 1);
    expect_err(f, "read_file", args, "not_found", "Error: File '");
    /* a symlink out is refused by the broker's containment */
    char link[256];
    snprintf(link, sizeof(link), "%s/out", f->ws);
    assert_int_equal(symlink(f->out, link), 0);
    expect_err(f, "read_file", "{\"file_path\":\"/out/secret\"}", "denied", "Error: ");
    /* a final symlink out: still the broker's containment denial, not the symlink rule */
    snprintf(link, sizeof(link), "%s/secret_link", f->ws);
    char target[256];
    snprintf(target, sizeof(target), "%s/secret", f->out);
    assert_int_equal(symlink(target, link), 0);
    expect_err(f, "read_file", "{\"file_path\":\"/secret_link\"}", "denied", "Error: ");
    expect_err(f, "write_file", "{\"file_path\":\"/secret_link\",\"content\":\"x\",\"overwrite\":true}",
               "denied", NULL);
    expect_err(f, "delete_file", "{\"file_path\":\"/secret_link\"}", "denied", NULL);
}

/* Upstream refuses symlinks that stay inside too, each tool with its own message. */
static void symlinks_inside_are_refused(void **state)
{
    struct fx *f = *state;
    fx_put(f, "real.txt", "real\n");
    fx_put(f, "dir/x", "x");
    char link[256];
    snprintf(link, sizeof(link), "%s/l.txt", f->ws);
    assert_int_equal(symlink("real.txt", link), 0);
    snprintf(link, sizeof(link), "%s/ldir", f->ws);
    assert_int_equal(symlink("dir", link), 0);
    expect_err(f, "read_file", "{\"file_path\":\"/l.txt\"}", VOLTAGENT_E_SYMLINK,
               "Error: Symlinks are not allowed: /l.txt");
    expect_err(f, "write_file", "{\"file_path\":\"/l.txt\",\"content\":\"x\",\"overwrite\":true}",
               VOLTAGENT_E_SYMLINK,
               "Cannot write to /l.txt because it is a symlink. Symlinks are not allowed.");
    expect_err(f, "edit_file", "{\"file_path\":\"/l.txt\",\"old_string\":\"real\",\"new_string\":\"x\"}",
               VOLTAGENT_E_SYMLINK, "Error: Symlinks are not allowed: /l.txt");
    expect_err(f, "delete_file", "{\"file_path\":\"/ldir\",\"recursive\":true}", VOLTAGENT_E_SYMLINK,
               NULL);
    expect_err(f, "rmdir", "{\"path\":\"/ldir\",\"recursive\":true}", VOLTAGENT_E_SYMLINK, NULL);
    expect_err(f, "mkdir", "{\"path\":\"/ldir\"}", VOLTAGENT_E_SYMLINK,
               "Cannot create directory '/ldir' because it is a symlink.");
    /* nothing behind the links was touched */
    char *c = fx_get(f, "real.txt");
    assert_string_equal(c, "real\n");
    free(c);
    c = fx_get(f, "dir/x");
    assert_string_equal(c, "x");
    free(c);
    /* a directory symlink in the middle of a path is followed (it stays inside) */
    expect_out(f, "read_file", "{\"file_path\":\"/ldir/x\"}", "     1\tx");
}

/* ---- the tools ------------------------------------------------------------------------------ */

static void ls_and_stat(void **state)
{
    struct fx *f = *state;
    expect_out(f, "ls", NULL, "No files found");
    fx_put(f, "b.txt", "hello");
    fx_put(f, "empty", "");
    fx_put(f, "src/a.c", "int x;\n");
    char link[256];
    snprintf(link, sizeof(link), "%s/lnk", f->ws);
    assert_int_equal(symlink("b.txt", link), 0);
    expect_out(f, "ls", "{}", "/b.txt (5 bytes)\n/empty\n/src/ (directory)");
    cJSON *r = fx_ok(f, "ls", "{\"path\":\"/src\"}");
    assert_string_equal(fx_str(r, "output"), "/src/a.c (7 bytes)");
    const cJSON *e0 = cJSON_GetArrayItem(fx_item(r, "entries"), 0);
    assert_string_equal(fx_str(e0, "path"), "/src/a.c");
    assert_false(fx_bool(e0, "is_dir"));
    assert_int_equal((int)fx_num(e0, "size"), 7);
    assert_int_equal(strlen(fx_str(e0, "modified_at")), 24);
    cJSON_Delete(r);
    expect_err(f, "ls", "{\"path\":\"/nope\"}", "not_found", NULL);

    r = fx_ok(f, "stat", "{\"path\":\"/b.txt\"}");
    const char *o = fx_str(r, "output");
    assert_true(!strncmp(o, "path: /b.txt\ntype: file\nsize: 5 bytes\nmodified_at: 20", 53));
    assert_true(fx_bool(r, "exists"));
    cJSON_Delete(r);
    r = fx_ok(f, "stat", "{\"path\":\"/src\"}");
    assert_true(!strncmp(fx_str(r, "output"), "path: /src/\ntype: directory\nmodified_at: ", 41));
    cJSON_Delete(r);
    r = fx_ok(f, "stat", "{\"path\":\"/ghost\"}");
    assert_string_equal(fx_str(r, "output"), "No file or directory found at '/ghost'");
    assert_false(fx_bool(r, "exists"));
    cJSON_Delete(r);
}

static void read_file_formats_as_upstream(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "one\ntwo\nthree\n");
    expect_out(f, "read_file", "{\"file_path\":\"/a.txt\"}", "     1\tone\n     2\ttwo\n     3\tthree");
    expect_out(f, "read_file", "{\"file_path\":\"/a.txt\",\"offset\":1,\"limit\":1}", "     2\ttwo");
    expect_err(f, "read_file", "{\"file_path\":\"/a.txt\",\"offset\":7}", "invalid_argument",
               "Error: Line offset 7 exceeds file length (3 lines)");
    fx_put(f, "blank.txt", "  \n\n");
    expect_out(f, "read_file", "{\"file_path\":\"/blank.txt\"}",
               "System reminder: File exists but has empty contents");
    fx_put(f, "zero.txt", "");
    expect_out(f, "read_file", "{\"file_path\":\"/zero.txt\"}",
               "System reminder: File exists but has empty contents");
    expect_err(f, "read_file", "{\"file_path\":\"/missing\"}", "not_found",
               "Error: File '/missing' not found");
    expect_err(f, "read_file", "{\"file_path\":\"/missing\",\"limit\":0}", "not_found", NULL);
    expect_out(f, "read_file", "{\"file_path\":\"/a.txt\",\"limit\":0}", "");
    fx_put(f, "d/x", "x");
    expect_err(f, "read_file", "{\"file_path\":\"/d\"}", "is_directory", "Error: File '/d' not found");
    fx_put_bytes(f, "bin", "a\0b", 3);
    expect_err(f, "read_file", "{\"file_path\":\"/bin\"}", "binary_file", "Error: ");
    /* a line over 10000 bytes comes in numbered chunks */
    char *big = malloc(25002);
    memset(big, 'z', 25000);
    strcpy(big + 25000, "\n");
    fx_put(f, "long.txt", big);
    free(big);
    char *s = out_of(f, "read_file", "{\"file_path\":\"/long.txt\"}");
    assert_true(!strncmp(s, "     1\tzzz", 10));
    assert_non_null(strstr(s, "\n   1.1\tzzz"));
    assert_non_null(strstr(s, "\n   1.2\tzzz"));
    assert_null(strstr(s, "1.3"));
    free(s);
}

static void write_file(void **state)
{
    struct fx *f = *state;
    expect_out(f, "write_file", "{\"file_path\":\"/new/deep/a.txt\",\"content\":\"hi\"}",
               "Successfully wrote to '/new/deep/a.txt'");
    char *c = fx_get(f, "new/deep/a.txt");
    assert_string_equal(c, "hi");
    free(c);
    expect_err(f, "write_file", "{\"file_path\":\"/new/deep/a.txt\",\"content\":\"x\"}", "file_exists",
               "Cannot write to /new/deep/a.txt because it already exists. Read and then make an edit, "
               "or write to a new path.");
    expect_out(f, "write_file",
               "{\"file_path\":\"/new/deep/a.txt\",\"content\":\"x\",\"overwrite\":true}",
               "Successfully wrote to '/new/deep/a.txt'");
    c = fx_get(f, "new/deep/a.txt");
    assert_string_equal(c, "x");
    free(c);
    expect_err(f, "write_file",
               "{\"file_path\":\"/p/q.txt\",\"content\":\"x\",\"create_parent_dirs\":false}",
               "not_found", "Error: ");
    expect_err(f, "write_file", "{\"file_path\":\"/new\",\"content\":\"x\",\"overwrite\":true}",
               "is_directory", "Cannot write to /new because it is not a file.");
}

static void edit_file(void **state)
{
    struct fx *f = *state;
    fx_put(f, "e.txt", "alpha beta alpha\ngamma\n");
    /* edit_file's own behaviour: its default read-first rule (upstream's runtime) is lifted */
    struct tool_rule lift = {.name = "edit_file", .enabled = true};
    set_rule(f, &lift, 1);
    expect_out(f, "edit_file",
               "{\"file_path\":\"/e.txt\",\"old_string\":\"gamma\",\"new_string\":\"$& $1 delta\"}",
               "Successfully replaced 1 occurrence(s) in '/e.txt'");
    char *c = fx_get(f, "e.txt");
    assert_string_equal(c, "alpha beta alpha\n$& $1 delta\n");
    free(c);
    expect_err(f, "edit_file",
               "{\"file_path\":\"/e.txt\",\"old_string\":\"alpha\",\"new_string\":\"A\"}", "not_unique",
               "Error: String 'alpha' appears 2 times in file. Use replace_all=true to replace all "
               "instances, or provide a more specific string with surrounding context.");
    expect_err(f, "edit_file",
               "{\"file_path\":\"/e.txt\",\"old_string\":\"omega\",\"new_string\":\"A\"}", "no_match",
               "Error: String not found in file: 'omega'");
    expect_out(
        f, "edit_file",
        "{\"file_path\":\"/e.txt\",\"old_string\":\"alpha\",\"new_string\":\"A\",\"replace_all\":true}",
        "Successfully replaced 2 occurrence(s) in '/e.txt'");
    c = fx_get(f, "e.txt");
    assert_string_equal(c, "A beta A\n$& $1 delta\n");
    free(c);
    /* non-overlapping, left to right, as String.split */
    fx_put(f, "o.txt", "aaaa");
    cJSON *r = fx_ok(
        f, "edit_file",
        "{\"file_path\":\"/o.txt\",\"old_string\":\"aa\",\"new_string\":\"b\",\"replace_all\":true}");
    assert_int_equal((int)fx_num(r, "occurrences"), 2);
    cJSON_Delete(r);
    c = fx_get(f, "o.txt");
    assert_string_equal(c, "bb");
    free(c);
    expect_err(f, "edit_file", "{\"file_path\":\"/none\",\"old_string\":\"a\",\"new_string\":\"b\"}",
               "not_found", "Error: File '/none' not found");
    expect_err(f, "edit_file", "{\"file_path\":\"/o.txt\",\"old_string\":\"\",\"new_string\":\"b\"}",
               "invalid_argument", NULL);
}

static void delete_mkdir_rmdir(void **state)
{
    struct fx *f = *state;
    fx_put(f, "d/sub/x.txt", "x");
    fx_put(f, "d/y.txt", "y");
    fx_put(f, "f.txt", "f");
    struct tool_rule r = {.name = "delete_file",
                          .enabled = true}; /* no read-first: see read_before_write */
    set_rule(f, &r, 1);
    expect_out(f, "delete_file", "{\"file_path\":\"/f.txt\"}", "Successfully deleted '/f.txt'");
    assert_null(fx_get(f, "f.txt"));
    expect_err(f, "delete_file", "{\"file_path\":\"/f.txt\"}", "not_found",
               "Error: File '/f.txt' not found");
    expect_err(f, "delete_file", "{\"file_path\":\"/d\"}", "is_directory", "Error: '/d' is a directory");
    expect_out(f, "mkdir", "{\"path\":\"/m/n\"}", "Successfully created directory '/m/n/'");
    expect_out(f, "mkdir", "{\"path\":\"/m/n\"}", "Successfully created directory '/m/n/'");
    expect_err(f, "mkdir", "{\"path\":\"/p/q\",\"recursive\":false}", "not_found", NULL);
    expect_err(f, "mkdir", "{\"path\":\"/d/y.txt\"}", "file_exists",
               "Cannot create directory '/d/y.txt' because a file exists at that path.");
    expect_out(f, "rmdir", "{\"path\":\"/m/n\"}", "Successfully removed directory '/m/n'");
    expect_err(f, "rmdir", "{\"path\":\"/d\"}", "invalid_argument", "Error: /d is not empty");
    expect_err(f, "rmdir", "{\"path\":\"/d/y.txt\"}", "not_a_directory",
               "Error: Directory '/d/y.txt' not found");
    expect_err(f, "rmdir", "{\"path\":\"/zz\"}", "not_found", "Error: Directory '/zz' not found");
    /* recursive removal leaves the target of a symlink inside alone */
    char link[256];
    snprintf(link, sizeof(link), "%s/d/sub/to_out", f->ws);
    fx_put_bytes(f, "../outside/keep", "K", 1);
    assert_int_equal(symlink(f->out, link), 0);
    expect_out(f, "rmdir", "{\"path\":\"/d\",\"recursive\":true}",
               "Successfully removed directory '/d'");
    char keep[256];
    snprintf(keep, sizeof(keep), "%s/keep", f->out);
    assert_true(fx_exists_host(keep));
    fx_put(f, "e/x/y", "y");
    expect_out(f, "delete_file", "{\"file_path\":\"/e\",\"recursive\":true}",
               "Successfully deleted '/e'");
    assert_null(fx_get(f, "e/x/y"));
    expect_err(f, "rmdir", "{\"path\":\"/\",\"recursive\":true}", "denied", NULL);
}

static void list_tree_as_upstream(void **state)
{
    struct fx *f = *state;
    expect_out(f, "list_tree", NULL, "/\n  (empty)");
    fx_put(f, "z.txt", "z");
    fx_put(f, "a.txt", "a");
    fx_put(f, "src/lib/deep/x.c", "x");
    fx_put(f, "src/main.c", "m");
    fx_put(f, "docs/r.md", "r");
    expect_out(f, "list_tree", "{}",
               "/\n  - docs/\n    - r.md\n  - src/\n    - lib/\n      - deep/\n    - main.c\n  - "
               "a.txt\n  - z.txt");
    expect_out(f, "list_files", "{\"path\":\"/src\",\"max_depth\":1}", "/src/\n  - lib/\n  - main.c");
    expect_out(f, "list_tree", "{\"path\":\"/src/main.c\"}", "/src/main.c");
    expect_err(f, "list_tree", "{\"path\":\"/nope\"}", "not_found", NULL);
}

static void glob_and_grep(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.ts", "const x = 1;\n");
    fx_put(f, "src/b.ts", "let y = 2;\nconst z = 3;\n");
    fx_put(f, "src/c.js", "const w;\n");
    fx_put(f, ".hidden.ts", "const h;\n");
    expect_out(f, "glob", "{\"pattern\":\"**/*.ts\"}", "/.hidden.ts\n/a.ts\n/src/b.ts");
    expect_out(f, "glob", "{\"pattern\":\"*.ts\"}", "/.hidden.ts\n/a.ts");
    expect_out(f, "glob", "{\"pattern\":\"/*.ts\",\"path\":\"/src\"}", "/src/b.ts");
    expect_out(f, "glob", "{\"pattern\":\"*.rs\"}", "No files found matching pattern '*.rs'");
    expect_err(f, "glob", "{\"pattern\":\"[a\"}", "invalid_pattern", NULL);

    expect_out(f, "grep", "{\"pattern\":\"const [xz]\"}",
               "/a.ts:\n  1: const x = 1;\n/src/b.ts:\n  2: const z = 3;");
    expect_out(f, "grep", "{\"pattern\":\"const\",\"path\":\"/src\",\"glob\":\"*.js\"}",
               "/src/c.js:\n  1: const w;");
    expect_out(f, "grep", "{\"pattern\":\"const\",\"glob\":null,\"path\":\"/src\"}",
               "/src/b.ts:\n  2: const z = 3;\n/src/c.js:\n  1: const w;");
    expect_out(f, "grep", "{\"pattern\":\"nothing here\"}",
               "No matches found for pattern 'nothing here'");
    expect_err(f, "grep", "{\"pattern\":\"(\"}", "invalid_pattern", "Invalid regex pattern: ");
    /* upstream's unsafe patterns (nested or overlapping quantifiers) are searched literally */
    fx_put(f, "re.txt", "aaaa\nthe text (a+)+ itself\nx.*+y\n");
    expect_out(f, "grep", "{\"pattern\":\"(a+)+\",\"path\":\"/re.txt\"}",
               "/re.txt:\n  2: the text (a+)+ itself");
    expect_out(f, "grep", "{\"pattern\":\".*+\",\"path\":\"/re.txt\"}", "/re.txt:\n  3: x.*+y");
    expect_out(f, "grep", "{\"pattern\":\"a+\",\"path\":\"/re.txt\"}",
               "/re.txt:\n  1: aaaa\n  2: the text (a+)+ itself");
    cJSON *r = fx_ok(f, "grep", "{\"pattern\":\"let\"}");
    const cJSON *m = cJSON_GetArrayItem(fx_item(r, "matches"), 0);
    assert_string_equal(fx_str(m, "path"), "/src/b.ts");
    assert_int_equal((int)fx_num(m, "line"), 1);
    assert_string_equal(fx_str(m, "text"), "let y = 2;");
    cJSON_Delete(r);
}

/* ---- rules ---------------------------------------------------------------------------------- */

static void read_only_mode(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "a\n");
    f->ctx.read_only = true;
    const char *calls[][2] = {
        {"write_file", "{\"file_path\":\"/b.txt\",\"content\":\"x\"}"},
        {"edit_file", "{\"file_path\":\"/a.txt\",\"old_string\":\"a\",\"new_string\":\"b\"}"},
        {"delete_file", "{\"file_path\":\"/a.txt\"}"},
        {"mkdir", "{\"path\":\"/m\"}"},
        {"rmdir", "{\"path\":\"/m\"}"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(calls); i++)
        expect_err(f, calls[i][0], calls[i][1], VOLTAGENT_E_READ_ONLY,
                   "Workspace filesystem is read-only.");
    char *c = fx_get(f, "a.txt");
    assert_string_equal(c, "a\n");
    free(c);
    assert_null(fx_get(f, "b.txt"));
    expect_out(f, "read_file", "{\"file_path\":\"/a.txt\"}", "     1\ta");
}

static void read_before_write(void **state)
{
    struct fx *f = *state;
    struct tool_rule rules[] = {
        {.name = "edit_file", .enabled = true, .read_before_write = true},
        {.name = "write_file", .enabled = true, .read_before_write = true},
        {.name = "delete_file", .enabled = true, .read_before_write = true},
    };
    set_rule(f, rules, ARRAY_SIZE(rules));
    fx_put(f, "a.txt", "one\n");
    const char *edit = "{\"file_path\":\"/a.txt\",\"old_string\":\"one\",\"new_string\":\"two\"}";
    expect_err(f, "edit_file", edit, VOLTAGENT_E_READ_FIRST,
               "Error: Please read '/a.txt' with read_file before modifying it.");
    expect_err(f, "write_file", "{\"file_path\":\"/a.txt\",\"content\":\"x\",\"overwrite\":true}",
               VOLTAGENT_E_READ_FIRST, NULL);
    expect_err(f, "delete_file", "{\"file_path\":\"/a.txt\"}", VOLTAGENT_E_READ_FIRST, NULL);
    /* a new file needs no read */
    expect_out(f, "write_file", "{\"file_path\":\"/new.txt\",\"content\":\"n\"}",
               "Successfully wrote to '/new.txt'");
    /* read, then edit; the agent's own edit counts as read, so a second edit goes through */
    expect_out(f, "read_file", "{\"file_path\":\"/a.txt\"}", "     1\tone");
    expect_out(f, "edit_file", edit, "Successfully replaced 1 occurrence(s) in '/a.txt'");
    expect_out(f, "edit_file",
               "{\"file_path\":\"/a.txt\",\"old_string\":\"two\",\"new_string\":\"three\"}",
               "Successfully replaced 1 occurrence(s) in '/a.txt'");
    /* changed behind the agent's back (same size, mtime restored): must read again */
    struct stat before;
    char host[256];
    snprintf(host, sizeof(host), "%s/a.txt", f->ws);
    assert_int_equal(stat(host, &before), 0);
    fx_put(f, "a.txt", "THREE\n");
    struct timespec ts[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, host, ts, 0), 0);
    expect_err(f, "edit_file",
               "{\"file_path\":\"/a.txt\",\"old_string\":\"THREE\",\"new_string\":\"4\"}",
               VOLTAGENT_E_STALE,
               "Error: '/a.txt' has changed since it was last read. Read it again before modifying.");
    char *c = fx_get(f, "a.txt");
    assert_string_equal(c, "THREE\n");
    free(c);
    expect_out(f, "read_file", "{\"file_path\":\"/a.txt\"}", "     1\tTHREE");
    expect_out(f, "delete_file", "{\"file_path\":\"/a.txt\"}", "Successfully deleted '/a.txt'");
    /* a rule on another tool leaves this one alone (write_file: off by default) */
    fx_put(f, "b.txt", "b\n");
    set_rule(f, rules, 1);
    expect_out(f, "write_file", "{\"file_path\":\"/b.txt\",\"content\":\"c\",\"overwrite\":true}",
               "Successfully wrote to '/b.txt'");
    /* and a tool with no rule has the surface's default: delete_file reads first */
    fx_put(f, "c.txt", "c\n");
    expect_err(f, "delete_file", "{\"file_path\":\"/c.txt\"}", VOLTAGENT_E_READ_FIRST, NULL);
}

static void needs_approval_refuses_before_acting(void **state)
{
    struct fx *f = *state;
    struct tool_rule rules[] = {{.name = "write_file", .enabled = true, .needs_approval = true},
                                {.name = "workspace_search", .enabled = true, .needs_approval = true}};
    set_rule(f, rules, ARRAY_SIZE(rules));
    bool err;
    cJSON *r = fx_call(f, "write_file", "{\"file_path\":\"/a.txt\",\"content\":\"x\"}", &err);
    assert_true(err);
    assert_string_equal(fx_str(r, "code"), VOLTAGENT_E_APPROVAL);
    const char *m = fx_str(r, "error");
    assert_non_null(strstr(m, "write_file needs a person's approval"));
    assert_non_null(strstr(m, "lift needs_approval for 'write_file' in the policy"));
    assert_string_equal(f->s->denial(r), "needs approval");
    cJSON_Delete(r);
    assert_null(fx_get(f, "a.txt"));
    /* other toolkits' tools too, and even with arguments that would not parse */
    expect_err(f, "workspace_search", "{\"bogus\":1}", VOLTAGENT_E_APPROVAL, NULL);
    expect_out(f, "ls", NULL, "No files found");
}

/* ---- execute_command ------------------------------------------------------------------------ */

static void execute_command_refusals(void **state)
{
    struct fx *f = *state;
    bool err;
    cJSON *r = fx_call(f, "execute_command", "{\"command\":\"true\"}", &err);
    assert_true(err);
    assert_string_equal(fx_str(r, "code"), VOLTAGENT_E_COMMANDS);
    assert_false(fx_bool(r, "success"));
    assert_true(cJSON_IsNull(fx_item(r, "exit_code")));
    assert_non_null(f->s->denial(r));
    cJSON_Delete(r);
    f->ctx.allow_commands = true;
    expect_err(f, "execute_command", "{\"command\":\"  \"}", "invalid_argument",
               "Sandbox command is required");
    expect_err(f, "execute_command", "{\"command\":\"cat\",\"stdin\":\"x\"}", "invalid_argument", NULL);
    expect_err(f, "execute_command", "{\"command\":\"pwd\",\"cwd\":\"/../..\"}", VOLTAGENT_E_TRAVERSAL,
               NULL);
    expect_err(f, "execute_command", "{\"command\":\"env\",\"env\":{\"A=B\":\"x\"}}", "invalid_argument",
               NULL);
    expect_err(f, "execute_command", "{\"command\":\"env\",\"env\":{\"A\":1}}", "invalid_argument",
               NULL);
    expect_err(f, "execute_command", "{\"command\":\"ls\",\"args\":[1]}", "invalid_argument", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        VT(lists_the_toolkits_in_order),
        VT(unknown_tool_and_bad_arguments),
        VT(error_shape_and_denials),
        VT(path_rule),
        VT(symlinks_inside_are_refused),
        VT(ls_and_stat),
        VT(read_file_formats_as_upstream),
        VT(write_file),
        VT(edit_file),
        VT(delete_mkdir_rmdir),
        VT(list_tree_as_upstream),
        VT(glob_and_grep),
        VT(read_only_mode),
        VT(read_before_write),
        VT(needs_approval_refuses_before_acting),
        VT(execute_command_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
