/* tests/unit/test_wacp.c: the WACP model against PROTOCOL.md section 12, Level 1 (one test per
 * requirement), and hostile agents: wrong types, forged and unknown ids, workers acting as the
 * coordinator, rights they do not hold, stale checkpoints, task cycles, floods. */
#include "tests/unit/wacp_fixture.h"

/* ---- Level 1 (PROTOCOL 12.2) */

/* Six core primitives, end to end: a task, a workspace bound to it, envelopes, signals, a
 * checkpoint and its integration, each leaving its trail entries. */
static void test_l1_six_core_primitives(void **state)
{
    FX;
    cJSON *t = fx_call(f, f->rootid, "wacp/task.create",
                       "{\"name\": \"impl\", \"description\": \"b = 2\"}");
    assert_non_null(t);
    const char *task = fx_str(t, "task_id");
    assert_string_equal(fx_str(t, "status"), "pending");
    char extra[128];
    snprintf(extra, sizeof(extra), "\"task\": \"%s\"", task);
    const char *a = fx_child(f, f->rootid, "coder", extra);
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"started\"}"));
    cJSON *tl = fx_call(f, f->rootid, "wacp/task.list", "{}");
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tl, "tasks"), 0);
    assert_string_equal(fx_str(t0, "status"), "in_progress");
    assert_string_equal(fx_str(t0, "workspace_ref"), a);

    fx_write(fx_dir(f, a), "src/b.c", "int b = 2;\n");
    fx_write(fx_dir(f, a), "c.txt", "new\n");
    cJSON *cp = fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"b is 2\", \"status\": \"final\", "
                        "\"confidence\": \"high\", \"parent\": null}");
    assert_non_null(cp);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cp, "files")), 2);
    assert_int_equal(strlen(fx_str(cp, "payload_hash")), 64);
    cJSON *s = fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}");
    assert_string_equal(fx_str(s, "state"), "integrating");
    tl = fx_call(f, f->rootid, "wacp/task.list", "{}");
    t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tl, "tasks"), 0);
    assert_string_equal(fx_str(t0, "status"), "completed");
    assert_string_equal(fx_str(t0, "checkpoint_ref"), fx_str(cp, "checkpoint_id"));

    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\"}", a);
    assert_non_null(r);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "files_applied")), 2);
    assert_string_equal(fx_read(f->root, "src/b.c"), "int b = 2;\n");
    assert_string_equal(fx_read(f->root, "c.txt"), "new\n");
    tl = fx_call(f, f->rootid, "wacp/task.list", "{}");
    t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tl, "tasks"), 0);
    assert_string_equal(fx_str(t0, "status"), "integrated");
    static const char *const kinds[] = {
        "workspace_created", "envelope_created",    "envelope_delivered",    "signal_emitted",
        "signal_delivered",  "checkpoint_created",  "task_created",          "task_assigned",
        "task_completed",    "integration_started", "integration_completed", "workspace_state_changed",
        "port_right_created"};
    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
        if (!fx_count(f, kinds[i]))
            fail_msg("no %s entry", kinds[i]);
    assert_int_equal(f->n_stopped, 1);
    assert_string_equal(f->stopped[0], a);
}

/* Three base roles with the permission matrix (PROTOCOL 5.5), derived roles through the
 * taxonomy. */
static void test_l1_three_base_roles_permission_matrix(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const char *rv = fx_child(f, f->rootid, "critic", NULL);
    const char *ob = fx_child(f, f->rootid, "watcher", NULL);
    assert_non_null(fx_call(f, f->rootid, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"directive\", \"payload\": 1}", a));
    assert_non_null(fx_call(f, f->rootid, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a));
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}", a));
    EXPECT_ERR("permission_denied");
    assert_non_null(fx_call(f, a, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"query\", \"payload\": \"?\"}", f->rootid));
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", f->rootid));
    EXPECT_ERR("permission_denied");
    assert_string_equal(fx_str(fx_last(f, "envelope_rejected"), "reason"), "permission_denied");
    /* The observer sends nothing: the matrix gave it no right back to the coordinator. */
    assert_null(fx_call(f, ob, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}", f->rootid));
    EXPECT_ERR("no_send_right");
    /* Nor may the coordinator send it directives once it exists (directive -> worker only). */
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"directive\", \"payload\": 1}", ob));
    EXPECT_ERR("permission_denied");
    /* The derived reviewer: report added, query removed. */
    assert_non_null(fx_call(f, rv, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"report\", \"payload\": {}}", f->rootid));
    assert_null(fx_call(f, rv, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": {}}", f->rootid));
    EXPECT_ERR("permission_denied");
}

static const char *right_of(struct fx *f, const char *viewer, const char *holder, const char *target,
                            const char *kind)
{
    cJSON *l = fx_call(f, viewer, "wacp/rights.list", "{}");
    const cJSON *x;
    cJSON_ArrayForEach (x, cJSON_GetObjectItem(l, "rights"))
        if (!strcmp(fx_str(x, "holder"), holder) && !strcmp(fx_str(x, "target"), target) &&
            !strcmp(fx_str(x, "kind"), kind))
            return fx_str(x, "right_id");
    return NULL;
}

/* Port rights: three types, no delivery without a valid right, send-once consumed, transfer,
 * revocation immediate (PROTOCOL 5.6). */
static void test_l1_port_rights(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const char *b = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(right_of(f, a, a, a, "receive"));
    const char *a_root = right_of(f, f->rootid, a, f->rootid, "send");
    assert_non_null(a_root);
    /* Revoke the matrix right; a send-once right works exactly once. */
    assert_non_null(fx_call(f, f->rootid, "wacp/rights.revoke",
                            "{\"right_id\": \"%s\", \"reason\": \"t\"}", a_root));
    assert_int_equal(fx_count(f, "port_right_revoked"), 1);
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}", f->rootid));
    EXPECT_ERR("no_send_right");
    assert_non_null(fx_call(f, f->rootid, "wacp/rights.grant",
                            "{\"holder\": \"%s\", \"target\": \"%s\", \"kind\": \"send_once\"}", a,
                            f->rootid));
    assert_non_null(fx_call(f, a, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}", f->rootid));
    assert_int_equal(fx_count(f, "port_right_consumed"), 1);
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 2}", f->rootid));
    EXPECT_ERR("no_send_right");
    /* Transfer: the coordinator hands its right to B over to A. */
    const char *root_b = right_of(f, f->rootid, f->rootid, b, "send");
    assert_non_null(root_b);
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1, \"rights\": [\"%s\"]}",
                       a, root_b);
    assert_non_null(r);
    const cJSON *tr = fx_last(f, "port_right_transferred");
    assert_non_null(tr);
    assert_string_equal(fx_str(tr, "to_holder"), a);
    assert_non_null(right_of(f, a, a, b, "send"));
    const cJSON *env = cJSON_GetObjectItem(fx_note_to(f, a, "wacp/envelope"), "envelope");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(env, "rights")), 1);
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", b));
    EXPECT_ERR("no_send_right");
    /* Receive rights are never revoked nor transferred. */
    const char *recv = right_of(f, f->rootid, a, a, "receive");
    assert_null(fx_call(f, f->rootid, "wacp/rights.revoke", "{\"right_id\": \"%s\"}", recv));
    EXPECT_ERR("permission_denied");
    const char *root_a = right_of(f, f->rootid, f->rootid, a, "send");
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1, \"rights\": [\"%s\"]}",
                        a, recv));
    EXPECT_ERR("invalid_structure");
    assert_non_null(root_a);
}

/* Eleven signal types, a closed set (PROTOCOL 4.3, 12.4). */
static void test_l1_eleven_signal_types_closed_set(void **state)
{
    FX;
    static const char *const eleven[] = {"ready",      "started", "blocked",   "checkpoint",
                                         "complete",   "failed",  "integrate", "acknowledged",
                                         "escalation", "suspend", "migrate"};
    for (size_t i = 0; i < ARRAY_SIZE(eleven); i++)
        assert_true(wacp_signal_known(eleven[i]));
    assert_false(wacp_signal_known("paused"));
    assert_false(wacp_signal_known("READY"));
    assert_false(wacp_signal_known(""));
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    size_t denials = fx_count(f, "denial");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"paused\"}"));
    EXPECT_ERR("unknown_signal");
    assert_int_equal(fx_count(f, "denial"), denials + 1);
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"ready\"}"));
    assert_non_null(
        fx_call(f, a, "wacp/signal.emit", "{\"type\": \"escalation\", \"reason\": \"need a human\"}"));
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"checkpoint\"}"));
}

/* Envelope lifecycle: five states, every transition recorded (PROTOCOL 4.2). */
static void test_l1_envelope_lifecycle_five_states(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    size_t created = fx_count(f, "envelope_created");
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": \"x\"}", a);
    assert_string_equal(fx_str(r, "state"), "validated");
    assert_int_equal(fx_count(f, "envelope_created"), created + 1);
    const char *id = fx_str(r, "envelope_id");
    assert_string_equal(fx_last_envelope(f, a), id);
    size_t delivered = fx_count(f, "envelope_delivered");
    cJSON *k = fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", id);
    assert_string_equal(fx_str(k, "state"), "acknowledged");
    assert_int_equal(fx_count(f, "envelope_delivered"), delivered + 1);
    /* The acknowledged signal to the sender, ref = the envelope. */
    const cJSON *sig = cJSON_GetObjectItem(fx_note_to(f, f->rootid, "wacp/signal"), "signal");
    assert_string_equal(fx_str(sig, "type"), "acknowledged");
    assert_string_equal(fx_str(sig, "ref"), id);
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"ws-nope\", \"type\": \"feedback\", \"payload\": 1}"));
    EXPECT_ERR("target_not_found");
    const cJSON *rej = fx_last(f, "envelope_rejected");
    assert_string_equal(fx_str(rej, "reason"), "target_not_found");
    assert_non_null(fx_str(rej, "envelope_id"));
}

/* Redelivery: 3 attempts after the first, linear backoff, then undeliverable and a failed
 * signal to the sender (PROTOCOL 4.2, envelope spec 7 and 9). */
static void test_l1_redelivery_three_attempts_linear_backoff(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a);
    const char *id = fx_str(r, "envelope_id");
    size_t before = fx_notes_count(f, a, "wacp/envelope");
    uint64_t prev = wacp_next_deadline(f->w);
    for (unsigned k = 2; k <= 4; k++) {
        wacp_tick(f->w, prev);
        const cJSON *env = cJSON_GetObjectItem(fx_note_to(f, a, "wacp/envelope"), "envelope");
        assert_string_equal(fx_str(env, "envelope_id"), id);
        assert_int_equal(cJSON_GetObjectItem(env, "attempt")->valueint, (int)k);
        uint64_t next = wacp_next_deadline(f->w);
        assert_int_equal(next - prev, (uint64_t)k * f->base_ms); /* attempt k waits k * base */
        prev = next;
    }
    assert_int_equal(fx_count(f, "envelope_redelivered"), 3);
    assert_int_equal(fx_notes_count(f, a, "wacp/envelope"), before + 3);
    wacp_tick(f->w, prev);
    const cJSON *u = fx_last(f, "envelope_undeliverable");
    assert_non_null(u);
    assert_string_equal(fx_str(u, "reason"), "delivery_exhausted");
    const cJSON *sig = cJSON_GetObjectItem(fx_note_to(f, f->rootid, "wacp/signal"), "signal");
    assert_string_equal(fx_str(sig, "type"), "failed");
    assert_string_equal(fx_str(sig, "reason"), "delivery_exhausted");
    assert_int_equal(fx_notes_count(f, a, "wacp/envelope"), before + 3);
    assert_null(fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", id));
    EXPECT_ERR("undeliverable");
}

/* Deduplication: a redelivered envelope acknowledged twice is delivered once. */
static void test_l1_redelivery_deduplication(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a);
    const char *id = fx_str(r, "envelope_id");
    wacp_tick(f->w, wacp_next_deadline(f->w));
    assert_int_equal(fx_count(f, "envelope_redelivered"), 1);
    size_t delivered = fx_count(f, "envelope_delivered");
    cJSON *k1 = fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", id);
    cJSON *k2 = fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", id);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(k1, "duplicate")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(k2, "duplicate")));
    assert_int_equal(fx_count(f, "envelope_delivered"), delivered + 1);
    /* Nothing left to redeliver. */
    uint64_t now = wacp_core_now_ms();
    assert_true(wacp_next_deadline(f->w) > now + 60000);
}

/* Workspace state machine: nine states, exactly the transitions of PROTOCOL 6.3. */
static void test_l1_workspace_state_machine_table(void **state)
{
    (void)state;
    static const char *const names[] = {"idle",        "active",     "blocked", "migrating", "suspended",
                                        "integrating", "conflicted", "closed",  "failed"};
    /* The table, as written in the spec. */
    static const char *const legal[][2] = {
        {"idle", "active"},
        {"idle", "failed"},
        {"active", "blocked"},
        {"active", "migrating"},
        {"active", "suspended"},
        {"active", "integrating"},
        {"active", "failed"},
        {"blocked", "active"},
        {"blocked", "migrating"},
        {"blocked", "suspended"},
        {"blocked", "failed"},
        {"migrating", "active"},
        {"migrating", "blocked"},
        {"migrating", "failed"},
        {"suspended", "active"},
        {"suspended", "blocked"},
        {"suspended", "failed"},
        {"integrating", "closed"},
        {"integrating", "conflicted"},
        {"integrating", "failed"},
        {"conflicted", "closed"},
        {"conflicted", "failed"},
    };
    assert_int_equal(WS_NSTATES, 9);
    for (int a = 0; a < WS_NSTATES; a++) {
        assert_string_equal(wacp_tree_state_name((enum ws_state)a), names[a]);
        for (int b = 0; b < WS_NSTATES; b++) {
            bool want = false;
            for (size_t i = 0; i < ARRAY_SIZE(legal); i++)
                want |= !strcmp(legal[i][0], names[a]) && !strcmp(legal[i][1], names[b]);
            if (wacp_tree_transition_ok((enum ws_state)a, (enum ws_state)b) != want)
                fail_msg("%s -> %s should be %s", names[a], names[b], want ? "legal" : "illegal");
        }
    }
}

/* The same machine driven by agents and the coordinator, legal and illegal moves. */
static void test_l1_workspace_state_machine_driven(void **state)
{
    FX;
    cJSON *c = fx_call(f, f->rootid, "wacp/workspace.create",
                       "{\"agent\": \"coder\", \"directive\": 1}");
    const char *a = fx_str(c, "workspace_id");
    assert_string_equal(fx_str(c, "state"), "idle");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"x\"}"));
    EXPECT_ERR("invalid_transition");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    EXPECT_ERR("invalid_transition");
    fx_ack_last(f, a); /* idle -> active: the first envelope */
    assert_string_equal(fx_state(f, a), "active");
    assert_string_equal(
        fx_str(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"waiting\"}"),
               "state"),
        "blocked");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    EXPECT_ERR("invalid_transition");
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.suspend", "{\"workspace\": \"%s\"}", a));
    assert_string_equal(fx_state(f, a), "suspended");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"started\"}"));
    EXPECT_ERR("invalid_state"); /* frozen */
    assert_null(fx_call(f, f->rootid, "wacp/workspace.suspend", "{\"workspace\": \"%s\"}", a));
    EXPECT_ERR("invalid_transition");
    assert_string_equal(
        fx_str(fx_call(f, f->rootid, "wacp/workspace.resume", "{\"workspace\": \"%s\"}", a), "state"),
        "blocked");
    assert_string_equal(fx_str(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"started\"}"), "state"),
                        "active");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.resume", "{\"workspace\": \"%s\"}", a));
    EXPECT_ERR("invalid_transition");
    fx_write(fx_dir(f, a), "a.txt", "child\n");
    assert_non_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"}"));
    assert_string_equal(fx_str(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"), "state"),
                        "integrating");
    assert_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"}"));
    EXPECT_ERR("invalid_state"); /* integrating is read-only */
    fx_write(f->root, "a.txt", "parent\n");
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"layered\"}",
                       a);
    assert_string_equal(fx_str(r, "state"), "conflicted");
    r = fx_call(f, f->rootid, "wacp/conflict.resolve",
                "{\"workspace\": \"%s\", \"resolution\": \"coordinator_resolve\"}", a);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    EXPECT_ERR("invalid_transition");
    /* Every change recorded: idle->active, ->blocked, ->suspended, ->blocked, ->active,
     * ->integrating, ->conflicted, ->closed. */
    size_t n = 0;
    for (size_t i = 0; i < f->n_ents; i++)
        n += !strcmp(f->ents[i].type, "workspace_state_changed") && !strcmp(f->ents[i].ws, a);
    assert_int_equal(n, 8);
}

/* Checkpoint creation and immutability: the chain, and files kept as they were (PROTOCOL 7.1-7.3). */
static void test_l1_checkpoint_creation_and_immutability(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), "a.txt", "v1\n");
    cJSON *c1 = fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"one\", \"status\": \"provisional\", "
                        "\"confidence\": \"medium\", \"parent\": null}");
    assert_non_null(c1);
    const char *id1 = fx_str(c1, "checkpoint_id");
    const char *h1 = fx_str(cJSON_GetArrayItem(cJSON_GetObjectItem(c1, "files"), 0), "blake2b");
    char obj[512];
    snprintf(obj, sizeof(obj), "%s/objects", f->run);
    assert_string_equal(fx_read(obj, h1), "v1\n");
    fx_write(fx_dir(f, a), "a.txt", "v2\n");
    cJSON *c2 = fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"two\", \"status\": \"final\", "
                        "\"confidence\": \"high\", \"parent\": \"%s\"}",
                        id1);
    assert_non_null(c2);
    assert_string_equal(fx_read(obj, h1), "v1\n"); /* the first still holds what it held */
    size_t rej = fx_count(f, "checkpoint_rejected");
    assert_null(fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"fork\", \"status\": \"final\", "
                        "\"confidence\": \"high\", \"parent\": \"%s\"}",
                        id1));
    EXPECT_ERR("chain_head_mismatch");
    assert_null(fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"root again\", \"status\": \"final\", "
                        "\"confidence\": \"high\", \"parent\": null}"));
    EXPECT_ERR("chain_head_mismatch");
    assert_int_equal(fx_count(f, "checkpoint_rejected"), rej + 2);
    cJSON *l = fx_call(f, a, "wacp/checkpoint.list", "{}");
    const cJSON *arr = cJSON_GetObjectItem(l, "checkpoints");
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    assert_string_equal(fx_str(cJSON_GetArrayItem(arr, 0), "checkpoint_id"), id1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(arr, 0), "payload_hash"), fx_str(c1, "payload_hash"));
    assert_string_equal(fx_str(cJSON_GetArrayItem(arr, 1), "parent"), id1);
    assert_string_not_equal(fx_str(c1, "payload_hash"), fx_str(c2, "payload_hash"));
    /* No method changes a checkpoint: the table has none. */
    cJSON *r = NULL;
    struct wacp_err e;
    assert_int_equal(wacp_call(f->w, a, "wacp/checkpoint.update", NULL, &r, &e), -ENOENT);
}

/* Integration, direct (PROTOCOL 7.4): the final checkpoint's files land in the parent. */
static void test_l1_integration_direct(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), "a.txt", "from child\n");
    char p[512];
    snprintf(p, sizeof(p), "%s/src/b.c", fx_dir(f, a));
    assert_int_equal(unlink(p), 0);
    assert_non_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"high\"}"));
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    fx_write(f->root, "a.txt", "parent changed\n"); /* direct detects nothing */
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"direct\"}", a);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_string_equal(fx_read(f->root, "a.txt"), "from child\n");
    assert_null(fx_read(f->root, "src/b.c"));
    const cJSON *sig = fx_last(f, "signal_emitted");
    (void)sig;
    bool integrate_signal = false;
    for (size_t i = 0; i < f->n_ents; i++)
        if (!strcmp(f->ents[i].type, "signal_emitted") &&
            !strcmp(fx_str(f->ents[i].body, "type"), "integrate") &&
            !strcmp(fx_str(f->ents[i].body, "ref"), a))
            integrate_signal = true;
    assert_true(integrate_signal);
}

/* Trail recording: every call that changes something leaves entries, refusals included. */
static void test_l1_trail_recording_all_events(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    struct {
        const char *ws, *method, *params, *entry;
    } cases[] = {
        {a, "wacp/signal.emit", "{\"type\": \"ready\"}", "signal_emitted"},
        {a, "wacp/envelope.send", NULL, "envelope_created"},
        {a, "wacp/checkpoint.create",
         "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"provisional\", \"confidence\": "
         "\"low\", \"files\": [\"a.txt\"]}",
         "checkpoint_created"},
        {f->rootid, "wacp/task.create", "{\"name\": \"n\"}", "task_created"},
        {a, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}", "denial"},
        {a, "wacp/signal.emit", "{\"type\": \"integrate\"}", "denial"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        size_t n = fx_count(f, cases[i].entry);
        char params[256];
        if (!cases[i].params)
            snprintf(params, sizeof(params), "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}",
                     f->rootid);
        fx_call(f, cases[i].ws, cases[i].method, "%s", cases[i].params ? cases[i].params : params);
        if (fx_count(f, cases[i].entry) != n + 1)
            fail_msg("%s did not record %s", cases[i].method, cases[i].entry);
    }
    /* Every entry names a registered event type of the trail. */
    for (size_t i = 0; i < f->n_ents; i++) {
        static const char *const known[] = {"workspace_created",
                                            "workspace_state_changed",
                                            "envelope_created",
                                            "envelope_delivered",
                                            "envelope_redelivered",
                                            "envelope_rejected",
                                            "envelope_undeliverable",
                                            "signal_emitted",
                                            "signal_delivered",
                                            "checkpoint_created",
                                            "checkpoint_rejected",
                                            "task_created",
                                            "task_approved",
                                            "task_assigned",
                                            "task_status_changed",
                                            "task_completed",
                                            "task_failed",
                                            "integration_started",
                                            "integration_completed",
                                            "conflict_detected",
                                            "conflict_resolved",
                                            "port_right_created",
                                            "port_right_transferred",
                                            "port_right_consumed",
                                            "port_right_revoked",
                                            "denial",
                                            "graph_created",
                                            "workspace_reparented",
                                            "workspace_rejected"};
        bool ok = false;
        for (size_t k = 0; k < ARRAY_SIZE(known); k++)
            ok |= !strcmp(f->ents[i].type, known[k]);
        if (!ok)
            fail_msg("unregistered entry type %s", f->ents[i].type);
    }
}

static char *tree_text(struct fx *f)
{
    cJSON *t = wacp_tree_json(f->w);
    char *s = cJSON_PrintUnformatted(t);
    cJSON_Delete(t);
    return s;
}

/* Write-ahead: when the trail refuses, the call fails with trail_unavailable and nothing
 * changed: no state, no start, no notification. */
static void test_l1_write_ahead_trail(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), "a.txt", "x\n");
    char send[256];
    snprintf(send, sizeof(send), "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a);
    struct {
        const char *ws, *method, *params;
    } cases[] = {
        {f->rootid, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}"},
        {f->rootid, "wacp/envelope.send", send},
        {a, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"r\"}"},
        {a, "wacp/checkpoint.create",
         "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"}"},
        {f->rootid, "wacp/task.create", "{\"name\": \"n\"}"},
        {a, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}"}, /* a denial */
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *before = tree_text(f);
        size_t notes = f->n_notes, started = f->n_started, ents = f->n_ents;
        struct wacp_summary s0, s1;
        wacp_summary_get(f->w, &s0);
        f->fail_record = true;
        assert_null(fx_call(f, cases[i].ws, cases[i].method, "%s", cases[i].params));
        f->fail_record = false;
        EXPECT_ERR("trail_unavailable");
        _cleanup_free_ char *after = tree_text(f);
        assert_string_equal(before, after);
        assert_int_equal(f->n_notes, notes);
        assert_int_equal(f->n_started, started);
        assert_int_equal(f->n_ents, ents);
        wacp_summary_get(f->w, &s1);
        assert_int_equal(s0.workspaces, s1.workspaces);
        assert_int_equal(s0.checkpoints, s1.checkpoints);
        assert_int_equal(s0.tasks, s1.tasks);
        assert_int_equal(s0.envelopes, s1.envelopes);
    }
    /* And the same calls work once the trail takes entries again. */
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"r\"}"));
    /* An ack refused by the trail leaves the envelope unacknowledged. */
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send", "%s", send);
    const char *id = fx_str(r, "envelope_id");
    f->fail_record = true;
    assert_null(fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", id));
    f->fail_record = false;
    EXPECT_ERR("trail_unavailable");
    cJSON *k = fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", id);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(k, "duplicate")));
}

/* Identity rules (PROTOCOL 4.7): runtime-assigned, unique, never taken from an agent. */
static void test_l1_identity_rules(void **state)
{
    FX;
    char ids[64][WACP_ID_LEN];
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        cJSON *c = fx_call(f, f->rootid, "wacp/workspace.create",
                           "{\"agent\": \"coder\", \"directive\": 1}");
        snprintf(ids[n++], WACP_ID_LEN, "%s", fx_str(c, "workspace_id"));
        snprintf(ids[n++], WACP_ID_LEN, "%s", fx_str(c, "directive_envelope"));
        cJSON *t = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"t\"}");
        snprintf(ids[n++], WACP_ID_LEN, "%s", fx_str(t, "task_id"));
    }
    for (size_t i = 0; i < n; i++) {
        assert_true(strlen(ids[i]) >= 32);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(ids[i], ids[k]);
    }
    /* An agent cannot choose an id. */
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"workspace_id\": \"ws-mine\"}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"t\", \"task_id\": \"mine\"}"));
    EXPECT_ERR("invalid_params");
    /* No dangling references: unknown ids are refused. */
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"task\": \"task-0000\"}"));
    EXPECT_ERR("not_found");
    assert_null(
        fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"t\", \"depends_on\": [\"task-0000\"]}"));
    EXPECT_ERR("not_found");
}

/* ---- hostile agents */

static void test_hostile_worker_creates_workspace(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    size_t ws = f->n_started, d = fx_count(f, "denial");
    assert_null(fx_call(f, a, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}"));
    EXPECT_ERR("permission_denied");
    assert_int_equal(f->e.rpc_code, WACP_E_DENIED);
    assert_int_equal(f->n_started, ws);
    assert_int_equal(fx_count(f, "denial"), d + 1);
    assert_null(fx_call(f, a, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"delegate\": true}"));
    EXPECT_ERR("permission_denied");
    /* Nor may the coordinator start a second coordinator. */
    assert_null(
        fx_call(f, f->rootid, "wacp/workspace.create", "{\"agent\": \"lead\", \"directive\": 1}"));
    EXPECT_ERR("permission_denied");
    /* Nor any governing method. */
    assert_null(fx_call(f, a, "wacp/task.create", "{\"name\": \"mine\"}"));
    EXPECT_ERR("permission_denied");
    assert_null(fx_call(f, a, "wacp/rights.grant",
                        "{\"holder\": \"%s\", \"target\": \"%s\", \"kind\": \"send\"}", a, f->rootid));
    EXPECT_ERR("permission_denied");
}

static void test_hostile_worker_sends_directive(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    size_t notes = fx_notes_count(f, f->rootid, "wacp/envelope");
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"directive\", \"payload\": \"obey\"}", f->rootid));
    EXPECT_ERR("permission_denied");
    const struct fx_ent *x = fx_last_ent(f, "envelope_rejected");
    assert_string_equal(x->ws, a);
    assert_string_equal(fx_str(x->body, "reason"), "permission_denied");
    assert_int_equal(fx_notes_count(f, f->rootid, "wacp/envelope"), notes);
}

static void test_hostile_address_without_right(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const char *b = fx_child(f, f->rootid, "coder", NULL);
    size_t notes = fx_notes_count(f, b, "wacp/envelope");
    assert_null(
        fx_call(f, a, "wacp/envelope.send", "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}", b));
    EXPECT_ERR("no_send_right");
    assert_int_equal(fx_notes_count(f, b, "wacp/envelope"), notes);
    /* A worker sees no other workspace. */
    cJSON *l = fx_call(f, a, "wacp/workspace.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "workspaces")), 1);
    assert_null(fx_call(f, a, "wacp/checkpoint.list", "{\"workspace\": \"%s\"}", b));
    EXPECT_ERR("not_found");
}

static void test_hostile_forged_ids(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const char *b = fx_child(f, f->rootid, "coder", NULL);
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", b);
    /* A acks B's envelope: not its own, so not found, and B's stays unacknowledged. */
    assert_null(
        fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", fx_str(r, "envelope_id")));
    EXPECT_ERR("not_found");
    assert_null(fx_call(f, a, "wacp/envelope.ack",
                        "{\"envelope_id\": \"env-0123456789abcdef0123456789abcdef\"}"));
    EXPECT_ERR("not_found");
    cJSON *k = fx_call(f, b, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", fx_str(r, "envelope_id"));
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(k, "duplicate")));
    assert_null(fx_call(f, a, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", b));
    EXPECT_ERR("not_found");
    assert_null(fx_call(f, a, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", f->rootid));
    EXPECT_ERR("not_found");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"ws-forged\"}"));
    EXPECT_ERR("not_found");
    assert_null(fx_call(f, a, "wacp/integrate", "{\"workspace\": \"%s\", \"decision\": \"accept\"}", b));
    EXPECT_ERR("not_found");
    assert_null(fx_call(f, f->rootid, "wacp/rights.revoke", "{\"right_id\": \"rt-forged\"}"));
    EXPECT_ERR("not_found");
    assert_null(
        fx_call(f, a, "wacp/envelope.send",
                "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1, \"rights\": [\"rt-forged\"]}",
                f->rootid));
    EXPECT_ERR("invalid_structure");
    assert_string_equal(fx_state(f, b), "active");
}

static void test_hostile_emit_coordinator_signals(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const char *const sigs[] = {"integrate", "suspend", "migrate", "acknowledged"};
    for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
        assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"%s\"}", sigs[i]));
        EXPECT_ERR("permission_denied");
    }
    /* The coordinator cannot emit worker signals either. */
    assert_null(fx_call(f, f->rootid, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"r\"}"));
    EXPECT_ERR("permission_denied");
    assert_string_equal(fx_state(f, a), "active");
}

static void test_hostile_wrong_types(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *r = NULL;
    struct wacp_err e;
    cJSON *arr = cJSON_CreateArray();
    assert_int_not_equal(wacp_call(f->w, a, "wacp/signal.emit", arr, &r, &e), 0);
    assert_string_equal(e.code, "invalid_params");
    cJSON_Delete(arr);
    assert_int_equal(wacp_call(f->w, a, "wacp/nope", NULL, &r, &e), -ENOENT);
    assert_int_equal(wacp_call(f->w, a, NULL, NULL, &r, &e), -ENOENT);
    assert_int_not_equal(wacp_call(f->w, "ws-not-a-caller", "wacp/workspace.self", NULL, &r, &e), 0);
    assert_null(fx_call(f, a, "wacp/envelope.send", "{\"to\": 5, \"type\": \"query\", \"payload\": 1}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(f, a, "wacp/envelope.send", "{\"type\": \"query\", \"payload\": 1}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"ready\", \"extra\": 1}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"ready\", \"type\": \"ready\"}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": 3, \"status\": \"final\", \"confidence\": \"low\"}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"done\", \"confidence\": \"low\"}"));
    EXPECT_ERR("invalid_structure");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"budgets\": {\"memory\": -5}}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"budgets\": {\"disk\": 5}}"));
    EXPECT_ERR("invalid_params");
    assert_null(
        fx_call(f, f->rootid, "wacp/workspace.create", "{\"agent\": \"nobody\", \"directive\": 1}"));
    EXPECT_ERR("not_found");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"owner\": \"system\"}"));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"timeout\": -1}"));
    EXPECT_ERR("invalid_params");
    /* A payload over the limit (4096 in this fixture). */
    char big[6000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": \"%s\"}", f->rootid, big));
    EXPECT_ERR("invalid_structure");
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1, \"priority\": \"now\"}",
                        f->rootid));
    EXPECT_ERR("invalid_structure");
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"gossip\", \"payload\": 1}", f->rootid));
    EXPECT_ERR("invalid_type");
    assert_string_equal(fx_state(f, a), "active");
}

static void test_hostile_checkpoint_stale_parent_and_paths(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_null(fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", "
                        "\"confidence\": \"low\", \"parent\": \"cp-forged\"}"));
    EXPECT_ERR("chain_head_mismatch");
    static const char *const bad[] = {"../x", "/etc/passwd", "a/../../x", "", "a//b", "./a.txt"};
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        assert_null(fx_call(f, a, "wacp/checkpoint.create",
                            "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", "
                            "\"confidence\": \"low\", \"files\": [\"%s\"]}",
                            bad[i]));
        EXPECT_ERR("invalid_structure");
    }
    /* The copy took no link; a link the agent makes is not followed. */
    char p[512];
    snprintf(p, sizeof(p), "%s/escape", fx_dir(f, a));
    struct stat st;
    assert_int_not_equal(lstat(p, &st), 0);
    snprintf(p, sizeof(p), "%s/evil", fx_dir(f, a));
    assert_int_equal(symlink("/etc/passwd", p), 0);
    assert_null(fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", "
                        "\"confidence\": \"low\", \"files\": [\"evil\"]}"));
    EXPECT_ERR("invalid_files");
    assert_null(fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", "
                        "\"confidence\": \"low\", \"files\": [\"nothere.txt\"]}"));
    EXPECT_ERR("invalid_files");
    /* The default snapshot skips the link as well. */
    fx_write(fx_dir(f, a), "ok.txt", "ok\n");
    cJSON *c = fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"}");
    assert_non_null(c);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(c, "files")), 1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "files"), 0), "path"),
                        "ok.txt");
}

/* Integration never writes through a link of the parent's tree: the child made a real
 * directory where the parent has a link to /etc. */
static void test_hostile_integration_through_parent_link(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    char p[512];
    snprintf(p, sizeof(p), "%s/escape", fx_dir(f, a));
    assert_int_equal(mkdir(p, 0700), 0);
    fx_write(fx_dir(f, a), "escape/corral-test-owned", "x\n");
    fx_write(fx_dir(f, a), "a.txt", "changed\n");
    assert_non_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"}"));
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\"}", a);
    assert_string_equal(fx_str(r, "state"), "failed");
    assert_non_null(fx_str(r, "error"));
    assert_string_equal(fx_str(fx_last(f, "workspace_state_changed"), "reason"), "integration_error");
    struct stat st;
    assert_int_not_equal(stat("/etc/corral-test-owned", &st), 0);
    assert_string_equal(fx_read(f->root, "a.txt"), "alpha\n"); /* nothing half-applied */
}

static void test_hostile_task_cycles(void **state)
{
    FX;
    assert_null(fx_call(f, f->rootid, "wacp/task.create",
                        "{\"tasks\": [{\"ref\": \"a\", \"name\": \"A\", \"depends_on\": [\"b\"]}, "
                        "{\"ref\": \"b\", \"name\": \"B\", \"depends_on\": [\"c\"]}, {\"ref\": \"c\", "
                        "\"name\": \"C\", \"depends_on\": [\"a\"]}]}"));
    EXPECT_ERR("cycle");
    assert_null(fx_call(f, f->rootid, "wacp/task.create",
                        "{\"tasks\": [{\"ref\": \"a\", \"name\": \"A\", \"depends_on\": [\"a\"]}]}"));
    EXPECT_ERR("cycle");
    cJSON *l = fx_call(f, f->rootid, "wacp/task.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "tasks")), 0);
    assert_int_equal(fx_count(f, "task_created"), 0);
    /* A DAG with a diamond is fine. */
    cJSON *r = fx_call(
        f, f->rootid, "wacp/task.create",
        "{\"tasks\": [{\"ref\": \"a\", \"name\": \"A\"}, {\"ref\": \"b\", \"name\": \"B\", "
        "\"depends_on\": [\"a\"]}, {\"ref\": \"c\", \"name\": \"C\", \"depends_on\": [\"a\"]}, "
        "{\"ref\": \"d\", \"name\": \"D\", \"depends_on\": [\"b\", \"c\"]}]}");
    assert_non_null(r);
    const cJSON *ts = cJSON_GetObjectItem(r, "tasks");
    assert_int_equal(cJSON_GetArraySize(ts), 4);
    l = fx_call(f, f->rootid, "wacp/task.list", "{}");
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tasks"), 3);
    const cJSON *deps = cJSON_GetObjectItem(d, "depends_on");
    assert_string_equal(cJSON_GetArrayItem(deps, 0)->valuestring,
                        fx_str(cJSON_GetArrayItem(ts, 1), "task_id"));
    assert_null(
        fx_call(f, f->rootid, "wacp/task.create",
                "{\"tasks\": [{\"ref\": \"a\", \"name\": \"A\"}, {\"ref\": \"a\", \"name\": \"A2\"}]}"));
    EXPECT_ERR("invalid_params");
}

static void test_hostile_flood_workspaces(void **state)
{
    FX;
    /* The fixture's limit is 8 workspaces in all, the root included. */
    for (int i = 0; i < 7; i++)
        assert_non_null(
            fx_call(f, f->rootid, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}"));
    size_t d = fx_count(f, "denial");
    assert_null(
        fx_call(f, f->rootid, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}"));
    EXPECT_ERR("limit");
    assert_int_equal(f->e.rpc_code, WACP_E_LIMIT);
    assert_int_equal(fx_count(f, "denial"), d + 1);
    assert_int_equal(f->n_started, 8);
}

static void test_hostile_flood_envelopes(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    for (int i = 0; i < 4; i++)
        assert_non_null(fx_call(f, f->rootid, "wacp/envelope.send",
                                "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": %d}", a, i));
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 9}", a));
    EXPECT_ERR("limit");
    /* Acknowledging makes room: the limit is on what is not yet acknowledged. */
    fx_ack_last(f, a);
    assert_non_null(fx_call(f, f->rootid, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 9}", a));
    /* A worker flooding the coordinator is bounded the same way, and others are unaffected. */
    const char *b = fx_child(f, f->rootid, "coder", NULL);
    int ok = 0;
    for (int i = 0; i < 10; i++)
        ok += fx_call(f, b, "wacp/envelope.send",
                      "{\"to\": \"%s\", \"type\": \"query\", \"payload\": %d}", f->rootid, i) != NULL;
    assert_int_equal(ok, 4);
    EXPECT_ERR("limit");
    assert_string_equal(fx_state(f, a), "active");
}

static void test_hostile_terminal_workspace_does_nothing(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(
        fx_call(f, a, "wacp/signal.emit", "{\"type\": \"failed\", \"reason\": \"gave up\"}"));
    assert_string_equal(fx_state(f, a), "failed");
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"started\"}"));
    EXPECT_ERR("invalid_state");
    assert_null(fx_call(f, a, "wacp/workspace.self", "{}"));
    EXPECT_ERR("invalid_state");
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a));
    EXPECT_ERR("target_terminal");
    /* Still there: workspaces are never destroyed. */
    assert_string_equal(fx_state(f, a), "failed");
}

/* Every method of docs/protocol-wacp.md dispatches (the table is sorted for bsearch). */
static void test_every_method_dispatches(void **state)
{
    FX;
    static const char *const names[] = {
        "wacp/checkpoint.create", "wacp/checkpoint.list",   "wacp/conflict.resolve",
        "wacp/envelope.ack",      "wacp/envelope.send",     "wacp/integrate",
        "wacp/rights.grant",      "wacp/rights.list",       "wacp/rights.revoke",
        "wacp/signal.emit",       "wacp/task.assign",       "wacp/task.cancel",
        "wacp/task.create",       "wacp/task.list",         "wacp/workspace.abort",
        "wacp/workspace.create",  "wacp/workspace.list",    "wacp/workspace.resume",
        "wacp/workspace.self",    "wacp/workspace.suspend", "wacp/workspace.transfer"};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        cJSON *r = NULL;
        struct wacp_err e;
        int rc = wacp_call(f->w, f->rootid, names[i], NULL, &r, &e);
        if (rc == -ENOENT)
            fail_msg("%s does not dispatch", names[i]);
        cJSON_Delete(r);
    }
    cJSON *r = NULL;
    struct wacp_err e;
    assert_int_equal(wacp_call(f->w, f->rootid, "wacp/trail.query", NULL, &r, &e), -ENOENT);
    assert_int_equal(e.rpc_code, -32601);
}

/* wacp/trail.query is a row of the method table: the model checks the caller's scope and the
 * run's hook reads the trail. Its parameters keep the messages they had before the table. */
static struct {
    char ws[WACP_ID_LEN], type[64];
    uint64_t limit;
    int calls;
    bool fail;
} tq;

static int tq_hook(void *data, const char *ws, const char *type, uint64_t limit, cJSON *entries,
                   struct cerr *err)
{
    tq.calls++;
    snprintf(tq.ws, sizeof(tq.ws), "%s", ws ? ws : "*");
    snprintf(tq.type, sizeof(tq.type), "%s", type ? type : "");
    tq.limit = limit;
    if (tq.fail)
        return cerr_set(err, EIO, "disk gone");
    cJSON_AddItemToArray(entries, cJSON_CreateString("entry"));
    return 0;
}

static void test_trail_query_row(void **state)
{
    FX;
    memset(&tq, 0, sizeof(tq));
    f->w->h.trail_query = tq_hook;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    /* The coordinator reads the global trail: any workspace, or all of them. */
    cJSON *r = fx_call(f, f->rootid, "wacp/trail.query",
                       "{\"workspace\": \"%s\", \"type\": \"tool_call\", \"limit\": 7}", a);
    assert_non_null(r);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "entries")), 1);
    assert_string_equal(tq.ws, a);
    assert_string_equal(tq.type, "tool_call");
    assert_int_equal(tq.limit, 7);
    assert_non_null(fx_call(f, f->rootid, "wacp/trail.query", "null"));
    assert_string_equal(tq.ws, "*");
    assert_int_equal(tq.limit, 100);
    /* A worker reads its own: another's is an empty answer, and the trail is not even read. */
    int calls = tq.calls;
    r = fx_call(f, a, "wacp/trail.query", "{\"workspace\": \"%s\"}", f->rootid);
    assert_non_null(r);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "entries")), 0);
    assert_int_equal(tq.calls, calls);
    assert_non_null(fx_call(f, a, "wacp/trail.query", "{}"));
    assert_string_equal(tq.ws, a);
    /* The messages agents saw before the row existed. */
    assert_null(fx_call(f, a, "wacp/trail.query", "{\"limit\": 0}"));
    EXPECT_ERR("invalid_params");
    assert_int_equal(f->e.rpc_code, -32602);
    assert_string_equal(f->e.msg, "wacp/trail.query: \"limit\" is not a parameter of the right type "
                                  "(workspace: string, type: string, limit: 1..1000)");
    assert_null(fx_call(f, a, "wacp/trail.query", "[1]"));
    EXPECT_ERR("invalid_params");
    assert_string_equal(f->e.msg, "wacp/trail.query takes an object {workspace?, type?, limit?}");
    /* Reading changes nothing: a terminal workspace may still read. */
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    assert_string_equal(fx_state(f, a), "failed");
    assert_non_null(fx_call(f, a, "wacp/trail.query", "{}"));
    /* A trail that cannot be read. */
    tq.fail = true;
    assert_null(fx_call(f, f->rootid, "wacp/trail.query", "{}"));
    EXPECT_ERR("trail_unavailable");
    assert_int_equal(f->e.rpc_code, -32603);
    assert_string_equal(f->e.msg, "the trail cannot be read: disk gone");
}

/* Checkpoint file lists are kept for the whole run: 1,024 checkpoints of 20,000 files each
 * would be gigabytes. They count toward the run's ceiling (here 64 KiB): 200 files of about
 * 130 bytes kept each fit twice, not a third time; the refusal is recorded. */
static int fx_setup_small_ceiling(void **state)
{
    fx_max_payload_total = 64 << 10;
    int r = fx_setup(state);
    fx_max_payload_total = 0;
    return r;
}

static void test_checkpoint_manifests_bounded(void **state)
{
    struct fx *f = *state;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"started\"}"));
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/generated", fx_dir(f, a));
    assert_int_equal(mkdir(dir, 0700), 0);
    char rel[128];
    for (int i = 0; i < 200; i++) {
        snprintf(rel, sizeof(rel), "generated/file-with-a-longish-name-%04d.txt", i);
        fx_write(fx_dir(f, a), rel, "x\n");
    }
    char head[64] = "";
    for (int round = 0; round < 3; round++) {
        char parent[80];
        snprintf(parent, sizeof(parent), round ? "\"%s\"" : "null", head);
        cJSON *cp = fx_call(f, a, "wacp/checkpoint.create",
                            "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"provisional\", "
                            "\"confidence\": \"low\", \"parent\": %s}",
                            parent);
        if (round < 2) {
            assert_non_null(cp);
            assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cp, "files")), 200);
            snprintf(head, sizeof(head), "%s", fx_str(cp, "checkpoint_id"));
        } else {
            assert_null(cp);
            EXPECT_ERR("memory_limit");
        }
    }
    const cJSON *rej = fx_last(f, "checkpoint_rejected");
    assert_non_null(rej);
    assert_string_equal(fx_str(rej, "reason"), "memory_limit");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fx_setup, fx_teardown)
        T(test_l1_six_core_primitives),
        T(test_trail_query_row),
        T(test_l1_three_base_roles_permission_matrix),
        T(test_l1_port_rights),
        T(test_l1_eleven_signal_types_closed_set),
        T(test_l1_envelope_lifecycle_five_states),
        T(test_l1_redelivery_three_attempts_linear_backoff),
        T(test_l1_redelivery_deduplication),
        cmocka_unit_test_setup_teardown(test_checkpoint_manifests_bounded, fx_setup_small_ceiling,
                                        fx_teardown),
        cmocka_unit_test(test_l1_workspace_state_machine_table),
        T(test_l1_workspace_state_machine_driven),
        T(test_l1_checkpoint_creation_and_immutability),
        T(test_l1_integration_direct),
        T(test_l1_trail_recording_all_events),
        T(test_l1_write_ahead_trail),
        T(test_l1_identity_rules),
        T(test_every_method_dispatches),
        T(test_hostile_worker_creates_workspace),
        T(test_hostile_worker_sends_directive),
        T(test_hostile_address_without_right),
        T(test_hostile_forged_ids),
        T(test_hostile_emit_coordinator_signals),
        T(test_hostile_wrong_types),
        T(test_hostile_checkpoint_stale_parent_and_paths),
        T(test_hostile_integration_through_parent_link),
        T(test_hostile_task_cycles),
        T(test_hostile_flood_workspaces),
        T(test_hostile_flood_envelopes),
        T(test_hostile_terminal_workspace_does_nothing),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
