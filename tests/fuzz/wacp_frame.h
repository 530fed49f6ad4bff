/* tests/fuzz/wacp_frame.h: the frame both WACP model fuzzers share (fuzz_wacp_call.c: the
 * model's calls; fuzz_highway.c: the same with every gate on and a person's requests): a fresh
 * model per input (a coordinator, a worker W and a delegate D), then one line each:
 * "C|W|D METHOD {params}" an agent's request; with humans, "H OP {params}" a person's request
 * (wacp_human_call as a user with every right, "N ..." as one with none) and gated requests may
 * wait (deferred); $R $W $D $E (the last envelope to W) $T (the last task) $K (W's chain head)
 * are replaced by live ids; "tick" runs the clock to the next deadline; "fail" makes the trail
 * refuse the next call. Invariants: no crash or leak; a failed call returns no result; a refused
 * trail changes nothing (the tree is the same before and after). Included by one file each. */
#ifndef CORRAL_FUZZ_WACP_FRAME_H
#define CORRAL_FUZZ_WACP_FRAME_H

#include "policy/policy.h"
#include "supervisor/wacp/wacp.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct wacp_frame {
    const char *name;   /* of the temporary folder */
    const char *policy; /* the policy's text */
    bool humans;        /* H/N lines, a reply hook, deferrable calls */
};

struct fz {
    bool fail;
    char last_env[64], last_task[64], w[64];
};

static int rec(void *d, const char *ws, const char *actor, const char *type, const cJSON *body)
{
    struct fz *f = d;
    (void)ws, (void)actor;
    if (f->fail)
        return -5;
    if (!strcmp(type, "task_created"))
        snprintf(f->last_task, sizeof(f->last_task), "%s",
                 cJSON_GetStringValue(cJSON_GetObjectItem(body, "task_id")) ?: "");
    return 0;
}

static int start(void *d, const struct wacp_ws_info *ws, struct cerr *err)
{
    (void)d, (void)ws, (void)err;
    return 0;
}

static void stop(void *d, const char *ws, const char *why)
{
    (void)d, (void)ws, (void)why;
}

static int notify(void *d, const char *ws, const char *method, cJSON *params)
{
    struct fz *f = d;
    if (!strcmp(method, "wacp/envelope") && !strcmp(ws, f->w)) {
        const char *id = cJSON_GetStringValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(params, "envelope"), "envelope_id"));
        snprintf(f->last_env, sizeof(f->last_env), "%s", id ? id : "");
    }
    cJSON_Delete(params);
    return 0;
}

static void reply(void *d, const char *ws, uint64_t ref, cJSON *result, const struct wacp_err *e)
{
    (void)d, (void)ws, (void)ref, (void)e;
    cJSON_Delete(result);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static struct policy *policy_once(const char *policy_text)
{
    static struct policy *p;
    if (!p) {
        struct policy_diags d = {0};
        if (policy_load_buffer("fuzz", policy_text, strlen(policy_text), &p, &d) < 0)
            __builtin_trap();
        policy_diags_free(&d);
    }
    return p;
}

static char *ids_of(struct wacp *w, const char *wanted_parent, char out[64])
{
    cJSON *t = wacp_tree_json(w);
    out[0] = 0;
    const cJSON *x;
    cJSON_ArrayForEach (x, t) {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(x, "parent"));
        if (p && !strcmp(p, wanted_parent) && !out[0])
            snprintf(out, 64, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(x, "workspace_id")));
    }
    cJSON_Delete(t);
    return out;
}

/* Replaces each $X in IN by its id. */
static void expand(const char *in, size_t n, char *out, size_t cap, const char *const ids[6])
{
    static const char keys[] = "RWDETK";
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        const char *k = in[i] == '$' && i + 1 < n ? strchr(keys, in[i + 1]) : NULL;
        if (k && *k) {
            const char *v = ids[k - keys];
            size_t l = strlen(v);
            if (o + l >= cap)
                break;
            memcpy(out + o, v, l);
            o += l;
            i++;
            continue;
        }
        out[o++] = in[i];
    }
    out[o] = 0;
}

static char *tree_text(struct wacp *w)
{
    cJSON *t = wacp_tree_json(w);
    char *s = cJSON_PrintUnformatted(t);
    cJSON_Delete(t);
    return s;
}

/* One input through a fresh model under FRAME's policy. */
static int wacp_frame_run(const struct wacp_frame *frame, const uint8_t *data, size_t size)
{
    static char tmp[64];
    if (!tmp[0]) {
        snprintf(tmp, sizeof(tmp), "/tmp/fuzz-%s.XXXXXX", frame->name);
        if (!mkdtemp(tmp))
            __builtin_trap();
        char p[128];
        snprintf(p, sizeof(p), "%s/root", tmp);
        mkdir(p, 0700);
        snprintf(p, sizeof(p), "%s/root/a.txt", tmp);
        FILE *fp = fopen(p, "w");
        if (fp) {
            fputs("a\n", fp);
            fclose(fp);
        }
    }
    char root[128], run[128];
    snprintf(root, sizeof(root), "%s/root", tmp);
    snprintf(run, sizeof(run), "%s/run", tmp);
    struct fz f = {0};
    /* Without a reply hook the model has no trail to query and defers nothing. */
    struct wacp_hooks h = {.data = &f,
                           .record = rec,
                           .start = start,
                           .stop = stop,
                           .notify = notify,
                           .reply = frame->humans ? reply : NULL};
    struct wacp_opts o = {.policy = policy_once(frame->policy),
                          .run_dir = run,
                          .root_dir = root,
                          .root_owner = "fuzz",
                          .max_workspaces = 8,
                          .max_envelopes = 8,
                          .max_payload = 4096};
    struct wacp *w = NULL;
    struct cerr err = {0};
    if (wacp_new(&o, &h, &w, &err) < 0 || wacp_start(w, "lead", &err) < 0)
        __builtin_trap();
    char r_id[64], w_id[64], d_id[64], k_id[64] = "";
    cJSON *t = wacp_tree_json(w);
    snprintf(r_id, sizeof(r_id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(t, 0), "workspace_id")));
    cJSON_Delete(t);
    cJSON *res = NULL;
    struct wacp_err e;
    cJSON *p = cJSON_Parse("{\"agent\": \"coder\", \"directive\": 1}");
    wacp_call(w, r_id, "wacp/workspace.create", p, &res, &e);
    cJSON_Delete(res);
    cJSON_Delete(p);
    p = cJSON_Parse("{\"agent\": \"coder\", \"directive\": 1, \"delegate\": true}");
    wacp_call(w, r_id, "wacp/workspace.create", p, &res, &e);
    cJSON_Delete(res);
    cJSON_Delete(p);
    ids_of(w, r_id, w_id);
    snprintf(f.w, sizeof(f.w), "%s", w_id);
    cJSON *tr = wacp_tree_json(w);
    snprintf(d_id, sizeof(d_id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(tr, 2), "workspace_id")) ?: "");
    cJSON_Delete(tr);

    const char *s = (const char *)data, *end = s + size;
    int calls = 0;
    while (s < end && calls++ < 64) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        char line[8192];
        const char *ids[6] = {r_id, w_id, d_id, f.last_env, f.last_task, k_id};
        expand(s, n < 4096 ? n : 4096, line, sizeof(line), ids);
        s += n + 1;
        if (!strcmp(line, "tick")) {
            uint64_t d = wacp_next_deadline(w);
            if (d != UINT64_MAX)
                wacp_tick(w, d);
            continue;
        }
        if (!strcmp(line, "fail")) {
            f.fail = true;
            continue;
        }
        if (strlen(line) < 3 || line[1] != ' ')
            continue;
        if (frame->humans && (line[0] == 'H' || line[0] == 'N')) {
            static const struct policy_user all = {.uid = 1,
                                                   .user_id = "alice",
                                                   .approve = POLICY_USER_APPROVE_ALL,
                                                   .inject = true,
                                                   .escalations = POLICY_USER_ESC_ALL};
            static const struct policy_user none = {
                .uid = 2, .user_id = "bob", .escalations = POLICY_USER_ESC_NONE};
            char *op = line + 2, *sp = strchr(op, ' ');
            if (sp)
                *sp = 0;
            cJSON *params = sp ? cJSON_Parse(sp + 1) : cJSON_CreateObject();
            res = NULL;
            int r = wacp_human_call(w, line[0] == 'H' ? &all : &none, op, params, &res, &e);
            if ((r < 0) != (res == NULL))
                __builtin_trap();
            cJSON_Delete(res);
            cJSON_Delete(params);
            continue;
        }
        const char *caller = line[0] == 'W' ? w_id : line[0] == 'D' ? d_id : r_id;
        char *m = line + 2, *sp = strchr(m, ' ');
        if (sp)
            *sp = 0;
        cJSON *params = sp ? cJSON_Parse(sp + 1) : NULL;
        char *before = f.fail ? tree_text(w) : NULL;
        res = NULL;
        int r = frame->humans ? wacp_call_ref(w, caller, m, params, (uint64_t)calls, &res, &e)
                              : wacp_call(w, caller, m, params, &res, &e);
        if ((r < 0 || r == WACP_DEFERRED) && res)
            __builtin_trap();
        if (r == 0 && !res)
            __builtin_trap();
        if (before) {
            char *after = tree_text(w);
            if (strcmp(before, after))
                __builtin_trap(); /* nothing may change when the trail refuses */
            free(after);
            free(before);
            f.fail = false;
        }
        if (res && !strcmp(m, "wacp/checkpoint.create") && caller == w_id)
            snprintf(k_id, sizeof(k_id), "%s",
                     cJSON_GetStringValue(cJSON_GetObjectItem(res, "checkpoint_id")) ?: "");
        cJSON_Delete(res);
        cJSON_Delete(params);
    }
    wacp_shutdown(w, "run_ended");
    wacp_free(w);
    nftw(run, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

#endif
