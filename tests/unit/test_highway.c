/* tests/unit/test_highway.c: the highway's gate and escalation state machine (WACP human-highway
 * spec sections 3, 6 and 8) with a recording stub for the trail and a hand-turned clock:
 * approve / reject / modify, timeouts and their fallbacks, FIFO order and queue positions, the
 * re-entry guard, subject invalidation, write-ahead (a refused record changes nothing), the
 * escalation routing table by user state, and the supervisor's MAC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "supervisor/wacp/highway.h"
#include "supervisor/wacp/integrity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char type[48], actor[80];
    cJSON *body;
};

struct fx {
    struct highway *h;
    struct entry e[256];
    size_t n;
    bool refuse; /* the trail refuses every record */
    int calls;   /* gate callbacks */
    enum highway_action last;
    char order[8][HIGHWAY_ID_LEN];
    int esc_calls;
    enum highway_response last_resp;
};

static int rec(void *data, const char *ws, const char *actor, const char *type, const cJSON *body)
{
    struct fx *f = data;
    (void)ws;
    if (f->refuse)
        return -5;
    assert_true(f->n < 256);
    snprintf(f->e[f->n].type, sizeof(f->e[0].type), "%s", type);
    snprintf(f->e[f->n].actor, sizeof(f->e[0].actor), "%s", actor);
    f->e[f->n].body = cJSON_Duplicate(body, true);
    f->n++;
    return 0;
}

static void on_gate(void *data, const struct highway_gate *g, enum highway_action a, const cJSON *mods)
{
    struct fx *f = data;
    (void)mods;
    if (f->calls < 8)
        snprintf(f->order[f->calls], HIGHWAY_ID_LEN, "%s", g->id);
    f->calls++;
    f->last = a;
}

static void on_esc(void *data, const struct highway_escalation *x, enum highway_response r,
                   const cJSON *p)
{
    struct fx *f = data;
    (void)x;
    (void)p;
    f->esc_calls++;
    f->last_resp = r;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct highway_hooks hk = {.data = f, .record = rec};
    assert_int_equal(highway_new(&hk, &f->h), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    highway_free(f->h);
    for (size_t i = 0; i < f->n; i++)
        cJSON_Delete(f->e[i].body);
    free(f);
    return 0;
}

static const struct entry *last_of(struct fx *f, const char *type)
{
    for (size_t i = f->n; i-- > 0;)
        if (!strcmp(f->e[i].type, type))
            return &f->e[i];
    return NULL;
}

static size_t count(struct fx *f, const char *type)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += !strcmp(f->e[i].type, type);
    return n;
}

static const char *bstr(const struct entry *e, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e->body, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static struct highway_gate *open_gate(struct fx *f, int type, const char *name, double timeout,
                                      enum policy_fallback fb, uint64_t now, bool coord)
{
    cJSON *subj = cJSON_CreateObject();
    cJSON_AddStringToObject(subj, "name", name);
    struct highway_gate_req r = {.type = type,
                                 .subject = subj,
                                 .workspace = "ws-1",
                                 .task_ref = "task-1",
                                 .timeout = timeout,
                                 .fallback = fb,
                                 .fn = on_gate,
                                 .fn_data = f,
                                 .now_ms = now,
                                 .wall_ms = 1000 + now,
                                 .by_coordinator = coord};
    struct highway_gate *g = NULL;
    int rc = highway_gate_open(f->h, &r, &g);
    cJSON_Delete(subj);
    return rc == 1 ? g : NULL;
}

/* C-3, C-7: the trigger entry carries every field of the section 3 schema. */
static void test_gate_schema(void **state)
{
    struct fx *f = *state;
    struct highway_gate *g = open_gate(f, POLICY_GATE_TASK_APPROVAL, "a", 30, POLICY_FALLBACK_APPROVE, 0,
                                       false);
    assert_non_null(g);
    const struct entry *t = last_of(f, "gate_triggered");
    assert_non_null(t);
    static const char *const keys[] = {"gate_id",  "gate_type",     "subject_id", "workspace",
                                       "task_ref", "graph_ref",     "timestamp",  "timeout",
                                       "fallback", "queue_position"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!cJSON_HasObjectItem(t->body, keys[i]))
            fail_msg("gate_triggered has no %s", keys[i]);
    assert_string_equal(bstr(t, "gate_id"), g->id);
    assert_string_equal(bstr(t, "gate_type"), "task_approval");
    assert_string_equal(bstr(t, "fallback"), "approve");
    cJSON *j = highway_gate_json(g, true, 5000);
    assert_non_null(cJSON_GetObjectItem(j, "subject"));
    assert_true(cJSON_GetObjectItem(j, "seconds_left")->valuedouble == 25);
    cJSON_Delete(j);
}

/* C-4, C-8: approve, reject and modify, each resolved once with the person as actor. */
static void test_three_actions(void **state)
{
    struct fx *f = *state;
    struct highway_gate *a = open_gate(f, POLICY_GATE_TASK_APPROVAL, "a", 0, POLICY_FALLBACK_REJECT, 0,
                                       false);
    struct highway_gate *b = open_gate(f, POLICY_GATE_INTEGRATION, "b", 0, POLICY_FALLBACK_REJECT, 0,
                                       false);
    struct highway_gate *c = open_gate(f, POLICY_GATE_WORKSPACE_CREATE, "c", 0, POLICY_FALLBACK_REJECT,
                                       0, false);
    assert_int_equal(highway_gate_resolve(f->h, a, HIGHWAY_APPROVE, NULL, "alice", NULL, 10), 0);
    assert_int_equal(f->last, HIGHWAY_APPROVE);
    assert_string_equal(last_of(f, "gate_resolved")->actor, "alice");
    assert_int_equal(highway_gate_resolve(f->h, b, HIGHWAY_REJECT, NULL, "bob", NULL, 10), 0);
    assert_int_equal(f->last, HIGHWAY_REJECT);
    cJSON *mods = cJSON_Parse("{\"budget\": {\"memory\": 1000}}");
    assert_int_equal(highway_gate_resolve(f->h, c, HIGHWAY_MODIFY, mods, "alice", NULL, 10), 0);
    cJSON_Delete(mods);
    const struct entry *r = last_of(f, "gate_resolved");
    assert_string_equal(bstr(r, "action"), "modify");
    assert_non_null(cJSON_GetObjectItem(r->body, "modifications"));
    assert_int_equal(f->calls, 3);
    /* Resolved once only. */
    assert_int_equal(highway_gate_resolve(f->h, a, HIGHWAY_REJECT, NULL, "bob", NULL, 11), -EALREADY);
    assert_int_equal(f->calls, 3);
    assert_int_equal(count(f, "gate_triggered"), count(f, "gate_resolved"));
}

/* C-5, C-6, S-6: a timeout runs the fallback (gate_timeout then gate_resolved, actor
 * "fallback"); queued gates that expire run theirs at once, oldest first. */
static void test_timeout_fifo(void **state)
{
    struct fx *f = *state;
    struct highway_gate *a = open_gate(f, POLICY_GATE_TASK_APPROVAL, "a", 2, POLICY_FALLBACK_APPROVE, 0,
                                       false);
    struct highway_gate *b = open_gate(f, POLICY_GATE_TASK_APPROVAL, "b", 1, POLICY_FALLBACK_REJECT, 100,
                                       false);
    struct highway_gate *c = open_gate(f, POLICY_GATE_TASK_APPROVAL, "c", 0, POLICY_FALLBACK_REJECT, 200,
                                       false);
    assert_int_equal(a->queue_position, 0);
    assert_int_equal(b->queue_position, 1);
    assert_int_equal(c->queue_position, 2);
    assert_ptr_equal(highway_gate_head(f->h), a);
    assert_int_equal(highway_next_deadline(f->h), 1100);
    char ida[HIGHWAY_ID_LEN], idb[HIGHWAY_ID_LEN];
    snprintf(ida, sizeof(ida), "%s", a->id);
    snprintf(idb, sizeof(idb), "%s", b->id);
    highway_tick(f->h, 999);
    assert_int_equal(f->calls, 0);
    highway_tick(f->h, 5000); /* both due: the older first */
    assert_int_equal(f->calls, 2);
    assert_string_equal(f->order[0], ida);
    assert_string_equal(f->order[1], idb);
    assert_int_equal(count(f, "gate_timeout"), 2);
    assert_string_equal(last_of(f, "gate_resolved")->actor, "fallback");
    /* The one with no timeout waits: it is the head now, and there is no deadline. */
    assert_ptr_equal(highway_gate_head(f->h), c);
    assert_int_equal(highway_next_deadline(f->h), UINT64_MAX);
}

/* S-7: after an escalate_to_coordinator fallback, the coordinator's re-trigger of the same
 * subject is converted to approve and recorded; another workspace's is not. */
static void test_reentry_guard(void **state)
{
    struct fx *f = *state;
    struct highway_gate *a = open_gate(f, POLICY_GATE_WORKSPACE_CREATE, "x", 1, POLICY_FALLBACK_ESCALATE,
                                       0, true);
    highway_tick(f->h, 1000);
    assert_int_equal(f->last, HIGHWAY_ESCALATE);
    (void)a;
    assert_null(
        open_gate(f, POLICY_GATE_WORKSPACE_CREATE, "x", 1, POLICY_FALLBACK_ESCALATE, 2000, true));
    const struct entry *e = last_of(f, "gate_reentry_blocked");
    assert_non_null(e);
    assert_string_equal(bstr(e, "converted_to"), "approve");
    assert_int_equal(highway_pending(f->h), 0);
    /* Not the coordinator: a gate as usual. Another subject: a gate as usual. */
    assert_non_null(
        open_gate(f, POLICY_GATE_WORKSPACE_CREATE, "x", 1, POLICY_FALLBACK_ESCALATE, 2000, false));
    assert_non_null(
        open_gate(f, POLICY_GATE_WORKSPACE_CREATE, "y", 1, POLICY_FALLBACK_ESCALATE, 2000, true));
}

/* S-8: the subject goes away: the gate resolves itself, reject, actor "protocol". */
static void test_invalidation(void **state)
{
    struct fx *f = *state;
    open_gate(f, POLICY_GATE_INTEGRATION, "a", 0, POLICY_FALLBACK_REJECT, 0, false);
    open_gate(f, POLICY_GATE_INTEGRATION, "b", 0, POLICY_FALLBACK_REJECT, 0, false);
    highway_invalidate(f->h, "ws-other", NULL, 10);
    assert_int_equal(f->calls, 0);
    highway_invalidate(f->h, "ws-1", NULL, 10);
    assert_int_equal(f->calls, 2);
    assert_int_equal(f->last, HIGHWAY_REJECT);
    const struct entry *r = last_of(f, "gate_resolved");
    assert_string_equal(r->actor, "protocol");
    assert_string_equal(bstr(r, "reason"), "subject_invalidated");
    assert_int_equal(highway_pending(f->h), 0);
}

/* Write-ahead: when the trail refuses, no gate opens and a pending one stays pending. */
static void test_write_ahead(void **state)
{
    struct fx *f = *state;
    struct highway_gate *a = open_gate(f, POLICY_GATE_TASK_APPROVAL, "a", 0, POLICY_FALLBACK_REJECT, 0,
                                       false);
    f->refuse = true;
    assert_null(open_gate(f, POLICY_GATE_TASK_APPROVAL, "b", 0, POLICY_FALLBACK_REJECT, 0, false));
    assert_int_equal(highway_gate_resolve(f->h, a, HIGHWAY_APPROVE, NULL, "alice", NULL, 1), -EIO);
    assert_true(a->pending);
    assert_int_equal(f->calls, 0);
    f->refuse = false;
    assert_int_equal(highway_gate_resolve(f->h, a, HIGHWAY_APPROVE, NULL, "alice", NULL, 1), 0);
    assert_int_equal(highway_pending(f->h), 0);
}

static struct highway_escalation *open_esc(struct fx *f, const char *id, const char *state, double t,
                                           enum policy_fallback fb)
{
    struct highway_esc_req r = {.signal_id = id,
                                .workspace = "ws-2",
                                .reason = "unclear",
                                .owner = "alice",
                                .owner_state = state,
                                .timeout = t,
                                .fallback = fb,
                                .fn = on_esc,
                                .fn_data = f};
    struct highway_escalation *x = NULL;
    return highway_esc_open(f->h, &r, &x) == 1 ? x : NULL;
}

/* S-4, S-5, S-10: the three responses; the timeout's fallback; delivery by user state. */
static void test_escalations(void **state)
{
    struct fx *f = *state;
    struct highway_escalation *a = open_esc(f, "sig-a", "active", 0, POLICY_FALLBACK_REJECT);
    assert_non_null(a);
    assert_false(a->queued);
    assert_int_equal(highway_esc_respond(f->h, a, HIGHWAY_RESP_ENVELOPE, NULL, "env-1", "alice", 1), 0);
    assert_int_equal(f->last_resp, HIGHWAY_RESP_ENVELOPE);
    assert_string_equal(bstr(last_of(f, "escalation_resolved"), "response_ref"), "env-1");
    struct highway_escalation *b = open_esc(f, "sig-b", "suspended", 0, POLICY_FALLBACK_REJECT);
    assert_true(b->queued);
    highway_esc_owner_active(f->h, "alice");
    assert_false(b->queued);
    assert_int_equal(highway_esc_respond(f->h, b, HIGHWAY_RESP_DELEGATION, NULL, NULL, "alice", 1), 0);
    assert_int_equal(f->last_resp, HIGHWAY_RESP_DELEGATION);
    assert_null(open_esc(f, "sig-c", "deactivated", 0, POLICY_FALLBACK_REJECT));
    assert_non_null(last_of(f, "capability_denied"));
    struct highway_escalation *d = open_esc(f, "sig-d", "blocked", 1, POLICY_FALLBACK_REJECT);
    assert_true(d->queued);
    highway_tick(f->h, 1000); /* the timeout runs whatever the user's state */
    assert_int_equal(f->last_resp, HIGHWAY_RESP_ABORT);
    assert_non_null(last_of(f, "escalation_timeout"));
    assert_string_equal(last_of(f, "escalation_resolved")->actor, "fallback");
    assert_int_equal(f->esc_calls, 3);
}

/* One workspace that emits escalations in a loop holds at most HIGHWAY_MAX_PENDING_PER_WS of
 * them waiting: the run's one queue keeps room for the other workspaces' escalations. */
static void test_escalation_flood(void **state)
{
    struct fx *f = *state;
    char id[32];
    size_t opened = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(id, sizeof(id), "sig-%d", i);
        struct highway_esc_req r = {.signal_id = id,
                                    .workspace = "ws-flood",
                                    .reason = "again",
                                    .owner = "alice",
                                    .owner_state = "active",
                                    .fn = on_esc,
                                    .fn_data = f};
        struct highway_escalation *x = NULL;
        int rc = highway_esc_open(f->h, &r, &x);
        assert_true(rc == 1 || rc == -EAGAIN);
        opened += rc == 1;
    }
    assert_int_equal(opened, HIGHWAY_MAX_PENDING_PER_WS);
    assert_non_null(open_esc(f, "sig-other", "active", 0, POLICY_FALLBACK_REJECT));
}

/* The MAC: any field changed, the sender changed, or another key: it fails. */
static void test_mac(void **state)
{
    (void)state;
    struct integrity_key k, k2;
    integrity_key_new(&k);
    integrity_key_new(&k2);
    cJSON *p = cJSON_Parse("{\"text\": \"do x\"}");
    struct integrity_field fs[] = {{.s = "env-1"},     {.s = "ws-a"}, {.s = "ws-b"},
                                   {.s = "directive"}, {.json = p},   {NULL, NULL}};
    char mac[INTEGRITY_HEX];
    assert_int_equal(integrity_mac(&k, "envelope", fs, 6, mac), 0);
    assert_true(integrity_check(&k, "envelope", fs, 6, mac));
    assert_false(integrity_check(&k2, "envelope", fs, 6, mac));
    assert_false(integrity_check(&k, "checkpoint", fs, 6, mac));
    fs[1].s = "ws-c";
    assert_false(integrity_check(&k, "envelope", fs, 6, mac));
    fs[1].s = "ws-a";
    cJSON_ReplaceItemInObject(p, "text", cJSON_CreateString("do y"));
    assert_false(integrity_check(&k, "envelope", fs, 6, mac));
    fs[5].s = ""; /* NULL and "" differ */
    cJSON_ReplaceItemInObject(p, "text", cJSON_CreateString("do x"));
    assert_false(integrity_check(&k, "envelope", fs, 6, mac));
    assert_false(integrity_check(&k, "envelope", fs, 6, "zz"));
    cJSON_Delete(p);
    integrity_key_wipe(&k);
    integrity_key_wipe(&k2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gate_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_three_actions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_fifo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reentry_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalidation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escalation_flood, setup, teardown),
        cmocka_unit_test(test_mac),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
