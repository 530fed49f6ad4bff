/* tests/unit/test_policy.c: the policy loader: one test per kind of mistake (line, column and
 * message), every problem reported in one pass, comments and positions, inheritance, the
 * embedded default policy and the example policies. */
#include "policy/policy.h"
#include "tools/tool.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

struct err_case {
    const char *what;
    const char *text;
    int line, col;
    const char *message; /* a substring of the message */
};

/* Columns count characters from 1; lines from 1. */
static const struct err_case cases[] = {
    {"syntax error: missing comma", "{\n  \"version\": 1\n  \"roles\": {}\n}\n", 3, 3,
     "is a ',' missing before it?"},
    {"syntax error: end of file", "{\n  \"roles\": {\n", 2, 12, "unexpected end of file"},
    {"unterminated comment", "{ /* a comment\n \"version\": 1 }\n", 1, 3, "unterminated /* comment"},
    {"unknown key with suggestion",
     "{\n  \"roles\": { \"worker\": { \"sandbox\": { \"netwrok\": \"none\" } } }\n}\n", 2, 39,
     "unknown key 'netwrok' in roles.worker.sandbox; did you mean 'network'?"},
    {"unknown top-level key", "{ \"rolez\": {} }", 1, 3,
     "unknown key 'rolez' in the top level; did you mean 'roles'?"},
    {"duplicate key", "{ \"version\": 1,\n  \"version\": 1 }", 2, 3,
     "duplicate key 'version' in the top level (first at line 1)"},
    {"wrong type", "{ \"roles\": { \"worker\": { \"sandbox\": { \"landlock\": \"yes\" } } } }", 1, 51,
     "roles.worker.sandbox.landlock must be true or false, not a string"},
    {"out of range", "{ \"roles\": { \"worker\": { \"budgets\": { \"pids\": 0 } } } }", 1, 47,
     "roles.worker.budgets.pids must be a whole number from 1 to 4194304, not 0"},
    {"bad size", "{ \"roles\": { \"worker\": { \"budgets\": { \"memory\": \"512X\" } } } }", 1, 49,
     "roles.worker.budgets.memory: '512X' is not a size"},
    {"size too small", "{ \"roles\": { \"worker\": { \"budgets\": { \"memory\": \"1K\" } } } }", 1, 49,
     "roles.worker.budgets.memory must be between 4M and 4T bytes"},
    {"bad duration",
     "{ \"roles\": { \"worker\": { \"budgets\": { \"wall_time\": \"ten minutes\" } } } }", 1, 52,
     "'ten minutes' is not a duration"},
    {"bad enum", "{ \"roles\": { \"worker\": { \"sandbox\": { \"network\": \"host\" } } } }", 1, 50,
     "roles.worker.sandbox.network: unknown value 'host'; write one of \"none\", \"loopback\" or "
     "\"proxy\""},
    {"unknown syscall",
     "{ \"roles\": { \"worker\": { \"sandbox\": { \"seccomp\": { \"deny\": [\"frobnicate\"] } } } } }",
     1, 61, "unknown syscall 'frobnicate' on this architecture"},
    {"unknown syscall group",
     "{ \"roles\": { \"worker\": { \"sandbox\": { \"seccomp\": { \"allow\": [\"@fle-read\"] } } } } }",
     1, 62, "unknown syscall group '@fle-read'; did you mean '@file-read'?"},
    {"always-denied syscall allowed",
     "{ \"roles\": { \"worker\": { \"sandbox\": { \"seccomp\": { \"allow\": [\"@basic-io\",\n "
     "\"ptrace\"] } } } } }",
     2, 2, "'ptrace' is on the always-denied list"},
    {"extends an unknown role", "{ \"roles\": { \"rev\": { \"extends\": \"wroker\" } } }", 1, 34,
     "roles.rev.extends: unknown role 'wroker'; a derived role extends 'worker' or 'observer' (did you "
     "mean 'worker'?)"},
    {"extends a derived role",
     "{ \"roles\": { \"a\": { \"extends\": \"worker\" },\n \"b\": { \"extends\": \"a\" } } }", 2, 20,
     "roles.b.extends: 'a' is a derived role, and derived roles cannot be extended"},
    {"extends the coordinator", "{ \"roles\": { \"boss\": { \"extends\": \"coordinator\" } } }", 1, 35,
     "the coordinator role cannot be extended"},
    {"derived role without extends", "{ \"roles\": {\n \"reviewer\": { \"add\": [] } } }", 2, 2,
     "'reviewer' is not a base role, so it needs \"extends\""},
    {"capability escalation: coordinator action",
     "{ \"roles\": { \"w\": { \"extends\": \"worker\", \"add\": [\"create_workspace\"] } } }", 1, 50,
     "'create_workspace' is above the ceiling of base role 'worker' (a coordinator-level protocol "
     "action)"},
    {"capability escalation: signal",
     "{ \"roles\": { \"w\": { \"extends\": \"worker\", \"add\": [\"emit: integrate\"] } } }", 1, 50,
     "'emit:integrate' is above the ceiling of base role 'worker'"},
    {"capability escalation: observer sends",
     "{ \"roles\": { \"o\": { \"extends\": \"observer\", \"add\": [\"send:query->coordinator\"] } } }",
     1, 52, "observers send no envelopes"},
    {"authority escalation: observer writes",
     "{ \"roles\": { \"o\": { \"extends\": \"observer\", \"authority\": { \"write\": true } } } }", 1,
     68, "roles.o.authority.write: a role based on 'observer' cannot have write authority"},
    {"remove of a capability the base lacks",
     "{ \"roles\": { \"w\": { \"extends\": \"worker\", \"remove\": [\"emit:integrate\"] } } }", 1, 53,
     "base role 'worker' does not have 'emit:integrate', so there is nothing to remove"},
    {"unregistered envelope type",
     "{ \"roles\": { \"w\": { \"extends\": \"worker\", \"add\": [\"send:report->coordinator\"] } } }", 1,
     50, "neither a base type (directive, feedback, query) nor registered under envelope_types"},
    {"base role with add", "{ \"roles\": { \"worker\": { \"add\": [] } } }", 1, 26,
     "the base role 'worker' cannot have 'add'"},
    {"unknown tool of the surface",
     "{ \"roles\": { \"worker\": { \"surface\": \"kward\", \"tools\": { \"needs_approval\": "
     "[\"executeCommand\"] } } } }",
     1, 76, "'executeCommand' is not a tool of the 'kward' surface"},
    {"tool needs authority",
     "{ \"roles\": { \"worker\": { \"tools\": { \"enabled\": [\"readFile\", \"executeCommand\"] } } } }",
     1, 61, "'executeCommand' needs commands authority, which role 'worker' does not have"},
    {"read_before_write on a reading tool",
     "{ \"roles\": { \"worker\": { \"tools\": { \"read_before_write\": [\"readFile\"] } } } }", 1, 59,
     "read_before_write applies to tools that change files"},
    {"@exec without command authority",
     "{ \"roles\": { \"worker\": { \"sandbox\": { \"seccomp\": { \"allow\": [\"@basic-io\", \"@exec\"] "
     "} } } } }",
     1, 75, "'@exec' is not allowed for role 'worker': it has no command authority"},
    {"@file-write for an observer",
     "{ \"roles\": { \"observer\": { \"sandbox\": { \"seccomp\": { \"allow\": [\"@file-write\"] } } } } "
     "}",
     1, 64, "observers cannot open files for writing"},
    {"loopback without network authority",
     "{ \"roles\": {\n \"worker\": { \"sandbox\": { \"network\": \"loopback\" } } } }", 2, 2,
     "roles.worker.sandbox.network is \"loopback\" but role 'worker' has no network authority"},
    {"rw mount without write authority",
     "{ \"roles\": {\n \"observer\": { \"sandbox\": { \"mounts\": [ { \"host\": \"/usr\", \"inside\": "
     "\"/opt/u\", \"mode\": \"rw\" } ] } } } }",
     2, 2, "is mounted read-write but role 'observer' has no write authority"},
    {"mount host path missing",
     "{ \"roles\": { \"worker\": { \"sandbox\": { \"mounts\": [ { \"host\": \"/nonexistent/x\" } ] } } "
     "} }",
     1, 61, "'/nonexistent/x' does not exist"},
    {"relative path",
     "{ \"roles\": { \"worker\": { \"sandbox\": { \"mounts\": [ { \"host\": \"opt\" } ] } } } }", 1, 61,
     "'opt' is not an absolute path"},
    {"agent binary missing",
     "{ \"agents\": { \"a\": { \"binary\": \"/nonexistent/agent\", \"role\": \"worker\" } } }", 1, 32,
     "agents.a.binary: '/nonexistent/agent' cannot be used: No such file or directory"},
    {"agent role unknown",
     "{ \"agents\": { \"a\": { \"binary\": \"/bin/sh\", \"role\": \"wroker\" } } }", 1, 51,
     "agents.a.role: unknown role 'wroker'; did you mean 'worker'?"},
    {"two coordinators",
     "{ \"agents\": { \"a\": { \"binary\": \"/bin/sh\", \"role\": \"coordinator\" },\n \"b\": { "
     "\"binary\": \"/bin/sh\", \"role\": \"coordinator\" } } }",
     2, 38, "agent 'a' already holds the coordinator role"},
    {"highway fallback",
     "{ \"highway\": { \"gate_overrides\": { \"integration\": { \"fallback\": \"approv\" } } } }", 1, 65,
     "unknown value 'approv'; did you mean 'approve'?"},
    {"users key", "{ \"users\": { \"alice\": \"alice\" } }", 1, 14, "a key of users is a numeric uid"},
    {"nul byte", "{ \"a\\u0000\": 1 }", 1, 3, "unknown key"},
};

static const struct policy_diag *find_diag(const struct policy_diags *d, const char *sub)
{
    for (size_t i = 0; i < d->n; i++)
        if (strstr(d->v[i].message, sub))
            return &d->v[i];
    return NULL;
}

static void dump(const struct policy_diags *d)
{
    for (size_t i = 0; i < d->n; i++)
        fprintf(stderr, "#   got %d:%d: %s\n", d->v[i].line, d->v[i].col, d->v[i].message);
}

static void test_each_mistake(void **state)
{
    (void)state;
    size_t bad = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct err_case *c = &cases[i];
        struct policy *p = NULL;
        struct policy_diags d = {0};
        int r = policy_load_buffer("t.json", c->text, strlen(c->text), &p, &d);
        const struct policy_diag *g = find_diag(&d, c->message);
        if (r != -EINVAL || !g || g->line != c->line || g->col != c->col || strcmp(g->file, "t.json")) {
            dump(&d);
            fprintf(stderr, "# %s: want -EINVAL and %d:%d: ...%s..., got %d and %s%d:%d\n", c->what,
                    c->line, c->col, c->message, r, g ? "" : "no such message; first at ",
                    g     ? g->line
                    : d.n ? d.v[0].line
                          : 0,
                    g     ? g->col
                    : d.n ? d.v[0].col
                          : 0);
            bad++;
        }
        assert_null(p);
        policy_diags_free(&d);
    }
    if (bad)
        fail_msg("%zu of the mistakes were not reported as expected", bad);
}

/* A NUL byte in the raw file (not an escape) is refused, at its position. */
static void test_nul_byte(void **state)
{
    (void)state;
    static const char text[] = "{\n  \"version\": 1\0 }";
    struct policy *p = NULL;
    struct policy_diags d = {0};
    assert_int_equal(policy_load_buffer("t", text, sizeof(text) - 1, &p, &d), -EINVAL);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.v[0].line, 2);
    assert_int_equal(d.v[0].col, 15);
    assert_non_null(strstr(d.v[0].message, "NUL byte"));
    policy_diags_free(&d);
}

/* Every problem in one pass, in file order. */
static void test_reports_all(void **state)
{
    (void)state;
    static const char text[] =
        "{\n"
        "  \"roles\": {\n"
        "    \"worker\": { \"budgets\": { \"memroy\": \"1G\", \"pids\": \"many\" } },\n"
        "    \"x\": { \"extends\": \"nobody\" }\n"
        "  },\n"
        "  \"trail\": { \"durability\": \"fast\" }\n"
        "}\n";
    struct policy *p = NULL;
    struct policy_diags d = {0};
    assert_int_equal(policy_load_buffer("t", text, strlen(text), &p, &d), -EINVAL);
    if (d.n != 4)
        dump(&d);
    assert_int_equal(d.n, 4);
    assert_int_equal(d.v[0].line, 3);
    assert_non_null(strstr(d.v[0].message, "did you mean 'memory'?"));
    assert_int_equal(d.v[1].line, 3);
    assert_non_null(strstr(d.v[1].message, "pids must be a whole number"));
    assert_int_equal(d.v[2].line, 4);
    assert_int_equal(d.v[3].line, 6);
    policy_diags_free(&d);
}

/* Comments of both kinds, trailing commas, and UTF-8 columns counted in characters. */
static void test_comments_and_positions(void **state)
{
    (void)state;
    static const char text[] =
        "// line comment with \"quotes\" and /* not a block\n"
        "{ /* block\n   comment */ \"description\": \"caf\xc3\xa9 // not a comment\",\n"
        "  \"roles\": { \"worker\": { \"budgets\": { \"pids\": 64, }, }, },\n"
        "}\n";
    struct policy *p = NULL;
    struct policy_diags d = {0};
    int r = policy_load_buffer("t", text, strlen(text), &p, &d);
    if (r)
        dump(&d);
    assert_int_equal(r, 0);
    struct policy_role_view v;
    struct cerr err;
    assert_int_equal(policy_role_resolve(p, "worker", &v, &err), 0);
    assert_int_equal(v.budgets.pids, 64);
    policy_free(p);
    static const char bad[] = "{ \"description\": \"\xc3\xa9\xc3\xa9\", \"x\": 1 }";
    assert_int_equal(policy_load_buffer("t", bad, strlen(bad), &p, &d), -EINVAL);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.v[0].col, 24); /* two-byte characters count once */
    policy_diags_free(&d);
}

/* Derived roles start from the configured base (base -> remove -> add -> settings). */
static void test_inheritance(void **state)
{
    (void)state;
    static const char text[] =
        "{ \"envelope_types\": { \"report\": { \"permissions\": [ { \"sender\": \"rev\", \"receiver\": "
        "\"coordinator\" } ] } },\n"
        "  \"checkpoint_types\": { \"review\": { \"permitted_roles\": [\"rev\"] } },\n"
        "  \"roles\": {\n"
        "    \"worker\": { \"authority\": { \"commands\": true }, \"budgets\": { \"memory\": \"1G\", "
        "\"pids\": 99 },\n"
        "                \"sandbox\": { \"tmp_size\": \"32M\" } },\n"
        "    \"rev\": { \"extends\": \"worker\", \"remove\": [\"send:query->coordinator\", "
        "\"create:artifact\"],\n"
        "             \"add\": [\"send: report \xe2\x86\x92 coordinator\", "
        "\"read:assigned_workspace\"],\n"
        "             \"checkpoint_types\": [\"review\"],\n"
        "             \"authority\": { \"write\": false, \"commands\": false }, \"budgets\": { "
        "\"pids\": 7 } } } }\n";
    struct policy *p = NULL;
    struct policy_diags d = {0};
    int r = policy_load_buffer("t", text, strlen(text), &p, &d);
    if (r)
        dump(&d);
    assert_int_equal(r, 0);
    struct policy_role_view v;
    struct cerr err;
    assert_int_equal(policy_role_resolve(p, "rev", &v, &err), 0);
    assert_string_equal(v.extends, "worker");
    assert_int_equal(v.budgets.memory, 1u << 30); /* from roles.worker */
    assert_int_equal(v.budgets.pids, 7);          /* its own */
    assert_int_equal(v.sandbox.limits.tmp_size, 32u << 20);
    assert_true(policy_role_can(&v, "send:report->coordinator"));
    assert_true(policy_role_can(&v, "read:assigned_workspace"));
    assert_true(policy_role_can(&v, "create:review"));
    assert_false(policy_role_can(&v, "create:artifact"));
    assert_false(policy_role_can(&v, "send:query->coordinator"));
    assert_true(policy_role_can(&v, "emit:blocked"));
    assert_false(v.authority.write);
    assert_false(v.may_exec);
    for (size_t i = 0; i < v.n_tools; i++) /* write and command tools off without authority */
        assert_int_equal(v.tools[i].enabled, v.tools[i].kind == POLICY_TOOL_READ);
    assert_int_equal(policy_role_resolve(p, "worker", &v, &err), 0);
    assert_true(v.may_exec);
    assert_null(v.extends);
    assert_int_equal(policy_role_resolve(p, "nobody", &v, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "its roles are: coordinator, worker, observer, rev"));
    policy_free(p);
}

static void test_default_policy(void **state)
{
    (void)state;
    struct policy *p = NULL;
    struct policy_diags d = {0};
    int r = policy_load_buffer("default", policy_default_text(), strlen(policy_default_text()), &p, &d);
    if (r)
        dump(&d);
    assert_int_equal(r, 0);
    policy_free(p);
    assert_int_equal(policy_load_default(&p), 0);
    struct policy_role_view v;
    struct cerr err;
    assert_int_equal(policy_role_resolve(p, "default", &v, &err), 0);
    assert_int_equal(v.sandbox.net, SANDBOX_NET_NONE);
    assert_false(v.sandbox.seccomp.network);
    assert_true(v.may_exec); /* `corral exec -- sh -c ...` works */
    assert_true(v.sandbox.landlock);
    assert_int_equal(v.sandbox.n_binds, 0);
    assert_true(v.sandbox.limits.memory > 0 && v.sandbox.limits.pids > 0);
    assert_int_not_equal(v.sandbox.uid, 0);
    policy_free(p);
}

/* Agent binaries: only a root-owned executable no one else can write is accepted. */
static void test_agent_binary(void **state)
{
    (void)state;
    char dir[] = "/tmp/corral-policy-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char bin[256], text[1024];
    snprintf(bin, sizeof(bin), "%s/agent", dir);
    FILE *f = fopen(bin, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    struct {
        mode_t mode;
        uid_t uid;
        const char *message; /* NULL: accepted */
    } rows[] = {
        {0755, 0, NULL},
        {0644, 0, "is not executable"},
        {0775, 0, "is writable by its group"},
        {0757, 0, "is writable by every user"},
        {0755, 1000, "is owned by uid 1000"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(chown(bin, rows[i].uid, 0), 0);
        assert_int_equal(chmod(bin, rows[i].mode), 0);
        snprintf(text, sizeof(text),
                 "{ \"agents\": { \"a\": { \"binary\": \"%s\", \"role\": \"worker\" } } }", bin);
        struct policy *p = NULL;
        struct policy_diags d = {0};
        int r = policy_load_buffer("t", text, strlen(text), &p, &d);
        if (!rows[i].message) {
            if (r)
                dump(&d);
            assert_int_equal(r, 0);
            assert_int_equal(policy_agent_count(p), 1);
            assert_string_equal(policy_agent_get(p, 0)->binary, bin);
            assert_string_equal(policy_agent_get(p, 0)->argv[0], bin);
        } else {
            assert_int_equal(r, -EINVAL);
            const struct policy_diag *g = find_diag(&d, rows[i].message);
            if (!g)
                dump(&d);
            assert_non_null(g);
            assert_int_equal(g->line, 1);
            assert_int_equal(g->col, 32);
        }
        policy_free(p);
        policy_diags_free(&d);
    }
    /* A directory others can write makes the binary replaceable too. */
    assert_int_equal(chown(bin, 0, 0), 0);
    assert_int_equal(chmod(bin, 0755), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    struct policy *p = NULL;
    struct policy_diags d = {0};
    assert_int_equal(policy_load_buffer("t", text, strlen(text), &p, &d), -EINVAL);
    assert_non_null(find_diag(&d, "writable by other users"));
    policy_diags_free(&d);
    unlink(bin);
    rmdir(dir);
}

static void test_examples_load(void **state)
{
    (void)state;
    static const char *const files[] = {"reviewer.json", "worker.json", "observer.json", "session.json"};
    const char *top = getenv("TOP");
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/examples/policies/%s", top ? top : ".", files[i]);
        struct policy *p = NULL;
        struct policy_diags d = {0};
        int r = policy_load_file(path, &p, &d);
        if (r)
            dump(&d);
        assert_int_equal(r, 0);
        for (size_t k = 0; k < policy_role_count(p); k++) {
            char *buf = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&buf, &len);
            struct cerr err;
            assert_int_equal(policy_role_print(p, policy_role_name(p, k), f, &err), 0);
            fclose(f);
            assert_non_null(strstr(buf, "always denied"));
            free(buf);
        }
        policy_free(p);
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/policies/session.json", top ? top : ".");
    struct policy *p = NULL;
    struct policy_diags d = {0};
    assert_int_equal(policy_load_file(path, &p, &d), 0);
    const struct policy_agent *lead = policy_coordinator_agent(p);
    assert_non_null(lead);
    assert_string_equal(lead->name, "lead");
    struct policy_session s;
    policy_session_get(p, &s);
    assert_string_equal(s.highway->preset, "supervised");
    assert_true(s.highway->gates[POLICY_GATE_WORKSPACE_CREATE].enabled);
    assert_int_equal(s.highway->gates[POLICY_GATE_WORKSPACE_CREATE].fallback, POLICY_FALLBACK_APPROVE);
    assert_true(s.highway->gates[POLICY_GATE_INTEGRATION].timeout == 0);
    assert_int_equal(s.n_users, 2);
    assert_true(s.trail_durability_full);
    policy_free(p);
}

/* What the tool broker and the command sandboxes take from a role. */
static void test_tool_limits_and_command_profile(void **state)
{
    (void)state;
    const char *top = getenv("TOP");
    char path[4096];
    snprintf(path, sizeof(path), "%s/examples/policies/worker.json", top ? top : ".");
    struct policy *p = NULL;
    struct policy_diags d = {0};
    assert_int_equal(policy_load_file(path, &p, &d), 0);
    struct policy_role_view v;
    struct cerr err;
    assert_int_equal(policy_role_resolve(p, "worker", &v, &err), 0);
    struct tool_limits l = {.max_file_size = 1,
                            .max_search_results = 2,
                            .max_explore_entries = 3,
                            .max_output_bytes = 4,
                            .command_timeout_sec = 5,
                            .command_timeout_max = 6};
    policy_tool_limits_apply(&v, &l);
    assert_int_equal(l.max_file_size, 10u << 20); /* set by the policy */
    assert_int_equal(l.max_search_results, 2);    /* not set: the surface's default stays */
    assert_int_equal(l.max_explore_entries, 3);
    assert_int_equal(l.max_output_bytes, 1u << 20);
    assert_true(l.command_timeout_sec == 30 && l.command_timeout_max == 600);
    assert_null(l.exclude);
    assert_true(v.command_sandbox.seccomp.groups & SANDBOX_SC_EXEC);
    assert_int_equal(v.command_sandbox.limits.memory, 1u << 30);
    policy_free(p);
    snprintf(path, sizeof(path), "%s/examples/policies/reviewer.json", top ? top : ".");
    assert_int_equal(policy_load_file(path, &p, &d), 0);
    assert_int_equal(policy_role_resolve(p, "reviewer", &v, &err), 0);
    assert_false(v.command_sandbox.seccomp.groups & SANDBOX_SC_EXEC);
    policy_tool_limits_apply(&v, &l);
    assert_int_equal(l.n_exclude, 4);
    assert_string_equal(l.exclude[0], "**/.git/**");
    policy_free(p);
}

static void test_missing_file(void **state)
{
    (void)state;
    struct policy *p = NULL;
    struct policy_diags d = {0};
    assert_int_equal(policy_load_file("/nonexistent/policy.json", &p, &d), -ENOENT);
    assert_int_equal(d.n, 1);
    assert_non_null(strstr(d.v[0].message, "cannot open the policy"));
    policy_diags_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_mistake),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_reports_all),
        cmocka_unit_test(test_comments_and_positions),
        cmocka_unit_test(test_inheritance),
        cmocka_unit_test(test_default_policy),
        cmocka_unit_test(test_agent_binary),
        cmocka_unit_test(test_examples_load),
        cmocka_unit_test(test_tool_limits_and_command_profile),
        cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
