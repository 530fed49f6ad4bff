/* tests/unit/test_rpc_loop.c: the event loop, agent connections and the method table, over real
 * pipes, with a test tool surface whose "block" tool waits until the test releases it. No timing:
 * every assertion is about what was answered and in which order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "supervisor/conn/agent.h"
#include "supervisor/conn/dispatch.h"
#include "supervisor/trail/trail.h"
#include "supervisor/trail/internal.h"

#include <sqlite3.h>

/* ---- a test surface ---- */

struct test_tools {
    struct tool_ctx ctx; /* each call gets a copy; its adopt_data leads back here */
    int release_rd;      /* "block" reads one byte from here */
    int calls;           /* tool calls performed (atomic) */
};

static cJSON *t_list(const struct tool_ctx *ctx)
{
    return cJSON_Parse("[{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},"
                       "{\"name\":\"block\",\"inputSchema\":{\"type\":\"object\"}}]");
}

static int t_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                  bool *is_error)
{
    struct test_tools *t = ctx->adopt_data; /* no listener in these tests: the slot is free */
    __atomic_add_fetch(&t->calls, 1, __ATOMIC_SEQ_CST);
    *is_error = false;
    if (!strcmp(tool, "echo")) {
        *result = cJSON_CreateObject();
        cJSON_AddItemToObject(*result, "echo", cJSON_Duplicate(args, true));
        return 0;
    }
    if (!strcmp(tool, "block")) {
        char c;
        (void)!read(t->release_rd, &c, 1);
        *result = cJSON_Parse("{\"released\":true}");
        return 0;
    }
    if (!strcmp(tool, "toolerr")) {
        *is_error = true;
        *result = cJSON_Parse("{\"error\":\"no such file\",\"code\":\"FILE_NOT_FOUND\"}");
        return 0;
    }
    if (!strcmp(tool, "crash"))
        return -EIO;
    return -ENOENT;
}

static int t_target(const struct tool_ctx *ctx, const char *tool, const cJSON *args, char **rel)
{
    (void)ctx, (void)tool, (void)args;
    *rel = NULL;
    return 0;
}

static cJSON *t_refuse(struct tool_ctx *ctx, const char *tool, const struct tool_verdict *v)
{
    (void)ctx, (void)tool, (void)v;
    return cJSON_Parse("{\"error\":\"refused\",\"code\":\"PERMISSION_DENIED\"}");
}

static const struct tool_def t_defs[] = {
    {"echo", TOOL_KIND_READ, false},
    {"block", TOOL_KIND_READ, false},
    {"toolerr", TOOL_KIND_READ, false},
    {"crash", TOOL_KIND_READ, false},
};

static const struct tool_surface test_surface = {.name = "test",
                                                 .defs = t_defs,
                                                 .n_defs = ARRAY_SIZE(t_defs),
                                                 .list = t_list,
                                                 .run = t_call,
                                                 .target = t_target,
                                                 .refuse = t_refuse};

/* ---- a client end and a server ---- */

struct client {
    int to_srv, from_srv; /* the test's ends */
    int srv_in, srv_out;  /* the server's ends */
    char buf[1 << 16];
    size_t len;
    struct agent *agent;
    int ended; /* enum agent_end, 0 while connected */
};

struct server {
    struct loop *loop;
    struct pool *pool;
    struct agent_host *host;
    struct test_tools tools;
    int release_wr;
};

static void on_end(struct agent *a, enum agent_end why, void *data)
{
    ((struct client *)data)->ended = (int)why;
}

static void server_start_trail(struct server *s, const struct agent_host_opts *o, struct trail *t)
{
    memset(s, 0, sizeof(*s));
    struct cerr err;
    assert_int_equal(loop_new(&s->loop, &err), 0);
    assert_int_equal(pool_new(s->loop, 4, &s->pool, &err), 0);
    assert_int_equal(agent_host_new(s->loop, s->pool, t, o, &s->host, &err), 0);
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    s->tools.release_rd = p[0];
    s->release_wr = p[1];
    s->tools.ctx.root_fd = -1;
    s->tools.ctx.adopt_data = &s->tools;
}

static void server_start(struct server *s, const struct agent_host_opts *o)
{
    server_start_trail(s, o, NULL);
}

static void client_connect(struct server *s, struct client *c)
{
    memset(c, 0, sizeof(*c));
    int a[2], b[2];
    assert_int_equal(pipe2(a, O_CLOEXEC), 0);
    assert_int_equal(pipe2(b, O_CLOEXEC), 0);
    c->to_srv = a[1];
    c->srv_in = a[0];
    c->srv_out = b[1];
    c->from_srv = b[0];
    fcntl(c->from_srv, F_SETFL, O_NONBLOCK);
    struct agent_config ac = {.name = "t",
                              .in_fd = c->srv_in,
                              .out_fd = c->srv_out,
                              .surface = &test_surface,
                              .tools = &s->tools.ctx,
                              .on_end = on_end,
                              .data = c,
                              .on_message = dispatch_message};
    struct cerr err;
    assert_int_equal(agent_new(s->host, &ac, &c->agent, &err), 0);
}

static void client_close(struct client *c)
{
    agent_free(c->agent);
    close(c->to_srv);
    close(c->from_srv);
    close(c->srv_in);
    close(c->srv_out);
}

static void server_stop(struct server *s)
{
    /* Let blocked calls finish so the pool can be joined. */
    for (int i = 0; i < 64; i++)
        (void)!write(s->release_wr, "x", 1);
    pool_free(s->pool);
    agent_host_free(s->host);
    loop_free(s->loop);
    close(s->tools.release_rd);
    close(s->release_wr);
}

static void send_line(struct client *c, const char *s)
{
    assert_int_equal(util_write_all(c->to_srv, s, strlen(s)), 0);
    assert_int_equal(util_write_all(c->to_srv, "\n", 1), 0);
}

/* A complete line from the server if one has arrived (no loop turn), else NULL. Caller frees. */
static char *try_line(struct client *c)
{
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            size_t n = (size_t)(nl - c->buf);
            char *line = strndup(c->buf, n);
            memmove(c->buf, nl + 1, c->len - n - 1);
            c->len -= n + 1;
            return line;
        }
        if (c->len == sizeof(c->buf))
            fail_msg("response line too long for the test buffer");
        ssize_t r = read(c->from_srv, c->buf + c->len, sizeof(c->buf) - c->len);
        if (r <= 0)
            return NULL;
        c->len += (size_t)r;
    }
}

/* Runs loop turns until C has a line; fails after many idle turns (a lost answer, not a slow one). */
static cJSON *recv_msg(struct server *s, struct client *c)
{
    for (int turns = 0; turns < 2000; turns++) {
        char *line = try_line(c);
        if (line) {
            cJSON *j = cJSON_Parse(line);
            if (!j)
                fail_msg("server sent invalid JSON: %s", line);
            free(line);
            return j;
        }
        struct cerr err;
        assert_true(loop_run_once(s->loop, 10, &err) >= 0);
    }
    fail_msg("no answer from the server");
    return NULL;
}

static cJSON *call(struct server *s, struct client *c, const char *req)
{
    send_line(c, req);
    return recv_msg(s, c);
}

static int error_code(const cJSON *resp)
{
    const cJSON *e = cJSON_GetObjectItem(resp, "error");
    return e ? cJSON_GetObjectItem(e, "code")->valueint : 0;
}

static void expect_error(struct server *s, struct client *c, const char *req, int code, bool id_null)
{
    cJSON *r = call(s, c, req);
    if (error_code(r) != code) {
        char *t = cJSON_PrintUnformatted(r);
        fail_msg("%s: want error %d, got %s", req, code, t);
    }
    assert_int_equal(cJSON_IsNull(cJSON_GetObjectItem(r, "id")), id_null);
    cJSON_Delete(r);
}

static void expect_pong(struct server *s, struct client *c, int id)
{
    char req[100];
    snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}", id);
    cJSON *r = call(s, c, req);
    assert_int_equal(cJSON_GetObjectItem(r, "id")->valueint, id);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(r, "result")));
    cJSON_Delete(r);
}

#define INIT                                                                                          \
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-" \
    "06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"

static void initialize(struct server *s, struct client *c)
{
    cJSON *r = call(s, c, INIT);
    cJSON *res = cJSON_GetObjectItem(r, "result");
    assert_non_null(res);
    assert_string_equal(cJSON_GetObjectItem(res, "protocolVersion")->valuestring, "2025-06-18");
    send_line(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    cJSON_Delete(r);
}

/* ---- tests ---- */

static void lifecycle(void **state)
{
    struct server s;
    struct client c;
    server_start(&s, NULL);
    client_connect(&s, &c);
    /* Before initialize: discover and ping yes, tools no (the table says so). */
    cJSON *r = call(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}");
    cJSON *res = cJSON_GetObjectItem(r, "result");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "serverInfo"), "name")->valuestring,
                        "corral");
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(res, "supportedVersions")) >= 2);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "capabilities"), "tools"));
    cJSON_Delete(r);
    expect_pong(&s, &c, 2);
    expect_error(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}", RPC_NOT_INITIALIZED,
                 false);
    expect_error(
        &s, &c,
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}",
        RPC_NOT_INITIALIZED, false);
    /* The stateless revision carries its version per request instead. */
    r = call(&s, &c,
             "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"_meta\":"
             "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "tools")),
                     2);
    cJSON_Delete(r);
    initialize(&s, &c);
    expect_error(&s, &c, INIT, RPC_INVALID_REQUEST, false); /* once only */
    r = call(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":\"L\",\"method\":\"tools/list\"}");
    assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "L");
    cJSON *tools = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "tools");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(tools, 0), "name")->valuestring, "echo");
    cJSON_Delete(r);
    /* An unknown version is answered with ours. */
    struct client c2;
    client_connect(&s, &c2);
    r = call(&s, &c2,
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
             "\"1999-01-01\"}}");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "protocolVersion")->valuestring,
        dispatch_protocol_versions[1]);
    cJSON_Delete(r);
    client_close(&c2);
    client_close(&c);
    server_stop(&s);
}

static void tool_calls(void **state)
{
    struct server s;
    struct client c;
    server_start(&s, NULL);
    client_connect(&s, &c);
    initialize(&s, &c);
    cJSON *r = call(&s, &c,
                    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/"
                    "call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"x\":[1,\"\\u00e9\\n\"]}}}");
    cJSON *res = cJSON_GetObjectItem(r, "result");
    cJSON *sc = cJSON_GetObjectItem(res, "structuredContent");
    cJSON *want = cJSON_Parse("{\"echo\":{\"x\":[1,\"\\u00e9\\n\"]}}");
    assert_true(cJSON_Compare(sc, want, true));
    cJSON *content = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "content"), 0);
    assert_string_equal(cJSON_GetObjectItem(content, "type")->valuestring, "text");
    cJSON *text = cJSON_Parse(cJSON_GetObjectItem(content, "text")->valuestring);
    assert_true(cJSON_Compare(text, want, true)); /* the text is the same object, as JSON */
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(res, "isError")));
    cJSON_Delete(text), cJSON_Delete(want), cJSON_Delete(r);
    /* No arguments at all is an empty object. */
    r = call(&s, &c,
             "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "structuredContent"), "echo")));
    cJSON_Delete(r);
    /* A tool failure is a result with isError, not a JSON-RPC error. */
    r = call(&s, &c,
             "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/"
             "call\",\"params\":{\"name\":\"toolerr\",\"arguments\":{}}}");
    res = cJSON_GetObjectItem(r, "result");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(res, "structuredContent"), "code")->valuestring,
        "FILE_NOT_FOUND");
    cJSON_Delete(r);
    expect_error(&s, &c,
                 "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/"
                 "call\",\"params\":{\"name\":\"nope\",\"arguments\":{}}}",
                 RPC_INVALID_PARAMS, false);
    expect_error(
        &s, &c,
        "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"arguments\":{}}}",
        RPC_INVALID_PARAMS, false);
    expect_error(&s, &c,
                 "{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/"
                 "call\",\"params\":{\"name\":\"echo\",\"arguments\":[1]}}",
                 RPC_INVALID_PARAMS, false);
    expect_error(&s, &c,
                 "{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"tools/call\",\"params\":[\"echo\"]}",
                 RPC_INVALID_PARAMS, false);
    expect_error(&s, &c,
                 "{\"jsonrpc\":\"2.0\",\"id\":16,\"method\":\"tools/call\",\"params\":{\"name\":7}}",
                 RPC_INVALID_PARAMS, false);
    expect_error(
        &s, &c,
        "{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"tools/call\",\"params\":{\"name\":\"crash\"}}",
        RPC_INTERNAL_ERROR, false);
    expect_error(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":18,\"method\":\"resources/list\"}",
                 RPC_METHOD_NOT_FOUND, false);
    expect_error(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":19,\"method\":\"notifications/initialized\"}",
                 RPC_INVALID_REQUEST, false);
    /* Notifications get no answer, known or not, even a tools/call: the next line is the pong. */
    send_line(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such\"}");
    send_line(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
    send_line(
        &c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}");
    expect_pong(&s, &c, 20);
    struct agent_stats st;
    agent_get_stats(c.agent, &st);
    /* Method errors on requests are not abuse; an unknown notification ("no/such") is, since
     * nobody answers it and a flood of them would otherwise cost nothing to send. */
    assert_int_equal(st.abuse, 1);
    assert_int_equal(st.notifications, 4);
    client_close(&c);
    server_stop(&s);
}

static void hostile_lines(void **state)
{
    struct server s;
    struct client c;
    struct agent_host_opts o = {.max_message = 4096};
    server_start(&s, &o);
    client_connect(&s, &c);
    initialize(&s, &c);
    expect_error(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\"", RPC_PARSE_ERROR, true);
    expect_error(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xc3\x28ng\"}", RPC_PARSE_ERROR,
                 true);
    expect_error(&s, &c, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", RPC_INVALID_REQUEST,
                 true);
    expect_error(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", RPC_INVALID_REQUEST,
                 true);
    expect_error(&s, &c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":7}",
                 RPC_INVALID_REQUEST, false);
    char deep[3000];
    memset(deep, '[', 1000);
    memset(deep + 1000, ']', 1000);
    deep[2000] = '\0';
    expect_error(&s, &c, deep, RPC_INVALID_REQUEST, true);
    /* Over the cap: one error, the rest of the line dropped, the next line served. */
    char *big = malloc(20000);
    memset(big, 'a', 19999);
    big[19999] = '\0';
    send_line(&c, big);
    free(big);
    cJSON *r = recv_msg(&s, &c);
    assert_int_equal(error_code(r), RPC_INVALID_REQUEST);
    assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"), "message")->valuestring,
                           "longer than 4096"));
    cJSON_Delete(r);
    expect_pong(&s, &c, 77);
    struct agent_stats st;
    agent_get_stats(c.agent, &st);
    assert_int_equal(st.abuse, 7);
    assert_int_equal(c.ended, 0);
    client_close(&c);
    server_stop(&s);
}

static void abuse_limit_fails_only_that_agent(void **state)
{
    struct server s;
    struct client bad, good;
    struct agent_host_opts o = {.abuse_limit = 5};
    server_start(&s, &o);
    client_connect(&s, &bad);
    client_connect(&s, &good);
    initialize(&s, &good);
    for (int i = 0; i < 10; i++)
        send_line(&bad, "garbage");
    for (int i = 0; i < 5; i++) {
        cJSON *r = recv_msg(&s, &bad);
        assert_int_equal(error_code(r), RPC_PARSE_ERROR);
        cJSON_Delete(r);
    }
    cJSON *r = recv_msg(&s, &bad);
    assert_int_equal(error_code(r), RPC_INVALID_REQUEST);
    assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"), "message")->valuestring,
                           "too many"));
    cJSON_Delete(r);
    for (int i = 0; i < 100 && !bad.ended; i++)
        loop_run_once(s.loop, 10, NULL);
    assert_int_equal(bad.ended, AGENT_END_ABUSE);
    /* Nothing more is read from it: the 6th..10th garbage lines got no answer. */
    assert_null(try_line(&bad));
    expect_pong(&s, &good, 1);
    assert_int_equal(good.ended, 0);
    client_close(&bad);
    client_close(&good);
    server_stop(&s);
}

static void slow_call_does_not_stall_others(void **state)
{
    struct server s;
    struct client a, b;
    server_start(&s, NULL);
    client_connect(&s, &a);
    client_connect(&s, &b);
    initialize(&s, &a);
    initialize(&s, &b);
    send_line(&a, "{\"jsonrpc\":\"2.0\",\"id\":\"slow\",\"method\":\"tools/"
                  "call\",\"params\":{\"name\":\"block\"}}");
    /* A's call now holds a worker until released; B and A itself are still answered. */
    for (int i = 0; i < 3; i++) {
        char req[128];
        snprintf(req, sizeof(req),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/"
                 "call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"i\":%d}}}",
                 i, i);
        cJSON *r = call(&s, &b, req);
        assert_int_equal(cJSON_GetObjectItem(r, "id")->valueint, i);
        cJSON_Delete(r);
    }
    cJSON *r = call(&s, &a,
                    "{\"jsonrpc\":\"2.0\",\"id\":\"fast\",\"method\":\"tools/"
                    "call\",\"params\":{\"name\":\"echo\"}}");
    assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "fast"); /* answered before "slow" */
    cJSON_Delete(r);
    struct agent_stats st;
    agent_get_stats(a.agent, &st);
    assert_int_equal(st.inflight, 1);
    assert_int_equal(util_write_all(s.release_wr, "x", 1), 0);
    r = recv_msg(&s, &a);
    assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "slow");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "structuredContent"), "released")));
    cJSON_Delete(r);
    client_close(&a);
    client_close(&b);
    server_stop(&s);
}

/* A flood from an agent that does not read its answers: the server stops reading it once its
 * output queue is full (bounded memory), and resumes when the agent reads. */
static void flood_back_pressure(void **state)
{
    struct server s;
    struct client c;
    struct agent_host_opts o = {.max_queued_bytes = 4096};
    server_start(&s, &o);
    client_connect(&s, &c);
    fcntl(c.srv_out, F_SETPIPE_SZ, 4096);
    enum { N = 20000 };
    pid_t writer = fork();
    if (writer == 0) {
        for (int i = 0; i < N; i++) {
            char req[100];
            int n = snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n",
                             i);
            if (util_write_all(c.to_srv, req, (size_t)n) < 0)
                _exit(1);
        }
        _exit(0);
    }
    /* Run until the server has stopped reading it: its answers are not being read. */
    struct agent_stats st;
    size_t max_queued = 0;
    int turns = 0;
    do {
        assert_true(loop_run_once(s.loop, 10, NULL) >= 0);
        agent_get_stats(c.agent, &st);
        if (st.queued_bytes > max_queued)
            max_queued = st.queued_bytes;
    } while (st.reading && ++turns < 100000);
    assert_false(st.reading);
    /* Now read everything, running the loop, and check every answer arrives in order. */
    int next = 0;
    for (turns = 0; next < N && turns < 1000000; turns++) {
        char *line;
        while (next < N && (line = try_line(&c))) {
            cJSON *r = cJSON_Parse(line);
            assert_int_equal(cJSON_GetObjectItem(r, "id")->valueint, next);
            next++;
            cJSON_Delete(r);
            free(line);
        }
        assert_true(loop_run_once(s.loop, 10, NULL) >= 0);
        agent_get_stats(c.agent, &st);
        if (st.queued_bytes > max_queued)
            max_queued = st.queued_bytes;
    }
    assert_int_equal(next, N);
    /* Bounded: the cap plus one turn's worth of answers to lines already buffered is not needed. */
    assert_true(max_queued <= 4096 + 128);
    int status;
    assert_int_equal(waitpid(writer, &status, 0), writer);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    client_close(&c);
    server_stop(&s);
}

/* Lines a client has been sent so far (no loop turn): drains its pipe. */
static int count_lines(struct client *c)
{
    int n = 0;
    char *line;
    while ((line = try_line(c))) {
        n++;
        free(line);
    }
    return n;
}

/* Fairness by order, not time: three agents with hundreds of pipelined pings each (heavy) and
 * one that sends a single request (light), written after the floods so that epoll reports it
 * last. The light agent is answered in the first turn, whatever the heavy ones have used of the
 * turn's budget: by then they have been answered a few lines, not a budget's worth (16 and more
 * before the light agent's turn came, when the host's budget held it in the backlog behind them). */
static void light_agent_not_queued_behind_floods(void **state)
{
    struct server s;
    struct client fl[3], good;
    server_start(&s, NULL);
    for (int i = 0; i < 3; i++)
        client_connect(&s, &fl[i]);
    client_connect(&s, &good);
    enum { N = 400 };
    for (int i = 0; i < 3; i++) {
        char buf[N * 48];
        size_t len = 0;
        for (int k = 0; k < N; k++)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len,
                                    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", k);
        assert_int_equal(util_write_all(fl[i].to_srv, buf, len), 0);
    }
    send_line(&good, "{\"jsonrpc\":\"2.0\",\"id\":\"good\",\"method\":\"ping\"}");
    cJSON *r = recv_msg(&s, &good);
    assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "good");
    cJSON_Delete(r);
    int got[3], flood_answered = 0;
    for (int i = 0; i < 3; i++)
        flood_answered += got[i] = count_lines(&fl[i]);
    if (flood_answered > 8)
        fail_msg("the light agent waited for %d answers to the floods", flood_answered);
    /* The floods are served too, all of them, once the light agent is done. */
    for (int turns = 0; got[0] + got[1] + got[2] < 3 * N && turns < 100000; turns++) {
        assert_true(loop_run_once(s.loop, 10, NULL) >= 0);
        for (int i = 0; i < 3; i++)
            got[i] += count_lines(&fl[i]);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(got[i], N);
    for (int i = 0; i < 3; i++)
        client_close(&fl[i]);
    client_close(&good);
    server_stop(&s);
}

/* A trail whose WAL the checkpoint cannot copy: a reader holds a snapshot from before 24 MiB
 * of commits. */
struct congested {
    char dir[64], path[128];
    struct trail *t;
    sqlite3 *reader;
};

static void congested_open(struct congested *c)
{
    snprintf(c->dir, sizeof(c->dir), "/tmp/test_rpc_congested.XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    snprintf(c->path, sizeof(c->path), "%s/trail.db", c->dir);
    struct cerr err;
    assert_int_equal(trail_open(c->path, TRAIL_DURABILITY_NORMAL, &c->t, &err), 0);
    assert_false(trail_congested(c->t));
    assert_int_equal(sqlite3_open_v2(c->path, &c->reader, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(c->reader, "BEGIN; SELECT count(*) FROM entries;", NULL, NULL, NULL),
                     SQLITE_OK);
    static unsigned char blob[1 << 20];
    for (int i = 0; i < 24; i++) {
        for (size_t k = 0; k < sizeof(blob); k += 4)
            memcpy(blob + k, &(uint32_t){(uint32_t)rand()}, 4);
        char hex[65];
        assert_int_equal(trail_blob_put(c->t, blob, sizeof(blob), hex, &err), 0);
        /* blobs commit with an entry (alone they wait for the next batch that has one) */
        assert_int_equal(trail_append(c->t, NULL, "system", "protocol_message", NULL, NULL, &err), 0);
        assert_int_equal(trail_commit(c->t, &err), 0);
    }
    assert_int_equal(trail_sync(c->t, &err), 0);
    assert_true(trail_congested(c->t));
}

static void congested_release(struct congested *c)
{
    if (c->reader) {
        assert_int_equal(sqlite3_exec(c->reader, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(c->reader);
        c->reader = NULL;
    }
}

static void congested_close(struct congested *c)
{
    congested_release(c);
    trail_close(c->t);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", c->dir);
    assert_int_equal(system(cmd), 0);
}

static void flood_pings(struct client *c, int n)
{
    char *buf = malloc((size_t)n * 48);
    size_t len = 0;
    for (int k = 0; k < n; k++)
        len += (size_t)snprintf(buf + len, (size_t)n * 48 - len,
                                "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", k);
    assert_int_equal(util_write_all(c->to_srv, buf, len), 0);
    free(buf);
}

static void good_ping(struct server *s, struct client *good)
{
    send_line(good, "{\"jsonrpc\":\"2.0\",\"id\":\"good\",\"method\":\"ping\"}");
    cJSON *r = recv_msg(s, good);
    assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "good");
    cJSON_Delete(r);
}

/* A busy light agent (the floods are held back for busy ones only): 40 pings in a row, more
 * than the 25 of a window that make it busy. */
static void good_pings(struct server *s, struct client *good)
{
    for (int i = 0; i < 40; i++)
        good_ping(s, good);
}

/* Two flooding agents (N pipelined pings each) and a light one, on a congested trail: what the
 * tests below share. */
struct rig {
    struct congested c;
    struct server s;
    struct client fl[2], good;
    int got[2];
};

static void rig_open(struct rig *r, const struct agent_host_opts *o, bool busy, int n)
{
    memset(r, 0, sizeof(*r));
    congested_open(&r->c);
    server_start_trail(&r->s, o, r->c.t);
    for (int i = 0; i < 2; i++)
        client_connect(&r->s, &r->fl[i]);
    client_connect(&r->s, &r->good);
    if (busy)
        good_pings(&r->s, &r->good);
    else
        good_ping(&r->s, &r->good);
    for (int i = 0; i < 2; i++)
        flood_pings(&r->fl[i], n);
}

/* One turn (waiting at most WAIT_MS), then the floods' answers it brought. */
static void rig_turn(struct rig *r, int wait_ms)
{
    assert_true(loop_run_once(r->s.loop, wait_ms, NULL) >= 0);
    for (int i = 0; i < 2; i++)
        r->got[i] += count_lines(&r->fl[i]);
}

static void rig_close(struct rig *r, int n)
{
    assert_int_equal(r->got[0], n);
    assert_int_equal(r->got[1], n);
    for (int i = 0; i < 2; i++)
        client_close(&r->fl[i]);
    client_close(&r->good);
    server_stop(&r->s);
    congested_close(&r->c);
}

/* While the trail is congested, heavy agents wait in the backlog (here the tick that lets one
 * line through is an hour) and a light agent is answered as ever; once the checkpoint has
 * caught up, the floods are served in full. Before, the floods were served at the usual pace
 * and the WAL grew to its bound, where starting it over held the loop for tens of milliseconds
 * (bench/run_flood.sh). */
static void floods_wait_while_trail_congested(void **state)
{
    enum { N = 200 };
    struct rig r;
    rig_open(&r, &(struct agent_host_opts){.congested_tick = 3600}, true, N);
    for (int round = 0; round < 5; round++) {
        good_pings(&r.s, &r.good);
        for (int turns = 0; turns < 10; turns++)
            rig_turn(&r, 5);
    }
    if (r.got[0] + r.got[1] > 0)
        fail_msg("%d flood answers while the trail was congested", r.got[0] + r.got[1]);

    /* The reader lets go: the checkpoint catches up (its thread looks every second at most);
     * the light agent's pings make the turns that serve the backlog. */
    congested_release(&r.c);
    for (int turns = 0; r.got[0] + r.got[1] < 2 * N && turns < 2000; turns++) {
        good_ping(&r.s, &r.good);
        rig_turn(&r, 5);
    }
    assert_false(trail_congested(r.c.t));
    rig_close(&r, N);
}

/* A trail that stays congested (the reader never lets go) slows the floods, never stops them:
 * one line a tick. The light agent pings between the turns, so that the floods are held back
 * all along: pinging once, it let the hold lapse, and the test passed with the tick broken. */
static void floods_go_on_while_trail_stays_congested(void **state)
{
    enum { N = 40 };
    struct rig r;
    rig_open(&r, &(struct agent_host_opts){.congested_tick = 0.001}, true, N);
    for (int turns = 0; r.got[0] + r.got[1] < 2 * N && turns < 4000; turns++) {
        good_ping(&r.s, &r.good);
        rig_turn(&r, 50);
    }
    assert_true(trail_congested(r.c.t));
    rig_close(&r, N);
}

/* Out of fds, the tick's timer cannot be made: the floods then get a line a turn, and the
 * eventfd makes those turns come. Before, the tick was only marked due and nothing woke the
 * loop again (the floods' pipes are unwatched while they wait in the backlog): they stalled
 * until some other agent happened to send something. Two floods, so that the backlog is never
 * empty when the one served goes back to it (which would write the eventfd). */
static void floods_go_on_without_a_timer(void **state)
{
    enum { N = 40 };
    struct rig r;
    rig_open(&r, NULL, true, N);
    /* No new fd from here on: the lowest free one is the limit. */
    struct rlimit was, none;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    int lowest = dup(0);
    assert_true(lowest >= 0);
    close(lowest);
    none = was;
    none.rlim_cur = (rlim_t)lowest;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
    for (int turns = 0; r.got[0] + r.got[1] < 2 * N && turns < 400; turns++)
        rig_turn(&r, 50);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    rig_close(&r, N);
}

/* One agent alone (corral mcp, corral exec --trail: one host) is not held back while the trail
 * is congested, even when some of its reads bring one request: there is no other agent for the
 * hold to protect. Before, its own light request counted as one, and its pipelined requests
 * then waited for the tick (an hour here). */
static void lone_host_not_held_while_trail_congested(void **state)
{
    struct congested c;
    congested_open(&c);
    struct server s;
    struct client host;
    server_start_trail(&s, &(struct agent_host_opts){.congested_tick = 3600}, c.t);
    client_connect(&s, &host);
    good_ping(&s, &host);
    enum { N = 40 };
    flood_pings(&host, N);
    int got = 0;
    for (int turns = 0; got < N && turns < 400; turns++) {
        assert_true(loop_run_once(s.loop, 5, NULL) >= 0);
        got += count_lines(&host);
    }
    assert_int_equal(got, N);
    assert_true(trail_congested(c.t));
    client_close(&host);
    server_stop(&s);
    congested_close(&c);
}

/* A light agent that is not busy (a ping now and then: a worker's one `complete` signal among
 * pipelined reads) does not hold the floods back: with a few light lines to protect, the hold
 * cost more than it saved (bench/run_scale.sh, 256 pipelining workers: 15-18 s instead of 9).
 * The tick is an hour here: held back, the floods would get nothing. */
static void idle_light_agent_does_not_hold_floods(void **state)
{
    enum { N = 40 };
    struct rig r;
    rig_open(&r, &(struct agent_host_opts){.congested_tick = 3600}, false, N);
    for (int turns = 0; r.got[0] + r.got[1] < 2 * N && turns < 400; turns++) {
        if (turns % 50 == 0)
            good_ping(&r.s, &r.good);
        rig_turn(&r, 5);
    }
    assert_true(trail_congested(r.c.t));
    rig_close(&r, N);
}

/* Light agents do not starve a flood: five agents that each send one ping a turn (their lines
 * are handled in the turn they arrive, whatever the budget) and one agent with pipelined pings.
 * The host's budget of lines is the heavy agents' share of a turn, on top of the light lines:
 * counted with them, five light lines a turn used it up before the backlog was served, and the
 * flood was never answered while they kept pinging. */
static void flood_not_starved_by_light_agents(void **state)
{
    struct server s;
    enum { LIGHT = 5, N = 40 };
    struct client fl, good[LIGHT];
    server_start(&s, NULL);
    client_connect(&s, &fl);
    for (int i = 0; i < LIGHT; i++)
        client_connect(&s, &good[i]);
    flood_pings(&fl, N);
    int got = 0;
    for (int round = 0; round < 4 * N && got < N; round++) {
        for (int i = 0; i < LIGHT; i++)
            send_line(&good[i], "{\"jsonrpc\":\"2.0\",\"id\":\"good\",\"method\":\"ping\"}");
        for (int i = 0; i < LIGHT; i++) {
            cJSON *r = recv_msg(&s, &good[i]);
            assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "good");
            cJSON_Delete(r);
        }
        got += count_lines(&fl);
    }
    assert_int_equal(got, N);
    client_close(&fl);
    for (int i = 0; i < LIGHT; i++)
        client_close(&good[i]);
    server_stop(&s);
}

static void eof_after_answers(void **state)
{
    struct server s;
    struct client c;
    server_start(&s, NULL);
    client_connect(&s, &c);
    initialize(&s, &c);
    send_line(
        &c,
        "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"tools/call\",\"params\":{\"name\":\"block\"}}");
    close(c.to_srv);
    c.to_srv = open("/dev/null", O_WRONLY | O_CLOEXEC);
    for (int i = 0; i < 20; i++)
        loop_run_once(s.loop, 5, NULL);
    assert_int_equal(c.ended, 0); /* a call is still running: its answer is owed */
    assert_int_equal(util_write_all(s.release_wr, "x", 1), 0);
    cJSON *r = recv_msg(&s, &c);
    assert_string_equal(cJSON_GetObjectItem(r, "id")->valuestring, "b");
    cJSON_Delete(r);
    for (int i = 0; i < 100 && !c.ended; i++)
        loop_run_once(s.loop, 5, NULL);
    assert_int_equal(c.ended, AGENT_END_EOF);
    client_close(&c);
    server_stop(&s);
}

static void free_while_call_runs(void **state)
{
    struct server s;
    struct client c;
    server_start(&s, NULL);
    client_connect(&s, &c);
    initialize(&s, &c);
    send_line(
        &c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"block\"}}");
    for (int i = 0; i < 5; i++)
        loop_run_once(s.loop, 5, NULL);
    assert_int_equal(agent_host_inflight(s.host), 1);
    client_close(&c); /* the agent object lives on until its call returns */
    server_stop(&s);  /* releases and joins: the deferred free runs, ASan sees no leak */
}

/* The owner frees the agent from its on_end callback, as corral run does when the agent's
 * process is gone too, while the turn-end walk that found the broken pipe still holds it: it
 * must be released after the walk (ASan: no use after free). */
static void on_end_free(struct agent *a, enum agent_end why, void *data)
{
    struct client *c = data;
    c->ended = (int)why;
    agent_free(a);
    c->agent = NULL;
}

static void free_from_on_end_during_flush(void **state)
{
    struct server s;
    struct client c;
    signal(SIGPIPE, SIG_IGN);
    server_start(&s, NULL);
    client_connect(&s, &c);
    agent_free(c.agent);
    struct agent_config ac = {.name = "t",
                              .in_fd = c.srv_in,
                              .out_fd = c.srv_out,
                              .surface = &test_surface,
                              .tools = &s.tools.ctx,
                              .on_end = on_end_free,
                              .data = &c,
                              .on_message = dispatch_message};
    struct cerr err;
    assert_int_equal(agent_new(s.host, &ac, &c.agent, &err), 0);
    close(c.from_srv); /* its answers can no longer be written */
    c.from_srv = -1;
    send_line(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    for (int i = 0; i < 50 && !c.ended; i++)
        loop_run_once(s.loop, 5, NULL);
    assert_int_equal(c.ended, AGENT_END_IO);
    assert_null(c.agent);
    client_close(&c);
    server_stop(&s);
}

struct seen {
    int in, out, start, end;
    char order[64];
    size_t n;
};

static int count_entry(const struct trail_entry *e, void *ctx)
{
    struct seen *s = ctx;
    char k = 0;
    if (!strcmp(e->type, "protocol_message"))
        k = strstr(e->body, "\"direction\":\"in\"") ? (s->in++, 'i') : (s->out++, 'o');
    else if (!strcmp(e->type, "tool_call"))
        k = strstr(e->body, "\"phase\":\"start\"") ? (s->start++, 's') : (s->end++, 'e');
    if (k && s->n + 1 < sizeof(s->order))
        s->order[s->n++] = k;
    return 0;
}

/* Every message and call is in the trail, and each call's start entry precedes its answer. */
static void trail_records_messages(void **state)
{
    char dir[] = "/tmp/test_rpc_trail.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/trail.db", dir);
    struct trail *t;
    struct cerr err;
    assert_int_equal(trail_open(path, TRAIL_DURABILITY_NORMAL, &t, &err), 0);
    struct server s;
    struct client c;
    server_start_trail(&s, NULL, t);
    client_connect(&s, &c);
    initialize(&s, &c);
    cJSON *r = call(&s, &c,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
                    "call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"k\":\"v\"}}}");
    cJSON_Delete(r);
    expect_error(&s, &c, "bad \xff line", RPC_PARSE_ERROR, true);
    client_close(&c);
    server_stop(&s);
    trail_close(t);
    struct trail_reader *rd;
    assert_int_equal(trail_reader_open(path, &rd, &err), 0);
    struct seen seen = {0};
    assert_int_equal(trail_query(rd, &(struct trail_filter){0}, count_entry, &seen, &err), 0);
    trail_reader_close(rd);
    /* initialize (in, out), initialized (in), call (in, start, end, out), bad line (in, out). */
    assert_int_equal(seen.in, 4);
    assert_int_equal(seen.out, 3);
    assert_int_equal(seen.start, 1);
    assert_int_equal(seen.end, 1);
    seen.order[seen.n] = '\0';
    assert_string_equal(seen.order, "ioiiseoio");
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static int deny_all(void *u, int action, const char *a, const char *b, const char *c, const char *d)
{
    (void)u, (void)action, (void)a, (void)b, (void)c, (void)d;
    return SQLITE_DENY;
}

/* Write-ahead: when the trail cannot be written, a tool call is refused and never performed. */
static void trail_failure_refuses_calls(void **state)
{
    char dir[] = "/tmp/test_rpc_trail.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/trail.db", dir);
    struct trail *t;
    struct cerr err;
    assert_int_equal(trail_open(path, TRAIL_DURABILITY_NORMAL, &t, &err), 0);
    struct server s;
    struct client c;
    server_start_trail(&s, NULL, t);
    client_connect(&s, &c);
    initialize(&s, &c);
    cJSON *r = call(
        &s, &c,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
    assert_non_null(cJSON_GetObjectItem(r, "result"));
    cJSON_Delete(r);
    assert_int_equal(s.tools.calls, 1);
    /* From now on the database refuses every statement. A commit is acknowledged once it is in
     * the ahead log, so the next call may still be made (its entries are there); the applier's
     * transaction then fails and the trail degrades. */
    assert_int_equal(sqlite3_set_authorizer(trail_db_handle(t), deny_all, NULL), SQLITE_OK);
    r = call(&s, &c,
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
    cJSON_Delete(r);
    assert_int_equal(trail_sync(t, &err), -EIO);
    assert_true(trail_degraded(t));
    int made = s.tools.calls;
    expect_error(
        &s, &c,
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}",
        RPC_INTERNAL_ERROR, false);
    assert_int_equal(s.tools.calls, made); /* the refused call was not performed */
    client_close(&c);
    server_stop(&s);
    trail_close(t);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* One loop, many agents: each is served in full. */
static void many_agents(void **state)
{
    enum { N = 48 };
    static struct client cs[N];
    struct server s;
    server_start(&s, NULL);
    for (int i = 0; i < N; i++)
        client_connect(&s, &cs[i]);
    for (int i = 0; i < N; i++) {
        send_line(&cs[i], INIT);
        char req[160];
        snprintf(req, sizeof(req),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/"
                 "call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"who\":%d}}}",
                 100 + i, i);
        send_line(&cs[i], req);
    }
    for (int i = N - 1; i >= 0; i--) {
        cJSON *r = recv_msg(&s, &cs[i]);
        assert_int_equal(cJSON_GetObjectItem(r, "id")->valueint, 0);
        cJSON_Delete(r);
        r = recv_msg(&s, &cs[i]);
        assert_int_equal(cJSON_GetObjectItem(r, "id")->valueint, 100 + i);
        cJSON *sc = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "structuredContent");
        assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "echo"), "who")->valueint, i);
        cJSON_Delete(r);
    }
    for (int i = 0; i < N; i++)
        client_close(&cs[i]);
    server_stop(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lifecycle),
        cmocka_unit_test(free_from_on_end_during_flush),
        cmocka_unit_test(tool_calls),
        cmocka_unit_test(hostile_lines),
        cmocka_unit_test(abuse_limit_fails_only_that_agent),
        cmocka_unit_test(slow_call_does_not_stall_others),
        cmocka_unit_test(flood_back_pressure),
        cmocka_unit_test(light_agent_not_queued_behind_floods),
        cmocka_unit_test(floods_wait_while_trail_congested),
        cmocka_unit_test(floods_go_on_while_trail_stays_congested),
        cmocka_unit_test(idle_light_agent_does_not_hold_floods),
        cmocka_unit_test(flood_not_starved_by_light_agents),
        cmocka_unit_test(floods_go_on_without_a_timer),
        cmocka_unit_test(lone_host_not_held_while_trail_congested),
        cmocka_unit_test(eof_after_answers),
        cmocka_unit_test(free_while_call_runs),
        cmocka_unit_test(trail_records_messages),
        cmocka_unit_test(trail_failure_refuses_calls),
        cmocka_unit_test(many_agents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
