/* supervisor/conn/agent.c: one JSON-RPC connection per agent on the shared loop (see agent.h).
 * Write-ahead: a turn's responses and tool-call starts are staged, the trail commits once at the
 * end of the turn, and only then are responses written and tool calls started. */
#include "supervisor/conn/agent.h"
#include "supervisor/trail/trail.h"

#include <sodium.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#define READ_CHUNK 65536
#define WRITE_IOV 64
#define AGENT_MAX_HELD 16 /* tool calls of one agent waiting for a person at once */

struct outbuf {
    struct outbuf *next;
    char *data;
    size_t len, off;
};

struct outq {
    struct outbuf *head, *tail;
};

struct tool_job {
    struct pool_job pj;
    struct agent *a;
    cJSON *id;
    cJSON *args;
    char *name;
    cJSON *result;
    bool is_error;
    int rc;
    struct tool_job *next_staged;
    bool approved; /* a person approved it: its own ctx with the rule lifted */
    struct tool_ctx ctx;
    struct tool_rule *rules;
};

struct agent_host {
    struct loop *loop;
    struct pool *pool;
    struct trail *trail;
    struct agent_host_opts o;
    struct agent *dirty;                        /* agents with responses staged this turn */
    struct tool_job *staged_head, *staged_tail; /* tool calls waiting for the turn's commit */
    size_t inflight;                            /* staged + submitted tool calls */
    unsigned n_agents;
    bool trail_warned;       /* the first trail failure is said once on stderr */
    bool in_turn;            /* host_turn_end is walking its lists */
    struct agent *graveyard; /* freed during that walk: released after it */
};

struct agent {
    struct agent_host *h;
    char *name;
    int in_fd, out_fd;
    int dup_out_fd; /* when in_fd == out_fd: epoll needs two fds for two watches */
    struct loop_watch win, wout;
    struct rpc_reader *reader;
    const struct tool_surface *surface;
    struct tool_ctx *tools;
    void (*on_end)(struct agent *a, enum agent_end why, void *data);
    void *data;
    void (*wacp)(struct agent *a, const struct rpc_msg *m, void *data);
    void (*on_message)(struct agent *a, const struct rpc_msg *m);
    int (*approve)(struct agent *a, const cJSON *id, const char *tool, const cJSON *args, void *data);
    unsigned held; /* tool calls waiting for a person */
    struct outq staged, ready;
    size_t queued; /* bytes in staged + ready */
    bool dirty;
    struct agent *dirty_next;
    bool initialized;
    char protocol[32];
    bool in_eof;  /* its output is closed: no more requests */
    bool failing; /* abuse limit reached: deliver the last error, then end */
    bool ended;
    bool freeing; /* agent_free called while tool calls were running */
    unsigned inflight;
    struct agent_stats st;
    struct agent *grave_next;
};

static void agent_pump(struct agent *a);
static void agent_maybe_end(struct agent *a);
static void agent_flush(struct agent *a);

const char *agent_end_name(enum agent_end e)
{
    switch (e) {
    case AGENT_END_EOF: return "eof";
    case AGENT_END_ABUSE: return "abuse";
    case AGENT_END_IO: return "io";
    case AGENT_END_NOMEM: return "nomem";
    }
    return "unknown";
}

/* ---- the trail ----
 * One entry per protocol message and per tool call start and end, committed once per turn before
 * that turn's responses are released and its tool calls started (write-ahead). Lines too large
 * for an entry body, or not valid UTF-8, go to a content-addressed blob. */
#define TRAIL_INLINE_MAX 65536
#define TRAIL_AGENT_BUDGET (256ull << 20) /* bytes of message content per agent */

/* WS: the agent's workspace id (its name), so its entries join that workspace's local chain. */
static int host_trail_append(struct agent_host *h, const char *ws, const char *type, cJSON *body)
{
    struct cerr err = {0};
    int r = body ? trail_append(h->trail, ws, "protocol", type, body, NULL, &err) : -ENOMEM;
    cJSON_Delete(body);
    if (r < 0 && !h->trail_warned) {
        h->trail_warned = true;
        fprintf(stderr, "corral: trail: %s\n", err.msg[0] ? err.msg : strerror(-r));
    }
    return r;
}

/* Puts TEXT in BODY under KEY, or as a blob under KEY_blob when large or not UTF-8. */
static int trail_put_text(struct agent_host *h, cJSON *body, const char *key, const char *text,
                          size_t len)
{
    if (len <= TRAIL_INLINE_MAX && rpc_utf8_check(text, len) == len && !memchr(text, '\0', len)) {
        char *copy = strndup(text, len);
        bool ok = copy && cJSON_AddStringToObject(body, key, copy);
        free(copy);
        return ok ? 0 : -ENOMEM;
    }
    char hex[65], name[64];
    struct cerr err;
    int r = trail_blob_put(h->trail, text, len, hex, &err);
    if (r < 0)
        return r;
    snprintf(name, sizeof(name), "%s_blob", key);
    return cJSON_AddStringToObject(body, name, hex) ? 0 : -ENOMEM;
}

static int host_trail_message(struct agent_host *h, struct agent *a, bool inbound, const char *line,
                              size_t len)
{
    if (!h->trail)
        return 0;
    cJSON *body = cJSON_CreateObject();
    /* Every message gets its entry; its content only while the agent is within its trail
     * budget, so a hostile agent cannot fill the disk through the trail. Past it: size and
     * hash. */
    bool keep = a->st.trail_bytes + len <= TRAIL_AGENT_BUDGET;
    if (keep)
        a->st.trail_bytes += len;
    char hex[65];
    if (!keep) {
        unsigned char hsh[32];
        crypto_generichash(hsh, sizeof(hsh), (const unsigned char *)line, len, NULL, 0);
        sodium_bin2hex(hex, sizeof(hex), hsh, sizeof(hsh));
    }
    if (!body || !cJSON_AddStringToObject(body, "agent", a->name) ||
        !cJSON_AddStringToObject(body, "direction", inbound ? "in" : "out") ||
        !cJSON_AddNumberToObject(body, "bytes", (double)len) ||
        (keep ? trail_put_text(h, body, "message", line, len) < 0
              : !cJSON_AddStringToObject(body, "message_blake2b", hex) ||
                    !cJSON_AddBoolToObject(body, "content_omitted", true))) {
        cJSON_Delete(body);
        return host_trail_append(h, a->name, "protocol_message", NULL);
    }
    return host_trail_append(h, a->name, "protocol_message", body);
}

static bool is_denial_code(const char *code)
{
    /* The surfaces' words for "the rules refuse this": WAP, File Tools. */
    return !strcmp(code, "PERMISSION_DENIED") || !strcmp(code, "path_outside_workspace") ||
           !strcmp(code, "permission_denied");
}

static int record_denial(struct agent_host *h, struct agent *a, const char *kind, const char *subject,
                         const char *rule, const char *reason)
{
    if (!h->trail)
        return 0;
    cJSON *d = cJSON_CreateObject();
    bool ok = d && cJSON_AddStringToObject(d, "kind", kind) &&
              cJSON_AddStringToObject(d, "agent", a->name) &&
              cJSON_AddStringToObject(d, "subject", subject) &&
              cJSON_AddStringToObject(d, "rule", rule) &&
              (!reason || cJSON_AddStringToObject(d, "reason", reason));
    if (!ok) {
        cJSON_Delete(d);
        d = NULL;
    }
    return host_trail_append(h, a->name, "denial", d);
}

int agent_record_denial(struct agent *a, const char *kind, const char *subject, const char *rule)
{
    return record_denial(a->h, a, kind, subject, rule, NULL) < 0 ? -EIO : 0;
}

static int host_trail_tool(struct agent_host *h, struct agent *a, const char *phase, const cJSON *id,
                           const char *tool, const cJSON *args, const cJSON *result, bool is_error,
                           int rc)
{
    if (!h->trail)
        return 0;
    cJSON *body = cJSON_CreateObject();
    bool ok = body && cJSON_AddStringToObject(body, "agent", a->name) &&
              cJSON_AddStringToObject(body, "phase", phase) &&
              cJSON_AddStringToObject(body, "tool", tool) &&
              cJSON_AddItemToObject(body, "request_id",
                                    id ? cJSON_Duplicate(id, false) : cJSON_CreateNull());
    if (ok && args) {
        char *text = cJSON_PrintUnformatted(args);
        ok = text && trail_put_text(h, body, "arguments", text, strlen(text)) == 0;
        free(text);
    }
    if (ok && !strcmp(phase, "end")) {
        const cJSON *code = is_error ? cJSON_GetObjectItemCaseSensitive(result, "code") : NULL;
        ok = cJSON_AddStringToObject(body, "outcome",
                                     rc < 0     ? "failed"
                                     : is_error ? "error"
                                                : "ok") &&
             (!cJSON_IsString(code) || cJSON_AddStringToObject(body, "code", code->valuestring));
    }
    if (!ok) {
        cJSON_Delete(body);
        body = NULL;
    }
    int r = host_trail_append(h, a->name, "tool_call", body);
    /* A refusal by the rules (not a missing file or a bad argument) is also a denial entry, so
     * every denial can be found by its type. */
    if (r == 0 && is_error && result) {
        const char *rule = NULL, *reason = NULL;
        if (a->surface->denial) {
            rule = a->surface->denial(result);
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(result, "code");
            if (!cJSON_IsString(c))
                c = cJSON_GetObjectItemCaseSensitive(result, "error");
            reason = cJSON_IsString(c) ? c->valuestring : NULL;
        } else {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "code");
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(result, "details"), "reason");
            if (cJSON_IsString(code) && is_denial_code(code->valuestring)) {
                rule = cJSON_IsString(why) ? why->valuestring : "workspace containment";
                reason = code->valuestring;
            }
        }
        if (rule)
            r = record_denial(h, a, "path", tool, rule, reason);
    }
    return r;
}

static int host_trail_commit(struct agent_host *h)
{
    if (!h->trail)
        return 0;
    struct cerr err = {0};
    int r = trail_commit(h->trail, &err);
    if (r < 0 && !h->trail_warned) {
        h->trail_warned = true;
        fprintf(stderr, "corral: trail: %s: refusing tool calls from now on\n", err.msg);
    }
    return r;
}

/* ---- output queue ---- */

static void outq_clear(struct outq *q)
{
    while (q->head) {
        struct outbuf *b = q->head;
        q->head = b->next;
        free(b->data);
        free(b);
    }
    q->tail = NULL;
}

static void outq_append(struct outq *q, struct outq *from)
{
    if (!from->head)
        return;
    if (q->tail)
        q->tail->next = from->head;
    else
        q->head = from->head;
    q->tail = from->tail;
    from->head = from->tail = NULL;
}

static void mark_dirty(struct agent *a)
{
    if (a->dirty)
        return;
    a->dirty = true;
    a->dirty_next = a->h->dirty;
    a->h->dirty = a;
}

/* Takes LINE (malloc'd, ending in '\n'). */
static void stage_line(struct agent *a, char *line, size_t len)
{
    if (!line) {
        /* Out of memory building a response: the connection cannot keep its promises. */
        a->failing = true;
        return;
    }
    if (a->ended) {
        free(line);
        return;
    }
    struct outbuf *b = malloc(sizeof(*b));
    if (!b) {
        free(line);
        a->failing = true;
        return;
    }
    host_trail_message(a->h, a, false, line, len - 1);
    b->next = NULL;
    b->data = line;
    b->len = len;
    b->off = 0;
    struct outq one = {b, b};
    outq_append(&a->staged, &one);
    a->queued += len;
    mark_dirty(a);
}

void agent_reply(struct agent *a, const cJSON *id, const cJSON *result)
{
    size_t len = 0;
    char *line = rpc_result_line(id, result, &len);
    a->st.responses++;
    stage_line(a, line, len);
}

void agent_reply_error(struct agent *a, const cJSON *id, int code, const char *message)
{
    size_t len = 0;
    char *line = rpc_error_line(id, code, message, NULL, &len);
    a->st.errors_sent++;
    stage_line(a, line, len);
}

void agent_reply_error_data(struct agent *a, const cJSON *id, int code, const char *message,
                            const cJSON *data)
{
    size_t len = 0;
    char *line = rpc_error_line(id, code, message, data, &len);
    a->st.errors_sent++;
    stage_line(a, line, len);
}

void agent_notify(struct agent *a, const char *method, const cJSON *params)
{
    cJSON *n = cJSON_CreateObject();
    char *text = NULL;
    if (n && cJSON_AddStringToObject(n, "jsonrpc", "2.0") &&
        cJSON_AddStringToObject(n, "method", method) &&
        (!params || cJSON_AddItemToObject(n, "params", cJSON_Duplicate(params, true))))
        text = cJSON_PrintUnformatted(n);
    cJSON_Delete(n);
    char *line = NULL;
    size_t len = 0;
    if (text) {
        len = strlen(text);
        line = realloc(text, len + 2);
        if (line) {
            line[len] = '\n';
            line[len + 1] = '\0';
            len += 1;
        } else {
            free(text);
        }
    }
    stage_line(a, line, len);
}

bool agent_serves_wacp(const struct agent *a)
{
    return a->wacp != NULL;
}

void agent_call_wacp(struct agent *a, const struct rpc_msg *m)
{
    a->wacp(a, m, a->data);
}

/* ---- reading ---- */

static bool agent_can_read(const struct agent *a)
{
    const struct agent_host_opts *o = &a->h->o;
    return !a->ended && !a->failing && a->queued < o->max_queued_bytes && a->inflight < o->max_inflight;
}

static void on_readable(void *data, uint32_t events);

/* Back-pressure: the input fd is watched only while the agent may send more. Removing the watch
 * (rather than clearing EPOLLIN) matters: a hang-up is reported whatever the mask says. */
static void agent_update_watch(struct agent *a)
{
    bool want = agent_can_read(a) && !a->in_eof;
    a->st.reading = want;
    if (want && !a->win.added) {
        if (loop_watch_add(a->h->loop, &a->win, a->in_fd, EPOLLIN, on_readable, a) < 0)
            a->failing = true;
    } else if (!want && a->win.added)
        loop_watch_del(a->h->loop, &a->win);
}

static void agent_end(struct agent *a, enum agent_end why)
{
    if (a->ended)
        return;
    a->ended = true;
    loop_watch_del(a->h->loop, &a->win);
    loop_watch_del(a->h->loop, &a->wout);
    outq_clear(&a->staged);
    outq_clear(&a->ready);
    a->queued = 0;
    a->st.reading = false;
    if (a->on_end)
        a->on_end(a, why, a->data);
}

static void agent_abuse_limit(struct agent *a)
{
    if (a->st.abuse >= a->h->o.abuse_limit && !a->failing) {
        char msg[160];
        snprintf(msg, sizeof(msg), "too many malformed messages (%u): the connection is closed",
                 a->st.abuse);
        agent_reply_error(a, NULL, RPC_INVALID_REQUEST, msg);
        a->failing = true;
        rpc_reader_fail(a->reader);
    }
}

static void agent_abuse(struct agent *a, const cJSON *id, int code, const char *message)
{
    a->st.abuse++;
    agent_reply_error(a, id, code, message);
    agent_abuse_limit(a);
}

void agent_count_abuse(struct agent *a)
{
    a->st.abuse++;
    agent_abuse_limit(a);
}

static void agent_handle_line(struct agent *a, const char *line, size_t len)
{
    a->st.lines_in++;
    host_trail_message(a->h, a, true, line, len);
    struct rpc_msg m;
    struct rpc_error e;
    if (rpc_decode(line, len, a->h->o.max_depth, &m, &e) < 0) {
        agent_abuse(a, e.id, e.code, e.message);
        rpc_error_clear(&e);
        return;
    }
    if (m.id)
        a->st.requests++;
    else
        a->st.notifications++;
    a->on_message(a, &m);
    rpc_msg_clear(&m);
}

static void agent_pump(struct agent *a)
{
    while (agent_can_read(a)) {
        const char *line;
        size_t len;
        enum rpc_frame f = rpc_reader_next(a->reader, &line, &len);
        if (f == RPC_FRAME_LINE)
            agent_handle_line(a, line, len);
        else if (f == RPC_FRAME_TOO_LONG) {
            char msg[128];
            snprintf(msg, sizeof(msg), "invalid request: message longer than %zu bytes (discarded)",
                     a->h->o.max_message);
            agent_abuse(a, NULL, RPC_INVALID_REQUEST, msg);
        } else
            break;
    }
    if (!a->ended)
        agent_update_watch(a);
}

static void on_readable(void *data, uint32_t events)
{
    struct agent *a = data;
    size_t room;
    char *dst = rpc_reader_space(a->reader, READ_CHUNK, &room);
    if (!dst) {
        agent_end(a, AGENT_END_NOMEM);
        return;
    }
    /* One read per event: fair to the other agents of the loop, level-triggered brings us back. */
    ssize_t n = read(a->in_fd, dst, room < READ_CHUNK ? room : READ_CHUNK);
    if (n > 0) {
        rpc_reader_commit(a->reader, (size_t)n);
        a->st.bytes_in += (uint64_t)n;
    } else if (n == 0) {
        a->in_eof = true;
        loop_watch_del(a->h->loop, &a->win);
    } else if (errno != EAGAIN && errno != EINTR) {
        agent_end(a, AGENT_END_IO);
        return;
    }
    agent_pump(a);
    agent_maybe_end(a);
}

/* ---- writing ---- */

static void on_writable(void *data, uint32_t events)
{
    struct agent *a = data;
    if (events & EPOLLOUT)
        agent_flush(a);
    else if (events & (EPOLLERR | EPOLLHUP))
        agent_end(a, AGENT_END_IO); /* the agent closed its stdin: nobody will read the answers */
    if (!a->ended) {
        agent_pump(a);
        agent_maybe_end(a);
    }
}

static void agent_flush(struct agent *a)
{
    while (a->ready.head) {
        struct iovec iov[WRITE_IOV];
        int n = 0;
        for (struct outbuf *b = a->ready.head; b && n < WRITE_IOV; b = b->next, n++) {
            iov[n].iov_base = b->data + b->off;
            iov[n].iov_len = b->len - b->off;
        }
        ssize_t w = writev(a->out_fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            agent_end(a, AGENT_END_IO);
            return;
        }
        a->st.bytes_out += (uint64_t)w;
        size_t left = (size_t)w;
        a->queued -= left;
        while (left && a->ready.head) {
            struct outbuf *b = a->ready.head;
            size_t part = b->len - b->off;
            if (left < part) {
                b->off += left;
                break;
            }
            left -= part;
            a->ready.head = b->next;
            if (!a->ready.head)
                a->ready.tail = NULL;
            free(b->data);
            free(b);
        }
    }
    int r = 0;
    if (a->ready.head && !a->wout.added)
        r = loop_watch_add(a->h->loop, &a->wout, a->out_fd, EPOLLOUT, on_writable, a);
    else if (!a->ready.head && a->wout.added)
        loop_watch_del(a->h->loop, &a->wout);
    if (r < 0)
        agent_end(a, AGENT_END_IO);
}

static void agent_maybe_end(struct agent *a)
{
    if (a->ended || a->staged.head || a->ready.head)
        return;
    if (a->failing)
        agent_end(a, AGENT_END_ABUSE);
    else if (a->in_eof && a->inflight == 0 && a->held == 0 && rpc_reader_pending(a->reader) == 0)
        agent_end(a, AGENT_END_EOF);
}

/* ---- tool calls ---- */

static void tool_job_free(struct tool_job *j)
{
    cJSON_Delete(j->id);
    cJSON_Delete(j->args);
    cJSON_Delete(j->result);
    free(j->name);
    free(j->rules);
    free(j);
}

static void tool_job_run(struct pool_job *pj)
{
    struct tool_job *j = (struct tool_job *)pj;
    static const cJSON empty = {.type = cJSON_Object};
    j->rc = tool_surface_call(j->a->surface, j->approved ? &j->ctx : j->a->tools, j->name,
                              j->args ? j->args : &empty, &j->result, &j->is_error);
}

static void agent_really_free(struct agent *a);

/* The MCP shape of a tool result: the seed's object twice, as text for models that read text
 * and as structuredContent for programs. */
static cJSON *mcp_tool_result(const cJSON *result, bool is_error)
{
    char *text = cJSON_PrintUnformatted(result);
    cJSON *r = cJSON_CreateObject();
    cJSON *content = r ? cJSON_AddArrayToObject(r, "content") : NULL;
    cJSON *item = cJSON_CreateObject();
    bool ok = text && content && item && cJSON_AddStringToObject(item, "type", "text") &&
              cJSON_AddStringToObject(item, "text", text);
    free(text);
    if (ok) {
        cJSON_AddItemToArray(content, item);
        item = NULL;
        ok = cJSON_AddItemReferenceToObject(r, "structuredContent", (cJSON *)result) &&
             cJSON_AddBoolToObject(r, "isError", is_error);
    }
    cJSON_Delete(item);
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

static void tool_job_done(struct pool_job *pj)
{
    struct tool_job *j = (struct tool_job *)pj;
    struct agent *a = j->a;
    a->inflight--;
    a->h->inflight--;
    if (a->freeing) {
        tool_job_free(j);
        if (a->inflight == 0)
            agent_really_free(a);
        return;
    }
    host_trail_tool(a->h, a, "end", j->id, j->name, NULL, j->result, j->is_error, j->rc);
    if (!a->ended) {
        if (j->rc == -ENOENT) {
            char msg[200];
            snprintf(msg, sizeof(msg), "invalid params: unknown tool \"%.100s\" (tools/list names them)",
                     j->name);
            agent_reply_error(a, j->id, RPC_INVALID_PARAMS, msg);
        } else if (j->rc < 0 || !j->result) {
            char msg[200];
            snprintf(msg, sizeof(msg), "internal error: tool %.100s failed: %s", j->name,
                     strerror(j->rc < 0 ? -j->rc : EIO));
            agent_reply_error(a, j->id, RPC_INTERNAL_ERROR, msg);
        } else {
            cJSON *r = mcp_tool_result(j->result, j->is_error);
            if (r)
                agent_reply(a, j->id, r);
            else
                agent_reply_error(a, j->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
            cJSON_Delete(r);
        }
    }
    tool_job_free(j);
    if (!a->ended) {
        agent_pump(a);
        agent_maybe_end(a);
    }
}

static int call_tool(struct agent *a, const cJSON *id, const char *name, const cJSON *args,
                     bool approved)
{
    struct tool_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    if (approved) {
        /* The person's approval lifts needs_approval for this one call, nothing else. */
        j->approved = true;
        j->ctx = *a->tools;
        if (a->tools->n_rules) {
            j->rules = calloc(a->tools->n_rules, sizeof(*j->rules));
            if (!j->rules) {
                free(j);
                return -ENOMEM;
            }
            memcpy(j->rules, a->tools->rules, a->tools->n_rules * sizeof(*j->rules));
            for (size_t i = 0; i < a->tools->n_rules; i++)
                if (j->rules[i].name && !strcmp(j->rules[i].name, name))
                    j->rules[i].needs_approval = false;
            j->ctx.rules = j->rules;
        }
    }
    j->pj.run = tool_job_run;
    j->pj.done = tool_job_done;
    j->a = a;
    j->id = id ? cJSON_Duplicate(id, false) : cJSON_CreateNull();
    j->name = strdup(name);
    j->args = args ? cJSON_Duplicate(args, true) : NULL;
    if (!j->id || !j->name || (args && !j->args)) {
        tool_job_free(j);
        return -ENOMEM;
    }
    struct agent_host *h = a->h;
    if (host_trail_tool(h, a, "start", id, name, args, NULL, false, 0) < 0) {
        tool_job_free(j);
        return -EIO; /* not recorded, so not run */
    }
    a->inflight++;
    h->inflight++;
    a->st.tool_calls++;
    if (h->staged_tail)
        h->staged_tail->next_staged = j;
    else
        h->staged_head = j;
    h->staged_tail = j;
    return 0;
}

int agent_call_tool(struct agent *a, const cJSON *id, const char *name, const cJSON *args)
{
    return call_tool(a, id, name, args, false);
}

int agent_hold_for_approval(struct agent *a, const cJSON *id, const char *tool, const cJSON *args)
{
    const struct tool_rule *rule = tool_rule_find(a->tools, tool);
    if (!a->approve || !rule || !rule->needs_approval)
        return -ENOENT;
    /* Held calls keep their arguments (up to a message each) and a gate in the run's one queue:
     * an agent that floods them must not exhaust the supervisor's memory or the other agents'
     * room for approvals. Beyond the cap the call is refused by the gate, in the surface's shape. */
    if (a->held >= AGENT_MAX_HELD)
        return -EAGAIN;
    int r = a->approve(a, id, tool, args, a->data);
    if (r == 0)
        a->held++;
    if (r != 1)
        return r;
    r = call_tool(a, id, tool, args, true);
    if (r < 0)
        agent_reply_error(a, id, RPC_INTERNAL_ERROR, "internal error: the call could not be made");
    return 0;
}

void agent_tool_release(struct agent *a, const cJSON *id, const char *tool, const cJSON *args,
                        bool approved)
{
    if (a->held)
        a->held--;
    if (a->ended || a->freeing) {
        agent_maybe_end(a);
        return;
    }
    int r = call_tool(a, id, tool, args, approved);
    if (r == -EIO)
        agent_reply_error(a, id, RPC_INTERNAL_ERROR,
                          "internal error: the trail cannot be written, so the call was not made");
    else if (r < 0)
        agent_reply_error(a, id, RPC_INTERNAL_ERROR, "internal error: out of memory");
    mark_dirty(a);
}

/* ---- the turn ---- */

static void host_turn_end(void *data)
{
    struct agent_host *h = data;
    h->in_turn = true;
    /* Releasing output can unblock an agent whose buffer already holds more requests; those are
     * answered in the same turn, so repeat until nothing new was staged. */
    while (h->dirty || h->staged_head) {
        int committed = host_trail_commit(h);
        struct tool_job *jobs = h->staged_head;
        h->staged_head = h->staged_tail = NULL;
        while (jobs) {
            struct tool_job *j = jobs;
            jobs = j->next_staged;
            if (committed < 0) {
                /* Nothing unrecorded may happen: the call is refused, not run. */
                j->rc = -EIO;
                agent_reply_error(
                    j->a, j->id, RPC_INTERNAL_ERROR,
                    "internal error: the trail cannot be written, so the call was not made");
                j->a->inflight--;
                h->inflight--;
                tool_job_free(j);
                continue;
            }
            pool_submit(h->pool, &j->pj);
        }
        struct agent *list = h->dirty;
        h->dirty = NULL;
        for (struct agent *a = list, *next; a; a = next) {
            next = a->dirty_next; /* saved: pumping may mark A dirty again, on a new list */
            a->dirty = false;
            a->dirty_next = NULL;
            outq_append(&a->ready, &a->staged);
            if (a->ended)
                continue;
            agent_flush(a);
            if (!a->ended)
                agent_pump(a);
            agent_maybe_end(a);
        }
    }
    /* Entries staged by others on this loop (the WACP runtime's, on a timer turn) are
     * committed at the end of the turn too. */
    if (h->trail && trail_pending(h->trail) > 0)
        host_trail_commit(h);
    h->in_turn = false;
    while (h->graveyard) {
        struct agent *a = h->graveyard;
        h->graveyard = a->grave_next;
        agent_really_free(a);
    }
}

int agent_host_new(struct loop *loop, struct pool *pool, struct trail *trail,
                   const struct agent_host_opts *o, struct agent_host **out, struct cerr *err)
{
    struct agent_host *h = calloc(1, sizeof(*h));
    if (!h)
        return cerr_set(err, ENOMEM, "agents: out of memory");
    h->loop = loop;
    h->pool = pool;
    h->trail = trail;
    if (o)
        h->o = *o;
    if (!h->o.max_message)
        h->o.max_message = RPC_DEFAULT_MAX_MESSAGE;
    if (!h->o.max_depth)
        h->o.max_depth = RPC_DEFAULT_MAX_DEPTH;
    if (!h->o.max_queued_bytes)
        h->o.max_queued_bytes = (size_t)1 << 20;
    if (!h->o.max_inflight)
        h->o.max_inflight = 4;
    if (!h->o.abuse_limit)
        h->o.abuse_limit = 100;
    loop_set_turn_end(loop, host_turn_end, h);
    *out = h;
    return 0;
}

void agent_host_free(struct agent_host *h)
{
    if (!h)
        return;
    loop_set_turn_end(h->loop, NULL, NULL);
    free(h);
}

size_t agent_host_inflight(const struct agent_host *h)
{
    return h->inflight;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

int agent_new(struct agent_host *h, const struct agent_config *c, struct agent **out, struct cerr *err)
{
    if (!c->surface || !c->tools || !c->on_message || c->in_fd < 0 || c->out_fd < 0)
        return cerr_set(err, EINVAL,
                        "agent: a surface, a tool context, a message handler and two fds are required");
    struct agent *a = calloc(1, sizeof(*a));
    if (!a)
        return cerr_set(err, ENOMEM, "agent: out of memory");
    a->h = h;
    a->name = strdup(c->name ? c->name : "agent");
    a->reader = rpc_reader_new(h->o.max_message);
    a->in_fd = c->in_fd;
    a->out_fd = c->out_fd;
    a->dup_out_fd = -1;
    a->win.fd = a->wout.fd = -1;
    a->surface = c->surface;
    a->wacp = c->wacp;
    a->on_message = c->on_message;
    a->approve = c->approve;
    a->tools = c->tools;
    a->on_end = c->on_end;
    a->data = c->data;
    int r = (!a->name || !a->reader) ? -ENOMEM : 0;
    if (!r && c->in_fd == c->out_fd) {
        a->dup_out_fd = fcntl(c->out_fd, F_DUPFD_CLOEXEC, 3);
        r = a->dup_out_fd < 0 ? -errno : 0;
        a->out_fd = a->dup_out_fd;
    }
    if (!r)
        r = set_nonblock(a->in_fd);
    if (!r)
        r = set_nonblock(a->out_fd);
    if (!r) {
        r = loop_watch_add(h->loop, &a->win, a->in_fd, EPOLLIN, on_readable, a);
        a->st.reading = r == 0;
    }
    if (r < 0) {
        agent_really_free(a);
        return cerr_set(err, r, "agent %s: setting up its pipes: %s", c->name ? c->name : "",
                        strerror(-r));
    }
    h->n_agents++;
    *out = a;
    return 0;
}

static void agent_really_free(struct agent *a)
{
    if (a->dup_out_fd >= 0)
        close(a->dup_out_fd);
    rpc_reader_free(a->reader);
    free(a->name);
    free(a);
}

void agent_free(struct agent *a)
{
    if (!a)
        return;
    struct agent_host *h = a->h;
    a->on_end = NULL;
    agent_end(a, AGENT_END_EOF);
    /* Out of the turn's lists: nothing may point at it once it is gone. */
    for (struct agent **pp = &h->dirty; *pp; pp = &(*pp)->dirty_next)
        if (*pp == a) {
            *pp = a->dirty_next;
            break;
        }
    struct tool_job **jp = &h->staged_head;
    h->staged_tail = NULL;
    while (*jp) {
        struct tool_job *j = *jp;
        if (j->a == a) {
            *jp = j->next_staged;
            a->inflight--;
            h->inflight--;
            tool_job_free(j);
        } else {
            h->staged_tail = j;
            jp = &j->next_staged;
        }
    }
    h->n_agents--;
    if (a->inflight > 0) {
        a->freeing = true; /* the last tool_job_done frees it */
        return;
    }
    if (h->in_turn) {
        /* Freed from a callback of the turn's walk (its end, said by agent_flush): the walk
         * still holds it; it is released when the walk is over. */
        a->freeing = true;
        a->grave_next = h->graveyard;
        h->graveyard = a;
        return;
    }
    agent_really_free(a);
}

void agent_get_stats(const struct agent *a, struct agent_stats *s)
{
    *s = a->st;
    s->queued_bytes = a->queued;
    s->inflight = a->inflight;
}

bool agent_ended(const struct agent *a)
{
    return a->ended;
}
const char *agent_name(const struct agent *a)
{
    return a->name;
}
bool agent_initialized(const struct agent *a)
{
    return a->initialized;
}

void agent_set_initialized(struct agent *a, const char *protocol_version)
{
    a->initialized = true;
    snprintf(a->protocol, sizeof(a->protocol), "%s", protocol_version ? protocol_version : "");
}

const struct tool_surface *agent_surface(const struct agent *a)
{
    return a->surface;
}
const struct tool_ctx *agent_tools(const struct agent *a)
{
    return a->tools;
}
