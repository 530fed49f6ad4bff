/* tests/unit/test_wacp_spec.c: the Core conformance requirements of each WACP primitive spec
 * (workspace, envelope, signal, checkpoint, task, identity, user, integration), one test each,
 * named after the requirement. */
#include "tests/unit/wacp_fixture.h"

#include <time.h>

/* ---- workspace spec 14 */

static void test_ws_nine_component_model(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", "\"context\": {\"hint\": 1}");
    cJSON *s = fx_call(f, a, "wacp/workspace.self", "{}");
    /* directive, inbox, context, working memory (its directory), checkpoint register, resource
     * meter (budgets), local trail (entries under its id), visibility and authority (role). */
    assert_non_null(cJSON_GetObjectItem(s, "directive"));
    assert_non_null(cJSON_GetObjectItem(s, "inbox"));
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "context"), "hint")->valueint, 1);
    assert_string_equal(fx_read(fx_dir(f, a), "a.txt"), "alpha\n");
    assert_non_null(cJSON_GetObjectItem(s, "checkpoints"));
    assert_non_null(cJSON_GetObjectItem(s, "budgets"));
    assert_string_equal(fx_str(s, "role"), "worker");
    assert_string_equal(fx_str(s, "directive_envelope"), fx_last_envelope(f, a));
    bool local = false;
    for (size_t i = 0; i < f->n_ents; i++)
        local |= !strcmp(f->ents[i].ws, a);
    assert_true(local);
}

static void test_ws_coordinator_only_creation(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_null(fx_call(f, a, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}"));
    EXPECT_ERR("permission_denied");
    /* A delegate may, within its subtree. */
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    const char *g = fx_child(f, d, "coder", NULL);
    cJSON *s = fx_call(f, g, "wacp/workspace.self", "{}");
    assert_string_equal(fx_str(s, "parent"), d);
    /* ...but cannot hand delegation on. */
    assert_null(fx_call(f, d, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"delegate\": true}"));
    EXPECT_ERR("permission_denied");
    /* A delegate governs its subtree only. */
    assert_null(fx_call(f, d, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    EXPECT_ERR("not_found");
    assert_non_null(fx_call(f, d, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", g));
    assert_non_null(
        fx_call(f, g, "wacp/envelope.send", "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}", d));
}

static void test_ws_terminal_state_immutability(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort",
                            "{\"workspace\": \"%s\", \"reason\": \"enough\"}", a));
    assert_string_equal(fx_state(f, a), "failed");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    EXPECT_ERR("invalid_transition");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.suspend", "{\"workspace\": \"%s\"}", a));
    EXPECT_ERR("invalid_transition");
    assert_null(fx_call(f, f->rootid, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a));
    EXPECT_ERR("target_terminal");
    assert_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"}"));
    EXPECT_ERR("invalid_state");
    wacp_agent_ended(f->w, a, "agent_exited"); /* a late end changes nothing */
    assert_string_equal(fx_state(f, a), "failed");
    assert_int_equal(f->n_stopped, 1);
}

static void test_ws_no_workspace_destruction(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    cJSON *l = fx_call(f, f->rootid, "wacp/workspace.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "workspaces")), 2);
    assert_non_null(fx_call(f, f->rootid, "wacp/checkpoint.list", "{\"workspace\": \"%s\"}", a));
}

static void test_ws_tree_containment_budgets(void **state)
{
    FX;
    /* The coordinator has memory 512M, pids 64, wall_time 1h; the worker role 256M, 32. */
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"budgets\": {\"memory\": \"1G\"}}"));
    EXPECT_ERR("budget_exceeds_parent");
    assert_int_equal(f->e.rpc_code, WACP_E_LIMIT);
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"budgets\": {\"wall_time\": 7200}}"));
    EXPECT_ERR("budget_exceeds_parent");
    const char *a = fx_child(f, f->rootid, "coder", "\"budgets\": {\"pids\": 8, \"memory\": 134217728}");
    cJSON *s = fx_call(f, a, "wacp/workspace.self", "{}");
    const cJSON *b = cJSON_GetObjectItem(s, "budgets");
    assert_int_equal((uint64_t)cJSON_GetObjectItem(b, "memory")->valuedouble, 134217728u);
    assert_int_equal(cJSON_GetObjectItem(b, "pids")->valueint, 8);
    assert_int_equal(cJSON_GetObjectItem(b, "wall_time")->valueint, 3600);
    /* A grandchild stays within its parent's (a delegate's), not its role's. */
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true, \"budgets\": {\"pids\": 10}");
    assert_null(fx_call(f, d, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"budgets\": {\"pids\": 20}}"));
    EXPECT_ERR("budget_exceeds_parent");
    const char *g = fx_child(f, d, "coder", NULL);
    s = fx_call(f, g, "wacp/workspace.self", "{}");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "budgets"), "pids")->valueint, 10);
}

static void test_ws_tree_visibility_flows_downward(void **state)
{
    FX;
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    const char *g = fx_child(f, d, "coder", NULL);
    const char *other = fx_child(f, f->rootid, "coder", NULL);
    cJSON *l = fx_call(f, d, "wacp/workspace.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "workspaces")), 2); /* itself and g */
    l = fx_call(f, g, "wacp/workspace.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "workspaces")), 1);
    l = fx_call(f, f->rootid, "wacp/workspace.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "workspaces")), 4);
    assert_null(fx_call(f, g, "wacp/checkpoint.list", "{\"workspace\": \"%s\"}", d));
    EXPECT_ERR("not_found");
    assert_non_null(other);
}

static void test_ws_child_cannot_outlive_parent_within_owner(void **state)
{
    FX;
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    const char *same = fx_child(f, d, "coder", NULL);
    const char *bobs = fx_child(f, d, "coder", "\"owner\": \"bob\"");
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", d));
    assert_string_equal(fx_state(f, d), "failed");
    assert_string_equal(fx_state(f, same), "failed");
    /* Another owner's child is reparented to the coordinator, not aborted (User spec 4.4). */
    assert_string_equal(fx_state(f, bobs), "active");
    const cJSON *rp = fx_last(f, "workspace_reparented");
    assert_non_null(rp);
    assert_string_equal(fx_str(rp, "to_parent"), f->rootid);
    cJSON *s = fx_call(f, bobs, "wacp/workspace.self", "{}");
    assert_string_equal(fx_str(s, "parent"), f->rootid);
    /* Its signals now reach the coordinator. */
    assert_non_null(fx_call(f, bobs, "wacp/signal.emit", "{\"type\": \"ready\"}"));
    const cJSON *sig = cJSON_GetObjectItem(fx_note_to(f, f->rootid, "wacp/signal"), "signal");
    assert_string_equal(fx_str(sig, "from"), bobs);
    /* The root's failure takes every workspace, whoever owns it. */
    wacp_shutdown(f->w, "run_ended");
    assert_string_equal(fx_state(f, bobs), "failed");
    assert_true(wacp_done(f->w));
}

static void test_ws_timeout_enforcement(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", "\"timeout\": 2");
    const char *b = fx_child(f, f->rootid, "coder", "\"timeout\": 2");
    /* b completes first: the timeout race goes to complete (concurrency invariant 6). */
    fx_write(fx_dir(f, b), "a.txt", "b\n");
    assert_non_null(fx_call(
        f, b, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"}"));
    assert_non_null(fx_call(f, b, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    uint64_t dl = wacp_next_deadline(f->w);
    assert_true(dl <= wacp_core_now_ms() + 2000);
    wacp_tick(f->w, dl + 1);
    assert_string_equal(fx_state(f, a), "failed");
    assert_string_equal(fx_str(fx_last(f, "workspace_state_changed"), "reason"), "timeout");
    assert_string_equal(fx_state(f, b), "integrating");
}

static void test_ws_suspension_queues_and_pauses(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.suspend", "{\"workspace\": \"%s\"}", a));
    size_t before = fx_notes_count(f, a, "wacp/envelope");
    char ids[3][WACP_ID_LEN];
    for (int i = 0; i < 3; i++) {
        cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                           "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": %d}", a, i);
        snprintf(ids[i], WACP_ID_LEN, "%s", fx_str(r, "envelope_id"));
    }
    assert_int_equal(fx_notes_count(f, a, "wacp/envelope"), before);
    /* No redelivery clock runs for a frozen inbox. */
    assert_true(wacp_next_deadline(f->w) > wacp_core_now_ms() + 60000);
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.resume", "{\"workspace\": \"%s\"}", a));
    int k = 0;
    for (size_t i = 0; i < f->n_notes; i++)
        if (!strcmp(f->notes[i].ws, a) && !strcmp(f->notes[i].method, "wacp/envelope")) {
            const char *id = fx_str(cJSON_GetObjectItem(f->notes[i].params, "envelope"), "envelope_id");
            if (k < 3 && !strcmp(id, ids[k]))
                k++;
        }
    assert_int_equal(k, 3); /* channel order: creation order */
}

static void test_ws_creation_error_fails_workspace(void **state)
{
    FX;
    f->fail_start = true;
    assert_null(
        fx_call(f, f->rootid, "wacp/workspace.create", "{\"agent\": \"coder\", \"directive\": 1}"));
    f->fail_start = false;
    EXPECT_ERR("creation_error");
    cJSON *t = fx_keep(f, wacp_tree_json(f->w));
    const cJSON *c = cJSON_GetArrayItem(t, 1);
    assert_string_equal(fx_str(c, "state"), "failed");
    assert_string_equal(fx_str(c, "reason"), "creation_error");
}

/* ---- user spec 9.1 (ownership, originator) */

static void test_user_owner_set_and_inherited(void **state)
{
    FX;
    cJSON *s = fx_call(f, f->rootid, "wacp/workspace.self", "{}");
    assert_string_equal(fx_str(s, "owner"), "alice");
    assert_string_equal(fx_str(s, "originator"), "system");
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    s = fx_call(f, a, "wacp/workspace.self", "{}");
    assert_string_equal(fx_str(s, "owner"), "alice");
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true, \"owner\": \"bob\"");
    const char *g = fx_child(f, d, "coder", NULL);
    s = fx_call(f, g, "wacp/workspace.self", "{}");
    assert_string_equal(fx_str(s, "owner"), "bob");
    assert_string_equal(fx_str(s, "originator"), "system");
    assert_string_equal(fx_str(fx_last(f, "workspace_created"), "owner"), "bob");
}

/* User spec 9.1 #13: transfer records workspace_ownership_transferred, one workspace only,
 * and rewrites nothing before it; the originator stays. */
static void test_user_ownership_transfer(void **state)
{
    FX;
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    const char *g = fx_child(f, d, "coder", NULL);
    size_t before = f->n_ents;
    cJSON *r = fx_call(f, f->rootid, "wacp/workspace.transfer",
                       "{\"workspace\": \"%s\", \"owner\": \"dave\"}", d);
    assert_string_equal(fx_str(r, "owner"), "dave");
    const cJSON *x = fx_last(f, "workspace_ownership_transferred");
    assert_string_equal(fx_str(x, "from_owner"), "alice");
    assert_string_equal(fx_str(x, "to_owner"), "dave");
    assert_int_equal(f->n_ents, before + 1);
    assert_string_equal(fx_str(fx_call(f, g, "wacp/workspace.self", "{}"), "owner"), "alice");
    assert_string_equal(fx_str(fx_call(f, d, "wacp/workspace.self", "{}"), "originator"), "system");
    /* Earlier entries keep the first owner. */
    bool kept = false;
    for (size_t i = 0; i < before; i++)
        kept |= !strcmp(f->ents[i].type, "workspace_created") && !strcmp(f->ents[i].ws, d) &&
                !strcmp(fx_str(f->ents[i].body, "owner"), "alice");
    assert_true(kept);
    assert_null(
        fx_call(f, d, "wacp/workspace.transfer", "{\"workspace\": \"%s\", \"owner\": \"eve\"}", g));
    EXPECT_ERR("permission_denied");
    assert_null(fx_call(f, f->rootid, "wacp/workspace.transfer",
                        "{\"workspace\": \"%s\", \"owner\": \"system\"}", g));
    EXPECT_ERR("invalid_params");
}

static void test_user_originator_propagates_and_is_immutable(void **state)
{
    FX;
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true, \"owner\": \"carol\"");
    const char *g = fx_child(f, d, "coder", NULL);
    cJSON *s = fx_call(f, g, "wacp/workspace.self", "{}");
    assert_string_equal(fx_str(s, "originator"), "system");
    /* No parameter sets it. */
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"originator\": \"carol\"}"));
    EXPECT_ERR("invalid_params");
}

/* ---- envelope spec 11 */

static void test_env_three_base_types_and_registered_types(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, a, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1}", f->rootid));
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"rumour\", \"payload\": 1}", f->rootid));
    EXPECT_ERR("invalid_type");
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"report\", \"payload\": 1}", f->rootid));
    EXPECT_ERR("permission_denied"); /* registered, but not the worker's */
}

static void test_env_schema_runtime_assigned_fields(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *r = fx_call(
        f, f->rootid, "wacp/envelope.send",
        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": {\"k\": 1}, \"priority\": \"urgent\"}",
        a);
    const cJSON *env = cJSON_GetObjectItem(fx_note_to(f, a, "wacp/envelope"), "envelope");
    static const char *const fields[] = {"envelope_id", "from",        "to",       "type",
                                         "payload",     "in_reply_to", "priority", "origin",
                                         "timestamp",   "attempt",     "rights"};
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
        if (!cJSON_GetObjectItem(env, fields[i]))
            fail_msg("envelope without %s", fields[i]);
    assert_string_equal(fx_str(env, "envelope_id"), fx_str(r, "envelope_id"));
    assert_string_equal(fx_str(env, "from"), f->rootid);
    assert_string_equal(fx_str(env, "origin"), "agent");
    assert_string_equal(fx_str(env, "priority"), "urgent");
    /* The run's own first envelope to the coordinator comes from the human who started it. */
    for (size_t i = 0; i < f->n_notes; i++)
        if (!strcmp(f->notes[i].ws, f->rootid) && !strcmp(f->notes[i].method, "wacp/envelope")) {
            assert_string_equal(fx_str(cJSON_GetObjectItem(f->notes[i].params, "envelope"), "origin"),
                                "human");
            break;
        }
    assert_null(
        fx_call(f, f->rootid, "wacp/envelope.send",
                "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1, \"origin\": \"human\"}", a));
    EXPECT_ERR("invalid_params");
}

static void test_env_structure_validation_and_replies(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_null(
        fx_call(f, a, "wacp/envelope.send",
                "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1, \"in_reply_to\": \"env-nope\"}",
                f->rootid));
    EXPECT_ERR("invalid_structure");
    cJSON *q = fx_call(f, a, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"query\", \"payload\": \"why?\"}", f->rootid);
    cJSON *r = fx_call(
        f, f->rootid, "wacp/envelope.send",
        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": \"because\", \"in_reply_to\": \"%s\"}", a,
        fx_str(q, "envelope_id"));
    assert_non_null(r);
    const cJSON *env = cJSON_GetObjectItem(fx_note_to(f, a, "wacp/envelope"), "envelope");
    assert_string_equal(fx_str(env, "in_reply_to"), fx_str(q, "envelope_id"));
    assert_null(fx_call(f, a, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"query\", \"payload\": 1, \"in_reply_to\": 7}",
                        f->rootid));
    EXPECT_ERR("invalid_params");
}

static void test_env_durability_recorded_before_delivery(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a);
    const char *id = fx_str(r, "envelope_id");
    unsigned rec = 0, note = 0;
    for (size_t i = 0; i < f->n_ents; i++)
        if (!strcmp(f->ents[i].type, "envelope_created") &&
            !strcmp(fx_str(f->ents[i].body, "envelope_id"), id))
            rec = f->ents[i].seq;
    for (size_t i = 0; i < f->n_notes; i++)
        if (!strcmp(f->notes[i].method, "wacp/envelope") &&
            !strcmp(fx_str(cJSON_GetObjectItem(f->notes[i].params, "envelope"), "envelope_id"), id))
            note = f->notes[i].seq;
    assert_true(rec > 0 && note > rec);
}

static void test_env_channel_ordering(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    char ids[3][WACP_ID_LEN];
    for (int i = 0; i < 3; i++)
        snprintf(ids[i], WACP_ID_LEN, "%s",
                 fx_str(fx_call(f, f->rootid, "wacp/envelope.send",
                                "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": %d}", a, i),
                        "envelope_id"));
    int k = 0;
    for (size_t i = 0; i < f->n_notes; i++)
        if (!strcmp(f->notes[i].ws, a) && k < 3 &&
            !strcmp(fx_str(cJSON_GetObjectItem(f->notes[i].params, "envelope"), "envelope_id"), ids[k]))
            k++;
    assert_int_equal(k, 3);
}

static void test_env_undeliverable_when_target_ends(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.suspend", "{\"workspace\": \"%s\"}", a));
    cJSON *r = fx_call(f, f->rootid, "wacp/envelope.send",
                       "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", a);
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    const cJSON *u = fx_last(f, "envelope_undeliverable");
    assert_non_null(u);
    assert_string_equal(fx_str(u, "envelope_id"), fx_str(r, "envelope_id"));
    assert_string_equal(fx_str(u, "reason"), "target_terminal");
    const cJSON *sig = cJSON_GetObjectItem(fx_note_to(f, f->rootid, "wacp/signal"), "signal");
    assert_string_equal(fx_str(sig, "ref"), fx_str(r, "envelope_id"));
}

/* A send-once right handed over in an envelope: the receiver spends it, once. */
static void test_env_send_once_transferred_then_consumed(void **state)
{
    FX;
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    const char *g = fx_child(f, d, "coder", NULL);
    cJSON *gr = fx_call(f, f->rootid, "wacp/rights.grant",
                        "{\"holder\": \"%s\", \"target\": \"%s\", \"kind\": \"send_once\"}", f->rootid,
                        g);
    const char *once = fx_str(gr, "right_id");
    const char *other = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    /* The coordinator passes its one-time right to g over to another delegate. */
    assert_non_null(fx_call(f, f->rootid, "wacp/envelope.send",
                            "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": \"reply to g once\", "
                            "\"rights\": [\"%s\"]}",
                            other, once));
    assert_string_equal(fx_str(fx_last(f, "port_right_transferred"), "to_holder"), other);
    /* other is a delegate, but g is not in its subtree: the matrix still says no. */
    assert_null(fx_call(f, other, "wacp/envelope.send",
                        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": 1}", g));
    EXPECT_ERR("permission_denied");
    /* The right was not spent by a refused send. */
    cJSON *l = fx_call(f, other, "wacp/rights.list", "{}");
    bool held = false;
    const cJSON *x;
    cJSON_ArrayForEach (x, cJSON_GetObjectItem(l, "rights"))
        held |= !strcmp(fx_str(x, "right_id"), once);
    assert_true(held);
    assert_int_equal(fx_count(f, "port_right_consumed"), 0);
}

/* ---- signal spec 9 */

static void test_sig_schema_reason_required(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    static const char *const need[] = {"blocked", "failed", "escalation"};
    for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
        assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"%s\"}", need[i]));
        EXPECT_ERR("invalid_params");
    }
    cJSON *r = fx_call(f, a, "wacp/signal.emit", "{\"type\": \"escalation\", \"reason\": \"help\"}");
    assert_true(strlen(fx_str(r, "signal_id")) > 8);
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"ready\", \"signal_id\": \"mine\"}"));
    EXPECT_ERR("invalid_params");
    /* Signals are never acknowledged: an ack names envelopes only. */
    assert_null(fx_call(f, a, "wacp/envelope.ack", "{\"envelope_id\": \"%s\"}", fx_str(r, "signal_id")));
    EXPECT_ERR("not_found");
}

static void test_sig_upward_propagation(void **state)
{
    FX;
    const char *d = fx_child(f, f->rootid, "coder", "\"delegate\": true");
    const char *g = fx_child(f, d, "coder", NULL);
    size_t root_sigs = fx_notes_count(f, f->rootid, "wacp/signal");
    size_t d_sigs = fx_notes_count(f, d, "wacp/signal");
    assert_non_null(fx_call(f, g, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"r\"}"));
    assert_int_equal(fx_notes_count(f, d, "wacp/signal"), d_sigs + 1);        /* the parent */
    assert_int_equal(fx_notes_count(f, f->rootid, "wacp/signal"), root_sigs); /* not above */
    assert_int_equal(fx_notes_count(f, g, "wacp/signal"), 0);                 /* nor back */
    const cJSON *sd = fx_last(f, "signal_delivered");
    assert_string_equal(fx_str(sd, "to"), d);
    assert_string_equal(fx_str(sd, "from"), g);
    /* The coordinator's own signals go nowhere down. */
    size_t n = f->n_notes;
    assert_non_null(fx_call(f, f->rootid, "wacp/signal.emit", "{\"type\": \"ready\"}"));
    assert_int_equal(f->n_notes, n);
}

static void test_sig_duplicate_recorded_without_state_change(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"r\"}"));
    size_t changes = fx_count(f, "workspace_state_changed"), emitted = fx_count(f, "signal_emitted");
    cJSON *r = fx_call(f, a, "wacp/signal.emit", "{\"type\": \"blocked\", \"reason\": \"again\"}");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "duplicate")));
    assert_string_equal(fx_str(r, "state"), "blocked");
    assert_int_equal(fx_count(f, "workspace_state_changed"), changes);
    assert_int_equal(fx_count(f, "signal_emitted"), emitted + 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fx_last(f, "signal_emitted"), "duplicate")));
}

static void test_sig_emission_ordering(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    static const char *const seq[] = {"ready", "blocked", "started", "escalation"};
    for (size_t i = 0; i < ARRAY_SIZE(seq); i++)
        assert_non_null(
            fx_call(f, a, "wacp/signal.emit", "{\"type\": \"%s\", \"reason\": \"r\"}", seq[i]));
    size_t k = 0;
    for (size_t i = 0; i < f->n_notes; i++) {
        if (strcmp(f->notes[i].ws, f->rootid) || strcmp(f->notes[i].method, "wacp/signal"))
            continue;
        const cJSON *s = cJSON_GetObjectItem(f->notes[i].params, "signal");
        if (strcmp(fx_str(s, "from"), a) || !strcmp(fx_str(s, "type"), "acknowledged"))
            continue;
        assert_true(k < ARRAY_SIZE(seq));
        assert_string_equal(fx_str(s, "type"), seq[k++]);
    }
    assert_int_equal(k, ARRAY_SIZE(seq));
}

/* ---- checkpoint spec 8 */

static void test_cp_type_role_compatibility(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const char *ob = fx_child(f, f->rootid, "watcher", NULL);
    const char *rv = fx_child(f, f->rootid, "critic", NULL);
    const char *body = "\"intent\": \"i\", \"status\": \"final\", \"confidence\": \"low\"";
    assert_null(fx_call(f, a, "wacp/checkpoint.create", "{\"type\": \"observation\", %s}", body));
    EXPECT_ERR("type_not_permitted");
    assert_string_equal(fx_str(fx_last(f, "checkpoint_rejected"), "reason"), "type_not_permitted");
    assert_null(fx_call(f, ob, "wacp/checkpoint.create", "{\"type\": \"artifact\", %s}", body));
    EXPECT_ERR("type_not_permitted");
    assert_non_null(fx_call(f, ob, "wacp/checkpoint.create",
                            "{\"type\": \"observation\", %s, \"payload\": {\"seen\": 1}}", body));
    assert_non_null(fx_call(f, rv, "wacp/checkpoint.create", "{\"type\": \"review\", %s}", body));
    assert_null(fx_call(f, rv, "wacp/checkpoint.create", "{\"type\": \"artifact\", %s}", body));
    EXPECT_ERR("type_not_permitted");
    assert_null(fx_call(f, f->rootid, "wacp/checkpoint.create", "{\"type\": \"artifact\", %s}", body));
    EXPECT_ERR("type_not_permitted"); /* the coordinator creates no checkpoints */
}

static void test_cp_schema_intent_required(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"\", \"status\": \"final\", \"confidence\": \"low\"}"));
    EXPECT_ERR("invalid_structure");
    assert_null(fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"status\": \"final\", \"confidence\": \"low\"}"));
    EXPECT_ERR("invalid_params");
    cJSON *c = fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"x\", \"status\": \"final\", \"confidence\": \"low\"}");
    cJSON *l = fx_call(f, a, "wacp/checkpoint.list", "{}");
    const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "checkpoints"), 0);
    static const char *const fields[] = {"checkpoint_id", "workspace_id", "type",   "intent",
                                         "status",        "confidence",   "parent", "payload_hash",
                                         "timestamp",     "files",        "payload"};
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
        if (!cJSON_GetObjectItem(x, fields[i]))
            fail_msg("checkpoint without %s", fields[i]);
    assert_string_equal(fx_str(x, "checkpoint_id"), fx_str(c, "checkpoint_id"));
}

static void test_cp_auto_signal_emission(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *c = fx_call(f, a, "wacp/checkpoint.create",
                       "{\"type\": \"artifact\", \"intent\": \"x\", \"status\": \"provisional\", "
                       "\"confidence\": \"low\"}");
    const cJSON *sig = cJSON_GetObjectItem(fx_note_to(f, f->rootid, "wacp/signal"), "signal");
    assert_string_equal(fx_str(sig, "type"), "checkpoint");
    assert_string_equal(fx_str(sig, "ref"), fx_str(c, "checkpoint_id"));
    assert_string_equal(fx_str(sig, "from"), a);
}

static void test_cp_final_checkpoint_for_integration(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), "a.txt", "final one\n");
    cJSON *c1 = fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"f\", \"status\": \"final\", \"confidence\": \"high\"}");
    fx_write(fx_dir(f, a), "a.txt", "provisional two\n");
    cJSON *c2 = fx_call(f, a, "wacp/checkpoint.create",
                        "{\"type\": \"artifact\", \"intent\": \"p\", \"status\": \"provisional\", "
                        "\"confidence\": \"high\", \"parent\": \"%s\"}",
                        fx_str(c1, "checkpoint_id"));
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    assert_null(fx_call(f, f->rootid, "wacp/integrate",
                        "{\"workspace\": \"%s\", \"decision\": \"accept\", \"checkpoint\": \"%s\"}", a,
                        fx_str(c2, "checkpoint_id")));
    EXPECT_ERR("not_final_checkpoint");
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\"}", a);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_string_equal(fx_read(f->root, "a.txt"), "final one\n");
    /* Without a final checkpoint there is nothing to integrate. */
    const char *b = fx_child(f, f->rootid, "coder", NULL);
    assert_non_null(fx_call(f, b, "wacp/checkpoint.create",
                            "{\"type\": \"artifact\", \"intent\": \"p\", \"status\": \"provisional\", "
                            "\"confidence\": \"high\"}"));
    assert_non_null(fx_call(f, b, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    assert_null(
        fx_call(f, f->rootid, "wacp/integrate", "{\"workspace\": \"%s\", \"decision\": \"accept\"}", b));
    EXPECT_ERR("no_final_checkpoint");
}

/* ---- task spec 9 (Core C-1..C-7, and binding history) */

static void test_task_schema_and_draft_gate(void **state)
{
    FX;
    cJSON *t = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"n\", \"description\": \"d\"}");
    const cJSON *c = fx_last(f, "task_created");
    assert_string_equal(fx_str(c, "status"), "draft");
    assert_string_equal(fx_str(c, "graph_ref"), fx_str(fx_last(f, "graph_created"), "graph_id"));
    const cJSON *ap = fx_last(f, "task_approved");
    assert_string_equal(fx_str(ap, "to"), "pending");
    assert_string_equal(fx_str(t, "status"), "pending");
    cJSON *l = fx_call(f, f->rootid, "wacp/task.list", "{}");
    const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tasks"), 0);
    static const char *const fields[] = {
        "task_id",     "name",          "description",       "status",        "depends_on",
        "parent_task", "workspace_ref", "workspace_history", "checkpoint_ref"};
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
        if (!cJSON_GetObjectItem(x, fields[i]))
            fail_msg("task without %s", fields[i]);
}

/* C-3: draft -> pending only through the gate: with the autonomous preset (30 s, approve) the
 * task waits in draft, cannot be bound, and the timeout approves it. */
static void test_task_draft_gate_timeout_approves(void **state)
{
    FX;
    cJSON *t = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"n\"}");
    assert_string_equal(fx_str(t, "status"), "draft");
    assert_int_equal(fx_count(f, "task_approved"), 0);
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, \"task\": \"%s\"}",
                        fx_str(t, "task_id")));
    EXPECT_ERR("invalid_state");
    uint64_t now = wacp_core_now_ms(), dl = wacp_next_deadline(f->w);
    assert_true(dl > now + 25000 && dl <= now + 30000);
    wacp_tick(f->w, dl);
    assert_string_equal(fx_str(fx_last(f, "task_approved"), "approval"), "timeout_auto_approve");
    cJSON *l = fx_call(f, f->rootid, "wacp/task.list", "{}");
    assert_string_equal(fx_str(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tasks"), 0), "status"),
                        "pending");
}

static void test_task_draft_gate_timeout_rejects(void **state)
{
    FX;
    cJSON *t = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"n\"}");
    assert_string_equal(fx_str(t, "status"), "draft");
    uint64_t dl = wacp_next_deadline(f->w);
    assert_true(dl <= wacp_core_now_ms() + 5000);
    wacp_tick(f->w, dl);
    cJSON *l = fx_call(f, f->rootid, "wacp/task.list", "{}");
    assert_string_equal(fx_str(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tasks"), 0), "status"),
                        "cancelled");
    assert_int_equal(fx_count(f, "task_approved"), 0);
}

static void test_task_acyclic_and_same_graph(void **state)
{
    FX;
    cJSON *a = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"A\"}");
    cJSON *b = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"B\", \"depends_on\": [\"%s\"]}",
                       fx_str(a, "task_id"));
    assert_non_null(b);
    assert_null(fx_call(f, f->rootid, "wacp/task.create",
                        "{\"name\": \"C\", \"depends_on\": [\"%s\", \"%s\"]}", fx_str(a, "task_id"),
                        fx_str(a, "task_id")));
    EXPECT_ERR("invalid_params");
    assert_null(fx_call(f, f->rootid, "wacp/task.create",
                        "{\"name\": \"C\", \"depends_on\": [\"task-elsewhere\"]}"));
    EXPECT_ERR("not_found");
    assert_int_equal(fx_count(f, "graph_created"), 1);
}

static void test_task_binding_and_history_across_retries(void **state)
{
    FX;
    cJSON *t = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"T\"}");
    const char *id = fx_str(t, "task_id");
    char extra[128];
    snprintf(extra, sizeof(extra), "\"task\": \"%s\"", id);
    const char *w1 = fx_child(f, f->rootid, "coder", extra);
    /* One task, one workspace at a time. */
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"coder\", \"directive\": 1, %s}", extra));
    EXPECT_ERR("invalid_state");
    assert_non_null(fx_call(f, w1, "wacp/signal.emit", "{\"type\": \"started\"}"));
    assert_non_null(
        fx_call(f, w1, "wacp/signal.emit", "{\"type\": \"failed\", \"reason\": \"crashed\"}"));
    cJSON *l = fx_call(f, f->rootid, "wacp/task.list", "{}");
    const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tasks"), 0);
    assert_string_equal(fx_str(x, "status"), "failed");
    assert_non_null(fx_last(f, "task_failed"));
    const char *w2 = fx_child(f, f->rootid, "coder", extra); /* the retry */
    l = fx_call(f, f->rootid, "wacp/task.list", "{}");
    x = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "tasks"), 0);
    assert_string_equal(fx_str(x, "status"), "assigned");
    assert_string_equal(fx_str(x, "workspace_ref"), w2);
    const cJSON *h = cJSON_GetObjectItem(x, "workspace_history");
    assert_int_equal(cJSON_GetArraySize(h), 2);
    assert_string_equal(cJSON_GetArrayItem(h, 0)->valuestring, w1);
    assert_string_equal(cJSON_GetArrayItem(h, 1)->valuestring, w2);
    assert_int_equal(cJSON_GetObjectItem(fx_last(f, "task_assigned"), "attempt_number")->valueint, 2);
    /* The worker sees its own task only. */
    l = fx_call(f, w2, "wacp/task.list", "{}");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "tasks")), 1);
    /* Cancelling aborts the workspace. */
    assert_non_null(fx_call(f, f->rootid, "wacp/task.cancel", "{\"task\": \"%s\"}", id));
    assert_string_equal(fx_state(f, w2), "failed");
    assert_null(fx_call(f, f->rootid, "wacp/task.cancel", "{\"task\": \"%s\"}", id));
    EXPECT_ERR("invalid_transition");
}

static void test_task_assign_existing_workspace(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *t = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"T\"}");
    cJSON *r = fx_call(f, f->rootid, "wacp/task.assign", "{\"task\": \"%s\", \"workspace\": \"%s\"}",
                       fx_str(t, "task_id"), a);
    assert_string_equal(fx_str(r, "status"), "in_progress");
    cJSON *t2 = fx_call(f, f->rootid, "wacp/task.create", "{\"name\": \"T2\"}");
    assert_null(fx_call(f, f->rootid, "wacp/task.assign", "{\"task\": \"%s\", \"workspace\": \"%s\"}",
                        fx_str(t2, "task_id"), a));
    EXPECT_ERR("invalid_state"); /* one workspace, one task */
}

/* ---- integration spec 9 */

static const char *completed_child(struct fx *f, const char *file, const char *text)
{
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), file, text);
    assert_non_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"high\"}"));
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    return a;
}

static void test_integ_three_decisions_no_backward_transitions(void **state)
{
    FX;
    const char *a = completed_child(f, "a.txt", "A\n");
    const char *b = completed_child(f, "a.txt", "B\n");
    const char *c = completed_child(f, "a.txt", "C\n");
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"revise\"}", a);
    assert_string_equal(fx_str(r, "state"), "failed");
    assert_string_equal(fx_str(fx_last(f, "workspace_state_changed"), "reason"), "revision_required");
    r = fx_call(f, f->rootid, "wacp/integrate", "{\"workspace\": \"%s\", \"decision\": \"reject\"}", b);
    assert_string_equal(fx_str(r, "state"), "failed");
    assert_string_equal(fx_str(fx_last(f, "workspace_state_changed"), "reason"), "rejected");
    assert_string_equal(fx_read(f->root, "a.txt"), "alpha\n");
    r = fx_call(f, f->rootid, "wacp/integrate", "{\"workspace\": \"%s\", \"decision\": \"accept\"}", c);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_string_equal(fx_read(f->root, "a.txt"), "C\n");
    assert_null(
        fx_call(f, f->rootid, "wacp/integrate", "{\"workspace\": \"%s\", \"decision\": \"accept\"}", a));
    EXPECT_ERR("invalid_transition");
    assert_null(
        fx_call(f, f->rootid, "wacp/integrate", "{\"workspace\": \"%s\", \"decision\": \"maybe\"}", c));
    EXPECT_ERR("invalid_params");
    const char *d = fx_child(f, f->rootid, "coder", NULL); /* active: not integrating */
    assert_null(
        fx_call(f, f->rootid, "wacp/integrate", "{\"workspace\": \"%s\", \"decision\": \"accept\"}", d));
    EXPECT_ERR("invalid_transition");
    assert_null(fx_call(f, f->rootid, "wacp/integrate",
                        "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"merged\"}",
                        d));
    EXPECT_ERR("invalid_params");
}

static void test_integ_layered_overlap_conflicted_prefer_parent(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, a), "a.txt", "child\n");
    fx_write(fx_dir(f, a), "new.txt", "new\n");
    assert_non_null(fx_call(
        f, a, "wacp/checkpoint.create",
        "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"high\"}"));
    assert_non_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    fx_write(f->root, "a.txt", "parent\n");
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"layered\"}",
                       a);
    assert_string_equal(fx_str(r, "state"), "conflicted");
    const cJSON *cf = cJSON_GetObjectItem(r, "conflicts");
    assert_int_equal(cJSON_GetArraySize(cf), 1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(cf, 0), "type"), "content_overlap");
    assert_string_equal(fx_str(cJSON_GetArrayItem(cf, 0), "path"), "a.txt");
    assert_non_null(fx_last(f, "conflict_detected"));
    assert_string_equal(fx_read(f->root, "a.txt"), "parent\n");
    assert_null(fx_read(f->root, "new.txt")); /* nothing applied while conflicted */
    r = fx_call(
        f, f->rootid, "wacp/conflict.resolve",
        "{\"workspace\": \"%s\", \"resolution\": \"coordinator_resolve\", \"prefer\": \"parent\"}", a);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_non_null(fx_last(f, "conflict_resolved"));
    assert_string_equal(fx_read(f->root, "a.txt"), "parent\n");
    assert_string_equal(fx_read(f->root, "new.txt"), "new\n");
    struct wacp_summary s;
    wacp_summary_get(f->w, &s);
    assert_int_equal(s.conflicts, 1);
    assert_int_equal(s.integrations, 1);
}

static void test_integ_layered_prefer_child_and_agent_rework(void **state)
{
    FX;
    const char *a = completed_child(f, "a.txt", "child a\n");
    const char *b = completed_child(f, "a.txt", "child b\n");
    fx_write(f->root, "a.txt", "parent\n");
    assert_string_equal(
        fx_str(fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"layered\"}",
                       a),
               "state"),
        "conflicted");
    assert_string_equal(fx_str(fx_call(f, f->rootid, "wacp/conflict.resolve",
                                       "{\"workspace\": \"%s\", \"resolution\": "
                                       "\"coordinator_resolve\", \"prefer\": \"child\"}",
                                       a),
                               "state"),
                        "closed");
    assert_string_equal(fx_read(f->root, "a.txt"), "child a\n");
    /* b overlaps with what a's integration wrote: sequential integration sees it. */
    assert_string_equal(
        fx_str(fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"layered\"}",
                       b),
               "state"),
        "conflicted");
    assert_string_equal(fx_str(fx_call(f, f->rootid, "wacp/conflict.resolve",
                                       "{\"workspace\": \"%s\", \"resolution\": \"agent_rework\"}", b),
                               "state"),
                        "failed");
    assert_string_equal(fx_read(f->root, "a.txt"), "child a\n");
    assert_null(fx_call(f, f->rootid, "wacp/conflict.resolve",
                        "{\"workspace\": \"%s\", \"resolution\": \"agent_rework\"}", b));
    EXPECT_ERR("invalid_transition");
}

static void test_integ_sequential_without_overlap(void **state)
{
    FX;
    const char *a = completed_child(f, "x.txt", "x\n");
    const char *b = completed_child(f, "y.txt", "y\n");
    assert_string_equal(
        fx_str(fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"layered\"}",
                       a),
               "state"),
        "closed");
    assert_string_equal(
        fx_str(fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"layered\"}",
                       b),
               "state"),
        "closed");
    assert_string_equal(fx_read(f->root, "x.txt"), "x\n");
    assert_string_equal(fx_read(f->root, "y.txt"), "y\n");
    assert_int_equal(fx_count(f, "conflict_detected"), 0);
}

static void test_integ_root_complete_ends_run(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    assert_false(wacp_done(f->w));
    cJSON *r = fx_call(f, f->rootid, "wacp/signal.emit", "{\"type\": \"complete\"}");
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_true(wacp_done(f->w));
    assert_string_equal(fx_state(f, a), "failed"); /* a child never outlives its parent */
    struct wacp_summary s;
    wacp_summary_get(f->w, &s);
    assert_int_equal(s.workspaces, 2);
    assert_int_equal(s.closed, 1);
    assert_int_equal(s.failed, 1);
}

static void test_agent_end_fails_workspace(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    size_t stops = f->n_stopped;
    wacp_agent_ended(f->w, a, "budget_exceeded:memory");
    assert_string_equal(fx_state(f, a), "failed");
    assert_string_equal(fx_str(fx_last(f, "workspace_state_changed"), "reason"),
                        "budget_exceeded:memory");
    assert_int_equal(f->n_stopped, stops); /* it ended by itself: nothing to stop */
    wacp_agent_ended(f->w, "ws-unknown", "x");
}

/* Issue 16's fault: an agent that exits normally after `complete` left its parent nothing to
 * integrate (integrating -> failed "agent_exited", and a failed signal to the parent). */
static void test_agent_clean_exit_after_complete_waits_for_integration(void **state)
{
    FX;
    const char *a = completed_child(f, "done.txt", "done\n");
    assert_string_equal(fx_state(f, a), "integrating");
    size_t failed = fx_count(f, "signal_emitted"), stops = f->n_stopped;
    wacp_agent_exited(f->w, a, true, "agent_exited");
    assert_string_equal(fx_state(f, a), "integrating");
    assert_int_equal(fx_count(f, "signal_emitted"), failed); /* no runtime `failed` */
    assert_int_equal(f->n_stopped, stops);
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\"}", a);
    assert_non_null(r);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_string_equal(fx_read(f->root, "done.txt"), "done\n");
    /* A crash after complete (not clean) still fails it; an exit before complete too. */
    const char *b = completed_child(f, "b.txt", "b\n");
    wacp_agent_exited(f->w, b, false, "agent_exited");
    assert_string_equal(fx_state(f, b), "failed");
    const char *c = fx_child(f, f->rootid, "coder", NULL);
    wacp_agent_exited(f->w, c, true, "agent_exited");
    assert_string_equal(fx_state(f, c), "failed");
    assert_string_equal(fx_str(fx_last(f, "workspace_state_changed"), "reason"), "agent_exited");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fx_setup, fx_teardown)
        T(test_ws_nine_component_model),
        T(test_ws_coordinator_only_creation),
        T(test_ws_terminal_state_immutability),
        T(test_ws_no_workspace_destruction),
        T(test_ws_tree_containment_budgets),
        T(test_ws_tree_visibility_flows_downward),
        T(test_ws_child_cannot_outlive_parent_within_owner),
        T(test_ws_timeout_enforcement),
        T(test_ws_suspension_queues_and_pauses),
        T(test_ws_creation_error_fails_workspace),
        T(test_user_owner_set_and_inherited),
        T(test_user_ownership_transfer),
        T(test_user_originator_propagates_and_is_immutable),
        T(test_env_three_base_types_and_registered_types),
        T(test_env_schema_runtime_assigned_fields),
        T(test_env_structure_validation_and_replies),
        T(test_env_durability_recorded_before_delivery),
        T(test_env_channel_ordering),
        T(test_env_undeliverable_when_target_ends),
        T(test_env_send_once_transferred_then_consumed),
        T(test_sig_schema_reason_required),
        T(test_sig_upward_propagation),
        T(test_sig_duplicate_recorded_without_state_change),
        T(test_sig_emission_ordering),
        T(test_cp_type_role_compatibility),
        T(test_cp_schema_intent_required),
        T(test_cp_auto_signal_emission),
        T(test_cp_final_checkpoint_for_integration),
        T(test_task_schema_and_draft_gate),
        cmocka_unit_test_setup_teardown(test_task_draft_gate_timeout_approves, fx_setup_gate_default,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_task_draft_gate_timeout_rejects, fx_setup_gate_reject,
                                        fx_teardown),
        T(test_task_acyclic_and_same_graph),
        T(test_task_binding_and_history_across_retries),
        T(test_task_assign_existing_workspace),
        T(test_integ_three_decisions_no_backward_transitions),
        T(test_integ_layered_overlap_conflicted_prefer_parent),
        T(test_integ_layered_prefer_child_and_agent_rework),
        T(test_integ_sequential_without_overlap),
        T(test_integ_root_complete_ends_run),
        T(test_agent_end_fails_workspace),
        T(test_agent_clean_exit_after_complete_waits_for_integration),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
