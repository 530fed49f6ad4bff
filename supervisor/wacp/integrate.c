/* supervisor/wacp/integrate.c: integration of a child workspace into its parent (PROTOCOL
 * 7.4-7.8, integration spec): its final checkpoint's files applied to the parent's directory,
 * overlaps with what changed behind the child held as conflicts, and their resolution. */
#include "supervisor/wacp/integrate.h"

#include "supervisor/wacp/checkpoint.h"
#include "supervisor/wacp/conflict.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/highway.h"
#include "supervisor/wacp/jobs.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/tree.h"
#include "supervisor/wacp/workspace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        wacp_core_add_str(o, "type", wacp_conflict_type_name(m->v[i].size));
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

/* ---- the merge: CP's files applied to the parent's directory minus SKIP, then
 * integration_completed and closed; an apply that fails midway fails the workspace
 * (integration error). The objects' re-hash and the writes run on the pool (jobs.h), after
 * what says integration started is durable; meanwhile the parent is busy (its files are being
 * written: no copy, snapshot or other integration of it) and so is the child (no second
 * integration of it). */

struct merge_job {
    struct wacp_job j;
    char ws[WACP_ID_LEN], into[WACP_ID_LEN], cp[WACP_ID_LEN];
    char actor[64]; /* the role that integrates */
    char strategy[12];
    int dir_fd; /* the parent's files (wacp_tree_dir_open), the job's own */
    char *objects;
    struct wacp_manifest files, skip; /* copies: the worker never reads the model */
    struct wacp_files_rules rules;    /* the policy's (it outlives the run) */
    bool detect, evaluated;           /* layered / evaluated: conflicts looked for first */
    struct wacp_manifest base;        /* the child's base, copied (detect) */
    cJSON *directive;                 /* the child's, copied (evaluated: its constraints) */
    struct wacp_manifest sem;         /* evaluated: the evaluator's contradictions (copied) */
    cJSON *reasons;                   /* and its {path, reason} list, for conflict_detected */
    struct wacp_manifest over;        /* the conflicts found: nothing is written then */
    struct wacp_object_fault bad;
    int verified; /* < 0: an object does not match (bad) */
    struct cerr ce;
    int rc;
};

static int add_semantic(const struct wacp_manifest *sem, struct wacp_manifest *over, struct cerr *err);

static void merge_work(struct wacp_job *jb)
{
    struct merge_job *mj = (struct merge_job *)jb;
    if (mj->detect) {
        mj->rc = wacp_files_overlaps(mj->dir_fd, &mj->files, &mj->base, &mj->over, &mj->ce);
        if (mj->rc == 0 && mj->evaluated)
            mj->rc = wacp_conflict_dependencies(mj->dir_fd, &mj->base, &mj->files, &mj->over, &mj->ce);
        if (mj->rc == 0 && mj->evaluated)
            mj->rc = wacp_conflict_constraints(mj->directive, &mj->files, &mj->over, &mj->ce);
        if (mj->rc == 0 && mj->evaluated)
            mj->rc = add_semantic(&mj->sem, &mj->over, &mj->ce);
        if (mj->rc < 0 || mj->over.n)
            return; /* an error, or conflicts: nothing is written */
    }
    mj->verified = wacp_checkpoint_objects_check(mj->objects, &mj->files, &mj->bad);
    if (mj->verified == 0)
        mj->rc = wacp_files_integrate(mj->dir_fd, &mj->files, &mj->skip, mj->objects, &mj->rules, &mj->ce);
}

static void merge_free(struct wacp_job *jb)
{
    struct merge_job *mj = (struct merge_job *)jb;
    if (mj->dir_fd >= 0)
        close(mj->dir_fd);
    free(mj->objects);
    wacp_files_manifest_clear(&mj->files);
    wacp_files_manifest_clear(&mj->skip);
    wacp_files_manifest_clear(&mj->base);
    wacp_files_manifest_clear(&mj->over);
    wacp_files_manifest_clear(&mj->sem);
    cJSON_Delete(mj->reasons);
    cJSON_Delete(mj->directive);
    free(mj);
}

static int merge_finish(struct wacp *w, struct wacp_job *jb, cJSON **res, struct wacp_err *e)
{
    struct merge_job *mj = (struct merge_job *)jb;
    struct wacp_ws *t = wacp_tree_find(w, mj->ws), *into = wacp_tree_find(w, mj->into);
    const struct wacp_checkpoint *cp = wacp_checkpoint_find(w, mj->cp);
    if (into)
        into->file_writing = false;
    if (!t || !cp)
        return wacp_core_fail(e, -32603, "internal", "the integrated workspace is unknown to the model");
    t->file_writing = false;
    bool live = t->state == WS_INTEGRATING || t->state == WS_CONFLICTED;
    if (mj->rc == 0 && mj->over.n) {
        cJSON *b = wacp_core_obj();
        wacp_core_add_str(b, "workspace_id", t->id);
        wacp_core_add_str(b, "checkpoint_id", cp->id);
        cJSON_AddItemToObject(b, "conflicts", paths_json(&mj->over, true));
        if (cJSON_GetArraySize(mj->reasons) > 0)
            cJSON_AddItemToObject(b, "semantic", cJSON_Duplicate(mj->reasons, true));
        int r = wacp_core_rec(w, t->id, mj->actor, "conflict_detected", b);
        cJSON_Delete(b);
        if (r < 0)
            return wacp_core_trail_err(e);
        if (live) {
            if (wacp_tree_set_state(w, t, WS_CONFLICTED, mj->actor,
                                    wacp_conflict_type_name(mj->over.v[0].size)) < 0)
                return wacp_core_trail_err(e);
            wacp_files_manifest_clear(&t->conflicts);
            t->conflicts = mj->over;
            memset(&mj->over, 0, sizeof(mj->over));
            snprintf(t->conflict_strategy, sizeof t->conflict_strategy, "%s", mj->strategy);
            w->sum.conflicts++;
        }
        *res = integ_result(t, live ? &t->conflicts : &mj->over, NULL);
        return 0;
    }
    if (mj->verified < 0)
        return wacp_checkpoint_object_violation(w, cp, &mj->bad, e); /* nothing was written */
    /* The workspace may have ended meanwhile (a timeout, an abort): what was written is
     * recorded all the same; only a live workspace changes state. */
    if (mj->rc < 0) {
        if (live && wacp_tree_set_state(w, t, WS_FAILED, mj->actor, "integration_error") < 0)
            return wacp_core_trail_err(e);
        *res = integ_result(t, NULL, NULL);
        wacp_core_add_str(*res, "error", mj->ce.msg);
        return 0;
    }
    struct wacp_manifest applied = {0};
    for (size_t i = 0; i < mj->files.n; i++)
        if (!wacp_files_manifest_get(&mj->skip, mj->files.v[i].path) &&
            wacp_files_manifest_add(&applied, mj->files.v[i].path, "", 0) < 0) {
            wacp_files_manifest_clear(&applied);
            return wacp_core_fail(e, -32603, "internal", "out of memory");
        }
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", t->id);
    wacp_core_add_str(b, "checkpoint_id", cp->id);
    wacp_core_add_str(b, "strategy", mj->strategy);
    wacp_core_add_str(b, "mode", "normal");
    wacp_core_add_str(b, "into", mj->into);
    cJSON_AddItemToObject(b, "files_applied", paths_json(&applied, false));
    int r = wacp_core_rec(w, t->id, mj->actor, "integration_completed", b);
    cJSON_Delete(b);
    if (r < 0 || (live && wacp_tree_set_state(w, t, WS_CLOSED, mj->actor, "integrated") < 0)) {
        wacp_files_manifest_clear(&applied);
        return wacp_core_trail_err(e);
    }
    w->sum.integrations++;
    *res = integ_result(t, NULL, &applied);
    wacp_files_manifest_clear(&applied);
    return 0;
}

static int integrate_evaluated(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                               struct wacp_err *e, const struct wacp_manifest *sem,
                               const cJSON *reasons);

/* The evaluator's contradictions join the list: one conflict per path, the first type found
 * (the mechanical ones) names it. */
static int add_semantic(const struct wacp_manifest *sem, struct wacp_manifest *over, struct cerr *err)
{
    for (size_t i = 0; i < sem->n; i++)
        if (!wacp_files_manifest_get(over, sem->v[i].path) &&
            wacp_files_manifest_add(over, sem->v[i].path, "", WACP_CONFLICT_SEMANTIC_CONTRADICTION) < 0)
            return cerr_set(err, ENOMEM, "out of memory");
    return 0;
}

/* Whether T can be integrated now: no integration of it in flight, and its parent's files not
 * being copied, snapshotted or written. */
static bool merge_busy(const struct wacp_ws *t)
{
    const struct wacp_ws *into = t->parent;
    return t->file_writing || !into || into->file_readers || into->file_writing;
}

static int busy_fail(struct wacp_err *e, const struct wacp_ws *t)
{
    return wacp_core_fail(e, WACP_E_STATE, "workspace_busy",
                          "%s or its parent has file work in flight (a copy, a checkpoint or an "
                          "integration); ask again once it is answered",
                          t->id);
}

/* Starts the merge of CP into T's parent (REPLY: the request being handled waits for its
 * answer; else nobody does). DETECT: conflicts are looked for first (layered, evaluated), and
 * when there are any T becomes conflicted and nothing is written. */
static int merge_close(struct wacp *w, struct wacp_ws *c, struct wacp_ws *t,
                       const struct wacp_checkpoint *cp, const struct wacp_manifest *skip,
                       const char *strategy, bool detect, const struct wacp_manifest *sem,
                       const cJSON *reasons, bool reply, cJSON **res, struct wacp_err *e)
{
    if (merge_busy(t))
        return busy_fail(e, t);
    if (wacp_checkpoint_verify_mac(w, cp, e) < 0)
        return -1; /* flagged and refused: the coordinator may reject it (security spec 4.3) */
    struct merge_job *mj = calloc(1, sizeof(*mj));
    if (mj)
        mj->dir_fd = -1;
    if (!mj || !(mj->objects = strdup(w->objects_dir)) ||
        wacp_files_manifest_copy(&mj->files, &cp->files) < 0 ||
        wacp_files_manifest_copy(&mj->skip, skip) < 0 ||
        (detect && wacp_files_manifest_copy(&mj->base, &t->base) < 0) ||
        (detect && t->directive && !(mj->directive = cJSON_Duplicate(t->directive, true))) ||
        (detect && sem && wacp_files_manifest_copy(&mj->sem, sem) < 0) ||
        (detect && reasons && !(mj->reasons = cJSON_Duplicate(reasons, true)))) {
        if (mj)
            merge_free(&mj->j);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    struct cerr oe = {0};
    if ((mj->dir_fd = wacp_tree_dir_open(w, t->parent, &oe)) < 0) {
        merge_free(&mj->j);
        return wacp_core_fail(e, -32603, "internal", "%s", oe.msg);
    }
    snprintf(mj->ws, sizeof mj->ws, "%s", t->id);
    snprintf(mj->into, sizeof mj->into, "%s", t->parent->id);
    snprintf(mj->cp, sizeof mj->cp, "%s", cp->id);
    snprintf(mj->actor, sizeof mj->actor, "%s", c->role);
    snprintf(mj->strategy, sizeof mj->strategy, "%s", strategy);
    mj->rules = w->rules;
    mj->detect = detect;
    mj->evaluated = !strcmp(strategy, "evaluated");
    /* Write-ahead for real: what says integration started is durable before the first byte of
     * the parent's files changes, so a crash midway leaves a trail that tells. */
    if (w->h.commit && w->h.commit(w->h.data) < 0) {
        merge_free(&mj->j);
        return wacp_core_trail_err(e);
    }
    mj->j.work = merge_work;
    mj->j.finish = merge_finish;
    mj->j.free = merge_free;
    t->file_writing = true;
    t->parent->file_writing = true;
    return wacp_jobs_run(w, &mj->j, c->id, reply, res, e);
}

/* ---- semantic_contradiction: the integrating role's evaluator judges, on the pool (jobs.h),
 * before anything is recorded: the loop serves every other agent while it runs. A failed
 * evaluator leaves the workspace integrating, the call refused and the refusal recorded. Once it
 * is done, the integration goes on (on the loop) as the request would have, everything checked
 * again: the model went on meanwhile. */

struct eval_job {
    struct wacp_job j;
    int (*evaluate)(void *handle, const char *input, char **out, size_t *out_len, struct cerr *err);
    void *handle; /* hooks.evaluator's */
    char *input;  /* the two sides of each changed file, taken on the loop */
    cJSON *params;
    char ws[WACP_ID_LEN], cp[WACP_ID_LEN]; /* the child and the checkpoint judged */
    char *out;
    size_t out_len;
    struct cerr ce;
    int rc;
};

static void eval_work(struct wacp_job *jb)
{
    struct eval_job *ej = (struct eval_job *)jb;
    ej->rc = ej->evaluate(ej->handle, ej->input, &ej->out, &ej->out_len, &ej->ce);
}

static void eval_free(struct wacp_job *jb)
{
    struct eval_job *ej = (struct eval_job *)jb;
    free(ej->handle);
    free(ej->input);
    free(ej->out);
    cJSON_Delete(ej->params);
    free(ej);
}

static int eval_finish(struct wacp *w, struct wacp_job *jb, cJSON **res, struct wacp_err *e)
{
    struct eval_job *ej = (struct eval_job *)jb;
    struct wacp_ws *c = wacp_tree_find(w, jb->caller);
    if (!c)
        return wacp_core_fail(e, -32603, "internal", "the integrating workspace is unknown to the model");
    struct wacp_ws *t = wacp_tree_find(w, ej->ws);
    const struct wacp_checkpoint *cp = wacp_checkpoint_find(w, ej->cp);
    struct wacp_manifest sem = {0};
    cJSON *reasons = NULL;
    int r = ej->rc;
    /* A verdict on what is still to be integrated; otherwise integrate_evaluated refuses. */
    if (r == 0 && t && cp && t->state == WS_INTEGRATING && !strcmp(t->final_cp, ej->cp)) {
        reasons = cJSON_CreateArray();
        r = !reasons ? cerr_set(&ej->ce, ENOMEM, "out of memory")
                     : wacp_conflict_evaluator_verdict(ej->out, ej->out_len, &cp->files, &sem, reasons,
                                                       &ej->ce);
    }
    if (r < 0)
        r = wacp_core_deny(w, c, "wacp/integrate", e, -32603, "evaluator_failed",
                           "the semantic evaluator (tools.evaluator_command of role %s) failed, so "
                           "nothing was integrated and %s stays integrating: %s",
                           c->role, ej->ws, ej->ce.msg);
    else
        r = integrate_evaluated(w, c, ej->params, res, e, &sem, reasons);
    wacp_files_manifest_clear(&sem);
    cJSON_Delete(reasons);
    return r;
}

/* Starts the evaluator of C's role on T's final checkpoint CP (HANDLE: hooks.evaluator's). */
static int evaluate(struct wacp *w, struct wacp_ws *c, struct wacp_ws *t,
                    const struct wacp_checkpoint *cp, const cJSON *p, void *handle, cJSON **res,
                    struct wacp_err *e)
{
    struct eval_job *ej = calloc(1, sizeof(*ej));
    if (!ej) {
        free(handle);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    ej->handle = handle;
    ej->evaluate = w->h.evaluate;
    /* The parent's side by the model's fd (the root's is DIR, never its path again). */
    struct cerr oe = {0};
    int pfd = wacp_tree_dir_open(w, t->parent, &oe);
    ej->input = wacp_conflict_evaluator_input(w, t, cp, pfd);
    if (pfd >= 0)
        close(pfd);
    ej->params = cJSON_Duplicate(p, true);
    if (!ej->input || !ej->params) {
        eval_free(&ej->j);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    snprintf(ej->ws, sizeof(ej->ws), "%s", t->id);
    snprintf(ej->cp, sizeof(ej->cp), "%s", cp->id);
    ej->j.work = eval_work;
    ej->j.finish = eval_finish;
    ej->j.free = eval_free;
    return wacp_jobs_run(w, &ej->j, c->id, true, res, e);
}

int wacp_integrate_method_integrate(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                    struct wacp_err *e)
{
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(p, "strategy");
    const cJSON *dj = cJSON_GetObjectItemCaseSensitive(p, "decision");
    struct wacp_ws *t = NULL;
    /* Only an accepted, evaluated integration of a workspace that can be integrated asks the
     * evaluator; everything else is refused or done by the checks that follow, as before. */
    if (cJSON_IsString(sj) && !strcmp(sj->valuestring, "evaluated") && cJSON_IsString(dj) &&
        !strcmp(dj->valuestring, "accept") && w->h.evaluator && w->h.evaluate) {
        /* the checks of wacp_workspace_target_of, without its recorded refusal: the refusal
         * is recorded once, by the integration below */
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(p, "workspace");
        t = cJSON_IsString(id) ? wacp_tree_find(w, id->valuestring) : NULL;
        if (t && !(wacp_tree_visible(c, t) && wacp_tree_governs(c, t) &&
                   (policy_role_can(&c->view, "integrate") || c->delegate)))
            t = NULL;
    }
    const struct wacp_checkpoint *cp = t && t->state == WS_INTEGRATING && t->final_cp[0]
                                           ? wacp_checkpoint_find(w, t->final_cp)
                                           : NULL;
    const cJSON *cj = cJSON_GetObjectItemCaseSensitive(p, "checkpoint");
    if (cp && cj && cJSON_IsString(cj) && strcmp(cj->valuestring, t->final_cp))
        cp = NULL;
    void *handle = cp && !merge_busy(t) ? w->h.evaluator(w->h.data, c->id) : NULL;
    if (handle)
        return evaluate(w, c, t, cp, p, handle, res, e);
    static const struct wacp_manifest none = {0};
    return integrate_evaluated(w, c, p, res, e, &none, NULL);
}

static int integrate_evaluated(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                               struct wacp_err *e, const struct wacp_manifest *sem, const cJSON *reasons)
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
    bool evaluated = !strcmp(strategy, "evaluated");
    if (strcmp(strategy, "direct") && strcmp(strategy, "layered") && !evaluated)
        return wacp_core_fail(e, -32602, "invalid_params",
                              "strategy must be \"direct\", \"layered\" or \"evaluated\"");
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
    if (merge_busy(t))
        return busy_fail(e, t);
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
    /* layered: content_overlap; evaluated: every type the runtime can decide mechanically
     * (integration spec section 5's table) and the evaluator's contradictions: found by the
     * merge's job before it writes. */
    return merge_close(w, c, t, cp, NULL, strategy, strcmp(strategy, "direct") != 0, sem, reasons, true,
                       res, e);
}

/* ---- human_escalate (integration spec 6): the conflict goes to a person through the highway's
 * conflict_resolution gate. Approve (or modify with `prefer`) completes the merge as
 * coordinator_resolve would; reject fails the workspace; a fallback to the coordinator leaves it
 * conflicted for the coordinator to resolve. The workspace's timeout still runs meanwhile
 * (conflict_timeout), and its end withdraws the gate (subject invalidated). */

struct escalated {
    struct wacp *w;
    char coordinator[WACP_ID_LEN], ws[WACP_ID_LEN];
};

static void escalated_notify(struct wacp *w, const struct highway_gate *g, const char *what)
{
    struct wacp_ws *root = wacp_tree_root(w);
    if (!root || !w->h.notify)
        return;
    cJSON *p = highway_gate_json(g, true, wacp_core_now_ms());
    cJSON_AddStringToObject(p, "event", what);
    w->h.notify(w->h.data, root->id, "wacp/highway", p);
}

static void on_escalated(void *data, const struct highway_gate *g, enum highway_action a,
                         const cJSON *mods)
{
    struct escalated *x = data;
    struct wacp *w = x->w;
    struct wacp_ws *t = wacp_tree_find(w, x->ws);
    struct wacp_ws *c = wacp_tree_find(w, x->coordinator);
    if (!c)
        c = wacp_tree_root(w);
    if (!t || !c || t->state != WS_CONFLICTED || !strcmp(g->actor, "protocol")) {
        free(x);
        return; /* resolved otherwise meanwhile (timeout, abort): nothing left to decide */
    }
    if (a == HIGHWAY_ESCALATE) {
        escalated_notify(w, g, "escalated_to_coordinator"); /* still conflicted: the coordinator's */
        free(x);
        return;
    }
    bool go = a == HIGHWAY_APPROVE || a == HIGHWAY_MODIFY;
    const cJSON *pj = a == HIGHWAY_MODIFY ? cJSON_GetObjectItemCaseSensitive(mods, "prefer") : NULL;
    bool parent = cJSON_IsString(pj) && !strcmp(pj->valuestring, "parent");
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", t->id);
    wacp_core_add_str(b, "resolution", "escalate");
    wacp_core_add_str(b, "gate_id", g->id);
    wacp_core_add_str(b, "decided_by", g->actor);
    wacp_core_add_str(b, "outcome", go ? "closed" : "failed");
    if (go)
        wacp_core_add_str(b, "prefer", parent ? "parent" : "child");
    cJSON_AddItemToObject(b, "conflicts", paths_json(&t->conflicts, true));
    int r = wacp_core_rec(w, t->id, g->actor, "conflict_resolved", b);
    cJSON_Delete(b);
    const struct wacp_checkpoint *cp = go ? wacp_checkpoint_find(w, t->final_cp) : NULL;
    cJSON *res = NULL;
    struct wacp_err e = {0};
    if (r == 0 && go && cp) /* refused (busy, a bad proof): it stays conflicted, the coordinator's */
        merge_close(w, c, t, cp, parent ? &t->conflicts : NULL, t->conflict_strategy, false, NULL, NULL,
                    false, &res, &e);
    else if (r == 0)
        wacp_tree_set_state(w, t, WS_FAILED, g->actor,
                            go ? "integration_error" : "gate_rejected_by_human");
    cJSON_Delete(res);
    escalated_notify(w, g, "conflict_resolved");
    free(x);
}

static void escalated_drop(void *data)
{
    free(data);
}

static int escalate_open(struct wacp *w, struct wacp_ws *c, struct wacp_ws *t, cJSON **res,
                         struct wacp_err *e)
{
    static const char M[] = "wacp/conflict.resolve";
    double timeout;
    enum policy_fallback fb;
    if (!w->hw || !w->session.highway)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "escalation_unavailable",
                              "this run has no human highway (policy `highway`): resolve the "
                              "conflict yourself or use agent_rework");
    /* The conflict_resolution gate's rule names the timeout and fallback even when that gate is
     * off for the coordinator's own resolutions: escalating asks a person explicitly. */
    wacp_gate_rule(w, POLICY_GATE_CONFLICT_RESOLUTION, &timeout, &fb);
    struct escalated *x = calloc(1, sizeof(*x));
    if (!x)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    x->w = w;
    snprintf(x->coordinator, sizeof x->coordinator, "%s", c->id);
    snprintf(x->ws, sizeof x->ws, "%s", t->id);
    cJSON *s = wacp_core_obj();
    wacp_core_add_str(s, "method", M);
    wacp_core_add_str(s, "resolution", "escalate");
    wacp_core_add_str(s, "workspace", t->id);
    wacp_core_add_str(s, "final_checkpoint", t->final_cp);
    wacp_core_add_str(s, "strategy", t->conflict_strategy);
    cJSON_AddItemToObject(s, "conflicts", paths_json(&t->conflicts, true));
    struct highway_gate_req r = {
        .type = POLICY_GATE_CONFLICT_RESOLUTION,
        .subject = s,
        .workspace = t->id,
        .requester = c->id,
        .graph_ref = w->graph,
        .timeout = timeout,
        .fallback = fb,
        .by_coordinator = false, /* a person is asked each time: no re-entry conversion */
        .fn = on_escalated,
        .fn_data = x,
        .drop = escalated_drop,
        .now_ms = wacp_core_now_ms(),
        .wall_ms = wacp_core_wall_ms(),
    };
    struct highway_gate *g = NULL;
    int rc = highway_gate_open(w->hw, &r, &g);
    cJSON_Delete(s);
    if (rc != 1) {
        free(x);
        if (rc == -EAGAIN)
            return wacp_core_deny(w, c, M, e, WACP_E_LIMIT, "limit", "too many gates are waiting");
        if (rc < 0)
            return wacp_core_trail_err(e);
        return wacp_core_fail(e, -32603, "internal", "the escalation gate did not open");
    }
    *res = integ_result(t, &t->conflicts, NULL);
    wacp_core_add_str(*res, "gate_id", g->id);
    return 0;
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
    bool rework = !strcmp(how, "agent_rework"), escalate = !strcmp(how, "escalate");
    if (!rework && !escalate && strcmp(how, "coordinator_resolve"))
        return wacp_core_fail(e, -32602, "invalid_params",
                              "resolution must be \"coordinator_resolve\", \"escalate\" or "
                              "\"agent_rework\"");
    if (strcmp(prefer, "child") && strcmp(prefer, "parent"))
        return wacp_core_fail(e, -32602, "invalid_params", "prefer must be \"child\" or \"parent\"");
    if (t->state != WS_CONFLICTED)
        return wacp_core_deny(w, c, M, e, WACP_E_STATE, "invalid_transition",
                              "workspace %s is %s, not conflicted", t->id,
                              wacp_tree_state_name(t->state));
    if (escalate)
        return escalate_open(w, c, t, res, e);
    if (!rework && merge_busy(t))
        return busy_fail(e, t);
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
    return merge_close(w, c, t, cp, !strcmp(prefer, "parent") ? &t->conflicts : NULL,
                       t->conflict_strategy, false, NULL, NULL, true, res, e);
}
