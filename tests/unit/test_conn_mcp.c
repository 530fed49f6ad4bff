/* tests/unit/test_conn_mcp.c: the MCP host-facing messages of supervisor/conn/mcp.c as tables:
 * annotations from the gate's read / write / command table for every surface, what a person is
 * asked for an approval and how each answer is read, progress tokens, log levels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "supervisor/conn/mcp.h"
#include "tools/gate.h"

#include <string.h>

static bool hint(const cJSON *t, const char *name)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "annotations"),
                                                      name);
    assert_true(cJSON_IsBool(h));
    return cJSON_IsTrue(h);
}

static void annotations_follow_the_table(void **state)
{
    (void)state;
    static const char *const surfaces[] = {"wap", "file", "kward", "voltagent"};
    for (size_t i = 0; i < ARRAY_SIZE(surfaces); i++) {
        const struct tool_surface *s = tool_surface_find(surfaces[i]);
        assert_non_null(s);
        struct tool_ctx ctx = {.root_fd = -1};
        cJSON *tools = tool_surface_list(s, &ctx);
        assert_non_null(tools);
        assert_int_equal(mcp_tools_annotate(tools, s), 0);
        assert_true(cJSON_GetArraySize(tools) > 0 && (size_t)cJSON_GetArraySize(tools) <= s->n_defs);
        const cJSON *t;
        cJSON_ArrayForEach (t, tools) {
            const char *name = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
            const struct tool_def *d = tool_surface_def(s, name);
            assert_non_null(d);
            bool reads = d->kind == TOOL_KIND_READ;
            if (hint(t, "readOnlyHint") != reads || hint(t, "destructiveHint") == reads ||
                hint(t, "idempotentHint") != reads || hint(t, "openWorldHint"))
                fail_msg("%s/%s: hints do not follow its kind %d", surfaces[i], name, (int)d->kind);
            const cJSON *os = cJSON_GetObjectItemCaseSensitive(t, "outputSchema");
            assert_string_equal(cJSON_GetObjectItemCaseSensitive(os, "type")->valuestring, "object");
        }
        cJSON_Delete(tools);
    }
}

static void the_question_names_tool_paths_and_command(void **state)
{
    (void)state;
    cJSON *args = cJSON_Parse("{\"command\":\"echo\",\"args\":[\"hi\",\"there\"],\"cwd\":\"sub\","
                              "\"paths\":[\"a.txt\",\"b.txt\"],\"file_path\":\"/c.txt\"}");
    cJSON *p = mcp_elicit_approval("voltagent", "execute_command", args);
    assert_non_null(p);
    const char *msg = cJSON_GetObjectItemCaseSensitive(p, "message")->valuestring;
    static const char *const want[] = {"Tool: execute_command (voltagent surface)",
                                       "Path: /c.txt",
                                       "Path: a.txt",
                                       "Path: b.txt",
                                       "Working directory: sub",
                                       "Command: echo hi there"};
    for (size_t i = 0; i < ARRAY_SIZE(want); i++)
        if (!strstr(msg, want[i]))
            fail_msg("the question lacks \"%s\":\n%s", want[i], msg);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(p, "requestedSchema");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(schema, "type")->valuestring, "object");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(p, "mode")->valuestring, "form");
    cJSON_Delete(p);
    cJSON_Delete(args);
    /* no arguments at all: still a question */
    p = mcp_elicit_approval(NULL, "getWorkspaceInfo", NULL);
    assert_non_null(
        strstr(cJSON_GetObjectItemCaseSensitive(p, "message")->valuestring, "getWorkspaceInfo"));
    cJSON_Delete(p);
}

static void answers_are_read_strictly(void **state)
{
    (void)state;
    static const struct {
        const char *result, *error;
        enum mcp_decision want;
    } cases[] = {
        {"{\"action\":\"accept\",\"content\":{\"approve\":true}}", NULL, MCP_DECISION_APPROVED},
        {"{\"action\":\"accept\"}", NULL, MCP_DECISION_APPROVED},
        {"{\"action\":\"accept\",\"content\":{\"approve\":false}}", NULL, MCP_DECISION_DECLINED},
        {"{\"action\":\"decline\"}", NULL, MCP_DECISION_DECLINED},
        {"{\"action\":\"cancel\"}", NULL, MCP_DECISION_CANCELLED},
        {"{\"action\":\"ACCEPT\"}", NULL, MCP_DECISION_CANCELLED},
        {"{\"action\":1}", NULL, MCP_DECISION_CANCELLED},
        {"[]", NULL, MCP_DECISION_CANCELLED},
        {NULL, "{\"code\":-32601,\"message\":\"no\"}", MCP_DECISION_CANCELLED},
        {"{\"action\":\"accept\"}", "{\"code\":1}", MCP_DECISION_CANCELLED}, /* an error wins */
        {NULL, NULL, MCP_DECISION_CANCELLED},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        cJSON *r = cases[i].result ? cJSON_Parse(cases[i].result) : NULL;
        cJSON *e = cases[i].error ? cJSON_Parse(cases[i].error) : NULL;
        enum mcp_decision d = mcp_elicit_decision(r, e);
        if (d != cases[i].want)
            fail_msg("case %zu: %s / %s read as %s", i, cases[i].result, cases[i].error,
                     mcp_decision_name(d));
        cJSON_Delete(r);
        cJSON_Delete(e);
    }
}

static void progress_tokens_and_levels(void **state)
{
    (void)state;
    cJSON *p = cJSON_Parse("{\"_meta\":{\"progressToken\":\"t-1\"}}");
    assert_string_equal(mcp_progress_token(p)->valuestring, "t-1");
    cJSON_Delete(p);
    p = cJSON_Parse("{\"_meta\":{\"progressToken\":7}}");
    assert_true(cJSON_IsNumber(mcp_progress_token(p)));
    cJSON *n = mcp_progress(mcp_progress_token(p), 2.345, 100);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(n, "progressToken")->valueint, 7);
    assert_true(cJSON_GetObjectItemCaseSensitive(n, "progress")->valuedouble == 2.3);
    assert_non_null(strstr(cJSON_GetObjectItemCaseSensitive(n, "message")->valuestring, "100 bytes"));
    cJSON_Delete(n);
    cJSON_Delete(p);
    static const char *const none[] = {"{}", "{\"_meta\":{}}", "{\"_meta\":{\"progressToken\":{}}}",
                                       "{\"_meta\":{\"progressToken\":null}}", "{\"_meta\":1}"};
    for (size_t i = 0; i < ARRAY_SIZE(none); i++) {
        p = cJSON_Parse(none[i]);
        assert_null(mcp_progress_token(p));
        cJSON_Delete(p);
    }
    assert_null(mcp_progress_token(NULL));
    assert_int_equal(mcp_log_level_parse("debug"), MCP_LOG_DEBUG);
    assert_int_equal(mcp_log_level_parse("warning"), MCP_LOG_WARNING);
    assert_int_equal(mcp_log_level_parse("emergency"), MCP_LOG_EMERGENCY);
    assert_int_equal(mcp_log_level_parse("warn"), -EINVAL);
    assert_int_equal(mcp_log_level_parse(NULL), -EINVAL);
    cJSON *l = mcp_log_denial(MCP_LOG_WARNING, "path", "readFile", "workspace containment",
                              "PERMISSION_DENIED");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(l, "level")->valuestring, "warning");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(l, "logger")->valuestring, "corral");
    cJSON_Delete(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(annotations_follow_the_table),
        cmocka_unit_test(the_question_names_tool_paths_and_command),
        cmocka_unit_test(answers_are_read_strictly),
        cmocka_unit_test(progress_tokens_and_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
