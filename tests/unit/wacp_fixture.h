/* tests/unit/wacp_fixture.h: a WACP model on a temp RUN_DIR with a small policy and fake hooks
 * that keep every trail entry, start, stop and notification in order (and can be told to fail
 * the trail or the start), plus helpers to drive it through wacp_call. */
#ifndef WACP_FIXTURE_H
#define WACP_FIXTURE_H

#include "policy/policy.h"
#include "supervisor/wacp/wacp.h"
#include "supervisor/wacp/core.h"
#include "supervisor/wacp/signal.h"
#include "supervisor/wacp/tree.h"

#include <setjmp.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wunused-function"

static const char fx_policy[] =
    "{\n"
    " \"version\": 1,\n"
    " \"highway\": {\"preset\": \"autonomous\", \"gates\": {\"task_approval\": false}},\n"
    " \"envelope_types\": {\"report\": {\"permissions\": [{\"sender\": \"reviewer\", \"receiver\": "
    "\"coordinator\"}]}},\n"
    " \"checkpoint_types\": {\"review\": {\"permitted_roles\": [\"reviewer\"]}},\n"
    " \"roles\": {\n"
    "   \"coordinator\": {\"budgets\": {\"memory\": \"512M\", \"pids\": 64, \"wall_time\": \"1h\"}},\n"
    "   \"worker\": {\"budgets\": {\"memory\": \"256M\", \"pids\": 32}},\n"
    "   \"reviewer\": {\"extends\": \"worker\", \"remove\": [\"send:query->coordinator\", "
    "\"create:artifact\"],\n"
    "                \"add\": [\"send:report->coordinator\"], \"checkpoint_types\": [\"review\"]}\n"
    " },\n"
    " \"agents\": {\n"
    "   \"lead\": {\"binary\": \"/usr/bin/true\", \"role\": \"coordinator\"},\n"
    "   \"coder\": {\"binary\": \"/usr/bin/true\", \"role\": \"worker\"},\n"
    "   \"critic\": {\"binary\": \"/usr/bin/true\", \"role\": \"reviewer\"},\n"
    "   \"watcher\": {\"binary\": \"/usr/bin/true\", \"role\": \"observer\"}\n"
    " }\n"
    "}\n";

struct fx_ent {
    char ws[WACP_ID_LEN], actor[64], type[48];
    cJSON *body;
    unsigned seq;
};
struct fx_note {
    char ws[WACP_ID_LEN], method[48];
    cJSON *params;
    unsigned seq;
};

struct fx {
    char tmp[64], root[128], run[128];
    struct policy *p;
    struct wacp *w;
    struct fx_ent ents[4096];
    size_t n_ents;
    struct fx_note notes[2048];
    size_t n_notes;
    char started[64][WACP_ID_LEN];
    size_t n_started;
    char stopped[64][WACP_ID_LEN];
    size_t n_stopped;
    bool fail_record, fail_start;
    unsigned seq;
    struct wacp_err e;
    int rc;
    char rootid[WACP_ID_LEN];
    cJSON *garbage[4096];
    size_t n_garbage;
    uint64_t base_ms;
};

static int fx_record(void *data, const char *ws, const char *actor, const char *type, const cJSON *body)
{
    struct fx *f = data;
    if (f->fail_record)
        return -EIO;
    assert_true(f->n_ents < ARRAY_SIZE(f->ents));
    struct fx_ent *x = &f->ents[f->n_ents++];
    snprintf(x->ws, sizeof(x->ws), "%s", ws ? ws : "");
    snprintf(x->actor, sizeof(x->actor), "%s", actor ? actor : "");
    snprintf(x->type, sizeof(x->type), "%s", type);
    x->body = body ? cJSON_Duplicate(body, true) : cJSON_CreateObject();
    x->seq = ++f->seq;
    return 0;
}

static int fx_start(void *data, const struct wacp_ws_info *ws, struct cerr *err)
{
    struct fx *f = data;
    if (f->fail_start)
        return cerr_set(err, EPERM, "the fake sandbox refuses");
    assert_true(f->n_started < ARRAY_SIZE(f->started));
    snprintf(f->started[f->n_started++], WACP_ID_LEN, "%s", ws->id);
    return 0;
}

static void fx_stop(void *data, const char *ws, const char *why)
{
    struct fx *f = data;
    (void)why;
    assert_true(f->n_stopped < ARRAY_SIZE(f->stopped));
    snprintf(f->stopped[f->n_stopped++], WACP_ID_LEN, "%s", ws);
}

static int fx_notify(void *data, const char *ws, const char *method, cJSON *params)
{
    struct fx *f = data;
    assert_true(f->n_notes < ARRAY_SIZE(f->notes));
    struct fx_note *n = &f->notes[f->n_notes++];
    snprintf(n->ws, sizeof(n->ws), "%s", ws);
    snprintf(n->method, sizeof(n->method), "%s", method);
    n->params = params;
    n->seq = ++f->seq;
    return 0;
}

static cJSON *fx_keep(struct fx *f, cJSON *o)
{
    if (o) {
        assert_true(f->n_garbage < ARRAY_SIZE(f->garbage));
        f->garbage[f->n_garbage++] = o;
    }
    return o;
}

/* Calls METHOD as workspace WS with params given as printf'd JSON; the result (kept until
 * teardown) or NULL with f->e filled. */
__attribute__((format(printf, 4, 5))) static cJSON *fx_call(struct fx *f, const char *ws,
                                                            const char *method, const char *fmt, ...)
{
    char buf[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    cJSON *p = cJSON_Parse(buf);
    assert_non_null(p);
    cJSON *r = NULL;
    f->rc = wacp_call(f->w, ws, method, p, &r, &f->e);
    cJSON_Delete(p);
    if (f->rc < 0) {
        assert_null(r);
        return NULL;
    }
    assert_non_null(r);
    return fx_keep(f, r);
}

static const char *fx_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static size_t fx_count(const struct fx *f, const char *type)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_ents; i++)
        n += !strcmp(f->ents[i].type, type);
    return n;
}

static const cJSON *fx_last(const struct fx *f, const char *type)
{
    for (size_t i = f->n_ents; i-- > 0;)
        if (!strcmp(f->ents[i].type, type))
            return f->ents[i].body;
    return NULL;
}

static const struct fx_ent *fx_last_ent(const struct fx *f, const char *type)
{
    for (size_t i = f->n_ents; i-- > 0;)
        if (!strcmp(f->ents[i].type, type))
            return &f->ents[i];
    return NULL;
}

/* The last notification of METHOD to WS (NULL when none). */
static const cJSON *fx_note_to(const struct fx *f, const char *ws, const char *method)
{
    for (size_t i = f->n_notes; i-- > 0;)
        if (!strcmp(f->notes[i].ws, ws) && !strcmp(f->notes[i].method, method))
            return f->notes[i].params;
    return NULL;
}

static size_t fx_notes_count(const struct fx *f, const char *ws, const char *method)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_notes; i++)
        n += !strcmp(f->notes[i].ws, ws) && !strcmp(f->notes[i].method, method);
    return n;
}

static const char *fx_last_envelope(const struct fx *f, const char *ws)
{
    const cJSON *p = fx_note_to(f, ws, "wacp/envelope");
    return p ? fx_str(cJSON_GetObjectItemCaseSensitive(p, "envelope"), "envelope_id") : NULL;
}

static const char *fx_state(struct fx *f, const char *ws)
{
    cJSON *t = fx_keep(f, wacp_tree_json(f->w));
    const cJSON *x;
    cJSON_ArrayForEach (x, t)
        if (!strcmp(fx_str(x, "workspace_id"), ws))
            return fx_str(x, "state");
    return NULL;
}

static void fx_ack_last(struct fx *f, const char *ws)
{
    const char *id = fx_last_envelope(f, ws);
    assert_non_null(id);
    assert_non_null(fx_call(f, ws, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", id));
}

/* A worker (or other agent) workspace under PARENT, its directive acknowledged: active. */
static const char *fx_child(struct fx *f, const char *parent, const char *agent, const char *extra)
{
    cJSON *r = fx_call(f, parent, "wacp/workspace.create",
                       "{\"agent\": \"%s\", \"directive\": {\"do\": \"work\"}%s%s}", agent,
                       extra ? ", " : "", extra ? extra : "");
    if (!r)
        fail_msg("workspace.create: %s: %s", f->e.code, f->e.msg);
    const char *id = fx_str(r, "workspace_id");
    fx_ack_last(f, id);
    assert_string_equal(fx_state(f, id), "active");
    return id;
}

static void fx_write(const char *dir, const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static const char *fx_read(const char *dir, const char *rel)
{
    static char buf[4096];
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *fp = fopen(p, "r");
    if (!fp)
        return NULL;
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    buf[n] = 0;
    fclose(fp);
    return buf;
}

static const char *fx_dir(struct fx *f, const char *ws)
{
    static char p[256];
    snprintf(p, sizeof(p), "%s/ws/%s", f->run, ws);
    return p;
}

/* The run's ceiling on kept payloads for the next setup (0: the default, 256 MiB). */
static uint64_t fx_max_payload_total;

static int fx_setup_opts(void **state, uint64_t max_ws, uint64_t max_env, const char *policy)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->tmp, sizeof(f->tmp), "/tmp/wacp-test.XXXXXX");
    assert_non_null(mkdtemp(f->tmp));
    snprintf(f->root, sizeof(f->root), "%s/project", f->tmp);
    snprintf(f->run, sizeof(f->run), "%s/run", f->tmp);
    assert_int_equal(mkdir(f->root, 0700), 0);
    char sub[256];
    snprintf(sub, sizeof(sub), "%s/src", f->root);
    assert_int_equal(mkdir(sub, 0700), 0);
    fx_write(f->root, "a.txt", "alpha\n");
    fx_write(f->root, "src/b.c", "int b;\n");
    snprintf(sub, sizeof(sub), "%s/escape", f->root);
    assert_int_equal(symlink("/etc", sub), 0);
    struct policy_diags d = {0};
    int r = policy_load_buffer("test.json", policy, strlen(policy), &f->p, &d);
    if (r < 0)
        policy_diags_print(&d, stderr);
    assert_int_equal(r, 0);
    policy_diags_free(&d);
    /* no trail, no evaluator, no pool: wacp/trail.query is then unknown, file work inline */
    struct wacp_hooks h = {
        .data = f, .record = fx_record, .start = fx_start, .stop = fx_stop, .notify = fx_notify};
    f->base_ms = 100;
    struct wacp_opts o = {.policy = f->p,
                          .run_dir = f->run,
                          .root_dir = f->root,
                          .root_owner = "alice",
                          .redelivery_base_ms = f->base_ms,
                          .max_workspaces = max_ws,
                          .max_envelopes = max_env,
                          .max_payload = 4096,
                          .max_payload_total = fx_max_payload_total};
    struct cerr err = {0};
    assert_int_equal(wacp_new(&o, &h, &f->w, &err), 0);
    assert_int_equal(wacp_start(f->w, NULL, &err), 0);
    cJSON *t = fx_keep(f, wacp_tree_json(f->w));
    snprintf(f->rootid, sizeof(f->rootid), "%s", fx_str(cJSON_GetArrayItem(t, 0), "workspace_id"));
    fx_ack_last(f, f->rootid);
    *state = f;
    return 0;
}

/* `corral run --resume` in the small: the entries recorded so far fed to a new model of the
 * same run (restore.c) as a resume feeds the trail's, wacp_resume, and the old model replaced. */
static void fx_resume(struct fx *f)
{
    size_t n = f->n_ents;
    struct wacp_hooks h = {
        .data = f, .record = fx_record, .start = fx_start, .stop = fx_stop, .notify = fx_notify};
    struct wacp_opts o = {.policy = f->p,
                          .run_dir = f->run,
                          .root_dir = f->root,
                          .root_owner = "alice",
                          .redelivery_base_ms = f->base_ms,
                          .max_workspaces = 8,
                          .max_envelopes = 4,
                          .max_payload = 4096};
    struct wacp *w = NULL;
    struct cerr err = {0};
    assert_int_equal(wacp_new(&o, &h, &w, &err), 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(wacp_restore_entry(w, f->ents[i].type, f->ents[i].ws[0] ? f->ents[i].ws : NULL,
                                            now_us - (int64_t)(n - i), f->ents[i].body),
                         0);
    struct wacp_resume_stats st;
    assert_int_equal(wacp_resume(w, now_us, &st, &err), 0);
    assert_int_equal(st.workspaces_failed, 0);
    wacp_free(f->w);
    f->w = w;
}

static int fx_setup(void **state)
{
    return fx_setup_opts(state, 8, 4, fx_policy);
}

/* The same policy with the highway's task_approval gate as the autonomous preset has it (on,
 * 30 s, approve), or with FALLBACK instead. */
static int fx_setup_gate(void **state, const char *fallback)
{
    static char text[sizeof(fx_policy) + 256];
    const char *from = "\"gates\": {\"task_approval\": false}";
    const char *at = strstr(fx_policy, from);
    assert_non_null(at);
    char repl[160] = "\"gates\": {\"task_approval\": true}";
    if (fallback)
        snprintf(repl, sizeof(repl),
                 "\"gate_overrides\": {\"task_approval\": {\"timeout\": \"5s\", \"fallback\": \"%s\"}}",
                 fallback);
    snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - fx_policy), fx_policy, repl, at + strlen(from));
    return fx_setup_opts(state, 8, 4, text);
}

static int fx_setup_gate_default(void **state)
{
    return fx_setup_gate(state, NULL);
}

static int fx_setup_gate_reject(void **state)
{
    return fx_setup_gate(state, "reject");
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    wacp_free(f->w);
    policy_free(f->p);
    for (size_t i = 0; i < f->n_ents; i++)
        cJSON_Delete(f->ents[i].body);
    for (size_t i = 0; i < f->n_notes; i++)
        cJSON_Delete(f->notes[i].params);
    for (size_t i = 0; i < f->n_garbage; i++)
        cJSON_Delete(f->garbage[i]);
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", f->tmp);
    free(f);
    return 0;
}

#define FX struct fx *f = *state
#define EXPECT_ERR(code_)                                                            \
    do {                                                                             \
        assert_int_not_equal(f->rc, 0);                                              \
        if (strcmp(f->e.code, (code_)))                                              \
            fail_msg("expected error %s, got %s: %s", (code_), f->e.code, f->e.msg); \
    } while (0)

#endif
