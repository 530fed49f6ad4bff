/* tests/unit/test_params.c: the shared parameter checker and schema builder of tools/params, as a
 * table of arguments -> the fault (and which parameter, item or key) it must report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/util.h"
#include "tools/params.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const colours[] = {"red", "blue", NULL};

static const struct tool_param table[] = {
    {"name", TOOL_PARAM_STRING, true, "a name", NULL, 0, 0},
    {"colour", TOOL_PARAM_STRING, false, "a colour", colours, 0, 0},
    {"flag", TOOL_PARAM_BOOL, false, "a flag", NULL, 0, 0},
    {"count", TOOL_PARAM_INT, false, "a count", NULL, 1, 10},
    {"tags", TOOL_PARAM_STRINGS, false, "tags", NULL, 0, 2},
    {"env", TOOL_PARAM_STRMAP, false, "env", NULL, 0, 1},
    {"ops", TOOL_PARAM_ITEMS, false, "ops", NULL, 1, 3},
    {"size", TOOL_PARAM_INT_TEXT, false, "a size", NULL, 0, TOOL_PARAMS_JSON_MAX},
    {"weight", TOOL_PARAM_NUMBER_TEXT, false, "a weight", NULL, -HUGE_VAL, HUGE_VAL},
    {"meta", TOOL_PARAM_OBJECT_NULL, false, "metadata", NULL, 0, 0},
};
#define N ARRAY_SIZE(table)

/* The hook refuses an op without "type", as a surface's own item check would. */
static int op_hook(const struct tool_param *p, int i, const cJSON *item, void *arg)
{
    (void)p, (void)i;
    (*(int *)arg)++;
    return cJSON_GetObjectItemCaseSensitive(item, "type") ? 0 : -1;
}

static void faults_name_the_parameter(void **state)
{
    (void)state;
    static const struct {
        const char *args;
        enum tool_param_fault fault;
        const char *param; /* NULL: none */
        int item;
        const char *key;
    } cases[] = {
        {"5", TOOL_PARAM_NOT_OBJECT, NULL, -1, NULL},
        {"[]", TOOL_PARAM_NOT_OBJECT, NULL, -1, NULL},
        {"{\"name\":\"a\",\"nmae\":1}", TOOL_PARAM_UNKNOWN, NULL, -1, "nmae"},
        {"{}", TOOL_PARAM_REQUIRED, "name", -1, NULL},
        {"{\"name\":null}", TOOL_PARAM_REQUIRED, "name", -1, NULL},
        {"{\"name\":1}", TOOL_PARAM_TYPE, "name", -1, NULL},
        {"{\"name\":\"a\",\"colour\":\"green\"}", TOOL_PARAM_CHOICE, "colour", -1, NULL},
        {"{\"name\":\"a\",\"flag\":1}", TOOL_PARAM_TYPE, "flag", -1, NULL},
        {"{\"name\":\"a\",\"count\":\"3\"}", TOOL_PARAM_TYPE, "count", -1, NULL},
        {"{\"name\":\"a\",\"count\":1.5}", TOOL_PARAM_NOT_WHOLE, "count", -1, NULL},
        {"{\"name\":\"a\",\"count\":1e999}", TOOL_PARAM_NOT_FINITE, "count", -1, NULL},
        {"{\"name\":\"a\",\"count\":11}", TOOL_PARAM_RANGE, "count", -1, NULL},
        {"{\"name\":\"a\",\"count\":0}", TOOL_PARAM_RANGE, "count", -1, NULL},
        {"{\"name\":\"a\",\"tags\":\"x\"}", TOOL_PARAM_TYPE, "tags", -1, NULL},
        {"{\"name\":\"a\",\"tags\":[\"a\",\"b\",\"c\"]}", TOOL_PARAM_COUNT, "tags", -1, NULL},
        {"{\"name\":\"a\",\"tags\":[\"a\",2]}", TOOL_PARAM_ITEM, "tags", 1, NULL},
        {"{\"name\":\"a\",\"env\":[]}", TOOL_PARAM_TYPE, "env", -1, NULL},
        {"{\"name\":\"a\",\"env\":{\"A\":\"1\",\"B\":\"2\"}}", TOOL_PARAM_COUNT, "env", -1, NULL},
        {"{\"name\":\"a\",\"env\":{\"A\":1}}", TOOL_PARAM_ITEM, "env", -1, "A"},
        {"{\"name\":\"a\",\"ops\":[]}", TOOL_PARAM_COUNT, "ops", -1, NULL},
        {"{\"name\":\"a\",\"ops\":[{\"type\":1},5]}", TOOL_PARAM_ITEM, "ops", 1, NULL},
        {"{\"name\":\"a\",\"ops\":[{\"type\":1},{}]}", TOOL_PARAM_HOOK, "ops", 1, NULL},
        {"{\"name\":\"a\",\"size\":\"12x\"}", TOOL_PARAM_TYPE, "size", -1, NULL},
        {"{\"name\":\"a\",\"size\":\"-1\"}", TOOL_PARAM_RANGE, "size", -1, NULL},
        {"{\"name\":\"a\",\"size\":\"inf\"}", TOOL_PARAM_NOT_FINITE, "size", -1, NULL},
        {"{\"name\":\"a\",\"weight\":\"nan\"}", TOOL_PARAM_NOT_FINITE, "weight", -1, NULL},
        {"{\"name\":\"a\",\"meta\":[]}", TOOL_PARAM_TYPE, "meta", -1, NULL},
        /* the first fault in the order the keys were sent wins */
        {"{\"flag\":1,\"count\":0}", TOOL_PARAM_TYPE, "flag", -1, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct tool_param_bad b;
        const cJSON *v[N];
        cJSON *args = cJSON_Parse(cases[i].args); /* b and v borrow from it */
        assert_non_null(args);
        int hooks = 0;
        assert_int_equal(tool_params_check(table, N, args, v, NULL, op_hook, &hooks, &b), -EINVAL);
        if (b.fault != cases[i].fault)
            fail_msg("%s: fault %d, expected %d", cases[i].args, b.fault, cases[i].fault);
        if (cases[i].param)
            assert_string_equal(b.param->name, cases[i].param);
        else
            assert_null(b.param);
        assert_int_equal(b.item, cases[i].item);
        if (cases[i].key)
            assert_string_equal(b.key, cases[i].key);
        cJSON_Delete(args);
    }
}

static void good_arguments_pass_with_their_values(void **state)
{
    (void)state;
    struct tool_param_bad b;
    const cJSON *v[N];
    double num[N];
    cJSON *args = cJSON_Parse("{\"name\":\"a\",\"colour\":\"blue\",\"flag\":false,\"count\":10,"
                              "\"tags\":[],\"env\":{\"A\":\"1\"},\"ops\":[{\"type\":1}],"
                              "\"size\":\"42\",\"weight\":\"0.25\",\"meta\":null}");
    int hooks = 0;
    assert_int_equal(tool_params_check(table, N, args, v, num, op_hook, &hooks, &b), 0);
    assert_int_equal(b.fault, TOOL_PARAM_OK);
    assert_int_equal(hooks, 1);
    for (size_t i = 0; i < N; i++)
        assert_non_null(v[i]); /* an object-or-null parameter keeps its null */
    assert_true(num[3] == 10 && num[7] == 42 && num[8] == 0.25);
    cJSON_Delete(args);
    /* no arguments at all, or JSON null, read as an empty object */
    assert_int_equal(tool_params_check(table + 1, N - 1, NULL, v, NULL, NULL, NULL, &b), 0);
    cJSON *null = cJSON_CreateNull();
    assert_int_equal(tool_params_check(table + 1, N - 1, null, v, NULL, NULL, NULL, &b), 0);
    assert_null(v[0]);
    cJSON_Delete(null);
}

static cJSON *ops_schema(const struct tool_param *p)
{
    (void)p;
    return cJSON_Parse("{\"type\":\"array\",\"items\":{\"type\":\"object\"}}");
}

static void schema_follows_the_table(void **state)
{
    (void)state;
    cJSON *o = tool_params_entry("t", "a tool", table, N, 0, ops_schema);
    char *s = cJSON_PrintUnformatted(o);
    assert_string_equal(
        s, "{\"name\":\"t\",\"description\":\"a "
           "tool\",\"inputSchema\":{\"type\":\"object\",\"properties\":{"
           "\"name\":{\"type\":\"string\",\"description\":\"a name\"},"
           "\"colour\":{\"type\":\"string\",\"enum\":[\"red\",\"blue\"],\"description\":\"a colour\"},"
           "\"flag\":{\"type\":\"boolean\",\"description\":\"a flag\"},"
           "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"description\":\"a count\"},"
           "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"tags\"},"
           "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},\"description\":"
           "\"env\"},"
           "\"ops\":{\"type\":\"array\",\"items\":{\"type\":\"object\"},\"description\":\"ops\"},"
           "\"size\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"a size\"},"
           "\"weight\":{\"type\":\"number\",\"description\":\"a weight\"},"
           "\"meta\":{\"type\":[\"object\",\"null\"],\"description\":\"metadata\"}},"
           "\"required\":[\"name\"],\"additionalProperties\":false}}");
    free(s);
    cJSON_Delete(o);
    /* the flags: every bound, no bounds, an empty required list */
    o = tool_params_entry("t", "d", table + 3, 2, TOOL_PARAMS_ALL_BOUNDS, NULL);
    s = cJSON_PrintUnformatted(cJSON_GetObjectItem(o, "inputSchema"));
    assert_string_equal(
        s, "{\"type\":\"object\",\"properties\":{"
           "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"description\":\"a count\"},"
           "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":0,\"maxItems\":2,"
           "\"description\":\"tags\"}},\"additionalProperties\":false}");
    free(s);
    cJSON_Delete(o);
    o = tool_params_entry("t", "d", table + 3, 1, TOOL_PARAMS_NO_BOUNDS | TOOL_PARAMS_ALWAYS_REQUIRED,
                          NULL);
    s = cJSON_PrintUnformatted(cJSON_GetObjectItem(o, "inputSchema"));
    assert_string_equal(s, "{\"type\":\"object\",\"properties\":{"
                           "\"count\":{\"type\":\"integer\",\"description\":\"a count\"}},"
                           "\"required\":[],\"additionalProperties\":false}");
    free(s);
    cJSON_Delete(o);
    /* an items parameter whose surface gives no schema cannot be listed */
    assert_null(tool_params_entry("t", "d", table + 6, 1, 0, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(faults_name_the_parameter),
        cmocka_unit_test(good_arguments_pass_with_their_values),
        cmocka_unit_test(schema_follows_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
