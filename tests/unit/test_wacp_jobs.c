/* tests/unit/test_wacp_jobs.c: the model's file work off the loop (supervisor/wacp/jobs.c). A
 * fake pool holds each job until the test runs it, so what happens while a copy, a snapshot or
 * an integration is in flight is decided by the test, not by timing: another workspace's
 * request is recorded before the copy's workspace_created; a workspace being copied is
 * nowhere in the tree; busy workspaces refuse what would see half-written files; a failed or
 * abandoned copy leaves nothing behind and is recorded. */
#include "wacp_fixture.h"

#include "supervisor/wacp/jobs.h"

#include <dirent.h>

#define FX struct fx *f = *state

/* The fake pool: jobs wait here until jobs_run_one. */
struct held {
    void (*work)(void *), (*done)(void *);
    void *arg;
};
static struct held Held[16];
static size_t N_held;

static int fake_offload(void *data, void (*work)(void *), void (*done)(void *), void *arg)
{
    (void)data;
    assert_true(N_held < ARRAY_SIZE(Held));
    Held[N_held++] = (struct held){work, done, arg};
    return 0;
}

/* The answers hooks.reply gave, in order. */
static struct {
    uint64_t ref;
    char ws[WACP_ID_LEN];
    cJSON *result;
    struct wacp_err e;
    unsigned seq; /* the fixture's entry count when it was answered */
} Replies[16];
static size_t N_replies;
static struct fx *Fx;

static void fake_reply(void *data, const char *ws, uint64_t ref, cJSON *result, const struct wacp_err *e)
{
    (void)data;
    assert_true(N_replies < ARRAY_SIZE(Replies));
    Replies[N_replies].ref = ref;
    snprintf(Replies[N_replies].ws, WACP_ID_LEN, "%s", ws);
    Replies[N_replies].result = fx_keep(Fx, result);
    if (e)
        Replies[N_replies].e = *e;
    Replies[N_replies].seq = Fx->seq;
    N_replies++;
}

/* The first held job: its work (the worker's part), then its done (the loop's). */
static void jobs_run_one(void)
{
    assert_true(N_held > 0);
    struct held h = Held[0];
    memmove(Held, Held + 1, (N_held - 1) * sizeof(Held[0]));
    N_held--;
    h.work(h.arg);
    h.done(h.arg);
}

static int setup(void **state)
{
    int r = fx_setup(state);
    struct fx *f = *state;
    Fx = f;
    N_held = N_replies = 0;
    memset(Replies, 0, sizeof(Replies));
    f->w->h.offload = fake_offload;
    f->w->h.reply = fake_reply;
    return r;
}

static int teardown(void **state)
{
    while (N_held) /* a test that failed midway: the jobs still end, then the model goes */
        jobs_run_one();
    return fx_teardown(state);
}

/* A request that can wait (a call_ref): the return code, the result kept. */
static int call_ref(struct fx *f, const char *ws, const char *method, uint64_t ref, const char *params,
                    cJSON **out)
{
    cJSON *p = cJSON_Parse(params);
    assert_non_null(p);
    cJSON *r = NULL;
    int rc = wacp_call_ref(f->w, ws, method, p, ref, &r, &f->e);
    cJSON_Delete(p);
    if (out)
        *out = fx_keep(f, r);
    else
        fx_keep(f, r);
    return rc;
}

static unsigned seq_of(const struct fx *f, const char *type, const char *ws)
{
    for (size_t i = 0; i < f->n_ents; i++)
        if (!strcmp(f->ents[i].type, type) && (!ws || !strcmp(f->ents[i].ws, ws)))
            return f->ents[i].seq;
    return 0;
}

static size_t ws_dirs(const struct fx *f)
{
    char p[256];
    snprintf(p, sizeof(p), "%s/ws", f->run);
    DIR *d = opendir(p);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

/* While a copy runs, another workspace's request is handled and recorded; the copy's
 * workspace_created comes after it, the creator's answer after that. */
static void test_copy_does_not_block_others(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL); /* inline: no call_ref */
    assert_int_equal(N_held, 0);
    size_t before = f->n_ents;
    assert_int_equal(call_ref(f, f->rootid, "wacp/workspace.create", 7,
                              "{\"agent\": \"critic\", \"directive\": {}}", NULL),
                     WACP_DEFERRED);
    assert_int_equal(N_held, 1);
    assert_int_equal(N_replies, 0);
    /* Nothing recorded yet, and the new workspace is nowhere to be seen. */
    assert_int_equal(f->n_ents, before);
    cJSON *l = fx_call(f, f->rootid, "wacp/workspace.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "workspaces")), 2);
    /* Another agent is served meanwhile. */
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"started\"}"));
    unsigned other = seq_of(f, "signal_emitted", a);
    assert_true(other > 0);
    jobs_run_one();
    assert_int_equal(N_replies, 1);
    assert_int_equal(Replies[0].ref, 7);
    assert_string_equal(Replies[0].ws, f->rootid);
    assert_non_null(Replies[0].result);
    const char *b = fx_str(Replies[0].result, "workspace_id");
    unsigned created = seq_of(f, "workspace_created", b);
    assert_true(created > other);
    assert_true(Replies[0].seq >= created); /* answered once its entry is recorded */
    assert_string_equal(fx_read(fx_dir(f, b), "a.txt"), "alpha\n");
    assert_string_equal(fx_state(f, b), "idle");
}

/* A parent being copied is not integrated into; a parent being integrated into is not copied
 * nor snapshotted; a child being integrated is not integrated twice. */
static void test_busy(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), "a.txt", "from a\n");
    assert_non_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"high\"}"));
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    /* A copy of the root in flight: integrating into the root is refused. */
    assert_int_equal(call_ref(f, f->rootid, "wacp/workspace.create", 1,
                              "{\"agent\": \"critic\", \"directive\": {}}", NULL),
                     WACP_DEFERRED);
    char p[160];
    snprintf(p, sizeof(p), "{\"workspace\": \"%s\", \"decision\": \"accept\"}", a);
    assert_true(call_ref(f, f->rootid, "wacp/integrate", 2, p, NULL) < 0);
    assert_string_equal(f->e.code, "workspace_busy");
    assert_int_equal(seq_of(f, "integration_started", a), 0); /* refused before anything */
    assert_string_equal(fx_state(f, a), "integrating");
    jobs_run_one();
    assert_int_equal(N_replies, 1);
    /* Now the integration runs; meanwhile the root is neither copied nor integrated again. */
    assert_int_equal(call_ref(f, f->rootid, "wacp/integrate", 3, p, NULL), WACP_DEFERRED);
    assert_true(seq_of(f, "integration_started", a) > 0);
    assert_string_equal(fx_read(f->root, "a.txt"), "alpha\n"); /* not yet written */
    assert_true(call_ref(f, f->rootid, "wacp/workspace.create", 4,
                         "{\"agent\": \"coder\", \"directive\": {}}", NULL) < 0);
    assert_string_equal(f->e.code, "workspace_busy");
    assert_true(call_ref(f, f->rootid, "wacp/integrate", 5, p, NULL) < 0);
    assert_string_equal(f->e.code, "workspace_busy");
    assert_int_equal(N_held, 1);
    jobs_run_one();
    assert_int_equal(N_replies, 2);
    assert_int_equal(Replies[1].ref, 3);
    assert_string_equal(fx_str(Replies[1].result, "state"), "closed");
    assert_string_equal(fx_read(f->root, "a.txt"), "from a\n");
    assert_true(seq_of(f, "integration_completed", a) > seq_of(f, "integration_started", a));
    /* Free again. */
    assert_int_equal(call_ref(f, f->rootid, "wacp/workspace.create", 6,
                              "{\"agent\": \"coder\", \"directive\": {}}", NULL),
                     WACP_DEFERRED);
    jobs_run_one();
    assert_non_null(Replies[2].result);
}

/* A snapshot in flight: a second checkpoint naming the same head is refused when it ends
 * (chains stay linear), and the first one's files are those read off the loop. */
static void test_snapshot(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), "a.txt", "one\n");
    const char *cp = "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"provisional\", "
                     "\"confidence\": \"high\"}";
    assert_int_equal(call_ref(f, a, "wacp/checkpoint.create", 1, cp, NULL), WACP_DEFERRED);
    assert_int_equal(call_ref(f, a, "wacp/checkpoint.create", 2, cp, NULL), WACP_DEFERRED);
    assert_int_equal(fx_count(f, "checkpoint_created"), 0);
    jobs_run_one();
    jobs_run_one();
    assert_int_equal(N_replies, 2);
    assert_non_null(Replies[0].result);
    assert_null(Replies[1].result);
    assert_string_equal(Replies[1].e.code, "chain_head_mismatch");
    assert_int_equal(fx_count(f, "checkpoint_created"), 1);
    assert_int_equal(fx_count(f, "checkpoint_rejected"), 1);
}

/* A copy that fails midway (a tree deeper than a workspace may nest) leaves no directory and
 * no workspace, and is recorded. */
static void test_failed_copy_cleaned(void **state)
{
    FX;
    char p[4096];
    int n = snprintf(p, sizeof(p), "%s/deep", f->root);
    for (int i = 0; i < 70; i++) {
        assert_int_equal(mkdir(p, 0700), 0);
        n += snprintf(p + n, sizeof(p) - (size_t)n, "/d");
    }
    size_t dirs = ws_dirs(f);
    assert_int_equal(call_ref(f, f->rootid, "wacp/workspace.create", 9,
                              "{\"agent\": \"coder\", \"directive\": {}}", NULL),
                     WACP_DEFERRED);
    jobs_run_one();
    assert_int_equal(N_replies, 1);
    assert_null(Replies[0].result);
    assert_string_equal(Replies[0].e.code, "creation_error");
    assert_int_equal(fx_count(f, "workspace_rejected"), 1);
    assert_int_equal(fx_count(f, "workspace_created"), 1); /* the root's only */
    assert_int_equal(ws_dirs(f), dirs);
    cJSON *l = fx_call(f, f->rootid, "wacp/workspace.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "workspaces")), 1);
}

/* The creator ends while its copy runs: the copy is removed, the creation refused, recorded. */
static void test_creator_ended(void **state)
{
    FX;
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    size_t dirs = ws_dirs(f);
    assert_int_equal(
        call_ref(f, d, "wacp/workspace.create", 4, "{\"agent\": \"coder\", \"directive\": {}}", NULL),
        WACP_DEFERRED);
    wacp_agent_ended(f->w, d, "agent_exited");
    assert_string_equal(fx_state(f, d), "failed");
    jobs_run_one();
    assert_int_equal(N_replies, 1);
    assert_null(Replies[0].result);
    assert_string_equal(Replies[0].e.code, "invalid_state");
    assert_int_equal(fx_count(f, "workspace_rejected"), 1);
    assert_int_equal(ws_dirs(f), dirs);
}

/* At most WACP_JOBS_RUNNING jobs on the pool at once: the rest wait in order and start as
 * others end, each answered once. */
static void test_queue(void **state)
{
    FX;
    for (uint64_t i = 1; i <= 4; i++)
        assert_int_equal(call_ref(f, f->rootid, "wacp/workspace.create", i,
                                  "{\"agent\": \"coder\", \"directive\": {}}", NULL),
                         WACP_DEFERRED);
    assert_int_equal(N_held, WACP_JOBS_RUNNING);
    for (size_t k = 0; k < 4; k++)
        jobs_run_one();
    assert_int_equal(N_held, 0);
    assert_int_equal(N_replies, 4);
    for (size_t k = 0; k < 4; k++) {
        assert_int_equal(Replies[k].ref, k + 1);
        assert_non_null(Replies[k].result);
    }
    assert_int_equal(fx_count(f, "workspace_created"), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_copy_does_not_block_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_copy_cleaned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_creator_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
