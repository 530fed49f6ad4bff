/* supervisor/wacp/methods.c: the top of the WACP model of one run: its life (new, start, tick,
 * free), the hooks the lower modules call up through, and the table of wacp/... methods (parameter shapes, the caller states each is allowed in) that every request
 * passes before a handler sees it. */
#include "supervisor/wacp/checkpoint.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/envelope.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/human.h"
#include "supervisor/wacp/integrate.h"
#include "supervisor/wacp/jobs.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/task.h"
#include "supervisor/wacp/trail_query.h"
#include "supervisor/wacp/tree.h"
#include "supervisor/wacp/visibility.h"
#include "supervisor/wacp/workspace.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "tools/params.h"

#include <string.h>

#include <sodium.h>

/* ---- the method table */

/* Parameter shapes are tools/params tables (the one checker of tool arguments and WACP
 * parameters), read strictly: null is a value, a key given twice is refused, strings are capped. */
#define WACP_STR_MAX 4096
#define STR(n, req)                                            \
    {                                                          \
        n, TOOL_PARAM_STRING, req, NULL, NULL, 0, WACP_STR_MAX \
    }
#define STR_NULL(n, req)                                            \
    {                                                               \
        n, TOOL_PARAM_STRING_NULL, req, NULL, NULL, 0, WACP_STR_MAX \
    }
#define PARAM(n, type, req)            \
    {                                  \
        n, type, req, NULL, NULL, 0, 0 \
    }
#define END                              \
    {                                    \
        NULL, 0, false, NULL, NULL, 0, 0 \
    }
typedef int (*wacp_handler)(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                            struct wacp_err *e);
struct method {
    const char *name;
    wacp_handler fn;
    unsigned states;                 /* caller states it is allowed in */
    const struct tool_param *params; /* NULL-name terminated */
    int gate;            /* 1 + the highway gate that may hold it (enum policy_gate); 0 none */
    enum wacp_rate rate; /* the workspace's bucket it draws on (WACP_RATE_NONE: none) */
};

static const struct tool_param p_none[] = {END};
static const struct tool_param p_emit[] = {STR("type", true), STR("reason", false), STR("ref", false),
                                           END};
static const struct tool_param p_send[] = {STR("to", true),
                                           STR("type", true),
                                           PARAM("payload", TOOL_PARAM_ANY, true),
                                           STR_NULL("in_reply_to", false),
                                           STR("priority", false),
                                           PARAM("rights", TOOL_PARAM_ARRAY, false),
                                           END};
static const struct tool_param p_ack[] = {STR("envelope_id", true), END};
static const struct tool_param p_create[] = {STR("agent", true),
                                             PARAM("directive", TOOL_PARAM_ANY, true),
                                             PARAM("context", TOOL_PARAM_ANY, false),
                                             STR("task", false),
                                             STR("owner", false),
                                             PARAM("budgets", TOOL_PARAM_OBJECT, false),
                                             PARAM("delegate", TOOL_PARAM_BOOL, false),
                                             PARAM("timeout", TOOL_PARAM_NUMBER, false),
                                             PARAM("visibility", TOOL_PARAM_ARRAY, false),
                                             END};
static const struct tool_param p_vis[] = {STR("workspace", true), STR("target", true), END};
static const struct tool_param p_ws_reason[] = {STR("workspace", true), STR("reason", false), END};
static const struct tool_param p_ws[] = {STR("workspace", true), END};
static const struct tool_param p_transfer[] = {STR("workspace", true), STR("owner", true), END};
static const struct tool_param p_grant[] = {STR("holder", true), STR("target", true), STR("kind", true),
                                            END};
static const struct tool_param p_revoke[] = {STR("right_id", true), STR("reason", false), END};
static const struct tool_param p_cp[] = {STR("type", true),
                                         STR("intent", true),
                                         STR("status", true),
                                         STR("confidence", true),
                                         STR_NULL("parent", false),
                                         PARAM("files", TOOL_PARAM_ARRAY, false),
                                         PARAM("payload", TOOL_PARAM_ANY, false),
                                         END};
static const struct tool_param p_cp_list[] = {STR("workspace", false), END};
static const struct tool_param p_task[] = {STR("name", false),
                                           STR("description", false),
                                           PARAM("depends_on", TOOL_PARAM_ARRAY, false),
                                           STR("parent_task", false),
                                           PARAM("tasks", TOOL_PARAM_ARRAY, false),
                                           END};
static const struct tool_param p_assign[] = {STR("task", true), STR("workspace", true), END};
static const struct tool_param p_task_id[] = {STR("task", true), END};
static const struct tool_param p_integrate[] = {STR("workspace", true), STR("decision", true),
                                                STR("strategy", false), STR("checkpoint", false), END};
static const struct tool_param p_resolve[] = {STR("workspace", true), STR("resolution", true),
                                              STR("prefer", false), END};

#define ANY_LIVE WS_LIVE_MASK
#define WORKING WS_WORKING_MASK
#define ANY_STATE ((1u << WS_NSTATES) - 1)
/* Sorted by name (bsearch). Who may act is each handler's check (role capability, rights,
 * the target's state); the table refuses what no caller may do in its own state: a terminal
 * workspace does nothing, a suspended or migrating one is frozen, an integrating one is read
 * only. */
static const struct method methods[] = {
    {"wacp/checkpoint.create", wacp_checkpoint_method_create, WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED),
     p_cp, 0, WACP_RATE_CHECKPOINTS},
    {"wacp/checkpoint.list", wacp_checkpoint_method_list, ANY_LIVE, p_cp_list, 0, WACP_RATE_NONE},
    {"wacp/conflict.resolve", wacp_integrate_method_resolve, WORKING, p_resolve,
     1 + POLICY_GATE_CONFLICT_RESOLUTION, WACP_RATE_NONE},
    {"wacp/envelope.ack", wacp_envelope_method_ack,
     WORKING | WS_BIT(WS_INTEGRATING) | WS_BIT(WS_CONFLICTED), p_ack, 0, WACP_RATE_NONE},
    {"wacp/envelope.send", wacp_envelope_method_send, WORKING, p_send, 0, WACP_RATE_ENVELOPES},
    {"wacp/integrate", wacp_integrate_method_integrate, WORKING, p_integrate,
     1 + POLICY_GATE_INTEGRATION, WACP_RATE_NONE},
    {"wacp/rights.grant", wacp_envelope_method_rights_grant, WORKING, p_grant, 0, WACP_RATE_NONE},
    {"wacp/rights.list", wacp_envelope_method_rights_list, ANY_LIVE, p_none, 0, WACP_RATE_NONE},
    {"wacp/rights.revoke", wacp_envelope_method_rights_revoke, WORKING, p_revoke, 0, WACP_RATE_NONE},
    {"wacp/signal.emit", wacp_signal_method_emit,
     WORKING | WS_BIT(WS_INTEGRATING) | WS_BIT(WS_CONFLICTED), p_emit, 0, WACP_RATE_SIGNALS},
    {"wacp/task.assign", wacp_task_method_assign, WORKING, p_assign, 0, WACP_RATE_NONE},
    {"wacp/task.cancel", wacp_task_method_cancel, WORKING, p_task_id, 0, WACP_RATE_NONE},
    {"wacp/task.create", wacp_task_method_create, WORKING, p_task, 0, WACP_RATE_NONE},
    {"wacp/task.list", wacp_task_method_list, ANY_LIVE, p_none, 0, WACP_RATE_NONE},
    /* Reading the committed trail changes nothing: any state. Its parameters predate the
     * table and keep their own checks and messages (params NULL: the handler checks). */
    {"wacp/trail.query", wacp_trail_query_method, ANY_STATE, NULL, 0, WACP_RATE_NONE},
    {"wacp/visibility.grant", wacp_visibility_method_grant, WORKING, p_vis, 0, WACP_RATE_NONE},
    {"wacp/workspace.abort", wacp_workspace_method_abort, WORKING, p_ws_reason,
     1 + POLICY_GATE_WORKSPACE_ABORT, WACP_RATE_NONE},
    {"wacp/workspace.create", wacp_workspace_method_create, WORKING, p_create,
     1 + POLICY_GATE_WORKSPACE_CREATE, WACP_RATE_NONE},
    {"wacp/workspace.list", wacp_workspace_method_list, ANY_LIVE, p_none, 0, WACP_RATE_NONE},
    {"wacp/workspace.resume", wacp_workspace_method_resume, WORKING, p_ws, 0, WACP_RATE_NONE},
    {"wacp/workspace.self", wacp_workspace_method_self, ANY_LIVE, p_none, 0, WACP_RATE_NONE},
    {"wacp/workspace.suspend", wacp_workspace_method_suspend, WORKING, p_ws, 0, WACP_RATE_NONE},
    {"wacp/workspace.transfer", wacp_workspace_method_transfer, WORKING, p_transfer, 0, WACP_RATE_NONE},
};

static int method_cmp(const void *k, const void *m)
{
    return strcmp((const char *)k, ((const struct method *)m)->name);
}

static const char *ptype_name(enum tool_param_type t)
{
    switch (t) {
    case TOOL_PARAM_STRING: return "a string";
    case TOOL_PARAM_BOOL: return "true or false";
    case TOOL_PARAM_NUMBER: return "a number";
    case TOOL_PARAM_ARRAY: return "an array";
    case TOOL_PARAM_OBJECT: return "an object";
    case TOOL_PARAM_STRING_NULL: return "a string or null";
    case TOOL_PARAM_NUMBER_OR_STRING: return "a number or a string";
    default: return "a JSON value";
    }
}

/* Length, then types: every key known and given once, each of its type, the required ones
 * present (tools/params, strictly); the refusal worded as every WACP refusal is. */
static int check_params(const struct method *m, const cJSON *p, struct wacp_err *e)
{
    size_t n = 0;
    while (m->params[n].name)
        n++;
    const cJSON *v[16];
    struct tool_param_bad bad;
    if (n > ARRAY_SIZE(v))
        return wacp_core_fail(e, -32603, "internal", "%s: too many parameters in its table", m->name);
    if (tool_params_check_flags(m->params, n, p, TOOL_PARAMS_STRICT, v, NULL, NULL, NULL, &bad) == 0)
        return 0;
    switch (bad.fault) {
    case TOOL_PARAM_NOT_OBJECT:
        return wacp_core_fail(e, -32602, "invalid_params", "%s takes an object of parameters", m->name);
    case TOOL_PARAM_UNKNOWN:
        return wacp_core_fail(e, -32602, "invalid_params", "%s takes no parameter '%.64s'", m->name,
                              bad.key);
    case TOOL_PARAM_REPEATED:
        return wacp_core_fail(e, -32602, "invalid_params", "%s: parameter '%s' given twice", m->name,
                              bad.key);
    case TOOL_PARAM_REQUIRED:
        return wacp_core_fail(e, -32602, "invalid_params", "%s needs '%s' (%s)", m->name,
                              bad.param->name, ptype_name(bad.param->type));
    default:
        return wacp_core_fail(e, -32602, "invalid_params", "%s: '%s' must be %s", m->name,
                              bad.param->name, ptype_name(bad.param->type));
    }
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
    return wacp_call_ref(w, caller, method, params, 0, result, e);
}

int wacp_call_ref(struct wacp *w, const char *caller, const char *method, const cJSON *params,
                  uint64_t call_ref, cJSON **result, struct wacp_err *e)
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
    const cJSON *p = params && cJSON_IsObject(params) ? params : &empty;
    /* An escalated conflict opens its own gate (integrate.c): asking a person whether a person
     * may be asked would be one gate too many. */
    const cJSON *how = cJSON_GetObjectItemCaseSensitive(p, "resolution");
    bool escalation = m->fn == wacp_integrate_method_resolve && cJSON_IsString(how) &&
                      !strcmp(how->valuestring, "escalate");
    int g = escalation ? 0 : human_gate_method(w, c, m->name, m->gate - 1, p, call_ref, e);
    if (g != 0)
        return g;
    /* A handler whose file work goes to the pool (jobs.h) answers this request later. */
    uint64_t outer = w->call_ref;
    w->call_ref = call_ref;
    int rc = m->fn(w, c, p, result, e);
    w->call_ref = outer;
    return rc;
}

/* ---- life of the model */

/* The tree's hook: a workspace reached TO; the bound task follows (PROTOCOL task spec 4) and,
 * when TO is terminal, what is still undelivered to it is recorded undeliverable. */
static void on_state_changed(struct wacp *w, struct wacp_ws *ws, enum ws_state to)
{
    wacp_task_follow(w, ws, to);
    if (to == WS_CLOSED || to == WS_FAILED) {
        wacp_envelope_drop_for(w, ws);
        /* Gates and escalations about it resolve themselves (highway spec 6.5). */
        highway_invalidate(w->hw, ws->id, NULL, wacp_core_now_ms());
        highway_esc_invalidate(w->hw, ws->id, wacp_core_now_ms());
    }
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
    w->rerun = wacp_call_ref;
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
    /* DIR opened once, no link anywhere on its path (the runtime checked the same at the
     * start); the model never names it by path again (wacp_tree_dir_open). */
    w->root_fd = util_open_nolinks(o->root_dir, O_RDONLY | O_DIRECTORY);
    if (w->root_fd < 0) {
        int e = -w->root_fd;
        free(w);
        return cerr_set(err, e, "cannot open the workspace directory %s: %s", o->root_dir,
                        e == ELOOP ? "the path goes through a symbolic link" : strerror(e));
    }
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
    if (human_init(w) < 0) {
        wacp_free(w);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    if ((r = wacp_files_mkdirs(w->objects_dir, err)) < 0 || (r = wacp_files_mkdirs(wsd, err)) < 0) {
        wacp_free(w);
        return r;
    }
    *out = w;
    return 0;
}

int wacp_root_fd(const struct wacp *w)
{
    return w->root_fd;
}

void wacp_free(struct wacp *w)
{
    if (!w)
        return;
    wacp_jobs_orphan(w);
    cJSON_Delete(w->restored_gates);
    cJSON_Delete(w->restored_escs);
    human_free(w);
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
    if (w->root_fd > 0)
        close(w->root_fd);
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

void wacp_agent_exited(struct wacp *w, const char *id, bool clean, const char *reason)
{
    struct wacp_ws *ws = wacp_tree_find(w, id);
    if (!ws)
        return;
    /* `complete` handed the work to the parent: a normal exit afterwards is the agent being done,
     * not a failure (only an exit before complete, a crash or a budget kill fails it). */
    if (clean && (ws->state == WS_INTEGRATING || ws->state == WS_CONFLICTED)) {
        ws->stopped = true; /* nothing left to stop */
        return;
    }
    wacp_agent_ended(w, id, reason);
}

/* Liveness (docs/protocol-wacp.md): the runtime says for a silent agent what it would not say
 * itself, as runtime-emitted signals its parent receives like the agent's own. */
int wacp_agent_stalled(struct wacp *w, const char *id, const char *reason)
{
    struct wacp_ws *ws = wacp_tree_find(w, id);
    if (!ws || ws->state != WS_ACTIVE)
        return -EINVAL;
    if (wacp_tree_set_state(w, ws, WS_BLOCKED, "protocol", reason) < 0)
        return -EIO;
    char sid[WACP_ID_LEN];
    if (ws->parent)
        wacp_signal_emit(w, ws, "protocol", "blocked", reason, NULL, NULL, false, sid);
    return 0;
}

int wacp_agent_stirred(struct wacp *w, const char *id, const char *reason)
{
    struct wacp_ws *ws = wacp_tree_find(w, id);
    if (!ws || ws->state != WS_BLOCKED)
        return -EINVAL;
    if (wacp_tree_set_state(w, ws, WS_ACTIVE, "protocol", reason) < 0)
        return -EIO;
    char sid[WACP_ID_LEN];
    if (ws->parent)
        wacp_signal_emit(w, ws, "protocol", "started", reason, NULL, NULL, false, sid);
    return 0;
}

const char *wacp_state_of(const struct wacp *w, const char *id)
{
    const struct wacp_ws *ws = wacp_tree_find(w, id);
    return ws ? wacp_tree_state_name(ws->state) : NULL;
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m = a < b ? a : b;
    return m < c ? m : c;
}

uint64_t wacp_next_deadline(const struct wacp *w)
{
    uint64_t h = highway_next_deadline(w->hw);
    uint64_t m = min3(wacp_workspace_next_deadline(w), wacp_envelope_next_deadline(w),
                      wacp_task_next_deadline(w));
    return h < m ? h : m;
}

void wacp_tick(struct wacp *w, uint64_t now_ms)
{
    wacp_workspace_tick(w, now_ms);
    wacp_envelope_tick(w, now_ms);
    wacp_task_tick(w, now_ms);
    highway_tick(w->hw, now_ms);
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
