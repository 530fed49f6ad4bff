/* tests/unit/test_gate.c: the one tool gate (tools/gate.h). Each surface's table and the tools
 * it answers are the same set (a tool the table does not know fails here, and so does a row no
 * surface tool answers); the policy reads that same table; and the gate's verdicts, rule by
 * rule, on every surface: a disabled tool never runs, one that needs approval is refused in the
 * surface's own shape and never runs, read-before-write refuses an unread or changed file. */
#include "wap_fixture.h"

#include "policy/policy.h"
#include "tools/gate.h"
#include "tools/session.h"

static const char *const surfaces[] = {"wap", "file", "voltagent", "kward"};

/* A write tool of each surface with the JSON that overwrites notes.txt, and a read that reads it. */
static const struct {
    const char *surface, *write, *write_args, *read, *read_args;
} ops[] = {
    {"wap", "writeFile", "{\"path\":\"notes.txt\",\"content\":\"NEW\"}", "readFile",
     "{\"path\":\"notes.txt\"}"},
    {"file", "file.write", "{\"path\":\"notes.txt\",\"content\":\"NEW\"}", "file.read",
     "{\"path\":\"notes.txt\"}"},
    {"voltagent", "write_file", "{\"file_path\":\"/notes.txt\",\"content\":\"NEW\",\"overwrite\":true}",
     "read_file", "{\"file_path\":\"/notes.txt\"}"},
    {"kward", "write_file", "{\"path\":\"notes.txt\",\"content\":\"NEW\"}", "read_file",
     "{\"path\":\"notes.txt\"}"},
};

static int setup(void **state)
{
    if (fx_setup(state) < 0)
        return -1;
    struct fx *f = *state;
    f->ctx.allow_commands = true;
    return tool_session_new(&f->ctx.session);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    tool_session_free(f->ctx.session);
    return fx_teardown(state);
}

static bool in_defs(const struct tool_surface *s, const char *name)
{
    return tool_surface_def(s, name) != NULL;
}

/* Every listed tool is a row of the table, every row is listed and answered (not -ENOENT), and
 * the policy's view of the surface is the table itself. */
static void table_and_surface_agree(void **state)
{
    struct fx *f = *state;
    for (size_t k = 0; k < ARRAY_SIZE(surfaces); k++) {
        const struct tool_surface *s = tool_surface_find(surfaces[k]);
        assert_non_null(s);
        assert_true(s->n_defs > 0 && s->run && s->target && s->refuse);
        cJSON *arr = s->list(&f->ctx);
        assert_non_null(arr);
        size_t n = 0;
        for (const cJSON *t = arr->child; t; t = t->next, n++) {
            const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
            if (!in_defs(s, name))
                fail_msg("%s lists tool %s, which the gate's table does not know", s->name, name);
        }
        cJSON_Delete(arr);
        if (n != s->n_defs)
            fail_msg("%s lists %zu tools, its table has %zu", s->name, n, s->n_defs);
        for (size_t i = 0; i < s->n_defs; i++) {
            cJSON *res = NULL;
            bool err = false;
            cJSON *args = cJSON_Parse("{\"zz_not_an_argument\":1}");
            int r = s->run(&f->ctx, s->defs[i].name, args, &res, &err);
            if (r == -ENOENT)
                fail_msg("%s's table has %s, which the surface does not answer", s->name,
                         s->defs[i].name);
            cJSON_Delete(res);
            cJSON_Delete(args);
        }
        size_t pn;
        const struct tool_def *pd = policy_surface_tools(s->name, &pn);
        assert_ptr_equal(pd, s->defs);
        assert_int_equal(pn, s->n_defs);
        bool err;
        cJSON *res;
        assert_int_equal(tool_surface_call(s, &f->ctx, "no_such_tool", NULL, &res, &err), -ENOENT);
    }
}

static cJSON *call(struct fx *f, const struct tool_surface *s, const char *tool, const char *json,
                   bool *err, int *rc)
{
    cJSON *args = cJSON_Parse(json), *res = NULL;
    *rc = tool_surface_call(s, &f->ctx, tool, args, &res, err);
    cJSON_Delete(args);
    return res;
}

static void expect_notes(struct fx *f, const char *want)
{
    char *c = fx_get(f, "notes.txt");
    assert_non_null(c);
    assert_string_equal(c, want);
    free(c);
}

/* The three rules, ALLOWED / DISALLOWED, on every surface; the file shows whether it ran. */
static void rules_on_every_surface(void **state)
{
    struct fx *f = *state;
    for (size_t k = 0; k < ARRAY_SIZE(ops); k++) {
        const struct tool_surface *s = tool_surface_find(ops[k].surface);
        int rc;
        bool err;
        cJSON *res;
        struct tool_rule rule = {.name = ops[k].write, .enabled = true};
        f->ctx.rules = &rule;
        f->ctx.n_rules = 1;
        tool_session_free(f->ctx.session);
        assert_int_equal(tool_session_new(&f->ctx.session), 0);

        /* disabled: never runs */
        fx_put(f, "notes.txt", "old\n");
        rule.enabled = false;
        res = call(f, s, ops[k].write, ops[k].write_args, &err, &rc);
        assert_int_equal(rc, -EPERM);
        assert_null(res);
        expect_notes(f, "old\n");
        /* needs approval: refused in the surface's shape, never runs */
        rule.enabled = true;
        rule.needs_approval = true;
        res = call(f, s, ops[k].write, ops[k].write_args, &err, &rc);
        assert_int_equal(rc, 0);
        assert_true(err);
        char *text = cJSON_PrintUnformatted(res);
        if (!strstr(text, "approv"))
            fail_msg("%s: approval refusal does not say so: %s", s->name, text);
        if (s->denial)
            assert_non_null(s->denial(res));
        free(text);
        cJSON_Delete(res);
        expect_notes(f, "old\n");
        /* read before write: an unread file is refused, a read one is written */
        rule.needs_approval = false;
        rule.read_before_write = true;
        res = call(f, s, ops[k].write, ops[k].write_args, &err, &rc);
        assert_int_equal(rc, 0);
        assert_true(err);
        if (s->denial)
            assert_string_equal(s->denial(res), "read before write");
        cJSON_Delete(res);
        expect_notes(f, "old\n");
        cJSON_Delete(call(f, s, ops[k].read, ops[k].read_args, &err, &rc));
        assert_false(err);
        res = call(f, s, ops[k].write, ops[k].write_args, &err, &rc);
        assert_false(err);
        cJSON_Delete(res);
        expect_notes(f, "NEW");
        /* changed behind the agent's back: refused again */
        fx_put(f, "notes.txt", "theirs\n");
        res = call(f, s, ops[k].write, ops[k].write_args, &err, &rc);
        assert_true(err);
        cJSON_Delete(res);
        expect_notes(f, "theirs\n");
        /* no rule at all on a plain write: it runs */
        rule.read_before_write = false;
        res = call(f, s, ops[k].write, ops[k].write_args, &err, &rc);
        assert_false(err);
        cJSON_Delete(res);
        expect_notes(f, "NEW");
        f->ctx.rules = NULL;
        f->ctx.n_rules = 0;
    }
}

/* The verdict itself, for the highway to come: NEEDS_APPROVAL is a verdict of its own. */
static void verdicts(void **state)
{
    struct fx *f = *state;
    const struct tool_surface *s = tool_surface_find("wap");
    struct tool_rule rule = {.name = "writeFile", .enabled = true, .needs_approval = true};
    f->ctx.rules = &rule;
    f->ctx.n_rules = 1;
    cJSON *args = cJSON_Parse("{\"path\":\"a.txt\",\"content\":\"x\"}");
    struct tool_verdict v;
    assert_int_equal(tool_gate_check(s, &f->ctx, "writeFile", args, &v), 0);
    assert_int_equal(v.kind, TOOL_VERDICT_NEEDS_APPROVAL);
    assert_int_equal(v.rule, TOOL_RULE_APPROVAL);
    assert_int_equal(v.def->kind, TOOL_KIND_WRITE);
    tool_verdict_clear(&v);
    assert_int_equal(tool_gate_check(s, &f->ctx, "readFile", args, &v), 0);
    assert_int_equal(v.kind, TOOL_VERDICT_ALLOW); /* malformed for readFile: the surface answers */
    tool_verdict_clear(&v);
    assert_int_equal(tool_gate_check(s, &f->ctx, "nope", args, &v), -ENOENT);
    cJSON_Delete(args);
    f->ctx.rules = NULL;
    f->ctx.n_rules = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(table_and_surface_agree, setup, teardown),
        cmocka_unit_test_setup_teardown(rules_on_every_surface, setup, teardown),
        cmocka_unit_test_setup_teardown(verdicts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
