/* sdk/corral_agent.c: the C client of sdk/corral_agent.h. */
#include "corral_agent.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE ((size_t)256 << 20)
#define MAX_SEEN 65536 /* envelope ids remembered for deduplication */

struct corral_agent {
    int in_fd, out_fd;
    char *buf;
    size_t len, cap;
    int64_t next_id;
    int err_code;
    char err[512];
    char word[48]; /* error.data.code of the last refused request */
    /* WACP: events in arrival order ([{"k": KIND, "v": OBJECT}]), envelope ids handed over
     * (a ring), ids of pipelined acks whose answers are still to come. */
    cJSON *events;
    char **seen;
    size_t n_seen, seen_next;
    int64_t *acks;
    size_t n_acks, cap_acks;
    unsigned drop, ack_errs;
    char *chain_head;
};

struct corral_agent *corral_agent_new(int in_fd, int out_fd)
{
    struct corral_agent *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->in_fd = in_fd;
    a->out_fd = out_fd;
    a->next_id = 1;
    return a;
}

void corral_agent_free(struct corral_agent *a)
{
    if (!a)
        return;
    free(a->buf);
    cJSON_Delete(a->events);
    for (size_t i = 0; i < a->n_seen; i++)
        free(a->seen[i]);
    free(a->seen);
    free(a->acks);
    free(a->chain_head);
    free(a);
}

static void set_err(struct corral_agent *a, int code, const char *fmt, const char *arg)
{
    a->err_code = code;
    snprintf(a->err, sizeof(a->err), fmt, arg ? arg : "");
}

const char *corral_agent_error(const struct corral_agent *a)
{
    return a->err;
}
int corral_agent_error_code(const struct corral_agent *a)
{
    return a->err_code;
}
const char *corral_agent_error_word(const struct corral_agent *a)
{
    return a->word;
}

int corral_agent_send_raw(struct corral_agent *a, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(a->out_fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            set_err(a, 0, "write: %s", strerror(errno));
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next line, or NULL: at end of input or on an error (a->err set), or when TIMEOUT_MS
 * (-1: none) passed first (*timed_out set, a->err ""). */
static char *read_line_ms(struct corral_agent *a, size_t *len, int timeout_ms, bool *timed_out)
{
    size_t scanned = 0;
    int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
    if (timed_out)
        *timed_out = false;
    for (;;) {
        char *nl = a->len > scanned ? memchr(a->buf + scanned, '\n', a->len - scanned) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - a->buf);
            char *line = malloc(n + 1);
            if (!line) {
                set_err(a, 0, "out of memory%s", NULL);
                return NULL;
            }
            memcpy(line, a->buf, n);
            line[n] = '\0';
            memmove(a->buf, nl + 1, a->len - n - 1);
            a->len -= n + 1;
            if (len)
                *len = n;
            return line;
        }
        scanned = a->len;
        if (a->cap - a->len < 65536) {
            size_t ncap = a->cap ? a->cap * 2 : 131072;
            char *nb = ncap <= MAX_LINE ? realloc(a->buf, ncap) : NULL;
            if (!nb) {
                set_err(a, 0, "an answer longer than the client accepts%s", NULL);
                return NULL;
            }
            a->buf = nb;
            a->cap = ncap;
        }
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            struct pollfd pfd = {.fd = a->in_fd, .events = POLLIN};
            int pr = left > 0 ? poll(&pfd, 1, left > 60000 ? 60000 : (int)left) : 0;
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr == 0 && now_ms() >= deadline) {
                a->err[0] = '\0';
                if (timed_out)
                    *timed_out = true;
                return NULL;
            }
            if (pr <= 0)
                continue;
        }
        ssize_t n = read(a->in_fd, a->buf + a->len, a->cap - a->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            set_err(a, 0, "%s", n == 0 ? "the supervisor closed the channel" : strerror(errno));
            return NULL;
        }
        a->len += (size_t)n;
    }
}

char *corral_agent_read_line(struct corral_agent *a, size_t *len)
{
    return read_line_ms(a, len, -1, NULL);
}

static int send_msg(struct corral_agent *a, cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (!s) {
        set_err(a, 0, "out of memory%s", NULL);
        return -1;
    }
    size_t n = strlen(s);
    s[n] = '\n'; /* overwrite the NUL: send the frame in one write */
    int r = corral_agent_send_raw(a, s, n + 1);
    free(s);
    return r;
}

static cJSON *envelope(const char *method, cJSON *params)
{
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddStringToObject(m, "jsonrpc", "2.0") ||
        !cJSON_AddStringToObject(m, "method", method)) {
        cJSON_Delete(m);
        cJSON_Delete(params);
        return NULL;
    }
    if (params)
        cJSON_AddItemToObject(m, "params", params);
    return m;
}

int corral_agent_notify(struct corral_agent *a, const char *method, cJSON *params)
{
    cJSON *m = envelope(method, params);
    if (!m) {
        set_err(a, 0, "out of memory%s", NULL);
        return -1;
    }
    return send_msg(a, m);
}

/* Sends a request without waiting; its id in *ID. */
static int request_nowait(struct corral_agent *a, const char *method, cJSON *params, int64_t *id)
{
    *id = a->next_id++;
    cJSON *m = envelope(method, params);
    if (!m || !cJSON_AddNumberToObject(m, "id", (double)*id)) {
        cJSON_Delete(m);
        set_err(a, 0, "out of memory%s", NULL);
        return -1;
    }
    return send_msg(a, m);
}

static bool seen_has(const struct corral_agent *a, const char *id)
{
    for (size_t i = 0; i < a->n_seen; i++)
        if (!strcmp(a->seen[i], id))
            return true;
    return false;
}

/* Remembers ID (a ring of MAX_SEEN: the oldest is forgotten). false on out of memory. */
static bool seen_add(struct corral_agent *a, const char *id)
{
    char *c = strdup(id);
    if (!c)
        return false;
    if (!a->seen && !(a->seen = calloc(MAX_SEEN, sizeof(*a->seen)))) {
        free(c);
        return false;
    }
    if (a->n_seen < MAX_SEEN) {
        a->seen[a->n_seen++] = c;
    } else {
        free(a->seen[a->seen_next]);
        a->seen[a->seen_next] = c;
        a->seen_next = (a->seen_next + 1) % MAX_SEEN;
    }
    return true;
}

static void queue_event(struct corral_agent *a, int kind, cJSON *obj)
{
    cJSON *ev = cJSON_CreateObject();
    if (!a->events)
        a->events = cJSON_CreateArray();
    if (!ev || !a->events || !cJSON_AddNumberToObject(ev, "k", kind)) {
        cJSON_Delete(ev);
        cJSON_Delete(obj);
        return;
    }
    cJSON_AddItemToObject(ev, "v", obj);
    cJSON_AddItemToArray(a->events, ev);
}

/* An envelope arrived: acked at once (pipelined, the answer is dropped when it comes), handed
 * over unless its id was already. A redelivery of one handed over is acked again (the first
 * ack may have come too late) and dropped. */
static void on_envelope(struct corral_agent *a, cJSON *env)
{
    const cJSON *eid = cJSON_GetObjectItemCaseSensitive(env, "envelope_id");
    if (!cJSON_IsString(eid)) {
        cJSON_Delete(env);
        return;
    }
    bool seen = seen_has(a, eid->valuestring);
    if (a->drop && !seen) {
        a->drop--;
        const cJSON *att = cJSON_GetObjectItemCaseSensitive(env, "attempt");
        fprintf(stderr, "corral_agent: dropped envelope %s (attempt %d) unacked\n", eid->valuestring,
                cJSON_IsNumber(att) ? att->valueint : 0);
        cJSON_Delete(env);
        return;
    }
    cJSON *p = cJSON_CreateObject();
    int64_t id;
    if (p && !cJSON_AddStringToObject(p, "envelope_id", eid->valuestring)) {
        cJSON_Delete(p);
        p = NULL; /* nothing sent: the runtime redelivers it */
    }
    if (p && request_nowait(a, "wacp/envelope.ack", p, &id) == 0) {
        if (a->n_acks == a->cap_acks) {
            size_t nc = a->cap_acks ? a->cap_acks * 2 : 16;
            int64_t *na = realloc(a->acks, nc * sizeof(*na));
            if (na) {
                a->acks = na;
                a->cap_acks = nc;
            }
        }
        if (a->n_acks < a->cap_acks)
            a->acks[a->n_acks++] = id;
    }
    if (seen || !seen_add(a, eid->valuestring)) {
        cJSON_Delete(env);
        return;
    }
    queue_event(a, CORRAL_EV_ENVELOPE, env);
}

/* A message that is not the answer being waited for: an ack's answer (dropped; a refusal is
 * counted and logged), a wacp notification (queued), anything else (dropped). Takes MSG. */
static void take(struct corral_agent *a, cJSON *msg)
{
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    if (cJSON_IsNumber(rid) && !method) {
        for (size_t i = 0; i < a->n_acks; i++) {
            if (a->acks[i] != (int64_t)rid->valuedouble)
                continue;
            a->acks[i] = a->acks[--a->n_acks];
            const cJSON *err = cJSON_GetObjectItemCaseSensitive(msg, "error");
            if (err) {
                const cJSON *m = cJSON_GetObjectItemCaseSensitive(err, "message");
                a->ack_errs++;
                fprintf(stderr, "corral_agent: an envelope.ack was refused: %s\n",
                        cJSON_IsString(m) ? m->valuestring : "?");
            }
            break;
        }
    } else if (!rid && cJSON_IsString(method)) {
        cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
        if (!strcmp(method->valuestring, "wacp/envelope")) {
            cJSON *env = cJSON_DetachItemFromObjectCaseSensitive(params, "envelope");
            if (cJSON_IsObject(env))
                on_envelope(a, env);
            else
                cJSON_Delete(env);
        } else if (!strcmp(method->valuestring, "wacp/signal")) {
            cJSON *sig = cJSON_DetachItemFromObjectCaseSensitive(params, "signal");
            if (cJSON_IsObject(sig))
                queue_event(a, CORRAL_EV_SIGNAL, sig);
            else
                cJSON_Delete(sig);
        } else if (!strcmp(method->valuestring, "wacp/liveness") && cJSON_IsObject(params)) {
            queue_event(a, CORRAL_EV_LIVENESS, cJSON_Duplicate(params, true));
        } else if (!strcmp(method->valuestring, "wacp/recovered") && cJSON_IsObject(params)) {
            /* `corral run --resume` restarted us: the checkpoint chain goes on from the
             * recorded head, whatever this process never knew. */
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(params, "checkpoint_head");
            char *head = cJSON_IsString(h) && h->valuestring[0] ? strdup(h->valuestring) : NULL;
            free(a->chain_head);
            a->chain_head = head;
            queue_event(a, CORRAL_EV_RECOVERED, cJSON_Duplicate(params, true));
        }
    }
    cJSON_Delete(msg);
}

cJSON *corral_agent_request(struct corral_agent *a, const char *method, cJSON *params)
{
    a->err[0] = '\0';
    a->err_code = 0;
    a->word[0] = '\0';
    int64_t id;
    if (request_nowait(a, method, params, &id) < 0)
        return NULL;
    for (;;) {
        char *line = corral_agent_read_line(a, NULL);
        if (!line)
            return NULL;
        cJSON *resp = cJSON_Parse(line);
        free(line);
        if (!resp)
            continue;
        const cJSON *rid = cJSON_GetObjectItemCaseSensitive(resp, "id");
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(resp, "error");
        /* Not ours: a notification from the supervisor, or an answer to something else. An error
         * with id null is about a line we sent that it could not read: that was this one. */
        bool ours = !cJSON_GetObjectItemCaseSensitive(resp, "method") &&
                    ((cJSON_IsNumber(rid) && (int64_t)rid->valuedouble == id) ||
                     (cJSON_IsNull(rid) && err));
        if (!ours) {
            take(a, resp);
            continue;
        }
        if (err) {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
            const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");
            const cJSON *word = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(err, "data"), "code");
            set_err(a, cJSON_IsNumber(code) ? code->valueint : -32603, "%s",
                    cJSON_IsString(msg) ? msg->valuestring : "error without a message");
            if (cJSON_IsString(word))
                snprintf(a->word, sizeof(a->word), "%s", word->valuestring);
            cJSON_Delete(resp);
            return NULL;
        }
        cJSON *result = cJSON_DetachItemFromObjectCaseSensitive(resp, "result");
        cJSON_Delete(resp);
        if (!result)
            set_err(a, -32603, "%s", "an answer with neither result nor error");
        return result;
    }
}

int corral_agent_initialize(struct corral_agent *a, const char *name, const char *version,
                            cJSON **result)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *info = cJSON_CreateObject();
    if (!p || !info || !cJSON_AddStringToObject(p, "protocolVersion", "2025-06-18") ||
        !cJSON_AddObjectToObject(p, "capabilities") || !cJSON_AddStringToObject(info, "name", name) ||
        !cJSON_AddStringToObject(info, "version", version ? version : "0")) {
        cJSON_Delete(p);
        cJSON_Delete(info);
        set_err(a, 0, "out of memory%s", NULL);
        return -1;
    }
    cJSON_AddItemToObject(p, "clientInfo", info);
    cJSON *r = corral_agent_request(a, "initialize", p);
    if (!r)
        return -1;
    if (result)
        *result = r;
    else
        cJSON_Delete(r);
    return corral_agent_notify(a, "notifications/initialized", NULL);
}

cJSON *corral_agent_call(struct corral_agent *a, const char *tool, cJSON *args, bool *is_error)
{
    cJSON *p = cJSON_CreateObject();
    if (!p || !cJSON_AddStringToObject(p, "name", tool)) {
        cJSON_Delete(p);
        cJSON_Delete(args);
        set_err(a, 0, "out of memory%s", NULL);
        return NULL;
    }
    cJSON_AddItemToObject(p, "arguments", args ? args : cJSON_CreateObject());
    cJSON *r = corral_agent_request(a, "tools/call", p);
    if (!r)
        return NULL;
    cJSON *sc = cJSON_DetachItemFromObjectCaseSensitive(r, "structuredContent");
    if (is_error)
        *is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "isError"));
    cJSON_Delete(r);
    if (!sc)
        set_err(a, -32603, "%s", "a tool result without structuredContent");
    return sc;
}

/* ---- WACP */

cJSON *corral_agent_wacp(struct corral_agent *a, const char *method, cJSON *params)
{
    char full[128];
    if (strncmp(method, "wacp/", 5)) {
        snprintf(full, sizeof(full), "wacp/%s", method);
        method = full;
    }
    if (!params && !(params = cJSON_CreateObject())) {
        set_err(a, 0, "out of memory%s", NULL);
        return NULL;
    }
    return corral_agent_request(a, method, params);
}

/* Params under construction: every helper adds to one object and hands it over; a failed
 * addition marks it so the call is not made with half its params. */
struct pb {
    cJSON *o;
    bool bad;
};

static void pb_str(struct pb *b, const char *k, const char *v)
{
    if (v && (!b->o || !cJSON_AddStringToObject(b->o, k, v)))
        b->bad = true;
}

static void pb_item(struct pb *b, const char *k, cJSON *v)
{
    if (!v)
        return;
    if (!b->o || !cJSON_AddItemToObject(b->o, k, v)) {
        cJSON_Delete(v);
        b->bad = true;
    }
}

static cJSON *pb_call(struct corral_agent *a, struct pb *b, const char *method)
{
    if (b->bad || !b->o) {
        cJSON_Delete(b->o);
        set_err(a, 0, "out of memory%s", NULL);
        return NULL;
    }
    return corral_agent_wacp(a, method, b->o);
}

cJSON *corral_agent_self(struct corral_agent *a)
{
    return corral_agent_wacp(a, "wacp/workspace.self", NULL);
}

cJSON *corral_agent_create_workspace(struct corral_agent *a, const char *agent, cJSON *directive,
                                     cJSON *more)
{
    struct pb b = {.o = more ? more : cJSON_CreateObject()};
    pb_str(&b, "agent", agent);
    pb_item(&b, "directive", directive ? directive : cJSON_CreateNull());
    return pb_call(a, &b, "wacp/workspace.create");
}

cJSON *corral_agent_send(struct corral_agent *a, const char *to, const char *type, cJSON *payload,
                         const char *in_reply_to)
{
    struct pb b = {.o = cJSON_CreateObject()};
    pb_str(&b, "to", to);
    pb_str(&b, "type", type);
    pb_item(&b, "payload", payload ? payload : cJSON_CreateNull());
    pb_str(&b, "in_reply_to", in_reply_to);
    return pb_call(a, &b, "wacp/envelope.send");
}

cJSON *corral_agent_emit(struct corral_agent *a, const char *type, const char *reason, const char *ref)
{
    struct pb b = {.o = cJSON_CreateObject()};
    pb_str(&b, "type", type);
    pb_str(&b, "reason", reason);
    pb_str(&b, "ref", ref);
    return pb_call(a, &b, "wacp/signal.emit");
}

cJSON *corral_agent_checkpoint(struct corral_agent *a, const char *type, const char *intent,
                               const char *status, const char *confidence, cJSON *files, cJSON *payload)
{
    struct pb b = {.o = cJSON_CreateObject()};
    pb_str(&b, "type", type ? type : "artifact");
    pb_str(&b, "intent", intent ? intent : "");
    pb_str(&b, "status", status ? status : "final");
    pb_str(&b, "confidence", confidence ? confidence : "high");
    pb_item(&b, "parent", a->chain_head ? cJSON_CreateString(a->chain_head) : cJSON_CreateNull());
    pb_item(&b, "files", files);
    pb_item(&b, "payload", payload);
    cJSON *r = pb_call(a, &b, "wacp/checkpoint.create");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "checkpoint_id");
    if (cJSON_IsString(id)) {
        char *h = strdup(id->valuestring);
        if (h) {
            free(a->chain_head);
            a->chain_head = h;
        }
    }
    return r;
}

const char *corral_agent_chain_head(const struct corral_agent *a)
{
    return a->chain_head;
}

cJSON *corral_agent_task_create(struct corral_agent *a, const char *name, const char *description,
                                cJSON *depends_on)
{
    struct pb b = {.o = cJSON_CreateObject()};
    pb_str(&b, "name", name);
    pb_str(&b, "description", description);
    pb_item(&b, "depends_on", depends_on);
    return pb_call(a, &b, "wacp/task.create");
}

cJSON *corral_agent_task_list(struct corral_agent *a)
{
    return corral_agent_wacp(a, "wacp/task.list", NULL);
}

cJSON *corral_agent_integrate(struct corral_agent *a, const char *workspace, const char *decision,
                              const char *strategy, const char *checkpoint)
{
    struct pb b = {.o = cJSON_CreateObject()};
    pb_str(&b, "workspace", workspace);
    pb_str(&b, "decision", decision ? decision : "accept");
    pb_str(&b, "strategy", strategy);
    pb_str(&b, "checkpoint", checkpoint);
    return pb_call(a, &b, "wacp/integrate");
}

/* The first queued event of KINDS, detached; NULL when none. */
static cJSON *dequeue(struct corral_agent *a, int kinds, int *kind)
{
    int i = 0;
    for (cJSON *ev = a->events ? a->events->child : NULL; ev; ev = ev->next, i++) {
        int k = cJSON_GetObjectItemCaseSensitive(ev, "k")->valueint;
        if (!(k & kinds))
            continue;
        cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(ev, "v");
        cJSON_DeleteItemFromArray(a->events, i);
        *kind = k;
        return v;
    }
    return NULL;
}

cJSON *corral_agent_next_event(struct corral_agent *a, int kinds, int timeout_ms, int *kind)
{
    int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
    int k = CORRAL_EV_NONE;
    a->err[0] = '\0';
    a->err_code = 0;
    for (;;) {
        cJSON *v = dequeue(a, kinds, &k);
        if (v) {
            if (kind)
                *kind = k;
            return v;
        }
        int left = -1;
        if (deadline >= 0) {
            int64_t l = deadline - now_ms();
            left = l < 0 ? 0 : l > 0x7fffffff ? 0x7fffffff : (int)l;
        }
        bool timed_out;
        char *line = read_line_ms(a, NULL, left, &timed_out);
        if (!line) {
            if (kind)
                *kind = CORRAL_EV_NONE;
            return NULL;
        }
        cJSON *msg = cJSON_Parse(line);
        free(line);
        if (msg)
            take(a, msg);
    }
}

cJSON *corral_agent_next_envelope(struct corral_agent *a, int timeout_ms)
{
    return corral_agent_next_event(a, CORRAL_EV_ENVELOPE, timeout_ms, NULL);
}

cJSON *corral_agent_next_signal(struct corral_agent *a, int timeout_ms)
{
    return corral_agent_next_event(a, CORRAL_EV_SIGNAL, timeout_ms, NULL);
}

void corral_agent_drop_envelopes(struct corral_agent *a, unsigned n)
{
    a->drop = n;
}
unsigned corral_agent_ack_errors(const struct corral_agent *a)
{
    return a->ack_errs;
}
