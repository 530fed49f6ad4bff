/* tests/unit/test_wap_command.c: executeCommand through the WAP surface, for real, in a command
 * sandbox (sandbox_spawn): output and status, cwd, environment, timeout with SIGTERM then
 * SIGKILL, the output cap, writes landing in the workspace and nowhere else. */
#include "wap_fixture.h"

#include <signal.h>

static int cmd_setup(void **state)
{
    if (fx_setup(state) < 0)
        return -1;
    struct fx *f = *state;
    struct sandbox_profile *p = calloc(1, sizeof(*p));
    sandbox_profile_default(p);
    f->ctx.command_profile = p;
    f->ctx.allow_commands = true;
    /* the command runs as an unprivileged id: let it write in the workspace */
    chmod(f->ws, 0777);
    return 0;
}

static int cmd_teardown(void **state)
{
    struct fx *f = *state;
    free((void *)f->ctx.command_profile);
    return fx_teardown(state);
}

#define CMD_TEST(fn) cmocka_unit_test_setup_teardown(fn, cmd_setup, cmd_teardown)

static void output_and_status(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "executeCommand", "{\"command\":\"echo out; echo err >&2; exit 3\"}");
    assert_string_equal(fx_str(r, "stdout"), "out\n");
    assert_string_equal(fx_str(r, "stderr"), "err\n");
    assert_int_equal((int)fx_num(r, "exitCode"), 3);
    assert_false(fx_bool(r, "isOutputTruncated"));
    assert_true(fx_num(r, "durationMs") >= 0);
    assert_int_equal(cJSON_GetArraySize(r), 5);
    cJSON_Delete(r);
}

static void working_directory_and_environment(void **state)
{
    struct fx *f = *state;
    fx_put(f, "packages/frontend/x", "");
    cJSON *r = fx_ok(
        f, "executeCommand",
        "{\"command\":\"pwd; echo $FOO $HOME $LANG\",\"workingDirectory\":\"packages/frontend\","
        "\"environment\":{\"FOO\":\"bar baz\"}}");
    assert_string_equal(fx_str(r, "stdout"), "/workspace/packages/frontend\nbar baz /tmp C.UTF-8\n");
    cJSON_Delete(r);
    r = fx_ok(f, "executeCommand",
              "{\"command\":\"pwd; echo $HOME\",\"environment\":{\"HOME\":\"/workspace\"}}");
    assert_string_equal(fx_str(r, "stdout"), "/workspace\n/workspace\n");
    cJSON_Delete(r);
}

static void writes_land_in_the_workspace_only(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "executeCommand",
                     "{\"command\":\"echo made > made.txt; touch /usr/corral-x 2>/dev/null; echo $?\"}");
    assert_string_equal(fx_str(r, "stdout"), "1\n");
    cJSON_Delete(r);
    char *c = fx_get(f, "made.txt");
    assert_non_null(c);
    assert_string_equal(c, "made\n");
    free(c);
    assert_false(fx_exists_host("/usr/corral-x"));
}

/* A role that may run commands but not write (read_only) gets the workspace read-only there too:
 * a command is no way around the missing write authority. */
static void read_only_role_commands_cannot_write(void **state)
{
    struct fx *f = *state;
    f->ctx.read_only = true;
    cJSON *r = fx_ok(f, "executeCommand",
                     "{\"command\":\"echo x > sneaky.txt 2>/dev/null; echo $?; cat README* >/dev/null "
                     "2>&1; ls / >/dev/null; echo read\"}");
    f->ctx.read_only = false;
    const char *out = fx_str(r, "stdout");
    assert_true(out[0] != '0'); /* the redirection failed */
    assert_non_null(strstr(out, "read"));
    cJSON_Delete(r);
    assert_null(fx_get(f, "sneaky.txt"));
}

static void binds_the_root_fd_not_the_path(void **state)
{
    struct fx *f = *state;
    /* Swap the workspace path under the broker: the command must still see the directory the
     * root fd names, and nothing may land in the impostor. */
    char moved[160];
    snprintf(moved, sizeof(moved), "%s/moved", f->top);
    assert_int_equal(rename(f->ws, moved), 0);
    assert_int_equal(mkdir(f->ws, 0777), 0);
    cJSON_Delete(fx_ok(f, "executeCommand", "{\"command\":\"echo here > where.txt\"}"));
    char p[256];
    snprintf(p, sizeof(p), "%s/where.txt", moved);
    assert_true(fx_exists_host(p));
    snprintf(p, sizeof(p), "%s/where.txt", f->ws);
    assert_false(fx_exists_host(p));
}

static void timeout_terminates(void **state)
{
    struct fx *f = *state;
    bool err;
    cJSON *r = fx_call(f, "executeCommand", "{\"command\":\"echo started; sleep 30\",\"timeout\":300}",
                       &err);
    assert_true(err);
    assert_string_equal(fx_str(r, "code"), "TIMEOUT");
    const cJSON *d = fx_item(r, "details");
    assert_string_equal(fx_str(d, "stdout"), "started\n");
    /* stopped long before the sleep would have ended */
    assert_true(fx_num(d, "durationMs") >= 300 && fx_num(d, "durationMs") < 20000);
    cJSON_Delete(r);
}

static void timeout_sends_sigterm_first(void **state)
{
    struct fx *f = *state;
    bool err;
    /* Like corral exec, which blocks SIGTERM for its signalfd: the sandbox must not inherit it. */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &old);
    cJSON *r = fx_call(
        f, "executeCommand",
        "{\"command\":\"trap 'echo got TERM; exit 3' TERM; sleep 30 & wait\",\"timeout\":500}", &err);
    sigprocmask(SIG_SETMASK, &old, NULL);
    assert_true(err);
    assert_string_equal(fx_str(r, "code"), "TIMEOUT");
    const cJSON *d = fx_item(r, "details");
    assert_string_equal(fx_str(d, "stdout"), "got TERM\n"); /* it could clean up */
    assert_int_equal((int)fx_num(d, "exitCode"), 3);
    cJSON_Delete(r);
}

static void timeout_kills_what_ignores_sigterm(void **state)
{
    struct fx *f = *state;
    bool err;
    cJSON *r = fx_call(f, "executeCommand",
                       "{\"command\":\"trap '' TERM; sleep 30; sleep 30\",\"timeout\":200}", &err);
    assert_true(err);
    assert_string_equal(fx_str(r, "code"), "TIMEOUT");
    assert_true(fx_num(fx_item(r, "details"), "durationMs") < 20000);
    cJSON_Delete(r);
}

static void output_is_capped(void **state)
{
    struct fx *f = *state;
    f->ctx.limits.max_output_bytes = 1000;
    cJSON *r;
    /* Several times: the reader once drained on while the command wrote, and it finished (exit
     * 0) before the kill. */
    for (int i = 0; i < 10; i++) {
        r = fx_ok(f, "executeCommand",
                  "{\"command\":\"head -c 200000 /dev/zero | tr '\\\\000' a; echo done >&2\"}");
        assert_int_equal(strlen(fx_str(r, "stdout")) + strlen(fx_str(r, "stderr")), 1000);
        assert_true(fx_bool(r, "isOutputTruncated"));
        /* stopped at the cap (SIGKILL), not left to run on with its output dropped */
        assert_int_equal((int)fx_num(r, "exitCode"), 137);
        cJSON_Delete(r);
    }
    /* output that never ends: answered at the cap, not at the timeout */
    r = fx_ok(f, "executeCommand", "{\"command\":\"yes\",\"timeout\":600000}");
    assert_true(fx_bool(r, "isOutputTruncated"));
    assert_int_equal(strlen(fx_str(r, "stdout")), 1000);
    cJSON_Delete(r);
    /* a NUL in the output: what follows it is kept (the NUL shown as U+FFFD) */
    r = fx_ok(f, "executeCommand", "{\"command\":\"printf 'before\\\\000after'\"}");
    assert_string_equal(fx_str(r, "stdout"), "before\xEF\xBF\xBD"
                                             "after");
    cJSON_Delete(r);
}

static void default_profile_when_none_is_set(void **state)
{
    struct fx *f = *state;
    free((void *)f->ctx.command_profile);
    f->ctx.command_profile = NULL; /* the sandbox module's safe defaults */
    cJSON *r = fx_ok(f, "executeCommand", "{\"command\":\"pwd; ls /workspace\"}");
    assert_int_equal((int)fx_num(r, "exitCode"), 0);
    assert_string_equal(fx_str(r, "stdout"), "/workspace\n");
    cJSON_Delete(r);
    /* the sandbox runs without capabilities: sethostname fails, host setup untouched */
    r = fx_ok(f, "executeCommand", "{\"command\":\"hostname corral-x 2>/dev/null; echo $?\"}");
    assert_string_not_equal(fx_str(r, "stdout"), "0\n");
    cJSON_Delete(r);
}

static void signals_and_bytes(void **state)
{
    struct fx *f = *state;
    cJSON *r = fx_ok(f, "executeCommand", "{\"command\":\"printf 'ok\\\\377'; kill -9 $$\"}");
    assert_int_equal((int)fx_num(r, "exitCode"), 137);
    assert_string_equal(fx_str(r, "stdout"), "ok\xef\xbf\xbd"); /* invalid UTF-8 -> U+FFFD */
    cJSON_Delete(r);
    fx_err(f, "executeCommand", "{\"command\":\"\"}", "INVALID_ARGUMENT", NULL);
    fx_err(f, "executeCommand", "{\"command\":\"true\",\"environment\":{\"A=B\":\"x\"}}",
           "INVALID_ARGUMENT", NULL);
    fx_err(f, "executeCommand", "{\"command\":\"true\",\"timeout\":0}", "INVALID_ARGUMENT", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CMD_TEST(output_and_status),
        CMD_TEST(working_directory_and_environment),
        CMD_TEST(writes_land_in_the_workspace_only),
        CMD_TEST(read_only_role_commands_cannot_write),
        CMD_TEST(binds_the_root_fd_not_the_path),
        CMD_TEST(timeout_terminates),
        CMD_TEST(timeout_sends_sigterm_first),
        CMD_TEST(timeout_kills_what_ignores_sigterm),
        CMD_TEST(output_is_capped),
        CMD_TEST(default_profile_when_none_is_set),
        CMD_TEST(signals_and_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
