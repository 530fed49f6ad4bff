/* supervisor/wacp/tree.c: the workspace tree and its nine states: lookup, ancestry, who sees and
 * governs whom, exactly the transitions of PROTOCOL 6.3, and the one place a state changes
 * (recorded, with the failure cascade within an owner). What a change sets off above the tree
 * goes through w->tree_hooks (docs/architecture.md). */
#include "supervisor/wacp/tree.h"

#include "supervisor/wacp/core.h"
#include "supervisor/wacp/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

static const char *const state_names[WS_NSTATES] = {
    "idle",        "active",     "blocked", "migrating", "suspended",
    "integrating", "conflicted", "closed",  "failed",
};

const char *wacp_tree_state_name(enum ws_state s)
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

bool wacp_tree_transition_ok(enum ws_state from, enum ws_state to)
{
    return (unsigned)from < WS_NSTATES && (unsigned)to < WS_NSTATES &&
           (transitions[from] & WS_BIT(to)) != 0;
}

struct wacp_ws *wacp_tree_find(const struct wacp *w, const char *id)
{
    if (!id)
        return NULL;
    for (size_t i = 0; i < w->n_ws; i++)
        if (!strcmp(w->ws[i]->id, id))
            return w->ws[i];
    return NULL;
}

struct wacp_ws *wacp_tree_root(const struct wacp *w)
{
    return w->n_ws ? w->ws[0] : NULL;
}

bool wacp_tree_is_ancestor(const struct wacp_ws *a, const struct wacp_ws *d)
{
    for (const struct wacp_ws *p = d ? d->parent : NULL; p; p = p->parent)
        if (p == a)
            return true;
    return false;
}

bool wacp_tree_visible(const struct wacp_ws *caller, const struct wacp_ws *ws)
{
    if (!ws)
        return false;
    if (caller == ws || wacp_tree_is_coordinator(caller))
        return true;
    for (size_t i = 0; i < caller->n_grants; i++) /* visibility grants (visibility.c) */
        if (!strcmp(caller->grants[i], ws->id))
            return true;
    return caller->delegate && wacp_tree_is_ancestor(caller, ws);
}

bool wacp_tree_governs(const struct wacp_ws *caller, const struct wacp_ws *ws)
{
    if (!ws || caller == ws || !ws->parent)
        return false;
    if (wacp_tree_is_coordinator(caller))
        return true;
    return caller->delegate && wacp_tree_is_ancestor(caller, ws);
}

bool wacp_tree_terminal(enum ws_state s)
{
    return s == WS_CLOSED || s == WS_FAILED;
}

int wacp_tree_dir_open(const struct wacp *w, const struct wacp_ws *ws, struct cerr *err)
{
    if (ws->parent)
        return wacp_files_dir_open(ws->dir, err);
    int fd = openat(w->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return cerr_set(err, errno, "cannot open the root workspace's directory: %s", strerror(errno));
    return fd;
}

void wacp_tree_free(struct wacp_ws *ws)
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
    wacp_files_manifest_clear(&ws->base);
    wacp_files_manifest_clear(&ws->conflicts);
    wacp_files_manifest_clear(&ws->recorded);
    free(ws->grants);
    free(ws);
}

/* The children of WS when it ends: within its owner they fail too; another owner's are
 * reparented to the root (PROTOCOL 6.5, User spec 4.4); when the root ends, all fail. */
static int cascade(struct wacp *w, struct wacp_ws *ws, const char *why)
{
    struct wacp_ws *root = wacp_tree_root(w);
    for (size_t i = 0; i < w->n_ws; i++) {
        struct wacp_ws *c = w->ws[i];
        if (c->parent != ws || wacp_tree_terminal(c->state))
            continue;
        if (ws == root || !strcmp(c->owner, ws->owner)) {
            if (wacp_tree_set_state(w, c, WS_FAILED, "protocol", why) < 0)
                return -EIO;
            continue;
        }
        cJSON *b = wacp_core_obj();
        wacp_core_add_str(b, "workspace_id", c->id);
        wacp_core_add_str(b, "from_parent", ws->id);
        wacp_core_add_str(b, "to_parent", root->id);
        wacp_core_add_str(b, "owner", c->owner);
        wacp_core_add_str(b, "reason", "cross_owner_abort");
        int r = wacp_core_rec(w, c->id, "protocol", "workspace_reparented", b);
        cJSON_Delete(b);
        if (r < 0)
            return r;
        c->parent = root;
    }
    return 0;
}

int wacp_tree_set_state(struct wacp *w, struct wacp_ws *ws, enum ws_state to, const char *actor,
                        const char *reason)
{
    if (!wacp_tree_transition_ok(ws->state, to))
        return -EINVAL;
    uint64_t now = wacp_core_now_ms();
    uint64_t active_ms = ws->active_ms;
    if (ws->state == WS_ACTIVE && now > ws->active_since_ms)
        active_ms += now - ws->active_since_ms;
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", ws->id);
    wacp_core_add_str(b, "from", wacp_tree_state_name(ws->state));
    wacp_core_add_str(b, "to", wacp_tree_state_name(to));
    wacp_core_add_str(b, "reason", reason);
    /* the compute time so far: a resumer sums no further than the last of these */
    if (b)
        cJSON_AddNumberToObject(b, "active_ms", (double)active_ms);
    int r = wacp_core_rec(w, ws->id, actor, "workspace_state_changed", b);
    cJSON_Delete(b);
    if (r < 0)
        return r;
    enum ws_state from = ws->state;
    ws->active_ms = active_ms;
    if (to == WS_ACTIVE)
        ws->active_since_ms = now;
    if (to == WS_SUSPENDED || to == WS_MIGRATING) {
        ws->saved = from;
        ws->suspended_at_ms = now;
    }
    if (from == WS_SUSPENDED && ws->deadline_ms && now > ws->suspended_at_ms)
        ws->deadline_ms += now - ws->suspended_at_ms; /* the meter pauses while suspended */
    ws->state = to;
    if (reason)
        snprintf(ws->end_reason, sizeof(ws->end_reason), "%s", reason);
    if (w->tree_hooks.state_changed)
        w->tree_hooks.state_changed(w, ws, to);
    if (!wacp_tree_terminal(to))
        return 0;
    r = cascade(w, ws, to == WS_FAILED ? "parent_failed" : "parent_closed");
    if (!ws->stopped) {
        ws->stopped = true;
        w->h.stop(w->h.data, ws->id, reason ? reason : wacp_tree_state_name(to));
    }
    return r;
}

cJSON *wacp_tree_ws_json(const struct wacp_ws *ws)
{
    cJSON *o = wacp_core_obj();
    if (!o)
        return NULL;
    wacp_core_add_str(o, "workspace_id", ws->id);
    wacp_core_add_str(o, "parent", ws->parent ? ws->parent->id : NULL);
    wacp_core_add_str(o, "state", wacp_tree_state_name(ws->state));
    wacp_core_add_str(o, "role", ws->role);
    wacp_core_add_str(o, "agent", ws->agent);
    wacp_core_add_str(o, "owner", ws->owner);
    wacp_core_add_str(o, "originator", ws->originator);
    wacp_core_add_str(o, "task", ws->task);
    wacp_core_add_str(o, "directive_envelope", ws->directive_env);
    cJSON_AddBoolToObject(o, "delegate", ws->delegate);
    cJSON_AddNumberToObject(o, "checkpoints", (double)ws->n_checkpoints);
    wacp_core_add_str(o, "checkpoint_head", ws->head);
    cJSON_AddNumberToObject(o, "inbox", (double)ws->inbox);
    if (wacp_tree_terminal(ws->state))
        wacp_core_add_str(o, "reason", ws->end_reason);
    cJSON *bu = cJSON_AddObjectToObject(o, "budgets");
    if (bu) {
        cJSON_AddNumberToObject(bu, "memory", (double)ws->budgets.memory);
        cJSON_AddNumberToObject(bu, "pids", (double)ws->budgets.pids);
        cJSON_AddNumberToObject(bu, "cpus", ws->budgets.cpus);
        cJSON_AddNumberToObject(bu, "wall_time", ws->budgets.wall_time);
    }
    return o;
}

bool wacp_tree_is_coordinator(const struct wacp_ws *ws)
{
    return ws && ws->view.base == POLICY_BASE_COORDINATOR;
}
