/* supervisor/wacp/signal.c: signals: the eleven types and no others, who may emit which
 * ("emit:TYPE"), the transitions they trigger, duplicates recorded without a state change, and
 * upward propagation to the parent's agent. */
#include "supervisor/wacp/signal.h"

#include "supervisor/wacp/core.h"
#include "supervisor/wacp/task.h"
#include "supervisor/wacp/tree.h"

#include <stdio.h>
#include <string.h>

static const char *const signal_types[] = {
    "ready",     "started",      "blocked",    "checkpoint", "complete", "failed",
    "integrate", "acknowledged", "escalation", "suspend",    "migrate",
};

bool wacp_signal_known(const char *type)
{
    for (size_t i = 0; type && i < ARRAY_SIZE(signal_types); i++)
        if (!strcmp(type, signal_types[i]))
            return true;
    return false;
}

static int record_emitted(struct wacp *w, struct wacp_ws *ws, const char *actor, const char *type,
                          const char *reason, const char *ref, bool duplicate, const char *id)
{
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "signal_id", id);
    wacp_core_add_str(b, "workspace_id", ws->id);
    wacp_core_add_str(b, "type", type);
    wacp_core_add_str(b, "reason", reason);
    wacp_core_add_str(b, "ref", ref);
    if (duplicate)
        cJSON_AddBoolToObject(b, "duplicate", true);
    int r = wacp_core_rec(w, ws->id, actor, "signal_emitted", b);
    cJSON_Delete(b);
    if (r == 0)
        w->sum.signals++;
    return r;
}

/* signal_delivered in the recipient's trail, then the notification to its agent. */
static int deliver(struct wacp *w, struct wacp_ws *ws, struct wacp_ws *to, const char *type,
                   const char *reason, const char *ref, const char *id)
{
    if (!to)
        return 0; /* the root's signals reach the global trail only */
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "signal_id", id);
    wacp_core_add_str(b, "from", ws->id);
    wacp_core_add_str(b, "to", to->id);
    wacp_core_add_str(b, "type", type);
    cJSON_AddNumberToObject(b, "delivered_at", (double)wacp_core_wall_ms());
    int r = wacp_core_rec(w, to->id, "protocol", "signal_delivered", b);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    cJSON *p = wacp_core_obj(), *s = cJSON_AddObjectToObject(p, "signal");
    wacp_core_add_str(s, "signal_id", id);
    wacp_core_add_str(s, "from", ws->id);
    wacp_core_add_str(s, "type", type);
    wacp_core_add_str(s, "reason", reason);
    wacp_core_add_str(s, "ref", ref);
    wacp_core_add_str(s, "state", wacp_tree_state_name(ws->state));
    w->h.notify(w->h.data, to->id, "wacp/signal", p);
    return 0;
}

int wacp_signal_emit(struct wacp *w, struct wacp_ws *ws, const char *actor, const char *type,
                     const char *reason, const char *ref, struct wacp_ws *to, bool duplicate,
                     char id_out[WACP_ID_LEN])
{
    wacp_core_new_id("sig", id_out);
    int r = record_emitted(w, ws, actor, type, reason, ref, duplicate, id_out);
    if (r < 0)
        return r;
    return deliver(w, ws, to ? to : ws->parent, type, reason, ref, id_out);
}

/* What TYPE does to a workspace in state S: the state it moves to, S itself when it changes
 * nothing, or WS_NSTATES when the table has no such transition. DUP: the workspace already made
 * the transition this signal asks for (recorded, state unchanged). */
static enum ws_state effect(const char *type, enum ws_state s, bool *dup)
{
    *dup = false;
    if (!strcmp(type, "started")) {
        if (s == WS_BLOCKED)
            return WS_ACTIVE;
        *dup = s == WS_ACTIVE;
        return s;
    }
    if (!strcmp(type, "blocked")) {
        if (s == WS_ACTIVE)
            return WS_BLOCKED;
        *dup = s == WS_BLOCKED;
        return *dup ? s : WS_NSTATES;
    }
    if (!strcmp(type, "complete")) {
        if (s == WS_ACTIVE)
            return WS_INTEGRATING;
        *dup = s == WS_INTEGRATING || s == WS_CONFLICTED;
        return *dup ? s : WS_NSTATES;
    }
    if (!strcmp(type, "failed")) {
        if (s == WS_ACTIVE)
            return WS_FAILED;
        return WS_NSTATES;
    }
    return s; /* ready, checkpoint, escalation, integrate, acknowledged: status, no transition */
}

/* ---- escalations (highway spec 2.4) */

static const struct policy_user *user_by_id(const struct wacp *w, const char *id)
{
    for (size_t i = 0; id && i < w->session.n_users; i++)
        if (!strcmp(w->session.users[i].user_id, id))
            return &w->session.users[i];
    return NULL;
}

static void on_escalation(void *data, const struct highway_escalation *x, enum highway_response r,
                          const cJSON *payload)
{
    struct wacp *w = data;
    struct wacp_ws *ws = wacp_tree_find(w, x->workspace);
    if (!ws || !(WS_BIT(ws->state) & WS_LIVE_MASK))
        return;
    switch (r) {
    case HIGHWAY_RESP_ENVELOPE:
        /* The answer was injected by the responder (response_ref); an empty fallback answer
         * still unblocks the agent. */
        if (ws->state == WS_BLOCKED)
            wacp_tree_set_state(w, ws, WS_ACTIVE, x->actor, "escalation_answered");
        break;
    case HIGHWAY_RESP_ABORT:
        wacp_tree_set_state(w, ws, WS_FAILED, x->actor,
                            !strcmp(x->actor, "fallback") ? "escalation_timeout" : "aborted_by_human");
        break;
    case HIGHWAY_RESP_DELEGATION: {
        struct wacp_ws *root = wacp_tree_root(w);
        cJSON *p = wacp_core_obj();
        wacp_core_add_str(p, "event", "escalation_delegated");
        wacp_core_add_str(p, "signal_id", x->id);
        wacp_core_add_str(p, "workspace", x->workspace);
        wacp_core_add_str(p, "reason", x->reason);
        if (root)
            w->h.notify(w->h.data, root->id, "wacp/highway", p);
        else
            cJSON_Delete(p);
        break;
    }
    }
    (void)payload;
}

static void to_highway(struct wacp *w, struct wacp_ws *ws, const char *signal_id, const char *reason)
{
    const struct policy_highway *h = w->session.highway;
    if (!h || !h->escalation)
        return;
    const struct policy_user *u = user_by_id(w, ws->owner);
    struct highway_esc_req r = {
        .signal_id = signal_id,
        .workspace = ws->id,
        .reason = reason,
        .owner = ws->owner,
        .owner_state = u && u->state ? u->state : "active",
        .timeout = h->escalation_timeout,
        .fallback = h->escalation_fallback,
        .fn = on_escalation,
        .fn_data = w,
        .now_ms = wacp_core_now_ms(),
        .wall_ms = wacp_core_wall_ms(),
    };
    struct highway_escalation *x;
    if (highway_esc_open(w->hw, &r, &x) == 0) {
        /* Its owner is deactivated: the coordinator must reroute it (highway spec 2.4). */
        struct wacp_ws *root = wacp_tree_root(w);
        cJSON *p = wacp_core_obj();
        wacp_core_add_str(p, "event", "escalation_rejected");
        wacp_core_add_str(p, "signal_id", signal_id);
        wacp_core_add_str(p, "workspace", ws->id);
        wacp_core_add_str(p, "reason", "owner_deactivated");
        if (root)
            w->h.notify(w->h.data, root->id, "wacp/highway", p);
        else
            cJSON_Delete(p);
    }
}

int wacp_signal_esc_restore(struct wacp *w, struct wacp_ws *ws, const char *signal_id,
                            const char *reason, bool queued, uint64_t wall_ms, uint64_t now_ms,
                            uint64_t deadline_ms)
{
    const struct policy_highway *h = w->session.highway;
    struct highway_esc_req r = {
        .signal_id = signal_id,
        .workspace = ws->id,
        .reason = reason,
        .owner = ws->owner,
        .timeout = h ? h->escalation_timeout : 0,
        .fallback = h ? h->escalation_fallback : POLICY_FALLBACK_REJECT,
        .fn = on_escalation,
        .fn_data = w,
        .now_ms = now_ms,
        .wall_ms = wall_ms,
    };
    struct highway_escalation *x;
    int rc = highway_esc_restore(w->hw, &r, queued, deadline_ms, &x);
    return rc < 0 ? rc : 0;
}

int wacp_signal_method_emit(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                            struct wacp_err *e)
{
    static const char M[] = "wacp/signal.emit";
    const char *type = cJSON_GetObjectItemCaseSensitive(p, "type")->valuestring;
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(p, "reason");
    const cJSON *fj = cJSON_GetObjectItemCaseSensitive(p, "ref");
    const char *reason = rj ? rj->valuestring : NULL;
    const char *ref = fj ? fj->valuestring : NULL;
    if (!wacp_signal_known(type))
        return wacp_core_deny(w, c, M, e, -32602, "unknown_signal",
                              "'%.40s' is not a signal: the eleven are ready, started, blocked, "
                              "checkpoint, complete, failed, integrate, acknowledged, escalation, "
                              "suspend, migrate",
                              type);
    if ((reason && strlen(reason) > 400) || (ref && strlen(ref) > 128))
        return wacp_core_fail(e, -32602, "invalid_params", "reason is at most 400 bytes, ref 128");
    if (!reason && (!strcmp(type, "blocked") || !strcmp(type, "failed") || !strcmp(type, "escalation")))
        return wacp_core_fail(e, -32602, "invalid_params", "a %s signal carries a reason", type);
    bool root_complete = !c->parent && !strcmp(type, "complete");
    char cap[64];
    snprintf(cap, sizeof(cap), "emit:%s", type);
    if (!root_complete && !policy_role_can(&c->view, cap))
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "role '%s' may not emit '%s'", c->role, type);
    bool dup;
    enum ws_state to = effect(type, c->state, &dup);
    if (to == WS_NSTATES)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                              "'%s' does nothing from state %s (PROTOCOL 6.3)", type,
                              wacp_tree_state_name(c->state));
    char id[WACP_ID_LEN];
    wacp_core_new_id("sig", id);
    if (record_emitted(w, c, c->role, type, reason, ref, dup, id) < 0)
        return wacp_core_trail_err(e);
    if (to != c->state && wacp_tree_set_state(w, c, to, c->role, reason ? reason : type) < 0)
        return wacp_core_trail_err(e);
    if (!strcmp(type, "started") && c->state == WS_ACTIVE)
        wacp_task_on_started(w, c);
    /* The root has no parent to integrate into: its complete ends the run (closed). */
    if (root_complete && c->state == WS_INTEGRATING &&
        wacp_tree_set_state(w, c, WS_CLOSED, "system", "run_complete") < 0)
        return wacp_core_trail_err(e);
    if (deliver(w, c, c->parent, type, reason, ref, id) < 0)
        return wacp_core_trail_err(e);
    if (!strcmp(type, "escalation"))
        to_highway(w, c, id, reason); /* and to the human highway (highway spec 2.4) */
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "signal_id", id);
    wacp_core_add_str(*res, "state", wacp_tree_state_name(c->state));
    cJSON_AddBoolToObject(*res, "duplicate", dup);
    return 0;
}
