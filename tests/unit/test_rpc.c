/* tests/unit/test_rpc.c: the wire layer: line framing with a cap, UTF-8 and depth checks,
 * JSON-RPC 2.0 envelope validation, and the lines written back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "supervisor/conn/rpc.h"

static void expect_line(struct rpc_reader *r, const char *want)
{
    const char *line;
    size_t len;
    assert_int_equal(rpc_reader_next(r, &line, &len), RPC_FRAME_LINE);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(line, want, len);
}

static void expect_frame(struct rpc_reader *r, enum rpc_frame f)
{
    const char *line;
    size_t len;
    assert_int_equal(rpc_reader_next(r, &line, &len), f);
}

static void framing_lines(void **state)
{
    struct rpc_reader *r = rpc_reader_new(1024);
    assert_non_null(r);
    expect_frame(r, RPC_FRAME_NONE);
    assert_int_equal(rpc_reader_feed(r, "one\ntwo\r\n\n   \nthr", 17), 0);
    expect_line(r, "one");
    expect_line(r, "two");           /* CRLF tolerated */
    expect_frame(r, RPC_FRAME_NONE); /* blank lines skipped; "thr" is partial */
    assert_int_equal(rpc_reader_pending(r), 3);
    assert_int_equal(rpc_reader_feed(r, "ee\n", 3), 0);
    expect_line(r, "three");
    expect_frame(r, RPC_FRAME_NONE);
    rpc_reader_free(r);
}

static void framing_too_long_streamed(void **state)
{
    struct rpc_reader *r = rpc_reader_new(16);
    char big[40];
    memset(big, 'x', sizeof(big));
    assert_int_equal(rpc_reader_feed(r, big, sizeof(big)), 0);
    expect_frame(r, RPC_FRAME_TOO_LONG);        /* told as soon as the cap is passed */
    assert_int_equal(rpc_reader_pending(r), 0); /* and nothing of it is kept */
    assert_int_equal(rpc_reader_feed(r, big, sizeof(big)), 0);
    expect_frame(r, RPC_FRAME_NONE); /* still the same line: told once only */
    assert_int_equal(rpc_reader_feed(r, "xx\nok\n", 6), 0);
    expect_line(r, "ok"); /* the line after it is intact */
    expect_frame(r, RPC_FRAME_NONE);
    rpc_reader_free(r);
}

static void framing_too_long_whole(void **state)
{
    struct rpc_reader *r = rpc_reader_new(8);
    assert_int_equal(rpc_reader_feed(r, "123456789\nabc\n12345678\n", 23), 0);
    expect_frame(r, RPC_FRAME_TOO_LONG);
    expect_line(r, "abc");
    expect_line(r, "12345678"); /* exactly the cap is allowed */
    rpc_reader_free(r);
}

static void framing_sticky_failure(void **state)
{
    struct rpc_reader *r = rpc_reader_new(64);
    assert_int_equal(rpc_reader_feed(r, "a\nb\n", 4), 0);
    expect_line(r, "a");
    rpc_reader_fail(r);
    assert_true(rpc_reader_failed(r));
    expect_frame(r, RPC_FRAME_FAILED); /* "b" is never returned */
    expect_frame(r, RPC_FRAME_FAILED);
    rpc_reader_free(r);
}

static void framing_space_commit(void **state)
{
    struct rpc_reader *r = rpc_reader_new(1 << 20);
    size_t room;
    char *p = rpc_reader_space(r, 10, &room);
    assert_non_null(p);
    assert_true(room >= 10);
    memcpy(p, "{\"a\":1}\nxy", 10);
    rpc_reader_commit(r, 10);
    expect_line(r, "{\"a\":1}");
    expect_frame(r, RPC_FRAME_NONE);
    p = rpc_reader_space(r, 1, &room);
    *p = '\n';
    rpc_reader_commit(r, 1);
    expect_line(r, "xy");
    rpc_reader_free(r);
}

static void utf8_table(void **state)
{
    static const struct {
        const char *s;
        size_t len, bad;
    } cases[] = {
        {"plain ascii", 11, 11},
        {"caf\xc3\xa9", 5, 5},
        {"\xe2\x82\xac", 3, 3},     /* euro */
        {"\xf0\x9f\x98\x80", 4, 4}, /* emoji */
        {"\xf4\x8f\xbf\xbf", 4, 4}, /* U+10FFFF */
        {"a\xc0\x80", 3, 1},        /* overlong NUL */
        {"\xe0\x80\xaf", 3, 0},     /* overlong */
        {"\xed\xa0\x80", 3, 0},     /* surrogate */
        {"\xf4\x90\x80\x80", 4, 0}, /* past U+10FFFF */
        {"ab\xe2\x82", 4, 2},       /* truncated */
        {"\x80", 1, 0},             /* lone continuation */
        {"ok\xff", 3, 2},
        {"\xc3\x28", 2, 0}, /* bad continuation */
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
        assert_int_equal(rpc_utf8_check(cases[i].s, cases[i].len), cases[i].bad);
}

/* The byte-at-a-time reading of RFC 3629 that rpc_utf8_check's word-at-a-time ASCII run must
 * agree with, wherever the bad byte falls in or across a word. */
static size_t utf8_ref(const unsigned char *p, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i], n, lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            n = 2;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        else
            return i;
        if (len - i < n || p[i + 1] < lo || p[i + 1] > hi)
            return i;
        for (unsigned k = 2; k < n; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xBF)
                return i;
        i += n;
    }
    return len;
}

static void utf8_words_agree(void **state)
{
    static const char *const bits[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff",
                                       "\x80",     "\xe2\x82",     "\xc3",             "\xed\xa0\x80"};
    unsigned char buf[64];
    srand(7);
    for (int round = 0; round < 200000; round++) {
        size_t len = (size_t)(rand() % 40);
        memset(buf, 'a', sizeof(buf));
        if (rand() % 2) { /* one multi-byte or bad sequence somewhere, at any offset */
            const char *b = bits[rand() % ARRAY_SIZE(bits)];
            size_t at = len ? (size_t)rand() % len : 0, bl = strlen(b);
            memcpy(buf + at, b, bl);
            if (at + bl > len)
                len = at + bl;
        }
        size_t off = (size_t)(rand() % 8); /* every alignment of the start */
        memmove(buf + off, buf, len);
        assert_int_equal(rpc_utf8_check((const char *)buf + off, len), utf8_ref(buf + off, len));
    }
}

static void depth_table(void **state)
{
    assert_int_equal(rpc_json_depth("{}", 2, 64), 1);
    assert_int_equal(rpc_json_depth("[[[]]]", 6, 64), 3);
    assert_int_equal(rpc_json_depth("{\"a\":\"[[[[\"}", 12, 64), 1);
    assert_int_equal(rpc_json_depth("{\"a\\\"[[\":[]}", 12, 64), 2);
    assert_int_equal(rpc_json_depth("[[[[[", 5, 3), 4); /* stops past the limit */
    assert_int_equal(rpc_json_depth("42", 2, 64), 0);
}

/* The count of values bounds the nodes cJSON makes (and so what a tree costs), whatever the
 * input: each case's parsed tree never has more nodes than the count. */
static size_t nodes(const cJSON *v)
{
    size_t n = 0;
    for (; v; v = v->next)
        n += 1 + nodes(v->child);
    return n;
}

static void values_table(void **state)
{
    static const char *const cases[] = {"42", "[]", "{}", "[1,2,3]", "{\"a\":[1,{\"b\":2}],\"c\":\",,[\"}",
                                        "[[],[],{}]", "\"x,y\"", "[\"\\\",\",1]"};
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        cJSON *t = cJSON_Parse(cases[i]);
        assert_non_null(t);
        assert_true(nodes(t) <= rpc_json_values(cases[i], strlen(cases[i]), 1000));
        assert_true(rpc_json_cost(t) >= nodes(t) * sizeof(cJSON));
        cJSON_Delete(t);
    }
    assert_int_equal(rpc_json_values("[0,0,0,0]", 9, 3), 4); /* stops past the limit */
    assert_int_equal(rpc_json_cost(NULL), 0);
    /* Past RPC_MAX_VALUES a message is refused before it is parsed. */
    size_t n = RPC_MAX_VALUES + 1, len = 2 * n + 64;
    char *line = malloc(len);
    assert_non_null(line);
    size_t k = (size_t)snprintf(line, len, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[0");
    for (size_t i = 1; i < n; i++) {
        line[k++] = ',';
        line[k++] = '0';
    }
    line[k++] = ']';
    line[k++] = '}';
    struct rpc_msg m;
    struct rpc_error e;
    assert_int_equal(rpc_decode(line, k, RPC_DEFAULT_MAX_DEPTH, &m, &e), -EINVAL);
    assert_int_equal(e.code, RPC_INVALID_REQUEST);
    assert_non_null(strstr(e.message, "JSON values"));
    rpc_error_clear(&e);
    free(line);
}

static void decode_ok(const char *line, struct rpc_msg *m)
{
    struct rpc_error e;
    int r = rpc_decode(line, strlen(line), RPC_DEFAULT_MAX_DEPTH, m, &e);
    if (r != 0)
        fail_msg("decode of %s failed: %d %s", line, e.code, e.message);
}

static void decode_valid(void **state)
{
    struct rpc_msg m;
    decode_ok("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}", &m);
    assert_string_equal(m.method, "tools/list");
    assert_true(cJSON_IsNumber(m.id));
    assert_null(m.params);
    rpc_msg_clear(&m);
    decode_ok("  {\"method\":\"x\",\"params\":{\"a\":[1]},\"jsonrpc\":\"2.0\",\"id\":\"s\"}  ", &m);
    assert_string_equal(m.id->valuestring, "s");
    assert_true(cJSON_IsObject(m.params));
    rpc_msg_clear(&m);
    decode_ok("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m);
    assert_null(m.id); /* a notification */
    rpc_msg_clear(&m);
    /* An escaped backslash, then the text "u0000": no NUL, so it passes whole. */
    decode_ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"c\":\"a\\\\u0000b\"}}", &m);
    assert_string_equal(cJSON_GetObjectItem(m.params, "c")->valuestring, "a\\u0000b");
    rpc_msg_clear(&m);
    /* Ids cJSON cannot print back are kept as the client's own text, and echoed so. */
    decode_ok("{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"ping\"}", &m);
    assert_true(cJSON_IsRaw(m.id));
    assert_string_equal(m.id->valuestring, "1e400");
    size_t len;
    char *line = rpc_result_line(m.id, m.root, &len);
    assert_non_null(strstr(line, "\"id\":1e400,"));
    free(line);
    rpc_msg_clear(&m);
    decode_ok("{\"jsonrpc\":\"2.0\",\"method\":\"ping\", \"id\" : -12345678901234567890123.5e-3}", &m);
    assert_string_equal(m.id->valuestring, "-12345678901234567890123.5e-3");
    rpc_msg_clear(&m);
    decode_ok("{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"ping\"}", &m);
    assert_true(cJSON_IsNumber(m.id)); /* an ordinary id stays a number */
    rpc_msg_clear(&m);
    /* A response to a request corral sent (elicitation/create) */
    decode_ok("{\"jsonrpc\":\"2.0\",\"id\":\"corral-1\",\"result\":{\"action\":\"accept\"}}", &m);
    assert_true(m.response);
    assert_null(m.method);
    assert_true(cJSON_IsObject(m.result));
    rpc_msg_clear(&m);
}

/* Each bad line: the error code, whether the id survives into the error, and a word of the message. */
static void decode_invalid(void **state)
{
    static const struct {
        const char *line;
        size_t len; /* 0: strlen */
        int code;
        bool has_id;
        const char *says;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"", 0, RPC_PARSE_ERROR, false, "invalid JSON"},
        {"not json", 0, RPC_PARSE_ERROR, false, "invalid JSON"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", 0, RPC_PARSE_ERROR, false, "UTF-8"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\0", 38, RPC_PARSE_ERROR, false, "NUL"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"} {}", 0, RPC_PARSE_ERROR, false,
         "more than one"},
        /* \u0000 in a valid request: answered with its own id (the client waits for it) */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"c\":\"ab\\u0000cd\"}}", 0,
         RPC_INVALID_PARAMS, true, "u0000"},
        /* ... unless the NUL is in the id itself, which then cannot be echoed */
        {"{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"x\"}", 0, RPC_PARSE_ERROR, false,
         "u0000"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}", 0, RPC_INVALID_REQUEST, true,
         "exactly one"},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]", 0, RPC_INVALID_REQUEST, false, "batches"},
        {"[]", 0, RPC_INVALID_REQUEST, false, "batches"},
        {"42", 0, RPC_INVALID_REQUEST, false, "object"},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}", 0, RPC_INVALID_REQUEST, false, "id"},
        {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"x\"}", 0, RPC_INVALID_REQUEST, false, "id"},
        {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}", 0, RPC_INVALID_REQUEST, false, "id"},
        {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}", 0, RPC_INVALID_REQUEST, true, "2.0"},
        {"{\"id\":1,\"method\":\"x\"}", 0, RPC_INVALID_REQUEST, true, "2.0"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}", 0, RPC_INVALID_REQUEST, true, "missing"},
        {"{\"jsonrpc\":\"2.0\",\"result\":{}}", 0, RPC_INVALID_REQUEST, false, "response"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", 0, RPC_INVALID_REQUEST, true, "method"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", 0, RPC_INVALID_REQUEST, true, "method"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"s\"}", 0, RPC_INVALID_REQUEST,
         true, "params"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"method\":\"y\"}", 0, RPC_INVALID_REQUEST,
         false, "twice"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct rpc_msg m;
        struct rpc_error e;
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].line);
        int r = rpc_decode(cases[i].line, len, RPC_DEFAULT_MAX_DEPTH, &m, &e);
        if (r != -EINVAL || e.code != cases[i].code || (e.id != NULL) != cases[i].has_id ||
            !strstr(e.message, cases[i].says))
            fail_msg("case %zu (%s): r=%d code=%d id=%p message=%s", i, cases[i].line, r, e.code,
                     (void *)e.id, e.message);
        assert_null(m.root);
        rpc_error_clear(&e);
    }
}

static void decode_deep(void **state)
{
    /* Deep enough to overflow a recursive parser's stack if it ever got there. */
    size_t n = 200000;
    char *s = malloc(2 * n + 1);
    memset(s, '[', n);
    memset(s + n, ']', n);
    s[2 * n] = '\0';
    struct rpc_msg m;
    struct rpc_error e;
    assert_int_equal(rpc_decode(s, 2 * n, 64, &m, &e), -EINVAL);
    assert_int_equal(e.code, RPC_INVALID_REQUEST);
    assert_non_null(strstr(e.message, "nesting"));
    free(s);
    /* The top object and params count: 62 arrays inside are 64 levels, 63 are one too many. */
    char line[400];
    for (int arrays = 62; arrays <= 63; arrays++) {
        int k = snprintf(line, sizeof(line),
                         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":");
        for (int i = 0; i < arrays; i++)
            line[k++] = '[';
        for (int i = 0; i < arrays; i++)
            line[k++] = ']';
        line[k++] = '}';
        line[k++] = '}';
        line[k] = '\0';
        int r = rpc_decode(line, (size_t)k, 64, &m, &e);
        if (arrays == 62) {
            assert_int_equal(r, 0);
            rpc_msg_clear(&m);
        } else {
            assert_int_equal(r, -EINVAL);
            assert_int_equal(e.code, RPC_INVALID_REQUEST);
            assert_non_null(e.id == NULL ? "" : NULL);
        }
    }
}

static void encode_lines(void **state)
{
    cJSON *id = cJSON_CreateString("a\nb");
    cJSON *res = cJSON_Parse("{\"text\":\"line1\\nline2\",\"n\":1}");
    size_t len;
    char *line = rpc_result_line(id, res, &len);
    assert_non_null(line);
    assert_int_equal(len, strlen(line));
    assert_int_equal(line[len - 1], '\n');
    assert_null(memchr(line, '\n', len - 1)); /* exactly one newline: the frame's own */
    struct rpc_msg m;
    struct rpc_error e;
    cJSON *back = cJSON_ParseWithLength(line, len);
    assert_non_null(back);
    assert_string_equal(cJSON_GetObjectItem(back, "jsonrpc")->valuestring, "2.0");
    assert_string_equal(cJSON_GetObjectItem(back, "id")->valuestring, "a\nb");
    assert_true(cJSON_Compare(cJSON_GetObjectItem(back, "result"), res, true));
    cJSON_Delete(back);
    free(line);
    line = rpc_error_line(NULL, RPC_PARSE_ERROR, "bad \"thing\"", NULL, &len);
    back = cJSON_ParseWithLength(line, len);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(back, "id")));
    cJSON *err = cJSON_GetObjectItem(back, "error");
    assert_int_equal(cJSON_GetObjectItem(err, "code")->valueint, -32700);
    assert_string_equal(cJSON_GetObjectItem(err, "message")->valuestring, "bad \"thing\"");
    assert_null(cJSON_GetObjectItem(back, "result"));
    cJSON_Delete(back);
    free(line);
    (void)m, (void)e;
    cJSON_Delete(id);
    cJSON_Delete(res);
}

/* rpc_json_print, the answers' printer, gives exactly cJSON_PrintUnformatted's bytes: every
 * control character, quotes, backslashes, UTF-8, numbers of each form, raw ids, nesting, empty
 * containers, keys that need escaping, a string without a value. */
/* util_json_plain, the scan both rpc_json_print and the trail's canonical form rely on: it stops
 * at each byte that needs an escape, at every offset (in and across its 8-byte words), and at no
 * other byte. */
static void json_plain_stops_exactly(void **state)
{
    (void)state;
    unsigned char buf[48];
    const unsigned char special[] = {0x00, 0x01, 0x0a, 0x1f, '"', '\\'};
    for (size_t k = 0; k < sizeof(special); k++)
        for (size_t at = 0; at < sizeof(buf); at++) {
            memset(buf, 'a', sizeof(buf));
            buf[at] = special[k];
            assert_int_equal(util_json_plain(buf, sizeof(buf)), at);
            assert_int_equal(util_json_plain(buf, at), at); /* ends before it */
        }
    unsigned char plain[256];
    size_t n = 0;
    for (unsigned c = 0x20; c <= 0xff; c++)
        if (c != '"' && c != '\\')
            plain[n++] = (unsigned char)c;
    for (size_t off = 0; off < 8; off++)
        assert_int_equal(util_json_plain(plain + off, n - off), n - off);
    assert_int_equal(util_json_plain(plain, 0), 0);
}

static void print_matches_cjson(void **state)
{
    (void)state;
    char ctl[64], *p = ctl;
    for (int c = 1; c < 32; c++)
        *p++ = (char)c;
    *p = '\0';
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "ctl", ctl);
    cJSON_AddStringToObject(j, "q\"k\\\n", "a \"quoted\" \\ back\\slash / \x7f caf\xc3\xa9 \xf0\x9f\x98\x80");
    cJSON_AddStringToObject(j, "long", "");
    cJSON *nums = cJSON_AddArrayToObject(j, "nums");
    double v[] = {0, -0.0, 1, -1, 0.1, 1e300, -2.5e-300, 123456789012.0, 2147483647.0, 2147483648.0,
                  1.0 / 3, 9007199254740993.0, 4096, 999999999999999.0, -999999999999999.0,
                  1e15, -1e15, 1e15 - 0.5, 1e16, 0.5, -0.5, 12345.000001, 4294967296.0,
                  -2147483649.0};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        cJSON_AddItemToArray(nums, cJSON_CreateNumber(v[i]));
    cJSON_AddItemToArray(nums, cJSON_CreateRaw("1e400"));
    cJSON_AddItemToObject(j, "empty_o", cJSON_CreateObject());
    cJSON_AddItemToObject(j, "empty_a", cJSON_CreateArray());
    cJSON *deep = j;
    for (int i = 0; i < 50; i++) { /* 50 levels: {"d":{"a":[],"d":{...}}} */
        deep = cJSON_AddObjectToObject(deep, "d");
        cJSON_AddArrayToObject(deep, "a");
    }
    cJSON_AddBoolToObject(j, "t", true);
    cJSON_AddBoolToObject(j, "f", false);
    cJSON_AddNullToObject(j, "n");
    cJSON *nos = cJSON_CreateString("x");
    free(nos->valuestring);
    nos->valuestring = NULL;
    cJSON_AddItemToObject(j, "nostr", nos);
    char big[20000];
    for (size_t i = 0; i < sizeof(big) - 1; i++)
        big[i] = "ab\n\"c\\d\t"[i % 9];
    big[sizeof(big) - 1] = '\0';
    cJSON_AddStringToObject(j, "big", big);
    size_t len = 0;
    char *mine = rpc_json_print(j, &len), *theirs = cJSON_PrintUnformatted(j);
    assert_non_null(mine);
    assert_non_null(theirs);
    assert_int_equal(len, strlen(theirs));
    assert_string_equal(mine, theirs);
    free(mine);
    free(theirs);
    /* Each value alone, too (a top-level string, number, array). */
    for (cJSON *c = j->child; c; c = c->next) {
        cJSON one = *c;
        one.next = one.prev = NULL;
        one.string = NULL;
        mine = rpc_json_print(&one, NULL);
        theirs = cJSON_PrintUnformatted(&one);
        assert_non_null(mine);
        assert_string_equal(mine, theirs ? theirs : "");
        free(mine);
        free(theirs);
    }
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(framing_lines),
        cmocka_unit_test(framing_too_long_streamed),
        cmocka_unit_test(framing_too_long_whole),
        cmocka_unit_test(framing_sticky_failure),
        cmocka_unit_test(framing_space_commit),
        cmocka_unit_test(utf8_table),
        cmocka_unit_test(utf8_words_agree),
        cmocka_unit_test(depth_table),
        cmocka_unit_test(values_table),
        cmocka_unit_test(decode_valid),
        cmocka_unit_test(decode_invalid),
        cmocka_unit_test(decode_deep),
        cmocka_unit_test(encode_lines),
        cmocka_unit_test(json_plain_stops_exactly),
        cmocka_unit_test(print_matches_cjson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
