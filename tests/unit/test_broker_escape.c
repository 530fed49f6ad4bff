/* tests/unit/test_broker_escape.c: every way out of the workspace, one test each, through the
 * WAP surface's call with a hostile tree built in a temp directory. Each denial is checked for
 * its code AND for having no effect outside (no file created, none read, none changed). */
#include "wap_fixture.h"

#include <sys/stat.h>

#define SECRET "top secret outside\n"

static void plant_secret(struct fx *f)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/secret.txt", f->out);
    FILE *fp = fopen(p, "w");
    fputs(SECRET, fp);
    fclose(fp);
}

static void link_in_ws(struct fx *f, const char *target, const char *name)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/%s", f->ws, name);
    assert_int_equal(symlink(target, p), 0);
}

static void assert_outside_untouched(struct fx *f)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/secret.txt", f->out);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    char buf[64] = "";
    assert_non_null(fgets(buf, sizeof(buf), fp));
    fclose(fp);
    assert_string_equal(buf, SECRET);
    /* nothing new appeared outside */
    snprintf(p, sizeof(p), "%s/new.txt", f->out);
    assert_false(fx_exists_host(p));
    snprintf(p, sizeof(p), "%s/sub", f->out);
    assert_false(fx_exists_host(p));
}

static void dotdot_out_of_root(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    fx_err(f, "readFile", "{\"path\":\"../outside/secret.txt\"}", "PERMISSION_DENIED", "denied");
    fx_err(f, "writeFile", "{\"path\":\"../outside/new.txt\",\"content\":\"x\"}", "PERMISSION_DENIED",
           NULL);
    fx_err(f, "exploreFiles", "{\"path\":\"..\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "searchFiles", "{\"paths\":[\"../outside\"],\"query\":\"secret\",\"type\":\"literal\"}",
           "PERMISSION_DENIED", NULL);
    assert_outside_untouched(f);
}

static void dotdot_nested_out_of_root(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    fx_put(f, "src/a.txt", "a\n");
    fx_err(f, "readFile", "{\"path\":\"src/../../outside/secret.txt\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "modifyFile",
           "{\"path\":\"src/../../outside/"
           "secret.txt\",\"operations\":[{\"type\":\"delete\",\"startLine\":1,\"endLine\":1}]}",
           "PERMISSION_DENIED", NULL);
    assert_outside_untouched(f);
}

static void dotdot_inside_root_allowed(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "hello\n");
    fx_put(f, "src/b.txt", "b\n");
    cJSON *r = fx_ok(f, "readFile", "{\"path\":\"src/../a.txt\"}");
    assert_string_equal(fx_str(r, "content"), "hello\n");
    assert_string_equal(fx_str(fx_item(r, "metadata"), "path"), "/a.txt");
    cJSON_Delete(r);
}

static void absolute_host_path_stays_inside(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    /* A leading '/' is the workspace root (paths are workspace-relative): the host path names
     * nothing inside, and a write lands inside the workspace, never on the host. */
    char args[512];
    snprintf(args, sizeof(args), "{\"path\":\"%s/secret.txt\"}", f->out);
    fx_err(f, "readFile", args, "FILE_NOT_FOUND", NULL);
    fx_err(f, "readFile", "{\"path\":\"/etc/passwd\"}", "FILE_NOT_FOUND", NULL);
    snprintf(args, sizeof(args),
             "{\"path\":\"%s/new.txt\",\"content\":\"x\",\"createDirectories\":true}", f->out);
    cJSON *r = fx_ok(f, "writeFile", args);
    cJSON_Delete(r);
    assert_outside_untouched(f);
    char inside[512];
    snprintf(inside, sizeof(inside), "%s%s/new.txt", f->ws, f->out);
    assert_true(fx_exists_host(inside));
}

static void symlink_final_absolute_out(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    char t[256];
    snprintf(t, sizeof(t), "%s/secret.txt", f->out);
    link_in_ws(f, t, "link");
    fx_err(f, "readFile", "{\"path\":\"link\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "writeFile", "{\"path\":\"link\",\"content\":\"pwned\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "searchFiles", "{\"paths\":[\"link\"],\"query\":\"secret\",\"type\":\"literal\"}",
           "PERMISSION_DENIED", NULL);
    assert_outside_untouched(f);
}

static void symlink_final_relative_out(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    link_in_ws(f, "../outside/secret.txt", "link");
    fx_err(f, "readFile", "{\"path\":\"link\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "modifyFile",
           "{\"path\":\"link\",\"operations\":[{\"type\":\"insert\",\"afterLine\":0,\"newContent\":"
           "\"x\"}]}",
           "PERMISSION_DENIED", NULL);
    assert_outside_untouched(f);
}

static void symlink_intermediate_out(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    link_in_ws(f, "../outside", "dirlink");
    fx_err(f, "readFile", "{\"path\":\"dirlink/secret.txt\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "exploreFiles", "{\"path\":\"dirlink\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "writeFile", "{\"path\":\"dirlink/new.txt\",\"content\":\"x\"}", "PERMISSION_DENIED",
           NULL);
    fx_err(f, "writeFile",
           "{\"path\":\"dirlink/sub/new.txt\",\"content\":\"x\",\"createDirectories\":true}",
           "PERMISSION_DENIED", NULL);
    assert_outside_untouched(f);
}

static void symlink_dangling_out(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    link_in_ws(f, "../outside/new.txt", "dangling");
    fx_err(f, "readFile", "{\"path\":\"dangling\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "writeFile", "{\"path\":\"dangling\",\"content\":\"x\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "writeFile", "{\"path\":\"dangling\",\"content\":\"x\",\"mode\":\"append\"}",
           "PERMISSION_DENIED", NULL);
    assert_outside_untouched(f);
    /* the link itself is untouched too */
    char p[256], t[256] = "";
    snprintf(p, sizeof(p), "%s/dangling", f->ws);
    assert_true(readlink(p, t, sizeof(t) - 1) > 0);
    assert_string_equal(t, "../outside/new.txt");
}

static void symlink_dangling_absolute(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    char t[256];
    snprintf(t, sizeof(t), "%s/new.txt", f->out);
    link_in_ws(f, t, "dangling");
    fx_err(f, "writeFile", "{\"path\":\"dangling\",\"content\":\"x\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "readFile", "{\"path\":\"dangling\"}", "PERMISSION_DENIED", NULL);
    assert_outside_untouched(f);
}

static void proc_magic_link(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    /* /proc/self/cwd and /proc/self/fd/N are magic links: refused whatever they point at. */
    link_in_ws(f, "/proc/self/cwd", "cwd");
    link_in_ws(f, "/proc/self/root/etc/passwd", "passwd");
    fx_err(f, "readFile", "{\"path\":\"cwd/etc/passwd\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "readFile", "{\"path\":\"passwd\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "exploreFiles", "{\"path\":\"cwd\"}", "PERMISSION_DENIED", NULL);
    /* "/proc/..." is a workspace path, which does not exist */
    fx_err(f, "readFile", "{\"path\":\"/proc/self/environ\"}", "FILE_NOT_FOUND", NULL);
    assert_outside_untouched(f);
}

static void proc_magic_link_kernel_refusal(void **state)
{
    struct fx *f = *state;
    /* Straight at the broker, with a dirfd that is /proc itself: even where BENEATH alone would
     * allow it, RESOLVE_NO_MAGICLINKS refuses the magic link. */
    int proc = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(proc >= 0);
    struct broker_err e = {0};
    int fd = broker_openat(proc, "cwd", O_PATH, 0, 0, "path", &e);
    assert_true(fd < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
    fd = broker_openat(proc, "root", O_PATH, 0, 0, "path", &e);
    assert_true(fd < 0);
    assert_int_equal(e.kind, BROKER_E_DENIED);
    close(proc);
    (void)f;
}

static void hard_link_to_outside(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    char src[256], dst[256];
    snprintf(src, sizeof(src), "%s/secret.txt", f->out);
    snprintf(dst, sizeof(dst), "%s/hard.txt", f->ws);
    assert_int_equal(link(src, dst), 0);
    fx_err(f, "readFile", "{\"path\":\"hard.txt\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "writeFile", "{\"path\":\"hard.txt\",\"content\":\"pwned\"}", "PERMISSION_DENIED", NULL);
    fx_err(f, "writeFile", "{\"path\":\"hard.txt\",\"content\":\"pwned\",\"mode\":\"append\"}",
           "PERMISSION_DENIED", NULL);
    fx_err(f, "modifyFile",
           "{\"path\":\"hard.txt\",\"operations\":[{\"type\":\"regexReplace\",\"pattern\":\"top\","
           "\"replacement\":\"x\"}]}",
           "PERMISSION_DENIED", NULL);
    fx_err(f, "searchFiles", "{\"paths\":[\"hard.txt\"],\"query\":\"secret\",\"type\":\"literal\"}",
           "PERMISSION_DENIED", NULL);
    /* a recursive search skips it: its bytes are never brokered */
    cJSON *r = fx_ok(f, "searchFiles",
                     "{\"paths\":[\".\"],\"query\":\"secret\",\"type\":\"literal\",\"recursive\":true}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 0);
    cJSON_Delete(r);
    assert_outside_untouched(f);
}

static void explore_does_not_follow_symlinks(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    link_in_ws(f, "../outside", "dirlink");
    fx_put(f, "a.txt", "a\n");
    cJSON *r = fx_ok(f, "exploreFiles", "{\"path\":\".\",\"recursive\":true,\"maxDepth\":10}");
    char *t = cJSON_PrintUnformatted(r);
    assert_null(strstr(t, "secret"));
    assert_non_null(strstr(t, "\"/dirlink\""));
    free(t);
    assert_int_equal((int)fx_num(r, "totalFound"), 2);
    cJSON_Delete(r);
}

static void search_does_not_follow_symlinks(void **state)
{
    struct fx *f = *state;
    plant_secret(f);
    link_in_ws(f, "../outside", "dirlink");
    link_in_ws(f, "../outside/secret.txt", "filelink");
    fx_put(f, "a.txt", "nothing here\n");
    cJSON *r = fx_ok(f, "searchFiles",
                     "{\"paths\":[\".\"],\"query\":\"secret\",\"type\":\"literal\",\"recursive\":true}");
    assert_int_equal((int)fx_num(r, "totalMatches"), 0);
    cJSON_Delete(r);
}

static void symlink_inside_root_allowed(void **state)
{
    struct fx *f = *state;
    fx_put(f, "real/a.txt", "inside\n");
    link_in_ws(f, "real/a.txt", "alias");
    link_in_ws(f, "real", "dirlink");
    cJSON *r = fx_ok(f, "readFile", "{\"path\":\"alias\"}");
    assert_string_equal(fx_str(r, "content"), "inside\n");
    cJSON_Delete(r);
    r = fx_ok(f, "readFile", "{\"path\":\"dirlink/a.txt\"}");
    assert_string_equal(fx_str(r, "content"), "inside\n");
    cJSON_Delete(r);
    /* a write to the link itself is refused (writes never follow links) */
    fx_err(f, "writeFile", "{\"path\":\"alias\",\"content\":\"x\"}", "PERMISSION_DENIED", NULL);
}

static void fifo_is_not_read(void **state)
{
    struct fx *f = *state;
    char p[256];
    snprintf(p, sizeof(p), "%s/fifo", f->ws);
    assert_int_equal(mkfifo(p, 0644), 0);
    /* must answer at once, not block on the fifo */
    fx_err(f, "readFile", "{\"path\":\"fifo\"}", "INVALID_ARGUMENT", "not_a_regular_file");
    fx_err(f, "writeFile", "{\"path\":\"fifo\",\"content\":\"x\"}", "INVALID_ARGUMENT",
           "not_a_regular_file");
}

static void working_directory_escape(void **state)
{
    struct fx *f = *state;
    f->ctx.allow_commands = true;
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    f->ctx.command_profile = &p;
    link_in_ws(f, "../outside", "dirlink");
    fx_err(f, "executeCommand", "{\"command\":\"pwd\",\"workingDirectory\":\"..\"}", "PERMISSION_DENIED",
           NULL);
    fx_err(f, "executeCommand", "{\"command\":\"pwd\",\"workingDirectory\":\"dirlink\"}",
           "PERMISSION_DENIED", NULL);
    fx_err(f, "executeCommand", "{\"command\":\"pwd\",\"workingDirectory\":\"nope\"}", "FILE_NOT_FOUND",
           NULL);
}

static void temp_files_never_left(void **state)
{
    struct fx *f = *state;
    fx_put(f, "a.txt", "1\n");
    cJSON_Delete(fx_ok(f, "writeFile", "{\"path\":\"a.txt\",\"content\":\"2\\n\"}"));
    fx_err(f, "modifyFile",
           "{\"path\":\"a.txt\",\"operations\":[{\"type\":\"delete\",\"startLine\":5,\"endLine\":6}]}",
           "INVALID_ARGUMENT", NULL);
    cJSON *r = fx_ok(f, "exploreFiles", "{\"path\":\".\"}");
    assert_int_equal((int)fx_num(r, "totalFound"), 1);
    cJSON_Delete(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TEST(dotdot_out_of_root),
        FX_TEST(dotdot_nested_out_of_root),
        FX_TEST(dotdot_inside_root_allowed),
        FX_TEST(absolute_host_path_stays_inside),
        FX_TEST(symlink_final_absolute_out),
        FX_TEST(symlink_final_relative_out),
        FX_TEST(symlink_intermediate_out),
        FX_TEST(symlink_dangling_out),
        FX_TEST(symlink_dangling_absolute),
        FX_TEST(proc_magic_link),
        FX_TEST(proc_magic_link_kernel_refusal),
        FX_TEST(hard_link_to_outside),
        FX_TEST(explore_does_not_follow_symlinks),
        FX_TEST(search_does_not_follow_symlinks),
        FX_TEST(symlink_inside_root_allowed),
        FX_TEST(fifo_is_not_read),
        FX_TEST(working_directory_escape),
        FX_TEST(temp_files_never_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
