/* supervisor/wacp/checkpoint.c: checkpoints: the linear immutable chain of each workspace (a new
 * one names the current head), type-role compatibility ("create:TYPE"), files snapshotted by
 * content hash, a hash over the whole payload, and the automatic checkpoint signal. */
#include "supervisor/wacp/checkpoint.h"

#include "supervisor/wacp/core.h"
#include "supervisor/wacp/files.h"
#include "supervisor/wacp/jobs.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/tree.h"

#include "tools/broker/storage.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void wacp_checkpoint_free(struct wacp_checkpoint *cp)
{
    if (!cp)
        return;
    free(cp->type);
    free(cp->intent);
    free(cp->status);
    free(cp->confidence);
    free(cp->payload);
    wacp_files_manifest_clear(&cp->files);
    free(cp);
}

struct wacp_checkpoint *wacp_checkpoint_find(const struct wacp *w, const char *id)
{
    for (size_t i = 0; id && i < w->n_cp; i++)
        if (!strcmp(w->cp[i]->id, id))
            return w->cp[i];
    return NULL;
}

cJSON *wacp_checkpoint_json(const struct wacp_checkpoint *cp, bool with_files)
{
    cJSON *o = wacp_core_obj();
    wacp_core_add_str(o, "checkpoint_id", cp->id);
    wacp_core_add_str(o, "workspace_id", cp->ws);
    wacp_core_add_str(o, "type", cp->type);
    wacp_core_add_str(o, "intent", cp->intent);
    wacp_core_add_str(o, "status", cp->status);
    wacp_core_add_str(o, "confidence", cp->confidence);
    wacp_core_add_str(o, "parent", cp->parent);
    wacp_core_add_str(o, "payload_hash", cp->payload_hash);
    cJSON_AddNumberToObject(o, "timestamp", (double)cp->timestamp_ms);
    if (with_files) {
        cJSON_AddItemToObject(o, "files", wacp_files_manifest_json(&cp->files));
        cJSON_AddItemToObject(o, "payload", cp->payload ? cJSON_Parse(cp->payload) : cJSON_CreateNull());
    }
    return o;
}

static int reject(struct wacp *w, struct wacp_ws *c, const char *type, const char *parent,
                  struct wacp_err *e, int rpc, const char *code, const char *msg)
{
    e->rpc_code = rpc;
    snprintf(e->code, sizeof(e->code), "%s", code);
    snprintf(e->msg, sizeof(e->msg), "%s", msg);
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "workspace_id", c->id);
    wacp_core_add_str(b, "type", type);
    wacp_core_add_str(b, "parent", parent);
    wacp_core_add_str(b, "head", c->head);
    wacp_core_add_str(b, "reason", code);
    wacp_core_add_str(b, "message", msg);
    int r = wacp_core_rec(w, c->id, c->role, "checkpoint_rejected", b);
    cJSON_Delete(b);
    w->sum.denials++;
    return r < 0 ? wacp_core_trail_err(e) : -1;
}

static const char *one_of(const char *s, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, v[i]))
            return v[i];
    return NULL;
}

/* The checkpoint's fields for its proof: every field of security spec 4.3, files by hash. */
static int cp_mac(const struct wacp *w, const struct wacp_checkpoint *cp, char out[INTEGRITY_HEX],
                  const char *check)
{
    cJSON *files = wacp_files_manifest_json(&cp->files);
    cJSON *payload = cp->payload ? cJSON_Parse(cp->payload)
                                 : NULL; /* kept as text: parsed for the proof */
    char ts[24];
    snprintf(ts, sizeof(ts), "%llu", (unsigned long long)cp->timestamp_ms);
    struct integrity_field f[] = {
        {.s = cp->id},     {.s = cp->ws},           {.s = cp->type},   {.json = payload},
        {.s = cp->intent}, {.s = cp->parent},       {.s = cp->status}, {.s = cp->confidence},
        {.json = files},   {.s = cp->payload_hash}, {.s = ts},
    };
    int r = 0;
    if (!files || (cp->payload && !payload))
        r = -ENOMEM;
    else if (check)
        r = integrity_check(&w->key, "checkpoint", f, ARRAY_SIZE(f), check) ? 0 : -EBADMSG;
    else
        r = integrity_mac(&w->key, "checkpoint", f, ARRAY_SIZE(f), out);
    cJSON_Delete(files);
    cJSON_Delete(payload);
    return r;
}

int wacp_checkpoint_seal(struct wacp *w, struct wacp_checkpoint *cp)
{
    return cp_mac(w, cp, cp->mac, NULL);
}

static int violation(struct wacp *w, const struct wacp_checkpoint *cp, const char *what,
                     const char *expected, const char *actual, struct wacp_err *e)
{
    cJSON *b = wacp_core_obj();
    wacp_core_add_str(b, "subject_type", "checkpoint");
    wacp_core_add_str(b, "subject_id", cp->id);
    wacp_core_add_str(b, "violation", "hash_mismatch");
    wacp_core_add_str(b, "expected", expected);
    wacp_core_add_str(b, "actual", actual);
    wacp_core_add_str(b, "action_taken", "rejected");
    wacp_core_add_str(b, "detail", what);
    int r = wacp_core_rec(w, cp->ws, "protocol", "integrity_violation", b);
    cJSON_Delete(b);
    w->sum.denials++;
    if (r < 0)
        return wacp_core_trail_err(e);
    return wacp_core_fail(
        e, WACP_E_STATE, "integrity_violation",
        "checkpoint %s fails its integrity check (%s): it is not integrated; reject it "
        "or have the agent make a new one",
        cp->id, what);
}

int wacp_checkpoint_verify_mac(struct wacp *w, const struct wacp_checkpoint *cp, struct wacp_err *e)
{
    if (cp_mac(w, cp, NULL, cp->mac) < 0)
        return violation(w, cp, "its fields changed since it was made", cp->mac,
                         "recomputed proof differs", e);
    return 0;
}

int wacp_checkpoint_objects_check(const char *objects, const struct wacp_manifest *files,
                                  struct wacp_object_fault *bad)
{
    for (size_t i = 0; i < files->n; i++) {
        const struct wacp_file *f = &files->v[i];
        if (!f->hash[0])
            continue; /* a deletion: no object */
        int r = integrity_object_ok(objects, f->hash, bad->actual);
        if (r == 1)
            continue;
        if (r < 0)
            snprintf(bad->actual, sizeof(bad->actual), "unreadable");
        snprintf(bad->path, sizeof(bad->path), "%.200s", f->path);
        snprintf(bad->expected, sizeof(bad->expected), "%s", f->hash);
        return -1;
    }
    return 0;
}

int wacp_checkpoint_object_violation(struct wacp *w, const struct wacp_checkpoint *cp,
                                     const struct wacp_object_fault *bad, struct wacp_err *e)
{
    char what[300];
    snprintf(what, sizeof(what), "the stored object of %.200s was altered", bad->path);
    return violation(w, cp, what, bad->expected, bad->actual, e);
}

int wacp_checkpoint_verify(struct wacp *w, const struct wacp_checkpoint *cp, struct wacp_err *e)
{
    if (wacp_checkpoint_verify_mac(w, cp, e) < 0)
        return -1;
    struct wacp_object_fault bad;
    if (wacp_checkpoint_objects_check(w->objects_dir, &cp->files, &bad) < 0)
        return wacp_checkpoint_object_violation(w, cp, &bad, e);
    return 0;
}

/* ---- checkpoint.create's snapshot, on the pool (jobs.h) */

struct snap_job {
    struct wacp_job j;
    cJSON *params;      /* the request's: read again when the snapshot is done */
    int dir_fd;         /* the workspace's files (wacp_tree_dir_open), the job's own */
    char *objects;      /* the run's object store */
    const char **paths; /* into params (NULL: every file that differs from base) */
    size_t n_paths;
    struct wacp_manifest base; /* the workspace's, copied: the worker never reads the model */
    bool measure;              /* a storage budget: measure what the workspace holds */
    uint64_t used;
    int used_rc;
    struct wacp_manifest files; /* the snapshot */
    struct cerr ce;
    int rc;
};

static void snap_work(struct wacp_job *jb)
{
    struct snap_job *sj = (struct snap_job *)jb;
    sj->rc = wacp_files_snapshot(sj->dir_fd, sj->paths, sj->n_paths, &sj->base, sj->objects, &sj->files,
                                 &sj->ce);
    if (sj->rc < 0 || !sj->measure)
        return;
    /* The storage budget counts what the workspace holds now, whatever wrote it (commands too). */
    sj->used_rc = broker_storage_used(sj->dir_fd, &sj->used);
}

static void snap_free(struct wacp_job *jb)
{
    struct snap_job *sj = (struct snap_job *)jb;
    cJSON_Delete(sj->params);
    if (sj->dir_fd >= 0)
        close(sj->dir_fd);
    free(sj->objects);
    free(sj->paths);
    wacp_files_manifest_clear(&sj->base);
    wacp_files_manifest_clear(&sj->files);
    free(sj);
}

static int snap_finish(struct wacp *w, struct wacp_job *jb, cJSON **res, struct wacp_err *e)
{
    struct snap_job *sj = (struct snap_job *)jb;
    struct wacp_ws *c = wacp_tree_find(w, jb->caller); /* workspaces stay in the tree: found */
    if (!c)
        return wacp_core_fail(e, -32603, "internal", "the workspace is unknown to the model");
    c->file_readers--;
    const cJSON *p = sj->params;
    const char *type = cJSON_GetObjectItemCaseSensitive(p, "type")->valuestring;
    const char *intent = cJSON_GetObjectItemCaseSensitive(p, "intent")->valuestring;
    const char *status = cJSON_GetObjectItemCaseSensitive(p, "status")->valuestring;
    const char *conf = cJSON_GetObjectItemCaseSensitive(p, "confidence")->valuestring;
    const cJSON *pj = cJSON_GetObjectItemCaseSensitive(p, "parent");
    const cJSON *payload = cJSON_GetObjectItemCaseSensitive(p, "payload");
    const char *parent = cJSON_IsString(pj) ? pj->valuestring : "";
    char msg[400];
    /* The model went on while the files were read: what was checked then is checked again. */
    if (!(WS_BIT(c->state) & (WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED)))) {
        snprintf(msg, sizeof(msg), "your workspace became %s while its files were read",
                 wacp_tree_state_name(c->state));
        return reject(w, c, type, parent, e, WACP_E_STATE, "invalid_state", msg);
    }
    if (strcmp(parent, c->head)) {
        snprintf(msg, sizeof(msg),
                 "another checkpoint, %s, became the chain head while this one's files were read",
                 c->head);
        return reject(w, c, type, parent, e, WACP_E_STATE, "chain_head_mismatch", msg);
    }
    struct wacp_checkpoint *cp = calloc(1, sizeof(*cp));
    if (!cp)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    struct cerr ce = {0};
    if (sj->rc < 0) {
        wacp_checkpoint_free(cp);
        snprintf(msg, sizeof(msg), "cannot snapshot the files: %.300s", sj->ce.msg);
        return reject(w, c, type, parent, e, -32602, "invalid_files", msg);
    }
    cp->files = sj->files;
    memset(&sj->files, 0, sizeof(sj->files));
    /* What could never be integrated is refused now, not at integration: paths deeper than a
     * workspace may nest (they broke every later copy), protected paths. */
    if (wacp_files_check_paths(&cp->files, &w->rules, &ce) < 0) {
        bool prot = ce.code == -EPERM || ce.code == EPERM;
        wacp_checkpoint_free(cp);
        snprintf(msg, sizeof(msg), "%.380s", ce.msg);
        if (prot) {
            cJSON *d = wacp_core_obj();
            wacp_core_add_str(d, "kind", "protected_path");
            wacp_core_add_str(d, "method", "wacp/checkpoint.create");
            wacp_core_add_str(d, "reason", msg);
            int r = wacp_core_rec(w, c->id, c->role, "denial", d);
            cJSON_Delete(d);
            if (r < 0)
                return wacp_core_trail_err(e);
        }
        return reject(w, c, type, parent, e, prot ? WACP_E_DENIED : -32602,
                      prot ? "protected_path" : "too_deep", msg);
    }
    /* The storage budget counts what the workspace holds now, whatever wrote it (commands too). */
    if (c->budgets.storage_bytes) {
        uint64_t used = sj->used;
        int r = sj->measure ? sj->used_rc : -EAGAIN; /* the budget appeared meanwhile: refused */
        if (r < 0 || used > c->budgets.storage_bytes) {
            wacp_checkpoint_free(cp);
            cJSON *x = wacp_core_obj();
            wacp_core_add_str(x, "budget", "storage");
            cJSON_AddNumberToObject(x, "limit", (double)c->budgets.storage_bytes);
            cJSON_AddNumberToObject(x, "used", (double)used);
            r = wacp_core_rec(w, c->id, "protocol", "budget_exceeded", x);
            cJSON_Delete(x);
            if (r < 0 && r != -EFBIG)
                return wacp_core_trail_err(e);
            snprintf(msg, sizeof(msg),
                     "the workspace holds %llu bytes, over its storage budget of %llu "
                     "(storage_bytes): remove files, then checkpoint",
                     (unsigned long long)used, (unsigned long long)c->budgets.storage_bytes);
            return reject(w, c, type, parent, e, WACP_E_LIMIT, "budget_exceeded", msg);
        }
    }
    for (size_t i = 0; i < cp->files.n; i++)
        if (!cp->files.v[i].hash[0] && !wacp_files_manifest_get(&c->base, cp->files.v[i].path)) {
            snprintf(msg, sizeof(msg), "file '%.200s' does not exist in your workspace",
                     cp->files.v[i].path);
            wacp_checkpoint_free(cp);
            return reject(w, c, type, parent, e, -32602, "invalid_files", msg);
        }
    /* The manifest is kept for the whole run, like the payload (up to WACP_FILES_MAX_FILES
     * entries a checkpoint, WACP_MAX_CHECKPOINTS checkpoints a workspace: gigabytes), so it
     * counts toward the run's ceiling on what agents make it keep. */
    size_t kept = cp->files.n * sizeof(cp->files.v[0]);
    for (size_t i = 0; i < cp->files.n; i++)
        kept += strlen(cp->files.v[i].path) + 1;
    if (!wacp_core_hold(w, kept)) {
        wacp_checkpoint_free(cp);
        return reject(w, c, type, parent, e, WACP_E_LIMIT, "memory_limit",
                      "the run keeps a bounded amount of checkpoint file lists and payloads and "
                      "has no room for this one: integrate or end workspaces first");
    }
    wacp_core_new_id("cp", cp->id);
    snprintf(cp->ws, sizeof(cp->ws), "%s", c->id);
    snprintf(cp->parent, sizeof(cp->parent), "%s", parent);
    cp->type = strdup(type);
    cp->intent = strdup(intent);
    cp->status = strdup(status);
    cp->confidence = strdup(conf);
    cp->payload = payload ? cJSON_PrintUnformatted(payload) : NULL;
    cp->timestamp_ms = wacp_core_wall_ms();
    /* The payload hash covers everything the checkpoint declares, files by their hashes. */
    cJSON *h = wacp_core_obj();
    wacp_core_add_str(h, "type", type);
    wacp_core_add_str(h, "intent", intent);
    wacp_core_add_str(h, "status", status);
    wacp_core_add_str(h, "confidence", conf);
    wacp_core_add_str(h, "parent", parent);
    cJSON_AddItemToObject(h, "payload", payload ? cJSON_Duplicate(payload, true) : cJSON_CreateNull());
    cJSON_AddItemToObject(h, "files", wacp_files_manifest_json(&cp->files));
    char *canon = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    if (!canon || !cp->type || !cp->intent || !cp->status || !cp->confidence ||
        (payload && !cp->payload) ||
        !wacp_core_grow((void **)&w->cp, &w->cap_cp, w->n_cp + 1, sizeof(*w->cp))) {
        free(canon);
        wacp_checkpoint_free(cp);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    wacp_files_hash_hex(canon, strlen(canon), cp->payload_hash);
    free(canon);

    if (wacp_checkpoint_seal(w, cp) < 0) {
        wacp_checkpoint_free(cp);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    cJSON *b = wacp_checkpoint_json(cp, false);
    cJSON_AddItemToObject(b, "files", wacp_files_manifest_json(&cp->files));
    cJSON *in = cJSON_AddObjectToObject(b, "integrity"); /* security spec 4.3, rule 2 */
    wacp_core_add_str(in, "proof", cp->mac);
    wacp_core_add_str(in, "algorithm", INTEGRITY_ALGORITHM);
    int r = wacp_core_rec(w, c->id, c->role, "checkpoint_created", b);
    cJSON_Delete(b);
    if (r < 0) {
        wacp_checkpoint_free(cp);
        return wacp_core_trail_err(e);
    }
    w->cp[w->n_cp++] = cp;
    c->n_checkpoints++;
    snprintf(c->head, sizeof(c->head), "%s", cp->id);
    if (!strcmp(status, "final"))
        snprintf(c->final_cp, sizeof(c->final_cp), "%s", cp->id);
    /* PROTOCOL 7.2 rule 5: the runtime emits the checkpoint signal, ref = the checkpoint. */
    char sid[WACP_ID_LEN];
    if (wacp_signal_emit(w, c, "protocol", "checkpoint", NULL, cp->id, NULL, false, sid) < 0)
        return wacp_core_trail_err(e);
    *res = wacp_core_obj();
    wacp_core_add_str(*res, "checkpoint_id", cp->id);
    wacp_core_add_str(*res, "payload_hash", cp->payload_hash);
    cJSON_AddItemToObject(*res, "files", wacp_files_manifest_json(&cp->files));
    return 0;
}

int wacp_checkpoint_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                  struct wacp_err *e)
{
    const char *type = cJSON_GetObjectItemCaseSensitive(p, "type")->valuestring;
    const char *intent = cJSON_GetObjectItemCaseSensitive(p, "intent")->valuestring;
    const char *status = cJSON_GetObjectItemCaseSensitive(p, "status")->valuestring;
    const char *conf = cJSON_GetObjectItemCaseSensitive(p, "confidence")->valuestring;
    const cJSON *pj = cJSON_GetObjectItemCaseSensitive(p, "parent");
    const cJSON *fj = cJSON_GetObjectItemCaseSensitive(p, "files");
    const cJSON *payload = cJSON_GetObjectItemCaseSensitive(p, "payload");
    const char *parent = cJSON_IsString(pj) ? pj->valuestring : "";
    char msg[400];

    static const char *const statuses[] = {"provisional", "final"};
    static const char *const confs[] = {"high", "medium", "low"};
    if (strlen(type) == 0 || strlen(type) > 64)
        return reject(w, c, type, parent, e, -32602, "invalid_structure",
                      "type must be 1-64 characters");
    if (intent[0] == 0)
        return reject(w, c, type, parent, e, -32602, "invalid_structure",
                      "intent must say why this checkpoint exists (non-empty)");
    if (!one_of(status, statuses, 2) || !one_of(conf, confs, 3))
        return reject(w, c, type, parent, e, -32602, "invalid_structure",
                      "status is provisional or final; confidence is high, medium or low");
    snprintf(msg, sizeof(msg), "create:%s", type);
    if (!policy_role_can(&c->view, msg)) {
        snprintf(msg, sizeof(msg), "role '%s' may not create '%.64s' checkpoints", c->role, type);
        return reject(w, c, type, parent, e, WACP_E_DENIED, "type_not_permitted", msg);
    }
    if (strcmp(parent, c->head)) {
        snprintf(msg, sizeof(msg),
                 "parent must be the chain head, %s, not %.64s: chains are linear "
                 "and append-only",
                 c->head[0] ? c->head : "null (the first)", parent[0] ? parent : "null");
        return reject(w, c, type, parent, e, WACP_E_STATE, "chain_head_mismatch", msg);
    }
    if (c->n_checkpoints >= WACP_MAX_CHECKPOINTS) {
        snprintf(msg, sizeof(msg), "a workspace keeps at most %d checkpoints", WACP_MAX_CHECKPOINTS);
        return reject(w, c, type, parent, e, WACP_E_LIMIT, "limit", msg);
    }
    char *ptxt = payload ? cJSON_PrintUnformatted(payload) : NULL;
    size_t plen = ptxt ? strlen(ptxt) : 0;
    free(ptxt);
    if (plen > w->max_payload || (payload && plen == 0))
        return reject(w, c, type, parent, e, WACP_E_LIMIT, "limit", "the payload is too large");
    if (!wacp_core_hold(w, plen))
        return reject(w, c, type, parent, e, WACP_E_LIMIT, "memory_limit",
                      "the run keeps a bounded amount of payloads and has no room for this one");
    size_t n_files = fj ? (size_t)cJSON_GetArraySize(fj) : 0;
    if (n_files > WACP_FILES_MAX_FILES)
        return reject(w, c, type, parent, e, WACP_E_LIMIT, "limit", "too many files");
    for (size_t i = 0; i < n_files; i++) {
        const cJSON *x = cJSON_GetArrayItem(fj, (int)i);
        if (!cJSON_IsString(x) || !wacp_files_path_ok(x->valuestring))
            return reject(w, c, type, parent, e, -32602, "invalid_structure",
                          "files are clean relative paths inside the workspace (no '..', no "
                          "leading '/')");
    }
    if (c->file_writing)
        return reject(w, c, type, parent, e, WACP_E_STATE, "workspace_busy",
                      "an integration is writing your workspace's files; checkpoint once it is "
                      "answered");
    /* The snapshot (reading every file named, or every file) runs on the pool: snap_finish. */
    struct snap_job *sj = calloc(1, sizeof(*sj));
    if (sj)
        sj->dir_fd = -1;
    if (!sj || !(sj->params = cJSON_Duplicate(p, true)) || !(sj->objects = strdup(w->objects_dir)) ||
        wacp_files_manifest_copy(&sj->base, &c->base) < 0) {
        if (sj)
            snap_free(&sj->j);
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    }
    struct cerr oe = {0};
    if ((sj->dir_fd = wacp_tree_dir_open(w, c, &oe)) < 0) {
        snap_free(&sj->j);
        return wacp_core_fail(e, -32603, "internal", "%s", oe.msg);
    }
    const cJSON *sfj = cJSON_GetObjectItemCaseSensitive(sj->params, "files");
    if (sfj) {
        sj->paths = calloc(n_files + 1, sizeof(*sj->paths));
        if (!sj->paths) {
            snap_free(&sj->j);
            return wacp_core_fail(e, -32603, "internal", "out of memory");
        }
        for (size_t i = 0; i < n_files; i++)
            sj->paths[i] = cJSON_GetArrayItem(sfj, (int)i)->valuestring;
        sj->n_paths = n_files;
    }
    sj->measure = c->budgets.storage_bytes != 0;
    sj->j.work = snap_work;
    sj->j.finish = snap_finish;
    sj->j.free = snap_free;
    c->file_readers++;
    return wacp_jobs_run(w, &sj->j, c->id, true, res, e);
}

int wacp_checkpoint_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **res,
                                struct wacp_err *e)
{
    const cJSON *wj = cJSON_GetObjectItemCaseSensitive(p, "workspace");
    struct wacp_ws *t = wj ? wacp_tree_find(w, wj->valuestring) : c;
    if (!t || !wacp_tree_visible(c, t))
        return wacp_core_deny(w, c, "wacp/checkpoint.list", e, WACP_E_NOT_FOUND, "not_found",
                              "no workspace '%.80s' you can see", wj->valuestring);
    *res = wacp_core_obj();
    cJSON *a = cJSON_AddArrayToObject(*res, "checkpoints");
    if (!a)
        return wacp_core_fail(e, -32603, "internal", "out of memory");
    for (size_t i = 0; i < w->n_cp; i++)
        if (!strcmp(w->cp[i]->ws, t->id))
            cJSON_AddItemToArray(a, wacp_checkpoint_json(w->cp[i], true));
    return 0;
}
