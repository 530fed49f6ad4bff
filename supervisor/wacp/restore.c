/* supervisor/wacp/restore.c: `corral run --resume` (WACP recovery spec 3): the model of a run
 * whose supervisor died, rebuilt from its trail one committed entry at a time (a model loader,
 * not a replay of the agents' requests: ids, times and MACs come from the entries, nothing is
 * recorded twice), then set going again: timers as absolute deadlines from the recorded times,
 * files checked against the last checkpoint, agents restarted and told, envelopes redelivered.
 *
 * What the trail says is trusted here only because `corral run --resume` verified its hash chain
 * first (recovery spec 3.1). The run's MAC key lived in the dead supervisor's memory only: this
 * model has a fresh one (wacp_new), and every checkpoint and envelope rebuilt from the verified
 * trail is sealed again with it. */
#include "common/rate.h"
#include "supervisor/wacp/checkpoint.h"
#include "supervisor/wacp/conflict.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/envelope.h"
#include "supervisor/wacp/highway.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/task.h"
#include "supervisor/wacp/tree.h"
#include "supervisor/wacp/workspace.h"
#include "supervisor/conn/rpc.h"
#include "supervisor/trail/trail.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *jstr(const cJSON *b, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *b, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* A count, size or time of a body as an unsigned integer: 0 when it is not a number in range
 * (negative, NaN, past 2^53: no cast of such a double to an integer). */
static uint64_t ju64(const cJSON *b, const char *k)
{
    double v = jnum(b, k);
    return v >= 0 && v < 9.0e15 ? (uint64_t)v : 0;
}

/* Copies S into a fixed id field; false when it does not fit (not an id this model made). */
static bool id_ok(const char *s)
{
    return s && s[0] && strlen(s) < WACP_ID_LEN;
}

static enum ws_state state_of(const char *name)
{
    for (int s = 0; s < WS_NSTATES; s++)
        if (name && !strcmp(wacp_tree_state_name((enum ws_state)s), name))
            return (enum ws_state)s;
    return WS_NSTATES;
}

static struct wacp_env *env_find(const struct wacp *w, const char *id)
{
    for (size_t i = w->n_env; id && i-- > 0;)
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

/* A child's base (its files at creation, layered integration's), from the object
 * workspace_created names; without one (an older trail, an object gone or changed) it stays
 * empty, and layered integration then takes every file of its checkpoint as changed. */
static void restore_base(struct wacp *w, struct wacp_ws *ws, const char *hex)
{
    struct cerr ce = {0};
    if (!ws->parent || !hex)
        return;
    if (wacp_files_manifest_load(w->objects_dir, hex, &ws->base, &ce) < 0) {
        wacp_files_manifest_clear(&ws->base);
        fprintf(stderr, "corral run: --resume: the base of %s cannot be rebuilt (%s)\n", ws->id, ce.msg);
        return;
    }
    snprintf(ws->base_hash, sizeof(ws->base_hash), "%s", hex);
}

static int ws_created(struct wacp *w, const char *id, int64_t ts_us, const cJSON *b)
{
    const char *role = jstr(b, "role"), *agent = jstr(b, "agent"), *parent = jstr(b, "parent");
    if (!id_ok(id) || !role || !agent || wacp_tree_find(w, id))
        return 0;
    struct wacp_ws *p = parent ? wacp_tree_find(w, parent) : NULL;
    if (parent && !p)
        return 0;
    struct policy_role_view v;
    struct cerr ce = {0};
    if (policy_role_resolve(w->policy, role, &v, &ce) < 0)
        return 0; /* the policy changed under the run: the workspace cannot be rebuilt */
    if (!wacp_core_grow((void **)&w->ws, &w->cap_ws, w->n_ws + 1, sizeof(*w->ws)))
        return -ENOMEM;
    struct wacp_ws *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return -ENOMEM;
    snprintf(ws->id, sizeof(ws->id), "%s", id);
    ws->parent = p;
    ws->view = v;
    ws->agent = strdup(agent);
    ws->role = strdup(role);
    const char *owner = jstr(b, "owner"), *orig = jstr(b, "originator"), *task = jstr(b, "task");
    ws->owner = strdup(owner ? owner : w->root_owner);
    ws->originator = strdup(orig ? orig : "system");
    ws->dir = p ? util_printf("%s/ws/%s", w->run_dir, id) : strdup(w->root_dir);
    ws->delegate = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "delegate"));
    if (id_ok(task))
        snprintf(ws->task, sizeof(ws->task), "%s", task);
    const cJSON *cx = cJSON_GetObjectItemCaseSensitive(b, "context");
    ws->context = cx ? cJSON_Duplicate(cx, true) : NULL;
    ws->budgets = v.budgets;
    const cJSON *bu = cJSON_GetObjectItemCaseSensitive(b, "budgets");
    if (bu) {
        ws->budgets.memory = ju64(bu, "memory");
        ws->budgets.pids = ju64(bu, "pids");
        double c = jnum(bu, "cpus"), wt = jnum(bu, "wall_time");
        ws->budgets.cpus = c > 0 && c < 1e6 ? c : 0;
        ws->budgets.wall_time = wt > 0 && wt < 1e9 ? wt : 0;
    }
    double t = jnum(b, "timeout");
    ws->timeout_ms = t > 0 && t < 1e9 ? (uint64_t)(t * 1000.0 + 0.5) : 0;
    ws->created_us = ts_us;
    ws->created_ms = wacp_core_now_ms();
    ws->state = WS_IDLE;
    restore_base(w, ws, jstr(b, "base"));
    if (!ws->agent || !ws->role || !ws->owner || !ws->originator || !ws->dir) {
        wacp_tree_free(ws);
        return -ENOMEM;
    }
    w->ws[w->n_ws++] = ws;
    w->sum.workspaces++;
    return 0;
}

static void ws_state_changed(struct wacp *w, const char *id, int64_t ts_us, const cJSON *b)
{
    struct wacp_ws *ws = wacp_tree_find(w, id);
    enum ws_state to = state_of(jstr(b, "to")), from = state_of(jstr(b, "from"));
    if (!ws || to == WS_NSTATES)
        return;
    if ((to == WS_SUSPENDED || to == WS_MIGRATING) && from != WS_NSTATES)
        ws->saved = from;
    /* Compute time (recovery spec 3.4): what the entry says was accumulated in active so far. */
    if (cJSON_GetObjectItemCaseSensitive(b, "active_ms"))
        ws->active_ms = ju64(b, "active_ms");
    if (to == WS_ACTIVE)
        ws->active_from_us = ts_us;
    /* The timeout's meter pauses while suspended (tree.c): the pauses, from the trail. */
    if (to == WS_SUSPENDED)
        ws->suspended_from_us = ts_us;
    else if (ws->state == WS_SUSPENDED && ws->suspended_from_us && ts_us > ws->suspended_from_us) {
        ws->suspended_total_us += ts_us - ws->suspended_from_us;
        ws->suspended_from_us = 0;
    }
    ws->state = to;
    if (to == WS_CLOSED || to == WS_FAILED) {
        snprintf(ws->end_reason, sizeof(ws->end_reason), "%s",
                 jstr(b, "reason") ? jstr(b, "reason") : "");
        ws->stopped = true; /* its agent died with the old supervisor: nothing to stop */
        ws->inbox = ws->queued = 0;
        to == WS_CLOSED ? w->sum.closed++ : w->sum.failed++;
    }
}

static int cp_created(struct wacp *w, const char *id, const cJSON *b)
{
    struct wacp_ws *ws = wacp_tree_find(w, id);
    const char *cid = jstr(b, "checkpoint_id");
    if (!ws || !id_ok(cid) || wacp_checkpoint_find(w, cid))
        return 0;
    if (!wacp_core_grow((void **)&w->cp, &w->cap_cp, w->n_cp + 1, sizeof(*w->cp)))
        return -ENOMEM;
    struct wacp_checkpoint *cp = calloc(1, sizeof(*cp));
    if (!cp)
        return -ENOMEM;
    snprintf(cp->id, sizeof(cp->id), "%s", cid);
    snprintf(cp->ws, sizeof(cp->ws), "%s", ws->id);
    const char *par = jstr(b, "parent"), *ph = jstr(b, "payload_hash"), *st = jstr(b, "status");
    snprintf(cp->parent, sizeof(cp->parent), "%s", id_ok(par) ? par : "");
    snprintf(cp->payload_hash, sizeof(cp->payload_hash), "%s", ph ? ph : "");
    cp->type = strdup(jstr(b, "type") ? jstr(b, "type") : "artifact");
    cp->intent = strdup(jstr(b, "intent") ? jstr(b, "intent") : "");
    cp->status = strdup(st ? st : "final");
    cp->confidence = strdup(jstr(b, "confidence") ? jstr(b, "confidence") : "medium");
    cp->timestamp_ms = ju64(b, "timestamp");
    /* The payload is not in the trail (only its hash): a rebuilt checkpoint shows none. */
    const cJSON *f;
    int r = 0;
    cJSON_ArrayForEach (f, cJSON_GetObjectItemCaseSensitive(b, "files")) {
        const char *path = jstr(f, "path"), *h = jstr(f, "blake2b");
        if (path && wacp_files_path_ok(path) &&
            (r = wacp_files_manifest_add(&cp->files, path, h && strlen(h) < WACP_HASH_HEX ? h : "",
                                         ju64(f, "size"))) < 0)
            break;
    }
    if (r < 0 || !cp->type || !cp->intent || !cp->status || !cp->confidence ||
        wacp_checkpoint_seal(w, cp) < 0) {
        wacp_checkpoint_free(cp);
        return -ENOMEM;
    }
    w->cp[w->n_cp++] = cp;
    ws->n_checkpoints++;
    snprintf(ws->head, sizeof(ws->head), "%s", cp->id);
    if (!strcmp(cp->status, "final"))
        snprintf(ws->final_cp, sizeof(ws->final_cp), "%s", cp->id);
    /* What the files were is now this checkpoint's record (a resume checks them against it). */
    wacp_files_manifest_clear(&ws->recorded);
    ws->recorded_compact = 0;
    ws->files_unknown = false;
    w->sum.checkpoints++;
    return 0;
}

static int right_created(struct wacp *w, const cJSON *b)
{
    const char *id = jstr(b, "right_id"), *kind = jstr(b, "right_type"), *holder = jstr(b, "holder"),
               *target = jstr(b, "target");
    if (!id_ok(id) || !kind || !id_ok(holder) || !id_ok(target) || right_find(w, id))
        return 0;
    if (w->n_rights >= WACP_MAX_RIGHTS ||
        !wacp_core_grow((void **)&w->rights, &w->cap_rights, w->n_rights + 1, sizeof(*w->rights)))
        return -ENOMEM;
    struct wacp_right r = {.live = true};
    r.kind = !strcmp(kind, "send")        ? RIGHT_SEND
             : !strcmp(kind, "send_once") ? RIGHT_SEND_ONCE
                                          : RIGHT_RECEIVE;
    snprintf(r.id, sizeof(r.id), "%s", id);
    snprintf(r.holder, sizeof(r.holder), "%s", holder);
    snprintf(r.target, sizeof(r.target), "%s", target);
    w->rights[w->n_rights++] = r;
    return 0;
}

static const char *static_priority(const char *p)
{
    static const char *const prios[] = {"normal", "urgent", "blocking"};
    for (size_t i = 0; p && i < ARRAY_SIZE(prios); i++)
        if (!strcmp(p, prios[i]))
            return prios[i];
    return "normal";
}

static int env_created(struct wacp *w, const cJSON *b)
{
    const char *id = jstr(b, "envelope_id"), *from = jstr(b, "from"), *to = jstr(b, "to"),
               *type = jstr(b, "type");
    if (!id_ok(id) || !from || strlen(from) >= WACP_ID_LEN || !id_ok(to) || !type || env_find(w, id))
        return 0;
    if (w->n_env >= WACP_MAX_ENVELOPES_TOTAL ||
        !wacp_core_grow((void **)&w->env, &w->cap_env, w->n_env + 1, sizeof(*w->env)))
        return -ENOMEM;
    struct wacp_env *v = calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    snprintf(v->id, sizeof(v->id), "%s", id);
    snprintf(v->from, sizeof(v->from), "%s", from);
    snprintf(v->to, sizeof(v->to), "%s", to);
    const char *irt = jstr(b, "in_reply_to"), *origin = jstr(b, "origin"), *orig = jstr(b, "originator");
    if (id_ok(irt))
        snprintf(v->in_reply_to, sizeof(v->in_reply_to), "%s", irt);
    v->type = strdup(type);
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(b, "payload");
    bool lost = !pl && jstr(b, "payload_blake2b"); /* too large for the trail: see wacp_resume */
    v->payload = pl ? cJSON_PrintUnformatted(pl) : strdup("null");
    v->payload_lost = lost; /* see wacp_resume */
    v->priority = static_priority(jstr(b, "priority"));
    v->origin = origin && !strcmp(origin, "human") ? "human" : "agent";
    if (!strcmp(v->origin, "human") && orig)
        v->originator = strdup(orig);
    v->timestamp_ms = ju64(b, "timestamp");
    v->rights = cJSON_CreateArray();
    v->state = ENV_VALIDATED;
    if (!v->type || !v->payload || !v->rights ||
        (!strcmp(v->origin, "human") && orig && !v->originator)) {
        wacp_envelope_free(v);
        return -ENOMEM;
    }
    w->env[w->n_env++] = v;
    w->sum.envelopes++;
    /* A workspace's directive is its first directive envelope (recovery: workspace.self). */
    struct wacp_ws *t = wacp_tree_find(w, to);
    if (t && !t->directive_env[0] && !strcmp(type, "directive")) {
        snprintf(t->directive_env, sizeof(t->directive_env), "%s", id);
        t->directive = pl ? cJSON_Duplicate(pl, true) : NULL;
    }
    return 0;
}

static enum task_status task_status_of(const char *name)
{
    for (int s = TASK_DRAFT; s <= TASK_CANCELLED; s++)
        if (name && !strcmp(wacp_task_status_name((enum task_status)s), name))
            return (enum task_status)s;
    return (enum task_status) - 1;
}

static int task_created(struct wacp *w, const cJSON *b)
{
    const char *id = jstr(b, "task_id"), *name = jstr(b, "name"), *desc = jstr(b, "description"),
               *pt = jstr(b, "parent_task");
    if (!id_ok(id) || !name || wacp_task_find(w, id) || w->n_tasks >= WACP_MAX_TASKS)
        return 0;
    if (!wacp_core_grow((void **)&w->tasks, &w->cap_tasks, w->n_tasks + 1, sizeof(*w->tasks)))
        return -ENOMEM;
    struct wacp_task *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    snprintf(t->id, sizeof(t->id), "%s", id);
    t->name = strdup(name);
    t->description = desc ? strdup(desc) : NULL;
    if (id_ok(pt))
        snprintf(t->parent_task, sizeof(t->parent_task), "%s", pt);
    const cJSON *deps = cJSON_GetObjectItemCaseSensitive(b, "depends_on");
    size_t nd = cJSON_IsArray(deps) ? (size_t)cJSON_GetArraySize(deps) : 0;
    t->depends_on = nd ? calloc(nd, sizeof(*t->depends_on)) : NULL;
    if (!t->name || (desc && !t->description) || (nd && !t->depends_on)) {
        wacp_task_free(t);
        return -ENOMEM;
    }
    const cJSON *x;
    cJSON_ArrayForEach (x, deps)
        if (cJSON_IsString(x) && id_ok(x->valuestring) && t->n_depends < nd)
            snprintf(t->depends_on[t->n_depends++], WACP_ID_LEN, "%s", x->valuestring);
    enum task_status st = task_status_of(jstr(b, "status"));
    t->status = (int)st >= 0 ? st : TASK_DRAFT;
    t->created_ms = wacp_core_now_ms();
    w->tasks[w->n_tasks++] = t;
    w->sum.tasks++;
    return 0;
}

/* task_assigned, task_approved, task_status_changed, task_completed, task_failed. */
static int task_changed(struct wacp *w, const char *type, const cJSON *b)
{
    struct wacp_task *t = wacp_task_find(w, jstr(b, "task_id"));
    if (!t)
        return 0;
    if (!strcmp(type, "task_assigned")) {
        const char *ws = jstr(b, "workspace_id");
        if (!id_ok(ws))
            return 0;
        char(*h)[WACP_ID_LEN] = realloc(t->history, (t->n_history + 1) * sizeof(*t->history));
        if (!h)
            return -ENOMEM;
        t->history = h;
        snprintf(t->history[t->n_history++], WACP_ID_LEN, "%s", ws);
        snprintf(t->workspace_ref, sizeof(t->workspace_ref), "%s", ws);
        t->checkpoint_ref[0] = 0;
        t->status = TASK_ASSIGNED;
        return 0;
    }
    enum task_status to = task_status_of(jstr(b, "to"));
    if ((int)to < 0)
        return 0;
    t->status = to;
    const char *cp = jstr(b, "checkpoint_ref");
    if (id_ok(cp))
        snprintf(t->checkpoint_ref, sizeof(t->checkpoint_ref), "%s", cp);
    return 0;
}

/* The conflict list of a workspace an integration left conflicted (conflict_detected carries
 * it, each conflict's type in its size as integrate.c keeps it), and the strategy that found
 * them (its integration_started's): what conflict.resolve needs to keep the parent's copies. */
static int integration_seen(struct wacp *w, const char *type, const char *id, const cJSON *b)
{
    struct wacp_ws *t = wacp_tree_find(w, jstr(b, "workspace_id") ? jstr(b, "workspace_id") : id);
    if (!t)
        return 0;
    if (type[0] == 'i') {
        const char *st = jstr(b, "strategy");
        if (st && strlen(st) < sizeof t->conflict_strategy)
            snprintf(t->conflict_strategy, sizeof t->conflict_strategy, "%s", st);
        return 0;
    }
    if (t->state != WS_INTEGRATING && t->state != WS_CONFLICTED)
        return 0; /* as integrate.c: only a live workspace keeps them */
    struct wacp_manifest m = {0};
    const cJSON *c;
    cJSON_ArrayForEach (c, cJSON_GetObjectItemCaseSensitive(b, "conflicts")) {
        const char *path = jstr(c, "path"), *name = jstr(c, "type");
        uint64_t k = 0;
        while (k < 4 && name && strcmp(wacp_conflict_type_name(k), name))
            k++;
        if (!path || !wacp_files_path_ok(path) || wacp_files_manifest_get(&m, path))
            continue;
        if (wacp_files_manifest_add(&m, path, "", k < 4 ? k : 0) < 0) {
            wacp_files_manifest_clear(&m);
            return -ENOMEM;
        }
    }
    wacp_files_manifest_clear(&t->conflicts);
    t->conflicts = m;
    return 0;
}

/* A gate opened or an escalation received (ID under KEY): its recorded body kept in *LIST until
 * its gate_resolved / escalation_resolved (open_drop), rebuilt by wacp_resume. */
static int open_keep(cJSON **list, const char *key, int64_t ts_us, const cJSON *b)
{
    const char *id = jstr(b, key);
    if (!id || !id[0] || strlen(id) >= HIGHWAY_ID_LEN)
        return 0;
    if (!*list && !(*list = cJSON_CreateArray()))
        return -ENOMEM;
    if (cJSON_GetArraySize(*list) >= HIGHWAY_MAX_PENDING)
        return 0; /* no run had more open: not a trail this runtime wrote */
    cJSON *g = cJSON_Duplicate(b, true);
    if (!g || !cJSON_AddNumberToObject(g, "ts_us", (double)ts_us) || !cJSON_AddItemToArray(*list, g)) {
        cJSON_Delete(g);
        return -ENOMEM;
    }
    return 0;
}

static void open_drop(cJSON *list, const char *key, const cJSON *b)
{
    const char *id = jstr(b, key);
    int i = 0;
    const cJSON *g;
    cJSON_ArrayForEach (g, list) {
        if (id && jstr(g, key) && !strcmp(jstr(g, key), id)) {
            cJSON_DeleteItemFromArray(list, i);
            return;
        }
        i++;
    }
}

/* The escalations the dead supervisor had open: open again for their owner, the run's
 * escalation timeout counted from the recorded time; one whose workspace is no longer live is
 * resolved as the live runtime does (subject_invalidated). */
static int escs_restore(struct wacp *w, int64_t now_us, uint64_t mono, struct wacp_resume_stats *st)
{
    cJSON *all = w->restored_escs;
    w->restored_escs = NULL;
    const struct policy_highway *h = w->session.highway;
    double t = h ? h->escalation_timeout : 0;
    const cJSON *b;
    int rc = 0;
    cJSON_ArrayForEach (b, all) {
        struct wacp_ws *ws = wacp_tree_find(w, jstr(b, "workspace"));
        if (!ws)
            continue;
        int64_t el = (now_us - (int64_t)jnum(b, "ts_us")) / 1000;
        uint64_t elapsed = el > 0 ? (uint64_t)el : 0;
        uint64_t tm = t > 0 ? (uint64_t)(t * 1000.0) : 0;
        const char *dl = jstr(b, "delivery");
        rc = wacp_signal_esc_restore(w, ws, jstr(b, "signal_id"), jstr(b, "reason"),
                                     dl && !strcmp(dl, "queued"),
                                     (uint64_t)(jnum(b, "ts_us") / 1000.0), mono > elapsed ? mono - elapsed : 0,
                                     mono + (tm > elapsed ? tm - elapsed : 0));
        if (rc == -ENOMEM)
            break;
        rc = 0;
        st->timers_reconstructed += tm > 0;
        if (!(WS_BIT(ws->state) & WS_LIVE_MASK))
            highway_esc_invalidate(w->hw, ws->id, mono);
    }
    cJSON_Delete(all);
    return rc;
}

static enum policy_fallback fallback_of(const char *name)
{
    for (int f = POLICY_FALLBACK_APPROVE; f <= POLICY_FALLBACK_ESCALATE; f++)
        if (name && !strcmp(policy_fallback_name((enum policy_fallback)f), name))
            return (enum policy_fallback)f;
    return POLICY_FALLBACK_REJECT;
}

/* The gates the dead supervisor had open, in trigger order (FIFO kept), their timeouts as
 * absolute deadlines from the recorded trigger time (highway spec 7, recovery spec 3.4). A gate
 * on a draft task or on an envelope held before its inbox is open again, for a person to decide;
 * one that held an agent's request or tool call cannot be: that request died with the agent,
 * and the gate is resolved (rejected, reason requester_lost_in_crash). */
static int gates_restore(struct wacp *w, int64_t now_us, uint64_t mono, struct wacp_resume_stats *st)
{
    cJSON *all = w->restored_gates;
    w->restored_gates = NULL; /* recovery run twice rebuilds them from the trail again */
    const cJSON *b;
    int rc = 0;
    cJSON_ArrayForEach (b, all) {
        const char *id = jstr(b, "gate_id");
        int type = highway_type_parse(jstr(b, "gate_type"));
        uint64_t ts_ms = ju64(b, "timestamp");
        int64_t el = now_us / 1000 - (int64_t)ts_ms;
        uint64_t elapsed = el > 0 ? (uint64_t)el : 0;
        double t = jnum(b, "timeout");
        struct highway_gate_req r = {
            .type = type,
            .subject_id = jstr(b, "subject_id"),
            .workspace = jstr(b, "workspace"),
            .task_ref = jstr(b, "task_ref"),
            .graph_ref = jstr(b, "graph_ref"),
            .timeout = t > 0 && t < 1e9 ? t : 0,
            .fallback = fallback_of(jstr(b, "fallback")),
            .now_ms = mono > elapsed ? mono - elapsed : 0,
            .wall_ms = ts_ms,
        };
        uint64_t left = r.timeout > 0 && (uint64_t)(r.timeout * 1000.0) > elapsed
                            ? (uint64_t)(r.timeout * 1000.0) - elapsed
                            : 0;
        uint64_t deadline = mono + left;
        struct wacp_task *task = wacp_task_find(w, r.task_ref);
        struct wacp_env *v = env_find(w, r.subject_id);
        int g = -1;
        if (type == POLICY_GATE_TASK_APPROVAL && task && task->status == TASK_DRAFT)
            g = wacp_task_gate_restore(w, task, &r, id, deadline);
        else if (type == POLICY_GATE_ENVELOPE_DELIVERY && v && v->gated && !v->undeliverable &&
                 v->state == ENV_VALIDATED)
            g = wacp_envelope_gate_restore(w, v, &r, id, deadline);
        if (g == 0) {
            st->timers_reconstructed += r.timeout > 0;
            continue;
        }
        if (g == -ENOMEM) {
            rc = g;
            break;
        }
        /* Not to be decided again: resolved, so that the trail says what became of it. */
        cJSON *s = wacp_core_obj();
        wacp_core_add_str(s, "gate_type", highway_type_name(type));
        wacp_core_add_str(s, "subject_id", r.subject_id);
        r.subject = s;
        struct highway_gate *hg = NULL;
        g = highway_gate_restore(w->hw, &r, id, deadline, &hg);
        cJSON_Delete(s);
        const char *why = type == POLICY_GATE_TASK_APPROVAL || type == POLICY_GATE_ENVELOPE_DELIVERY
                              ? "subject_invalidated"
                              : "requester_lost_in_crash";
        if (g == 1 && highway_gate_resolve(w->hw, hg, HIGHWAY_REJECT, NULL, "protocol", why, mono) < 0) {
            rc = -EIO;
            break;
        }
    }
    cJSON_Delete(all);
    return rc;
}

/* ---- what tool calls left on disk (checked at resume) ---- */

static void files_forget(struct wacp_ws *ws)
{
    wacp_files_manifest_clear(&ws->recorded);
    ws->recorded_compact = 0;
    ws->files_unknown = true;
}

static int recorded_cmp(const void *a, const void *b, void *m_)
{
    const struct wacp_manifest *m = m_;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(m->v[i].path, m->v[j].path);
    return c ? c : (i > j) - (i < j);
}

/* Keeps the last record of each path of WS's `recorded` (kept in trail order), sorted by path. */
static int recorded_compact(struct wacp_ws *ws)
{
    struct wacp_manifest *m = &ws->recorded;
    if (m->n < 2) {
        ws->recorded_compact = m->n;
        return 0;
    }
    size_t *ix = malloc(m->n * sizeof(*ix));
    struct wacp_file *v = malloc(m->n * sizeof(*v));
    if (!ix || !v) {
        free(ix);
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->n; i++)
        ix[i] = i;
    qsort_r(ix, m->n, sizeof(*ix), recorded_cmp, m);
    size_t n = 0;
    for (size_t k = 0; k < m->n; k++) {
        struct wacp_file *f = &m->v[ix[k]];
        if (k + 1 < m->n && !strcmp(f->path, m->v[ix[k + 1]].path))
            free(f->path); /* a later call left this path otherwise */
        else
            v[n++] = *f;
    }
    free(ix);
    free(m->v);
    m->cap = m->n;
    m->v = v;
    m->n = n;
    ws->recorded_compact = n;
    return 0;
}

static bool hex64(const char *h)
{
    size_t n = h ? strspn(h, "0123456789abcdef") : 0;
    return n == 64 && !h[n];
}

/* A tool_call entry: one started (phase start) is open until its end (outcome) is recorded;
 * the end says how the call left each path it changed (files) or that it may have changed
 * anything (files_unknown: a command). Other fields of the entry are not relied on. */
static int tool_seen(struct wacp *w, const char *ws_id, const cJSON *b)
{
    struct wacp_ws *t = wacp_tree_find(w, ws_id);
    if (!t)
        return 0;
    const char *phase = jstr(b, "phase");
    if (phase && !strcmp(phase, "start"))
        t->calls_open++;
    if (!jstr(b, "outcome"))
        return 0;
    if (t->calls_open)
        t->calls_open--;
    if (!w->restore_files || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "files_unknown"))) {
        files_forget(t);
        return 0;
    }
    const cJSON *f;
    cJSON_ArrayForEach (f, cJSON_GetObjectItemCaseSensitive(b, "files")) {
        const char *path = jstr(f, "path"), *h = jstr(f, "blake2b");
        bool dir = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "dir")),
             gone = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "removed"));
        if (!path || !wacp_files_path_ok(path) || (!dir && !gone && !hex64(h)))
            continue;
        if (wacp_files_manifest_add(&t->recorded, path, dir ? WACP_FILES_IS_DIR : gone ? "" : h,
                                    (uint64_t)ju64(f, "bytes")) < 0)
            return -ENOMEM;
    }
    /* Bounded by what the workspace's paths are, not by how often they were written. */
    if (t->recorded.n >= 2 * t->recorded_compact + 1024 && recorded_compact(t) < 0)
        return -ENOMEM;
    return 0;
}

int wacp_restore_entry(struct wacp *w, const char *type, const char *ws, int64_t ts_us, const cJSON *b)
{
    if (!type || !cJSON_IsObject(b))
        return 0;
    /* The agent's last recorded activity (recovery spec 3.4: its liveness runs from there, and
     * an active workspace's compute time counts up to there). */
    if (ws && (!strcmp(type, "tool_call") || !strcmp(type, "signal_emitted") ||
               !strcmp(type, "checkpoint_created") || !strcmp(type, "envelope_created") ||
               (!strcmp(type, "protocol_message") && jstr(b, "direction") &&
                !strcmp(jstr(b, "direction"), "in")))) {
        struct wacp_ws *t = wacp_tree_find(w, ws);
        if (t && ts_us > t->last_activity_us)
            t->last_activity_us = ts_us;
    }
    /* Rate limits: each accepted request of a limited kind took a token at its recorded time
     * (wall clock here; moved onto the monotonic clock at the resume). */
    int rk = !strcmp(type, "signal_emitted")       ? WACP_RATE_SIGNALS
             : !strcmp(type, "envelope_created")   ? WACP_RATE_ENVELOPES
             : !strcmp(type, "checkpoint_created") ? WACP_RATE_CHECKPOINTS
                                                   : -1;
    if (rk >= 0 && ws) {
        struct wacp_ws *t = wacp_tree_find(w, ws);
        uint32_t per = rk == WACP_RATE_SIGNALS     ? w->session.rates.signals
                       : rk == WACP_RATE_ENVELOPES ? w->session.rates.envelopes
                                                   : w->session.rates.checkpoints;
        if (t && per && ts_us > 0)
            (void)rate_take(&t->rates[rk], per, per * 5 > 10 ? per * 5 : 10, (uint64_t)ts_us / 1000);
    }
    if (!strcmp(type, "workspace_created"))
        return ws_created(w, jstr(b, "workspace_id") ? jstr(b, "workspace_id") : ws, ts_us, b);
    if (!strcmp(type, "workspace_state_changed")) {
        ws_state_changed(w, ws, ts_us, b);
        return 0;
    }
    if (!strcmp(type, "workspace_ownership_transferred")) {
        struct wacp_ws *t = wacp_tree_find(w, ws);
        char *o = jstr(b, "to_owner") ? strdup(jstr(b, "to_owner")) : NULL;
        if (t && o) {
            free(t->owner);
            t->owner = o;
        } else
            free(o);
        return 0;
    }
    if (!strcmp(type, "workspace_reparented")) {
        struct wacp_ws *t = wacp_tree_find(w, jstr(b, "workspace_id")),
                       *p = wacp_tree_find(w, jstr(b, "to_parent"));
        if (t && p)
            t->parent = p;
        return 0;
    }
    if (!strcmp(type, "checkpoint_created"))
        return cp_created(w, ws, b);
    if (!strcmp(type, "supervisor_started")) {
        /* A supervisor before tool calls recorded their files (an older corral) leaves every
         * write after it unknown, as a command does. */
        w->restore_files = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "tool_files"));
        return 0;
    }
    if (!strcmp(type, "tool_call"))
        return tool_seen(w, ws, b);
    if (!strcmp(type, "integration_started") || !strcmp(type, "integration_completed") ||
        !strcmp(type, "conflict_resolved")) {
        /* The model writes a child's files into its parent (from integration_started on, its
         * completion recorded after): not a tool call of the parent's, so the parent's record
         * starts again (as after a command). */
        struct wacp_ws *t = wacp_tree_find(w, ws), *into = wacp_tree_find(w, jstr(b, "into"));
        if (!into && t)
            into = t->parent;
        if (into)
            files_forget(into);
    }
    if (!strcmp(type, "port_right_created"))
        return right_created(w, b);
    if (!strcmp(type, "port_right_consumed") || !strcmp(type, "port_right_revoked") ||
        !strcmp(type, "port_right_transferred")) {
        struct wacp_right *r = right_find(w, jstr(b, "right_id"));
        const char *to = jstr(b, "to_holder");
        if (r && type[11] == 't' && id_ok(to)) {
            snprintf(r->holder, sizeof(r->holder), "%s", to);
            struct wacp_env *v = env_find(w, jstr(b, "via_envelope"));
            if (v) {
                cJSON *o = wacp_core_obj();
                wacp_core_add_str(o, "right_id", r->id);
                wacp_core_add_str(o, "kind", jstr(b, "right_type"));
                wacp_core_add_str(o, "holder", r->holder);
                wacp_core_add_str(o, "target", r->target);
                cJSON_AddItemToArray(v->rights, o);
            }
        } else if (r && type[11] == 'c')
            r->live = false;
        else if (r && type[11] == 'r')
            r->live = false;
        return 0;
    }
    if (!strcmp(type, "envelope_created"))
        return env_created(w, b);
    if (!strcmp(type, "visibility_granted")) {
        struct wacp_ws *to = wacp_tree_find(w, jstr(b, "workspace_id"));
        const char *target = jstr(b, "target");
        if (!to || !id_ok(target))
            return 0;
        char(*g)[WACP_ID_LEN] = realloc(to->grants, (to->n_grants + 1) * sizeof(*to->grants));
        if (!g)
            return -ENOMEM;
        to->grants = g;
        snprintf(to->grants[to->n_grants++], WACP_ID_LEN, "%s", target);
        return 0;
    }
    if (!strcmp(type, "graph_created")) {
        const char *g = jstr(b, "graph_id");
        if (id_ok(g))
            snprintf(w->graph, sizeof(w->graph), "%s", g);
        return 0;
    }
    if (!strcmp(type, "integration_started") || !strcmp(type, "conflict_detected"))
        return integration_seen(w, type, ws, b);
    if (!strcmp(type, "gate_triggered"))
        return highway_type_parse(jstr(b, "gate_type")) < 0
                   ? 0
                   : open_keep(&w->restored_gates, "gate_id", ts_us, b);
    if (!strcmp(type, "escalation_received"))
        return open_keep(&w->restored_escs, "signal_id", ts_us, b);
    if (!strcmp(type, "gate_resolved") && jstr(b, "action") && !strcmp(jstr(b, "action"), "escalate")) {
        /* The re-entry guard (highway spec 6.1): kept across the crash. */
        const cJSON *g;
        cJSON_ArrayForEach (g, w->restored_gates)
            if (jstr(g, "gate_id") && jstr(b, "gate_id") && !strcmp(jstr(g, "gate_id"), jstr(b, "gate_id")))
                highway_guard_restore(w->hw, highway_type_parse(jstr(g, "gate_type")), jstr(g, "subject_id"));
    }
    if (!strcmp(type, "gate_resolved") || !strcmp(type, "escalation_resolved")) {
        type[0] == 'g' ? open_drop(w->restored_gates, "gate_id", b)
                       : open_drop(w->restored_escs, "signal_id", b);
        return 0;
    }
    if (!strcmp(type, "task_created"))
        return task_created(w, b);
    if (!strcmp(type, "task_assigned") || !strcmp(type, "task_approved") ||
        !strcmp(type, "task_status_changed") || !strcmp(type, "task_completed") ||
        !strcmp(type, "task_failed"))
        return task_changed(w, type, b);
    struct wacp_env *v = NULL;
    if (!strncmp(type, "envelope_", 9) && !(v = env_find(w, jstr(b, "envelope_id"))))
        return 0;
    if (!strcmp(type, "envelope_delivered")) /* delivery and acknowledgment are one step here */
        v->state = ENV_ACKNOWLEDGED;
    else if (!strcmp(type, "envelope_undeliverable"))
        v->undeliverable = true;
    else if (!strcmp(type, "envelope_rejected"))
        v->state = ENV_REJECTED;
    else if (!strcmp(type, "envelope_redelivered"))
        v->attempt = (unsigned)(ju64(b, "attempt") & 0xff);
    else if (!strcmp(type, "signal_emitted"))
        w->sum.signals++;
    else if (!strcmp(type, "integration_completed"))
        w->sum.integrations++;
    return 0;
}

void wacp_restore_quarantined(struct wacp *w, const char *type, const char *ws)
{
    struct wacp_ws *t = wacp_tree_find(w, ws);
    if (t && type && !strcmp(type, "tool_call"))
        files_forget(t);
}

static const struct wacp_file *recorded_get(const struct wacp_manifest *m, const char *path)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->v[mid].path, path);
        if (!c)
            return &m->v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* WHY = PREFIX and at most MAX bytes of TEXT, cut where its valid UTF-8 ends: a reason goes into
 * the trail and, in a `failed` signal, to the parent's agent, and a path (the agent chose it) cut
 * inside a character would make both invalid UTF-8. */
static void why_cut(char *why, size_t len, const char *prefix, const char *text, size_t max)
{
    size_t n = strnlen(text, max);
    snprintf(why, len, "%s%.*s", prefix, (int)rpc_utf8_check(text, n), text);
}

/* Whether DIR/F->path is as F records it; if not, WHY says so. */
static int file_check(int dfd, const struct wacp_file *f, char *why, size_t len, struct cerr *ce)
{
    char now[WACP_HASH_HEX];
    if (wacp_files_state_at(dfd, f->path, now, ce) < 0)
        return -1;
    if (strcmp(now, f->hash) != 0) {
        why_cut(why, len, "recovery_files_mismatch: ", f->path, 36);
        return 1;
    }
    return 0;
}

/* Whether the files of WS on disk are as the trail last recorded them: its last checkpoint's
 * manifest, then what each tool call after it left (a file's hash, a removal, a directory). A
 * path changed or missing (or back after it was removed) is a mismatch, told in WHY. After a
 * command, only what file tools recorded since is known; with a call in flight at the crash,
 * nothing is (docs/protocol-wacp.md, "Recovery"). */
static bool files_match(struct wacp *w, struct wacp_ws *ws, char *why, size_t len)
{
    if (ws->calls_open)
        return true;
    if (recorded_compact(ws) < 0) {
        snprintf(why, len, "recovery_files_unreadable: out of memory");
        return false;
    }
    const struct wacp_checkpoint *cp = ws->files_unknown ? NULL : wacp_checkpoint_find(w, ws->head);
    if (!ws->recorded.n && (!cp || !cp->files.n))
        return true;
    struct cerr ce = {0};
    int dfd = wacp_tree_dir_open(w, ws, &ce);
    int r = dfd < 0 ? -1 : 0;
    for (size_t i = 0; r == 0 && i < ws->recorded.n; i++)
        r = file_check(dfd, &ws->recorded.v[i], why, len, &ce);
    for (size_t i = 0; r == 0 && cp && i < cp->files.n; i++)
        if (!recorded_get(&ws->recorded, cp->files.v[i].path))
            r = file_check(dfd, &cp->files.v[i], why, len, &ce);
    if (dfd >= 0)
        close(dfd);
    if (r < 0)
        why_cut(why, len, "recovery_files_unreadable: ", ce.msg, 30);
    return r == 0;
}

static bool times_out(enum ws_state s)
{
    return s == WS_IDLE || s == WS_ACTIVE || s == WS_BLOCKED || s == WS_CONFLICTED;
}

int wacp_resume(struct wacp *w, int64_t now_us, struct wacp_resume_stats *st, struct cerr *err)
{
    memset(st, 0, sizeof(*st));
    struct wacp_env *lost_env[64]; /* the senders of the first 64 are told once they run again */
    size_t n_lost = 0;
    uint64_t mono = wacp_core_now_ms();
    const cJSON *gb;
    cJSON_ArrayForEach (gb, w->restored_gates) {
        struct wacp_env *v = env_find(w, jstr(gb, "subject_id"));
        struct wacp_ws *t = v ? wacp_tree_find(w, v->to) : NULL;
        if (t && (WS_BIT(t->state) & WS_LIVE_MASK) && !v->payload_lost &&
            v->state == ENV_VALIDATED && !v->undeliverable &&
            highway_type_parse(jstr(gb, "gate_type")) == POLICY_GATE_ENVELOPE_DELIVERY)
            v->gated = true;
    }
    /* Envelopes not acknowledged nor given up: queued again, in creation order (their channel
     * order), delivered when their workspace's agent is back. */
    for (size_t i = 0; i < w->n_env; i++) {
        struct wacp_env *v = w->env[i];
        struct wacp_ws *t = wacp_tree_find(w, v->to);
        if (v->state != ENV_VALIDATED || v->undeliverable || !t || !(WS_BIT(t->state) & WS_LIVE_MASK))
            continue;
        if (v->payload_lost) {
            /* Its payload was too large for the trail: it cannot be delivered again. Recorded,
             * and its sender told, as an envelope whose delivery ran out (envelope spec 9). */
            cJSON *b = wacp_core_obj();
            wacp_core_add_str(b, "envelope_id", v->id);
            wacp_core_add_str(b, "from", v->from);
            wacp_core_add_str(b, "to", v->to);
            wacp_core_add_str(b, "reason", "payload_lost_in_crash");
            cJSON_AddNumberToObject(b, "attempts", v->attempt);
            int r = wacp_core_rec(w, v->to, "protocol", "envelope_undeliverable", b);
            cJSON_Delete(b);
            if (r < 0)
                return cerr_set(err, EIO, "the trail cannot be written");
            v->undeliverable = true;
            lost_env[n_lost++ % 64] = v;
            continue;
        }
        v->sent = false;
        v->attempt = 0;
        if (wacp_envelope_seal(w, v) < 0)
            return cerr_set(err, ENOMEM, "out of memory");
        t->inbox++;
        if (!v->gated) /* held by a gate: a person or its fallback decides, below */
            t->queued++;
    }
    /* Active time counts again from now: the downtime is not compute (recovery spec 6). A
     * workspace active at the crash also ran from its last transition up to its agent's last
     * recorded activity: counted, so what is lost is at most the time from that entry to the
     * crash. */
    for (size_t i = 0; i < w->n_ws; i++) {
        struct wacp_ws *ws = w->ws[i];
        for (int k = 0; k < WACP_RATE_N; k++)
            if (ws->rates[k].primed) { /* its last take, as long before now as recorded */
                uint64_t ago = (uint64_t)(now_us / 1000) > ws->rates[k].last_ms
                                   ? (uint64_t)(now_us / 1000) - ws->rates[k].last_ms
                                   : 0;
                ws->rates[k].last_ms = mono > ago ? mono - ago : 0;
            }
        if (ws->state == WS_ACTIVE && ws->active_from_us && ws->last_activity_us > ws->active_from_us)
            ws->active_ms += (uint64_t)(ws->last_activity_us - ws->active_from_us) / 1000;
        ws->active_since_ms = mono;
    }
    /* Which live workspaces fail (timeout, files): decided first, recorded last, so that the
     * `failed` signal reaches a parent whose agent runs again. Their subtrees are not started:
     * the failure takes them with it (tree.c's cascade). */
    char(*why)[64] = calloc(w->n_ws ? w->n_ws : 1, sizeof(*why));
    if (!why)
        return cerr_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < w->n_ws; i++) {
        struct wacp_ws *ws = w->ws[i];
        if (!(WS_BIT(ws->state) & WS_LIVE_MASK))
            continue;
        /* Its timeout's time so far: from its creation, less its time suspended (the meter
         * pauses), up to now if it is suspended still (and then the pause goes on from now). */
        int64_t paused_us = ws->suspended_total_us;
        if (ws->state == WS_SUSPENDED && ws->suspended_from_us && now_us > ws->suspended_from_us)
            paused_us += now_us - ws->suspended_from_us;
        if (ws->state == WS_SUSPENDED)
            ws->suspended_at_ms = mono;
        int64_t elapsed_ms = (now_us - ws->created_us - paused_us) / 1000;
        if (elapsed_ms < 0)
            elapsed_ms = 0;
        if (ws->timeout_ms) {
            st->timers_reconstructed++;
            if ((uint64_t)elapsed_ms >= ws->timeout_ms && times_out(ws->state))
                snprintf(why[i], sizeof(why[i]), "timeout");
            else
                ws->deadline_ms = mono + (ws->timeout_ms - (uint64_t)elapsed_ms);
        }
        if (!why[i][0] && ws->parent)
            files_match(w, ws, why[i], sizeof(why[i]));
    }
    int rc = 0;
    for (size_t i = 0; i < w->n_ws && rc == 0; i++) {
        struct wacp_ws *ws = w->ws[i];
        bool doomed = false;
        for (size_t j = 0; j < w->n_ws && !doomed; j++)
            doomed = why[j][0] && (w->ws[j] == ws || wacp_tree_is_ancestor(w->ws[j], ws));
        if (!(WS_BIT(ws->state) & WS_LIVE_MASK) || doomed)
            continue;
        int64_t elapsed_ms = (now_us - ws->created_us) / 1000;
        struct wacp_ws_info info = wacp_workspace_info(ws);
        info.wall_elapsed = elapsed_ms > 0 ? (double)elapsed_ms / 1000.0 : 0;
        info.recovered = true;
        info.last_activity_us = ws->last_activity_us;
        /* Silent for a whole liveness interval before the crash (from its last recorded
         * activity, the downtime included): warned now; the restarted agent's own interval
         * runs from that entry too (the runtime's first check comes when it is up). */
        double li = info.budgets.liveness_interval;
        if (li > 0 && ws->last_activity_us && (double)(now_us - ws->last_activity_us) >= li * 1e6) {
            char when[40];
            trail_format_time(ws->last_activity_us, when, sizeof(when));
            cJSON *lb = wacp_core_obj();
            wacp_core_add_str(lb, "workspace_id", ws->id);
            cJSON_AddNumberToObject(lb, "interval", li);
            wacp_core_add_str(lb, "last_activity_timestamp", when);
            wacp_core_add_str(lb, "action", "warned");
            cJSON_AddTrueToObject(lb, "recovery");
            int lr = wacp_core_rec(w, ws->id, "system", "liveness_warning", lb);
            cJSON_Delete(lb);
            if (lr < 0) {
                rc = cerr_set(err, EIO, "the trail cannot be written");
                break;
            }
        }
        if (li > 0)
            st->timers_reconstructed++;
        struct cerr ce = {0};
        if (w->h.start(w->h.data, &info, &ce) < 0) {
            snprintf(why[i], sizeof(why[i]), "recovery_start_failed");
            continue;
        }
        if (info.budgets.wall_time > 0)
            st->timers_reconstructed++;
        st->workspaces_recovered++;
        /* Told first, so that what follows (its envelopes again) reads as after a recovery. */
        cJSON *p = wacp_core_obj();
        wacp_core_add_str(p, "workspace_id", ws->id);
        wacp_core_add_str(p, "state", wacp_tree_state_name(ws->state));
        wacp_core_add_str(p, "checkpoint_head", ws->head);
        cJSON_AddNumberToObject(p, "checkpoints", (double)ws->n_checkpoints);
        cJSON_AddNumberToObject(p, "inbox", (double)ws->inbox);
        w->h.notify(w->h.data, ws->id, "wacp/recovered", p);
        size_t q = ws->queued;
        wacp_envelope_flush(w, ws);
        st->envelopes_redelivered += q - ws->queued;
    }
    for (size_t i = 0; i < n_lost && i < 64 && rc == 0; i++) {
        struct wacp_ws *from = wacp_tree_find(w, lost_env[i]->from),
                       *to = wacp_tree_find(w, lost_env[i]->to);
        char sid[WACP_ID_LEN];
        if (from && to && (WS_BIT(from->state) & WS_LIVE_MASK) &&
            wacp_signal_emit(w, to, "protocol", "failed", "payload_lost_in_crash", lost_env[i]->id, from,
                             false, sid) < 0)
            rc = cerr_set(err, EIO, "the trail cannot be written");
    }
    for (size_t i = 0; i < w->n_ws && rc == 0; i++) {
        struct wacp_ws *ws = w->ws[i];
        if (!why[i][0] || !(WS_BIT(ws->state) & WS_LIVE_MASK))
            continue;
        ws->stopped = true; /* never started again: nothing to stop */
        if (wacp_tree_set_state(w, ws, WS_FAILED, "protocol", why[i]) < 0) {
            rc = cerr_set(err, EIO, "the trail cannot be written");
            break;
        }
        st->workspaces_failed++;
        /* Its agent cannot say `failed`: the runtime says it for it (as wacp_agent_ended). */
        char sid[WACP_ID_LEN];
        if (ws->parent &&
            wacp_signal_emit(w, ws, "protocol", "failed", why[i], NULL, NULL, false, sid) < 0)
            rc = cerr_set(err, EIO, "the trail cannot be written");
    }
    free(why);
    /* After the failures: a gate on what they took with them is resolved, not opened again. */
    if (rc == 0 && (gates_restore(w, now_us, mono, st) < 0 || escs_restore(w, now_us, mono, st) < 0))
        rc = cerr_set(err, EIO, "the trail cannot be written");
    /* A gate whose timeout passed while corral was down takes its fallback now, recorded before
     * recovery_completed (recovery spec 3.4: timers as absolute deadlines). */
    if (rc == 0)
        highway_tick(w->hw, mono);
    return rc;
}
