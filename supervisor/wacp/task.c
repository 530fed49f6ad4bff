/* supervisor/wacp/task.c: tasks: the run's DAG (cycles and dangling dependencies refused,
 * dependencies frozen at creation), the eight statuses driven by the bound workspace, the
 * draft -> pending gate, and workspace_history across retries. */
#include "supervisor/wacp/task.h"

#include "supervisor/wacp/core.h"
#include "supervisor/wacp/tree.h"

#include <stdio.h>
#include <string.h>

#define MAX_DEPENDS 64
#define MAX_BATCH 256

static const char *const status_names[] = {"draft",     "pending", "assigned",   "in_progress",
                                           "completed", "failed",  "integrated", "cancelled"};

const char *wacp_task_status_name(enum task_status s)
{
    return (unsigned)s < ARRAY_SIZE(status_names) ? status_names[s] : "?";
}

#define TB(s) (1u << (s))
/* The task spec's state derivation table (section 4), as FROM -> allowed TO. completed ->
 * failed: a completed task whose workspace is revised or rejected may be retried. */
static const unsigned task_moves[] = {
    [TASK_DRAFT] = TB(TASK_PENDING) | TB(TASK_CANCELLED),
    [TASK_PENDING] = TB(TASK_ASSIGNED) | TB(TASK_CANCELLED),
    [TASK_ASSIGNED] = TB(TASK_IN_PROGRESS) | TB(TASK_FAILED) | TB(TASK_CANCELLED),
    [TASK_IN_PROGRESS] = TB(TASK_COMPLETED) | TB(TASK_FAILED) | TB(TASK_CANCELLED),
    [TASK_COMPLETED] = TB(TASK_INTEGRATED) | TB(TASK_FAILED) | TB(TASK_CANCELLED),
    [TASK_FAILED] = TB(TASK_PENDING) | TB(TASK_CANCELLED),
    [TASK_INTEGRATED] = 0,
    [TASK_CANCELLED] = 0,
};

void wacp_task_free(struct wacp_task *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->description);
    free(t->depends_on);
    free(t->history);
    free(t);
}

struct wacp_task *wacp_task_find(const struct wacp *w, const char *id)
{
    for (size_t i = 0; id && i < w->n_tasks; i++)
        if (!strcmp(w->tasks[i]->id, id))
            return w->tasks[i];
    return NULL;
}

static cJSON *task_json(const struct wacp_task *t)
{
    cJSON *o = wacp_core_obj();
    wacp_core_add_str(o, "task_id", t->id);
    wacp_core_add_str(o, "name", t->name);
    wacp_core_add_str(o, "description", t->description);
    wacp_core_add_str(o, "status", wacp_task_status_name(t->status));
    cJSON *d = cJSON_AddArrayToObject(o, "depends_on");
    for (size_t i = 0; d && i < t->n_depends; i++)
        cJSON_AddItemToArray(d, cJSON_CreateString(t->depends_on[i]));
    wacp_core_add_str(o, "parent_task", t->parent_task);
    wacp_core_add_str(o, "workspace_ref", t->workspace_ref);
    cJSON *h = cJSON_AddArrayToObject(o, "workspace_history");
    for (size_t i = 0; h && i < t->n_history; i++)
        cJSON_AddItemToArray(h, cJSON_CreateString(t->history[i]));
    wacp_core_add_str(o, "checkpoint_ref", t->checkpoint_ref);
    return o;
}

int wacp_task_set(struct wacp *w, struct wacp_task *t, enum task_status to, const char *event,
                  const char *actor, const char *ws)
{
    if (!(task_moves[t->status] & TB(to)))
        return -EINVAL;
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "task_id", t->id);
    wacp_core_add_str(b, "from", wacp_task_status_name(t->status));
    wacp_core_add_str(b, "to", wacp_task_status_name(to));
    wacp_core_add_str(b, "workspace_ref", t->workspace_ref);
    if (to == TASK_COMPLETED || to == TASK_INTEGRATED)
        wacp_core_add_str(b, "checkpoint_ref", t->checkpoint_ref);
    cJSON_AddNumberToObject(b, "attempt_number", (double)t->n_history);
    int r = wacp_core_rec(w, ws && ws[0] ? ws : NULL, actor, event ? event : "task_status_changed", b);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    t->status = to;
    return 0;
}

int wacp_task_bind(struct wacp *w, struct wacp_task *t, struct wacp_ws *ws, const char *actor)
{
    if (t->status == TASK_FAILED && wacp_task_set(w, t, TASK_PENDING, NULL, actor, ws->id) < 0)
        return -EIO; /* the coordinator retries */
    if (t->status != TASK_PENDING)
        return -EINVAL;
    char(*h)[WACP_ID_LEN] = realloc(t->history, (t->n_history + 1) * sizeof(*t->history));
    if (!h)
        return -ENOMEM;
    t->history = h;
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "task_id", t->id);
    wacp_core_add_str(b, "workspace_id", ws->id);
    cJSON_AddNumberToObject(b, "attempt_number", (double)t->n_history + 1);
    int r = wacp_core_rec(w, ws->id, actor, "task_assigned", b);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    snprintf(t->history[t->n_history++], WACP_ID_LEN, "%s", ws->id);
    snprintf(t->workspace_ref, sizeof(t->workspace_ref), "%s", ws->id);
    t->checkpoint_ref[0] = 0;
    t->status = TASK_ASSIGNED;
    snprintf(ws->task, sizeof(ws->task), "%s", t->id);
    return 0;
}

static struct wacp_task *bound(const struct wacp *w, const struct wacp_ws *ws)
{
    struct wacp_task *t = ws->task[0] ? wacp_task_find(w, ws->task) : NULL;
    return t && !strcmp(t->workspace_ref, ws->id) ? t : NULL;
}

void wacp_task_on_started(struct wacp *w, struct wacp_ws *ws)
{
    struct wacp_task *t = bound(w, ws);
    if (t && t->status == TASK_ASSIGNED)
        wacp_task_set(w, t, TASK_IN_PROGRESS, NULL, "protocol", ws->id);
}

void wacp_task_follow(struct wacp *w, struct wacp_ws *ws, enum ws_state s)
{
    struct wacp_task *t = bound(w, ws);
    if (!t)
        return;
    switch (s) {
    case WS_INTEGRATING:
        if (t->status == TASK_ASSIGNED)
            wacp_task_set(w, t, TASK_IN_PROGRESS, NULL, "protocol", ws->id);
        snprintf(t->checkpoint_ref, sizeof(t->checkpoint_ref), "%s", ws->final_cp);
        wacp_task_set(w, t, TASK_COMPLETED, "task_completed", "protocol", ws->id);
        break;
    case WS_CLOSED: wacp_task_set(w, t, TASK_INTEGRATED, NULL, "protocol", ws->id); break;
    case WS_FAILED: wacp_task_set(w, t, TASK_FAILED, "task_failed", "protocol", ws->id); break;
    default: break;
    }
}

/* ---- creation: one task, or a batch whose dependencies may name each other by "ref" */

struct draft {
    const char *ref, *name, *description, *parent;
    const cJSON *deps;
    int state; /* DFS colour */
    struct wacp_task *t;
};

static int find_ref(struct draft *d, size_t n, const char *ref)
{
    for (size_t i = 0; i < n; i++)
        if (d[i].ref && !strcmp(d[i].ref, ref))
            return (int)i;
    return -1;
}

/* Depth-first search over the batch's own edges: grey -> grey is a cycle. */
static bool has_cycle(struct draft *d, size_t n, size_t i, const char **where)
{
    d[i].state = 1;
    const cJSON *x;
    cJSON_ArrayForEach (x, d[i].deps) {
        int k = find_ref(d, n, x->valuestring);
        if (k < 0)
            continue;
        if (d[k].state == 1 || (d[k].state == 0 && has_cycle(d, n, (size_t)k, where))) {
            if (!*where)
                *where = d[k].ref;
            return true;
        }
    }
    d[i].state = 2;
    return false;
}

static int check_draft(struct wacp *w, struct wacp_ws *c, struct draft *d, size_t n, size_t i,
                       struct wacp_err *e)
{
    static const char M[] = "wacp/task.create";
    if (!d[i].name || !d[i].name[0] || strlen(d[i].name) > 200)
        return wacp_core_fail(e, -32602, "invalid_params", "a task has a name of 1-200 characters");
    if (d[i].description && strlen(d[i].description) > 4096)
        return wacp_core_fail(e, -32602, "invalid_params", "description is at most 4096 bytes");
    if (d[i].deps && (!cJSON_IsArray(d[i].deps) || cJSON_GetArraySize(d[i].deps) > MAX_DEPENDS))
        return wacp_core_fail(e, -32602, "invalid_params", "depends_on is an array of at most %d ids",
                              MAX_DEPENDS);
    const cJSON *x;
    cJSON_ArrayForEach (x, d[i].deps) {
        if (!cJSON_IsString(x))
            return wacp_core_fail(e, -32602, "invalid_params", "depends_on holds task ids (strings)");
        if (d[i].ref && !strcmp(x->valuestring, d[i].ref))
            return wacp_core_deny(w, c, M, e, -32602, "cycle", "task '%.64s' depends on itself",
                                  d[i].ref);
        if (find_ref(d, n, x->valuestring) < 0 && !wacp_task_find(w, x->valuestring))
            return wacp_core_deny(w, c, M, e, WACP_E_NOT_FOUND, "not_found",
                                  "depends_on names no task '%.80s'", x->valuestring);
        for (const cJSON *y = d[i].deps->child; y != x; y = y->next)
            if (!strcmp(y->valuestring, x->valuestring))
                return wacp_core_fail(e, -32602, "invalid_params", "depends_on lists '%.80s' twice",
                                      x->valuestring);
    }
    if (d[i].parent && !wacp_task_find(w, d[i].parent) && find_ref(d, n, d[i].parent) < 0)
        return wacp_core_deny(w, c, M, e, WACP_E_NOT_FOUND, "not_found",
                              "parent_task names no task '%.80s'", d[i].parent);
    return 0;
}

static const char *opt_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void notify_coordinator(struct wacp *w, const struct highway_gate *g, const char *what)
{
    struct wacp_ws *root = wacp_tree_root(w);
    if (!root)
        return;
    cJSON *p = highway_gate_json(g, true, wacp_core_now_ms());
    cJSON_AddStringToObject(p, "event", what);
    w->h.notify(w->h.data, root->id, "wacp/highway", p);
}

/* ---- task approval (task spec 4, highway spec 4) */

static void on_task_gate(void *data, const struct highway_gate *g, enum highway_action a,
                         const cJSON *mods)
{
    struct wacp *w = data;
    struct wacp_task *t = wacp_task_find(w, g->task_ref);
    if (!t || t->status != TASK_DRAFT)
        return; /* cancelled meanwhile: the gate was invalidated with it */
    if (a == HIGHWAY_APPROVE || a == HIGHWAY_MODIFY) {
        const cJSON *v;
        if (a == HIGHWAY_MODIFY && (v = cJSON_GetObjectItemCaseSensitive(mods, "name")) &&
            cJSON_IsString(v)) {
            char *s = strdup(v->valuestring);
            if (s) {
                free(t->name);
                t->name = s;
            }
        }
        if (a == HIGHWAY_MODIFY && (v = cJSON_GetObjectItemCaseSensitive(mods, "description")) &&
            cJSON_IsString(v)) {
            char *s = strdup(v->valuestring);
            if (s) {
                free(t->description);
                t->description = s;
            }
        }
        cJSON *b = wacp_core_obj();
        wacp_core_add_str(b, "task_id", t->id);
        wacp_core_add_str(b, "from", "draft");
        wacp_core_add_str(b, "to", "pending");
        wacp_core_add_str(b, "gate_id", g->id);
        const char *src = !strcmp(g->actor, "fallback") ? "timeout_auto_approve" : "human";
        wacp_core_add_str(b, "approval", src);
        wacp_core_add_str(b, "approval_source", src);
        int r = wacp_core_rec(w, NULL, g->actor, "task_approved", b);
        cJSON_Delete(b);
        if (r == 0)
            t->status = TASK_PENDING;
        return;
    }
    wacp_task_set(w, t, TASK_CANCELLED, NULL, g->actor, NULL);
    if (a == HIGHWAY_ESCALATE)
        notify_coordinator(w, g, "escalated_to_coordinator");
}

/* What a person decides on: the task as proposed. */
static cJSON *gate_subject(const struct wacp_task *t)
{
    cJSON *s = wacp_core_obj();
    wacp_core_add_str(s, "task_id", t->id);
    wacp_core_add_str(s, "name", t->name);
    wacp_core_add_str(s, "description", t->description);
    cJSON *d = cJSON_AddArrayToObject(s, "depends_on");
    for (size_t i = 0; d && i < t->n_depends; i++)
        cJSON_AddItemToArray(d, cJSON_CreateString(t->depends_on[i]));
    wacp_core_add_str(s, "parent_task", t->parent_task);
    return s;
}

static int human_gate(struct wacp *w, struct wacp_task *t, bool by_coordinator)
{
    double timeout;
    enum policy_fallback fb;
    if (!wacp_gate_rule(w, POLICY_GATE_TASK_APPROVAL, &timeout, &fb))
        return 0; /* off: the caller approves at once */
    cJSON *s = gate_subject(t);
    /* Its guard key is what it asks for, not its id: a re-submitted task is the same subject. */
    cJSON *k = cJSON_Duplicate(s, true);
    cJSON_DeleteItemFromObject(k, "task_id");
    char key[72];
    highway_subject_key(k, key);
    cJSON_Delete(k);
    struct highway_gate_req r = {
        .type = POLICY_GATE_TASK_APPROVAL,
        .subject = s,
        .subject_id = key,
        .task_ref = t->id,
        .graph_ref = w->graph,
        .timeout = timeout,
        .fallback = fb,
        .by_coordinator = by_coordinator,
        .fn = on_task_gate,
        .fn_data = w,
        .now_ms = wacp_core_now_ms(),
        .wall_ms = wacp_core_wall_ms(),
    };
    struct highway_gate *g;
    int rc = highway_gate_open(w->hw, &r, &g);
    cJSON_Delete(s);
    if (rc < 0)
        return rc;
    return rc == 1 ? 1 : 0; /* 0: the guard let the coordinator's re-submission through */
}

int wacp_task_gate_restore(struct wacp *w, struct wacp_task *t, struct highway_gate_req *r,
                           const char *id, uint64_t deadline_ms)
{
    cJSON *s = gate_subject(t);
    r->subject = s;
    r->task_ref = t->id;
    r->graph_ref = w->graph;
    r->fn = on_task_gate;
    r->fn_data = w;
    struct highway_gate *g;
    int rc = highway_gate_restore(w->hw, r, id, deadline_ms, &g);
    cJSON_Delete(s);
    return rc < 0 ? rc : 0;
}

/* The draft -> pending gate (task spec 4): off (or the re-entry guard), it approves at once; on,
 * it waits for the human highway, whose timeout runs its fallback. */
static int gate(struct wacp *w, struct wacp_task *t, const struct wacp_ws *c)
{
    int g = human_gate(w, t, wacp_tree_is_coordinator(c));
    if (g != 0)
        return g < 0 ? g : 0;
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "task_id", t->id);
    wacp_core_add_str(b, "approval",
                      w->session.highway && w->session.highway->gates[POLICY_GATE_TASK_APPROVAL].enabled
                          ? "reentry_guard"
                          : "gate_off");
    wacp_core_add_str(b, "from", "draft");
    wacp_core_add_str(b, "to", "pending");
    int r = wacp_core_rec(w, NULL, "system", "task_approved", b);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    t->status = TASK_PENDING;
    return 0;
}

int wacp_task_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                            struct wacp_err *e)
{
    static const char M[] = "wacp/task.create";
    if (!wacp_tree_is_coordinator(c) && !c->delegate)
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "tasks are defined by the coordinator (or a delegate)");
    const cJSON *batch = cJSON_GetObjectItemCaseSensitive(p, "tasks");
    if (batch && cJSON_GetArraySize(p) != 1)
        return wacp_core_fail(e, -32602, "invalid_params", "give either \"tasks\" or one task's fields");
    size_t n = batch ? (size_t)cJSON_GetArraySize(batch) : 1;
    if (n == 0 || n > MAX_BATCH)
        return wacp_core_fail(e, -32602, "invalid_params", "tasks holds 1 to %d tasks", MAX_BATCH);
    if (w->n_tasks + n > WACP_MAX_TASKS)
        return wacp_core_deny(w, c, M, e, WACP_E_LIMIT, "limit", "this run holds %d tasks at most",
                              WACP_MAX_TASKS);
    _cleanup_free_ struct draft *d = calloc(n, sizeof(*d));
    if (!d)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const cJSON *o = batch ? cJSON_GetArrayItem(batch, (int)i) : p;
        if (!cJSON_IsObject(o))
            return wacp_core_fail(e, -32602, "invalid_params", "tasks holds objects");
        if (batch) {
            const cJSON *k;
            cJSON_ArrayForEach (k, o)
                if (strcmp(k->string, "ref") && strcmp(k->string, "name") &&
                    strcmp(k->string, "description") && strcmp(k->string, "depends_on") &&
                    strcmp(k->string, "parent_task"))
                    return wacp_core_fail(e, -32602, "invalid_params", "a task takes no '%.64s'",
                                          k->string);
            d[i].ref = opt_str(o, "ref");
            if (!d[i].ref || !d[i].ref[0] || strlen(d[i].ref) > 64 || find_ref(d, i, d[i].ref) >= 0)
                return wacp_core_fail(e, -32602, "invalid_params",
                                      "each task of a batch has its own \"ref\" (1-64 characters)");
        }
        d[i].name = opt_str(o, "name");
        d[i].description = opt_str(o, "description");
        d[i].parent = opt_str(o, "parent_task");
        d[i].deps = cJSON_GetObjectItemCaseSensitive(o, "depends_on");
        const cJSON *dj = cJSON_GetObjectItemCaseSensitive(o, "description");
        const cJSON *pj = cJSON_GetObjectItemCaseSensitive(o, "parent_task");
        if ((dj && !d[i].description) || (pj && !d[i].parent))
            return wacp_core_fail(e, -32602, "invalid_params",
                                  "description and parent_task are strings");
    }
    for (size_t i = 0; i < n; i++)
        if (check_draft(w, c, d, n, i, e) < 0)
            return -1;
    for (size_t i = 0; i < n; i++) {
        const char *where = NULL;
        if (d[i].state == 0 && has_cycle(d, n, i, &where))
            return wacp_core_deny(
                w, c, M, e, -32602, "cycle",
                "the dependencies form a cycle through '%.64s'; a task graph is acyclic",
                where ? where : "?");
    }
    if (!w->graph[0]) {
        char g[WACP_ID_LEN];
        wacp_core_new_id("graph", g);
        cJSON *b = wacp_core_obj();
        wacp_core_add_str(b, "graph_id", g);
        int r = wacp_core_rec(w, c->id, c->role, "graph_created", b);
        cJSON_Delete(b);
        if (r < 0)
            return wacp_core_trail_err(e);
        snprintf(w->graph, sizeof(w->graph), "%s", g);
    }
    if (!wacp_core_grow((void **)&w->tasks, &w->cap_tasks, w->n_tasks + n, sizeof(*w->tasks)))
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    /* Ids first, so a batch's refs resolve to them. */
    for (size_t i = 0; i < n; i++) {
        struct wacp_task *t = calloc(1, sizeof(*t));
        if (!t || !(t->name = strdup(d[i].name)) ||
            (d[i].description && !(t->description = strdup(d[i].description)))) {
            wacp_task_free(t);
            for (size_t k = 0; k < i; k++)
                wacp_task_free(d[k].t);
            return wacp_core_fail(e, -32603, "internal", "out of memory");
        }
        wacp_core_new_id("task", t->id);
        t->created_ms = wacp_core_now_ms();
        d[i].t = t;
    }
    for (size_t i = 0; i < n; i++) {
        struct wacp_task *t = d[i].t;
        size_t nd = d[i].deps ? (size_t)cJSON_GetArraySize(d[i].deps) : 0;
        t->depends_on = nd ? calloc(nd, sizeof(*t->depends_on)) : NULL;
        if (nd && !t->depends_on) {
            for (size_t k = 0; k < n; k++)
                wacp_task_free(d[k].t);
            return wacp_core_fail(e, -32603, "internal", "out of memory");
        }
        const cJSON *x;
        cJSON_ArrayForEach (x, d[i].deps) {
            int k = find_ref(d, n, x->valuestring);
            snprintf(t->depends_on[t->n_depends++], WACP_ID_LEN, "%s",
                     k >= 0 ? d[k].t->id : x->valuestring);
        }
        if (d[i].parent) {
            int k = find_ref(d, n, d[i].parent);
            snprintf(t->parent_task, sizeof(t->parent_task), "%s", k >= 0 ? d[k].t->id : d[i].parent);
        }
    }
    int rc = 0;
    size_t made = 0;
    for (; made < n; made++) {
        struct wacp_task *t = d[made].t;
        cJSON *b = task_json(t);
        wacp_core_add_str(b, "graph_ref", w->graph);
        int r = wacp_core_rec(w, c->id, c->role, "task_created", b);
        cJSON_Delete(b);
        if (r < 0) {
            rc = -1;
            break;
        }
        w->tasks[w->n_tasks++] = t;
        if (gate(w, t, c) < 0) {
            made++;
            rc = -1;
            break;
        }
    }
    for (size_t k = made; k < n; k++)
        wacp_task_free(d[k].t);
    if (rc < 0)
        return wacp_core_trail_err(e);
    *res = wacp_core_obj();
    if (!batch) {
        wacp_core_add_str(*res, "task_id", d[0].t->id);
        wacp_core_add_str(*res, "status", wacp_task_status_name(d[0].t->status));
        return 0;
    }
    cJSON *a = cJSON_AddArrayToObject(*res, "tasks");
    for (size_t i = 0; a && i < n; i++) {
        cJSON *o = wacp_core_obj();
        wacp_core_add_str(o, "ref", d[i].ref);
        wacp_core_add_str(o, "task_id", d[i].t->id);
        wacp_core_add_str(o, "status", wacp_task_status_name(d[i].t->status));
        cJSON_AddItemToArray(a, o);
    }
    return 0;
}

int wacp_task_method_assign(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                            struct wacp_err *e)
{
    static const char M[] = "wacp/task.assign";
    struct wacp_task *t = wacp_task_find(w, cJSON_GetObjectItemCaseSensitive(p, "task")->valuestring);
    const char *wid = cJSON_GetObjectItemCaseSensitive(p, "workspace")->valuestring;
    struct wacp_ws *ws = wacp_tree_find(w, wid);
    if (!t || !ws || !wacp_tree_visible(c, ws))
        return wacp_core_deny(w, c, M, e, WACP_E_NOT_FOUND, "not_found", "no such task or workspace");
    if (!wacp_tree_governs(c, ws))
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "tasks are bound by the coordinator (or a delegate) to its workspaces");
    if (ws->task[0] || !(WS_BIT(ws->state) & WS_WORKING_MASK))
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_state",
                              "workspace %s already has a task or has ended: one workspace, one task",
                              ws->id);
    if (t->status != TASK_PENDING && t->status != TASK_FAILED)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_state",
                              "task %s is %s; binding takes a pending task", t->id,
                              wacp_task_status_name(t->status));
    int r = wacp_task_bind(w, t, ws, c->role);
    if (r == -ENOMEM)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    if (r < 0)
        return wacp_core_trail_err(e);
    if (ws->state == WS_ACTIVE)
        wacp_task_on_started(w, ws);
    *res = task_json(t);
    return 0;
}

int wacp_task_method_cancel(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                            struct wacp_err *e)
{
    static const char M[] = "wacp/task.cancel";
    if (!wacp_tree_is_coordinator(c) && !c->delegate)
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "tasks are cancelled by the coordinator (or a delegate)");
    struct wacp_task *t = wacp_task_find(w, cJSON_GetObjectItemCaseSensitive(p, "task")->valuestring);
    if (!t)
        return wacp_core_deny(w, c, M, e, WACP_E_NOT_FOUND, "not_found", "no such task");
    if (!(task_moves[t->status] & TB(TASK_CANCELLED)))
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition", "task %s is %s already",
                              t->id, wacp_task_status_name(t->status));
    if (wacp_task_set(w, t, TASK_CANCELLED, NULL, c->role, t->workspace_ref) < 0)
        return wacp_core_trail_err(e);
    /* Its approval gate, if one waits, has no subject now (highway spec 6.5). */
    highway_invalidate(w->hw, NULL, t->id, wacp_core_now_ms());
    struct wacp_ws *ws = wacp_tree_find(w, t->workspace_ref);
    if (ws && (WS_BIT(ws->state) & WS_LIVE_MASK) &&
        wacp_tree_set_state(w, ws, WS_FAILED, c->role, "task_cancelled") < 0)
        return wacp_core_trail_err(e);
    *res = task_json(t);
    return 0;
}

int wacp_task_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                          struct wacp_err *e)
{
    (void)p;
    *res = wacp_core_obj();
    cJSON *a = cJSON_AddArrayToObject(*res, "tasks");
    if (!a)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    for (size_t i = 0; i < w->n_tasks; i++) {
        const struct wacp_task *t = w->tasks[i];
        struct wacp_ws *ws = wacp_tree_find(w, t->workspace_ref);
        if (wacp_tree_is_coordinator(c) || !strcmp(c->task, t->id) ||
            (ws && wacp_tree_visible(c, ws) && c->delegate))
            cJSON_AddItemToArray(a, task_json(t));
    }
    return 0;
}

/* Approval timeouts are the highway's: nothing is due here. */
void wacp_task_tick(struct wacp *w, uint64_t now)
{
    (void)w;
    (void)now;
}

uint64_t wacp_task_next_deadline(const struct wacp *w)
{
    (void)w;
    return UINT64_MAX;
}
