/* tests/unit/test_wacp_resume.c: what `corral run --resume` rebuilds from the trail beyond the
 * model's objects (restore.c): the rate limits' buckets, the timeout's pauses while suspended,
 * and the highway's re-entry guard. Each fed through fx_resume (the entries recorded so far, to
 * a new model of the same run), as a resume feeds the dead run's trail. */
#include "supervisor/wacp/highway.h"
#include "supervisor/wacp/internal.h"
#include "wacp_fixture.h"

/* The fixture's policy with signals limited to 1 a second (a burst of 10). */
static int setup_rate(void **state)
{
    static char text[sizeof(fx_policy) + 64];
    const char *at = strstr(fx_policy, " \"highway\"");
    snprintf(text, sizeof(text), "%.*s \"rate_limits\": {\"signals\": 1},\n%s", (int)(at - fx_policy),
             fx_policy, at);
    return fx_setup_opts(state, 8, 4, text);
}

/* The signals taken before the crash still count after it: a workspace that used its burst
 * is refused at once after the resume, not handed a full bucket. */
static void test_rate_bucket_survives_resume(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", NULL);
    int taken = 0;
    while (taken < 20 && fx_call(f, a, "wacp/signal.emit", "{\"type\": \"checkpoint\"}"))
        taken++;
    assert_int_equal(taken, 10);
    fx_resume(f);
    assert_null(fx_call(f, a, "wacp/signal.emit", "{\"type\": \"checkpoint\"}"));
    assert_string_equal(fx_str(fx_last(f, "denial"), "kind"), "rate_limit");
}

/* A workspace suspended at the crash: its timeout's meter stays paused (the time suspended,
 * before and after the crash, does not count), and it runs again from where it was when the
 * workspace is resumed, not from the start of the machine's clock. */
static void test_suspension_clock_survives_resume(void **state)
{
    FX;
    const char *a = fx_child(f, f->rootid, "coder", "\"timeout\": 600");
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.suspend", "{\"workspace\": \"%s\"}", a));
    fx_resume(f);
    assert_string_equal(fx_state(f, a), "suspended");
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.resume", "{\"workspace\": \"%s\"}", a));
    const struct wacp_ws *ws = wacp_tree_find(f->w, a);
    assert_non_null(ws);
    uint64_t now = wacp_core_now_ms();
    assert_true(ws->deadline_ms > now + 590 * 1000);
    assert_true(ws->deadline_ms <= now + 600 * 1000);
}

/* The re-entry guard (highway spec 6.1): a subject whose gate fell through to the coordinator
 * (resolved escalate) before the crash is still the coordinator's decision after it: its
 * identical re-request is converted to approve, not gated again. */
static void test_reentry_guard_survives_resume(void **state)
{
    FX;
    cJSON *t = cJSON_CreateObject(), *r = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "gate_id", "gate-0123456789abcdef0123456789abcdef");
    cJSON_AddStringToObject(t, "gate_type", "workspace_create");
    cJSON_AddStringToObject(t, "subject_id", "subject-key-1");
    cJSON_AddStringToObject(t, "workspace", f->rootid);
    cJSON_AddStringToObject(r, "gate_id", "gate-0123456789abcdef0123456789abcdef");
    cJSON_AddStringToObject(r, "gate_type", "workspace_create");
    cJSON_AddStringToObject(r, "action", "escalate");
    cJSON_AddStringToObject(r, "actor", "fallback");
    fx_record(f, f->rootid, "protocol", "gate_triggered", t);
    fx_record(f, f->rootid, "fallback", "gate_resolved", r);
    cJSON_Delete(t);
    cJSON_Delete(r);
    fx_resume(f);
    const struct highway_gate_req q = {.type = POLICY_GATE_WORKSPACE_CREATE,
                                       .subject_id = "subject-key-1",
                                       .workspace = f->rootid,
                                       .timeout = 30,
                                       .fallback = POLICY_FALLBACK_ESCALATE,
                                       .by_coordinator = true,
                                       .now_ms = wacp_core_now_ms(),
                                       .wall_ms = 1};
    struct highway_gate *g = NULL;
    assert_int_equal(highway_gate_open(f->w->hw, &q, &g), 0);
    assert_string_equal(fx_str(fx_last(f, "gate_reentry_blocked"), "subject_id"), "subject-key-1");
    /* Another subject: gated as usual. */
    cJSON *subj = cJSON_CreateObject();
    const struct highway_gate_req q2 = {.type = POLICY_GATE_WORKSPACE_CREATE,
                                        .subject = subj,
                                        .subject_id = "subject-key-2",
                                        .workspace = f->rootid,
                                        .timeout = 30,
                                        .fallback = POLICY_FALLBACK_ESCALATE,
                                        .by_coordinator = true,
                                        .now_ms = wacp_core_now_ms(),
                                        .wall_ms = 1};
    assert_int_equal(highway_gate_open(f->w->hw, &q2, &g), 1);
    cJSON_Delete(subj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rate_bucket_survives_resume, setup_rate, fx_teardown),
        cmocka_unit_test_setup_teardown(test_suspension_clock_survives_resume, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reentry_guard_survives_resume, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
