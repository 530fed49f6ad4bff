/* supervisor/wacp/workspace.c: the workspace tree: the nine states and exactly the transitions
 * of PROTOCOL 6.3, creation (budgets within the parent's, owner and originator rules), abort with
 * the failure cascade within an owner, suspension, timeouts, and integration into the parent. */
#include "supervisor/wacp/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const state_names[WS_NSTATES] = {
    "idle", "active", "blocked", "migrating", "suspended", "integrating", "conflicted", "closed",
    "failed",
};

const char *ws_state_name(enum ws_state s)
{
    return (unsigned)s < WS_NSTATES ? state_names[s] : "?";
}

/* PROTOCOL 6.3, row by row: FROM -> the states it may go to. Nothing else moves. */
static const unsigned transitions[WS_NSTATES] = {
    [WS_IDLE] = WS_BIT(WS_ACTIVE) | WS_BIT(WS_FAILED),
    [WS_ACTIVE] = WS_BIT(WS_BLOCKED) | WS_BIT(WS_MIGRATING) | WS_BIT(WS_SUSPENDED) |
                  WS_BIT(WS_INTEGRATING) | WS_BIT(WS_FAILED),
    [WS_BLOCKED] = WS_BIT(WS_ACTIVE) | WS_BIT(WS_MIGRATING) | WS_BIT(WS_SUSPENDED) | WS_BIT(WS_FAILED),
    [WS_MIGRATING] = WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED) | WS_BIT(WS_FAILED),
    [WS_SUSPENDED] = WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED) | WS_BIT(WS_FAILED),
    [WS_INTEGRATING] = WS_BIT(WS_CLOSED) | WS_BIT(WS_CONFLICTED) | WS_BIT(WS_FAILED),
    [WS_CONFLICTED] = WS_BIT(WS_CLOSED) | WS_BIT(WS_FAILED),
    [WS_CLOSED] = 0,
    [WS_FAILED] = 0,
};

bool ws_transition_ok(enum ws_state from, enum ws_state to)
{
    return (unsigned)from < WS_NSTATES && (unsigned)to < WS_NSTATES &&
           (transitions[from] & WS_BIT(to)) != 0;
}

struct wacp_ws *ws_find(const struct wacp *w, const char *id)
{
    if (!id)
        return NULL;
    for (size_t i = 0; i < w->n_ws; i++)
        if (!strcmp(w->ws[i]->id, id))
            return w->ws[i];
    return NULL;
}

struct wacp_ws *ws_root(const struct wacp *w)
{
    return w->n_ws ? w->ws[0] : NULL;
}

bool ws_is_ancestor(const struct wacp_ws *a, const struct wacp_ws *d)
{
    for (const struct wacp_ws *p = d ? d->parent : NULL; p; p = p->parent)
        if (p == a)
            return true;
    return false;
}

bool ws_visible(const struct wacp_ws *caller, const struct wacp_ws *ws)
{
    if (!ws)
        return false;
    if (caller == ws || wacp_is_coordinator(caller))
        return true;
    return caller->delegate && ws_is_ancestor(caller, ws);
}

bool ws_governs(const struct wacp_ws *caller, const struct wacp_ws *ws)
{
    if (!ws || caller == ws || !ws->parent)
        return false;
    if (wacp_is_coordinator(caller))
        return true;
    return caller->delegate && ws_is_ancestor(caller, ws);
}

static bool terminal(enum ws_state s)
{
    return s == WS_CLOSED || s == WS_FAILED;
}

void ws_free(struct wacp_ws *ws)
{
    if (!ws)
        return;
    free(ws->agent);
    free(ws->role);
    free(ws->dir);
    free(ws->owner);
    free(ws->originator);
    cJSON_Delete(ws->directive);
    cJSON_Delete(ws->context);
    wacpf_manifest_clear(&ws->base);
    wacpf_manifest_clear(&ws->conflicts);
    free(ws);
}

/* The children of WS when it ends: within its owner they fail too; another owner's are
 * reparented to the root (PROTOCOL 6.5, User spec 4.4); when the root ends, all fail. */
static int cascade(struct wacp *w, struct wacp_ws *ws, const char *why)
{
    struct wacp_ws *root = ws_root(w);
    for (size_t i = 0; i < w->n_ws; i++) {
        struct wacp_ws *c = w->ws[i];
        if (c->parent != ws || terminal(c->state))
            continue;
        if (ws == root || !strcmp(c->owner, ws->owner)) {
            if (ws_set_state(w, c, WS_FAILED, "protocol", why) < 0)
                return -EIO;
            continue;
        }
        cJSON *b = wacp_obj();
        wacp_add_str(b, "workspace_id", c->id);
        wacp_add_str(b, "from_parent", ws->id);
        wacp_add_str(b, "to_parent", root->id);
        wacp_add_str(b, "owner", c->owner);
        wacp_add_str(b, "reason", "cross_owner_abort");
        int r = wacp_rec(w, c->id, "protocol", "workspace_reparented", b);
        cJSON_Delete(b);
        if (r < 0)
            return r;
        c->parent = root;
    }
    return 0;
}

int ws_set_state(struct wacp *w, struct wacp_ws *ws, enum ws_state to, const char *actor,
                 const char *reason)
{
    if (!ws_transition_ok(ws->state, to))
        return -EINVAL;
    cJSON *b = wacp_obj();
    wacp_add_str(b, "workspace_id", ws->id);
    wacp_add_str(b, "from", ws_state_name(ws->state));
    wacp_add_str(b, "to", ws_state_name(to));
    wacp_add_str(b, "reason", reason);
    int r = wacp_rec(w, ws->id, actor, "workspace_state_changed", b);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    enum ws_state from = ws->state;
    uint64_t now = wacp_now_ms();
    if (to == WS_SUSPENDED || to == WS_MIGRATING) {
        ws->saved = from;
        ws->suspended_at_ms = now;
    }
    if (from == WS_SUSPENDED && ws->deadline_ms && now > ws->suspended_at_ms)
        ws->deadline_ms += now - ws->suspended_at_ms; /* the meter pauses while suspended */
    ws->state = to;
    if (reason)
        snprintf(ws->end_reason, sizeof(ws->end_reason), "%s", reason);
    task_follow(w, ws, to);
    if (!terminal(to))
        return 0;
    env_drop_for(w, ws);
    r = cascade(w, ws, to == WS_FAILED ? "parent_failed" : "parent_closed");
    if (!ws->stopped) {
        ws->stopped = true;
        w->h.stop(w->h.data, ws->id, reason ? reason : ws_state_name(to));
    }
    return r;
}

cJSON *ws_json(const struct wacp_ws *ws)
{
    cJSON *o = wacp_obj();
    if (!o)
        return NULL;
    wacp_add_str(o, "workspace_id", ws->id);
    wacp_add_str(o, "parent", ws->parent ? ws->parent->id : NULL);
    wacp_add_str(o, "state", ws_state_name(ws->state));
    wacp_add_str(o, "role", ws->role);
    wacp_add_str(o, "agent", ws->agent);
    wacp_add_str(o, "owner", ws->owner);
    wacp_add_str(o, "originator", ws->originator);
    wacp_add_str(o, "task", ws->task);
    wacp_add_str(o, "directive_envelope", ws->directive_env);
    cJSON_AddBoolToObject(o, "delegate", ws->delegate);
    cJSON_AddNumberToObject(o, "checkpoints", (double)ws->n_checkpoints);
    wacp_add_str(o, "checkpoint_head", ws->head);
    cJSON_AddNumberToObject(o, "inbox", (double)ws->inbox);
    if (terminal(ws->state))
        wacp_add_str(o, "reason", ws->end_reason);
    cJSON *bu = cJSON_AddObjectToObject(o, "budgets");
    if (bu) {
        cJSON_AddNumberToObject(bu, "memory", (double)ws->budgets.memory);
        cJSON_AddNumberToObject(bu, "pids", (double)ws->budgets.pids);
        cJSON_AddNumberToObject(bu, "cpus", ws->budgets.cpus);
        cJSON_AddNumberToObject(bu, "wall_time", ws->budgets.wall_time);
    }
    return o;
}

/* ---- creation */

static bool user_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64 || !strcmp(s, "system"))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-", s[i]))
            return false;
    return true;
}

/* One budget given by the creator: within [0, parent's] when the parent has one. */
static int budget_u64(const cJSON *b, const char *k, bool size, uint64_t role, uint64_t parent,
                      uint64_t *out, struct wacp_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);
    uint64_t x = role;
    if (v) {
        if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 9.0e15)
            x = (uint64_t)v->valuedouble;
        else if (size && cJSON_IsString(v) && util_parse_size(v->valuestring, &x) == 0 && x > 0)
            ;
        else
            return wacp_fail(e, -32602, "invalid_params", "budgets.%s must be a positive %s", k,
                             size ? "size (bytes or \"512M\")" : "whole number");
        if (parent && x > parent)
            return wacp_fail(e, WACP_E_LIMIT, "budget_exceeds_parent",
                             "budgets.%s %llu is above the parent's %llu: a child's budget stays "
                             "within its parent's", k, (unsigned long long)x,
                             (unsigned long long)parent);
    }
    if (parent && (x == 0 || x > parent))
        x = parent;
    *out = x;
    return 0;
}

static int budget_dbl(const cJSON *b, const char *k, bool secs, double role, double parent,
                      double *out, struct wacp_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);
    double x = role;
    if (v) {
        if (cJSON_IsNumber(v) && v->valuedouble > 0 && isfinite(v->valuedouble) && v->valuedouble < 1e9)
            x = v->valuedouble;
        else if (secs && cJSON_IsString(v) && util_parse_seconds(v->valuestring, &x) == 0)
            ;
        else
            return wacp_fail(e, -32602, "invalid_params", "budgets.%s must be a positive number", k);
        if (parent > 0 && x > parent)
            return wacp_fail(e, WACP_E_LIMIT, "budget_exceeds_parent",
                             "budgets.%s %g is above the parent's %g: a child's budget stays "
                             "within its parent's", k, x, parent);
    }
    if (parent > 0 && (x <= 0 || x > parent))
        x = parent;
    *out = x;
    return 0;
}

static int budgets_for(const cJSON *b, const struct policy_budgets *role,
                       const struct policy_budgets *parent, struct policy_budgets *out,
                       struct wacp_err *e)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, b)
        if (strcmp(k->string, "memory") && strcmp(k->string, "pids") && strcmp(k->string, "cpus") &&
            strcmp(k->string, "wall_time"))
            return wacp_fail(e, -32602, "invalid_params",
                             "budgets takes memory, pids, cpus and wall_time, not '%.64s'", k->string);
    *out = *role;
    if (budget_u64(b, "memory", true, role->memory, parent->memory, &out->memory, e) < 0 ||
        budget_u64(b, "pids", false, role->pids, parent->pids, &out->pids, e) < 0 ||
        budget_dbl(b, "cpus", false, role->cpus, parent->cpus, &out->cpus, e) < 0 ||
        budget_dbl(b, "wall_time", true, role->wall_time, parent->wall_time, &out->wall_time, e) < 0)
        return -1;
    if (parent->output_bytes && (!out->output_bytes || out->output_bytes > parent->output_bytes))
        out->output_bytes = parent->output_bytes;
    if (parent->storage_bytes && (!out->storage_bytes || out->storage_bytes > parent->storage_bytes))
        out->storage_bytes = parent->storage_bytes;
    return 0;
}

static struct wacp_ws *ws_alloc(struct wacp *w, const struct policy_agent *ag,
                                const struct policy_role_view *v)
{
    struct wacp_ws *ws = calloc(1, sizeof(*ws));
    if (!ws)
        return NULL;
    wacp_new_id("ws", ws->id);
    ws->agent = strdup(ag->name);
    ws->role = strdup(ag->role);
    ws->view = *v;
    ws->created_ms = wacp_now_ms();
    if (!ws->agent || !ws->role) {
        ws_free(ws);
        return NULL;
    }
    (void)w;
    return ws;
}

static cJSON *created_body(const struct wacp_ws *ws)
{
    cJSON *b = ws_json(ws);
    if (b) {
        cJSON_ReplaceItemInObject(b, "state", cJSON_CreateString("idle"));
        cJSON_AddNumberToObject(b, "timeout", (double)ws->timeout_ms / 1000.0);
    }
    return b;
}

static int ws_start(struct wacp *w, struct wacp_ws *ws, struct cerr *err)
{
    struct wacp_ws_info info = {
        .id = ws->id,
        .parent = ws->parent ? ws->parent->id : NULL,
        .agent = ws->agent,
        .role = ws->role,
        .dir = ws->dir,
        .owner = ws->owner,
        .originator = ws->originator,
        .budgets = ws->budgets,
    };
    return w->h.start(w->h.data, &info, err);
}

int ws_create_root(struct wacp *w, const char *agent, struct cerr *err)
{
    const struct policy_agent *ag = agent ? policy_agent_find(w->policy, agent)
                                          : policy_coordinator_agent(w->policy);
    if (!ag)
        return cerr_set(err, ENOENT, "wacp: the policy has no agent '%s' to coordinate the run",
                        agent ? agent : "(coordinator)");
    struct policy_role_view v;
    int r = policy_role_resolve(w->policy, ag->role, &v, err);
    if (r < 0)
        return r;
    if (v.base != POLICY_BASE_COORDINATOR)
        return cerr_set(err, EINVAL, "wacp: agent '%s' has role '%s', not the coordinator; the run's "
                        "root workspace belongs to the coordinator", ag->name, ag->role);
    if (!wacp_grow((void **)&w->ws, &w->cap_ws, 1, sizeof(*w->ws)))
        return cerr_set(err, ENOMEM, "out of memory");
    struct wacp_ws *ws = ws_alloc(w, ag, &v);
    if (!ws)
        return cerr_set(err, ENOMEM, "out of memory");
    ws->dir = strdup(w->root_dir);
    ws->owner = strdup(w->root_owner);
    ws->originator = strdup("system");
    ws->budgets = v.budgets;
    ws->timeout_ms = v.budgets.wall_time > 0 ? (uint64_t)(v.budgets.wall_time * 1000.0) : 0;
    ws->deadline_ms = ws->timeout_ms ? ws->created_ms + ws->timeout_ms : 0;
    /* The root's base stays empty: the coordinator creates no checkpoints, and the project
     * directory is never walked as a whole. */
    if (!ws->dir || !ws->owner || !ws->originator) {
        ws_free(ws);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    cJSON *b = created_body(ws);
    r = wacp_rec(w, ws->id, "system", "workspace_created", b);
    cJSON_Delete(b);
    if (r < 0) {
        ws_free(ws);
        return cerr_set(err, EIO, "wacp: the trail cannot be written; nothing was started");
    }
    w->ws[w->n_ws++] = ws;
    if ((r = ws_start(w, ws, err)) < 0) {
        ws_set_state(w, ws, WS_FAILED, "system", "creation_error");
        return r;
    }
    /* The human who started the run gives the coordinator its first envelope (idle -> active). */
    cJSON *p = wacp_obj();
    wacp_add_str(p, "run", "start"); /* no host path: the agent sees its files through its tools */
    wacp_add_str(p, "owner", ws->owner);
    r = env_send_directive(w, "system", ws, p, "human", ws->directive_env);
    ws->directive = p;
    if (r < 0)
        return cerr_set(err, EIO, "wacp: the trail cannot be written");
    return 0;
}

int ws_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                     struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.create";
    if (!policy_role_can(&c->view, "create_workspace") && !c->delegate)
        return wacp_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                         "role '%s' may not create workspaces (only the coordinator or a delegate)",
                         c->role);
    const char *agent = cJSON_GetObjectItemCaseSensitive(p, "agent")->valuestring;
    const struct policy_agent *ag = policy_agent_find(w->policy, agent);
    if (!ag)
        return wacp_fail(e, WACP_E_NOT_FOUND, "not_found",
                         "the policy has no agent '%.80s'; workspace.create names one of its agents",
                         agent);
    struct policy_role_view v;
    struct cerr ce = {0};
    if (policy_role_resolve(w->policy, ag->role, &v, &ce) < 0)
        return wacp_fail(e, -32603, "internal", "%s", ce.msg);
    if (v.base == POLICY_BASE_COORDINATOR)
        return wacp_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                         "agent '%s' has the coordinator role; a run has exactly one coordinator",
                         ag->name);
    const cJSON *dj = cJSON_GetObjectItemCaseSensitive(p, "delegate");
    bool delegate = cJSON_IsTrue(dj);
    if (delegate && !policy_role_can(&c->view, "grant_delegate"))
        return wacp_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                         "only the coordinator grants delegation");
    if (w->n_ws >= w->max_workspaces)
        return wacp_deny(w, c, M, e, WACP_E_LIMIT, "limit",
                         "this run has %llu workspaces, its limit", (unsigned long long)w->max_workspaces);
    const cJSON *oj = cJSON_GetObjectItemCaseSensitive(p, "owner");
    if (oj && !user_id_ok(oj->valuestring))
        return wacp_fail(e, -32602, "invalid_params",
                         "owner must be a user id (1-64 of A-Z a-z 0-9 . _ @ -), not \"system\"");
    const cJSON *tj = cJSON_GetObjectItemCaseSensitive(p, "task");
    struct wacp_task *task = NULL;
    if (tj) {
        task = task_find(w, tj->valuestring);
        if (!task)
            return wacp_fail(e, WACP_E_NOT_FOUND, "not_found", "no task '%.80s'", tj->valuestring);
        if (task->status != TASK_PENDING && task->status != TASK_FAILED)
            return wacp_deny(w, c, M, e, WACP_E_STATE, "invalid_state",
                             "task %s is %s; a workspace is bound to a pending task (or a failed "
                             "one, to retry it)", task->id, task_status_name(task->status));
    }
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(p, "timeout");
    if (to && !(to->valuedouble > 0 && to->valuedouble <= 1e7))
        return wacp_fail(e, -32602, "invalid_params", "timeout must be seconds, > 0");
    struct policy_budgets bud;
    static const cJSON none = {.type = cJSON_Object};
    const cJSON *bj = cJSON_GetObjectItemCaseSensitive(p, "budgets");
    if (budgets_for(bj ? bj : &none, &v.budgets, &c->budgets, &bud, e) < 0) {
        if (e->rpc_code == WACP_E_LIMIT) {
            char why[sizeof(e->msg)]; /* wacp_deny rewrites e: keep the reason apart */
            snprintf(why, sizeof(why), "%s", e->msg);
            return wacp_deny(w, c, M, e, WACP_E_LIMIT, "budget_exceeds_parent", "%s", why);
        }
        return -1;
    }
    double tsec = to ? to->valuedouble : bud.wall_time;
    if (c->budgets.wall_time > 0 && (tsec <= 0 || tsec > c->budgets.wall_time))
        tsec = c->budgets.wall_time;
    cJSON *payload = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "directive"), true);
    char *ptxt = payload ? cJSON_PrintUnformatted(payload) : NULL;
    size_t plen = ptxt ? strlen(ptxt) : 0;
    free(ptxt);
    if (!payload || plen > w->max_payload) {
        cJSON_Delete(payload);
        return wacp_fail(e, -32602, "invalid_params", "the directive is larger than %llu bytes",
                         (unsigned long long)w->max_payload);
    }
    if (!wacp_grow((void **)&w->ws, &w->cap_ws, w->n_ws + 1, sizeof(*w->ws))) {
        cJSON_Delete(payload);
        return wacp_fail(e, -32603, "internal", "out of memory");
    }
    struct wacp_ws *ws = ws_alloc(w, ag, &v);
    if (!ws) {
        cJSON_Delete(payload);
        return wacp_fail(e, -32603, "internal", "out of memory");
    }
    ws->parent = c;
    ws->directive = payload;
    const cJSON *cx = cJSON_GetObjectItemCaseSensitive(p, "context");
    ws->context = cx ? cJSON_Duplicate(cx, true) : NULL;
    ws->delegate = delegate;
    ws->budgets = bud;
    ws->timeout_ms = tsec > 0 ? (uint64_t)(tsec * 1000.0) : 0;
    ws->deadline_ms = ws->timeout_ms ? ws->created_ms + ws->timeout_ms : 0;
    /* Owner: given, else the parent's (User spec 4.2). Originator: always the parent's. */
    ws->owner = strdup(oj ? oj->valuestring : c->owner);
    ws->originator = strdup(c->originator);
    ws->dir = util_printf("%s/ws/%s", w->run_dir, ws->id);
    if (!ws->owner || !ws->originator || !ws->dir) {
        ws_free(ws);
        return wacp_fail(e, -32603, "internal", "out of memory");
    }
    if (task)
        snprintf(ws->task, sizeof(ws->task), "%s", task->id);
    /* Its working memory: a copy of the parent's files, taken now (the layered base). */
    if (wacpf_copy_tree(c->dir, ws->dir, &ws->base, &ce) < 0) {
        cJSON *b = wacp_obj();
        wacp_add_str(b, "agent", ag->name);
        wacp_add_str(b, "reason", ce.msg);
        int r = wacp_rec(w, c->id, c->role, "workspace_rejected", b);
        cJSON_Delete(b);
        ws_free(ws);
        if (r < 0)
            return wacp_trail_err(e);
        return wacp_fail(e, -32603, "creation_error", "cannot copy the parent's files: %s", ce.msg);
    }
    cJSON *b = created_body(ws);
    int r = wacp_rec(w, ws->id, c->role, "workspace_created", b);
    cJSON_Delete(b);
    if (r < 0) {
        ws_free(ws);
        return wacp_trail_err(e);
    }
    w->ws[w->n_ws++] = ws;
    /* The matrix's default rights: the creator to the child, and back where the child's role
     * may send to the creator's (PROTOCOL 5.6). */
    char rid[WACP_ID_LEN];
    if (env_right_add(w, RIGHT_RECEIVE, ws->id, ws->id, c->role, rid) < 0 ||
        env_right_add(w, RIGHT_SEND, c->id, ws->id, c->role, rid) < 0)
        return wacp_trail_err(e);
    bool back = false;
    for (size_t i = 0; i < v.n_caps && !back; i++) {
        const char *t = v.caps[i].text;
        if (strncmp(t, "send:", 5))
            continue;
        const char *arrow = strstr(t, "->");
        /* A delegate answers queries as a local coordinator (PROTOCOL 5.4). */
        if (arrow && (!strcmp(arrow + 2, c->role) || !strcmp(arrow + 2, policy_base_name(c->view.base)) ||
                      (c->delegate && !strcmp(arrow + 2, "coordinator"))))
            back = true;
    }
    if (back && env_right_add(w, RIGHT_SEND, ws->id, c->id, c->role, rid) < 0)
        return wacp_trail_err(e);
    if (task && task_bind(w, task, ws, c->role) < 0)
        return wacp_trail_err(e);
    if ((r = ws_start(w, ws, &ce)) < 0) {
        if (ws_set_state(w, ws, WS_FAILED, "protocol", "creation_error") < 0)
            return wacp_trail_err(e);
        return wacp_fail(e, -32603, "creation_error", "workspace %s could not start its agent: %s",
                         ws->id, ce.msg);
    }
    if (env_send_directive(w, c->id, ws, ws->directive, "agent", ws->directive_env) < 0)
        return wacp_trail_err(e);
    *res = wacp_obj();
    wacp_add_str(*res, "workspace_id", ws->id);
    wacp_add_str(*res, "state", ws_state_name(ws->state));
    wacp_add_str(*res, "directive_envelope", ws->directive_env);
    wacp_add_str(*res, "owner", ws->owner);
    wacp_add_str(*res, "originator", ws->originator);
    return 0;
}

int ws_method_self(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                   struct wacp_err *e)
{
    (void)w, (void)p, (void)e;
    *res = ws_json(c);
    if (*res && c->directive)
        cJSON_AddItemToObject(*res, "directive", cJSON_Duplicate(c->directive, true));
    if (*res && c->context)
        cJSON_AddItemToObject(*res, "context", cJSON_Duplicate(c->context, true));
    return *res ? 0 : wacp_fail(e, -32603, "internal", "out of memory");
}

int ws_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                   struct wacp_err *e)
{
    (void)p;
    *res = wacp_obj();
    cJSON *a = cJSON_AddArrayToObject(*res, "workspaces");
    if (!a)
        return wacp_fail(e, -32603, "internal", "out of memory");
    for (size_t i = 0; i < w->n_ws; i++)
        if (ws_visible(c, w->ws[i]))
            cJSON_AddItemToArray(a, ws_json(w->ws[i]));
    return 0;
}

/* The target of a governing method: visible (else not found: ids do not leak), governed. */
static struct wacp_ws *target_of(struct wacp *w, struct wacp_ws *c, const cJSON *p, const char *m,
                                 const char *cap, struct wacp_err *e)
{
    const char *id = cJSON_GetObjectItemCaseSensitive(p, "workspace")->valuestring;
    struct wacp_ws *t = ws_find(w, id);
    if (!t || !ws_visible(c, t)) {
        wacp_deny(w, c, m, e, WACP_E_NOT_FOUND, "not_found", "no workspace '%.80s' you can see", id);
        return NULL;
    }
    if (!ws_governs(c, t) || (cap && !policy_role_can(&c->view, cap) && !c->delegate)) {
        wacp_deny(w, c, m, e, WACP_E_DENIED, "permission_denied",
                  "role '%s' may not %s workspace %s (the coordinator, or a delegate within its "
                  "subtree, may)", c->role, m + 5, t->id);
        return NULL;
    }
    return t;
}

static cJSON *state_result(const struct wacp_ws *t)
{
    cJSON *o = wacp_obj();
    wacp_add_str(o, "workspace_id", t->id);
    wacp_add_str(o, "state", ws_state_name(t->state));
    return o;
}

int ws_method_abort(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                    struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.abort";
    struct wacp_ws *t = target_of(w, c, p, M, "abort_workspace", e);
    if (!t)
        return -1;
    if (terminal(t->state))
        return wacp_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                         "workspace %s is %s already; terminal workspaces never change", t->id,
                         ws_state_name(t->state));
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(p, "reason");
    char reason[80];
    snprintf(reason, sizeof(reason), "aborted%s%.60s", rj ? ": " : "", rj ? rj->valuestring : "");
    if (ws_set_state(w, t, WS_FAILED, c->role, reason) < 0)
        return wacp_trail_err(e);
    *res = state_result(t);
    return 0;
}

int ws_method_suspend(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                      struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.suspend";
    struct wacp_ws *t = target_of(w, c, p, M, "abort_workspace", e);
    if (!t)
        return -1;
    if (!ws_transition_ok(t->state, WS_SUSPENDED))
        return wacp_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                         "workspace %s is %s; only an active or blocked workspace is suspended",
                         t->id, ws_state_name(t->state));
    char sid[WACP_ID_LEN];
    if (sig_emit(w, c, c->role, "suspend", NULL, t->id, NULL, false, sid) < 0 ||
        ws_set_state(w, t, WS_SUSPENDED, c->role, "suspended") < 0)
        return wacp_trail_err(e);
    *res = state_result(t);
    return 0;
}

int ws_method_resume(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                     struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.resume";
    struct wacp_ws *t = target_of(w, c, p, M, "abort_workspace", e);
    if (!t)
        return -1;
    if (t->state != WS_SUSPENDED)
        return wacp_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                         "workspace %s is %s, not suspended", t->id, ws_state_name(t->state));
    if (ws_set_state(w, t, t->saved, c->role, "resumed") < 0)
        return wacp_trail_err(e);
    env_flush(w, t); /* what queued while it was suspended, in creation order */
    *res = state_result(t);
    return 0;
}

/* Ownership transfer (PROTOCOL 4.8 rule 5): one workspace, no cascade, history untouched. */
int ws_method_transfer(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                       struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.transfer";
    if (!wacp_is_coordinator(c))
        return wacp_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                         "ownership is transferred by the coordinator only");
    struct wacp_ws *t = target_of(w, c, p, M, NULL, e);
    if (!t)
        return -1;
    const char *owner = cJSON_GetObjectItemCaseSensitive(p, "owner")->valuestring;
    if (!user_id_ok(owner))
        return wacp_fail(e, -32602, "invalid_params",
                         "owner must be a user id (1-64 of A-Z a-z 0-9 . _ @ -), not \"system\"");
    if (terminal(t->state))
        return wacp_deny(w, c, M, e, WACP_E_STATE, "invalid_state",
                         "workspace %s is %s: terminal workspaces never change", t->id,
                         ws_state_name(t->state));
    char *o = strdup(owner);
    if (!o)
        return wacp_fail(e, -32603, "internal", "out of memory");
    cJSON *b = wacp_obj();
    wacp_add_str(b, "workspace_id", t->id);
    wacp_add_str(b, "from_owner", t->owner);
    wacp_add_str(b, "to_owner", owner);
    int r = wacp_rec(w, t->id, c->role, "workspace_ownership_transferred", b);
    cJSON_Delete(b);
    if (r < 0) {
        free(o);
        return wacp_trail_err(e);
    }
    free(t->owner);
    t->owner = o;
    *res = state_result(t);
    wacp_add_str(*res, "owner", t->owner);
    return 0;
}

/* ---- integration (PROTOCOL 7.4-7.8, integration spec) */

static cJSON *paths_json(const struct wacp_manifest *m, bool conflicts)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < m->n; i++) {
        if (!conflicts) {
            cJSON_AddItemToArray(a, cJSON_CreateString(m->v[i].path));
            continue;
        }
        cJSON *o = wacp_obj();
        wacp_add_str(o, "type", "content_overlap");
        wacp_add_str(o, "path", m->v[i].path);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *integ_result(const struct wacp_ws *t, const struct wacp_manifest *conflicts,
                           const struct wacp_manifest *applied)
{
    static const struct wacp_manifest none = {0};
    cJSON *o = state_result(t);
    cJSON_AddItemToObject(o, "conflicts", paths_json(conflicts ? conflicts : &none, true));
    cJSON_AddItemToObject(o, "files_applied", paths_json(applied ? applied : &none, false));
    return o;
}

/* Applies CP's files to the parent's directory minus SKIP, then integration_completed and
 * closed. An apply that fails midway fails the workspace (integration error). */
static int merge_close(struct wacp *w, struct wacp_ws *c, struct wacp_ws *t,
                       const struct wacp_checkpoint *cp, const struct wacp_manifest *skip,
                       const char *strategy, cJSON **res, struct wacp_err *e)
{
    struct cerr ce = {0};
    struct wacp_manifest applied = {0};
    for (size_t i = 0; i < cp->files.n; i++)
        if (!wacpf_manifest_get(skip, cp->files.v[i].path) &&
            wacpf_manifest_add(&applied, cp->files.v[i].path, "", 0) < 0) {
            wacpf_manifest_clear(&applied);
            return wacp_fail(e, -32603, "internal", "out of memory");
        }
    /* Write-ahead for real: what says integration started is durable before the first byte of
     * the parent's files changes, so a crash midway leaves a trail that tells. */
    if (w->h.commit && w->h.commit(w->h.data) < 0) {
        wacpf_manifest_clear(&applied);
        return wacp_trail_err(e);
    }
    if (wacpf_integrate(t->parent->dir, &cp->files, skip, w->objects_dir, &w->rules, &ce) < 0) {
        wacpf_manifest_clear(&applied);
        if (ws_set_state(w, t, WS_FAILED, c->role, "integration_error") < 0)
            return wacp_trail_err(e);
        *res = integ_result(t, NULL, NULL);
        wacp_add_str(*res, "error", ce.msg);
        return 0;
    }
    cJSON *b = wacp_obj();
    wacp_add_str(b, "workspace_id", t->id);
    wacp_add_str(b, "checkpoint_id", cp->id);
    wacp_add_str(b, "strategy", strategy);
    wacp_add_str(b, "mode", "normal");
    wacp_add_str(b, "into", t->parent->id);
    cJSON_AddItemToObject(b, "files_applied", paths_json(&applied, false));
    int r = wacp_rec(w, t->id, c->role, "integration_completed", b);
    cJSON_Delete(b);
    if (r < 0 || ws_set_state(w, t, WS_CLOSED, c->role, "integrated") < 0) {
        wacpf_manifest_clear(&applied);
        return wacp_trail_err(e);
    }
    w->sum.integrations++;
    *res = integ_result(t, NULL, &applied);
    wacpf_manifest_clear(&applied);
    return 0;
}

int ws_method_integrate(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                        struct wacp_err *e)
{
    static const char M[] = "wacp/integrate";
    struct wacp_ws *t = target_of(w, c, p, M, "integrate", e);
    if (!t)
        return -1;
    const char *decision = cJSON_GetObjectItemCaseSensitive(p, "decision")->valuestring;
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(p, "strategy");
    const char *strategy = sj ? sj->valuestring : "direct";
    bool accept = !strcmp(decision, "accept");
    if (!accept && strcmp(decision, "revise") && strcmp(decision, "reject"))
        return wacp_fail(e, -32602, "invalid_params",
                         "decision must be \"accept\", \"revise\" or \"reject\"");
    if (strcmp(strategy, "direct") && strcmp(strategy, "layered")) {
        if (!strcmp(strategy, "evaluated"))
            return wacp_fail(e, -32602, "unsupported_strategy",
                             "the evaluated strategy is the coordinator's own merge: read both "
                             "states, write the result, and integrate with \"direct\"");
        return wacp_fail(e, -32602, "invalid_params", "strategy must be \"direct\" or \"layered\"");
    }
    if (t->state != WS_INTEGRATING)
        return wacp_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                         "workspace %s is %s; integration takes a workspace that emitted complete "
                         "(integrating)", t->id, ws_state_name(t->state));
    if (!accept) {
        /* No backward transitions: revise and reject fail the workspace (PROTOCOL 7.4). */
        if (ws_set_state(w, t, WS_FAILED, c->role,
                         !strcmp(decision, "revise") ? "revision_required" : "rejected") < 0)
            return wacp_trail_err(e);
        *res = integ_result(t, NULL, NULL);
        return 0;
    }
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(p, "checkpoint");
    if (!t->final_cp[0])
        return wacp_deny(w, c, M, e, WACP_E_STATE, "no_final_checkpoint",
                         "workspace %s has no final checkpoint to integrate; revise or reject it",
                         t->id);
    if (cj && strcmp(cj->valuestring, t->final_cp))
        return wacp_deny(w, c, M, e, WACP_E_STATE, "not_final_checkpoint",
                         "integration uses the most recent final checkpoint of %s, which is %s",
                         t->id, t->final_cp);
    const struct wacp_checkpoint *cp = cp_find(w, t->final_cp);
    if (!cp)
        return wacp_fail(e, -32603, "internal", "the final checkpoint is missing");
    char sid[WACP_ID_LEN];
    if (sig_emit(w, c, c->role, "integrate", NULL, t->id, NULL, false, sid) < 0)
        return wacp_trail_err(e);
    cJSON *b = wacp_obj();
    wacp_add_str(b, "workspace_id", t->id);
    wacp_add_str(b, "checkpoint_id", cp->id);
    wacp_add_str(b, "strategy", strategy);
    wacp_add_str(b, "mode", "normal");
    wacp_add_str(b, "into", t->parent->id);
    int r = wacp_rec(w, t->id, c->role, "integration_started", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_trail_err(e);
    if (!strcmp(strategy, "layered")) {
        struct wacp_manifest over = {0};
        struct cerr ce = {0};
        if (wacpf_overlaps(t->parent->dir, &cp->files, &t->base, &over, &ce) < 0) {
            wacpf_manifest_clear(&over);
            if (ws_set_state(w, t, WS_FAILED, c->role, "integration_error") < 0)
                return wacp_trail_err(e);
            *res = integ_result(t, NULL, NULL);
            wacp_add_str(*res, "error", ce.msg);
            return 0;
        }
        if (over.n) {
            b = wacp_obj();
            wacp_add_str(b, "workspace_id", t->id);
            wacp_add_str(b, "checkpoint_id", cp->id);
            cJSON_AddItemToObject(b, "conflicts", paths_json(&over, true));
            r = wacp_rec(w, t->id, c->role, "conflict_detected", b);
            cJSON_Delete(b);
            if (r < 0 || ws_set_state(w, t, WS_CONFLICTED, c->role, "content_overlap") < 0) {
                wacpf_manifest_clear(&over);
                return wacp_trail_err(e);
            }
            wacpf_manifest_clear(&t->conflicts);
            t->conflicts = over;
            w->sum.conflicts++;
            *res = integ_result(t, &t->conflicts, NULL);
            return 0;
        }
    }
    return merge_close(w, c, t, cp, NULL, strategy, res, e);
}

int ws_method_resolve(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                      struct wacp_err *e)
{
    static const char M[] = "wacp/conflict.resolve";
    struct wacp_ws *t = target_of(w, c, p, M, "integrate", e);
    if (!t)
        return -1;
    const char *how = cJSON_GetObjectItemCaseSensitive(p, "resolution")->valuestring;
    const cJSON *pj = cJSON_GetObjectItemCaseSensitive(p, "prefer");
    const char *prefer = pj ? pj->valuestring : "child";
    bool rework = !strcmp(how, "agent_rework");
    if (!rework && strcmp(how, "coordinator_resolve"))
        return wacp_fail(e, -32602, !strcmp(how, "escalate") ? "unsupported_resolution" : "invalid_params",
                         "resolution must be \"coordinator_resolve\" or \"agent_rework\" (escalation "
                         "to a human goes through the highway, not built yet)");
    if (strcmp(prefer, "child") && strcmp(prefer, "parent"))
        return wacp_fail(e, -32602, "invalid_params", "prefer must be \"child\" or \"parent\"");
    if (t->state != WS_CONFLICTED)
        return wacp_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                         "workspace %s is %s, not conflicted", t->id, ws_state_name(t->state));
    cJSON *b = wacp_obj();
    wacp_add_str(b, "workspace_id", t->id);
    wacp_add_str(b, "resolution", how);
    if (!rework)
        wacp_add_str(b, "prefer", prefer);
    cJSON_AddItemToObject(b, "conflicts", paths_json(&t->conflicts, true));
    int r = wacp_rec(w, t->id, c->role, "conflict_resolved", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_trail_err(e);
    if (rework) {
        if (ws_set_state(w, t, WS_FAILED, c->role, "agent_rework") < 0)
            return wacp_trail_err(e);
        *res = integ_result(t, NULL, NULL);
        return 0;
    }
    const struct wacp_checkpoint *cp = cp_find(w, t->final_cp);
    if (!cp)
        return wacp_fail(e, -32603, "internal", "the final checkpoint is missing");
    return merge_close(w, c, t, cp, !strcmp(prefer, "parent") ? &t->conflicts : NULL, "layered",
                       res, e);
}

/* ---- time */

static bool times_out(enum ws_state s)
{
    /* The timeout covers active, blocked and conflicted (and idle: a creation that never
     * starts); suspension pauses it, migration and integration are the runtime's own. */
    return s == WS_IDLE || s == WS_ACTIVE || s == WS_BLOCKED || s == WS_CONFLICTED;
}

void ws_tick(struct wacp *w, uint64_t now)
{
    for (size_t i = 0; i < w->n_ws; i++) {
        struct wacp_ws *ws = w->ws[i];
        if (ws->deadline_ms && now >= ws->deadline_ms && times_out(ws->state))
            ws_set_state(w, ws, WS_FAILED, "protocol",
                         ws->state == WS_CONFLICTED ? "conflict_timeout" : "timeout");
    }
}

uint64_t ws_next_deadline(const struct wacp *w)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < w->n_ws; i++) {
        const struct wacp_ws *ws = w->ws[i];
        if (ws->deadline_ms && times_out(ws->state) && ws->deadline_ms < m)
            m = ws->deadline_ms;
    }
    return m;
}
