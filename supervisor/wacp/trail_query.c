/* supervisor/wacp/trail_query.c: wacp/trail.query {workspace?, type?, limit?}: committed entries,
 * per the caller's read scope (PROTOCOL 9.2, docs/protocol-wacp.md): the global trail for a role
 * that reads it, else its own local trail only. Outside its scope a caller sees an empty result,
 * not an error (PROTOCOL 9.4). The model holds no trail: the run reads it through
 * hooks.trail_query. The parameters are checked here, not by the table, so their messages stay
 * those agents already see. */
#include "supervisor/wacp/trail_query.h"

#include "supervisor/wacp/core.h"
#include "supervisor/wacp/tree.h"

#include <stdio.h>
#include <string.h>

#define TRAIL_QUERY_DEFAULT 100
#define TRAIL_QUERY_MAX 1000

int wacp_trail_query_method(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **result,
                            struct wacp_err *e)
{
    if (!w->h.trail_query) /* a model without a trail (unit tests): no such method */
        return wacp_core_fail(e, -32601, "method_not_found", "no method 'wacp/trail.query'"), -ENOENT;
    if (p && !cJSON_IsObject(p) && !cJSON_IsNull(p)) {
        e->rpc_code = -32602;
        snprintf(e->code, sizeof(e->code), "invalid_params");
        snprintf(e->msg, sizeof(e->msg), "wacp/trail.query takes an object {workspace?, type?, limit?}");
        return -EINVAL;
    }
    const cJSON *it;
    const char *ws = NULL, *type = NULL;
    uint64_t limit = TRAIL_QUERY_DEFAULT;
    const cJSON *obj = cJSON_IsObject(p) ? p : NULL;
    cJSON_ArrayForEach (it, obj) {
        bool ok = true;
        if (!strcmp(it->string, "workspace") && cJSON_IsString(it))
            ws = it->valuestring;
        else if (!strcmp(it->string, "type") && cJSON_IsString(it))
            type = it->valuestring;
        else if (!strcmp(it->string, "limit") && cJSON_IsNumber(it) && it->valuedouble >= 1 &&
                 it->valuedouble <= TRAIL_QUERY_MAX &&
                 it->valuedouble == (double)(uint64_t)it->valuedouble)
            limit = (uint64_t)it->valuedouble;
        else
            ok = false;
        if (!ok) {
            e->rpc_code = -32602;
            snprintf(e->code, sizeof(e->code), "invalid_params");
            snprintf(e->msg, sizeof(e->msg),
                     "wacp/trail.query: \"%.40s\" is not a parameter of the right type (workspace: "
                     "string, type: string, limit: 1..%d)",
                     it->string, TRAIL_QUERY_MAX);
            return -EINVAL;
        }
    }
    bool global = policy_role_can(&c->view, "read:global_trail") ||
                  policy_role_can(&c->view, "read:all_workspaces");
    cJSON *entries = cJSON_CreateArray();
    *result = cJSON_CreateObject();
    if (!entries || !*result) {
        cJSON_Delete(entries);
        cJSON_Delete(*result);
        *result = NULL;
        e->rpc_code = -32603;
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        return -ENOMEM;
    }
    cJSON_AddItemToObject(*result, "entries", entries);
    /* Beyond its own: what a visibility grant lets it read (PROTOCOL 6.8, visibility.c). */
    const struct wacp_ws *t = ws ? wacp_tree_find(w, ws) : NULL;
    bool granted = t && t != c && wacp_tree_visible(c, t);
    if (!global && ws && strcmp(ws, c->id) && !granted)
        return 0; /* outside its scope: nothing */
    struct cerr ce = {0};
    if (w->h.trail_query(w->h.data, global || granted ? ws : c->id, type, limit, entries, &ce) < 0) {
        cJSON_Delete(*result);
        *result = NULL;
        e->rpc_code = -32603;
        snprintf(e->code, sizeof(e->code), "trail_unavailable");
        snprintf(e->msg, sizeof(e->msg), "the trail cannot be read: %.300s", ce.msg);
        return -EIO;
    }
    return 0;
}
