/* supervisor/wacp/workspace.c: workspaces: creation (budgets within the parent's, owner and
 * originator rules), listing, abort, suspension and resumption, transfer, timeouts. The tree and
 * its states are supervisor/wacp/tree.c; integration is supervisor/wacp/integrate.c. */
#include "supervisor/wacp/workspace.h"
#include "supervisor/conn/rpc.h"

#include "supervisor/wacp/checkpoint.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/envelope.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/jobs.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/task.h"
#include "supervisor/wacp/tree.h"
#include "supervisor/wacp/visibility.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
            return wacp_core_fail(e, -32602, "invalid_params", "budgets.%s must be a positive %s", k,
                                  size ? "size (bytes or \"512M\")" : "whole number");
        if (parent && x > parent)
            return wacp_core_fail(e, WACP_E_LIMIT, "budget_exceeds_parent",
                                  "budgets.%s %llu is above the parent's %llu: a child's budget stays "
                                  "within its parent's",
                                  k, (unsigned long long)x, (unsigned long long)parent);
    }
    if (parent && (x == 0 || x > parent))
        x = parent;
    *out = x;
    return 0;
}

static int budget_dbl(const cJSON *b, const char *k, bool secs, double role, double parent, double *out,
                      struct wacp_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, k);
    double x = role;
    if (v) {
        if (cJSON_IsNumber(v) && v->valuedouble > 0 && isfinite(v->valuedouble) && v->valuedouble < 1e9)
            x = v->valuedouble;
        else if (secs && cJSON_IsString(v) && util_parse_seconds(v->valuestring, &x) == 0)
            ;
        else
            return wacp_core_fail(e, -32602, "invalid_params", "budgets.%s must be a positive number",
                                  k);
        if (parent > 0 && x > parent)
            return wacp_core_fail(e, WACP_E_LIMIT, "budget_exceeds_parent",
                                  "budgets.%s %g is above the parent's %g: a child's budget stays "
                                  "within its parent's",
                                  k, x, parent);
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
    cJSON_ArrayForEach (k, b)
        if (strcmp(k->string, "memory") && strcmp(k->string, "pids") && strcmp(k->string, "cpus") &&
            strcmp(k->string, "wall_time"))
            return wacp_core_fail(e, -32602, "invalid_params",
                                  "budgets takes memory, pids, cpus and wall_time, not '%.64s'",
                                  k->string);
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
    wacp_core_new_id("ws", ws->id);
    ws->agent = strdup(ag->name);
    ws->role = strdup(ag->role);
    ws->view = *v;
    ws->created_ms = wacp_core_now_ms();
    if (!ws->agent || !ws->role) {
        wacp_tree_free(ws);
        return NULL;
    }
    (void)w;
    return ws;
}

static cJSON *created_body(const struct wacp_ws *ws)
{
    cJSON *b = wacp_tree_ws_json(ws);
    if (b) {
        cJSON_ReplaceItemInObject(b, "state", cJSON_CreateString("idle"));
        cJSON_AddNumberToObject(b, "timeout", (double)ws->timeout_ms / 1000.0);
        /* Immutable component 3, in the trail for `corral run --resume` (the directive is its
         * envelope's payload). */
        if (ws->context)
            cJSON_AddItemToObject(b, "context", cJSON_Duplicate(ws->context, true));
        /* Its files at creation, as an object of the run (layered integration's base). */
        if (ws->base_hash[0])
            cJSON_AddStringToObject(b, "base", ws->base_hash);
    }
    return b;
}

struct wacp_ws_info wacp_workspace_info(const struct wacp_ws *ws)
{
    return (struct wacp_ws_info){
        .id = ws->id,
        .parent = ws->parent ? ws->parent->id : NULL,
        .agent = ws->agent,
        .role = ws->role,
        .dir = ws->dir,
        .owner = ws->owner,
        .originator = ws->originator,
        .budgets = ws->budgets,
    };
}

static int ws_start(struct wacp *w, struct wacp_ws *ws, struct cerr *err)
{
    struct wacp_ws_info info = wacp_workspace_info(ws);
    return w->h.start(w->h.data, &info, err);
}

int wacp_workspace_create_root(struct wacp *w, const char *agent, struct cerr *err)
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
        return cerr_set(err, EINVAL,
                        "wacp: agent '%s' has role '%s', not the coordinator; the run's "
                        "root workspace belongs to the coordinator",
                        ag->name, ag->role);
    if (!wacp_core_grow((void **)&w->ws, &w->cap_ws, 1, sizeof(*w->ws)))
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
        wacp_tree_free(ws);
        return cerr_set(err, ENOMEM, "out of memory");
    }
    cJSON *b = created_body(ws);
    r = wacp_core_rec(w, ws->id, "system", "workspace_created", b);
    cJSON_Delete(b);
    if (r < 0) {
        wacp_tree_free(ws);
        return cerr_set(err, EIO, "wacp: the trail cannot be written; nothing was started");
    }
    w->ws[w->n_ws++] = ws;
    if ((r = ws_start(w, ws, err)) < 0) {
        wacp_tree_set_state(w, ws, WS_FAILED, "system", "creation_error");
        return r;
    }
    /* The human who started the run gives the coordinator its first envelope (idle -> active). */
    cJSON *p = wacp_core_obj();
    wacp_core_add_str(p, "run", "start"); /* no host path: the agent sees its files through its tools */
    wacp_core_add_str(p, "owner", ws->owner);
    r = wacp_envelope_send_directive(w, "system", ws, p, "human", ws->directive_env);
    ws->directive = p;
    if (r < 0)
        return cerr_set(err, EIO, "wacp: the trail cannot be written");
    return 0;
}

/* Bytes of V printed compactly (SIZE_MAX when it cannot be printed: refused as too large). */
static size_t printed_len(const cJSON *v)
{
    char *t = v ? cJSON_PrintUnformatted(v) : NULL;
    size_t n = t ? strlen(t) : SIZE_MAX;
    free(t);
    return n;
}

/* A workspace never added to the run: what it held of the run's payload ceiling goes back. */
static void ws_drop(struct wacp *w, struct wacp_ws *ws)
{
    w->payload_total -= ws->held;
    wacp_tree_free(ws);
}

/* What follows the creation's entry: default rights, the task, visibility, the agent, its
 * directive; the answer. */
static int create_started(struct wacp *w, struct wacp_ws *c, struct wacp_ws *ws, struct wacp_task *task,
                          const cJSON *p, cJSON **res, struct wacp_err *e)
{
    /* The matrix's default rights: the creator to the child, and back where the child's role
     * may send to the creator's (PROTOCOL 5.6). */
    char rid[WACP_ID_LEN];
    if (wacp_envelope_right_add(w, RIGHT_RECEIVE, ws->id, ws->id, c->role, rid) < 0 ||
        wacp_envelope_right_add(w, RIGHT_SEND, c->id, ws->id, c->role, rid) < 0)
        return wacp_core_trail_err(e);
    bool back = false;
    for (size_t i = 0; i < ws->view.n_caps && !back; i++) {
        const char *t = ws->view.caps[i].text;
        if (strncmp(t, "send:", 5))
            continue;
        const char *arrow = strstr(t, "->");
        /* A delegate answers queries as a local coordinator (PROTOCOL 5.4). */
        if (arrow &&
            (!strcmp(arrow + 2, c->role) || !strcmp(arrow + 2, policy_base_name(c->view.base)) ||
             (c->delegate && !strcmp(arrow + 2, "coordinator"))))
            back = true;
    }
    if (back && wacp_envelope_right_add(w, RIGHT_SEND, ws->id, c->id, c->role, rid) < 0)
        return wacp_core_trail_err(e);
    if (task && wacp_task_bind(w, task, ws, c->role) < 0)
        return wacp_core_trail_err(e);
    if (wacp_visibility_grant_at_create(w, c, ws, p, e) < 0)
        return -1;
    struct cerr ce = {0};
    if (ws_start(w, ws, &ce) < 0) {
        if (wacp_tree_set_state(w, ws, WS_FAILED, "protocol", "creation_error") < 0)
            return wacp_core_trail_err(e);
        return wacp_core_fail(e, -32603, "creation_error", "workspace %s could not start its agent: %s",
                              ws->id, ce.msg);
    }
    if (wacp_envelope_send_directive(w, c->id, ws, ws->directive, "agent", ws->directive_env) < 0)
        return wacp_core_trail_err(e);
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "workspace_id", ws->id);
    wacp_core_add_str(*res, "state", wacp_tree_state_name(ws->state));
    wacp_core_add_str(*res, "directive_envelope", ws->directive_env);
    wacp_core_add_str(*res, "owner", ws->owner);
    wacp_core_add_str(*res, "originator", ws->originator);
    return 0;
}

/* ---- workspace.create's copy, on the pool (jobs.h) */

struct create_job {
    struct wacp_job j;
    struct wacp_ws *ws; /* not in the tree while its files are copied: nothing can name it */
    cJSON *params;      /* the request's, for what is done once the copy is whole */
    int src_fd;         /* the parent's directory (wacp_tree_dir_open), the job's own */
    char *objects;      /* the run's object store, for the base's manifest */
    struct cerr ce;
    int rc;
};

/* On a worker: the copy, and on failure no half copy left behind. */
static void create_work(struct wacp_job *jb)
{
    struct create_job *cj = (struct create_job *)jb;
    cj->rc = wacp_files_copy_tree(cj->src_fd, cj->ws->dir, &cj->ws->base, &cj->ce);
    /* The base kept where a resume finds it (workspace_created.base): without it a rebuilt
     * workspace's every file would look changed to layered integration. */
    if (cj->rc == 0)
        cj->rc = wacp_files_manifest_store(&cj->ws->base, cj->objects, cj->ws->base_hash, &cj->ce);
    if (cj->rc < 0)
        wacp_files_remove_tree(cj->ws->dir);
}

static void create_free(struct wacp_job *jb)
{
    struct create_job *cj = (struct create_job *)jb;
    if (cj->ws && jb->w)
        ws_drop(jb->w, cj->ws); /* never added to the run */
    else
        wacp_tree_free(cj->ws);
    cJSON_Delete(cj->params);
    free(cj->objects);
    if (cj->src_fd >= 0)
        close(cj->src_fd);
    free(cj);
}

/* The creation refused after the copy was taken (or could not be): recorded, nothing left. */
static int create_reject(struct wacp *w, struct wacp_ws *c, struct create_job *cj, struct wacp_err *e,
                         int rpc, const char *code, const char *why)
{
    if (cj->rc == 0)
        wacp_files_remove_tree(cj->ws->dir); /* rare (the creator ended meanwhile): on the loop */
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "agent", cj->ws->agent);
    wacp_core_add_str(b, "reason", why);
    int r = wacp_core_rec(w, c->id, c->role, "workspace_rejected", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_core_trail_err(e);
    return wacp_core_fail(e, rpc, code, "%s", why);
}

static int create_finish(struct wacp *w, struct wacp_job *jb, cJSON **res, struct wacp_err *e)
{
    struct create_job *cj = (struct create_job *)jb;
    w->pending_creates--;
    struct wacp_ws *c = wacp_tree_find(w, jb->caller); /* workspaces stay in the tree: found */
    if (!c)
        return wacp_core_fail(e, -32603, "internal", "the creating workspace is unknown to the model");
    c->file_readers--;
    char why[sizeof(e->msg)];
    if (cj->rc < 0) {
        snprintf(why, sizeof(why), "cannot copy the parent's files: %.300s", cj->ce.msg);
        return create_reject(w, c, cj, e, -32603, "creation_error", why);
    }
    /* The model went on while the files were copied: what was checked then is checked again. */
    if (!(WS_BIT(c->state) & WS_WORKING_MASK)) {
        snprintf(why, sizeof(why), "your workspace became %s while the new one's files were copied",
                 wacp_tree_state_name(c->state));
        return create_reject(w, c, cj, e, WACP_E_STATE, "invalid_state", why);
    }
    struct wacp_ws *ws = cj->ws;
    struct wacp_task *task = ws->task[0] ? wacp_task_find(w, ws->task) : NULL;
    if (ws->task[0] && (!task || (task->status != TASK_PENDING && task->status != TASK_FAILED))) {
        snprintf(why, sizeof(why), "task %s was bound to another workspace while the files were copied",
                 ws->task);
        return create_reject(w, c, cj, e, WACP_E_STATE, "invalid_state", why);
    }
    if (!wacp_core_grow((void **)&w->ws, &w->cap_ws, w->n_ws + 1, sizeof(*w->ws)))
        return create_reject(w, c, cj, e, -32603, "internal", "out of memory");
    cJSON *b = created_body(ws);
    int r = wacp_core_rec(w, ws->id, c->role, "workspace_created", b);
    cJSON_Delete(b);
    if (r < 0) {
        wacp_files_remove_tree(ws->dir);
        return wacp_core_trail_err(e);
    }
    cj->ws = NULL; /* the tree's from here on */
    w->ws[w->n_ws++] = ws;
    return create_started(w, c, ws, task, cj->params, res, e);
}

int wacp_workspace_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                 struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.create";
    if (!policy_role_can(&c->view, "create_workspace") && !c->delegate)
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "role '%s' may not create workspaces (only the coordinator or a delegate)",
                              c->role);
    const char *agent = cJSON_GetObjectItemCaseSensitive(p, "agent")->valuestring;
    const struct policy_agent *ag = policy_agent_find(w->policy, agent);
    if (!ag)
        return wacp_core_fail(
            e, WACP_E_NOT_FOUND, "not_found",
            "the policy has no agent '%.80s'; workspace.create names one of its agents", agent);
    struct policy_role_view v;
    struct cerr ce = {0};
    if (policy_role_resolve(w->policy, ag->role, &v, &ce) < 0)
        return wacp_core_fail(e, -32603, "internal", "%s", ce.msg);
    if (v.base == POLICY_BASE_COORDINATOR)
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "agent '%s' has the coordinator role; a run has exactly one coordinator",
                              ag->name);
    const cJSON *dj = cJSON_GetObjectItemCaseSensitive(p, "delegate");
    bool delegate = cJSON_IsTrue(dj);
    if (delegate && !policy_role_can(&c->view, "grant_delegate"))
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "only the coordinator grants delegation");
    if (w->n_ws + w->pending_creates >= w->max_workspaces)
        return wacp_core_deny(w, c, M, e, WACP_E_LIMIT, "limit",
                              "this run has %llu workspaces, its limit",
                              (unsigned long long)w->max_workspaces);
    if (c->file_writing)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "workspace_busy",
                              "an integration is writing your workspace's files; create the "
                              "workspace once it is answered");
    const cJSON *oj = cJSON_GetObjectItemCaseSensitive(p, "owner");
    if (oj && !user_id_ok(oj->valuestring))
        return wacp_core_fail(e, -32602, "invalid_params",
                              "owner must be a user id (1-64 of A-Z a-z 0-9 . _ @ -), not \"system\"");
    const cJSON *tj = cJSON_GetObjectItemCaseSensitive(p, "task");
    struct wacp_task *task = NULL;
    if (tj) {
        task = wacp_task_find(w, tj->valuestring);
        if (!task)
            return wacp_core_fail(e, WACP_E_NOT_FOUND, "not_found", "no task '%.80s'", tj->valuestring);
        if (task->status != TASK_PENDING && task->status != TASK_FAILED)
            return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_state",
                                  "task %s is %s; a workspace is bound to a pending task (or a failed "
                                  "one, to retry it)",
                                  task->id, wacp_task_status_name(task->status));
    }
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(p, "timeout");
    if (to && !(to->valuedouble > 0 && to->valuedouble <= 1e7))
        return wacp_core_fail(e, -32602, "invalid_params", "timeout must be seconds, > 0");
    struct policy_budgets bud;
    static const cJSON none = {.type = cJSON_Object};
    const cJSON *bj = cJSON_GetObjectItemCaseSensitive(p, "budgets");
    if (budgets_for(bj ? bj : &none, &v.budgets, &c->budgets, &bud, e) < 0) {
        if (e->rpc_code == WACP_E_LIMIT) {
            char why[sizeof(e->msg)]; /* wacp_core_deny rewrites e: keep the reason apart */
            snprintf(why, sizeof(why), "%s", e->msg);
            return wacp_core_deny(w, c, M, e, WACP_E_LIMIT, "budget_exceeds_parent", "%s", why);
        }
        return -1;
    }
    double tsec = to ? to->valuedouble : bud.wall_time;
    if (c->budgets.wall_time > 0 && (tsec <= 0 || tsec > c->budgets.wall_time))
        tsec = c->budgets.wall_time;
    /* The directive and the context stay parsed for the workspace's life (conflict detection
     * reads the directive's constraints): each is bounded like a payload, and what their trees
     * hold counts toward the run's ceiling on kept payloads. */
    const cJSON *dj0 = cJSON_GetObjectItemCaseSensitive(p, "directive");
    const cJSON *cx = cJSON_GetObjectItemCaseSensitive(p, "context");
    size_t dlen = printed_len(dj0), clen = cx ? printed_len(cx) : 0;
    if (dlen > w->max_payload || clen > w->max_payload)
        return wacp_core_deny(w, c, M, e, -32602, "invalid_params",
                              "the %s is larger than %llu bytes (one payload's limit)",
                              dlen > w->max_payload ? "directive" : "context",
                              (unsigned long long)w->max_payload);
    size_t held = rpc_json_cost(dj0) + rpc_json_cost(cx);
    if (!wacp_core_hold(w, held))
        return wacp_core_deny(w, c, M, e, WACP_E_LIMIT, "memory_limit",
                              "the run keeps %llu bytes of payloads at most, and this directive and "
                              "context would pass it",
                              (unsigned long long)w->max_payload_total);
    cJSON *payload = cJSON_Duplicate(dj0, true);
    if (!payload) {
        w->payload_total -= held;
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    /* The run's array grows when the copy is done (create_finish): copies in flight count. */
    struct wacp_ws *ws = ws_alloc(w, ag, &v);
    if (!ws) {
        cJSON_Delete(payload);
        w->payload_total -= held;
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    ws->parent = c;
    ws->directive = payload;
    ws->context = cx ? cJSON_Duplicate(cx, true) : NULL;
    ws->held = held;
    ws->delegate = delegate;
    ws->budgets = bud;
    ws->timeout_ms = tsec > 0 ? (uint64_t)(tsec * 1000.0) : 0;
    ws->deadline_ms = ws->timeout_ms ? ws->created_ms + ws->timeout_ms : 0;
    /* Owner: given, else the parent's (User spec 4.2). Originator: always the parent's. */
    ws->owner = strdup(oj ? oj->valuestring : c->owner);
    ws->originator = strdup(c->originator);
    ws->dir = util_printf("%s/ws/%s", w->run_dir, ws->id);
    if (!ws->owner || !ws->originator || !ws->dir) {
        ws_drop(w, ws);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    if (task)
        snprintf(ws->task, sizeof(ws->task), "%s", task->id);
    /* Its working memory: a copy of the parent's files, taken now (the layered base), on the
     * pool: the tree learns of the workspace only once the copy is whole (create_finish). */
    struct create_job *cj = calloc(1, sizeof(*cj));
    if (cj)
        cj->src_fd = -1;
    if (!cj || !(cj->params = cJSON_Duplicate(p, true)) || !(cj->objects = strdup(w->objects_dir))) {
        if (cj) {
            cJSON_Delete(cj->params);
            free(cj->objects);
        }
        free(cj);
        ws_drop(w, ws);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    struct cerr oe = {0};
    if ((cj->src_fd = wacp_tree_dir_open(w, c, &oe)) < 0) {
        cJSON_Delete(cj->params);
        free(cj->objects);
        free(cj);
        ws_drop(w, ws);
        return wacp_core_fail(e, -32603, "internal", "%s", oe.msg);
    }
    cj->ws = ws;
    cj->j.work = create_work;
    cj->j.finish = create_finish;
    cj->j.free = create_free;
    c->file_readers++;
    w->pending_creates++;
    return wacp_jobs_run(w, &cj->j, c->id, true, res, e);
}

int wacp_workspace_method_self(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                               struct wacp_err *e)
{
    (void)w, (void)p, (void)e;
    *res = wacp_tree_ws_json(c);
    if (*res && c->directive)
        cJSON_AddItemToObject(*res, "directive", cJSON_Duplicate(c->directive, true));
    if (*res && c->context)
        cJSON_AddItemToObject(*res, "context", cJSON_Duplicate(c->context, true));
    return *res ? 0 : wacp_core_fail(e, -32603, "internal", "out of memory");
}

int wacp_workspace_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                               struct wacp_err *e)
{
    (void)p;
    *res = wacp_core_obj();
    cJSON *a = cJSON_AddArrayToObject(*res, "workspaces");
    if (!a)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    for (size_t i = 0; i < w->n_ws; i++)
        if (wacp_tree_visible(c, w->ws[i]))
            cJSON_AddItemToArray(a, wacp_tree_ws_json(w->ws[i]));
    return 0;
}

struct wacp_ws *wacp_workspace_target_of(struct wacp *w, struct wacp_ws *c, const cJSON *p,
                                         const char *m, const char *cap, struct wacp_err *e)
{
    const char *id = cJSON_GetObjectItemCaseSensitive(p, "workspace")->valuestring;
    struct wacp_ws *t = wacp_tree_find(w, id);
    if (!t || !wacp_tree_visible(c, t)) {
        wacp_core_deny(w, c, m, e, WACP_E_NOT_FOUND, "not_found", "no workspace '%.80s' you can see",
                       id);
        return NULL;
    }
    if (!wacp_tree_governs(c, t) || (cap && !policy_role_can(&c->view, cap) && !c->delegate)) {
        wacp_core_deny(w, c, m, e, WACP_E_DENIED, "permission_denied",
                       "role '%s' may not %s workspace %s (the coordinator, or a delegate within its "
                       "subtree, may)",
                       c->role, m + 5, t->id);
        return NULL;
    }
    return t;
}

cJSON *wacp_workspace_state_result(const struct wacp_ws *t)
{
    cJSON *o = wacp_core_obj();
    wacp_core_add_str(o, "workspace_id", t->id);
    wacp_core_add_str(o, "state", wacp_tree_state_name(t->state));
    return o;
}

int wacp_workspace_method_abort(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.abort";
    struct wacp_ws *t = wacp_workspace_target_of(w, c, p, M, "abort_workspace", e);
    if (!t)
        return -1;
    if (wacp_tree_terminal(t->state))
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                              "workspace %s is %s already; terminal workspaces never change", t->id,
                              wacp_tree_state_name(t->state));
    const cJSON *rj = cJSON_GetObjectItemCaseSensitive(p, "reason");
    char reason[80];
    snprintf(reason, sizeof(reason), "aborted%s%.60s", rj ? ": " : "", rj ? rj->valuestring : "");
    if (wacp_tree_set_state(w, t, WS_FAILED, c->role, reason) < 0)
        return wacp_core_trail_err(e);
    *res = wacp_workspace_state_result(t);
    return 0;
}

int wacp_workspace_method_suspend(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                  struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.suspend";
    struct wacp_ws *t = wacp_workspace_target_of(w, c, p, M, "abort_workspace", e);
    if (!t)
        return -1;
    if (!wacp_tree_transition_ok(t->state, WS_SUSPENDED))
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                              "workspace %s is %s; only an active or blocked workspace is suspended",
                              t->id, wacp_tree_state_name(t->state));
    char sid[WACP_ID_LEN];
    if (wacp_signal_emit(w, c, c->role, "suspend", NULL, t->id, NULL, false, sid) < 0 ||
        wacp_tree_set_state(w, t, WS_SUSPENDED, c->role, "suspended") < 0)
        return wacp_core_trail_err(e);
    *res = wacp_workspace_state_result(t);
    return 0;
}

int wacp_workspace_method_resume(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                 struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.resume";
    struct wacp_ws *t = wacp_workspace_target_of(w, c, p, M, "abort_workspace", e);
    if (!t)
        return -1;
    if (t->state != WS_SUSPENDED)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                              "workspace %s is %s, not suspended", t->id,
                              wacp_tree_state_name(t->state));
    if (wacp_tree_set_state(w, t, t->saved, c->role, "resumed") < 0)
        return wacp_core_trail_err(e);
    wacp_envelope_flush(w, t); /* what queued while it was suspended, in creation order */
    *res = wacp_workspace_state_result(t);
    return 0;
}

/* Ownership transfer (PROTOCOL 4.8 rule 5): one workspace, no cascade, history untouched. */
int wacp_workspace_method_transfer(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                   struct wacp_err *e)
{
    static const char M[] = "wacp/workspace.transfer";
    if (!wacp_tree_is_coordinator(c))
        return wacp_core_deny(w, c, M, e, WACP_E_DENIED, "permission_denied",
                              "ownership is transferred by the coordinator only");
    struct wacp_ws *t = wacp_workspace_target_of(w, c, p, M, NULL, e);
    if (!t)
        return -1;
    const char *owner = cJSON_GetObjectItemCaseSensitive(p, "owner")->valuestring;
    if (!user_id_ok(owner))
        return wacp_core_fail(e, -32602, "invalid_params",
                              "owner must be a user id (1-64 of A-Z a-z 0-9 . _ @ -), not \"system\"");
    if (wacp_tree_terminal(t->state))
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_state",
                              "workspace %s is %s: terminal workspaces never change", t->id,
                              wacp_tree_state_name(t->state));
    char *o = strdup(owner);
    if (!o)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", t->id);
    wacp_core_add_str(b, "from_owner", t->owner);
    wacp_core_add_str(b, "to_owner", owner);
    int r = wacp_core_rec(w, t->id, c->role, "workspace_ownership_transferred", b);
    cJSON_Delete(b);
    if (r < 0) {
        free(o);
        return wacp_core_trail_err(e);
    }
    free(t->owner);
    t->owner = o;
    *res = wacp_workspace_state_result(t);
    wacp_core_add_str(*res, "owner", t->owner);
    return 0;
}

/* ---- time */

static bool times_out(enum ws_state s)
{
    /* The timeout covers active, blocked and conflicted (and idle: a creation that never
     * starts); suspension pauses it, migration and integration are the runtime's own. */
    return s == WS_IDLE || s == WS_ACTIVE || s == WS_BLOCKED || s == WS_CONFLICTED;
}

/* When an active workspace's compute time (time in active, Workspace spec 6's compute_timeout)
 * runs out; 0: no budget or not active. */
static uint64_t compute_deadline(const struct wacp_ws *ws)
{
    if (ws->state != WS_ACTIVE || ws->budgets.compute_time <= 0)
        return 0;
    uint64_t limit = (uint64_t)(ws->budgets.compute_time * 1000.0);
    return ws->active_since_ms + (limit > ws->active_ms ? limit - ws->active_ms : 0);
}

void wacp_workspace_tick(struct wacp *w, uint64_t now)
{
    for (size_t i = 0; i < w->n_ws; i++) {
        struct wacp_ws *ws = w->ws[i];
        uint64_t cd = compute_deadline(ws);
        if (ws->deadline_ms && now >= ws->deadline_ms && times_out(ws->state))
            wacp_tree_set_state(w, ws, WS_FAILED, "protocol",
                                ws->state == WS_CONFLICTED ? "conflict_timeout" : "timeout");
        else if (cd && now >= cd &&
                 wacp_tree_set_state(w, ws, WS_FAILED, "protocol", "budget_exceeded:compute_time") ==
                     0 &&
                 ws->parent) {
            /* its agent is stopped (the state change's stop hook); the parent is told, as of
             * any agent's end */
            char sid[WACP_ID_LEN];
            wacp_signal_emit(w, ws, "protocol", "failed", "budget_exceeded:compute_time", NULL, NULL,
                             false, sid);
        }
    }
}

uint64_t wacp_workspace_next_deadline(const struct wacp *w)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < w->n_ws; i++) {
        const struct wacp_ws *ws = w->ws[i];
        if (ws->deadline_ms && times_out(ws->state) && ws->deadline_ms < m)
            m = ws->deadline_ms;
        uint64_t cd = compute_deadline(ws);
        if (cd && cd < m)
            m = cd;
    }
    return m;
}

/* Whether the trail records workspace ID (a workspace the resume could not rebuild, its role
 * gone from the policy: its files are kept). Unsure (no way to ask, an error): yes. */
static bool sweep_recorded(struct wacp *w, const char *id)
{
    if (!w->h.trail_query)
        return true;
    cJSON *a = cJSON_CreateArray();
    struct cerr e = {0};
    bool yes = !a || w->h.trail_query(w->h.data, id, "workspace_created", 1, a, &e) < 0 ||
               cJSON_GetArraySize(a) > 0;
    cJSON_Delete(a);
    return yes;
}

/* What the dead run's file jobs left half done (corral run --resume). A workspace's copy is made
 * in RUN_DIR/ws/ID before its workspace_created is recorded (create_finish), so a directory there
 * that neither the rebuilt model nor the trail knows is a copy the crash cut short: removed,
 * never used (ids are never reused, so no later workspace would take it over). A snapshot writes each object as
 * objects/.tmp-* and renames it whole: the temporary files are removed. Only directories and
 * regular files, by name, never through a link. */
unsigned wacp_workspace_sweep(struct wacp *w)
{
    unsigned n = 0;
    _cleanup_free_ char *wsd = util_printf("%s/ws", w->run_dir);
    DIR *d = wsd ? opendir(wsd) : NULL;
    for (struct dirent *de; d && (de = readdir(d));) {
        struct stat st;
        if (de->d_name[0] == '.' || wacp_tree_find(w, de->d_name) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
            sweep_recorded(w, de->d_name))
            continue;
        _cleanup_free_ char *p = util_printf("%s/%s", wsd, de->d_name);
        if (p) {
            wacp_files_remove_tree(p);
            n++;
        }
    }
    if (d)
        closedir(d);
    d = w->objects_dir ? opendir(w->objects_dir) : NULL;
    for (struct dirent *de; d && (de = readdir(d));) {
        struct stat st;
        if (strncmp(de->d_name, ".tmp-", 5) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}
