/* supervisor/wacp/visibility.c: dynamic visibility grants (PROTOCOL 6.8, security spec 6.3).
 * The coordinator (or a delegate, within its subtree) lets a workspace read another one: its
 * checkpoints, its place in the tree, its local trail. Grants only add, are recorded
 * (visibility_granted) before they count, and every read through one is checked against them
 * (wacp_tree_visible). An observer's designated workspaces are the grants given at its creation. */
#include "supervisor/wacp/visibility.h"

#include "supervisor/wacp/core.h"
#include "supervisor/wacp/tree.h"

#include <stdio.h>
#include <string.h>

#define MAX_GRANTS 256 /* per workspace */

static bool granted(const struct wacp_ws *caller, const struct wacp_ws *ws)
{
    for (size_t i = 0; caller && ws && i < caller->n_grants; i++)
        if (!strcmp(caller->grants[i], ws->id))
            return true;
    return false;
}

/* Checks, records, then adds one grant. 1 added, 0 held already, -1 refused (E). */
static int grant(struct wacp *w, struct wacp_ws *c, struct wacp_ws *to, const char *target,
                 const char *method, struct wacp_err *e)
{
    struct wacp_ws *t = wacp_tree_find(w, target);
    if (!t)
        return wacp_core_deny(w, c, method, e, WACP_E_NOT_FOUND, "not_found", "no workspace '%.80s'",
                              target);
    /* A delegate grants only what it sees itself: its own subtree, to its own subtree. */
    if (!wacp_tree_is_coordinator(c) &&
        !(c->delegate && wacp_tree_is_ancestor(c, to) && wacp_tree_visible(c, t)))
        return wacp_core_deny(
            w, c, method, e, WACP_E_DENIED, "permission_denied",
            "visibility is granted by the coordinator (or a delegate within its subtree)");
    if (t == to || granted(to, t))
        return 0;
    if (to->n_grants >= MAX_GRANTS)
        return wacp_core_deny(w, c, method, e, WACP_E_LIMIT, "limit",
                              "a workspace holds %d grants at most", MAX_GRANTS);
    char(*g)[WACP_ID_LEN] = realloc(to->grants, (to->n_grants + 1) * sizeof(*to->grants));
    if (!g)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    to->grants = g;
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", to->id);
    wacp_core_add_str(b, "target", t->id);
    wacp_core_add_str(b, "granted_by", c->id);
    int r = wacp_core_rec(w, to->id, c->role, "visibility_granted", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_core_trail_err(e);
    snprintf(to->grants[to->n_grants++], WACP_ID_LEN, "%s", t->id);
    return 1;
}

int wacp_visibility_grant_at_create(struct wacp *w, struct wacp_ws *c, struct wacp_ws *ws,
                                    const cJSON *p, struct wacp_err *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "visibility"), *x;
    cJSON_ArrayForEach (x, v) {
        if (!cJSON_IsString(x))
            return wacp_core_fail(e, -32602, "invalid_params", "visibility lists workspace ids");
        if (grant(w, c, ws, x->valuestring, "wacp/workspace.create", e) < 0)
            return -1;
    }
    return 0;
}

int wacp_visibility_method_grant(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                 struct wacp_err *e)
{
    static const char M[] = "wacp/visibility.grant";
    struct wacp_ws *to = wacp_tree_find(w,
                                        cJSON_GetObjectItemCaseSensitive(p, "workspace")->valuestring);
    if (!to)
        return wacp_core_deny(w, c, M, e, WACP_E_NOT_FOUND, "not_found", "no such workspace");
    if (to->state != WS_ACTIVE && to->state != WS_BLOCKED)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_state",
                              "visibility is granted to an active or blocked workspace (%s is %s)",
                              to->id, wacp_tree_state_name(to->state));
    int r = grant(w, c, to, cJSON_GetObjectItemCaseSensitive(p, "target")->valuestring, M, e);
    if (r < 0)
        return -1;
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "workspace_id", to->id);
    cJSON_AddBoolToObject(*res, "already", r == 0);
    cJSON *a = cJSON_AddArrayToObject(*res, "visibility");
    for (size_t i = 0; a && i < to->n_grants; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(to->grants[i]));
    return 0;
}

bool wacp_can_read(const struct wacp *w, const char *caller, const char *target)
{
    const struct wacp_ws *c = wacp_tree_find(w, caller), *t = wacp_tree_find(w, target);
    return c && t && wacp_tree_visible(c, t);
}
