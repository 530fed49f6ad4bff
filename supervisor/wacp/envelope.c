/* supervisor/wacp/envelope.c: envelopes and port rights: validation against rights and the
 * permission matrix, the five states, per-channel order, at-least-once delivery with linear
 * backoff (3 redeliveries), acknowledgment and deduplication, right transfer and revocation. */
#include "supervisor/wacp/envelope.h"

#include "supervisor/wacp/core.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/tree.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const env_state_names[] = {"created", "validated", "delivered", "acknowledged",
                                              "rejected"};

const char *wacp_envelope_state_name(enum env_state s)
{
    return (unsigned)s < ARRAY_SIZE(env_state_names) ? env_state_names[s] : "?";
}

static const char *right_kind_name(enum right_kind k)
{
    return k == RIGHT_SEND ? "send" : k == RIGHT_SEND_ONCE ? "send_once" : "receive";
}

void wacp_envelope_free(struct wacp_env *v)
{
    if (!v)
        return;
    free(v->type);
    free(v->payload);
    cJSON_Delete(v->rights);
    free(v->originator);
    free(v);
}

static struct wacp_env *env_find(const struct wacp *w, const char *id)
{
    for (size_t i = 0; id && i < w->n_env; i++)
        if (!strcmp(w->env[i]->id, id))
            return w->env[i];
    return NULL;
}

static struct wacp_right *right_find(const struct wacp *w, const char *id)
{
    for (size_t i = 0; id && i < w->n_rights; i++)
        if (!strcmp(w->rights[i].id, id))
            return &w->rights[i];
    return NULL;
}

static cJSON *right_json(const struct wacp_right *r)
{
    cJSON *o = wacp_core_obj();
    wacp_core_add_str(o, "right_id", r->id);
    wacp_core_add_str(o, "kind", right_kind_name(r->kind));
    wacp_core_add_str(o, "holder", r->holder);
    wacp_core_add_str(o, "target", r->target);
    return o;
}

int wacp_envelope_right_add(struct wacp *w, enum right_kind kind, const char *holder, const char *target,
                            const char *by, char id_out[WACP_ID_LEN])
{
    if (w->n_rights >= WACP_MAX_RIGHTS ||
        !wacp_core_grow((void **)&w->rights, &w->cap_rights, w->n_rights + 1, sizeof(*w->rights)))
        return -ENOMEM;
    struct wacp_right r = {.kind = kind, .live = true};
    wacp_core_new_id("rt", r.id);
    snprintf(r.holder, sizeof(r.holder), "%s", holder);
    snprintf(r.target, sizeof(r.target), "%s", target);
    cJSON *b = right_json(&r);
    cJSON_AddStringToObject(b, "right_type", right_kind_name(kind));
    wacp_core_add_str(b, "created_by", by);
    int rc = wacp_core_rec(w, holder, by, "port_right_created", b);
    cJSON_Delete(b);
    if (rc < 0)
        return rc;
    w->rights[w->n_rights++] = r;
    snprintf(id_out, WACP_ID_LEN, "%s", r.id);
    return 0;
}

/* A type is registered when it is a base type or some role of the policy may send it. */
static bool type_registered(const struct wacp *w, const char *type)
{
    if (!strcmp(type, "directive") || !strcmp(type, "feedback") || !strcmp(type, "query"))
        return true;
    size_t tl = strlen(type);
    for (size_t i = 0; i < policy_role_count(w->policy); i++) {
        struct policy_role_view v;
        struct cerr ce;
        if (policy_role_resolve(w->policy, policy_role_name(w->policy, i), &v, &ce) < 0)
            continue;
        for (size_t k = 0; k < v.n_caps; k++)
            if (!strncmp(v.caps[k].text, "send:", 5) && !strncmp(v.caps[k].text + 5, type, tl) &&
                !strncmp(v.caps[k].text + 5 + tl, "->", 2))
                return true;
    }
    return false;
}

static bool can_send(const struct policy_role_view *v, const char *type, const char *role)
{
    char cap[256];
    snprintf(cap, sizeof(cap), "send:%s->%s", type, role);
    return policy_role_can(v, cap);
}

bool wacp_envelope_channel_matrix(const struct wacp *w, const struct wacp_ws *from,
                                  const struct wacp_ws *to, const char *type)
{
    (void)w;
    if (can_send(&from->view, type, to->role) ||
        can_send(&from->view, type, policy_base_name(to->view.base)))
        return true;
    /* A delegate is a local coordinator for its subtree (PROTOCOL 5.4). */
    bool down = !strcmp(type, "directive") || !strcmp(type, "feedback");
    if (from->delegate && down && wacp_tree_is_ancestor(from, to))
        return true;
    if (to->delegate && from->parent == to && can_send(&from->view, type, "coordinator"))
        return true;
    return false;
}

static cJSON *env_json(const struct wacp_env *v)
{
    cJSON *o = wacp_core_obj();
    wacp_core_add_str(o, "envelope_id", v->id);
    wacp_core_add_str(o, "from", v->from);
    wacp_core_add_str(o, "to", v->to);
    wacp_core_add_str(o, "type", v->type);
    cJSON *pl = v->payload ? cJSON_Parse(v->payload) : NULL; /* parsed for this showing only */
    cJSON_AddItemToObject(o, "payload", pl ? pl : cJSON_CreateNull());
    wacp_core_add_str(o, "in_reply_to", v->in_reply_to);
    wacp_core_add_str(o, "priority", v->priority);
    wacp_core_add_str(o, "origin", v->origin);
    cJSON_AddNumberToObject(o, "timestamp", (double)v->timestamp_ms);
    cJSON_AddNumberToObject(o, "attempt", v->attempt);
    cJSON_AddItemToObject(o, "rights",
                          v->rights ? cJSON_Duplicate(v->rights, true) : cJSON_CreateArray());
    if (v->originator)
        wacp_core_add_str(o, "originator", v->originator);
    cJSON *in = cJSON_AddObjectToObject(o, "integrity");
    wacp_core_add_str(in, "proof", v->mac);
    wacp_core_add_str(in, "algorithm", INTEGRITY_ALGORITHM);
    return o;
}

/* The fields the proof covers (security spec 4.1), the sender's identity among them. The
 * payload is kept as text: *PAYLOAD gets it parsed for the proof, the caller frees it. */
static size_t mac_fields(const struct wacp_env *v, struct integrity_field f[11], char ts[24],
                         cJSON **payload)
{
    *payload = v->payload ? cJSON_Parse(v->payload) : NULL;
    snprintf(ts, 24, "%llu", (unsigned long long)v->timestamp_ms);
    size_t n = 0;
    f[n++] = (struct integrity_field){.s = v->id};
    f[n++] = (struct integrity_field){.s = v->from};
    f[n++] = (struct integrity_field){.s = v->to};
    f[n++] = (struct integrity_field){.s = v->type};
    f[n++] = (struct integrity_field){.json = *payload};
    f[n++] = (struct integrity_field){.s = v->in_reply_to};
    f[n++] = (struct integrity_field){.json = v->rights};
    f[n++] = (struct integrity_field){.s = v->priority};
    f[n++] = (struct integrity_field){.s = v->origin};
    f[n++] = (struct integrity_field){.s = v->originator};
    f[n++] = (struct integrity_field){.s = ts};
    return n;
}

int wacp_envelope_seal(struct wacp *w, struct wacp_env *v)
{
    struct integrity_field f[11];
    char ts[24];
    cJSON *payload;
    size_t n = mac_fields(v, f, ts, &payload);
    int r = integrity_mac(&w->key, "envelope", f, n, v->mac);
    cJSON_Delete(payload);
    return r;
}

/* Before each delivery attempt: a proof that does not verify refuses the envelope for good. */
static bool env_verified(struct wacp *w, struct wacp_env *v)
{
    struct integrity_field f[11];
    char ts[24];
    cJSON *payload;
    size_t n = mac_fields(v, f, ts, &payload);
    bool ok = integrity_check(&w->key, "envelope", f, n, v->mac);
    cJSON_Delete(payload);
    if (ok)
        return true;
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "subject_type", "envelope");
    wacp_core_add_str(b, "subject_id", v->id);
    wacp_core_add_str(b, "violation", v->mac[0] ? "hash_mismatch" : "proof_missing");
    wacp_core_add_str(b, "expected", v->mac);
    wacp_core_add_str(b, "actual", "recomputed proof differs");
    wacp_core_add_str(b, "action_taken", "rejected");
    wacp_core_rec(w, NULL, "protocol", "integrity_violation", b);
    cJSON_Delete(b);
    b = wacp_core_obj();
    wacp_core_add_str(b, "envelope_id", v->id);
    wacp_core_add_str(b, "from", v->from);
    wacp_core_add_str(b, "to", v->to);
    wacp_core_add_str(b, "type", v->type);
    wacp_core_add_str(b, "reason", "integrity_violation");
    wacp_core_rec(w, v->to, "protocol", "envelope_rejected", b);
    cJSON_Delete(b);
    v->state = ENV_REJECTED;
    struct wacp_ws *to = wacp_tree_find(w, v->to);
    if (to && to->inbox)
        to->inbox--;
    w->sum.denials++;
    return false;
}

static void env_notify(struct wacp *w, struct wacp_env *v)
{
    if (!env_verified(w, v))
        return;
    cJSON *p = wacp_core_obj();
    cJSON_AddItemToObject(p, "envelope", env_json(v));
    w->h.notify(w->h.data, v->to, "wacp/envelope", p);
}

static bool takes_delivery(enum ws_state s)
{
    /* Suspended and migrating workspaces queue their inbox; terminal ones take nothing. */
    return s == WS_IDLE || s == WS_ACTIVE || s == WS_BLOCKED || s == WS_INTEGRATING ||
           s == WS_CONFLICTED;
}

static void first_attempt(struct wacp *w, struct wacp_env *v, uint64_t now)
{
    v->sent = true;
    v->attempt = 1;
    v->due_ms = now + w->redelivery_base_ms;
    env_notify(w, v);
}

void wacp_envelope_flush(struct wacp *w, struct wacp_ws *ws)
{
    if (!takes_delivery(ws->state) || !ws->queued)
        return;
    uint64_t now = wacp_core_now_ms();
    for (size_t i = 0; i < w->n_env; i++) {
        struct wacp_env *v = w->env[i];
        if (v->state != ENV_VALIDATED || v->sent || v->gated || v->undeliverable ||
            strcmp(v->to, ws->id))
            continue;
        first_attempt(w, v, now);
    }
    ws->queued = 0;
}

static int undeliverable(struct wacp *w, struct wacp_env *v, const char *reason)
{
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "envelope_id", v->id);
    wacp_core_add_str(b, "from", v->from);
    wacp_core_add_str(b, "to", v->to);
    wacp_core_add_str(b, "reason", reason);
    cJSON_AddNumberToObject(b, "attempts", v->attempt);
    int r = wacp_core_rec(w, v->to, "protocol", "envelope_undeliverable", b);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    v->undeliverable = true;
    struct wacp_ws *to = wacp_tree_find(w, v->to);
    if (to && to->inbox)
        to->inbox--;
    /* The sender learns it (envelope spec 9): a failed signal about the envelope. */
    struct wacp_ws *from = wacp_tree_find(w, v->from);
    if (to && from && (WS_BIT(from->state) & WS_LIVE_MASK)) {
        char sid[WACP_ID_LEN];
        return wacp_signal_emit(w, to, "protocol", "failed", reason, v->id, from, false, sid);
    }
    return 0;
}

void wacp_envelope_drop_for(struct wacp *w, struct wacp_ws *ws)
{
    for (size_t i = 0; i < w->n_env; i++) {
        struct wacp_env *v = w->env[i];
        if (v->state == ENV_VALIDATED && !v->undeliverable && !strcmp(v->to, ws->id))
            undeliverable(w, v, "target_terminal");
    }
    ws->inbox = 0;
    ws->queued = 0;
}

static struct wacp_env *env_alloc(const char *from, const char *to, const char *type,
                                  const cJSON *payload)
{
    struct wacp_env *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    wacp_core_new_id("env", v->id);
    snprintf(v->from, sizeof(v->from), "%s", from);
    snprintf(v->to, sizeof(v->to), "%s", to);
    v->type = strdup(type);
    v->payload = payload ? cJSON_PrintUnformatted(payload) : strdup("null");
    v->priority = "normal";
    v->origin = "agent";
    v->state = ENV_CREATED;
    v->timestamp_ms = wacp_core_wall_ms();
    if (!v->type || !v->payload) {
        wacp_envelope_free(v);
        return NULL;
    }
    return v;
}

static cJSON *created_body(const struct wacp_env *v, const char *originator)
{
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "envelope_id", v->id);
    wacp_core_add_str(b, "from", v->from);
    wacp_core_add_str(b, "to", v->to);
    wacp_core_add_str(b, "type", v->type);
    wacp_core_add_str(b, "priority", v->priority);
    wacp_core_add_str(b, "in_reply_to", v->in_reply_to);
    wacp_core_add_str(b, "origin", v->origin);
    wacp_core_add_str(b, "originator", originator);
    cJSON_AddNumberToObject(b, "timestamp", (double)v->timestamp_ms);
    /* The payload is in the trail so that an envelope in flight when the supervisor died can be
     * delivered again by `corral run --resume` (recovery spec 3.3): the trail is its only copy.
     * One too large for a trail entry's body is named by its hash only, and a resume records
     * it undeliverable (the sender is told) rather than deliver what it cannot rebuild. */
    size_t len = v->payload ? strlen(v->payload) : 0;
    cJSON *pl = len <= WACP_TRAIL_PAYLOAD_MAX && v->payload ? cJSON_Parse(v->payload) : NULL;
    if (len > WACP_TRAIL_PAYLOAD_MAX) {
        char hex[WACP_HASH_HEX];
        wacp_files_hash_hex(v->payload, len, hex);
        wacp_core_add_str(b, "payload_blake2b", hex);
        cJSON_AddNumberToObject(b, "payload_bytes", (double)len);
    } else
        cJSON_AddItemToObject(b, "payload", pl ? pl : cJSON_CreateNull());
    return b;
}

/* The envelope_delivery gate (highway spec 2.2): the envelope waits before the inbox. */
static void deliver_or_queue(struct wacp *w, struct wacp_env *v, struct wacp_ws *to)
{
    /* Channel order: nothing queued before it, so it goes now; else it waits its turn. */
    if (takes_delivery(to->state) && !to->queued)
        first_attempt(w, v, wacp_core_now_ms());
    else
        to->queued++;
}

static void on_delivery_gate(void *data, const struct highway_gate *g, enum highway_action a,
                             const cJSON *mods)
{
    struct wacp *w = data;
    const cJSON *sid = cJSON_GetObjectItemCaseSensitive(g->subject, "envelope_id");
    struct wacp_env *v = cJSON_IsString(sid) ? env_find(w, sid->valuestring) : NULL;
    struct wacp_ws *to = v ? wacp_tree_find(w, v->to) : NULL;
    if (!v || !v->gated || v->state != ENV_VALIDATED || v->undeliverable || !to)
        return;
    v->gated = false;
    if (a == HIGHWAY_APPROVE || a == HIGHWAY_MODIFY) {
        const cJSON *np = cJSON_GetObjectItemCaseSensitive(mods, "payload");
        if (a == HIGHWAY_MODIFY && np) {
            char *c = cJSON_PrintUnformatted(np);
            if (c) {
                free(v->payload);
                v->payload = c;
                wacp_envelope_seal(w, v); /* the supervisor vouches for the person's change */
            }
        }
        deliver_or_queue(w, v, to);
        return;
    }
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "envelope_id", v->id);
    wacp_core_add_str(b, "from", v->from);
    wacp_core_add_str(b, "to", v->to);
    wacp_core_add_str(b, "type", v->type);
    wacp_core_add_str(b, "reason", a == HIGHWAY_ESCALATE ? "gate_escalated" : "gate_rejected_by_human");
    if (wacp_core_rec(w, v->to, g->actor, "envelope_rejected", b) == 0) {
        v->state = ENV_REJECTED;
        if (to->inbox)
            to->inbox--;
    }
    cJSON_Delete(b);
}

int wacp_envelope_gate_restore(struct wacp *w, struct wacp_env *v, struct highway_gate_req *r,
                               const char *id, uint64_t deadline_ms)
{
    struct wacp_ws *to = wacp_tree_find(w, v->to), *from = wacp_tree_find(w, v->from);
    cJSON *s = env_json(v);
    r->subject = s;
    r->subject_id = v->id;
    r->workspace = v->to;
    r->requester = from ? from->id : NULL;
    r->task_ref = to ? to->task : NULL;
    r->graph_ref = w->graph;
    r->fn = on_delivery_gate;
    r->fn_data = w;
    struct highway_gate *g;
    int rc = highway_gate_restore(w->hw, r, id, deadline_ms, &g);
    cJSON_Delete(s);
    if (rc == 1)
        v->gated = true;
    return rc < 0 ? rc : 0;
}

/* 1: held by the gate; 0: deliver now. */
static int delivery_gate(struct wacp *w, struct wacp_env *v, struct wacp_ws *to)
{
    double timeout;
    enum policy_fallback fb;
    /* The runtime's own and a person's own envelopes are not held for a person. */
    if (!strcmp(v->from, "system") || !strcmp(v->origin, "human") ||
        !wacp_gate_rule(w, POLICY_GATE_ENVELOPE_DELIVERY, &timeout, &fb))
        return 0;
    struct wacp_ws *from = wacp_tree_find(w, v->from);
    cJSON *s = env_json(v);
    struct highway_gate_req r = {
        .type = POLICY_GATE_ENVELOPE_DELIVERY,
        .subject = s,
        .subject_id = v->id,
        .workspace = to->id,
        .requester = from ? from->id : NULL,
        .task_ref = to->task,
        .graph_ref = w->graph,
        .timeout = timeout,
        .fallback = fb,
        .by_coordinator = from && wacp_tree_is_coordinator(from),
        .fn = on_delivery_gate,
        .fn_data = w,
        .now_ms = wacp_core_now_ms(),
        .wall_ms = wacp_core_wall_ms(),
    };
    struct highway_gate *g;
    int rc = highway_gate_open(w->hw, &r, &g);
    cJSON_Delete(s);
    if (rc == 1)
        v->gated = true;
    return rc == 1;
}

static int env_push(struct wacp *w, struct wacp_env *v, struct wacp_ws *to)
{
    if (!wacp_core_grow((void **)&w->env, &w->cap_env, w->n_env + 1, sizeof(*w->env)) ||
        wacp_envelope_seal(w, v) < 0)
        return -ENOMEM;
    v->state = ENV_VALIDATED;
    w->env[w->n_env++] = v;
    to->inbox++;
    w->sum.envelopes++;
    if (delivery_gate(w, v, to) == 1)
        return 0;
    deliver_or_queue(w, v, to);
    return 0;
}

int wacp_envelope_send_directive(struct wacp *w, const char *from, struct wacp_ws *to,
                                 const cJSON *payload, const char *origin, char id_out[WACP_ID_LEN])
{
    struct wacp_env *v = env_alloc(from, to->id, "directive", payload);
    if (!v)
        return -ENOMEM;
    v->origin = !strcmp(origin, "human") ? "human" : "agent";
    cJSON *b = created_body(v, to->originator);
    int r = wacp_core_rec(w, from && strcmp(from, "system") ? from : to->id,
                          strcmp(from, "system") ? "protocol" : "system", "envelope_created", b);
    cJSON_Delete(b);
    if (r < 0 || (r = env_push(w, v, to)) < 0) {
        wacp_envelope_free(v);
        return r;
    }
    snprintf(id_out, WACP_ID_LEN, "%s", v->id);
    return 0;
}

/* Records a rejection with its reason (envelope spec 9, closed set) and fails E. */
static int reject(struct wacp *w, struct wacp_ws *c, const char *id, const char *to, const char *type,
                  const char *reason, struct wacp_err *e, int rpc, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));
static int reject(struct wacp *w, struct wacp_ws *c, const char *id, const char *to, const char *type,
                  const char *reason, struct wacp_err *e, int rpc, const char *fmt, ...)
{
    e->rpc_code = rpc;
    snprintf(e->code, sizeof(e->code), "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "envelope_id", id);
    wacp_core_add_str(b, "from", c->id);
    wacp_core_add_str(b, "to", to);
    wacp_core_add_str(b, "type", type);
    wacp_core_add_str(b, "reason", reason);
    cJSON_AddNumberToObject(b, "timestamp", (double)wacp_core_wall_ms());
    int r = wacp_core_rec(w, c->id, c->role, "envelope_rejected", b);
    cJSON_Delete(b);
    w->sum.denials++;
    return r < 0 ? wacp_core_trail_err(e) : -1;
}

/* A right C holds to TO: a send right first, so a send-once right is kept for when it is all. */
static struct wacp_right *right_to(struct wacp *w, const struct wacp_ws *c, const char *to)
{
    struct wacp_right *once = NULL;
    for (size_t i = 0; i < w->n_rights; i++) {
        struct wacp_right *r = &w->rights[i];
        if (!r->live || strcmp(r->holder, c->id) || strcmp(r->target, to) || r->kind == RIGHT_RECEIVE)
            continue;
        if (r->kind == RIGHT_SEND)
            return r;
        if (!once)
            once = r;
    }
    return once;
}

int wacp_envelope_method_send(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                              struct wacp_err *e)
{
    static const char M[] = "wacp/envelope.send";
    const char *to = cJSON_GetObjectItemCaseSensitive(p, "to")->valuestring;
    const char *type = cJSON_GetObjectItemCaseSensitive(p, "type")->valuestring;
    const cJSON *payload = cJSON_GetObjectItemCaseSensitive(p, "payload");
    const cJSON *irt = cJSON_GetObjectItemCaseSensitive(p, "in_reply_to");
    const cJSON *pri = cJSON_GetObjectItemCaseSensitive(p, "priority");
    const cJSON *rights = cJSON_GetObjectItemCaseSensitive(p, "rights");
    char id[WACP_ID_LEN];
    wacp_core_new_id("env", id); /* consumed even when rejected (envelope spec 9) */

    /* Structure: sizes, enums, references that exist. */
    char *txt = cJSON_PrintUnformatted(payload);
    size_t plen = txt ? strlen(txt) : SIZE_MAX;
    free(txt);
    if (plen > w->max_payload)
        return reject(w, c, id, to, type, "invalid_structure", e, -32602,
                      "the payload is larger than the limit of one envelope%s", "");
    if (!wacp_core_hold(w, plen))
        return reject(w, c, id, to, type, "memory_limit", e, WACP_E_LIMIT,
                      "the run keeps at most %llu bytes of payloads and has no room for this one",
                      (unsigned long long)w->max_payload_total);
    if (strlen(type) == 0 || strlen(type) > 64)
        return reject(w, c, id, to, type, "invalid_structure", e, -32602,
                      "type must be 1-64 characters%s", "");
    const char *priority = "normal";
    if (pri) {
        static const char *const prios[] = {"normal", "urgent", "blocking"};
        priority = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(prios); i++)
            if (!strcmp(pri->valuestring, prios[i]))
                priority = prios[i];
        if (!priority)
            return reject(w, c, id, to, type, "invalid_structure", e, -32602,
                          "priority must be normal, urgent or blocking, not '%.40s'", pri->valuestring);
    }
    if (cJSON_IsString(irt)) {
        const struct wacp_env *o = env_find(w, irt->valuestring);
        if (!o || (strcmp(o->to, c->id) && strcmp(o->from, c->id)))
            return reject(w, c, id, to, type, "invalid_structure", e, -32602,
                          "in_reply_to names no envelope you sent or received: '%.80s'",
                          irt->valuestring);
    }
    size_t n_tr = rights ? (size_t)cJSON_GetArraySize(rights) : 0;
    if (n_tr > 16)
        return reject(w, c, id, to, type, "invalid_structure", e, -32602,
                      "an envelope carries at most 16 rights%s", "");
    struct wacp_ws *t = wacp_tree_find(w, to);
    if (!t)
        return reject(w, c, id, to, type, "target_not_found", e, WACP_E_NOT_FOUND,
                      "no workspace '%.80s'", to);
    if (!type_registered(w, type))
        return reject(w, c, id, to, type, "invalid_type", e, -32602,
                      "envelope type '%.64s' is not registered (directive, feedback, query, or the "
                      "policy's envelope_types)",
                      type);
    struct wacp_right *right = right_to(w, c, to);
    if (!right)
        return reject(w, c, id, to, type, "no_send_right", e, WACP_E_DENIED,
                      "you hold no send right to workspace %s", to);
    if (!wacp_envelope_channel_matrix(w, c, t, type))
        return reject(w, c, id, to, type, "permission_denied", e, WACP_E_DENIED,
                      "the permission matrix does not let your role send this type to %s", t->role);
    if (!takes_delivery(t->state) && t->state != WS_SUSPENDED && t->state != WS_MIGRATING)
        return reject(w, c, id, to, type, "target_terminal", e, WACP_E_STATE, "workspace %s is terminal",
                      to);
    if (t->state == WS_INTEGRATING || t->state == WS_CONFLICTED)
        return reject(w, c, id, to, type, "target_terminal", e, WACP_E_STATE,
                      "workspace %s is integrating: its inbox is sealed", to);
    /* The rights to transfer: held by the sender, live, send or send-once, not the one spent. */
    struct wacp_right *tr[16];
    for (size_t i = 0; i < n_tr; i++) {
        const cJSON *x = cJSON_GetArrayItem(rights, (int)i);
        struct wacp_right *r = cJSON_IsString(x) ? right_find(w, x->valuestring) : NULL;
        if (!r || !r->live || strcmp(r->holder, c->id) || r->kind == RIGHT_RECEIVE ||
            (right->kind == RIGHT_SEND_ONCE && r == right))
            return reject(w, c, id, to, type, "invalid_structure", e, -32602,
                          "rights: '%.80s' is not a send right you hold and may transfer",
                          cJSON_IsString(x) ? x->valuestring : "(not a string)");
        for (size_t k = 0; k < i; k++)
            if (tr[k] == r)
                return reject(w, c, id, to, type, "invalid_structure", e, -32602,
                              "rights: '%.80s' is listed twice", x->valuestring);
        tr[i] = r;
    }
    if (t->inbox >= w->max_envelopes || w->n_env >= WACP_MAX_ENVELOPES_TOTAL)
        return wacp_core_deny(w, c, M, e, WACP_E_LIMIT, "limit",
                              "workspace %s has %zu envelopes not yet acknowledged, its limit", to,
                              t->inbox);

    struct wacp_env *v = env_alloc(c->id, to, type, payload);
    if (!v)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    snprintf(v->id, sizeof(v->id), "%s", id);
    v->priority = priority;
    if (cJSON_IsString(irt))
        snprintf(v->in_reply_to, sizeof(v->in_reply_to), "%s", irt->valuestring);
    v->rights = cJSON_CreateArray();
    cJSON *b = created_body(v, c->originator);
    int r = wacp_core_rec(w, c->id, c->role, "envelope_created", b);
    cJSON_Delete(b);
    if (r < 0 || !v->rights) {
        wacp_envelope_free(v);
        return wacp_core_trail_err(e);
    }
    if (right->kind == RIGHT_SEND_ONCE) {
        b = wacp_core_obj();
        wacp_core_add_str(b, "right_id", right->id);
        wacp_core_add_str(b, "holder", right->holder);
        wacp_core_add_str(b, "target", right->target);
        wacp_core_add_str(b, "via_envelope", v->id);
        r = wacp_core_rec(w, c->id, "protocol", "port_right_consumed", b);
        cJSON_Delete(b);
        if (r < 0) {
            wacp_envelope_free(v);
            return wacp_core_trail_err(e);
        }
        right->live = false;
    }
    for (size_t i = 0; i < n_tr; i++) {
        b = wacp_core_obj();
        wacp_core_add_str(b, "right_id", tr[i]->id);
        wacp_core_add_str(b, "right_type", right_kind_name(tr[i]->kind));
        wacp_core_add_str(b, "from_holder", c->id);
        wacp_core_add_str(b, "to_holder", to);
        wacp_core_add_str(b, "target", tr[i]->target);
        wacp_core_add_str(b, "via_envelope", v->id);
        r = wacp_core_rec(w, to, "protocol", "port_right_transferred", b);
        cJSON_Delete(b);
        if (r < 0) {
            wacp_envelope_free(v);
            return wacp_core_trail_err(e);
        }
        snprintf(tr[i]->holder, sizeof(tr[i]->holder), "%s", to);
        cJSON_AddItemToArray(v->rights, right_json(tr[i]));
    }
    if (env_push(w, v, t) < 0) {
        wacp_envelope_free(v);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "envelope_id", v->id);
    wacp_core_add_str(*res, "state", wacp_envelope_state_name(v->state));
    return 0;
}

int wacp_envelope_method_ack(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                             struct wacp_err *e)
{
    static const char M[] = "wacp/envelope.ack";
    const char *id = cJSON_GetObjectItemCaseSensitive(p, "envelope_id")->valuestring;
    struct wacp_env *v = env_find(w, id);
    /* Only the receiver acks, and only what it was given: anything else is not found. */
    if (!v || strcmp(v->to, c->id) || !v->sent)
        return wacp_core_deny(w, c, M, e, WACP_E_NOT_FOUND, "not_found",
                              "no envelope '%.80s' delivered to you", id);
    if (v->state == ENV_ACKNOWLEDGED) {
        *res = wacp_core_obj();
        wacp_core_add_str(*res, "envelope_id", v->id);
        wacp_core_add_str(*res, "state", wacp_envelope_state_name(v->state));
        cJSON_AddBoolToObject(*res, "duplicate", true);
        return 0;
    }
    if (v->undeliverable)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "undeliverable",
                              "envelope %s was recorded undeliverable after %u attempts", v->id,
                              v->attempt);
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "envelope_id", v->id);
    wacp_core_add_str(b, "from", v->from);
    wacp_core_add_str(b, "to", v->to);
    cJSON_AddNumberToObject(b, "delivered_at", (double)wacp_core_wall_ms());
    cJSON_AddNumberToObject(b, "attempt", v->attempt);
    int r = wacp_core_rec(w, c->id, "protocol", "envelope_delivered", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_core_trail_err(e);
    v->state = ENV_DELIVERED;
    /* Delivery and acknowledgment are one step (envelope spec 5): the sender gets the
     * acknowledged signal with ref = the envelope. */
    struct wacp_ws *from = wacp_tree_find(w, v->from);
    char sid[WACP_ID_LEN];
    if (wacp_signal_emit(w, c, "protocol", "acknowledged", NULL, v->id,
                         from && (WS_BIT(from->state) & WS_LIVE_MASK) ? from : NULL, false, sid) < 0)
        return wacp_core_trail_err(e);
    v->state = ENV_ACKNOWLEDGED;
    if (c->inbox)
        c->inbox--;
    if (c->state == WS_IDLE && wacp_tree_set_state(w, c, WS_ACTIVE, "protocol", "first_envelope") < 0)
        return wacp_core_trail_err(e);
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "envelope_id", v->id);
    wacp_core_add_str(*res, "state", wacp_envelope_state_name(v->state));
    cJSON_AddBoolToObject(*res, "duplicate", false);
    return 0;
}

void wacp_envelope_tick(struct wacp *w, uint64_t now)
{
    for (size_t i = 0; i < w->n_env; i++) {
        struct wacp_env *v = w->env[i];
        if (v->state != ENV_VALIDATED || !v->sent || v->undeliverable || now < v->due_ms)
            continue;
        struct wacp_ws *to = wacp_tree_find(w, v->to);
        if (!to || !takes_delivery(to->state))
            continue; /* frozen: waits for resume (terminal ones were dropped) */
        if (v->attempt > WACP_REDELIVERIES) {
            undeliverable(w, v, "delivery_exhausted");
            continue;
        }
        cJSON *b = wacp_core_obj();
        wacp_core_add_str(b, "envelope_id", v->id);
        wacp_core_add_str(b, "from", v->from);
        wacp_core_add_str(b, "to", v->to);
        cJSON_AddNumberToObject(b, "attempt", v->attempt + 1);
        cJSON_AddNumberToObject(b, "timestamp", (double)wacp_core_wall_ms());
        int r = wacp_core_rec(w, v->to, "protocol", "envelope_redelivered", b);
        cJSON_Delete(b);
        if (r < 0)
            return;
        v->attempt++;
        v->due_ms = now + (uint64_t)v->attempt * w->redelivery_base_ms; /* linear backoff */
        env_notify(w, v);
    }
}

uint64_t wacp_envelope_next_deadline(const struct wacp *w)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < w->n_env; i++) {
        const struct wacp_env *v = w->env[i];
        if (v->state != ENV_VALIDATED || !v->sent || v->undeliverable || v->due_ms >= m)
            continue;
        const struct wacp_ws *to = wacp_tree_find(w, v->to);
        if (to && takes_delivery(to->state))
            m = v->due_ms;
    }
    return m;
}

/* ---- rights */

int wacp_envelope_method_rights_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                     struct wacp_err *e)
{
    (void)p;
    *res = wacp_core_obj();
    cJSON *a = cJSON_AddArrayToObject(*res, "rights");
    if (!a)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    bool all = wacp_tree_is_coordinator(c);
    for (size_t i = 0; i < w->n_rights; i++) {
        const struct wacp_right *r = &w->rights[i];
        if (r->live && (all || !strcmp(r->holder, c->id)))
            cJSON_AddItemToArray(a, right_json(r));
    }
    return 0;
}

int wacp_envelope_method_rights_grant(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                      struct wacp_err *e)
{
    static const char M[] = "wacp/rights.grant";
    if (!wacp_tree_is_coordinator(c))
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "rights are created by the coordinator only");
    const char *holder = cJSON_GetObjectItemCaseSensitive(p, "holder")->valuestring;
    const char *target = cJSON_GetObjectItemCaseSensitive(p, "target")->valuestring;
    const char *kind = cJSON_GetObjectItemCaseSensitive(p, "kind")->valuestring;
    struct wacp_ws *h = wacp_tree_find(w, holder), *t = wacp_tree_find(w, target);
    if (!h || !t)
        return wacp_core_fail(e, WACP_E_NOT_FOUND, "not_found", "no workspace '%.80s'",
                              h ? target : holder);
    enum right_kind k;
    if (!strcmp(kind, "send"))
        k = RIGHT_SEND;
    else if (!strcmp(kind, "send_once"))
        k = RIGHT_SEND_ONCE;
    else
        return wacp_core_fail(
            e, -32602, "invalid_params",
            "kind must be \"send\" or \"send_once\" (receive rights are never granted)");
    if (h == t)
        return wacp_core_fail(e, -32602, "invalid_params", "a workspace needs no right to itself");
    if (!(WS_BIT(h->state) & WS_LIVE_MASK) || !(WS_BIT(t->state) & WS_LIVE_MASK))
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "target_terminal",
                              "rights are granted between live workspaces");
    if (w->n_rights >= WACP_MAX_RIGHTS)
        return wacp_core_deny(w, c, M, e, WACP_E_LIMIT, "limit", "this run holds too many rights");
    char rid[WACP_ID_LEN];
    int r = wacp_envelope_right_add(w, k, holder, target, c->role, rid);
    if (r == -ENOMEM)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    if (r < 0)
        return wacp_core_trail_err(e);
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "right_id", rid);
    return 0;
}

int wacp_envelope_method_rights_revoke(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                       struct wacp_err *e)
{
    static const char M[] = "wacp/rights.revoke";
    if (!wacp_tree_is_coordinator(c))
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "rights are revoked by the coordinator only");
    const char *id = cJSON_GetObjectItemCaseSensitive(p, "right_id")->valuestring;
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(p, "reason");
    struct wacp_right *r = right_find(w, id);
    if (!r || !r->live)
        return wacp_core_fail(e, WACP_E_NOT_FOUND, "not_found", "no live right '%.80s'", id);
    if (r->kind == RIGHT_RECEIVE)
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "a workspace's receive right to its own inbox is never revoked");
    cJSON *b = right_json(r);
    cJSON_AddStringToObject(b, "right_type", right_kind_name(r->kind));
    wacp_core_add_str(b, "revoked_by", c->role);
    wacp_core_add_str(b, "reason", rj ? rj->valuestring : NULL);
    int rc = wacp_core_rec(w, r->holder, c->role, "port_right_revoked", b);
    cJSON_Delete(b);
    if (rc < 0)
        return wacp_core_trail_err(e);
    r->live = false;
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "right_id", r->id);
    cJSON_AddBoolToObject(*res, "revoked", true);
    return 0;
}

/* ---- a person's envelope (highway spec 2.3): the role send rules are the one thing skipped */

static int injection_rec(struct wacp *w, const char *user, const char *id, const char *to,
                         const char *type, const char *status, const char *reason)
{
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "envelope_id", id);
    wacp_core_add_str(b, "actor", user);
    wacp_core_add_str(b, "to", to);
    wacp_core_add_str(b, "type", type);
    wacp_core_add_str(b, "status", status);
    if (reason)
        wacp_core_add_str(b, "reason", reason);
    struct wacp_ws *t = to ? wacp_tree_find(w, to) : NULL;
    int r = wacp_core_rec(w, t ? t->id : NULL, user, "human_injection", b);
    cJSON_Delete(b);
    return r;
}

static int inject_refused(struct wacp *w, const char *user, const char *id, const char *to,
                          const char *type, const char *reason, struct wacp_err *e, int rpc,
                          const char *msg)
{
    if (injection_rec(w, user, id, to, type, "rejected", reason) < 0)
        return wacp_core_trail_err(e);
    w->sum.denials++;
    return wacp_core_fail(e, rpc, reason, "%s", msg);
}

int wacp_envelope_inject(struct wacp *w, const char *user, const cJSON *p, cJSON **res,
                         struct wacp_err *e)
{
    const cJSON *tj = cJSON_GetObjectItemCaseSensitive(p, "to");
    const cJSON *yj = cJSON_GetObjectItemCaseSensitive(p, "type");
    const cJSON *payload = cJSON_GetObjectItemCaseSensitive(p, "payload");
    const cJSON *irt = cJSON_GetObjectItemCaseSensitive(p, "in_reply_to");
    const cJSON *pri = cJSON_GetObjectItemCaseSensitive(p, "priority");
    if (!cJSON_IsString(tj) || !cJSON_IsString(yj) || !payload || strlen(tj->valuestring) >= WACP_ID_LEN)
        return wacp_core_fail(e, -32602, "invalid_params",
                              "inject takes {to, type, payload, in_reply_to?, priority?}");
    const char *to = tj->valuestring, *type = yj->valuestring;
    char id[WACP_ID_LEN];
    wacp_core_new_id("env", id);
    char *txt = cJSON_PrintUnformatted(payload);
    size_t plen = txt ? strlen(txt) : SIZE_MAX;
    free(txt);
    if (plen > w->max_payload || !type[0] || strlen(type) > 64)
        return inject_refused(w, user, id, to, type, "invalid_structure", e, -32602,
                              "the type is 1-64 characters and the payload within the envelope limit");
    const char *priority = "normal";
    if (cJSON_IsString(pri)) {
        static const char *const prios[] = {"normal", "urgent", "blocking"};
        priority = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(prios); i++)
            if (!strcmp(pri->valuestring, prios[i]))
                priority = prios[i];
        if (!priority)
            return inject_refused(w, user, id, to, type, "invalid_structure", e, -32602,
                                  "priority is normal, urgent or blocking");
    }
    if (cJSON_IsString(irt) && !env_find(w, irt->valuestring))
        return inject_refused(w, user, id, to, type, "invalid_structure", e, -32602,
                              "in_reply_to names no envelope");
    struct wacp_ws *t = wacp_tree_find(w, to);
    if (!t)
        return inject_refused(w, user, id, to, type, "target_not_found", e, WACP_E_NOT_FOUND,
                              "no such workspace");
    if (!type_registered(w, type))
        return inject_refused(w, user, id, to, type, "invalid_type", e, -32602,
                              "that envelope type is not registered (directive, feedback, query, or the "
                              "policy's envelope_types)");
    if (!(WS_BIT(t->state) & WS_LIVE_MASK))
        return inject_refused(
            w, user, id, to, type, "workspace_terminal", e, WACP_E_STATE,
            "the workspace is closed or failed: inject into the coordinator's instead");
    if (t->state == WS_INTEGRATING || t->state == WS_CONFLICTED)
        return inject_refused(w, user, id, to, type, "workspace_sealed", e, WACP_E_STATE,
                              "the workspace is being integrated: its inbox is sealed");
    if (t->inbox >= w->max_envelopes || w->n_env >= WACP_MAX_ENVELOPES_TOTAL)
        return inject_refused(w, user, id, to, type, "limit", e, WACP_E_LIMIT,
                              "the workspace's inbox is full");
    struct wacp_env *v = env_alloc("human", to, type, payload);
    if (!v || !(v->originator = strdup(user))) {
        wacp_envelope_free(v);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    snprintf(v->id, sizeof(v->id), "%s", id);
    v->priority = priority;
    v->origin = "human";
    if (cJSON_IsString(irt))
        snprintf(v->in_reply_to, sizeof(v->in_reply_to), "%s", irt->valuestring);
    cJSON *b = created_body(v, user);
    int r = wacp_core_rec(w, t->id, user, "envelope_created", b);
    cJSON_Delete(b);
    if (r < 0 ||
        injection_rec(w, user, id, to, type,
                      t->state == WS_SUSPENDED || t->state == WS_MIGRATING ? "queued" : "delivered",
                      NULL) < 0) {
        wacp_envelope_free(v);
        return wacp_core_trail_err(e);
    }
    if (env_push(w, v, t) < 0) {
        wacp_envelope_free(v);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "envelope_id", v->id);
    wacp_core_add_str(*res, "status",
                      t->state == WS_SUSPENDED || t->state == WS_MIGRATING ? "queued" : "delivered");
    wacp_core_add_str(*res, "origin", "human");
    wacp_core_add_str(*res, "originator", user);
    return 0;
}
