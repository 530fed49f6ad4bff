/* supervisor/wacp/methods.c: the top of the WACP model of one run: its life (new, start, tick,
 * free), the hooks the lower modules call up through, and the table of wacp/... methods (parameter shapes, the caller states each is allowed in) that every request
 * passes before a handler sees it. */
#include "supervisor/wacp/checkpoint.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/envelope.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/integrate.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/task.h"
#include "supervisor/wacp/trail_query.h"
#include "supervisor/wacp/tree.h"
#include "supervisor/wacp/workspace.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

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

#define END            \
    {                  \
        NULL, 0, false \
    }
static const struct pspec p_none[] = {END};
static const struct pspec p_emit[] = {
    {"type", P_STR, true}, {"reason", P_STR, false}, {"ref", P_STR, false}, END};
static const struct pspec p_send[] = {{"to", P_STR, true},
                                      {"type", P_STR, true},
                                      {"payload", P_ANY, true},
                                      {"in_reply_to", P_STR_NULL, false},
                                      {"priority", P_STR, false},
                                      {"rights", P_ARR, false},
                                      END};
static const struct pspec p_ack[] = {{"envelope_id", P_STR, true}, END};
static const struct pspec p_create[] = {
    {"agent", P_STR, true},      {"directive", P_ANY, true}, {"context", P_ANY, false},
    {"task", P_STR, false},      {"owner", P_STR, false},    {"budgets", P_OBJ, false},
    {"delegate", P_BOOL, false}, {"timeout", P_NUM, false},  END};
static const struct pspec p_ws_reason[] = {{"workspace", P_STR, true}, {"reason", P_STR, false}, END};
static const struct pspec p_ws[] = {{"workspace", P_STR, true}, END};
static const struct pspec p_transfer[] = {{"workspace", P_STR, true}, {"owner", P_STR, true}, END};
static const struct pspec p_grant[] = {
    {"holder", P_STR, true}, {"target", P_STR, true}, {"kind", P_STR, true}, END};
static const struct pspec p_revoke[] = {{"right_id", P_STR, true}, {"reason", P_STR, false}, END};
static const struct pspec p_cp[] = {{"type", P_STR, true},         {"intent", P_STR, true},
                                    {"status", P_STR, true},       {"confidence", P_STR, true},
                                    {"parent", P_STR_NULL, false}, {"files", P_ARR, false},
                                    {"payload", P_ANY, false},     END};
static const struct pspec p_cp_list[] = {{"workspace", P_STR, false}, END};
static const struct pspec p_task[] = {{"name", P_STR, false},       {"description", P_STR, false},
                                      {"depends_on", P_ARR, false}, {"parent_task", P_STR, false},
                                      {"tasks", P_ARR, false},      END};
static const struct pspec p_assign[] = {{"task", P_STR, true}, {"workspace", P_STR, true}, END};
static const struct pspec p_task_id[] = {{"task", P_STR, true}, END};
static const struct pspec p_integrate[] = {{"workspace", P_STR, true},
                                           {"decision", P_STR, true},
                                           {"strategy", P_STR, false},
                                           {"checkpoint", P_STR, false},
                                           END};
static const struct pspec p_resolve[] = {
    {"workspace", P_STR, true}, {"resolution", P_STR, true}, {"prefer", P_STR, false}, END};

#define ANY_LIVE WS_LIVE_MASK
#define WORKING WS_WORKING_MASK
#define ANY_STATE ((1u << WS_NSTATES) - 1)
/* Sorted by name (bsearch). Who may act is each handler's check (role capability, rights,
 * the target's state); the table refuses what no caller may do in its own state: a terminal
 * workspace does nothing, a suspended or migrating one is frozen, an integrating one is read
 * only. */
static const struct method methods[] = {
    {"wacp/checkpoint.create", wacp_checkpoint_method_create, WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED),
     p_cp, WACP_RATE_CHECKPOINTS},
    {"wacp/checkpoint.list", wacp_checkpoint_method_list, ANY_LIVE, p_cp_list, WACP_RATE_NONE},
    {"wacp/conflict.resolve", wacp_integrate_method_resolve, WORKING, p_resolve, WACP_RATE_NONE},
    {"wacp/envelope.ack", wacp_envelope_method_ack,
     WORKING | WS_BIT(WS_INTEGRATING) | WS_BIT(WS_CONFLICTED), p_ack, WACP_RATE_NONE},
    {"wacp/envelope.send", wacp_envelope_method_send, WORKING, p_send, WACP_RATE_ENVELOPES},
    {"wacp/integrate", wacp_integrate_method_integrate, WORKING, p_integrate, WACP_RATE_NONE},
    {"wacp/rights.grant", wacp_envelope_method_rights_grant, WORKING, p_grant, WACP_RATE_NONE},
    {"wacp/rights.list", wacp_envelope_method_rights_list, ANY_LIVE, p_none, WACP_RATE_NONE},
    {"wacp/rights.revoke", wacp_envelope_method_rights_revoke, WORKING, p_revoke, WACP_RATE_NONE},
    {"wacp/signal.emit", wacp_signal_method_emit,
     WORKING | WS_BIT(WS_INTEGRATING) | WS_BIT(WS_CONFLICTED), p_emit, WACP_RATE_SIGNALS},
    {"wacp/task.assign", wacp_task_method_assign, WORKING, p_assign, WACP_RATE_NONE},
    {"wacp/task.cancel", wacp_task_method_cancel, WORKING, p_task_id, WACP_RATE_NONE},
    {"wacp/task.create", wacp_task_method_create, WORKING, p_task, WACP_RATE_NONE},
    {"wacp/task.list", wacp_task_method_list, ANY_LIVE, p_none, WACP_RATE_NONE},
    /* Reading the committed trail changes nothing: any state. Its parameters predate the
     * table and keep their own checks and messages (params NULL: the handler checks). */
    {"wacp/trail.query", wacp_trail_query_method, ANY_STATE, NULL, WACP_RATE_NONE},
    {"wacp/workspace.abort", wacp_workspace_method_abort, WORKING, p_ws_reason, WACP_RATE_NONE},
    {"wacp/workspace.create", wacp_workspace_method_create, WORKING, p_create, WACP_RATE_NONE},
    {"wacp/workspace.list", wacp_workspace_method_list, ANY_LIVE, p_none, WACP_RATE_NONE},
    {"wacp/workspace.resume", wacp_workspace_method_resume, WORKING, p_ws, WACP_RATE_NONE},
    {"wacp/workspace.self", wacp_workspace_method_self, ANY_LIVE, p_none, WACP_RATE_NONE},
    {"wacp/workspace.suspend", wacp_workspace_method_suspend, WORKING, p_ws, WACP_RATE_NONE},
    {"wacp/workspace.transfer", wacp_workspace_method_transfer, WORKING, p_transfer, WACP_RATE_NONE},
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
        return wacp_core_fail(e, -32602, "invalid_params", "%s takes an object of parameters", m->name);
    const cJSON *k;
    cJSON_ArrayForEach (k, p) {
        if (!k->string)
            return wacp_core_fail(e, -32602, "invalid_params", "%s: a parameter without a name",
                                  m->name);
        const struct pspec *s = m->params;
        while (s->name && strcmp(s->name, k->string))
            s++;
        if (!s->name)
            return wacp_core_fail(e, -32602, "invalid_params", "%s takes no parameter '%.64s'", m->name,
                                  k->string);
        if (cJSON_GetObjectItemCaseSensitive(p, k->string) != k)
            return wacp_core_fail(e, -32602, "invalid_params", "%s: parameter '%s' given twice", m->name,
                                  k->string);
        if (!ptype_ok(s->type, k))
            return wacp_core_fail(e, -32602, "invalid_params", "%s: '%s' must be %s", m->name, s->name,
                                  ptype_name(s->type));
    }
    for (const struct pspec *s = m->params; s->name; s++)
        if (s->required && !cJSON_GetObjectItemCaseSensitive(p, s->name))
            return wacp_core_fail(e, -32602, "invalid_params", "%s needs '%s' (%s)", m->name, s->name,
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
    uint64_t now = wacp_core_now_ms();
    if (rate_take(&c->rates[m->rate], per, burst, now))
        return 0;
    c->rate_refused++;
    if (!c->rate_noted_ms || now - c->rate_noted_ms >= 1000) {
        c->rate_noted_ms = now;
        cJSON *b = wacp_core_obj();
        wacp_core_add_str(b, "kind", "rate_limit");
        wacp_core_add_str(b, "method", m->name);
        cJSON_AddNumberToObject(b, "limit_per_second", per);
        cJSON_AddNumberToObject(b, "refused", (double)c->rate_refused);
        wacp_core_rec(w, c->id, "protocol", "denial", b);
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
    const struct method *m = method ? bsearch(method, methods, ARRAY_SIZE(methods), sizeof(methods[0]),
                                              method_cmp)
                                    : NULL;
    if (!m) {
        wacp_core_fail(e, -32601, "method_not_found", "no method '%.80s'", method ? method : "");
        return -ENOENT;
    }
    struct wacp_ws *c = wacp_tree_find(w, caller);
    if (!c)
        return wacp_core_fail(e, -32603, "internal", "the calling workspace is unknown to the model");
    if (m->params && check_params(m, params, e) < 0)
        return -1;
    if (!(m->states & WS_BIT(c->state)))
        return wacp_core_deny(w, c, m->name, e, WACP_E_STATE, "invalid_state",
                              "%s is not allowed while your workspace is %s", m->name,
                              wacp_tree_state_name(c->state));
    if (m->rate != WACP_RATE_NONE && rate_limited(w, c, m) < 0)
        return wacp_core_fail(
            e, WACP_E_LIMIT, "rate_limited",
            "%s: more than %u a second from this workspace (policy rate_limits); slow down", m->name,
            rate_of(w, m->rate));
    if (!m->params) /* the handler checks its own parameters, as given */
        return m->fn(w, c, params, result, e);
    static const cJSON empty = {.type = cJSON_Object};
    return m->fn(w, c, params && cJSON_IsObject(params) ? params : &empty, result, e);
}

/* ---- life of the model */

/* The tree's hook: a workspace reached TO; the bound task follows (PROTOCOL task spec 4) and,
 * when TO is terminal, what is still undelivered to it is recorded undeliverable. */
static void on_state_changed(struct wacp *w, struct wacp_ws *ws, enum ws_state to)
{
    wacp_task_follow(w, ws, to);
    if (to == WS_CLOSED || to == WS_FAILED)
        wacp_envelope_drop_for(w, ws);
}

int wacp_new(const struct wacp_opts *o, const struct wacp_hooks *h, struct wacp **out, struct cerr *err)
{
    if (!o || !o->policy || !o->run_dir || !o->root_dir || !h || !h->record || !h->start || !h->stop ||
        !h->notify)
        return cerr_set(err, EINVAL, "wacp: options and every hook are required");
    if (sodium_init() < 0)
        return cerr_set(err, EIO, "wacp: libsodium cannot start");
    struct wacp *w = calloc(1, sizeof(*w));
    if (!w)
        return cerr_set(err, ENOMEM, "out of memory");
    w->policy = o->policy;
    w->h = *h;
    w->tree_hooks.state_changed = on_state_changed;
    w->redelivery_base_ms = o->redelivery_base_ms ? o->redelivery_base_ms : 1000;
    w->max_workspaces = o->max_workspaces ? o->max_workspaces : 256;
    w->max_envelopes = o->max_envelopes ? o->max_envelopes : 1024;
    w->max_payload = o->max_payload ? o->max_payload : (1u << 20);
    w->max_payload_total = o->max_payload_total ? o->max_payload_total : (256u << 20);
    policy_session_get(o->policy, &w->session);
    w->rules.protected_paths = w->session.protected_paths ? w->session.protected_paths
                                                          : broker_protected_default;
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
    if ((r = wacp_files_mkdirs(w->objects_dir, err)) < 0 || (r = wacp_files_mkdirs(wsd, err)) < 0) {
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
        wacp_tree_free(w->ws[i]);
    for (size_t i = 0; i < w->n_env; i++)
        wacp_envelope_free(w->env[i]);
    for (size_t i = 0; i < w->n_cp; i++)
        wacp_checkpoint_free(w->cp[i]);
    for (size_t i = 0; i < w->n_tasks; i++)
        wacp_task_free(w->tasks[i]);
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
    return wacp_workspace_create_root(w, agent, err);
}

void wacp_agent_ended(struct wacp *w, const char *id, const char *reason)
{
    struct wacp_ws *ws = wacp_tree_find(w, id);
    if (!ws || !(WS_BIT(ws->state) & WS_LIVE_MASK))
        return;
    ws->stopped = true; /* nothing left to stop */
    const char *why = reason && reason[0] ? reason : "agent_exited";
    if (wacp_tree_set_state(w, ws, WS_FAILED, "protocol", why) < 0 || !ws->parent)
        return;
    /* The agent cannot say `failed` any more: the runtime says it for it, so a parent waiting
     * for its child's signals learns of the failure (Signal spec: runtime-emitted failed). */
    char sid[WACP_ID_LEN];
    wacp_signal_emit(w, ws, "protocol", "failed", why, NULL, NULL, false, sid);
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m = a < b ? a : b;
    return m < c ? m : c;
}

uint64_t wacp_next_deadline(const struct wacp *w)
{
    return min3(wacp_workspace_next_deadline(w), wacp_envelope_next_deadline(w),
                wacp_task_next_deadline(w));
}

void wacp_tick(struct wacp *w, uint64_t now_ms)
{
    wacp_workspace_tick(w, now_ms);
    wacp_envelope_tick(w, now_ms);
    wacp_task_tick(w, now_ms);
}

bool wacp_done(const struct wacp *w)
{
    const struct wacp_ws *root = wacp_tree_root(w);
    return !root || !(WS_BIT(root->state) & WS_LIVE_MASK);
}

void wacp_shutdown(struct wacp *w, const char *reason)
{
    /* Deepest first: a later workspace is never an ancestor of an earlier one. */
    for (size_t i = w->n_ws; i-- > 0;)
        if (WS_BIT(w->ws[i]->state) & WS_LIVE_MASK)
            wacp_tree_set_state(w, w->ws[i], WS_FAILED, "system", reason ? reason : "run_ended");
}

cJSON *wacp_tree_json(const struct wacp *w)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < w->n_ws; i++) {
        cJSON *o = wacp_tree_ws_json(w->ws[i]);
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
        s->tasks_done += w->tasks[i]->status == TASK_INTEGRATED || w->tasks[i]->status == TASK_COMPLETED;
}
