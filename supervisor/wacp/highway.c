/* supervisor/wacp/highway.c: see highway.h. Gates and escalations live in two arrays in trigger
 * order (so FIFO is the array order); resolved ones move to a short history for `gate show`. */
#include "supervisor/wacp/highway.h"

#include "common/util.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_MAX 4096

struct guard {
    int type;
    char subject_id[72];
};

struct highway {
    struct highway_hooks h;
    struct highway_gate **gates; /* pending then resolved, each in trigger order */
    size_t n_gates, cap_gates;
    struct highway_escalation **escs;
    size_t n_escs, cap_escs;
    struct guard *guard;
    size_t n_guard, cap_guard;
};

static const char *const type_names[HIGHWAY_NTYPES] = {
    "task_approval",       "workspace_create", "envelope_delivery", "integration",
    "conflict_resolution", "workspace_abort",  "tool_call"};

const char *highway_type_name(int type)
{
    return type >= 0 && type < HIGHWAY_NTYPES ? type_names[type] : "?";
}

int highway_type_parse(const char *name)
{
    for (int i = 0; name && i < HIGHWAY_NTYPES; i++)
        if (!strcmp(name, type_names[i]))
            return i;
    return -1;
}

const char *highway_action_name(enum highway_action a)
{
    static const char *const n[] = {"approve", "reject", "modify", "escalate_to_coordinator"};
    return (unsigned)a < ARRAY_SIZE(n) ? n[a] : "?";
}

static const char *const response_names[] = {"envelope", "abort", "delegation"};

const char *highway_response_name(enum highway_response r)
{
    return (unsigned)r < ARRAY_SIZE(response_names) ? response_names[r] : "?";
}

int highway_response_parse(const char *name)
{
    for (size_t i = 0; name && i < ARRAY_SIZE(response_names); i++)
        if (!strcmp(name, response_names[i]))
            return (int)i;
    return -1;
}

static void new_id(const char *prefix, char out[HIGHWAY_ID_LEN])
{
    unsigned char rnd[16];
    char hex[33];
    randombytes_buf(rnd, sizeof(rnd));
    sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
    snprintf(out, HIGHWAY_ID_LEN, "%s-%s", prefix, hex);
}

static void copy_id(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static int rec(struct highway *h, const char *ws, const char *actor, const char *type, cJSON *body)
{
    int r = body ? h->h.record(h->h.data, ws && ws[0] ? ws : NULL, actor, type, body) : -ENOMEM;
    cJSON_Delete(body);
    return r < 0 ? (r == -ENOMEM ? r : -EIO) : 0;
}

static bool grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*v, nc * elem);
    if (!p)
        return false;
    *v = p;
    *cap = nc;
    return true;
}

int highway_new(const struct highway_hooks *hooks, struct highway **out)
{
    struct highway *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->h = *hooks;
    *out = h;
    return 0;
}

static void gate_free(struct highway_gate *g)
{
    if (g)
        cJSON_Delete(g->subject);
    free(g);
}

static void esc_free(struct highway_escalation *x)
{
    if (x)
        free(x->reason);
    free(x);
}

void highway_free(struct highway *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n_gates; i++) {
        if (h->gates[i]->pending && h->gates[i]->drop)
            h->gates[i]->drop(h->gates[i]->fn_data);
        gate_free(h->gates[i]);
    }
    for (size_t i = 0; i < h->n_escs; i++)
        esc_free(h->escs[i]);
    free(h->gates);
    free(h->escs);
    free(h->guard);
    free(h);
}

size_t highway_pending(const struct highway *h)
{
    size_t n = 0;
    for (size_t i = 0; i < h->n_gates; i++)
        n += h->gates[i]->pending;
    return n;
}

/* ---- gates ---------------------------------------------------------------------------------- */

static bool guarded(const struct highway *h, int type, const char *sid)
{
    for (size_t i = 0; i < h->n_guard; i++)
        if (h->guard[i].type == type && !strcmp(h->guard[i].subject_id, sid))
            return true;
    return false;
}

static void guard_add(struct highway *h, int type, const char *sid)
{
    if (guarded(h, type, sid))
        return;
    if (h->n_guard == GUARD_MAX) { /* bounded: the oldest key goes */
        memmove(h->guard, h->guard + 1, (GUARD_MAX - 1) * sizeof(*h->guard));
        h->n_guard--;
    }
    if (!grow((void **)&h->guard, &h->cap_guard, h->n_guard, sizeof(*h->guard)))
        return;
    h->guard[h->n_guard].type = type;
    copy_id(h->guard[h->n_guard].subject_id, sizeof(h->guard[0].subject_id), sid);
    h->n_guard++;
}

/* A subject with no id of its own is known by the hash of its canonical text. */
void highway_guard_restore(struct highway *h, int type, const char *subject_id)
{
    if (subject_id && subject_id[0])
        guard_add(h, type, subject_id);
}

void highway_subject_key(const cJSON *subject, char out[72])
{
    char *text = cJSON_PrintUnformatted(subject);
    unsigned char d[16];
    crypto_generichash(d, sizeof(d), (const unsigned char *)(text ? text : ""), text ? strlen(text) : 0,
                       NULL, 0);
    free(text);
    char hex[33];
    sodium_bin2hex(hex, sizeof(hex), d, sizeof(d));
    snprintf(out, 72, "sha:%s", hex);
}

static void drop_old_resolved(struct highway *h)
{
    size_t resolved = 0;
    for (size_t i = 0; i < h->n_gates; i++)
        resolved += !h->gates[i]->pending;
    for (size_t i = 0; resolved > HIGHWAY_KEEP_RESOLVED && i < h->n_gates;) {
        if (h->gates[i]->pending) {
            i++;
            continue;
        }
        gate_free(h->gates[i]);
        memmove(h->gates + i, h->gates + i + 1, (h->n_gates - i - 1) * sizeof(*h->gates));
        h->n_gates--;
        resolved--;
    }
}

/* A pending gate of R, not yet in the list (NULL: too many pending, or out of memory). */
static struct highway_gate *gate_make(struct highway *h, const struct highway_gate_req *r,
                                      const char *sid, size_t pending)
{
    if (pending >= HIGHWAY_MAX_PENDING)
        return NULL;
    drop_old_resolved(h);
    if (!grow((void **)&h->gates, &h->cap_gates, h->n_gates, sizeof(*h->gates)))
        return NULL;
    struct highway_gate *g = calloc(1, sizeof(*g));
    if (!g || !(g->subject = cJSON_Duplicate(r->subject, true))) {
        free(g);
        return NULL;
    }
    g->type = r->type;
    copy_id(g->subject_id, sizeof(g->subject_id), sid);
    copy_id(g->workspace, sizeof(g->workspace), r->workspace);
    copy_id(g->task_ref, sizeof(g->task_ref), r->task_ref);
    copy_id(g->graph_ref, sizeof(g->graph_ref), r->graph_ref);
    copy_id(g->requester, sizeof(g->requester), r->requester);
    g->timestamp_ms = r->wall_ms;
    g->opened_ms = r->now_ms;
    g->timeout = r->timeout > 0 ? r->timeout : 0;
    g->deadline_ms = g->timeout > 0 ? r->now_ms + (uint64_t)(g->timeout * 1000.0) : 0;
    g->fallback = r->fallback;
    g->queue_position = pending;
    g->pending = true;
    g->fn = r->fn;
    g->fn_data = r->fn_data;
    g->drop = r->drop;
    return g;
}

/* Pending gates stay ahead of resolved ones, in trigger order. */
static void gate_insert(struct highway *h, struct highway_gate *g)
{
    size_t at = 0;
    while (at < h->n_gates && h->gates[at]->pending)
        at++;
    memmove(h->gates + at + 1, h->gates + at, (h->n_gates - at) * sizeof(*h->gates));
    h->gates[at] = g;
    h->n_gates++;
}

int highway_gate_open(struct highway *h, const struct highway_gate_req *r, struct highway_gate **out)
{
    char sid[72];
    if (r->subject_id && r->subject_id[0])
        copy_id(sid, sizeof(sid), r->subject_id);
    else
        highway_subject_key(r->subject, sid);
    if (r->by_coordinator && guarded(h, r->type, sid)) {
        /* Section 6.1: it fell through to the coordinator once; its re-trigger is its decision. */
        cJSON *b = cJSON_CreateObject();
        add_str(b, "gate_type", highway_type_name(r->type));
        add_str(b, "subject_id", sid);
        add_str(b, "converted_to", "approve");
        add_str(b, "workspace", r->workspace);
        return rec(h, r->workspace, "protocol", "gate_reentry_blocked", b);
    }
    size_t pending = highway_pending(h);
    struct highway_gate *g = gate_make(h, r, sid, pending);
    if (!g)
        return pending >= HIGHWAY_MAX_PENDING ? -EAGAIN : -ENOMEM;
    new_id("gate", g->id);
    /* The gate event of section 3, all fields; the subject by reference only (section 8), except
     * its id, which names it. */
    cJSON *b = cJSON_CreateObject();
    add_str(b, "gate_id", g->id);
    add_str(b, "gate_type", highway_type_name(g->type));
    add_str(b, "subject_id", g->subject_id);
    add_str(b, "workspace", g->workspace);
    add_str(b, "task_ref", g->task_ref);
    add_str(b, "graph_ref", g->graph_ref);
    cJSON_AddNumberToObject(b, "timestamp", (double)g->timestamp_ms);
    if (g->timeout > 0)
        cJSON_AddNumberToObject(b, "timeout", g->timeout);
    else
        cJSON_AddNullToObject(b, "timeout");
    add_str(b, "fallback", policy_fallback_name(g->fallback));
    cJSON_AddNumberToObject(b, "queue_position", (double)g->queue_position);
    int rc = rec(h, g->workspace, "protocol", "gate_triggered", b);
    if (rc < 0) {
        gate_free(g);
        return rc;
    }
    gate_insert(h, g);
    *out = g;
    return 1;
}

int highway_gate_restore(struct highway *h, const struct highway_gate_req *r, const char *id,
                         uint64_t deadline_ms, struct highway_gate **out)
{
    char sid[72];
    copy_id(sid, sizeof(sid), r->subject_id);
    if (!id || !id[0] || strlen(id) >= HIGHWAY_ID_LEN || highway_gate_find(h, id))
        return -EINVAL;
    size_t pending = highway_pending(h);
    struct highway_gate *g = gate_make(h, r, sid, pending);
    if (!g)
        return pending >= HIGHWAY_MAX_PENDING ? -EAGAIN : -ENOMEM;
    copy_id(g->id, sizeof(g->id), id);
    g->deadline_ms = g->timeout > 0 ? deadline_ms : 0;
    gate_insert(h, g);
    *out = g;
    return 1;
}

struct highway_gate *highway_gate_find(struct highway *h, const char *id)
{
    for (size_t i = 0; id && i < h->n_gates; i++)
        if (!strcmp(h->gates[i]->id, id))
            return h->gates[i];
    return NULL;
}

struct highway_gate *highway_gate_head(struct highway *h)
{
    return h->n_gates && h->gates[0]->pending ? h->gates[0] : NULL;
}

/* The gate leaves the pending part: it goes to the front of the resolved part. */
static void settle(struct highway *h, struct highway_gate *g)
{
    size_t i = 0;
    while (i < h->n_gates && h->gates[i] != g)
        i++;
    size_t last = i;
    while (last + 1 < h->n_gates && h->gates[last + 1]->pending)
        last++;
    memmove(h->gates + i, h->gates + i + 1, (last - i) * sizeof(*h->gates));
    h->gates[last] = g;
    g->pending = false;
}

int highway_gate_resolve(struct highway *h, struct highway_gate *g, enum highway_action a,
                         const cJSON *modifications, const char *actor, const char *reason,
                         uint64_t now_ms)
{
    if (!g)
        return -ENOENT;
    if (!g->pending)
        return -EALREADY;
    bool fallback = !strcmp(actor, "fallback");
    double elapsed = now_ms > g->opened_ms ? (double)(now_ms - g->opened_ms) / 1000.0 : 0;
    if (fallback) {
        cJSON *t = cJSON_CreateObject();
        add_str(t, "gate_id", g->id);
        add_str(t, "gate_type", highway_type_name(g->type));
        add_str(t, "fallback_action", policy_fallback_name(g->fallback));
        cJSON_AddNumberToObject(t, "elapsed", elapsed);
        if (rec(h, g->workspace, "fallback", "gate_timeout", t) < 0)
            return -EIO;
    }
    cJSON *b = cJSON_CreateObject();
    add_str(b, "gate_id", g->id);
    add_str(b, "gate_type", highway_type_name(g->type));
    add_str(b, "action", highway_action_name(a));
    if (a == HIGHWAY_MODIFY && modifications)
        cJSON_AddItemToObject(b, "modifications", cJSON_Duplicate(modifications, true));
    add_str(b, "actor", actor);
    if (reason && reason[0])
        add_str(b, "reason", reason);
    cJSON_AddNumberToObject(b, "elapsed", elapsed);
    if (rec(h, g->workspace, actor, "gate_resolved", b) < 0)
        return -EIO;
    g->action = a;
    copy_id(g->actor, sizeof(g->actor), actor);
    copy_id(g->reason, sizeof(g->reason), reason);
    settle(h, g);
    if (a == HIGHWAY_ESCALATE)
        guard_add(h, g->type, g->subject_id);
    if (g->fn)
        g->fn(g->fn_data, g, a, a == HIGHWAY_MODIFY ? modifications : NULL);
    return 0;
}

static enum highway_action fallback_action(enum policy_fallback f)
{
    switch (f) {
    case POLICY_FALLBACK_APPROVE: return HIGHWAY_APPROVE;
    case POLICY_FALLBACK_ESCALATE: return HIGHWAY_ESCALATE;
    default: return HIGHWAY_REJECT;
    }
}

void highway_invalidate(struct highway *h, const char *workspace, const char *task, uint64_t now_ms)
{
    /* A callback may open or resolve gates: restart the scan after each resolution. */
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < h->n_gates && h->gates[i]->pending; i++) {
            struct highway_gate *g = h->gates[i];
            bool hit = (workspace && workspace[0] &&
                        (!strcmp(g->workspace, workspace) || !strcmp(g->requester, workspace))) ||
                       (task && task[0] && !strcmp(g->task_ref, task));
            if (hit && highway_gate_resolve(h, g, HIGHWAY_REJECT, NULL, "protocol",
                                            "subject_invalidated", now_ms) == 0) {
                again = true;
                break;
            }
        }
    }
}

/* ---- escalations ---------------------------------------------------------------------------- */

/* A pending escalation of R, not yet in the list (NULL: out of memory). */
static struct highway_escalation *esc_make(struct highway *h, const struct highway_esc_req *r,
                                           bool queued)
{
    if (!grow((void **)&h->escs, &h->cap_escs, h->n_escs, sizeof(*h->escs)))
        return NULL;
    struct highway_escalation *x = calloc(1, sizeof(*x));
    if (!x || !(x->reason = strdup(r->reason ? r->reason : ""))) {
        free(x);
        return NULL;
    }
    copy_id(x->id, sizeof(x->id), r->signal_id);
    copy_id(x->workspace, sizeof(x->workspace), r->workspace);
    copy_id(x->owner, sizeof(x->owner), r->owner);
    x->timestamp_ms = r->wall_ms;
    x->opened_ms = r->now_ms;
    x->timeout = r->timeout > 0 ? r->timeout : 0;
    x->deadline_ms = x->timeout > 0 ? r->now_ms + (uint64_t)(x->timeout * 1000.0) : 0;
    x->fallback = r->fallback;
    x->pending = true;
    x->queued = queued;
    x->fn = r->fn;
    x->fn_data = r->fn_data;
    return x;
}

int highway_esc_open(struct highway *h, const struct highway_esc_req *r, struct highway_escalation **out)
{
    const char *st = r->owner_state ? r->owner_state : "active";
    if (!strcmp(st, "deactivated")) {
        cJSON *d = cJSON_CreateObject();
        add_str(d, "user_id", r->owner);
        add_str(d, "capability", "escalation");
        add_str(d, "reason", "user_deactivated");
        add_str(d, "signal_id", r->signal_id);
        int rc = rec(h, r->workspace, "protocol", "capability_denied", d);
        return rc < 0 ? rc : 0;
    }
    /* An agent emitting escalations in a loop fills its own share, not the run's one queue. */
    size_t pending = 0, mine = 0;
    for (size_t i = 0; i < h->n_escs; i++) {
        pending += h->escs[i]->pending;
        mine += h->escs[i]->pending && !strcmp(h->escs[i]->workspace, r->workspace ? r->workspace : "");
    }
    if (pending >= HIGHWAY_MAX_PENDING || mine >= HIGHWAY_MAX_PENDING_PER_WS)
        return -EAGAIN;
    /* suspended, blocked: it waits for them */
    struct highway_escalation *x = esc_make(h, r, strcmp(st, "active") != 0);
    if (!x)
        return -ENOMEM;
    cJSON *b = cJSON_CreateObject();
    add_str(b, "signal_id", x->id);
    add_str(b, "workspace", x->workspace);
    add_str(b, "reason", x->reason);
    add_str(b, "routed_to", x->owner);
    add_str(b, "delivery", x->queued ? "queued" : "delivered");
    int rc = rec(h, x->workspace, "protocol", "escalation_received", b);
    if (rc < 0) {
        esc_free(x);
        return rc;
    }
    h->escs[h->n_escs++] = x;
    *out = x;
    return 1;
}

int highway_esc_restore(struct highway *h, const struct highway_esc_req *r, bool queued,
                        uint64_t deadline_ms, struct highway_escalation **out)
{
    size_t pending = 0;
    for (size_t i = 0; i < h->n_escs; i++)
        pending += h->escs[i]->pending;
    if (!r->signal_id || !r->signal_id[0] || strlen(r->signal_id) >= HIGHWAY_ID_LEN ||
        highway_esc_find(h, r->signal_id))
        return -EINVAL;
    if (pending >= HIGHWAY_MAX_PENDING)
        return -EAGAIN;
    struct highway_escalation *x = esc_make(h, r, queued);
    if (!x)
        return -ENOMEM;
    x->deadline_ms = x->timeout > 0 ? deadline_ms : 0;
    h->escs[h->n_escs++] = x;
    *out = x;
    return 1;
}

struct highway_escalation *highway_esc_find(struct highway *h, const char *id)
{
    for (size_t i = 0; id && i < h->n_escs; i++)
        if (!strcmp(h->escs[i]->id, id))
            return h->escs[i];
    return NULL;
}

static int esc_settle(struct highway *h, struct highway_escalation *x, enum highway_response r,
                      const cJSON *payload, const char *ref, const char *actor, const char *reason)
{
    cJSON *b = cJSON_CreateObject();
    add_str(b, "signal_id", x->id);
    add_str(b, "workspace", x->workspace);
    add_str(b, "actor", actor);
    add_str(b, "response_type", highway_response_name(r));
    add_str(b, "response_ref", ref);
    if (reason)
        add_str(b, "reason", reason);
    if (rec(h, x->workspace, actor, "escalation_resolved", b) < 0)
        return -EIO;
    x->pending = false;
    x->response = r;
    copy_id(x->actor, sizeof(x->actor), actor);
    copy_id(x->response_ref, sizeof(x->response_ref), ref);
    if (x->fn)
        x->fn(x->fn_data, x, r, payload);
    return 0;
}

int highway_esc_respond(struct highway *h, struct highway_escalation *x, enum highway_response r,
                        const cJSON *payload, const char *ref, const char *actor, uint64_t now_ms)
{
    (void)now_ms;
    if (!x)
        return -ENOENT;
    if (!x->pending)
        return -EALREADY;
    return esc_settle(h, x, r, payload, ref, actor, NULL);
}

void highway_esc_owner_active(struct highway *h, const char *owner)
{
    for (size_t i = 0; i < h->n_escs; i++)
        if (h->escs[i]->pending && !strcmp(h->escs[i]->owner, owner))
            h->escs[i]->queued = false;
}

void highway_esc_invalidate(struct highway *h, const char *workspace, uint64_t now_ms)
{
    (void)now_ms;
    for (size_t i = 0; i < h->n_escs; i++) {
        struct highway_escalation *x = h->escs[i];
        if (x->pending && !strcmp(x->workspace, workspace)) {
            x->fn = NULL; /* nothing left to act on */
            esc_settle(h, x, HIGHWAY_RESP_ABORT, NULL, NULL, "protocol", "subject_invalidated");
        }
    }
}

/* ---- time ----------------------------------------------------------------------------------- */

void highway_tick(struct highway *h, uint64_t now_ms)
{
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < h->n_gates && h->gates[i]->pending; i++) {
            struct highway_gate *g = h->gates[i];
            if (g->deadline_ms && g->deadline_ms <= now_ms &&
                highway_gate_resolve(h, g, fallback_action(g->fallback), NULL, "fallback", "timeout",
                                     now_ms) == 0) {
                again = true; /* FIFO: the scan restarts at the new head */
                break;
            }
        }
    }
    for (size_t i = 0; i < h->n_escs; i++) {
        struct highway_escalation *x = h->escs[i];
        if (!x->pending || !x->deadline_ms || x->deadline_ms > now_ms)
            continue;
        cJSON *t = cJSON_CreateObject();
        add_str(t, "signal_id", x->id);
        add_str(t, "workspace", x->workspace);
        add_str(t, "fallback_action",
                x->fallback == POLICY_FALLBACK_ESCALATE ? "delegate_to_coordinator"
                                                        : policy_fallback_name(x->fallback));
        cJSON_AddNumberToObject(t, "elapsed", (double)(now_ms - x->opened_ms) / 1000.0);
        if (rec(h, x->workspace, "fallback", "escalation_timeout", t) < 0)
            continue;
        /* approve: the agent goes on as it is (an empty envelope unblocks it); reject: it fails;
         * delegate: the coordinator handles it. */
        enum highway_response r = x->fallback == POLICY_FALLBACK_APPROVE  ? HIGHWAY_RESP_ENVELOPE
                                  : x->fallback == POLICY_FALLBACK_REJECT ? HIGHWAY_RESP_ABORT
                                                                          : HIGHWAY_RESP_DELEGATION;
        esc_settle(h, x, r, NULL, NULL, "fallback", "timeout");
    }
}

uint64_t highway_next_deadline(const struct highway *h)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < h->n_gates && h->gates[i]->pending; i++)
        if (h->gates[i]->deadline_ms && h->gates[i]->deadline_ms < m)
            m = h->gates[i]->deadline_ms;
    for (size_t i = 0; i < h->n_escs; i++)
        if (h->escs[i]->pending && h->escs[i]->deadline_ms && h->escs[i]->deadline_ms < m)
            m = h->escs[i]->deadline_ms;
    return m;
}

/* ---- views ---------------------------------------------------------------------------------- */

static void add_left(cJSON *o, uint64_t deadline, uint64_t now_ms, bool pending)
{
    if (!pending)
        return;
    if (deadline)
        cJSON_AddNumberToObject(o, "seconds_left",
                                deadline > now_ms ? (double)(deadline - now_ms) / 1000.0 : 0);
    else
        cJSON_AddNullToObject(o, "seconds_left");
}

cJSON *highway_gate_json(const struct highway_gate *g, bool with_subject, uint64_t now_ms)
{
    cJSON *o = cJSON_CreateObject();
    add_str(o, "id", g->id);
    add_str(o, "type", highway_type_name(g->type));
    if (with_subject)
        cJSON_AddItemToObject(o, "subject", cJSON_Duplicate(g->subject, true));
    add_str(o, "subject_id", g->subject_id);
    add_str(o, "workspace", g->workspace);
    add_str(o, "task_ref", g->task_ref);
    add_str(o, "graph_ref", g->graph_ref);
    cJSON_AddNumberToObject(o, "timestamp", (double)g->timestamp_ms);
    if (g->timeout > 0)
        cJSON_AddNumberToObject(o, "timeout", g->timeout);
    else
        cJSON_AddNullToObject(o, "timeout");
    add_str(o, "fallback", policy_fallback_name(g->fallback));
    cJSON_AddNumberToObject(o, "queue_position", (double)g->queue_position);
    cJSON_AddNumberToObject(o, "waited",
                            now_ms > g->opened_ms ? (double)(now_ms - g->opened_ms) / 1000.0 : 0);
    add_left(o, g->deadline_ms, now_ms, g->pending);
    add_str(o, "status", g->pending ? "pending" : "resolved");
    if (!g->pending) {
        add_str(o, "action", highway_action_name(g->action));
        add_str(o, "actor", g->actor);
        if (g->reason[0])
            add_str(o, "reason", g->reason);
    }
    return o;
}

cJSON *highway_gates_json(const struct highway *h, bool all, uint64_t now_ms)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < h->n_gates; i++)
        if (all || h->gates[i]->pending)
            cJSON_AddItemToArray(a, highway_gate_json(h->gates[i], true, now_ms));
    return a;
}

cJSON *highway_escs_json(const struct highway *h, bool all, uint64_t now_ms)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < h->n_escs; i++) {
        const struct highway_escalation *x = h->escs[i];
        if (!all && !x->pending)
            continue;
        cJSON *o = cJSON_CreateObject();
        add_str(o, "id", x->id);
        add_str(o, "workspace", x->workspace);
        add_str(o, "owner", x->owner);
        add_str(o, "reason", x->reason);
        cJSON_AddNumberToObject(o, "timestamp", (double)x->timestamp_ms);
        if (x->timeout > 0)
            cJSON_AddNumberToObject(o, "timeout", x->timeout);
        else
            cJSON_AddNullToObject(o, "timeout");
        add_str(o, "fallback",
                x->fallback == POLICY_FALLBACK_ESCALATE ? "delegate_to_coordinator"
                                                        : policy_fallback_name(x->fallback));
        add_left(o, x->deadline_ms, now_ms, x->pending);
        add_str(o, "status", x->pending ? (x->queued ? "queued" : "pending") : "resolved");
        if (!x->pending) {
            add_str(o, "response_type", highway_response_name(x->response));
            add_str(o, "actor", x->actor);
            add_str(o, "response_ref", x->response_ref);
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}
