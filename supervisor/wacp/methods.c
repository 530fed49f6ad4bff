/* supervisor/wacp/methods.c: the WACP model of one run: its state, ids, trail records, and the table of
 * wacp/... methods (parameter shapes, the caller states each is allowed in) that every request
 * passes before a handler sees it. */
#include "supervisor/wacp/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sodium.h>

void wacp_new_id(const char *prefix, char out[WACP_ID_LEN])
{
    unsigned char rnd[16];
    char hex[33];
    randombytes_buf(rnd, sizeof(rnd));
    sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
    snprintf(out, WACP_ID_LEN, "%s-%s", prefix, hex);
}

uint64_t wacp_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

uint64_t wacp_wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

int wacp_rec(struct wacp *w, const char *ws, const char *actor, const char *type, const cJSON *body)
{
    if (w->h.record(w->h.data, ws, actor, type, body) < 0)
        return -EIO;
    return 0;
}

int wacp_fail(struct wacp_err *e, int rpc, const char *code, const char *fmt, ...)
{
    e->rpc_code = rpc;
    snprintf(e->code, sizeof(e->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return -1;
}

int wacp_trail_err(struct wacp_err *e)
{
    return wacp_fail(e, -32603, "trail_unavailable",
                     "the trail cannot be written, so nothing was done; the run is stopping");
}

int wacp_deny(struct wacp *w, const struct wacp_ws *caller, const char *method, struct wacp_err *e,
              int rpc, const char *code, const char *fmt, ...)
{
    e->rpc_code = rpc;
    snprintf(e->code, sizeof(e->code), "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    cJSON *b = wacp_obj();
    if (b) {
        cJSON_AddStringToObject(b, "kind", "protocol");
        cJSON_AddStringToObject(b, "method", method);
        cJSON_AddStringToObject(b, "code", code);
        cJSON_AddStringToObject(b, "reason", e->msg);
    }
    int r = wacp_rec(w, caller ? caller->id : NULL, caller ? caller->role : "protocol", "denial", b);
    cJSON_Delete(b);
    w->sum.denials++;
    if (r < 0)
        return wacp_trail_err(e);
    return -1;
}

bool wacp_hold(struct wacp *w, size_t len)
{
    if (len > w->max_payload_total || w->payload_total > w->max_payload_total - len)
        return false;
    w->payload_total += len;
    return true;
}

bool wacp_grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return true;
    size_t nc = *cap ? *cap : 8;
    while (nc < n) {
        if (nc > SIZE_MAX / 2)
            return false;
        nc *= 2;
    }
    if (nc > SIZE_MAX / elem)
        return false;
    void *p = realloc(*v, nc * elem);
    if (!p)
        return false;
    *v = p;
    *cap = nc;
    return true;
}

cJSON *wacp_obj(void)
{
    return cJSON_CreateObject();
}

void wacp_add_str(cJSON *o, const char *k, const char *v)
{
    if (!o)
        return;
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

bool wacp_is_coordinator(const struct wacp_ws *ws)
{
    return ws && ws->view.base == POLICY_BASE_COORDINATOR;
}

/* ---- the method table */

enum ptype { P_STR = 1, P_BOOL, P_NUM, P_ARR, P_OBJ, P_ANY, P_STR_NULL, P_NUM_STR };
struct pspec {
    const char *name;
    enum ptype type;
    bool required;
};
typedef int (*wacp_handler)(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                            struct wacp_err *e);
struct method {
    const char *name;
    wacp_handler fn;
    unsigned states;            /* caller states it is allowed in */
    const struct pspec *params; /* NULL-name terminated */
    enum wacp_rate rate;        /* the workspace's bucket it draws on (WACP_RATE_NONE: none) */
};

#define END {NULL, 0, false}
static const struct pspec p_none[] = {END};
static const struct pspec p_emit[] = {{"type", P_STR, true}, {"reason", P_STR, false},
                                      {"ref", P_STR, false}, END};
static const struct pspec p_send[] = {{"to", P_STR, true}, {"type", P_STR, true},
                                      {"payload", P_ANY, true}, {"in_reply_to", P_STR_NULL, false},
                                      {"priority", P_STR, false}, {"rights", P_ARR, false}, END};
static const struct pspec p_ack[] = {{"envelope_id", P_STR, true}, END};
static const struct pspec p_create[] = {{"agent", P_STR, true}, {"directive", P_ANY, true},
                                        {"context", P_ANY, false}, {"task", P_STR, false},
                                        {"owner", P_STR, false}, {"budgets", P_OBJ, false},
                                        {"delegate", P_BOOL, false}, {"timeout", P_NUM, false}, END};
static const struct pspec p_ws_reason[] = {{"workspace", P_STR, true}, {"reason", P_STR, false}, END};
static const struct pspec p_ws[] = {{"workspace", P_STR, true}, END};
static const struct pspec p_transfer[] = {{"workspace", P_STR, true}, {"owner", P_STR, true}, END};
static const struct pspec p_grant[] = {{"holder", P_STR, true}, {"target", P_STR, true},
                                       {"kind", P_STR, true}, END};
static const struct pspec p_revoke[] = {{"right_id", P_STR, true}, {"reason", P_STR, false}, END};
static const struct pspec p_cp[] = {{"type", P_STR, true}, {"intent", P_STR, true},
                                    {"status", P_STR, true}, {"confidence", P_STR, true},
                                    {"parent", P_STR_NULL, false}, {"files", P_ARR, false},
                                    {"payload", P_ANY, false}, END};
static const struct pspec p_cp_list[] = {{"workspace", P_STR, false}, END};
static const struct pspec p_task[] = {{"name", P_STR, false}, {"description", P_STR, false},
                                      {"depends_on", P_ARR, false}, {"parent_task", P_STR, false},
                                      {"tasks", P_ARR, false}, END};
static const struct pspec p_assign[] = {{"task", P_STR, true}, {"workspace", P_STR, true}, END};
static const struct pspec p_task_id[] = {{"task", P_STR, true}, END};
static const struct pspec p_integrate[] = {{"workspace", P_STR, true}, {"decision", P_STR, true},
                                           {"strategy", P_STR, false}, {"checkpoint", P_STR, false},
                                           END};
static const struct pspec p_resolve[] = {{"workspace", P_STR, true}, {"resolution", P_STR, true},
                                         {"prefer", P_STR, false}, END};

#define ANY_LIVE WS_LIVE_MASK
#define WORKING WS_WORKING_MASK
/* Sorted by name (bsearch). Who may act is each handler's check (role capability, rights,
 * the target's state); the table refuses what no caller may do in its own state: a terminal
 * workspace does nothing, a suspended or migrating one is frozen, an integrating one is read
 * only. */
static const struct method methods[] = {
    {"wacp/checkpoint.create", cp_method_create, WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED), p_cp, WACP_RATE_CHECKPOINTS},
    {"wacp/checkpoint.list", cp_method_list, ANY_LIVE, p_cp_list, WACP_RATE_NONE},
    {"wacp/conflict.resolve", ws_method_resolve, WORKING, p_resolve, WACP_RATE_NONE},
    {"wacp/envelope.ack", env_method_ack, WORKING | WS_BIT(WS_INTEGRATING) | WS_BIT(WS_CONFLICTED), p_ack, WACP_RATE_NONE},
    {"wacp/envelope.send", env_method_send, WORKING, p_send, WACP_RATE_ENVELOPES},
    {"wacp/integrate", ws_method_integrate, WORKING, p_integrate, WACP_RATE_NONE},
    {"wacp/rights.grant", env_method_rights_grant, WORKING, p_grant, WACP_RATE_NONE},
    {"wacp/rights.list", env_method_rights_list, ANY_LIVE, p_none, WACP_RATE_NONE},
    {"wacp/rights.revoke", env_method_rights_revoke, WORKING, p_revoke, WACP_RATE_NONE},
    {"wacp/signal.emit", sig_method_emit, WORKING | WS_BIT(WS_INTEGRATING) | WS_BIT(WS_CONFLICTED), p_emit,
     WACP_RATE_SIGNALS},
    {"wacp/task.assign", task_method_assign, WORKING, p_assign, WACP_RATE_NONE},
    {"wacp/task.cancel", task_method_cancel, WORKING, p_task_id, WACP_RATE_NONE},
    {"wacp/task.create", task_method_create, WORKING, p_task, WACP_RATE_NONE},
    {"wacp/task.list", task_method_list, ANY_LIVE, p_none, WACP_RATE_NONE},
    {"wacp/workspace.abort", ws_method_abort, WORKING, p_ws_reason, WACP_RATE_NONE},
    {"wacp/workspace.create", ws_method_create, WORKING, p_create, WACP_RATE_NONE},
    {"wacp/workspace.list", ws_method_list, ANY_LIVE, p_none, WACP_RATE_NONE},
    {"wacp/workspace.resume", ws_method_resume, WORKING, p_ws, WACP_RATE_NONE},
    {"wacp/workspace.self", ws_method_self, ANY_LIVE, p_none, WACP_RATE_NONE},
    {"wacp/workspace.suspend", ws_method_suspend, WORKING, p_ws, WACP_RATE_NONE},
    {"wacp/workspace.transfer", ws_method_transfer, WORKING, p_transfer, WACP_RATE_NONE},
};

static int method_cmp(const void *k, const void *m)
{
    return strcmp((const char *)k, ((const struct method *)m)->name);
}

static const char *ptype_name(enum ptype t)
{
    switch (t) {
    case P_STR: return "a string";
    case P_BOOL: return "true or false";
    case P_NUM: return "a number";
    case P_ARR: return "an array";
    case P_OBJ: return "an object";
    case P_STR_NULL: return "a string or null";
    case P_NUM_STR: return "a number or a string";
    default: return "a JSON value";
    }
}

static bool ptype_ok(enum ptype t, const cJSON *v)
{
    switch (t) {
    case P_STR: return cJSON_IsString(v) && strlen(v->valuestring) <= 4096;
    case P_BOOL: return cJSON_IsBool(v);
    case P_NUM: return cJSON_IsNumber(v) && v->valuedouble == v->valuedouble;
    case P_ARR: return cJSON_IsArray(v);
    case P_OBJ: return cJSON_IsObject(v);
    case P_STR_NULL: return cJSON_IsNull(v) || (cJSON_IsString(v) && strlen(v->valuestring) <= 4096);
    case P_NUM_STR: return cJSON_IsNumber(v) || cJSON_IsString(v);
    default: return !cJSON_IsInvalid(v);
    }
}

/* Length, then types: every key known, each of its type, the required ones present. */
static int check_params(const struct method *m, const cJSON *p, struct wacp_err *e)
{
    if (p && !cJSON_IsObject(p) && !cJSON_IsNull(p))
        return wacp_fail(e, -32602, "invalid_params", "%s takes an object of parameters", m->name);
    const cJSON *k;
    cJSON_ArrayForEach(k, p) {
        if (!k->string)
            return wacp_fail(e, -32602, "invalid_params", "%s: a parameter without a name", m->name);
        const struct pspec *s = m->params;
        while (s->name && strcmp(s->name, k->string))
            s++;
        if (!s->name)
            return wacp_fail(e, -32602, "invalid_params", "%s takes no parameter '%.64s'", m->name,
                             k->string);
        if (cJSON_GetObjectItemCaseSensitive(p, k->string) != k)
            return wacp_fail(e, -32602, "invalid_params", "%s: parameter '%s' given twice", m->name,
                             k->string);
        if (!ptype_ok(s->type, k))
            return wacp_fail(e, -32602, "invalid_params", "%s: '%s' must be %s", m->name, s->name,
                             ptype_name(s->type));
    }
    for (const struct pspec *s = m->params; s->name; s++)
        if (s->required && !cJSON_GetObjectItemCaseSensitive(p, s->name))
            return wacp_fail(e, -32602, "invalid_params", "%s needs '%s' (%s)", m->name, s->name,
                             ptype_name(s->type));
    return 0;
}

static uint32_t rate_of(const struct wacp *w, enum wacp_rate r)
{
    switch (r) {
    case WACP_RATE_SIGNALS: return w->session.rates.signals;
    case WACP_RATE_ENVELOPES: return w->session.rates.envelopes;
    case WACP_RATE_CHECKPOINTS: return w->session.rates.checkpoints;
    default: return 0;
    }
}

/* A request past its bucket is refused before it costs anything: no entry of its own, only one
 * `denial` a second per workspace (with the count refused since the last), so a flood cannot
 * grow the trail. */
static int rate_limited(struct wacp *w, struct wacp_ws *c, const struct method *m)
{
    uint32_t per = rate_of(w, m->rate);
    uint32_t burst = per * 5 > 10 ? per * 5 : 10;
    uint64_t now = wacp_now_ms();
    if (rate_take(&c->rates[m->rate], per, burst, now))
        return 0;
    c->rate_refused++;
    if (!c->rate_noted_ms || now - c->rate_noted_ms >= 1000) {
        c->rate_noted_ms = now;
        cJSON *b = wacp_obj();
        wacp_add_str(b, "kind", "rate_limit");
        wacp_add_str(b, "method", m->name);
        cJSON_AddNumberToObject(b, "limit_per_second", per);
        cJSON_AddNumberToObject(b, "refused", (double)c->rate_refused);
        wacp_rec(w, c->id, "protocol", "denial", b);
        cJSON_Delete(b);
        c->rate_refused = 0;
        w->sum.denials++;
    }
    return -1;
}

int wacp_call(struct wacp *w, const char *caller, const char *method, const cJSON *params,
              cJSON **result, struct wacp_err *e)
{
    *result = NULL;
    memset(e, 0, sizeof(*e));
    const struct method *m = method ? bsearch(method, methods, ARRAY_SIZE(methods),
                                              sizeof(methods[0]), method_cmp) : NULL;
    if (!m) {
        wacp_fail(e, -32601, "method_not_found", "no method '%.80s'", method ? method : "");
        return -ENOENT;
    }
    struct wacp_ws *c = ws_find(w, caller);
    if (!c)
        return wacp_fail(e, -32603, "internal", "the calling workspace is unknown to the model");
    if (check_params(m, params, e) < 0)
        return -1;
    if (!(m->states & WS_BIT(c->state)))
        return wacp_deny(w, c, m->name, e, WACP_E_STATE, "invalid_state",
                         "%s is not allowed while your workspace is %s", m->name,
                         ws_state_name(c->state));
    if (m->rate != WACP_RATE_NONE && rate_limited(w, c, m) < 0)
        return wacp_fail(e, WACP_E_LIMIT, "rate_limited",
                         "%s: more than %u a second from this workspace (policy rate_limits); slow down",
                         m->name, rate_of(w, m->rate));
    static const cJSON empty = {.type = cJSON_Object};
    return m->fn(w, c, params && cJSON_IsObject(params) ? params : &empty, result, e);
}

/* ---- life of the model */

int wacp_new(const struct wacp_opts *o, const struct wacp_hooks *h, struct wacp **out,
             struct cerr *err)
{
    if (!o || !o->policy || !o->run_dir || !o->root_dir || !h || !h->record || !h->start ||
        !h->stop || !h->notify)
        return cerr_set(err, EINVAL, "wacp: options and every hook are required");
    if (sodium_init() < 0)
        return cerr_set(err, EIO, "wacp: libsodium cannot start");
    struct wacp *w = calloc(1, sizeof(*w));
    if (!w)
        return cerr_set(err, ENOMEM, "out of memory");
    w->policy = o->policy;
    w->h = *h;
    w->redelivery_base_ms = o->redelivery_base_ms ? o->redelivery_base_ms : 1000;
    w->max_workspaces = o->max_workspaces ? o->max_workspaces : 256;
    w->max_envelopes = o->max_envelopes ? o->max_envelopes : 1024;
    w->max_payload = o->max_payload ? o->max_payload : (1u << 20);
    w->max_payload_total = o->max_payload_total ? o->max_payload_total : (256u << 20);
    policy_session_get(o->policy, &w->session);
    w->rules.protected_paths = w->session.protected_paths ? w->session.protected_paths : broker_protected_default;
    if (w->session.protected_paths)
        w->rules.n_protected = w->session.n_protected_paths;
    else
        while (broker_protected_default[w->rules.n_protected])
            w->rules.n_protected++;
    w->run_dir = strdup(o->run_dir);
    w->root_dir = strdup(o->root_dir);
    w->root_owner = strdup(o->root_owner && o->root_owner[0] ? o->root_owner : "root");
    w->objects_dir = util_printf("%s/objects", o->run_dir);
    _cleanup_free_ char *wsd = util_printf("%s/ws", o->run_dir);
    if (!w->run_dir || !w->root_dir || !w->root_owner || !w->objects_dir || !wsd) {
        wacp_free(w);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    int r;
    if ((r = wacpf_mkdirs(w->objects_dir, err)) < 0 || (r = wacpf_mkdirs(wsd, err)) < 0) {
        wacp_free(w);
        return r;
    }
    *out = w;
    return 0;
}

void wacp_free(struct wacp *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_ws; i++)
        ws_free(w->ws[i]);
    for (size_t i = 0; i < w->n_env; i++)
        env_free(w->env[i]);
    for (size_t i = 0; i < w->n_cp; i++)
        cp_free(w->cp[i]);
    for (size_t i = 0; i < w->n_tasks; i++)
        task_free(w->tasks[i]);
    free(w->ws);
    free(w->env);
    free(w->rights);
    free(w->cp);
    free(w->tasks);
    free(w->run_dir);
    free(w->root_dir);
    free(w->root_owner);
    free(w->objects_dir);
    free(w);
}

int wacp_start(struct wacp *w, const char *agent, struct cerr *err)
{
    if (w->n_ws)
        return cerr_set(err, EALREADY, "wacp: the run has started already");
    return ws_create_root(w, agent, err);
}

void wacp_agent_ended(struct wacp *w, const char *id, const char *reason)
{
    struct wacp_ws *ws = ws_find(w, id);
    if (!ws || !(WS_BIT(ws->state) & WS_LIVE_MASK))
        return;
    ws->stopped = true; /* nothing left to stop */
    const char *why = reason && reason[0] ? reason : "agent_exited";
    if (ws_set_state(w, ws, WS_FAILED, "protocol", why) < 0 || !ws->parent)
        return;
    /* The agent cannot say `failed` any more: the runtime says it for it, so a parent waiting
     * for its child's signals learns of the failure (Signal spec: runtime-emitted failed). */
    char sid[WACP_ID_LEN];
    sig_emit(w, ws, "protocol", "failed", why, NULL, NULL, false, sid);
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m = a < b ? a : b;
    return m < c ? m : c;
}

uint64_t wacp_next_deadline(const struct wacp *w)
{
    return min3(ws_next_deadline(w), env_next_deadline(w), task_next_deadline(w));
}

void wacp_tick(struct wacp *w, uint64_t now_ms)
{
    ws_tick(w, now_ms);
    env_tick(w, now_ms);
    task_tick(w, now_ms);
}

bool wacp_done(const struct wacp *w)
{
    const struct wacp_ws *root = ws_root(w);
    return !root || !(WS_BIT(root->state) & WS_LIVE_MASK);
}

void wacp_shutdown(struct wacp *w, const char *reason)
{
    /* Deepest first: a later workspace is never an ancestor of an earlier one. */
    for (size_t i = w->n_ws; i-- > 0;)
        if (WS_BIT(w->ws[i]->state) & WS_LIVE_MASK)
            ws_set_state(w, w->ws[i], WS_FAILED, "system", reason ? reason : "run_ended");
}

cJSON *wacp_tree_json(const struct wacp *w)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < w->n_ws; i++) {
        cJSON *o = ws_json(w->ws[i]);
        if (!o || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            break;
        }
    }
    return a;
}

void wacp_summary_get(const struct wacp *w, struct wacp_summary *s)
{
    *s = w->sum;
    s->workspaces = w->n_ws;
    s->closed = s->failed = 0;
    for (size_t i = 0; i < w->n_ws; i++) {
        s->closed += w->ws[i]->state == WS_CLOSED;
        s->failed += w->ws[i]->state == WS_FAILED;
    }
    s->checkpoints = w->n_cp;
    s->tasks = w->n_tasks;
    s->tasks_done = 0;
    for (size_t i = 0; i < w->n_tasks; i++)
        s->tasks_done += w->tasks[i]->status == TASK_INTEGRATED ||
                         w->tasks[i]->status == TASK_COMPLETED;
}
