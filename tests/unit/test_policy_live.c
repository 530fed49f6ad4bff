/* tests/unit/test_policy_live.c: the same per-role syscall tables as the simulation, checked live:
 * each example role's resolved profile is handed to sandbox_spawn, and tests/hostile/
 * sysprobe_policy attempts every syscall of the table inside that real sandbox. */
#include "policy/policy.h"
#include "tests/unit/policy_tables.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

static struct policy *load_case(const struct role_case *rc)
{
    struct policy *p = NULL;
    struct policy_diags d = {0};
    int r;
    if (!rc->file) {
        r = policy_load_default(&p);
    } else {
        const char *top = getenv("TOP");
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", top ? top : ".", rc->file);
        r = policy_load_file(path, &p, &d);
    }
    if (r < 0) {
        policy_diags_print(&d, stderr);
        fail_msg("cannot load %s", rc->file ? rc->file : "the default policy");
    }
    policy_diags_free(&d);
    return p;
}

/* Runs the probe with every row's name in the sandbox of the role; returns its stdout. */
static char *run_probe(const struct sandbox_profile *prof, const char *probe)
{
    int out[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    char *argv[N_ROWS + 2];
    argv[0] = (char *)probe;
    for (size_t k = 0; k < N_ROWS; k++)
        argv[k + 1] = (char *)rows[k].probe;
    argv[N_ROWS + 1] = NULL;
    struct sandbox_stdio io = {.in = -1, .out = out[1], .err = -1};
    struct sandbox_child *child = NULL;
    struct cerr err = {0};
    if (sandbox_spawn(prof, probe, argv, &io, &child, &err) < 0)
        fail_msg("sandbox_spawn: %s", err.msg);
    close(out[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = calloc(1, cap);
    assert_non_null(buf);
    ssize_t n;
    while ((n = read(out[0], buf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    close(out[0]);
    struct sandbox_result res;
    assert_int_equal(sandbox_child_wait(child, &res, &err), 0);
    sandbox_child_free(child);
    assert_true(res.exited);
    assert_int_equal(res.exit_code, 0);
    return buf;
}

static void test_tables_live(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        /* corral's sandbox needs root (cgroups, namespaces); the suite runs as root. */
        fail_msg("this test must run as root");
    }
    const char *hostile = getenv("HOSTILE");
    char probe[4096];
    snprintf(probe, sizeof(probe), "%s/sysprobe_policy", hostile ? hostile : "build/tests/hostile");
    char *abs = realpath(probe, NULL);
    if (!abs)
        fail_msg("%s: %s (run 'make test-build')", probe, strerror(errno));
    static char why[8192]; /* collected, then reported once everything is freed */
    why[0] = '\0';
    for (size_t ri = 0; ri < N_ROLES; ri++) {
        struct policy *p = load_case(&roles[ri]);
        struct policy_role_view v;
        struct cerr err = {0};
        assert_int_equal(policy_role_resolve(p, roles[ri].role, &v, &err), 0);
        char *out = run_probe(&v.sandbox, abs);
        for (size_t k = 0; k < N_ROWS; k++) {
            char key[64];
            snprintf(key, sizeof(key), "\n%s=", rows[k].probe);
            char *line = !strncmp(out, key + 1, strlen(key + 1)) ? out : strstr(out, key);
            if (!line) {
                snprintf(why + strlen(why), sizeof(why) - strlen(why),
                         "role %s: no result for %s in:\n%s\n", roles[ri].role, rows[k].probe, out);
                break;
            }
            line = strchr(line + 1, '=') + 1;
            size_t l = strcspn(line, "\n");
            bool eperm = l == 5 && !strncmp(line, "EPERM", 5);
            char want = rows[k].want[ri];
            if ((want == A && eperm) || (want == D && !eperm))
                snprintf(why + strlen(why), sizeof(why) - strlen(why),
                         "role %s (%s): %s: want %s, the probe saw %.*s\n", roles[ri].role,
                         roles[ri].file ? roles[ri].file : "default", rows[k].probe,
                         want == A ? "allowed" : "EPERM", (int)l, line);
        }
        free(out);
        policy_free(p);
    }
    free(abs);
    if (*why) /* every mismatch of every role, not just the first */
        fail_msg("%s", why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
