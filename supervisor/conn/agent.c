/* supervisor/conn/agent.c: one JSON-RPC connection per agent on the shared loop (see agent.h).
 * Write-ahead: a turn's responses and tool-call starts are staged, the trail commits once at the
 * end of the turn, and only then are responses written and tool calls that act (writes,
 * commands) started. A read acts on nothing: it runs at once, before its entries commit, and
 * its answer waits for the commit like every response, so a read costs one group commit. */
#include "supervisor/conn/agent.h"
#include "common/rate.h"
#include "policy/policy.h"
#include "supervisor/conn/mcp.h"
#include "supervisor/trail/trail.h"

#include <sodium.h>

#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#define READ_CHUNK 65536
#define AGENT_MAX_REQUESTS 16 /* requests of corral's own waiting for the other end's answer */
#define WRITE_IOV 64
#define AGENT_MAX_HELD 16 /* tool calls of one agent waiting for a person at once */
/* Arguments kept while calls run or wait for a person (rpc_json_cost), in messages' worth: an
 * agent's own, and the run's over every agent. */
#define AGENT_KEPT_MESSAGES 4
#define HOST_KEPT_MESSAGES 32

struct outbuf {
    struct outbuf *next;
    char *data;
    size_t len, off;
    cJSON *answer_id; /* a tool call's answer: withheld if the turn's commit fails */
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
    bool early; /* a read, running before its entries commit */
    struct tool_job *next_staged;
    struct tool_job *next_call; /* the agent's calls in flight (staged or submitted) */
    struct tool_ctx ctx;        /* the agent's ctx, with this call's controls */
    struct tool_call_ctl ctl;
    cJSON *progress; /* the request's progressToken, or NULL */
    size_t cost;     /* what its arguments hold (rpc_json_cost), in the agent's kept bytes */
    struct loop_watch progress_w;
    double started;
    bool cancelled;
};

/* A request corral sent to the other end, waiting for its answer. */
struct out_request {
    struct out_request *next;
    char id[32];
    cJSON *about; /* the other end's request this one serves, or NULL */
    agent_answer_fn done;
    void *data;
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
    unsigned turn; /* counts turn ends: the per-turn budgets of lines and inline calls */
    struct agent *backlog, *backlog_tail; /* agents that used a budget with input left, FIFO */
    unsigned turn_lines;                  /* lines handled this turn, over every agent */
    size_t turn_bytes;                    /* bytes read this turn from heavy agents */
    int kick_fd; /* eventfd, readable while the backlog waits: the next turn serves it */
    struct loop_watch congested_w; /* the tick while the trail is congested (backlog_serve) */
    bool congested_armed, congested_tick;
    unsigned heavy_cap; /* turn_lines past which heavy agents wait (HOST_LINES_PER_TURN, or less) */
    /* Light lines handled in the window begun at light_win_at, and in the window before it
     * (light_busy: whether the floods are held back while the trail is congested). */
    double light_win_at;
    unsigned light_win_n, light_prev_n;
    struct loop_watch kick;
    bool trail_warned;       /* the first trail failure is said once on stderr */
    uint64_t trail_refusals; /* calls and answers refused for want of the trail */
    char refusal[512];       /* the words of the last such refusal (agent_trail_refusal) */
    size_t kept;             /* arguments of calls running or held, over every agent */
    bool in_turn;            /* host_turn_end is walking its lists */
    bool serving_backlog;    /* backlog_serve is running: heavy agents' lines are handled */
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
    struct pool_share share; /* its long tool calls (commands) on the pool now */
    struct rate_bucket tool_rate;
    uint64_t rate_refused, rate_noted_ms;  /* refused since the last denial entry, and when */
    uint64_t notes_dropped, drop_noted_ms; /* notifications over its byte budget, and when noted */
    void (*on_end)(struct agent *a, enum agent_end why, void *data);
    void *data;
    void (*wacp)(struct agent *a, const struct rpc_msg *m, void *data);
    void (*on_message)(struct agent *a, const struct rpc_msg *m);
    int (*approve)(struct agent *a, const cJSON *id, const char *tool, const cJSON *args, void *data);
    unsigned held; /* tool calls waiting for a person */
    size_t kept;   /* bytes of the arguments its calls in flight and held keep (rpc_json_cost) */
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
    unsigned inline_turn, inline_n; /* inline calls in turn inline_turn */
    unsigned pump_turn, pump_n;     /* lines handled in turn pump_turn */
    bool in_backlog;
    bool heavy; /* its last read found more than one small message waiting (see agent_pump) */
    struct agent *backlog_next;
    struct agent_stats st;
    bool host;                    /* an MCP host at the other end (agent_config.host) */
    bool can_elicit;              /* it declared the elicitation capability */
    int log_level;                /* least level sent as notifications/message; > max: none */
    struct tool_job *calls;       /* in flight, for cancellation */
    struct out_request *requests; /* sent, not yet answered */
    unsigned long next_request;
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

/* A denial told to the other end as a log message (MCP logging), when it listens at warning. */
static void log_denial(struct agent *a, const char *kind, const char *subject, const char *rule,
                       const char *reason)
{
    if (a->log_level > MCP_LOG_WARNING || a->ended)
        return;
    cJSON *p = mcp_log_denial(MCP_LOG_WARNING, kind, subject, rule, reason);
    if (p)
        agent_notify(a, "notifications/message", p);
    cJSON_Delete(p);
}

static int record_denial(struct agent_host *h, struct agent *a, const char *kind, const char *subject,
                         const char *rule, const char *reason)
{
    log_denial(a, kind, subject, rule, reason);
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

/* The request id as the trail keeps it: an id kept as the client's raw text (rpc.h) is stored
 * as that text in a string, since the trail's canonical form has no raw numbers. */
static cJSON *trail_id(const cJSON *id)
{
    if (!id)
        return cJSON_CreateNull();
    return cJSON_IsRaw(id) ? cJSON_CreateString(id->valuestring) : cJSON_Duplicate(id, false);
}

static void denial_of(const struct agent *a, const cJSON *result, const char **rule,
                      const char **reason);

/* How the call left what it changed (tools/tool.h), into BODY: `files` and `files_unknown`. */
static bool trail_changes(cJSON *body, const struct tool_call_ctl *ctl)
{
    if (!ctl)
        return true;
    if (ctl->changes_unknown && !cJSON_AddTrueToObject(body, "files_unknown"))
        return false;
    if (!ctl->n_changes)
        return true;
    cJSON *files = cJSON_AddArrayToObject(body, "files");
    for (size_t i = 0; files && i < ctl->n_changes; i++) {
        const struct tool_change *c = &ctl->changes[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(files, o) || !cJSON_AddStringToObject(o, "path", c->path))
            return false;
        bool ok = c->kind == TOOL_CHANGE_DIR       ? cJSON_AddTrueToObject(o, "dir") != NULL
                  : c->kind == TOOL_CHANGE_REMOVED ? cJSON_AddTrueToObject(o, "removed") != NULL
                                                   : cJSON_AddStringToObject(o, "blake2b", c->hash) &&
                                                         cJSON_AddNumberToObject(o, "bytes", (double)c->size);
        if (!ok)
            return false;
    }
    return files != NULL;
}

static int host_trail_tool(struct agent_host *h, struct agent *a, const char *phase, const cJSON *id,
                           const char *tool, const cJSON *args, const cJSON *result, bool is_error,
                           int rc, const struct tool_call_ctl *ctl)
{
    if (!h->trail) {
        const char *rule = NULL, *reason = NULL;
        if (is_error && result)
            denial_of(a, result, &rule, &reason);
        if (rule)
            log_denial(a, "path", tool, rule, reason);
        return 0;
    }
    cJSON *body = cJSON_CreateObject();
    bool ok = body && cJSON_AddStringToObject(body, "agent", a->name) &&
              cJSON_AddStringToObject(body, "phase", phase) &&
              cJSON_AddStringToObject(body, "tool", tool) &&
              cJSON_AddItemToObject(body, "request_id", trail_id(id));
    if (ok && args) {
        char *text = cJSON_PrintUnformatted(args);
        ok = text && trail_put_text(h, body, "arguments", text, strlen(text)) == 0;
        free(text);
    }
    if (ok && !strcmp(phase, "end")) {
        const cJSON *code = is_error ? cJSON_GetObjectItemCaseSensitive(result, "code") : NULL;
        ok = cJSON_AddStringToObject(body, "outcome",
                                     rc == -ECANCELED ? "cancelled"
                                     : rc < 0         ? "failed"
                                     : is_error       ? "error"
                                                      : "ok") &&
             (!cJSON_IsString(code) || cJSON_AddStringToObject(body, "code", code->valuestring)) &&
             trail_changes(body, ctl);
    }
    if (!ok) {
        cJSON_Delete(body);
        body = NULL;
    }
    int r = host_trail_append(h, a->name, "tool_call", body);
    /* A refusal by the rules (not a missing file or a bad argument) is also a denial entry, so
     * every denial can be found by its type. */
    if (r == 0 && is_error && result && rc != -ECANCELED) {
        const char *rule = NULL, *reason = NULL;
        denial_of(a, result, &rule, &reason);
        if (rule)
            r = record_denial(h, a, "path", tool, rule, reason);
    }
    return r;
}

/* Whether an error RESULT is a refusal by the rules, and which (see tool_surface.denial). */
static void denial_of(const struct agent *a, const cJSON *result, const char **rule, const char **reason)
{
    *rule = *reason = NULL;
    if (a->surface->denial) {
        *rule = a->surface->denial(result);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(result, "code");
        if (!cJSON_IsString(c))
            c = cJSON_GetObjectItemCaseSensitive(result, "error");
        *reason = cJSON_IsString(c) ? c->valuestring : NULL;
    } else {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "code");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(result, "details"), "reason");
        if (cJSON_IsString(code) && is_denial_code(code->valuestring)) {
            *rule = cJSON_IsString(why) ? why->valuestring : "workspace containment";
            *reason = code->valuestring;
        }
    }
}

int agent_record(struct agent *a, const char *type, cJSON *body)
{
    if (!a->h->trail) {
        cJSON_Delete(body);
        return 0;
    }
    return host_trail_append(a->h, a->name, type, body) < 0 ? -EIO : 0;
}

const char *agent_trail_refusal(struct agent *a, const char *what)
{
    struct agent_host *h = a->h;
    const char *why = trail_degraded_why(h->trail);
    h->trail_refusals++;
    snprintf(h->refusal, sizeof(h->refusal), "internal error: the trail cannot be written%s%.400s%s, so %s",
             *why ? " (" : "", why, *why ? ")" : "", what);
    return h->refusal;
}

uint64_t agent_host_trail_refusals(const struct agent_host *h)
{
    return h->trail_refusals;
}

void agent_host_trail_recovered(struct agent_host *h)
{
    h->trail_warned = false;
}

static int host_trail_commit(struct agent_host *h)
{
    if (!h->trail)
        return 0;
    struct cerr err = {0};
    /* The applier is woken at the end of the turn, once the answers are out (trail_wake). */
    int r = trail_commit_quiet(h->trail, &err);
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
        cJSON_Delete(b->answer_id);
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

/* Takes LINE (malloc'd, ending in '\n'); ANSWER_ID (taken, may be NULL) marks a tool call's answer. */
static void stage_line_answer(struct agent *a, char *line, size_t len, cJSON *answer_id)
{
    if (!line) {
        /* Out of memory building a response: the connection cannot keep its promises. */
        cJSON_Delete(answer_id);
        a->failing = true;
        return;
    }
    if (a->ended) {
        cJSON_Delete(answer_id);
        free(line);
        return;
    }
    struct outbuf *b = malloc(sizeof(*b));
    if (!b) {
        cJSON_Delete(answer_id);
        free(line);
        a->failing = true;
        return;
    }
    host_trail_message(a->h, a, false, line, len - 1);
    b->next = NULL;
    b->data = line;
    b->len = len;
    b->off = 0;
    b->answer_id = answer_id;
    struct outq one = {b, b};
    outq_append(&a->staged, &one);
    a->queued += len;
    mark_dirty(a);
}

static void stage_line(struct agent *a, char *line, size_t len)
{
    stage_line_answer(a, line, len, NULL);
}

/* The turn's commit failed: its entries are not in the trail, so no tool answer staged in it
 * may leave. Each is replaced by an error saying why (nothing more can be recorded). */
static void withhold_answers(struct agent *a)
{
    for (struct outbuf *b = a->staged.head; b; b = b->next) {
        if (!b->answer_id)
            continue;
        size_t len = 0;
        char *line = rpc_error_line(b->answer_id, RPC_INTERNAL_ERROR,
                                    agent_trail_refusal(a, "the answer is withheld"), NULL, &len);
        if (!line) {
            a->failing = true;
            len = 0;
        }
        a->queued = a->queued - b->len + len;
        free(b->data);
        b->data = line ? line : strdup("");
        b->len = line ? len : 0;
        cJSON_Delete(b->answer_id);
        b->answer_id = NULL;
    }
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
    /* An agent that does not read its notifications gets no more once this many bytes wait for
     * it: envelopes are redelivered when it acknowledges nothing, and what is dropped is noted
     * (at most once a second) instead of growing the supervisor's memory without bound. */
    size_t budget = a->h->o.max_queued_bytes * 16;
    if (text && a->queued + strlen(text) > budget) {
        free(text);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
        a->notes_dropped++;
        if (!a->drop_noted_ms || now - a->drop_noted_ms >= 1000) {
            char rule[128];
            snprintf(rule, sizeof(rule),
                     "notification_budget: %zu bytes wait unread (%llu notifications dropped)",
                     a->queued, (unsigned long long)a->notes_dropped);
            a->drop_noted_ms = now;
            a->notes_dropped = 0;
            agent_record_denial(a, "notification_budget", method, rule);
        }
        return;
    }
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
    return !a->ended && !a->failing && !a->in_backlog && a->queued < o->max_queued_bytes &&
           a->inflight < o->max_inflight;
}

/* Fairness: an agent handles at most AGENT_LINES_PER_TURN lines per turn, and a turn at most
 * HOST_LINES_PER_TURN over all heavy agents. An agent past either budget with input left (a
 * flood of pipelined requests, garbage, a request storm) waits in the backlog, first in first
 * out, not read from, and the next turns serve it in order: a turn's work, and so the wait of
 * every answer released at its end, stays bounded whatever the agents send.
 *
 * Heavy and light: an agent whose last read brought more than one small message (a full read,
 * several lines, a line of more than LIGHT_BYTES, an over-long line being discarded) is heavy.
 * The host's budgets of lines and of bytes (HOST_BYTES_PER_TURN, checked before a heavy agent's
 * read) are the heavy agents' to share; a light agent's first line of a turn is handled whatever
 * they have used, so a well-behaved agent (one request, then its answer) is answered in the turn
 * its request arrives, never queued behind the floods (bench/flood.sh). Light lines are at most
 * one per agent per turn, so a turn stays bounded by the agents' number, and an agent that
 * floods is heavy again at its next read. */
#define AGENT_LINES_PER_TURN 8
#define HOST_LINES_PER_TURN 4
#define HOST_BYTES_PER_TURN (256u << 10)
#define LIGHT_BYTES 16384

static void backlog_add(struct agent *a)
{
    struct agent_host *h = a->h;
    if (a->in_backlog)
        return;
    if (!h->backlog) {
        uint64_t one = 1;
        if (write(h->kick_fd, &one, sizeof(one)) < 0) {
            /* the counter cannot overflow at one write per empty backlog */
        }
    }
    a->in_backlog = true;
    a->backlog_next = NULL;
    if (h->backlog_tail)
        h->backlog_tail->backlog_next = a;
    else
        h->backlog = a;
    h->backlog_tail = a;
}

static void backlog_remove(struct agent *a)
{
    if (!a->in_backlog)
        return;
    struct agent_host *h = a->h;
    h->backlog_tail = NULL;
    for (struct agent **pp = &h->backlog; *pp;) {
        if (*pp == a)
            *pp = a->backlog_next;
        else {
            h->backlog_tail = *pp;
            pp = &(*pp)->backlog_next;
        }
    }
    a->in_backlog = false;
    a->backlog_next = NULL;
}

/* The eventfd only makes the next epoll_wait return at once while agents wait in the backlog;
 * they are served at the end of the turn (backlog_serve), after the agents whose pipes woke the
 * turn: an agent that sends little is never queued behind the floods. */
static void on_kick(void *data, uint32_t events)
{
    struct agent_host *h = data;
    uint64_t v;
    if (read(h->kick_fd, &v, sizeof(v)) < 0) {
        /* EAGAIN: already drained */
    }
}

/* The trail is congested (trail_congested: the WAL checkpoint is far behind the commits): the
 * floods' entries are what fill the WAL faster than it is copied, and past its bound starting it
 * over held the loop for 40-70 ms at a time (bench/run_flood.sh). Heavy agents then get one line
 * per tick between them while light agents are busy (light_busy), who go on as ever.
 * One line, not none: a reader that holds the WAL for long (an admin's open sqlite3 shell) keeps
 * it congested, and no agent may stall for good on that. The tick is a timer, not the eventfd,
 * which would spin the loop against the checkpoint's thread. */
#define CONGESTED_TICK_SEC 0.01

static void on_congested_tick(void *data, uint32_t events)
{
    struct agent_host *h = data;
    loop_watch_del(h->loop, &h->congested_w);
    h->congested_armed = false;
    h->congested_tick = true; /* the turn this timer woke serves one line at its end */
}

/* Whether the tick is armed. Without a timer (out of fds) the next turn serves a line, and the
 * caller makes that turn come (the eventfd): nothing else may wake the loop, the heavy agents'
 * pipes being unwatched while they wait in the backlog. */
static bool congested_arm(struct agent_host *h)
{
    if (h->congested_armed)
        return true;
    if (loop_timer_add(h->loop, &h->congested_w, h->o.congested_tick, on_congested_tick, h) == 0) {
        h->congested_armed = true;
        return true;
    }
    h->congested_tick = true;
    return false;
}

/* Only while light agents are busy: at least CONGESTED_LIGHT_LINES light lines in the current
 * window of CONGESTED_LIGHT_WINDOW seconds or in it and the one before. With few light lines to
 * protect, holding the floods back costs more than it saves: 256 workers pipelining 200 reads
 * each, whose occasional single `complete` signal counted as a light agent, took 15-18 s
 * instead of 9 (bench/run_scale.sh), while a well-behaved agent reading in turn, one line
 * every few hundred microseconds, is what the hold is for (bench/run_flood.sh). */
#define CONGESTED_LIGHT_WINDOW 0.25
#define CONGESTED_LIGHT_LINES 25

static void light_seen(struct agent_host *h)
{
    double now = util_now();
    if (now - h->light_win_at >= CONGESTED_LIGHT_WINDOW) {
        h->light_prev_n = now - h->light_win_at < 2 * CONGESTED_LIGHT_WINDOW ? h->light_win_n : 0;
        h->light_win_n = 0;
        h->light_win_at = now;
    }
    h->light_win_n++;
}

static bool light_busy(const struct agent_host *h)
{
    double age = util_now() - h->light_win_at;
    if (age < CONGESTED_LIGHT_WINDOW)
        return h->light_win_n + h->light_prev_n >= CONGESTED_LIGHT_LINES;
    return age < 2 * CONGESTED_LIGHT_WINDOW && h->light_win_n >= CONGESTED_LIGHT_LINES;
}

static void backlog_serve(struct agent_host *h)
{
    /* An agent alone is never held: its own light requests are not others to protect. */
    bool congested = h->backlog && h->n_agents > 1 && h->trail && trail_congested(h->trail) &&
                     light_busy(h);
    if (congested) {
        if (!h->congested_tick && congested_arm(h))
            return; /* the tick serves the next line (out of fds, congested_arm made it due) */
        h->congested_tick = false;
    }
    /* The heavy agents' share comes on top of the turn's light lines, which are counted in
     * turn_lines too: measured from zero, a few light agents pinging every turn used it up
     * before the backlog was served, and the floods waited for as long as they kept at it. */
    h->heavy_cap = h->turn_lines + (congested ? 1 : HOST_LINES_PER_TURN);
    /* Served in place, from the head (an agent freed meanwhile is unlinked by agent_free), each
     * agent at most once: one served with lines left goes back to the tail. */
    size_t n = 0;
    for (struct agent *a = h->backlog; a; a = a->backlog_next)
        n++;
    h->serving_backlog = true;
    while (n-- > 0 && h->backlog && h->turn_lines < h->heavy_cap) {
        struct agent *a = h->backlog;
        h->backlog = a->backlog_next;
        if (!h->backlog)
            h->backlog_tail = NULL;
        a->in_backlog = false;
        a->backlog_next = NULL;
        if (a->ended)
            continue;
        agent_pump(a);
        agent_maybe_end(a);
    }
    h->serving_backlog = false;
    h->heavy_cap = HOST_LINES_PER_TURN;
    if (h->backlog && !(congested && congested_arm(h))) {
        /* the turn's budget ran out: the next turn comes at once */
        uint64_t one = 1;
        if (write(h->kick_fd, &one, sizeof(one)) < 0) {
            /* cannot overflow */
        }
    }
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

static void cancel_all(struct agent *a);
static void requests_fail_all(struct agent *a);

static void agent_end(struct agent *a, enum agent_end why)
{
    if (a->ended)
        return;
    a->ended = true;
    /* Nobody is left to read an answer: stop what still runs for it (a host's session ends with
     * its connection; an agent's calls would only be answered into a closed pipe). */
    if (a->host)
        cancel_all(a);
    requests_fail_all(a);
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

bool agent_tool_rate_take(struct agent *a)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    unsigned per = a->h->o.tool_rate;
    if (rate_take(&a->tool_rate, per, per * 5 > 10 ? per * 5 : 10, now))
        return true;
    /* Noted in the trail at most once a second, so the refusals cannot grow it either. */
    a->rate_refused++;
    if (!a->rate_noted_ms || now - a->rate_noted_ms >= 1000) {
        char rule[96];
        snprintf(rule, sizeof(rule), "rate_limit: over %u tool calls a second (%llu refused)", per,
                 (unsigned long long)a->rate_refused);
        a->rate_noted_ms = now;
        a->rate_refused = 0;
        agent_record_denial(a, "rate_limit", "tools/call", rule);
    }
    return false;
}

bool agent_tool_keep_ok(struct agent *a, const cJSON *args)
{
    size_t cost = rpc_json_cost(args), m = a->h->o.max_message;
    size_t mine = AGENT_KEPT_MESSAGES * m, all = HOST_KEPT_MESSAGES * m;
    if (cost <= mine && a->kept <= mine - cost && cost <= all && a->h->kept <= all - cost)
        return true;
    char rule[200];
    snprintf(rule, sizeof(rule),
             "memory_limit: %zu bytes of arguments on top of %zu kept by this agent's calls (limit "
             "%zu) and %zu by the run's (limit %zu)",
             cost, a->kept, mine, a->h->kept, all);
    agent_record_denial(a, "memory_limit", "tools/call", rule);
    return false;
}

void agent_count_abuse(struct agent *a)
{
    a->st.abuse++;
    agent_abuse_limit(a);
}

/* An answer to a request corral sent: to its waiting callback. An answer to nothing is
 * refused like a malformed message. */
static void agent_take_answer(struct agent *a, const struct rpc_msg *m)
{
    char idtext[40] = "";
    if (cJSON_IsString(m->id))
        snprintf(idtext, sizeof(idtext), "%s", m->id->valuestring);
    for (struct out_request **pp = &a->requests; *pp; pp = &(*pp)->next) {
        struct out_request *q = *pp;
        if (!idtext[0] || strcmp(q->id, idtext))
            continue;
        *pp = q->next;
        q->done(a, m->result, m->error, false, q->data);
        cJSON_Delete(q->about);
        free(q);
        return;
    }
    agent_abuse(a, m->id, RPC_INVALID_REQUEST, "invalid request: a response to no request corral sent");
}

int agent_request(struct agent *a, const char *method, const cJSON *params, const cJSON *about,
                  agent_answer_fn done, void *data)
{
    /* Each waits on the other end, holding a copy of a call: bounded like calls in flight, so a
     * host that never answers cannot make corral hold an unbounded number of them. */
    size_t waiting = 0;
    for (const struct out_request *w = a->requests; w; w = w->next)
        waiting++;
    if (waiting >= AGENT_MAX_REQUESTS)
        return -EBUSY;
    struct out_request *q = calloc(1, sizeof(*q));
    cJSON *n = cJSON_CreateObject();
    if (q && about)
        q->about = cJSON_Duplicate(about, false);
    if (!q || !n || !cJSON_AddStringToObject(n, "jsonrpc", "2.0") || (about && !q->about)) {
        if (q)
            cJSON_Delete(q->about);
        free(q);
        cJSON_Delete(n);
        return -ENOMEM;
    }
    /* Strings of our own: they cannot collide with the numbers hosts use, and a reply to one
     * is matched by exact text. */
    snprintf(q->id, sizeof(q->id), "corral-%lu", ++a->next_request);
    if (!cJSON_AddStringToObject(n, "id", q->id) || !cJSON_AddStringToObject(n, "method", method) ||
        (params && !cJSON_AddItemToObject(n, "params", cJSON_Duplicate(params, true)))) {
        cJSON_Delete(q->about);
        free(q);
        cJSON_Delete(n);
        return -ENOMEM;
    }
    char *text = cJSON_PrintUnformatted(n);
    cJSON_Delete(n);
    size_t len = text ? strlen(text) : 0;
    char *line = text ? realloc(text, len + 2) : NULL;
    if (!line) {
        free(text);
        cJSON_Delete(q->about);
        free(q);
        return -ENOMEM;
    }
    line[len] = '\n';
    line[len + 1] = '\0';
    q->done = done;
    q->data = data;
    q->next = a->requests;
    a->requests = q;
    stage_line(a, line, len + 1);
    return 0;
}

static void requests_fail_all(struct agent *a)
{
    while (a->requests) {
        struct out_request *q = a->requests;
        a->requests = q->next;
        q->done(a, NULL, NULL, true, q->data);
        cJSON_Delete(q->about);
        free(q);
    }
}

static bool same_id(const cJSON *x, const cJSON *y);

/* The other end cancelled ABOUT: what corral asked on its behalf is withdrawn too (MCP: a
 * cancellation of our own request is a notifications/cancelled of its id). */
static void requests_cancel_about(struct agent *a, const cJSON *about)
{
    for (struct out_request **pp = &a->requests; *pp;) {
        struct out_request *q = *pp;
        if (!q->about || !same_id(q->about, about)) {
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        cJSON *p = cJSON_CreateObject();
        if (p && cJSON_AddStringToObject(p, "requestId", q->id) &&
            cJSON_AddStringToObject(p, "reason", "the request it was asked for was cancelled"))
            agent_notify(a, "notifications/cancelled", p);
        cJSON_Delete(p);
        q->done(a, NULL, NULL, true, q->data);
        cJSON_Delete(q->about);
        free(q);
    }
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
    if (m.response) {
        a->st.responses_in++;
        agent_take_answer(a, &m);
        rpc_msg_clear(&m);
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
    struct agent_host *h = a->h;
    while (agent_can_read(a)) {
        if (a->pump_turn != h->turn) {
            a->pump_turn = h->turn;
            a->pump_n = 0;
        }
        if (rpc_reader_pending(a->reader) == 0)
            break; /* nothing to handle: no reason to wait in the backlog */
        bool light_first = !a->heavy && a->pump_n == 0; /* never deferred for the others */
        if (a->pump_n >= AGENT_LINES_PER_TURN || (a->heavy && !h->serving_backlog) ||
            (h->turn_lines >= h->heavy_cap && !light_first)) {
            backlog_add(a);
            break;
        }
        a->pump_n++;
        h->turn_lines++;
        if (light_first)
            light_seen(h);
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

/* After a read of N bytes: whether the agent is heavy (see above). Only the reader's buffer is
 * looked at, and only up to its first newline. */
static bool reader_is_heavy(const struct agent *a, size_t n, size_t asked)
{
    size_t pending = rpc_reader_pending(a->reader);
    if (n >= asked || pending > LIGHT_BYTES || rpc_reader_discarding(a->reader))
        return true;
    const char *p = rpc_reader_peek(a->reader);
    const char *nl = pending ? memchr(p, '\n', pending) : NULL;
    return nl && (size_t)(nl - p) + 1 < pending; /* more after its first line */
}

static void on_readable(void *data, uint32_t events)
{
    struct agent *a = data;
    struct agent_host *h = a->h;
    if (a->heavy && h->turn_bytes >= HOST_BYTES_PER_TURN && !a->in_eof) {
        /* The turn's bytes for heavy agents are spent: read it in a later turn, in its place in
         * the backlog (its watch is off meanwhile). */
        backlog_add(a);
        agent_update_watch(a);
        return;
    }
    size_t room;
    char *dst = rpc_reader_space(a->reader, READ_CHUNK, &room);
    if (!dst) {
        agent_end(a, AGENT_END_NOMEM);
        return;
    }
    /* One read per event: fair to the other agents of the loop, level-triggered brings us back. */
    size_t asked = room < READ_CHUNK ? room : READ_CHUNK;
    ssize_t n = read(a->in_fd, dst, asked);
    if (n > 0) {
        rpc_reader_commit(a->reader, (size_t)n);
        a->st.bytes_in += (uint64_t)n;
        a->heavy = reader_is_heavy(a, (size_t)n, asked);
        if (a->heavy)
            h->turn_bytes += (size_t)n;
    } else if (n == 0) {
        a->in_eof = true;
        loop_watch_del(a->h->loop, &a->win);
        /* A host closes its end to end the session (MCP stdio): nothing it asked for is
         * wanted any more. */
        if (a->host) {
            cancel_all(a);
            requests_fail_all(a);
        }
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
            cJSON_Delete(b->answer_id);
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
    if (j->ctl.cancel_fd >= 0)
        close(j->ctl.cancel_fd);
    tool_changes_clear(&j->ctl);
    cJSON_Delete(j->progress);
    cJSON_Delete(j->id);
    cJSON_Delete(j->args);
    cJSON_Delete(j->result);
    free(j->name);
    free(j);
}

static void tool_job_run(struct pool_job *pj)
{
    struct tool_job *j = (struct tool_job *)pj;
    static const cJSON empty = {.type = cJSON_Object};
    j->rc = tool_surface_call(j->a->surface, &j->ctx, j->name, j->args ? j->args : &empty, &j->result,
                              &j->is_error);
}

static void agent_really_free(struct agent *a);

/* The MCP shape of a tool result: the seed's object twice, as text for models that read text
 * and as structuredContent for programs. structuredContent goes in as the text already printed
 * (a raw member: the same bytes rpc_json_print would print for it), so the object, a read's
 * whole content, is escaped once for both instead of once each. */
static cJSON *mcp_tool_result(const cJSON *result, bool is_error)
{
    char *text = rpc_json_print(result, NULL);
    cJSON *r = cJSON_CreateObject();
    cJSON *content = r ? cJSON_AddArrayToObject(r, "content") : NULL;
    cJSON *item = cJSON_CreateObject();
    bool ok = text && content && item && cJSON_AddStringToObject(item, "type", "text") &&
              cJSON_AddStringToObject(item, "text", text);
    if (ok) {
        cJSON_AddItemToArray(content, item);
        item = NULL;
        ok = cJSON_AddRawToObject(r, "structuredContent", text) &&
             cJSON_AddBoolToObject(r, "isError", is_error);
    }
    free(text);
    cJSON_Delete(item);
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

static void calls_unlink(struct agent *a, struct tool_job *j)
{
    a->kept -= j->cost;
    a->h->kept -= j->cost;
    j->cost = 0;
    for (struct tool_job **pp = &a->calls; *pp; pp = &(*pp)->next_call)
        if (*pp == j) {
            *pp = j->next_call;
            return;
        }
}

/* Same id: compared as printed, so 7, "7" and a raw 1e400 each match only themselves. */
static bool same_id(const cJSON *x, const cJSON *y)
{
    if (!x || !y || cJSON_IsString(x) != cJSON_IsString(y))
        return false;
    char *px = cJSON_PrintUnformatted(x), *py = cJSON_PrintUnformatted(y);
    bool same = px && py && !strcmp(px, py);
    free(px);
    free(py);
    return same;
}

static void cancel_job(struct tool_job *j)
{
    if (j->cancelled)
        return;
    j->cancelled = true;
    uint64_t one = 1;
    if (j->ctl.cancel_fd >= 0)
        (void)!write(j->ctl.cancel_fd, &one, sizeof(one));
}

static void cancel_all(struct agent *a)
{
    for (struct tool_job *j = a->calls; j; j = j->next_call)
        cancel_job(j);
}

void agent_cancel_call(struct agent *a, const cJSON *id)
{
    for (struct tool_job *j = a->calls; j; j = j->next_call)
        if (same_id(j->id, id))
            cancel_job(j);
    requests_cancel_about(a, id);
}

/* notifications/progress every second while a call that asked for it runs. */
#define PROGRESS_EVERY_SEC 1.0

static void on_progress(void *data, uint32_t events)
{
    struct tool_job *j = data;
    struct agent *a = j->a;
    loop_watch_del(a->h->loop, &j->progress_w);
    if (a->ended || j->cancelled)
        return;
    cJSON *p = mcp_progress(j->progress, util_now() - j->started, j->ctl.output_bytes);
    if (p)
        agent_notify(a, "notifications/progress", p);
    cJSON_Delete(p);
    (void)loop_timer_add(a->h->loop, &j->progress_w, PROGRESS_EVERY_SEC, on_progress, j);
}

/* Records the call's end and stages its answer; returns false when the agent was freed. */
static bool tool_job_finish(struct tool_job *j)
{
    struct agent *a = j->a;
    a->inflight--;
    a->h->inflight--;
    loop_watch_del(a->h->loop, &j->progress_w);
    calls_unlink(a, j);
    if (a->freeing) {
        /* Its start is on the trail, so its end is too, though nobody is left to answer. */
        host_trail_tool(a->h, a, "end", j->id, j->name, NULL, j->result, j->is_error, j->rc, &j->ctl);
        tool_job_free(j);
        if (a->inflight == 0)
            agent_really_free(a);
        return false;
    }
    if (j->cancelled && j->rc >= 0)
        j->rc = -ECANCELED;
    host_trail_tool(a->h, a, "end", j->id, j->name, NULL, j->result, j->is_error, j->rc, &j->ctl);
    /* A cancelled request is not answered (MCP: the receiver SHOULD NOT respond). */
    if (!a->ended && !j->cancelled) {
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
            size_t len = 0;
            char *line = r ? rpc_result_line(j->id, r, &len) : NULL;
            cJSON *id = line ? cJSON_Duplicate(j->id, false) : NULL;
            if (line && id) {
                a->st.responses++;
                stage_line_answer(a, line, len, id);
            } else {
                free(line);
                cJSON_Delete(id);
                agent_reply_error(a, j->id, RPC_INTERNAL_ERROR, "internal error: out of memory");
            }
            cJSON_Delete(r);
        }
    }
    tool_job_free(j);
    return true;
}

static void tool_job_done(struct pool_job *pj)
{
    struct tool_job *j = (struct tool_job *)pj;
    struct agent *a = j->a;
    if (tool_job_finish(j) && !a->ended) {
        agent_pump(a);
        agent_maybe_end(a);
    }
}

/* Whether TOOL of SURFACE runs commands (a long call, held to the agent's share of the pool). */
static bool tool_is_command(const struct tool_surface *surface, const char *tool)
{
    size_t n = 0;
    const struct tool_def *defs = surface ? policy_surface_tools(surface->name, &n) : NULL;
    for (size_t i = 0; defs && i < n; i++)
        if (!strcmp(defs[i].name, tool))
            return defs[i].kind == TOOL_KIND_COMMAND;
    return false;
}

/* A call whose cost is bounded and smaller than a hand-off to a worker and back (an eventfd
 * wake-up each way, measured in bench/roundtrip.sh) runs inline on the loop: a read of a regular
 * file of at most INLINE_FILE_MAX bytes. The check is only about cost (the read resolves and
 * checks the path again, opens it O_NONBLOCK and caps what it reads at max_file_size), so a
 * file swapped meanwhile costs at most one capped read. INLINE_PER_TURN bounds an agent's inline
 * calls per turn, so one agent's storm of reads cannot hold the loop from the others. */
#define INLINE_FILE_MAX 65536
#define INLINE_PER_TURN 8

static bool tool_is_small_read(const struct agent *a, const char *name, const cJSON *args)
{
    static const char *const reads[] = {"readFile", "file.read", "read_file"};
    bool known = false;
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
        known |= !strcmp(name, reads[i]);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(args, "path");
    if (!known || !cJSON_IsString(p) || !*p->valuestring)
        return false;
    struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, a->tools->root_fd, p->valuestring, &how, sizeof(how));
    if (fd < 0)
        return false;
    struct stat st;
    bool small = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= INLINE_FILE_MAX;
    close(fd);
    return small;
}

/* Whether a call acts on nothing but may answer: a READ tool of its surface's table. kward's
 * reads are left out: an outline starts a command sandbox, an effect the trail records first. */
static bool tool_is_read(const struct agent *a, const char *name)
{
    const struct tool_def *d = tool_surface_def(a->surface, name);
    return d && d->kind == TOOL_KIND_READ && strcmp(a->surface->name, "kward") != 0;
}

int agent_call_tool(struct agent *a, const cJSON *id, const char *name, const cJSON *args,
                    const cJSON *progress, enum tool_approval approval)
{
    struct tool_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->ctl.cancel_fd = -1;
    j->progress_w.fd = -1;
    j->pj.run = tool_job_run;
    j->pj.done = tool_job_done;
    j->pj.share = &a->share;
    j->pj.is_long = tool_is_command(a->surface, name);
    j->a = a;
    j->id = id ? cJSON_Duplicate(id, false) : cJSON_CreateNull();
    j->name = strdup(name);
    j->args = args ? cJSON_Duplicate(args, true) : NULL;
    j->progress = progress ? cJSON_Duplicate(progress, false) : NULL;
    struct agent_host *h = a->h;
    bool is_read = tool_is_read(a, name), run_inline = false;
    if (is_read) {
        if (a->inline_turn != h->turn) {
            a->inline_turn = h->turn;
            a->inline_n = 0;
        }
        run_inline = a->inline_n < INLINE_PER_TURN && tool_is_small_read(a, name, args);
    }
    /* A call run inline ends before this function returns, so nothing can cancel it: it needs
     * no eventfd (two system calls fewer on the path of a small read). */
    if (!run_inline)
        j->ctl.cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!j->id || !j->name || (args && !j->args) || (progress && !j->progress) ||
        (!run_inline && j->ctl.cancel_fd < 0)) {
        tool_job_free(j);
        return -ENOMEM;
    }
    /* The connection's ctx with this call's own controls; the session and rules stay shared. */
    j->ctx = *a->tools;
    j->ctx.call = &j->ctl;
    j->ctx.approval = approval;
    if (host_trail_tool(h, a, "start", id, name, args, NULL, false, 0, NULL) < 0) {
        tool_job_free(j);
        return -EIO; /* not recorded, so not run */
    }
    j->cost = rpc_json_cost(j->args);
    a->kept += j->cost;
    h->kept += j->cost;
    a->inflight++;
    h->inflight++;
    a->st.tool_calls++;
    j->next_call = a->calls;
    a->calls = j;
    if (is_read) {
        j->early = true;
        if (run_inline) {
            a->inline_n++;
            tool_job_run(&j->pj);
            tool_job_finish(j);
        } else {
            j->started = util_now();
            if (j->progress && !a->ended)
                (void)loop_timer_add(h->loop, &j->progress_w, PROGRESS_EVERY_SEC, on_progress, j);
            pool_submit(h->pool, &j->pj);
        }
        return 0;
    }
    if (h->staged_tail)
        h->staged_tail->next_staged = j;
    else
        h->staged_head = j;
    h->staged_tail = j;
    return 0;
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
    if (r == 0) {
        size_t cost = rpc_json_cost(args);
        a->held++;
        a->kept += cost;
        a->h->kept += cost;
    }
    if (r != 1)
        return r;
    r = agent_call_tool(a, id, tool, args, NULL, TOOL_APPROVAL_GRANTED);
    if (r < 0)
        agent_reply_error(a, id, RPC_INTERNAL_ERROR, "internal error: the call could not be made");
    return 0;
}

void agent_tool_release(struct agent *a, const cJSON *id, const char *tool, const cJSON *args,
                        bool approved)
{
    if (a->held) {
        size_t cost = rpc_json_cost(args);
        a->held--;
        a->kept -= cost < a->kept ? cost : a->kept;
        a->h->kept -= cost < a->h->kept ? cost : a->h->kept;
    }
    if (a->ended || a->freeing) {
        /* Nobody is left to answer, but a refusal is still a denial, findable by its type like
         * every other (the gate's own words need the live connection). */
        if (!approved)
            (void)record_denial(a->h, a, "path", tool, "approval_required", "agent_gone");
        agent_maybe_end(a);
        return;
    }
    /* A person's answer either way: approved lifts needs_approval for this one call; a refusal
     * goes through the gate, which answers it in the surface's words. */
    int r = agent_call_tool(a, id, tool, args, NULL,
                            approved ? TOOL_APPROVAL_GRANTED : TOOL_APPROVAL_DECLINED);
    if (r == -EIO)
        agent_reply_error(a, id, RPC_INTERNAL_ERROR,
                          agent_trail_refusal(a, "the call was not made"));
    else if (r < 0)
        agent_reply_error(a, id, RPC_INTERNAL_ERROR, "internal error: out of memory");
    mark_dirty(a);
}

/* ---- the turn ---- */

static void turn_release(struct agent_host *h);

static void host_turn_end(void *data)
{
    struct agent_host *h = data;
    h->in_turn = true; /* agents freed from here on are released after the walk */
    /* Two commits when the floods have work: the light agents' calls of this turn are
     * committed and answered first, so their answers never wait for the heavy agents' entries
     * to be written (bench/run_flood.sh); then the heavy agents' share of the turn. */
    turn_release(h);
    backlog_serve(h);
    turn_release(h);
    /* Entries staged by others on this loop (the WACP runtime's, on a timer turn) are
     * committed at the end of the turn too. */
    if (h->trail && trail_pending(h->trail) > 0)
        host_trail_commit(h);
    /* The budgets of lines and bytes cover the whole turn, its end included: a new turn
     * starts with them. */
    h->turn++;
    h->turn_lines = 0;
    h->turn_bytes = 0;
    h->in_turn = false;
    while (h->graveyard) {
        struct agent *a = h->graveyard;
        h->graveyard = a->grave_next;
        agent_really_free(a);
    }
    trail_wake(h->trail);
}

/* Commits what the turn staged, starts its pool jobs and releases its answers. Releasing
 * output can unblock an agent whose buffer already holds more requests; those are answered in
 * the same turn, so repeat until nothing new was staged. */
static void turn_release(struct agent_host *h)
{
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
                    agent_trail_refusal(j->a, "the call was not made"));
                j->a->inflight--;
                h->inflight--;
                calls_unlink(j->a, j);
                tool_job_free(j);
                continue;
            }
            j->started = util_now();
            if (j->progress && !j->a->ended)
                (void)loop_timer_add(h->loop, &j->progress_w, PROGRESS_EVERY_SEC, on_progress, j);
            pool_submit(h->pool, &j->pj);
        }
        struct agent *list = h->dirty;
        h->dirty = NULL;
        for (struct agent *a = list, *next; a; a = next) {
            next = a->dirty_next; /* saved: pumping may mark A dirty again, on a new list */
            a->dirty = false;
            a->dirty_next = NULL;
            if (committed < 0)
                withhold_answers(a);
            outq_append(&a->ready, &a->staged);
            if (a->ended)
                continue;
            agent_flush(a);
            if (!a->ended)
                agent_pump(a);
            agent_maybe_end(a);
        }
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
    if (!(h->o.congested_tick > 0))
        h->o.congested_tick = CONGESTED_TICK_SEC;
    h->heavy_cap = HOST_LINES_PER_TURN;
    h->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int r = h->kick_fd < 0 ? -errno : loop_watch_add(loop, &h->kick, h->kick_fd, EPOLLIN, on_kick, h);
    if (r < 0) {
        if (h->kick_fd >= 0)
            close(h->kick_fd);
        free(h);
        return cerr_set(err, -r, "agents: eventfd: %s", strerror(-r));
    }
    loop_set_turn_end(loop, host_turn_end, h);
    *out = h;
    return 0;
}

void agent_host_free(struct agent_host *h)
{
    if (!h)
        return;
    loop_set_turn_end(h->loop, NULL, NULL);
    loop_watch_del(h->loop, &h->kick);
    if (h->congested_armed)
        loop_watch_del(h->loop, &h->congested_w);
    close(h->kick_fd);
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
    a->host = c->host;
    /* A host hears of denials unless it asks otherwise; an agent only once it sets a level. */
    a->log_level = c->host ? MCP_LOG_WARNING : MCP_LOG_EMERGENCY + 1;
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
    backlog_remove(a);
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
            /* Recorded as started, never run: its end says so (outcome "cancelled"). */
            host_trail_tool(h, a, "end", j->id, j->name, NULL, NULL, false, -ECANCELED, NULL);
            a->inflight--;
            h->inflight--;
            calls_unlink(a, j);
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
void agent_close(struct agent *a)
{
    agent_end(a, AGENT_END_EOF);
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

void agent_set_client_capabilities(struct agent *a, const cJSON *caps)
{
    a->can_elicit = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "elicitation"));
}

bool agent_client_can_elicit(const struct agent *a)
{
    return a->can_elicit;
}
bool agent_is_host(const struct agent *a)
{
    return a->host;
}
void agent_set_log_level(struct agent *a, int level)
{
    a->log_level = level;
}
const struct tool_ctx *agent_tools(const struct agent *a)
{
    return a->tools;
}
