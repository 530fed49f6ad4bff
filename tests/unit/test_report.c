/* tests/unit/test_report.c: the report's escaping (every byte class), its check of Graphviz's
 * SVG, and whole pages made from real trail files holding hostile text in every field a trail
 * can hold (workspace and actor names included, which a forged or damaged file could carry):
 * every tag on the page is one the report writes itself, and the facts shown are the trail's. */
#include "supervisor/report/internal.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define H "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&amp;<svg onload=alert(3)>"

static char *escaped(const char *s, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    report_put_textn(f, s, n);
    fclose(f);
    return buf;
}

static void test_escape_table(void **state)
{
    static const struct {
        const char *in;
        size_t n;
        const char *out;
    } cases[] = {
        {"plain text", 10, "plain text"},
        {"<a href='x'>&\"", 14, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;"},
        {"tab\tnl\n", 7, "tab\tnl\n"},
        {"\x01\x1f\x7f", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* control characters */
        {"a\0b", 3,
         "a\xef\xbf\xbd"
         "b"}, /* NUL inside */
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x84", 14,
         "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x84"},                               /* UTF-8 passes */
        {"\xff", 1, "\xef\xbf\xbd"},                                                 /* not UTF-8 */
        {"\xc0\xbc", 2, "\xef\xbf\xbd\xef\xbf\xbd"},                                 /* overlong '<' */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},                 /* surrogate */
        {"\xe2\x82", 2, "\xef\xbf\xbd\xef\xbf\xbd"},                                 /* cut sequence */
        {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* past U+10FFFF */
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *got = escaped(cases[i].in, cases[i].n);
        if (strcmp(got, cases[i].out))
            fail_msg("case %zu: got '%s'", i, got);
        free(got);
    }
}

static void test_clean_utf8(void **state)
{
    char *s = report_clean_utf8("ab\x01\xff"
                                "cd",
                                6, 100);
    assert_string_equal(s, "ab??cd");
    free(s);
    /* cut on a character boundary, marked */
    s = report_clean_utf8("\xc3\xa9\xc3\xa9\xc3\xa9", 6, 3);
    assert_string_equal(s, "\xc3\xa9\xe2\x80\xa6");
    free(s);
    s = report_clean_utf8(NULL, 0, 10);
    assert_string_equal(s, "");
    free(s);
}

static void test_svg_inert(void **state)
{
    static const char ok1[] = "<svg width=\"10pt\"><g id=\"node1\" class=\"node\"><title>t0</title>"
                              "<text x=\"1\">&lt;script&gt; onload=x style=y href=z</text></g></svg>";
    assert_true(report_svg_inert(ok1, strlen(ok1)));
    static const char *const bad[] = {
        "<svg><script>x</script></svg>",
        "<svg><g onload=\"x\"></g></svg>",
        "<svg><g\nonclick='x'></g></svg>",
        "<svg><a xlink:href=\"javascript:x\">a</a></svg>",
        "<svg><text style=\"x\">a</text></svg>",
        "<svg><foreignObject></foreignObject></svg>",
        "<svg><image href=\"http://x/\"/></svg>",
        "<svg><use href=\"#a\"/></svg>",
        "<svg><text>a</text", /* unterminated tag */
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        if (report_svg_inert(bad[i], strlen(bad[i])))
            fail_msg("accepted: %s", bad[i]);
    assert_false(report_svg_inert("<svg>\0</svg>", 12));
}

/* ---- whole pages from real trails ---------------------------------------------------------- */

struct fixture {
    char dir[64];
    char db[96];
};

static void add(struct trail *t, const char *ws, const char *actor, const char *type, const char *body)
{
    struct cerr err = {0};
    cJSON *b = cJSON_Parse(body);
    if (!b)
        fail_msg("bad test body for %s: %s", type, body);
    if (trail_append(t, ws, actor, type, b, NULL, &err) != 0)
        fail_msg("append %s: %s", type, err.msg);
    cJSON_Delete(b);
}

/* A run written through the real writer: a root workspace and a child, both named with hostile
 * text, every kind of entry the report reads, hostile text in every string field. */
static void write_trail(struct fixture *fx)
{
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/corral-report-test.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->db, sizeof(fx->db), "%s/trail.db", fx->dir);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_open(fx->db, TRAIL_DURABILITY_NORMAL, &t, &err), 0);
    cJSON *h = cJSON_CreateString(H);
    char *hj = cJSON_PrintUnformatted(h); /* H as a JSON string, quotes included */
    cJSON_Delete(h);
    const char *root = "ws-root" H, *child = "ws-child" H;
    char *b;
#define ADD(ws, actor, type, ...)     \
    do {                              \
        b = util_printf(__VA_ARGS__); \
        add(t, ws, actor, type, b);   \
        free(b);                      \
    } while (0)
    ADD(NULL, "system", "supervisor_started", "{\"command\":\"run\",\"policy\":%s,\"started_by\":%s}",
        hj, hj);
    ADD(root, "system", "workspace_created",
        "{\"workspace_id\":\"ws-root%s,\"agent\":%s,\"role\":%s,\"state\":\"idle\",\"parent\":null,"
        "\"budgets\":{\"memory\":1048576,\"pids\":8,\"cpus\":1,\"wall_time\":10}}",
        hj + 1, hj, hj);
    ADD(root, "protocol", "process_started", "{\"pid\":10,\"agent\":%s}", hj);
    ADD(root, "coordinator", "task_created",
        "{\"task_id\":\"task-1\",\"name\":%s,\"description\":%s,\"depends_on\":[],\"status\":\"draft\"}",
        hj, hj);
    ADD(root, "coordinator", "task_created",
        "{\"task_id\":\"task-2\",\"name\":%s,\"depends_on\":[\"task-1\",%s],\"parent_task\":\"task-1\","
        "\"status\":\"draft\"}",
        hj, hj);
    ADD(root, "coordinator", "workspace_created",
        "{\"workspace_id\":\"ws-child%s,\"agent\":%s,\"role\":\"worker\",\"state\":\"idle\",\"parent\":"
        "\"ws-root%s,\"task\":\"task-1\","
        "\"budgets\":{\"memory\":2097152}}",
        hj + 1, hj, hj + 1);
    ADD(child, "protocol", "process_started", "{\"pid\":11}");
    ADD(child, "coordinator", "task_assigned", "{\"task_id\":\"task-1\",\"workspace_id\":\"ws-child%s}",
        hj + 1);
    ADD(child, "protocol", "tool_call",
        "{\"phase\":\"start\",\"tool\":%s,\"request_id\":%s,\"arguments\":%s}", hj, hj, hj);
    ADD(child, "protocol", "tool_call",
        "{\"phase\":\"end\",\"tool\":%s,\"request_id\":%s,\"outcome\":\"error\",\"code\":%s}", hj, hj,
        hj);
    ADD(child, H, "checkpoint_created", "{\"checkpoint_id\":%s,\"intent\":%s,\"files\":[{\"path\":%s}]}",
        hj, hj, hj);
    ADD(child, "protocol", "envelope_created", "{\"envelope_id\":%s,\"type\":%s,\"to\":%s}", hj, hj, hj);
    ADD(child, "protocol", "signal_emitted", "{\"signal_id\":%s,\"type\":%s,\"reason\":%s}", hj, hj, hj);
    ADD(child, "protocol", "denial", "{\"kind\":%s,\"subject\":%s,\"rule\":%s,\"reason\":%s}", hj, hj,
        hj, hj);
    ADD(child, "protocol", "denial",
        "{\"kind\":\"path\",\"subject\":\"x\",\"rule\":%s,\"reason\":\"EPERM\"}", hj);
    ADD(child, "worker", "envelope_rejected", "{\"envelope_id\":\"e\",\"to\":%s,\"reason\":%s}", hj, hj);
    ADD(child, "protocol", "budget_warning", "{\"budget_dimension\":%s,\"consumed\":9,\"limit\":10}",
        hj);
    ADD(child, "protocol", "gate_triggered", "{\"gate\":%s}", hj);
    ADD(child, "protocol", "protocol_message", "{\"direction\":\"in\",\"message\":%s}", hj);
    {
        /* a message that is JSON itself (the report unfolds it), with H as its method */
        cJSON *inner = cJSON_CreateObject();
        cJSON_AddStringToObject(inner, "method", H);
        char *text = cJSON_PrintUnformatted(inner);
        cJSON *body = cJSON_CreateObject();
        cJSON_AddStringToObject(body, "direction", "in");
        cJSON_AddStringToObject(body, "message", text);
        char *bj = cJSON_PrintUnformatted(body);
        add(t, child, "protocol", "protocol_message", bj);
        free(bj), free(text);
        cJSON_Delete(body), cJSON_Delete(inner);
    }
    ADD(child, "protocol", "agent_log",
        "{\"stream\":\"stderr\",\"bytes\":10,\"text\":%s,\"truncated\":false}", hj);
    ADD(child, "protocol", "process_exited",
        "{\"pid\":11,\"status\":0,\"usage\":{\"cpu_us\":5,\"memory_peak_bytes\":1024,\"wall_us\":7}}");
    ADD(child, "protocol", "workspace_state_changed", "{\"from\":%s,\"to\":%s}", hj, hj);
    ADD(root, "protocol", "workspace_state_changed", "{\"from\":\"active\",\"to\":\"closed\"}");
    ADD(NULL, "system", "supervisor_stopped", "{\"reason\":%s,\"status\":0}", hj);
#undef ADD
    assert_int_equal(trail_commit(t, &err), 0);
    trail_close(t);
    free(hj);
}

static void drop_trail(struct fixture *fx)
{
    char *cmd = util_printf("rm -rf '%s'", fx->dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

static char *page_of(const char *db, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct cerr err = {0};
    *rc = report_write(db, f, &err);
    fclose(f);
    return buf;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Every tag on the page is one the report writes (or Graphviz's SVG elements), and no tag has
 * an on...= attribute: so no text of the trail became markup. */
static void assert_only_our_tags(const char *page)
{
    static const char *const allowed[] = {
        "html",  "head",    "meta",     "title",  "style", "body",  "header", "h1",       "h2",
        "main",  "footer",  "section",  "div",    "span",  "code",  "dl",     "dt",       "dd",
        "table", "thead",   "tbody",    "tr",     "th",    "td",    "br",     "details",  "summary",
        "pre",   "p",       "svg",      "g",      "rect",  "text",  "tspan",  "line",     "polygon",
        "path",  "ellipse", "polyline", "button", "label", "input", "script", "!DOCTYPE", "!--",
    };
    for (const char *p = strchr(page, '<'); p; p = strchr(p + 1, '<')) {
        const char *n = p + 1 + (p[1] == '/');
        size_t len = 0;
        if (!strncmp(n, "!--", 3))
            len = 3;
        else
            while (isalnum((unsigned char)n[len]) || n[len] == '!' || n[len] == '-')
                len++;
        bool ok = false;
        for (size_t i = 0; i < ARRAY_SIZE(allowed) && !ok; i++)
            ok = strlen(allowed[i]) == len && !strncmp(allowed[i], n, len);
        if (!ok)
            fail_msg("a tag the report does not write: %.60s", p);
        /* attributes: NAME or NAME="VALUE" (values are escaped: no '"' inside); no name on... */
        const char *q = n + len;
        while (strncmp(p, "<!--", 4) && *q && *q != '>') {
            while (isspace((unsigned char)*q) || *q == '/')
                q++;
            const char *name = q;
            while (*q && !isspace((unsigned char)*q) && *q != '=' && *q != '>' && *q != '/')
                q++;
            if (q > name + 1 && tolower((unsigned char)name[0]) == 'o' &&
                tolower((unsigned char)name[1]) == 'n')
                fail_msg("an event handler attribute: %.80s", name);
            if (*q == '=') {
                q++;
                if (*q != '"' && *q != '\'')
                    fail_msg("an unquoted attribute value: %.80s", name);
                const char *close = strchr(q + 1, *q);
                assert_non_null(close);
                q = close + 1;
            }
        }
        if (!strncmp(p, "<script", 7)) /* our one script: skip its body, which has '<' in code */
            p = strstr(p, "</script>");
        if (!strncmp(p, "<style", 6))
            p = strstr(p, "</style>");
        assert_non_null(p);
    }
}

static void test_hostile_page(void **state)
{
    struct fixture fx;
    write_trail(&fx);
    int rc;
    char *page = page_of(fx.db, &rc);
    assert_int_equal(rc, 0);
    assert_only_our_tags(page);
    assert_int_equal(count(page, "<script"), 1);
    assert_int_equal(count(page, "<img"), 0);
    assert_true(count(page, "&lt;script&gt;alert(1)&lt;/script&gt;") > 20);
    /* the facts: verified, two workspaces (child under root), both tasks in the graph with the
     * dependency between them, the two denials of the same rule on one row */
    assert_non_null(strstr(page, "trail verify: ok"));
    assert_int_equal(count(page, "<tr class=\"ws\">"), 2);
    assert_non_null(strstr(page, "<td class=\"d1\"><span class=\"id\">ws-child"));
    assert_int_equal(count(page, "class=\"node\""), 2);
    assert_int_equal(count(page, "class=\"edge\""), 2);   /* depends_on and parent_task */
    assert_non_null(strstr(page, "&gt;</td><td>2</td>")); /* the two denials under the hostile rule */
    assert_non_null(strstr(page, "1.0 KiB / 2.0 MiB"));   /* memory used against granted */
    assert_non_null(strstr(page, "k-tool"));
    assert_non_null(strstr(page, "content=\"default-src 'none'; style-src 'sha256-"));
    free(page);
    drop_trail(&fx);
}

static void test_not_a_trail(void **state)
{
    int rc;
    char *page = page_of("/nonexistent/corral/trail.db", &rc);
    assert_true(rc < 0);
    free(page);
    char path[] = "/tmp/corral-report-junk.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not a trail at all, not even SQLite\n", 36), 36);
    close(fd);
    page = page_of(path, &rc);
    assert_true(rc < 0);
    free(page);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_table), cmocka_unit_test(test_clean_utf8),
        cmocka_unit_test(test_svg_inert),    cmocka_unit_test(test_hostile_page),
        cmocka_unit_test(test_not_a_trail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
