/* supervisor/wacp/integrate.c: integration of a child workspace into its parent (PROTOCOL
 * 7.4-7.8, integration spec): its final checkpoint's files applied to the parent's directory,
 * overlaps with what changed behind the child held as conflicts, and their resolution. */
#include "supervisor/wacp/integrate.h"

#include "supervisor/wacp/checkpoint.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/tree.h"
#include "supervisor/wacp/workspace.h"

#include <stdio.h>
#include <string.h>

/* ---- integration (PROTOCOL 7.4-7.8, integration spec) */

static cJSON *paths_json(const struct wacp_manifest *m, bool conflicts)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < m->n; i++) {
        if (!conflicts) {
            cJSON_AddItemToArray(a, cJSON_CreateString(m->v[i].path));
            continue;
        }
        cJSON *o = wacp_core_obj();
        wacp_core_add_str(o, "type", "content_overlap");
        wacp_core_add_str(o, "path", m->v[i].path);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *integ_result(const struct wacp_ws *t, const struct wacp_manifest *conflicts,
                           const struct wacp_manifest *applied)
{
    static const struct wacp_manifest none = {0};
    cJSON *o = wacp_workspace_state_result(t);
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
    if (wacp_checkpoint_verify(w, cp, e) < 0)
        return -1; /* flagged and refused: the coordinator may reject it (security spec 4.3) */
    for (size_t i = 0; i < cp->files.n; i++)
        if (!wacp_files_manifest_get(skip, cp->files.v[i].path) &&
            wacp_files_manifest_add(&applied, cp->files.v[i].path, "", 0) < 0) {
            wacp_files_manifest_clear(&applied);
            return wacp_core_fail(e, -32603, "internal", "out of memory");
        }
    /* Write-ahead for real: what says integration started is durable before the first byte of
     * the parent's files changes, so a crash midway leaves a trail that tells. */
    if (w->h.commit && w->h.commit(w->h.data) < 0) {
        wacp_files_manifest_clear(&applied);
        return wacp_core_trail_err(e);
    }
    if (wacp_files_integrate(t->parent->dir, &cp->files, skip, w->objects_dir, &w->rules, &ce) < 0) {
        wacp_files_manifest_clear(&applied);
        if (wacp_tree_set_state(w, t, WS_FAILED, c->role, "integration_error") < 0)
            return wacp_core_trail_err(e);
        *res = integ_result(t, NULL, NULL);
        wacp_core_add_str(*res, "error", ce.msg);
        return 0;
    }
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", t->id);
    wacp_core_add_str(b, "checkpoint_id", cp->id);
    wacp_core_add_str(b, "strategy", strategy);
    wacp_core_add_str(b, "mode", "normal");
    wacp_core_add_str(b, "into", t->parent->id);
    cJSON_AddItemToObject(b, "files_applied", paths_json(&applied, false));
    int r = wacp_core_rec(w, t->id, c->role, "integration_completed", b);
    cJSON_Delete(b);
    if (r < 0 || wacp_tree_set_state(w, t, WS_CLOSED, c->role, "integrated") < 0) {
        wacp_files_manifest_clear(&applied);
        return wacp_core_trail_err(e);
    }
    w->sum.integrations++;
    *res = integ_result(t, NULL, &applied);
    wacp_files_manifest_clear(&applied);
    return 0;
}

int wacp_integrate_method_integrate(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                    struct wacp_err *e)
{
    static const char M[] = "wacp/integrate";
    struct wacp_ws *t = wacp_workspace_target_of(w, c, p, M, "integrate", e);
    if (!t)
        return -1;
    const char *decision = cJSON_GetObjectItemCaseSensitive(p, "decision")->valuestring;
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(p, "strategy");
    const char *strategy = sj ? sj->valuestring : "direct";
    bool accept = !strcmp(decision, "accept");
    if (!accept && strcmp(decision, "revise") && strcmp(decision, "reject"))
        return wacp_core_fail(e, -32602, "invalid_params",
                              "decision must be \"accept\", \"revise\" or \"reject\"");
    if (strcmp(strategy, "direct") && strcmp(strategy, "layered")) {
        if (!strcmp(strategy, "evaluated"))
            return wacp_core_fail(e, -32602, "unsupported_strategy",
                                  "the evaluated strategy is the coordinator's own merge: read both "
                                  "states, write the result, and integrate with \"direct\"");
        return wacp_core_fail(e, -32602, "invalid_params", "strategy must be \"direct\" or \"layered\"");
    }
    if (t->state != WS_INTEGRATING)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                              "workspace %s is %s; integration takes a workspace that emitted complete "
                              "(integrating)",
                              t->id, wacp_tree_state_name(t->state));
    if (!accept) {
        /* No backward transitions: revise and reject fail the workspace (PROTOCOL 7.4). */
        if (wacp_tree_set_state(w, t, WS_FAILED, c->role,
                                !strcmp(decision, "revise") ? "revision_required" : "rejected") < 0)
            return wacp_core_trail_err(e);
        *res = integ_result(t, NULL, NULL);
        return 0;
    }
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(p, "checkpoint");
    if (!t->final_cp[0])
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "no_final_checkpoint",
                              "workspace %s has no final checkpoint to integrate; revise or reject it",
                              t->id);
    if (cj && strcmp(cj->valuestring, t->final_cp))
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "not_final_checkpoint",
                              "integration uses the most recent final checkpoint of %s, which is %s",
                              t->id, t->final_cp);
    const struct wacp_checkpoint *cp = wacp_checkpoint_find(w, t->final_cp);
    if (!cp)
        return wacp_core_fail(e, -32603, "internal", "the final checkpoint is missing");
    char sid[WACP_ID_LEN];
    if (wacp_signal_emit(w, c, c->role, "integrate", NULL, t->id, NULL, false, sid) < 0)
        return wacp_core_trail_err(e);
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", t->id);
    wacp_core_add_str(b, "checkpoint_id", cp->id);
    wacp_core_add_str(b, "strategy", strategy);
    wacp_core_add_str(b, "mode", "normal");
    wacp_core_add_str(b, "into", t->parent->id);
    int r = wacp_core_rec(w, t->id, c->role, "integration_started", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_core_trail_err(e);
    if (!strcmp(strategy, "layered")) {
        struct wacp_manifest over = {0};
        struct cerr ce = {0};
        if (wacp_files_overlaps(t->parent->dir, &cp->files, &t->base, &over, &ce) < 0) {
            wacp_files_manifest_clear(&over);
            if (wacp_tree_set_state(w, t, WS_FAILED, c->role, "integration_error") < 0)
                return wacp_core_trail_err(e);
            *res = integ_result(t, NULL, NULL);
            wacp_core_add_str(*res, "error", ce.msg);
            return 0;
        }
        if (over.n) {
            b = wacp_core_obj();
            wacp_core_add_str(b, "workspace_id", t->id);
            wacp_core_add_str(b, "checkpoint_id", cp->id);
            cJSON_AddItemToObject(b, "conflicts", paths_json(&over, true));
            r = wacp_core_rec(w, t->id, c->role, "conflict_detected", b);
            cJSON_Delete(b);
            if (r < 0 || wacp_tree_set_state(w, t, WS_CONFLICTED, c->role, "content_overlap") < 0) {
                wacp_files_manifest_clear(&over);
                return wacp_core_trail_err(e);
            }
            wacp_files_manifest_clear(&t->conflicts);
            t->conflicts = over;
            w->sum.conflicts++;
            *res = integ_result(t, &t->conflicts, NULL);
            return 0;
        }
    }
    return merge_close(w, c, t, cp, NULL, strategy, res, e);
}

int wacp_integrate_method_resolve(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                  struct wacp_err *e)
{
    static const char M[] = "wacp/conflict.resolve";
    struct wacp_ws *t = wacp_workspace_target_of(w, c, p, M, "integrate", e);
    if (!t)
        return -1;
    const char *how = cJSON_GetObjectItemCaseSensitive(p, "resolution")->valuestring;
    const cJSON *pj = cJSON_GetObjectItemCaseSensitive(p, "prefer");
    const char *prefer = pj ? pj->valuestring : "child";
    bool rework = !strcmp(how, "agent_rework");
    if (!rework && strcmp(how, "coordinator_resolve"))
        return wacp_core_fail(
            e, -32602, !strcmp(how, "escalate") ? "unsupported_resolution" : "invalid_params",
            "resolution must be \"coordinator_resolve\" or \"agent_rework\" (escalation "
            "to a human goes through the highway, not built yet)");
    if (strcmp(prefer, "child") && strcmp(prefer, "parent"))
        return wacp_core_fail(e, -32602, "invalid_params", "prefer must be \"child\" or \"parent\"");
    if (t->state != WS_CONFLICTED)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                              "workspace %s is %s, not conflicted", t->id,
                              wacp_tree_state_name(t->state));
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", t->id);
    wacp_core_add_str(b, "resolution", how);
    if (!rework)
        wacp_core_add_str(b, "prefer", prefer);
    cJSON_AddItemToObject(b, "conflicts", paths_json(&t->conflicts, true));
    int r = wacp_core_rec(w, t->id, c->role, "conflict_resolved", b);
    cJSON_Delete(b);
    if (r < 0)
        return wacp_core_trail_err(e);
    if (rework) {
        if (wacp_tree_set_state(w, t, WS_FAILED, c->role, "agent_rework") < 0)
            return wacp_core_trail_err(e);
        *res = integ_result(t, NULL, NULL);
        return 0;
    }
    const struct wacp_checkpoint *cp = wacp_checkpoint_find(w, t->final_cp);
    if (!cp)
        return wacp_core_fail(e, -32603, "internal", "the final checkpoint is missing");
    return merge_close(w, c, t, cp, !strcmp(prefer, "parent") ? &t->conflicts : NULL, "layered", res, e);
}
