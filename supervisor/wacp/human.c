/* supervisor/wacp/human.c: the human highway inside the model: which transitions wait for a
 * person (task approval, the coordinator's gated methods, tool calls under needs_approval),
 * what each decision does, escalations and their three answers, injection, and the requests of
 * authenticated people (corral gate / inject / escalations) checked against what the policy's
 * users map lets each of them do. The waiting itself is highway.c's. */
#include "supervisor/wacp/human.h"

#include "supervisor/conn/rpc.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/envelope.h"
#include "supervisor/wacp/tree.h"

#include <stdio.h>
#include <string.h>

/* ---- set-up */

static int hw_record(void *data, const char *ws, const char *actor, const char *type, const cJSON *body)
{
    return wacp_core_rec(data, ws, actor, type, body);
}

int human_init(struct wacp *w)
{
    struct highway_hooks hk = {.data = w, .record = hw_record};
    integrity_key_new(&w->key);
    return highway_new(&hk, &w->hw);
}

void human_free(struct wacp *w)
{
    highway_free(w->hw);
    w->hw = NULL;
    integrity_key_wipe(&w->key);
}

/* ---- the coordinator's gated methods: the request waits (deferred), then runs or is refused */

struct method_wait {
    struct wacp *w;
    char caller[WACP_ID_LEN];
    char *method;
    cJSON *params;
    uint64_t call_ref;
    size_t held; /* of the run's payload ceiling: the params, kept twice (here, the subject) */
};

static void reply_err(struct wacp *w, struct method_wait *mw, const char *code, const char *what,
                      const char *gate_id)
{
    struct wacp_err e = {.rpc_code = WACP_E_DENIED};
    snprintf(e.code, sizeof(e.code), "%s", code);
    snprintf(e.msg, sizeof(e.msg), "gate %s: %s", gate_id, what);
    if (w->h.reply)
        w->h.reply(w->h.data, mw->caller, mw->call_ref, NULL, &e);
}

static void method_wait_free(void *data)
{
    struct method_wait *mw = data;
    mw->w->payload_total -= mw->held;
    free(mw->method);
    cJSON_Delete(mw->params);
    free(mw);
}

static void on_method_gate(void *data, const struct highway_gate *g, enum highway_action a,
                           const cJSON *mods)
{
    struct method_wait *mw = data;
    struct wacp *w = mw->w;
    if (a == HIGHWAY_APPROVE || a == HIGHWAY_MODIFY) {
        const cJSON *m;
        cJSON_ArrayForEach (m, mods) {
            cJSON_DeleteItemFromObjectCaseSensitive(mw->params, m->string);
            cJSON_AddItemToObject(mw->params, m->string, cJSON_Duplicate(m, true));
        }
        cJSON *res = NULL;
        struct wacp_err e = {0};
        w->gate_pass = true; /* the same request again, this time through */
        int rc = w->rerun(w, mw->caller, mw->method, mw->params, mw->call_ref, &res, &e);
        w->gate_pass = false;
        if (rc == WACP_DEFERRED) /* its file work runs on the pool: jobs.c answers it */
            cJSON_Delete(res);
        else if (w->h.reply)
            w->h.reply(w->h.data, mw->caller, mw->call_ref, rc == 0 ? res : NULL, rc == 0 ? NULL : &e);
        else
            cJSON_Delete(res);
    } else if (a == HIGHWAY_ESCALATE) {
        reply_err(w, mw, "gate_escalated",
                  "no person answered in time: it falls to you, the coordinator; send the same "
                  "request again to go ahead",
                  g->id);
    } else if (!strcmp(g->actor, "protocol")) {
        reply_err(w, mw, "gate_subject_invalidated", "withdrawn: its subject is gone", g->id);
    } else {
        /* An integration a person rejects fails the workspace (highway spec 3). */
        struct wacp_ws *t = g->type == POLICY_GATE_INTEGRATION ? wacp_tree_find(w, g->workspace) : NULL;
        if (t && (WS_BIT(t->state) & WS_LIVE_MASK))
            wacp_tree_set_state(w, t, WS_FAILED, g->actor, "gate_rejected_by_human");
        reply_err(w, mw, "gate_rejected_by_human", "a person rejected it", g->id);
    }
    method_wait_free(mw);
}

int human_gate_method(struct wacp *w, struct wacp_ws *c, const char *method, int type,
                      const cJSON *params, uint64_t call_ref, struct wacp_err *e)
{
    double timeout;
    enum policy_fallback fb;
    if (w->gate_pass || type < 0 || !wacp_gate_rule(w, type, &timeout, &fb))
        return 0;
    if (!wacp_tree_is_coordinator(c) && !c->delegate)
        return 0; /* not its to do: the method itself refuses it, no person is asked */
    if (!call_ref || !w->h.reply)
        return wacp_core_deny(w, c, method, e, WACP_E_DENIED, "gate_unavailable",
                              "%s waits for a person's approval under this run's highway, and this "
                              "caller cannot wait",
                              method);
    /* A waiting request keeps its parameters (a directive, a context: up to a message) until a
     * person answers, so they count toward the run's ceiling on kept payloads. */
    size_t held = 2 * rpc_json_cost(params);
    if (!wacp_core_hold(w, held))
        return wacp_core_deny(w, c, method, e, WACP_E_LIMIT, "memory_limit",
                              "the requests waiting for a person and the run's payloads would pass "
                              "the %llu bytes the run keeps; wait for the gates open now",
                              (unsigned long long)w->max_payload_total);
    const cJSON *tw = cJSON_GetObjectItemCaseSensitive(params, "workspace");
    const cJSON *tt = cJSON_GetObjectItemCaseSensitive(params, "task");
    cJSON *s = wacp_core_obj();
    wacp_core_add_str(s, "method", method);
    wacp_core_add_str(s, "requested_by", c->id);
    cJSON_AddItemToObject(s, "params", cJSON_Duplicate(params, true));
    struct method_wait *mw = calloc(1, sizeof(*mw));
    if (!mw || !(mw->method = strdup(method)) || !(mw->params = cJSON_Duplicate(params, true))) {
        if (mw)
            free(mw->method);
        free(mw);
        cJSON_Delete(s);
        w->payload_total -= held;
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    mw->w = w;
    mw->held = held;
    mw->call_ref = call_ref;
    snprintf(mw->caller, sizeof(mw->caller), "%s", c->id);
    struct highway_gate_req r = {
        .type = type,
        .subject = s,
        .workspace = cJSON_IsString(tw) ? tw->valuestring : c->id,
        .requester = c->id,
        .task_ref = cJSON_IsString(tt) ? tt->valuestring : NULL,
        .graph_ref = w->graph,
        .timeout = timeout,
        .fallback = fb,
        .by_coordinator = wacp_tree_is_coordinator(c),
        .fn = on_method_gate,
        .fn_data = mw,
        .drop = method_wait_free,
        .now_ms = wacp_core_now_ms(),
        .wall_ms = wacp_core_wall_ms(),
    };
    struct highway_gate *g;
    int rc = highway_gate_open(w->hw, &r, &g);
    cJSON_Delete(s);
    if (rc != 1)
        method_wait_free(mw);
    if (rc == 0)
        return 0; /* the guard: the coordinator's own decision, through */
    if (rc < 0)
        return rc == -EAGAIN
                   ? wacp_core_deny(w, c, method, e, WACP_E_LIMIT, "limit", "too many gates are waiting")
                   : wacp_core_trail_err(e);
    return WACP_DEFERRED;
}

/* ---- tool calls under needs_approval (corral's own gate type) */

struct tool_wait {
    wacp_tool_done_fn done;
    void *data;
};

static void on_tool_gate(void *data, const struct highway_gate *g, enum highway_action a,
                         const cJSON *mods)
{
    struct tool_wait *tw = data;
    (void)mods;
    tw->done(tw->data, a == HIGHWAY_APPROVE || a == HIGHWAY_MODIFY, g->id, highway_action_name(a),
             g->actor);
    free(tw);
}

/* The run ends with the call still waiting: its owner frees what it holds, nothing runs. */
static void tool_wait_drop(void *data)
{
    struct tool_wait *tw = data;
    tw->done(tw->data, false, NULL, NULL, NULL);
    free(tw);
}

int wacp_gate_tool(struct wacp *w, const char *ws, const char *tool, const cJSON *args,
                   wacp_tool_done_fn done, void *data, char gate_id[WACP_GATE_ID_LEN],
                   struct wacp_err *e)
{
    memset(e, 0, sizeof(*e));
    gate_id[0] = 0;
    struct wacp_ws *c = wacp_tree_find(w, ws);
    if (!c || !(WS_BIT(c->state) & WS_LIVE_MASK))
        return wacp_core_fail(e, WACP_E_STATE, "invalid_state", "the workspace is not live");
    double timeout = 300;
    enum policy_fallback fb = POLICY_FALLBACK_REJECT;
    wacp_gate_rule(w, HIGHWAY_TOOL_CALL, &timeout, &fb);
    cJSON *s = wacp_core_obj();
    wacp_core_add_str(s, "tool", tool);
    cJSON_AddItemToObject(s, "arguments", args ? cJSON_Duplicate(args, true) : cJSON_CreateObject());
    wacp_core_add_str(s, "workspace", c->id);
    wacp_core_add_str(s, "role", c->role);
    wacp_core_add_str(s, "agent", c->agent);
    struct tool_wait *tw = calloc(1, sizeof(*tw));
    if (!tw) {
        cJSON_Delete(s);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    tw->done = done;
    tw->data = data;
    struct highway_gate_req r = {
        .type = HIGHWAY_TOOL_CALL,
        .subject = s,
        .workspace = c->id,
        .requester = c->id,
        .task_ref = c->task,
        .graph_ref = w->graph,
        .timeout = timeout,
        .fallback = fb,
        .by_coordinator = wacp_tree_is_coordinator(c),
        .fn = on_tool_gate,
        .fn_data = tw,
        .drop = tool_wait_drop,
        .now_ms = wacp_core_now_ms(),
        .wall_ms = wacp_core_wall_ms(),
    };
    struct highway_gate *g;
    int rc = highway_gate_open(w->hw, &r, &g);
    cJSON_Delete(s);
    if (rc != 1)
        free(tw);
    if (rc < 0)
        return rc == -EAGAIN ? wacp_core_fail(e, WACP_E_LIMIT, "limit", "too many gates are waiting")
                             : wacp_core_trail_err(e);
    if (rc == 1)
        snprintf(gate_id, WACP_GATE_ID_LEN, "%s", g->id);
    return rc;
}

/* ---- requests of people (the control socket's highway operations) */

static int refuse(struct wacp *w, const struct policy_user *u, const char *capability,
                  const char *reason, const char *ws, struct wacp_err *e, const char *msg)
{
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "user_id", u->user_id);
    wacp_core_add_str(b, "capability", capability);
    wacp_core_add_str(b, "reason", reason);
    int r = wacp_core_rec(w, ws, u->user_id, "capability_denied", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_core_trail_err(e);
    return wacp_core_fail(e, WACP_E_DENIED, reason, "%s", msg);
}

static const char *pstr(const cJSON *p, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool active(const struct policy_user *u)
{
    return !u->state || !strcmp(u->state, "active");
}

/* Fields a person may change per gate type (highway spec 3 and 4); the rest are refused. */
static bool modifiable(int type, const char *field)
{
    static const char *const task[] = {"name", "description", NULL};
    static const char *const create[] = {"budgets", "timeout", "directive", "context", NULL};
    static const char *const envelope[] = {"payload", NULL};
    static const char *const conflict[] = {"prefer", NULL}; /* an escalated conflict's merge */
    const char *const *ok = type == POLICY_GATE_TASK_APPROVAL         ? task
                            : type == POLICY_GATE_WORKSPACE_CREATE    ? create
                            : type == POLICY_GATE_ENVELOPE_DELIVERY   ? envelope
                            : type == POLICY_GATE_CONFLICT_RESOLUTION ? conflict
                                                                      : NULL;
    for (size_t i = 0; ok && ok[i]; i++)
        if (!strcmp(ok[i], field))
            return true;
    return false;
}

static int op_gate_resolve(struct wacp *w, const struct policy_user *u, const char *op, const cJSON *p,
                           cJSON **res, struct wacp_err *e)
{
    const char *id = pstr(p, "id");
    struct highway_gate *g = id ? highway_gate_find(w->hw, id)
                             : cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "next"))
                                 ? highway_gate_head(w->hw)
                                 : NULL;
    if (!g)
        return wacp_core_fail(e, WACP_E_NOT_FOUND, "not_found",
                              id ? "no gate %.64s" : "no gate is waiting%s", id ? id : "");
    if (!(u->approve & (1u << g->type))) {
        char msg[200];
        snprintf(msg, sizeof(msg), "user %s may not decide %s gates (the policy's users map)",
                 u->user_id, highway_type_name(g->type));
        return refuse(w, u, highway_type_name(g->type), "not_permitted", g->workspace, e, msg);
    }
    if (!active(u))
        return refuse(w, u, highway_type_name(g->type), "user_not_active", g->workspace, e,
                      "your user is not active in this run's policy");
    if (!g->pending)
        return wacp_core_fail(e, WACP_E_STATE, "already_resolved",
                              "gate %s was resolved already (%s by %s)", g->id,
                              highway_action_name(g->action), g->actor);
    enum highway_action a = !strcmp(op, "gate.approve")  ? HIGHWAY_APPROVE
                            : !strcmp(op, "gate.reject") ? HIGHWAY_REJECT
                                                         : HIGHWAY_MODIFY;
    const cJSON *mods = cJSON_GetObjectItemCaseSensitive(p, "modifications");
    if (a == HIGHWAY_MODIFY) {
        if (!cJSON_IsObject(mods) || !mods->child)
            return wacp_core_fail(e, -32602, "invalid_params",
                                  "modify takes modifications: an object of the fields to change");
        const cJSON *m;
        cJSON_ArrayForEach (m, mods)
            if (!modifiable(g->type, m->string))
                return wacp_core_fail(e, -32602, "not_modifiable",
                                      "'%.64s' of a %s gate cannot be modified", m->string,
                                      highway_type_name(g->type));
    }
    char gid[HIGHWAY_ID_LEN];
    snprintf(gid, sizeof(gid), "%s", g->id);
    const char *reason = pstr(p, "reason");
    int rc = highway_gate_resolve(w->hw, g, a, mods, u->user_id,
                                  reason && strlen(reason) < 40 ? reason : NULL, wacp_core_now_ms());
    if (rc < 0)
        return wacp_core_trail_err(e);
    g = highway_gate_find(w->hw, gid);
    *res = wacp_core_obj();
    if (g)
        cJSON_AddItemToObject(*res, "gate", highway_gate_json(g, false, wacp_core_now_ms()));
    return 0;
}

static int op_inject(struct wacp *w, const struct policy_user *u, const cJSON *p, cJSON **res,
                     struct wacp_err *e)
{
    const char *to = pstr(p, "to");
    if (!u->inject)
        return refuse(w, u, "inject", "not_permitted", to, e,
                      "your user may not inject (the policy's users map)");
    if (!active(u))
        return refuse(w, u, "inject", "user_not_active", to, e,
                      "only active users inject (your user is not)");
    if (!w->session.highway || !w->session.highway->injection)
        return refuse(w, u, "inject", "injection_disabled", to, e,
                      "this run's highway has injection off");
    return wacp_envelope_inject(w, u->user_id, p, res, e);
}

static int op_escalations(struct wacp *w, const struct policy_user *u, const char *op, const cJSON *p,
                          cJSON **res, struct wacp_err *e)
{
    if (!strcmp(op, "escalations.list")) {
        cJSON *all = highway_escs_json(w->hw, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "all")),
                                       wacp_core_now_ms());
        cJSON *mine = cJSON_CreateArray();
        cJSON *x;
        cJSON_ArrayForEach (x, all) {
            const char *owner = pstr(x, "owner");
            if (u->escalations == POLICY_USER_ESC_ALL ||
                (u->escalations == POLICY_USER_ESC_OWN && owner && !strcmp(owner, u->user_id)))
                cJSON_AddItemToArray(mine, cJSON_Duplicate(x, true));
        }
        cJSON_Delete(all);
        *res = wacp_core_obj();
        cJSON_AddItemToObject(*res, "escalations", mine);
        return 0;
    }
    struct highway_escalation *x = highway_esc_find(w->hw, pstr(p, "id"));
    if (!x)
        return wacp_core_fail(e, WACP_E_NOT_FOUND, "not_found", "no escalation %.64s",
                              pstr(p, "id") ? pstr(p, "id") : "");
    bool may = u->escalations == POLICY_USER_ESC_ALL ||
               (u->escalations == POLICY_USER_ESC_OWN && !strcmp(x->owner, u->user_id));
    if (!may)
        return refuse(
            w, u, "escalation", "not_permitted", x->workspace, e,
            "this escalation is routed to its workspace's owner, and your user may not answer it");
    if (!active(u))
        return refuse(w, u, "escalation", "user_not_active", x->workspace, e,
                      "only active users answer escalations");
    if (!x->pending)
        return wacp_core_fail(e, WACP_E_STATE, "already_resolved", "escalation %s was answered already",
                              x->id);
    int r = highway_response_parse(pstr(p, "response"));
    if (r < 0)
        return wacp_core_fail(e, -32602, "invalid_params", "response is envelope, abort or delegation");
    char ref[WACP_ID_LEN] = "";
    if (r == HIGHWAY_RESP_ENVELOPE) {
        /* The answer goes in as an injection from this person (feedback by default). */
        cJSON *inj = wacp_core_obj();
        wacp_core_add_str(inj, "to", x->workspace);
        wacp_core_add_str(inj, "type", pstr(p, "type") ? pstr(p, "type") : "feedback");
        wacp_core_add_str(inj, "in_reply_to", NULL);
        const cJSON *pl = cJSON_GetObjectItemCaseSensitive(p, "payload");
        cJSON_AddItemToObject(inj, "payload", pl ? cJSON_Duplicate(pl, true) : cJSON_CreateObject());
        cJSON *ir = NULL;
        int rc = wacp_envelope_inject(w, u->user_id, inj, &ir, e);
        cJSON_Delete(inj);
        if (rc < 0)
            return rc;
        snprintf(ref, sizeof(ref), "%s", pstr(ir, "envelope_id") ? pstr(ir, "envelope_id") : "");
        cJSON_Delete(ir);
    }
    char id[HIGHWAY_ID_LEN];
    snprintf(id, sizeof(id), "%s", x->id);
    if (highway_esc_respond(w->hw, x, (enum highway_response)r,
                            cJSON_GetObjectItemCaseSensitive(p, "payload"), ref, u->user_id,
                            wacp_core_now_ms()) < 0)
        return wacp_core_trail_err(e);
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "id", id);
    wacp_core_add_str(*res, "response_type", highway_response_name((enum highway_response)r));
    wacp_core_add_str(*res, "response_ref", ref);
    return 0;
}

int wacp_human_call(struct wacp *w, const struct policy_user *u, const char *op, const cJSON *p,
                    cJSON **res, struct wacp_err *e)
{
    *res = NULL;
    memset(e, 0, sizeof(*e));
    if (!cJSON_IsObject(p))
        return wacp_core_fail(e, -32602, "invalid_params", "a request is a JSON object");
    uint64_t now = wacp_core_now_ms();
    if (!strcmp(op, "whoami")) {
        *res = wacp_core_obj();
        wacp_core_add_str(*res, "user_id", u->user_id);
        wacp_core_add_str(*res, "state", u->state ? u->state : "active");
        return 0;
    }
    /* A deactivated identity is retired (user spec 3.1): it is refused everything, reads too. */
    if (u->state && !strcmp(u->state, "deactivated"))
        return refuse(w, u, op, "user_not_active", NULL, e,
                      "your user is deactivated in this run's policy");
    if (!strcmp(op, "gate.list")) {
        *res = wacp_core_obj();
        cJSON_AddItemToObject(
            *res, "gates",
            highway_gates_json(w->hw, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "all")), now));
        return 0;
    }
    if (!strcmp(op, "gate.show")) {
        struct highway_gate *g = highway_gate_find(w->hw, pstr(p, "id"));
        if (!g)
            return wacp_core_fail(e, WACP_E_NOT_FOUND, "not_found", "no gate %.64s",
                                  pstr(p, "id") ? pstr(p, "id") : "");
        *res = wacp_core_obj();
        cJSON_AddItemToObject(*res, "gate", highway_gate_json(g, true, now));
        return 0;
    }
    if (!strcmp(op, "gate.approve") || !strcmp(op, "gate.reject") || !strcmp(op, "gate.modify"))
        return op_gate_resolve(w, u, op, p, res, e);
    if (!strcmp(op, "inject"))
        return op_inject(w, u, p, res, e);
    if (!strcmp(op, "escalations.list") || !strcmp(op, "escalations.respond"))
        return op_escalations(w, u, op, p, res, e);
    return wacp_core_fail(
        e, -32601, "unknown_op",
        "no operation '%.64s' (gate.list, gate.show, gate.approve, "
        "gate.reject, gate.modify, inject, escalations.list, escalations.respond, whoami)",
        op);
}
