/* tests/unit/test_wacp_highway.c: the highway inside the WACP model (wacp_fixture.h): visibility
 * grants (add-only, recorded, every read backed by one; an observer's designated workspaces), an
 * envelope altered after it was sealed refused before delivery (integrity_violation), a
 * person's injection bypassing the role send rules only, and gated requests refused to a caller
 * that cannot wait. */
#include "tests/unit/wacp_fixture.h"
#include "supervisor/wacp/internal.h"

static void test_visibility_grants(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const char *b = fx_child(f, f->rootid, "coder", NULL);
    fx_write(fx_dir(f, b), "x.txt", "x\n");
    assert_non_null(fx_call(f, b, "wacp/checkpoint.create",
                            "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"provisional\", "
                            "\"confidence\": \"high\", \"parent\": null}"));
    /* Without a grant: nothing of B. */
    assert_null(fx_call(f, a, "wacp/checkpoint.list", "{\"workspace\": \"%s\"}", b));
    assert_false(wacp_can_read(f->w, a, b));
    /* A worker cannot grant. */
    assert_null(
        fx_call(f, a, "wacp/visibility.grant", "{\"workspace\": \"%s\", \"target\": \"%s\"}", a, b));
    EXPECT_ERR("permission_denied");
    cJSON *g = fx_call(f, f->rootid, "wacp/visibility.grant",
                       "{\"workspace\": \"%s\", \"target\": \"%s\"}", a, b);
    assert_non_null(g);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(g, "already")));
    assert_int_equal(fx_count(f, "visibility_granted"), 1);
    assert_string_equal(fx_str(fx_last(f, "visibility_granted"), "target"), b);
    assert_true(wacp_can_read(f->w, a, b));
    cJSON *l = fx_call(f, a, "wacp/checkpoint.list", "{\"workspace\": \"%s\"}", b);
    assert_non_null(l);
    /* Add-only, idempotent: a second grant records nothing new; there is no revoke. */
    g = fx_call(f, f->rootid, "wacp/visibility.grant", "{\"workspace\": \"%s\", \"target\": \"%s\"}", a,
                b);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(g, "already")));
    assert_int_equal(fx_count(f, "visibility_granted"), 1);
    assert_false(wacp_can_read(f->w, b, a)); /* one way */
    /* Only to an active or blocked workspace. */
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", b));
    assert_null(fx_call(f, f->rootid, "wacp/visibility.grant",
                        "{\"workspace\": \"%s\", \"target\": \"%s\"}", b, a));
    EXPECT_ERR("invalid_state");
}

/* `corral run --resume` rebuilds an escalation still open at the crash: listed for its owner
 * again, and a person's answer acts on the workspace as before (abort: failed). */
static void test_escalation_survives_resume(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *r = fx_call(f, a, "wacp/signal.emit", "{\"type\": \"escalation\", \"reason\": \"help\"}");
    assert_non_null(r);
    assert_int_equal(fx_count(f, "escalation_received"), 1);
    const char *sid = fx_str(fx_last(f, "escalation_received"), "signal_id");
    assert_non_null(sid);
    fx_resume(f);
    cJSON *l = fx_keep(f, highway_escs_json(f->w->hw, false, 0));
    assert_int_equal(cJSON_GetArraySize(l), 1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(l, 0), "id"), sid);
    assert_string_equal(fx_str(cJSON_GetArrayItem(l, 0), "reason"), "help");
    struct highway_escalation *x = highway_esc_find(f->w->hw, sid);
    assert_non_null(x);
    assert_int_equal(highway_esc_respond(f->w->hw, x, HIGHWAY_RESP_ABORT, NULL, NULL, "alice", 0), 0);
    assert_string_equal(fx_state(f, a), "failed");
    assert_int_equal(fx_count(f, "escalation_resolved"), 1);
}

static void test_observer_designated(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    char extra[128];
    snprintf(extra, sizeof(extra), "\"visibility\": [\"%s\"]", a);
    const char *o = fx_child(f, f->rootid, "watcher", extra);
    assert_true(wacp_can_read(f->w, o, a));
    assert_false(wacp_can_read(f->w, o, f->rootid));
    assert_int_equal(fx_count(f, "visibility_granted"), 1);
    /* A grant of a workspace that does not exist refuses the creation. */
    assert_null(fx_call(f, f->rootid, "wacp/workspace.create",
                        "{\"agent\": \"watcher\", \"directive\": {}, \"visibility\": [\"ws-nope\"]}"));
    EXPECT_ERR("not_found");
}

/* An envelope changed after the supervisor sealed it (here: in memory, as a corrupted store
 * would) is refused at its next delivery attempt, recorded, never notified. */
static void test_envelope_altered_refused(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    cJSON *s = fx_call(
        f, f->rootid, "wacp/envelope.send",
        "{\"to\": \"%s\", \"type\": \"feedback\", \"payload\": {\"text\": \"the real one\"}}", a);
    assert_non_null(s);
    struct wacp_env *v = NULL;
    for (size_t i = 0; i < f->w->n_env; i++)
        if (!strcmp(f->w->env[i]->id, fx_str(s, "envelope_id")))
            v = f->w->env[i];
    if (!v)
        fail_msg("the envelope is not in the model");
    assert_true(v->mac[63] != 0 && v->mac[64] == 0);
    /* Delivered once and sealed; now the stored payload is altered and redelivery is due. */
    free(v->payload); /* kept as JSON text */
    v->payload = strdup("{\"text\":\"forged\"}");
    size_t before = fx_notes_count(f, a, "wacp/envelope");
    wacp_tick(f->w, wacp_core_now_ms() + 60000);
    assert_int_equal(fx_notes_count(f, a, "wacp/envelope"), before);
    const cJSON *iv = fx_last(f, "integrity_violation");
    assert_non_null(iv);
    assert_string_equal(fx_str(iv, "subject_type"), "envelope");
    assert_string_equal(fx_str(iv, "action_taken"), "rejected");
    assert_string_equal(fx_str(fx_last(f, "envelope_rejected"), "reason"), "integrity_violation");
}

/* Injection: a directive from a person to a worker (which a worker's peer could never send),
 * origin human, originator the person; refused into a terminal workspace, and recorded. */
static void test_injection(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    const struct policy_user u = {
        .uid = 1000, .user_id = "alice", .approve = POLICY_USER_APPROVE_ALL, .inject = true};
    cJSON *p = cJSON_Parse("{}"), *r = NULL;
    cJSON_AddStringToObject(p, "to", a);
    cJSON_AddStringToObject(p, "type", "directive");
    cJSON_AddItemToObject(p, "payload", cJSON_Parse("{\"text\": \"from a person\"}"));
    assert_int_equal(wacp_human_call(f->w, &u, "inject", p, &r, &f->e), 0);
    assert_string_equal(fx_str(r, "origin"), "human");
    cJSON_Delete(r);
    const cJSON *c = fx_last(f, "envelope_created");
    assert_string_equal(fx_str(c, "origin"), "human");
    assert_string_equal(fx_str(c, "originator"), "alice");
    assert_string_equal(fx_last_ent(f, "human_injection")->actor, "alice");
    /* Not a registered type: refused (the one rule relaxed is the sender's role). */
    cJSON_ReplaceItemInObject(p, "type", cJSON_CreateString("gossip"));
    assert_int_not_equal(wacp_human_call(f->w, &u, "inject", p, &r, &f->e), 0);
    assert_string_equal(f->e.code, "invalid_type");
    cJSON_ReplaceItemInObject(p, "type", cJSON_CreateString("feedback"));
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    assert_int_not_equal(wacp_human_call(f->w, &u, "inject", p, &r, &f->e), 0);
    assert_string_equal(f->e.code, "workspace_terminal");
    assert_string_equal(fx_str(fx_last(f, "human_injection"), "status"), "rejected");
    /* A user without the right, and a suspended one. */
    const struct policy_user v = {.uid = 1001, .user_id = "bob"};
    assert_int_not_equal(wacp_human_call(f->w, &v, "inject", p, &r, &f->e), 0);
    assert_string_equal(f->e.code, "not_permitted");
    const struct policy_user s = {.uid = 1002, .user_id = "carol", .inject = true, .state = "suspended"};
    assert_int_not_equal(wacp_human_call(f->w, &s, "inject", p, &r, &f->e), 0);
    assert_string_equal(f->e.code, "user_not_active");
    assert_string_equal(fx_str(fx_last(f, "capability_denied"), "reason"), "user_not_active");
    cJSON_Delete(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_visibility_grants, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_escalation_survives_resume, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_observer_designated, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_envelope_altered_refused, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_injection, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
