/* tests/unit/test_trail.c: the trail against real SQLite files: every event kind written and read
 * back, canonical bodies, blobs, the closed registry, append-only enforcement (triggers and the
 * writer's authorizer), tampering caught by verify, reading during writes, group commit. */
#include "supervisor/trail/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

static char *tmpdir_new(void)
{
    char tmpl[] = "/tmp/corral-trail-test.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void tmpdir_free(char *d)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
    free(d);
}

static char *path_in(const char *dir, const char *name)
{
    char *p = util_printf("%s/%s", dir, name);
    assert_non_null(p);
    return p;
}

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    return j;
}

static void append_json(struct trail *t, const char *ws, const char *actor, const char *type,
                        const char *body, uint64_t *seq)
{
    struct cerr err = {0};
    cJSON *b = parse(body);
    int r = trail_append(t, ws, actor, type, b, seq, &err);
    if (r != 0)
        fail_msg("append %s: %s", type, err.msg);
    cJSON_Delete(b);
}

static void commit_ok(struct trail *t)
{
    struct cerr err = {0};
    if (trail_commit(t, &err) != 0)
        fail_msg("commit: %s", err.msg);
}

/* A commit is acknowledged once it is in the ahead log; readers see it once the applier has put
 * it into SQLite (trail_sync waits for that). */
static void sync_ok(struct trail *t)
{
    struct cerr err = {0};
    if (trail_sync(t, &err) != 0)
        fail_msg("sync: %s", err.msg);
}

static struct trail *open_ok(const char *path, enum trail_durability d)
{
    struct cerr err = {0};
    struct trail *t = NULL;
    if (trail_open(path, d, &t, &err) != 0)
        fail_msg("open %s: %s", path, err.msg);
    return t;
}

static void verify_ok(const char *path, uint64_t want_count)
{
    struct cerr err = {0};
    uint64_t n = 0, bad_seq = 0;
    int r = trail_verify_file_count(path, &n, &bad_seq, &err);
    if (r != 0)
        fail_msg("verify %s: %d %s", path, r, err.msg);
    if (want_count)
        assert_int_equal(n, want_count);
}

/* ---- collecting query results ---------------------------------------------------------------- */

struct got {
    size_t n;
    uint64_t seq[4096];
    char *type[4096], *ws[4096], *actor[4096], *body[4096];
};

static int collect(const struct trail_entry *e, void *ctx)
{
    struct got *g = ctx;
    assert_true(g->n < 4096);
    g->seq[g->n] = e->seq;
    g->type[g->n] = strdup(e->type);
    g->ws[g->n] = e->workspace ? strdup(e->workspace) : NULL;
    g->actor[g->n] = strdup(e->actor);
    g->body[g->n] = strndup(e->body, e->body_len);
    g->n++;
    return 0;
}

static struct got *query(const char *path, const struct trail_filter *f)
{
    struct trail_reader *r = NULL;
    struct cerr err = {0};
    if (trail_reader_open(path, &r, &err) != 0)
        fail_msg("reader: %s", err.msg);
    struct got *g = calloc(1, sizeof(*g));
    assert_non_null(g);
    if (trail_query(r, f, collect, g, &err) != 0)
        fail_msg("query: %s", err.msg);
    trail_reader_close(r);
    return g;
}

static void got_free(struct got *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->type[i]);
        free(g->ws[i]);
        free(g->actor[i]);
        free(g->body[i]);
    }
    free(g);
}

/* ---- registry ------------------------------------------------------------------------------- */

static const char *const wacp_types[] = {
    "workspace_created",
    "workspace_state_changed",
    "workspace_rejected",
    "budget_warning",
    "budget_exceeded",
    "budget_modified",
    "liveness_warning",
    "priority_changed",
    "visibility_granted",
    "batch_abort",
    "batch_priority_changed",
    "migration_started",
    "migration_completed",
    "migration_failed",
    "suspension_started",
    "suspension_resumed",
    "graceful_termination_initiated",
    "graceful_termination_expired",
    "conflict_detected",
    "conflict_resolved",
    "workspace_ownership_transferred",
    "workspace_reparented",
    "user_created",
    "authentication_succeeded",
    "authentication_failed",
    "user_suspended",
    "user_resumed",
    "user_blocked",
    "user_unblocked",
    "user_deactivated",
    "user_reactivated",
    "capability_granted",
    "capability_revoked",
    "capability_denied",
    "signal_emitted",
    "signal_delivered",
    "envelope_created",
    "envelope_delivered",
    "envelope_rejected",
    "envelope_undeliverable",
    "envelope_redelivered",
    "port_right_created",
    "port_right_transferred",
    "port_right_revoked",
    "port_right_consumed",
    "checkpoint_created",
    "checkpoint_rejected",
    "resource_discrepancy",
    "task_created",
    "task_approved",
    "task_assigned",
    "task_status_changed",
    "task_completed",
    "task_failed",
    "graph_created",
    "integration_started",
    "integration_completed",
    "integration_aborted",
    "gate_triggered",
    "gate_resolved",
    "gate_timeout",
    "gate_reentry_blocked",
    "human_injection",
    "escalation_received",
    "escalation_resolved",
    "escalation_timeout",
    "system_degraded",
    "recovery_completed",
    "integrity_violation",
    "trail_compacted",
    "trail_access_denied",
    "trail_snapshot_created",
};

static void test_registry(void **state)
{
    (void)state;
    size_t n;
    const char *const *types = trail_event_types(&n);
    assert_int_equal(ARRAY_SIZE(wacp_types), 72);
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(types[i - 1], types[i]) < 0); /* sorted, no duplicate: bsearch works */
    for (size_t i = 0; i < ARRAY_SIZE(wacp_types); i++)
        assert_true(trail_event_known(wacp_types[i]));
    const char *own[] = {"trail_created",   "supervisor_started", "supervisor_stopped",
                         "sandbox_created", "process_started",    "process_exited",
                         "denial",          "tool_call",          "protocol_message",
                         "protocol_error",  "agent_log",          "network_connect",
                         "network_closed"};
    for (size_t i = 0; i < ARRAY_SIZE(own); i++)
        assert_true(trail_event_known(own[i]));
    assert_int_equal(n, 72 + ARRAY_SIZE(own));
    assert_false(trail_event_known("envelope_sent"));
    assert_false(trail_event_known(""));
    assert_false(trail_event_known(NULL));
    assert_false(trail_event_known("Tool_call"));
    assert_false(trail_event_known("tool_call "));
    enum trail_durability d = TRAIL_DURABILITY_NORMAL;
    assert_int_equal(trail_durability_parse("full", &d), 0);
    assert_int_equal(d, TRAIL_DURABILITY_FULL);
    assert_int_equal(trail_durability_parse("normal", &d), 0);
    assert_int_equal(d, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(trail_durability_parse("Full", &d), -EINVAL);
    assert_int_equal(trail_durability_parse(NULL, &d), -EINVAL);
}

/* ---- every kind of event, with its documented fields, read back ------------------------------- */

struct kind {
    const char *type, *ws, *actor, *body;
};

static const struct kind corral_kinds[] = {
    {"supervisor_started", NULL, "system",
     "{\"version\":\"0.1.0\",\"pid\":4242,\"command\":[\"corral\",\"exec\"],\"policy\":null,"
     "\"durability\":\"full\"}"},
    {"sandbox_created", "ws-1", "protocol",
     "{\"purpose\":\"agent\",\"profile\":{\"namespaces\":[\"user\",\"pid\",\"mount\",\"net\",\"ipc\","
     "\"uts\",\"cgroup\"],"
     "\"mounts\":[{\"source\":\"/usr\",\"target\":\"/usr\",\"flags\":[\"ro\",\"nosuid\",\"nodev\"]}],"
     "\"seccomp\":{\"default_action\":\"errno(EPERM)\",\"rules\":[{\"syscall\":\"ptrace\",\"action\":"
     "\"kill\"}]},"
     "\"budgets\":{\"memory_bytes\":536870912,\"pids\":64,\"cpus\":0.5,\"timeout_sec\":30},\"network\":"
     "\"none\"}}"},
    {"process_started", "ws-1", "protocol",
     "{\"pid\":1234,\"argv\":[\"./agent\",\"--fast\"],\"cwd\":\"/\",\"purpose\":\"agent\"}"},
    {"process_exited", "ws-1", "protocol",
     "{\"pid\":1234,\"status\":null,\"signal\":9,\"timed_out\":true,\"usage\":{\"cpu_user_us\":120000,"
     "\"cpu_system_us\":3000,\"max_rss_bytes\":10485760,\"wall_us\":30000000}}"},
    {"budget_warning", "ws-1", "protocol",
     "{\"workspace_id\":\"ws-1\",\"budget_dimension\":\"memory\",\"consumed\":429496729,\"limit\":"
     "536870912,\"threshold_percent\":80}"},
    {"budget_exceeded", "ws-1", "protocol",
     "{\"workspace_id\":\"ws-1\",\"budget_dimension\":\"memory\",\"consumed\":536870912,\"limit\":"
     "536870912}"},
    {"denial", "ws-1", "protocol",
     "{\"kind\":\"path\",\"subject\":\"../../etc/shadow\",\"rule\":\"workspace "
     "containment\",\"reason\":\"path_outside_workspace\"}"},
    {"tool_call", "ws-1", "worker",
     "{\"surface\":\"wap\",\"tool\":\"readFile\",\"arguments\":{\"path\":\"src/"
     "main.c\"},\"outcome\":\"ok\",\"request_bytes\":88,\"response_bytes\":4096,\"duration_us\":210,"
     "\"blobs\":[]}"},
    {"protocol_message", "ws-1", "worker",
     "{\"direction\":\"in\",\"method\":\"tools/call\",\"id\":7,\"bytes\":88}"},
    {"protocol_error", "ws-1", "protocol",
     "{\"code\":-32700,\"message\":\"Parse error\",\"bytes\":12,\"reason\":\"invalid JSON\"}"},
    {"agent_log", "ws-1", "worker",
     "{\"stream\":\"stderr\",\"bytes\":11,\"text\":\"hello\\nworld\",\"truncated\":false}"},
    {"supervisor_stopped", NULL, "system", "{\"reason\":\"agent exited\",\"status\":0}"},
    {"gate_resolved", "ws-1", "user-alice", "{\"gate_id\":\"g-1\",\"decision\":\"approved\"}"},
};

static void test_every_kind_read_back(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_FULL);
    uint64_t seq;
    for (size_t i = 0; i < ARRAY_SIZE(corral_kinds); i++)
        append_json(t, corral_kinds[i].ws, corral_kinds[i].actor, corral_kinds[i].type,
                    corral_kinds[i].body, &seq);
    /* every WACP type too, each in its own workspace chain or system-level */
    for (size_t i = 0; i < ARRAY_SIZE(wacp_types); i++) {
        char body[128];
        snprintf(body, sizeof(body), "{\"n\":%zu,\"event\":\"%s\"}", i, wacp_types[i]);
        append_json(t, i % 3 == 0 ? NULL : (i % 3 == 1 ? "ws-a" : "ws-b"), "protocol", wacp_types[i],
                    body, &seq);
    }
    assert_int_equal(trail_pending(t), ARRAY_SIZE(corral_kinds) + 72);
    commit_ok(t);
    assert_int_equal(trail_pending(t), 0);
    assert_int_equal(seq, 1 + ARRAY_SIZE(corral_kinds) + 72);
    assert_int_equal(trail_head_seq(t), seq);
    trail_close(t);

    struct got *g = query(db, NULL);
    assert_int_equal(g->n, seq);
    assert_string_equal(g->type[0], "trail_created");
    assert_string_equal(g->actor[0], "system");
    assert_null(g->ws[0]);
    cJSON *b0 = parse(g->body[0]);
    assert_string_equal(cJSON_GetObjectItem(b0, "hash_algorithm")->valuestring, "blake2b-256");
    assert_string_equal(cJSON_GetObjectItem(b0, "durability")->valuestring, "full");
    cJSON_Delete(b0);
    for (size_t i = 0; i < ARRAY_SIZE(corral_kinds); i++) {
        const struct kind *k = &corral_kinds[i];
        assert_int_equal(g->seq[i + 1], i + 2);
        assert_string_equal(g->type[i + 1], k->type);
        assert_string_equal(g->actor[i + 1], k->actor);
        if (k->ws)
            assert_string_equal(g->ws[i + 1], k->ws);
        else
            assert_null(g->ws[i + 1]);
        cJSON *want = parse(k->body), *have = parse(g->body[i + 1]);
        assert_true(cJSON_Compare(want, have, true)); /* every field, every value */
        cJSON_Delete(want);
        cJSON_Delete(have);
    }
    for (size_t i = 0; i < ARRAY_SIZE(wacp_types); i++) {
        size_t j = 1 + ARRAY_SIZE(corral_kinds) + i;
        assert_string_equal(g->type[j], wacp_types[i]);
        cJSON *have = parse(g->body[j]);
        assert_int_equal(cJSON_GetObjectItem(have, "n")->valueint, (int)i);
        cJSON_Delete(have);
    }
    got_free(g);

    /* filters: workspace (its local trail), type, actor, limit, after_seq */
    struct trail_filter f = {.workspace = "ws-1"};
    g = query(db, &f);
    assert_int_equal(g->n, 11);
    got_free(g);
    f = (struct trail_filter){.type = "process_exited"};
    g = query(db, &f);
    assert_int_equal(g->n, 1);
    assert_int_equal(g->seq[0], 5);
    got_free(g);
    f = (struct trail_filter){.actor = "user-alice"};
    g = query(db, &f);
    assert_int_equal(g->n, 1);
    assert_string_equal(g->type[0], "gate_resolved");
    got_free(g);
    f = (struct trail_filter){.limit = 3, .after_seq = 10};
    g = query(db, &f);
    assert_int_equal(g->n, 3);
    assert_int_equal(g->seq[0], 11);
    assert_int_equal(g->seq[2], 13);
    got_free(g);
    f = (struct trail_filter){.has_since = true, .since_us = 0, .has_until = true, .until_us = 1};
    g = query(db, &f);
    assert_int_equal(g->n, 0);
    got_free(g);
    verify_ok(db, seq);
    free(db);
    tmpdir_free(dir);
}

/* ---- canonical bodies and refused input ------------------------------------------------------ */

static void test_canonical_and_refusals(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    struct cerr err = {0};
    uint64_t s1, s2;
    append_json(t, "w", "worker", "tool_call",
                "{ \"b\": [1, 2.5, -0, 1e3, true, null], \"a\": {\"z\":\"\\u0001\\\"\\\\\", \"y\": 1} }",
                &s1);
    append_json(t, "w", "worker", "tool_call",
                "{\"a\":{\"y\":1,\"z\":\"\\u0001\\\"\\\\\"},\"b\":[1,2.5,0,1000,true,null]}", &s2);
    uint64_t s3;
    append_json(t, "w", "worker", "tool_call", "{\"k\":2,\"a\":0,\"k\":1}",
                &s3); /* duplicates keep their order */
    /* no body: {} */
    assert_int_equal(trail_append(t, NULL, "system", "agent_log", NULL, NULL, &err), 0);

    /* refusals: none degrades the trail */
    cJSON *arr = cJSON_CreateArray();
    assert_int_equal(trail_append(t, "w", "worker", "tool_call", arr, NULL, &err), -EINVAL);
    cJSON_Delete(arr);
    cJSON *raw = cJSON_CreateObject();
    cJSON_AddRawToObject(raw, "x", "{not json");
    assert_int_equal(trail_append(t, "w", "worker", "tool_call", raw, NULL, &err), -EINVAL);
    cJSON_Delete(raw);
    assert_int_equal(trail_append(t, "w", "worker", "envelope_sent", NULL, NULL, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "unknown event type 'envelope_sent'"));
    assert_int_equal(trail_append(t, "w", "", "tool_call", NULL, NULL, &err), -EINVAL);
    assert_int_equal(trail_append(t, "w", "bad\nactor", "tool_call", NULL, NULL, &err), -EINVAL);
    assert_int_equal(trail_append(t, "", "worker", "tool_call", NULL, NULL, &err), -EINVAL);
    char *big = malloc(TRAIL_BODY_MAX + 10);
    memset(big, 'x', TRAIL_BODY_MAX + 9);
    big[TRAIL_BODY_MAX + 9] = '\0';
    cJSON *bb = cJSON_CreateObject();
    cJSON_AddStringToObject(bb, "text", big);
    assert_int_equal(trail_append(t, "w", "worker", "agent_log", bb, NULL, &err), -E2BIG);
    assert_non_null(strstr(err.msg, "blob"));
    cJSON_Delete(bb);
    free(big);
    /* deep nesting past the bound */
    cJSON *deep = cJSON_CreateObject(), *cur = deep;
    for (int i = 0; i < 1100; i++)
        cur = cJSON_AddObjectToObject(cur, "d");
    assert_int_equal(trail_append(t, "w", "worker", "tool_call", deep, NULL, &err), -EINVAL);
    cJSON_Delete(deep);
    assert_false(trail_degraded(t));
    commit_ok(t);
    trail_close(t);

    struct got *g = query(db, NULL);
    assert_int_equal(g->n, 5);
    assert_string_equal(g->body[1],
                        "{\"a\":{\"y\":1,\"z\":\"\\u0001\\\"\\\\\"},\"b\":[1,2.5,0,1000,true,null]}");
    assert_string_equal(g->body[1], g->body[2]); /* same value, same bytes, whatever the input order */
    assert_string_equal(g->body[3], "{\"a\":0,\"k\":2,\"k\":1}");
    assert_string_equal(g->body[4], "{}");
    got_free(g);
    verify_ok(db, 5);
    free(db);
    tmpdir_free(dir);
}

/* ---- blobs ---------------------------------------------------------------------------------- */

static int count_blobs(const char *h, const void *d, size_t n, void *ctx)
{
    (void)h;
    (void)d;
    (void)n;
    (*(int *)ctx)++;
    return 0;
}

static void test_blobs(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_FULL);
    struct cerr err = {0};
    char h1[65], h2[65], h3[65];
    const char content[] = "int main(void) { return 0; }\n";
    assert_int_equal(trail_blob_put(t, content, sizeof(content) - 1, h1, &err), 0);
    assert_int_equal(trail_blob_put(t, content, sizeof(content) - 1, h2, &err), 0);
    assert_int_equal(trail_blob_put(t, "", 0, h3, &err), 0);
    assert_string_equal(h1, h2);
    uint8_t want[32];
    char want_hex[65];
    crypto_generichash(want, sizeof(want), (const uint8_t *)content, sizeof(content) - 1, NULL, 0);
    sodium_bin2hex(want_hex, sizeof(want_hex), want, sizeof(want));
    assert_string_equal(h1, want_hex); /* what b2sum -l 256 prints */
    char body[256];
    snprintf(body, sizeof(body), "{\"tool\":\"readFile\",\"outcome\":\"ok\",\"content_blob\":\"%s\"}",
             h1);
    append_json(t, "w", "worker", "tool_call", body, NULL);
    /* references must name blobs this trail holds; a wrong one is refused, not degrading */
    const char *refused[] = {
        "{\"content_blob\":\"00000000000000000000000000000000000000000000000000000000000000ff\"}",
        "{\"blob\":\"XYZ\"}",
        "{\"nested\":{\"output_blob\":42}}",
        "{\"blobs\":\"not a list\"}",
        "{\"blobs\":[\"00000000000000000000000000000000000000000000000000000000000000ff\"]}",
    };
    for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
        cJSON *b = parse(refused[i]);
        if (trail_append(t, "w", "worker", "tool_call", b, NULL, &err) != -EINVAL ||
            !strstr(err.msg, "blob"))
            fail_msg("accepted %s", refused[i]);
        cJSON_Delete(b);
    }
    assert_false(trail_degraded(t));
    snprintf(body, sizeof(body),
             "{\"blob\":null,\"deep\":[{\"output_blob\":\"%s\"}],\"blobs\":[\"%s\",\"%s\"]}", h1, h1,
             h3);
    append_json(t, "w", "worker", "tool_call", body, NULL);
    commit_ok(t);
    trail_close(t);

    struct trail_reader *r = NULL;
    assert_int_equal(trail_reader_open(db, &r, &err), 0);
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(trail_blob_get(r, h1, &data, &len, &err), 0);
    assert_int_equal(len, sizeof(content) - 1);
    assert_memory_equal(data, content, len);
    free(data);
    assert_int_equal(trail_blob_get(r, h3, &data, &len, &err), 0);
    assert_int_equal(len, 0);
    free(data);
    assert_int_equal(trail_blob_get(r,
                                    "00000000000000000000000000000000000000000000000000000000000000ff",
                                    &data, &len, &err),
                     -ENOENT);
    assert_int_equal(trail_blob_get(r, "xyz", &data, &len, &err), -EINVAL);
    int n = 0;
    assert_int_equal(trail_blobs_each(r, count_blobs, &n, &err), 0);
    assert_int_equal(n, 2); /* deduplicated */
    trail_reader_close(r);
    verify_ok(db, 3);
    free(db);
    tmpdir_free(dir);
}

/* ---- append-only: triggers for everyone, the authorizer for the writer ------------------------ */

static void test_update_delete_refused(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_FULL);
    char h[65];
    struct cerr err = {0};
    append_json(t, "w", "worker", "tool_call", "{\"x\":1}", NULL);
    assert_int_equal(trail_blob_put(t, "abc", 3, h, &err), 0);
    commit_ok(t);

    /* the writer's own connection: the authorizer refuses at prepare time */
    sqlite3 *w = trail_db_handle(t);
    const char *writer_sql[] = {"UPDATE entries SET body = '{}' WHERE seq = 2",
                                "DELETE FROM entries WHERE seq = 2",
                                "DELETE FROM blobs",
                                "DROP TRIGGER entries_no_update",
                                "DROP TABLE entries",
                                "CREATE TABLE x (a)",
                                "ATTACH '/tmp/x.db' AS x",
                                "PRAGMA writable_schema=1"};
    for (size_t i = 0; i < ARRAY_SIZE(writer_sql); i++) {
        int rc = sqlite3_exec(w, writer_sql[i], NULL, NULL, NULL);
        if (rc != SQLITE_AUTH)
            fail_msg("writer ran '%s': %d %s", writer_sql[i], rc, sqlite3_errmsg(w));
    }

    /* any other connection to the file: the triggers refuse */
    sqlite3 *o = NULL;
    assert_int_equal(sqlite3_open(db, &o), SQLITE_OK);
    sqlite3_busy_timeout(o, 5000);
    const char *other_sql[] = {"UPDATE entries SET body = '{}' WHERE seq = 2",
                               "DELETE FROM entries WHERE seq = 2",
                               "DELETE FROM entries",
                               "UPDATE blobs SET data = x'00'",
                               "DELETE FROM blobs",
                               "INSERT OR REPLACE INTO entries SELECT * FROM entries WHERE seq = 2",
                               "INSERT OR REPLACE INTO blobs SELECT hash, size, x'00' FROM blobs",
                               "INSERT INTO entries SELECT * FROM entries WHERE seq = 2 ON CONFLICT "
                               "(seq) DO UPDATE SET body = '{}'"};
    for (size_t i = 0; i < ARRAY_SIZE(other_sql); i++) {
        char *msg = NULL;
        int rc = sqlite3_exec(o, other_sql[i], NULL, NULL, &msg);
        if (rc != SQLITE_CONSTRAINT || !msg || !strstr(msg, "append-only"))
            fail_msg("'%s' was not refused: %d %s", other_sql[i], rc, msg ? msg : "");
        sqlite3_free(msg);
    }
    sqlite3_close(o);
    /* a reader connection cannot write at all */
    sqlite3 *ro = NULL;
    assert_int_equal(trail_db_open_readonly(db, &ro, &err), 0);
    assert_int_equal(sqlite3_exec(ro, "INSERT INTO blobs VALUES (x'00', 1, x'00')", NULL, NULL, NULL),
                     SQLITE_READONLY);
    sqlite3_close(ro);
    /* the trail still holds and still takes appends */
    append_json(t, "w", "worker", "tool_call", "{\"x\":2}", NULL);
    commit_ok(t);
    trail_close(t);
    verify_ok(db, 3);
    free(db);
    tmpdir_free(dir);
}

/* ---- tampering ------------------------------------------------------------------------------- */

#define TAMPER_ENTRIES 400

/* A trail with system entries, many workspaces interleaved, and a blob referenced by entry 77. */
static void make_trail(const char *db)
{
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    struct cerr err = {0};
    char h[65];
    for (int i = 2; i <= TAMPER_ENTRIES; i++) {
        char ws[16], body[256];
        snprintf(ws, sizeof(ws), "ws-%d", i % 7);
        if (i == 77) {
            assert_int_equal(trail_blob_put(t, "the file's contents\n", 20, h, &err), 0);
            snprintf(body, sizeof(body), "{\"tool\":\"readFile\",\"content_blob\":\"%s\"}", h);
        } else if (i == 90) {
            char h2[65];
            assert_int_equal(trail_blob_put(t, "second blob", 11, h2, &err), 0);
            snprintf(body, sizeof(body), "{\"tool\":\"executeCommand\",\"blobs\":[\"%s\",\"%s\"]}", h,
                     h2);
        } else {
            snprintf(body, sizeof(body),
                     "{\"tool\":\"readFile\",\"path\":\"src/file_%d.c\",\"bytes\":%d}", i, i * 10);
        }
        append_json(t, i % 11 == 0 ? NULL : ws, i % 11 == 0 ? "protocol" : "worker",
                    i % 11 == 0 ? "protocol_error" : "tool_call", body, NULL);
        if (i % 37 == 0)
            commit_ok(t);
    }
    commit_ok(t);
    trail_close(t);
}

struct tamper {
    const char *name;
    const char *sql;
    uint64_t bad_seq;
    const char *why; /* a word of the reason */
    /* the damaged entries (content against hash, links intact) verify lists apart: 0 not
     * checked, else that many and nothing else wrong; -1: the first bad one is listed, and
     * another check failed too */
    int damaged;
};

static const struct tamper tampers[] = {
    {"a changed byte in a body",
     "UPDATE entries SET body = replace(body, 'file_120', 'file_12O') WHERE seq = 120", 120,
     "hash does not match", 1},
    {"a changed actor", "UPDATE entries SET actor = 'coordinator' WHERE seq = 200", 200,
     "hash does not match", 1},
    {"bodies changed on both sides of a range boundary and on the last entry",
     "UPDATE entries SET body = '{}' WHERE seq IN (100, 101, 300, 400)", 100, "hash does not match",
     4},
    {"a changed timestamp", "UPDATE entries SET ts = ts + 1 WHERE seq = 201", 201,
     "hash does not match", 0},
    {"a changed workspace", "UPDATE entries SET workspace = 'ws-1' WHERE seq = 202", 202, "does not", 0},
    {"a changed byte in a hash", "UPDATE entries SET hash = zeroblob(32) WHERE seq = 150", 150,
     "hash does not match", -1},
    {"a changed body before a changed prev_hash",
     "UPDATE entries SET body = '{}' WHERE seq = 140; UPDATE entries SET prev_hash = zeroblob(32) "
     "WHERE seq = 260",
     140, "hash does not match", -1},
    {"a hash of the wrong size", "UPDATE entries SET hash = zeroblob(31) WHERE seq = 151", 151,
     "32-byte", 0},
    {"a changed prev_hash", "UPDATE entries SET prev_hash = zeroblob(32) WHERE seq = 160", 160,
     "prev_hash", 0},
    {"a changed local_prev", "UPDATE entries SET local_prev = zeroblob(32) WHERE seq = 170", 170,
     "local_prev", 0},
    {"a deleted row", "DELETE FROM entries WHERE seq = 180", 180, "missing", 0},
    {"deleted rows at a range boundary", "DELETE FROM entries WHERE seq BETWEEN 100 AND 101", 100,
     "missing", 0},
    {"two rows swapped",
     "UPDATE entries SET seq = -1 WHERE seq = 190; UPDATE entries SET seq = 190 WHERE seq = 191; UPDATE "
     "entries SET seq = 191 WHERE seq = -1",
     190, "prev_hash", 0},
    {"a row moved before the start", "UPDATE entries SET seq = 0 WHERE seq = 1", 1, "1", 0},
    {"an unknown type", "UPDATE entries SET type = 'envelope_sent' WHERE seq = 210", 210,
     "unknown event type", 0},
    {"a tampered blob", "UPDATE blobs SET data = zeroblob(size)", 77, "does not match its hash", 0},
    {"a tampered blob named only in a list",
     "UPDATE blobs SET data = CAST('SECOND blob' AS BLOB) WHERE size = 11", 90,
     "does not match its hash", 0},
    {"a deleted blob", "DELETE FROM blobs WHERE size = 20", 77, "missing from the trail", 0},
    {"a deleted blob named in a list", "DELETE FROM blobs WHERE size = 11", 90,
     "missing from the trail", 0},
    {"every blob deleted", "DELETE FROM blobs", 77, "missing from the trail", 0},
    {"a deleted first entry", "DELETE FROM entries WHERE seq = 1", 1, "missing", 0},
    {"the whole tail rewritten from a deleted row on",
     "DELETE FROM entries WHERE seq = 300; UPDATE entries SET seq = seq - 1 WHERE seq > 300", 300,
     "hash does not match", 0},
};

static void tamper_one(const char *dir, const char *clean, const struct tamper *tp, int ranges)
{
    char *db = path_in(dir, "tampered.db");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "rm -f '%s' '%s-wal' '%s-shm' && cp '%s' '%s'", db, db, db, clean, db);
    assert_int_equal(system(cmd), 0);
    /* an attacker with the file: drop the triggers, change what they like */
    sqlite3 *a = NULL;
    assert_int_equal(sqlite3_open(db, &a), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(a,
                     "DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;"
                     "DROP TRIGGER blobs_no_update; DROP TRIGGER blobs_no_delete;",
                     NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(a, tp->sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", tp->name, msg ? msg : "");
    assert_true(sqlite3_changes(a) > 0);
    sqlite3_close(a);
    struct cerr err = {0};
    uint64_t n = 0, bad_seq = 0;
    struct trail_damage d;
    int r = trail_verify_ranges_damage(db, ranges, 1, &n, &bad_seq, &d, &err);
    if (tp->damaged > 0 && (d.n != (size_t)tp->damaged || d.other || d.more || d.seq[0] != tp->bad_seq))
        fail_msg("%s (%d ranges): %zu damaged (first %llu), other %d; want %d, none", tp->name, ranges,
                 d.n, (unsigned long long)(d.n ? d.seq[0] : 0), d.other, tp->damaged);
    if (tp->damaged < 0 && (!d.n || !d.other || d.seq[0] != tp->bad_seq))
        fail_msg("%s (%d ranges): %zu damaged, other %d; want entry %llu damaged and other damage",
                 tp->name, ranges, d.n, d.other, (unsigned long long)tp->bad_seq);
    if (r != 1 || bad_seq != tp->bad_seq || !strstr(err.msg, tp->why))
        fail_msg("%s (%d ranges): verify gave %d, entry %llu, '%s'; want 1, entry %llu, '%s'", tp->name,
                 ranges, r, (unsigned long long)bad_seq, err.msg, (unsigned long long)tp->bad_seq,
                 tp->why);
    free(db);
}

static void test_tampering_caught(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *clean = path_in(dir, "clean.db");
    make_trail(clean);
    for (int ranges = 1; ranges <= 4; ranges++) {
        uint64_t n = 0, bad_seq = 0;
        struct cerr err = {0};
        if (trail_verify_ranges(clean, ranges, 1, &n, &bad_seq, &err) != 0)
            fail_msg("clean trail, %d ranges: %s", ranges, err.msg);
        assert_int_equal(n, TAMPER_ENTRIES);
    }
    /* 4 ranges over 400 entries end at 100, 200, 300: several tampers sit on a boundary */
    for (size_t i = 0; i < ARRAY_SIZE(tampers); i++) {
        tamper_one(dir, clean, &tampers[i], 1);
        tamper_one(dir, clean, &tampers[i], 4);
        tamper_one(dir, clean, &tampers[i], 3);
    }
    free(clean);
    tmpdir_free(dir);
}

/* ---- readers during writes; group commit; reopen --------------------------------------------- */

static void test_read_while_writing(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_FULL);
    for (int i = 0; i < 10; i++)
        append_json(t, "w", "worker", "tool_call", "{\"i\":1}", NULL);
    commit_ok(t);
    sync_ok(t);
    struct trail_reader *r = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_reader_open(db, &r, &err), 0);
    struct got *g = calloc(1, sizeof(*g));
    assert_int_equal(trail_query(r, NULL, collect, g, &err), 0);
    assert_int_equal(g->n, 11);
    got_free(g);
    /* staged, not committed: invisible to readers; verify still passes on what is committed */
    for (int i = 0; i < 5; i++)
        append_json(t, "w", "worker", "tool_call", "{\"i\":2}", NULL);
    g = calloc(1, sizeof(*g));
    assert_int_equal(trail_query(r, NULL, collect, g, &err), 0);
    assert_int_equal(g->n, 11);
    got_free(g);
    verify_ok(db, 11);
    commit_ok(t);
    sync_ok(t);
    g = calloc(1, sizeof(*g));
    assert_int_equal(trail_query(r, NULL, collect, g, &err), 0);
    assert_int_equal(g->n, 16);
    got_free(g);
    trail_reader_close(r);
    /* staged entries dropped at close: their effects never happened */
    for (int i = 0; i < 3; i++)
        append_json(t, "w", "worker", "tool_call", "{\"i\":3}", NULL);
    trail_close(t);
    verify_ok(db, 16);
    /* reopen: sequence and the workspace's local chain continue */
    t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(trail_head_seq(t), 16);
    uint64_t seq;
    append_json(t, "w", "worker", "tool_call", "{\"i\":4}", &seq);
    append_json(t, "new-ws", "worker", "tool_call", "{\"i\":4}", NULL);
    commit_ok(t);
    assert_int_equal(seq, 17);
    trail_close(t);
    verify_ok(db, 18);
    struct trail_filter f = {.workspace = "w"};
    g = query(db, &f);
    assert_int_equal(g->n, 16);
    got_free(g);
    free(db);
    tmpdir_free(dir);
}

/* ---- the workspace index: sorted runs plus a scanned tail give what a full scan gives ---------- */

static int64_t sql_int(const char *db, const char *sql)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(c, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return v;
}

/* Sequence numbers of a workspace's entries by a plain scan of entries, no index involved. */
static size_t scan_ws(const char *db, const char *ws, uint64_t *out, size_t cap)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    assert_int_equal(sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(c, "SELECT seq FROM entries NOT INDEXED WHERE workspace = ?1 ORDER BY seq",
                           -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_text(st, 1, ws, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW && n < cap)
        out[n++] = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(c);
    return n;
}

static void test_workspace_index(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    uint64_t i = 0;
    for (int session = 0; session < 5; session++) { /* reopen: the unindexed tail is picked up again */
        struct trail *t = open_ok(db, session % 2 ? TRAIL_DURABILITY_NORMAL : TRAIL_DURABILITY_FULL);
        for (int k = 0; k < 2000; k++, i++) {
            char ws[16], body[64];
            snprintf(ws, sizeof(ws), "ws-%llu", (unsigned long long)(i * 7 % 5));
            snprintf(body, sizeof(body), "{\"i\":%llu}", (unsigned long long)i);
            append_json(t, i % 9 == 0 ? NULL : ws, "worker", i % 9 == 0 ? "protocol_error" : "tool_call",
                        body, NULL);
            if (k % 13 == 12)
                commit_ok(t);
        }
        commit_ok(t);
        trail_close(t);
    }
    int64_t mark = sql_int(db, "SELECT max(upto) FROM ws_index_marks");
    char q[160];
    snprintf(q, sizeof(q), "SELECT count(*) FROM entries WHERE workspace IS NOT NULL AND seq <= %lld",
             (long long)mark);
    assert_true(mark > TRAIL_INDEX_RUN);
    assert_true(mark < 10001);
    assert_int_equal(sql_int(db, "SELECT count(*) FROM ws_index"), sql_int(db, q));
    verify_ok(db, 10001);

    static uint64_t want[4096];
    for (int w = 0; w < 5; w++) {
        char ws[16];
        snprintf(ws, sizeof(ws), "ws-%d", w);
        size_t n = scan_ws(db, ws, want, ARRAY_SIZE(want));
        assert_true(n > 1500);
        uint64_t afters[] = {0, (uint64_t)mark - 20, (uint64_t)mark, (uint64_t)mark + 3, 9990};
        for (size_t a = 0; a < ARRAY_SIZE(afters); a++) {
            for (uint64_t limit = 0; limit <= 40; limit += 40) {
                struct trail_filter f = {.workspace = ws, .after_seq = afters[a], .limit = limit};
                struct got *g = query(db, &f);
                size_t j = 0;
                while (j < n && want[j] <= afters[a])
                    j++;
                size_t expect = n - j;
                if (limit && expect > limit)
                    expect = limit;
                if (g->n != expect)
                    fail_msg("%s after %llu limit %llu: %zu entries, want %zu", ws,
                             (unsigned long long)afters[a], (unsigned long long)limit, g->n, expect);
                for (size_t m = 0; m < g->n; m++)
                    assert_int_equal(g->seq[m], want[j + m]);
                got_free(g);
            }
        }
    }
    /* a damaged index is caught by verify, and cannot add foreign entries to a query */
    char *bad = path_in(dir, "bad.db");
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", db, bad);
    assert_int_equal(system(cmd), 0);
    sqlite3 *c = NULL;
    assert_int_equal(sqlite3_open(bad, &c), SQLITE_OK);
    assert_int_equal(sqlite3_exec(c,
                                  "DROP TRIGGER ws_index_no_delete; DELETE FROM ws_index WHERE seq = "
                                  "(SELECT min(seq) FROM ws_index WHERE workspace = 'ws-2');"
                                  "INSERT INTO ws_index VALUES ('ws-2', 1)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(c);
    struct cerr err = {0};
    uint64_t cnt = 0, bad_seq = 99;
    assert_int_equal(trail_verify_file_count(bad, &cnt, &bad_seq, &err), 1);
    assert_int_equal(bad_seq, 0);
    assert_non_null(strstr(err.msg, "workspace index"));
    struct trail_filter f = {.workspace = "ws-2"};
    struct got *g = query(bad, &f);
    for (size_t m = 0; m < g->n; m++)
        assert_string_equal(g->ws[m], "ws-2"); /* entry 1 is trail_created: not let in */
    got_free(g);
    free(bad);
    free(db);
    tmpdir_free(dir);
}

static void test_one_writer(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *a = open_ok(db, TRAIL_DURABILITY_FULL);
    struct stat sb;
    assert_int_equal(stat(db, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600); /* it holds file contents: owner only */
    /* A second writer is refused at open, naming the lock its ahead log holds: appending from
     * two would fork the chain. */
    struct trail *b = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_open(db, TRAIL_DURABILITY_FULL, &b, &err), -EBUSY);
    assert_null(b);
    assert_non_null(strstr(err.msg, "being written by another corral process"));
    append_json(a, "w", "worker", "tool_call", "{\"by\":\"a\"}", NULL);
    commit_ok(a);
    /* A process that writes the file behind the writer's back (raw SQLite) is still caught:
     * the applier finds the file's head is not its own and the trail degrades. */
    sync_ok(a);
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_exec(raw,
                                  "INSERT INTO entries (seq, id, ts, actor, type, body, hash) VALUES "
                                  "(3, 'x-3', 1, 'system', 'trail_created', '{}', zeroblob(32))",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(raw);
    append_json(a, "w", "worker", "tool_call", "{\"by\":\"a\"}", NULL);
    commit_ok(a);
    assert_int_equal(trail_sync(a, &err), -EIO);
    assert_true(trail_degraded(a));
    assert_non_null(strstr(trail_degraded_why(a), "another process wrote"));
    trail_close(a);
    /* Its committed entry stays in the ahead log; the file, written by someone else, fails
     * verification, and the next writer says why it cannot apply it. */
    free(db);
    tmpdir_free(dir);
}

/* Crash recovery through the ahead log: a child writer commits batches its applier is held
 * from putting into SQLite (so they are only in the ahead log, acknowledged) and dies without
 * closing. The next writer applies them; a record cut short by the crash is not applied, and
 * neither is anything after a damaged one. */
static int64_t sqlite_count(const char *db)
{
    sqlite3 *raw;
    int64_t n = -1;
    sqlite3_stmt *st;
    if (sqlite3_open_v2(db, &raw, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(raw, "SELECT count(*) FROM entries", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(raw);
    return n;
}

/* A writer that commits BATCHES batches (a blob and three entries each: content tagged TAG,
 * so two writers' records differ in their bytes and not in their lengths) with its applier
 * held, and dies without closing. */
static void crash_writer(const char *db, int batches, enum trail_durability d, const char *tag)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct trail *t = NULL;
        struct cerr err = {0};
        if (trail_open(db, d, &t, &err) < 0)
            _exit(2);
        trail_applier_hold(t, true);
        for (int b = 0; b < batches; b++) {
            char hex[65], body[160];
            char data[64];
            snprintf(data, sizeof(data), "content %s%s%d", tag, *tag ? " " : "", b);
            if (trail_blob_put(t, data, strlen(data), hex, &err) < 0)
                _exit(3);
            snprintf(body, sizeof(body), "{\"b\":%d,\"content_blob\":\"%s\"}", b, hex);
            cJSON *j = cJSON_Parse(body);
            for (int k = 0; k < 3; k++)
                if (trail_append(t, k == 1 ? NULL : "w", "worker", "tool_call", j, NULL, &err) < 0)
                    _exit(4);
            cJSON_Delete(j);
            if (trail_commit(t, &err) < 0)
                _exit(5);
        }
        _exit(0); /* no trail_close: a crash */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void crash_after(const char *db, int batches, enum trail_durability d)
{
    crash_writer(db, batches, d, "");
}

/* The ahead log's segments are root's writes beside the trail: a symbolic link or a hard link
 * planted in their place would send them over another file. */
static void test_ahead_no_links(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db"), *victim = path_in(dir, "victim");
    char *seg = path_in(dir, "t.db-ahead"), *seg2 = path_in(dir, "t.db-ahead2");
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_int_equal(symlink(victim, seg2), 0);
    assert_true(trail_open(db, TRAIL_DURABILITY_FULL, &t, &err) < 0);
    assert_null(t);
    unlink(seg2);
    unlink(seg); /* made by the refused open, empty */
    assert_int_equal(link(victim, seg), 0);
    err = (struct cerr){0};
    assert_int_equal(trail_open(db, TRAIL_DURABILITY_FULL, &t, &err), -EPERM);
    assert_non_null(strstr(err.msg, "one link"));
    unlink(seg);
    f = fopen(victim, "r");
    char line[32] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_string_equal(line, "precious\n");
    t = open_ok(db, TRAIL_DURABILITY_FULL);
    trail_close(t);
    verify_ok(db, 1);
    free(seg);
    free(seg2);
    free(victim);
    free(db);
    tmpdir_free(dir);
}

static int deny_all(void *u, int action, const char *a, const char *b, const char *c, const char *d)
{
    (void)u, (void)action, (void)a, (void)b, (void)c, (void)d;
    return SQLITE_DENY;
}

/* SQLite refuses the applier's transaction: the batches already committed stay (the ahead log,
 * the applier's queue) and reach the file after trail_retry; a batch staged meanwhile is
 * refused at its commit and dropped, never written later (the caller was told it failed: corral
 * run records its model's entries again after system_degraded, and they must not be there
 * twice). */
static void test_applier_failure(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_FULL);
    struct cerr err = {0};
    trail_applier_hold(t, true);
    assert_int_equal(sqlite3_set_authorizer(trail_db_handle(t), deny_all, NULL), SQLITE_OK);
    append_json(t, "w", "worker", "tool_call", "{\"n\":\"a\"}", NULL);
    commit_ok(t); /* acknowledged: in the ahead log */
    append_json(t, "w", "worker", "tool_call", "{\"n\":\"b\"}", NULL); /* staged */
    trail_applier_hold(t, false);
    assert_int_equal(trail_sync(t, &err), -EIO);
    assert_true(trail_degraded(t));
    assert_non_null(strstr(trail_degraded_why(t), "authorization denied"));
    err = (struct cerr){0};
    assert_int_equal(trail_commit(t, &err), -EIO); /* b is refused, and dropped */
    assert_non_null(strstr(err.msg, "cannot be written"));
    assert_int_equal(trail_pending(t), 0);
    assert_int_equal(trail_retry(t, &err), -EIO); /* SQLite still refuses */
    assert_int_equal(sqlite3_set_authorizer(trail_db_handle(t), NULL, NULL), SQLITE_OK);
    err = (struct cerr){0};
    if (trail_retry(t, &err) != 0)
        fail_msg("retry: %s", err.msg);
    assert_false(trail_degraded(t));
    append_json(t, "w", "worker", "tool_call", "{\"n\":\"c\"}", NULL);
    commit_ok(t);
    trail_close(t);
    verify_ok(db, 3);
    struct trail_reader *r = NULL;
    assert_int_equal(trail_reader_open(db, &r, &err), 0);
    struct got *g = calloc(1, sizeof(*g));
    assert_int_equal(trail_query(r, NULL, collect, g, &err), 0);
    assert_int_equal(g->n, 3);
    assert_non_null(strstr(g->body[1], "\"a\""));
    assert_non_null(strstr(g->body[2], "\"c\""));
    got_free(g);
    trail_reader_close(r);
    free(db);
    tmpdir_free(dir);
}

static void test_ahead_recovery(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db"), *seg = path_in(dir, "t.db-ahead");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_FULL);
    trail_close(t);
    struct stat sb;
    assert_int_equal(stat(seg, &sb), -1); /* a clean close leaves no ahead log */
    assert_true(trail_ahead_left(db) == false);

    crash_after(db, 5, TRAIL_DURABILITY_FULL);
    assert_int_equal(sqlite_count(db), 1); /* 15 acknowledged entries are only in the ahead log */
    assert_true(trail_ahead_left(db));
    t = open_ok(db, TRAIL_DURABILITY_FULL);
    assert_int_equal(trail_head_seq(t), 16);
    append_json(t, "w", "worker", "tool_call", "{\"after\":true}", NULL);
    commit_ok(t);
    trail_close(t);
    verify_ok(db, 17);
    assert_int_equal(sqlite_count(db), 17);

    /* A record cut short: the crash came in the middle of its write (never acknowledged). */
    crash_after(db, 3, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(stat(seg, &sb), 0);
    assert_int_equal(truncate(seg, sb.st_size - 7), 0);
    t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(trail_head_seq(t), 17 + 6); /* the first two batches, not the third */
    trail_close(t);
    verify_ok(db, 23);

    /* Damage in the second of three records: the first is applied, nothing from it on. */
    crash_after(db, 3, TRAIL_DURABILITY_NORMAL);
    int fd = open(seg, O_RDWR);
    assert_true(fd >= 0);
    uint8_t buf[4096];
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    assert_true(n > 64);
    uint64_t len0 = 0;
    for (int k = 0; k < 8; k++)
        len0 |= (uint64_t)buf[8 + k] << (8 * k);
    char *at = memmem(buf + len0, (size_t)n - len0, "\"b\":1", 5);
    assert_non_null(at);
    at[4] = '7'; /* the body no longer matches the entry's hash */
    assert_int_equal(pwrite(fd, buf, (size_t)n, 0), n);
    close(fd);
    t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(trail_head_seq(t), 23 + 3);
    trail_close(t);
    verify_ok(db, 26);
    free(seg);
    free(db);
    tmpdir_free(dir);
}

/* The file's last entry: its seq, and its hash in HASH. */
static uint64_t last_entry(sqlite3 *raw, uint8_t hash[TRAIL_HASH_LEN])
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(raw, "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);
    memcpy(hash, sqlite3_column_blob(st, 1), TRAIL_HASH_LEN);
    sqlite3_finalize(st);
    return seq;
}

/* The event loop does not hash: an entry's links and hash are zeros in its ahead-log record (the
 * applier fills them in memory, recovery from the record read back), and the record carries a
 * checksum instead. A record of the format before ("CRA1", written with its hashes and no
 * checksum) that a writer of that version left is still recovered, and one whose hashes are not
 * the chain's is not. */
static void cra1_from(const char *db, const char *seg, bool spoil)
{
    int fd = open(seg, O_RDWR);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    uint8_t *buf = malloc((size_t)sb.st_size);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)sb.st_size, 0), sb.st_size);
    struct trail_rec_hdr h;
    assert_int_equal(trail_rec_header(buf, (size_t)sb.st_size, &h), 0);
    assert_false(h.hashed);
    assert_int_equal(trail_rec_check(buf, &h, 0), 0); /* at offset 0: seeded with 0 */
    /* The last entry's hash slot, just before the checksum: zeros, as the loop wrote it. */
    static const uint8_t zeros[TRAIL_HASH_LEN];
    assert_memory_equal(buf + h.end - TRAIL_HASH_LEN, zeros, TRAIL_HASH_LEN);

    /* Hashed by the applier's own code, from the file's head: the record a CRA1 writer made. */
    struct trail *fake = calloc(1, sizeof(*fake));
    assert_non_null(fake);
    sqlite3 *raw;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    fake->h_seq = last_entry(raw, fake->h_head);
    assert_int_equal(sqlite3_prepare_v2(raw,
                                        "SELECT local_seq, hash FROM entries WHERE workspace = 'w' "
                                        "ORDER BY seq DESC LIMIT 1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) { /* workspace w's local chain, as the applier loads it */
        bool created;
        struct trail_wshead *w = trail_wsmap_get(&fake->a_ws, "w", 1, &created);
        assert_non_null(w);
        w->local_seq = (uint64_t)sqlite3_column_int64(st, 0);
        memcpy(w->last_hash, sqlite3_column_blob(st, 1), TRAIL_HASH_LEN);
    }
    sqlite3_finalize(st);
    sqlite3_close(raw);
    struct trail_batch b = {.rec = {buf, (size_t)sb.st_size, (size_t)sb.st_size}};
    const char *why = NULL;
    assert_int_equal(trail_chain_batch(fake, &b, &why), 0);
    assert_memory_not_equal(buf + h.end - TRAIL_HASH_LEN, zeros, TRAIL_HASH_LEN);
    trail_wsmap_clear(&fake->a_ws);
    trail_buf_free(&fake->a_scratch);
    free(fake);
    if (spoil)
        buf[h.end - 1] ^= 1;
    memcpy(buf, "CRA1", 4);
    for (int k = 0; k < 8; k++)
        buf[8 + k] = (uint8_t)(h.end >> (8 * k));
    assert_int_equal(pwrite(fd, buf, h.end, 0), (ssize_t)h.end);
    assert_int_equal(ftruncate(fd, (off_t)h.end), 0);
    close(fd);
    free(buf);
}

static void test_ahead_unhashed_and_cra1(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db"), *seg = path_in(dir, "t.db-ahead");
    trail_close(open_ok(db, TRAIL_DURABILITY_NORMAL));
    crash_after(db, 1, TRAIL_DURABILITY_NORMAL); /* entries 2-4, only in the ahead log */
    cra1_from(db, seg, false);
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(trail_head_seq(t), 4);
    trail_close(t);
    verify_ok(db, 4);

    crash_after(db, 1, TRAIL_DURABILITY_NORMAL); /* entries 5-7 */
    cra1_from(db, seg, true);                    /* the last hash is not the chain's */
    t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(trail_head_seq(t), 4);
    append_json(t, "w", "worker", "tool_call", "{\"after\":true}", NULL);
    commit_ok(t);
    trail_close(t);
    verify_ok(db, 5);
    free(seg);
    free(db);
    tmpdir_free(dir);
}

/* Committed batches wait in memory for the applier; past TRAIL_QUEUE_MAX of them a commit waits
 * for it (only the segments bounded them before: two of TRAIL_AHEAD_MAX, and 256 pipelining
 * workers kept 134 MB of batches). Here the applier is held: the committing thread stops once
 * TRAIL_QUEUE_MAX is queued, and goes on, every entry kept, once the applier runs again. */
struct queue_fill {
    struct trail *t;
    int done; /* commits made (read by the test while the thread runs: atomics) */
    int rc;
};

#define QUEUE_FILL_BATCHES 40 /* of 1 MiB: past TRAIL_QUEUE_MAX */

static void *queue_fill_run(void *arg)
{
    struct queue_fill *q = arg;
    struct cerr err = {0};
    char *data = malloc(1u << 20);
    if (!data) {
        q->rc = -ENOMEM;
        return NULL;
    }
    for (int b = 0; b < QUEUE_FILL_BATCHES && q->rc == 0; b++) {
        memset(data, 'a' + b % 26, 1u << 20);
        char hex[65], body[128];
        if (trail_blob_put(q->t, data, 1u << 20, hex, &err) < 0) {
            q->rc = -1;
            break;
        }
        snprintf(body, sizeof(body), "{\"content_blob\":\"%s\"}", hex);
        cJSON *j = cJSON_Parse(body);
        if (trail_append(q->t, "w", "worker", "tool_call", j, NULL, &err) < 0 ||
            trail_commit(q->t, &err) < 0)
            q->rc = -2;
        cJSON_Delete(j);
        __atomic_store_n(&q->done, b + 1, __ATOMIC_SEQ_CST);
    }
    free(data);
    return NULL;
}

static void test_commits_wait_at_queue_bound(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    trail_applier_hold(t, true);
    struct queue_fill q = {.t = t};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, queue_fill_run, &q), 0);
    /* Until it stops making progress for half a second (or 60 s pass). */
    int last = -1, still = 0;
    for (int i = 0; i < 600 && still < 5; i++) {
        usleep(100 * 1000);
        int d = __atomic_load_n(&q.done, __ATOMIC_SEQ_CST);
        still = d == last ? still + 1 : 0;
        last = d;
    }
    int held = __atomic_load_n(&q.done, __ATOMIC_SEQ_CST);
    if (held >= QUEUE_FILL_BATCHES || held > (int)(TRAIL_QUEUE_MAX >> 20))
        fail_msg("%d batches of 1 MiB committed with the applier held (bound %u MiB)", held,
                 TRAIL_QUEUE_MAX >> 20);
    assert_true(held >= (int)(TRAIL_QUEUE_MAX >> 20) - 1);
    trail_applier_hold(t, false);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(q.rc, 0);
    assert_int_equal(q.done, QUEUE_FILL_BATCHES);
    trail_close(t);
    verify_ok(db, 1 + QUEUE_FILL_BATCHES);
    free(db);
    tmpdir_free(dir);
}

/* Readers (corral trail, corral run before it looks for an unfinished run) ask whether a dead
 * writer left an ahead log. A local user who can write the trail's directory planted a FIFO in
 * its place: root's open of it for reading blocked until someone opened it for writing, that is
 * forever. The child gives up after 20 s (SIGALRM) so a hang fails the test. */
static void test_ahead_readers_hostile(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    char *seg = path_in(dir, "t.db-ahead"), *seg2 = path_in(dir, "t.db-ahead2");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    trail_close(t);
    for (int k = 0; k < 2; k++) {
        unlink(seg);
        unlink(seg2);
        if (k == 1) {
            int fd = open(seg, O_CREAT | O_WRONLY, 0600);
            assert_true(fd >= 0);
            assert_int_equal(write(fd, "x", 1), 1); /* not empty: the second segment is read */
            close(fd);
        }
        assert_int_equal(mkfifo(k ? seg2 : seg, 0666), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            alarm(120);
            _exit(trail_ahead_pending(db) ? 1 : 0);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("trail_ahead_pending with a FIFO as segment %d: status 0x%x", k + 1, st);
    }
    /* A regular file of chained headers past TRAIL_AHEAD_MAX, where no writer puts a record:
     * the index stops there (it grew an entry per 40 bytes for as long as the file went on). */
    unlink(seg);
    unlink(seg2);
    int fd = open(seg, O_CREAT | O_RDWR, 0600);
    assert_true(fd >= 0);
    size_t total = TRAIL_AHEAD_MAX + (1u << 20);
    uint8_t *big = calloc(1, total);
    assert_non_null(big);
    size_t rec = TRAIL_REC_HDR + 8; /* a header and its checksum */
    for (size_t off = 0, k = 1; off + rec <= total; off += rec, k++) {
        struct trail_buf b = {big + off, TRAIL_REC_HDR, rec};
        assert_int_equal(trail_rec_end(&b, 1, k, k, 0), 0);
        assert_int_equal(b.len, rec);
    }
    assert_int_equal(write(fd, big, total), (ssize_t)total);
    free(big);
    struct trail_rec_ref *refs = NULL;
    size_t n = 0;
    assert_int_equal(trail_ahead_index(fd, &refs, &n), 0);
    assert_int_equal(n, (TRAIL_AHEAD_MAX + rec - 1) / rec);
    free(refs);
    close(fd);
    unlink(seg);
    free(seg);
    free(seg2);
    free(db);
    tmpdir_free(dir);
}

/* A commit refused because the applier failed (SQLite refused its transaction: here another
 * connection holds the write lock past the busy timeout) is a failed commit like any other: the
 * caller drops the batch's effects, so the batch must go too. It used to stay staged, and once
 * trail_retry had the applier store the acknowledged batches, the next commit recorded it. */
static void test_refused_commit_dropped(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    append_json(t, "w", "worker", "tool_call", "{\"n\":2}", NULL);
    commit_ok(t);
    sync_ok(t);
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_exec(raw, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    trail_applier_hold(t, true);
    append_json(t, "w", "worker", "tool_call", "{\"n\":3}", NULL);
    commit_ok(t); /* acknowledged: in the ahead log */
    append_json(t, "w", "worker", "tool_call", "{\"dropped\":true}", NULL);
    trail_applier_hold(t, false);
    struct cerr err = {0};
    assert_int_equal(trail_sync(t, &err), -EIO); /* the applier gave up on the lock */
    assert_int_equal(trail_commit(t, &err), -EIO);
    assert_int_equal(trail_pending(t), 0);
    assert_int_equal(trail_head_seq(t), 3);
    assert_int_equal(sqlite3_exec(raw, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    err = (struct cerr){0};
    if (trail_retry(t, &err) != 0)
        fail_msg("retry: %s", err.msg);
    uint64_t seq = 0;
    append_json(t, "w", "worker", "tool_call", "{\"after\":true}", &seq);
    assert_int_equal(seq, 4);
    commit_ok(t);
    trail_close(t);
    verify_ok(db, 4); /* entries 1-3 and "after": the dropped one nowhere */
    free(db);
    tmpdir_free(dir);
}

/* An open that fails after it has taken the ahead log (here its recovery: another connection
 * holds SQLite's write lock past the busy timeout; a full disk does the same) must leave the ahead
 * log alone: the failed open's trail_close used to find nothing of its own unapplied and remove
 * both segments, with every acknowledged entry a dead writer had left in them. */
static void test_failed_open_keeps_ahead(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_FULL);
    trail_close(t);
    crash_after(db, 2, TRAIL_DURABILITY_FULL); /* entries 2-7, only in the ahead log */
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_exec(raw, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    struct cerr err = {0};
    assert_true(trail_open(db, TRAIL_DURABILITY_FULL, &t, &err) < 0);
    assert_null(t);
    assert_int_equal(sqlite3_exec(raw, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    assert_true(trail_ahead_left(db));
    t = open_ok(db, TRAIL_DURABILITY_FULL);
    assert_int_equal(trail_head_seq(t), 7);
    trail_close(t);
    verify_ok(db, 7);
    free(db);
    tmpdir_free(dir);
}

/* Waits (up to 60 s: liveness, not speed) for the file to hold n entries. */
static bool count_reaches(const char *db, int64_t n)
{
    for (int i = 0; i < 6000; i++) {
        if (sqlite_count(db) >= n)
            return true;
        usleep(10000);
    }
    return false;
}

/* Teardown of a test that arms an alarm: a failed assertion leaves the test before its alarm(0),
 * and the alarm would then end a later test. */
static int alarm_off(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

/* The applier gathers committed batches into one transaction: nothing reaches SQLite before the
 * oldest batch's deadline unless somebody waits for it (trail_sync, the close) or
 * TRAIL_APPLY_BYTES wait; at the deadline it applies by itself, with no later commit to wake
 * it. An hour's delay stands for "never" in the first part: if a reader's wait did not cut it
 * short, the alarm ends the test. */
static void test_applier_gathers(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    sync_ok(t);
    int64_t base = sqlite_count(db);
    alarm(120);
    trail_apply_delay(t, 3600LL * 1000000000);
    for (int i = 0; i < 20; i++) {
        append_json(t, "w", "worker", "tool_call", "{\"n\":1}", NULL);
        commit_ok(t);
    }
    usleep(50000); /* a wrongly eager applier would have applied by now */
    assert_int_equal(sqlite_count(db), base); /* acknowledged, in the ahead log only */
    sync_ok(t);                               /* a reader's wait: applied at once */
    assert_int_equal(sqlite_count(db), base + 20);

    /* TRAIL_APPLY_BYTES waiting: applied with nobody waiting and no deadline reached. */
    static char big[8200];
    memset(big, 'x', sizeof(big));
    memcpy(big, "{\"s\":\"", 6);
    memcpy(big + sizeof(big) - 3, "\"}", 3);
    int n = (int)(TRAIL_APPLY_BYTES / 8000) + 2;
    for (int i = 0; i < n; i++) {
        for (size_t k = 6; k + 3 < sizeof(big); k++) /* no two alike (blobs are shared) */
            big[k] = (char)('a' + (rand() % 26));
        append_json(t, "w", "worker", "tool_call", big, NULL);
        commit_ok(t);
    }
    assert_true(count_reaches(db, base + 21)); /* the batches up to the one past the bound */

    /* The deadline: the rest, and one batch with no later commit and no waiter. */
    trail_apply_delay(t, 1000000);
    append_json(t, "w", "worker", "tool_call", "{\"n\":2}", NULL);
    commit_ok(t);
    assert_true(count_reaches(db, base + 21 + n));

    /* The close applies what gathers. */
    trail_apply_delay(t, 3600LL * 1000000000);
    for (int i = 0; i < 5; i++) {
        append_json(t, "w", "worker", "tool_call", "{\"n\":3}", NULL);
        commit_ok(t);
    }
    trail_close(t);
    alarm(0);
    verify_ok(db, (uint64_t)(base + 26 + n));
    free(db);
    tmpdir_free(dir);
}

/* The nice value of one of this process's threads (-100: unreadable). */
static int thread_nice_of(pid_t tid)
{
    errno = 0;
    int v = getpriority(PRIO_PROCESS, (id_t)tid);
    return v == -1 && errno ? -100 : v;
}

/* Counts this process's threads other than ME, and those of them at nice 19. */
static void threads_at_19(pid_t me, int *others, int *low)
{
    *others = *low = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        _exit(4);
    for (struct dirent *e; (e = readdir(d));) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == me)
            continue;
        (*others)++;
        *low += thread_nice_of(tid) == 19;
    }
    closedir(d);
}

/* In `normal` the applier runs ten nice steps below the loop, not at nice 10 whatever the loop's:
 * a supervisor started at nice 12 had it at 10, above its loop (root may raise a thread's
 * priority). Checked in a child started at 12, once a trail_sync has had the applier apply (it
 * lowers itself before its first transaction, and the waiter lowers it again after its wait):
 * the applier at 19, the checkpoint thread and the child at 12. In `full` no thread is lowered. */
static void test_trail_threads_below_the_loop(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db"), *db2 = path_in(dir, "f.db");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60);
        pid_t me = (pid_t)syscall(SYS_gettid);
        if (setpriority(PRIO_PROCESS, (id_t)me, 12) < 0)
            _exit(2);
        struct trail *t = NULL;
        struct cerr err = {0};
        cJSON *b = cJSON_CreateObject();
        if (trail_open(db, TRAIL_DURABILITY_NORMAL, &t, &err) < 0 ||
            trail_append(t, "w", "worker", "tool_call", b, NULL, &err) < 0 || trail_commit(t, &err) < 0 ||
            trail_sync(t, &err) < 0)
            _exit(3);
        int others, low;
        threads_at_19(me, &others, &low);
        if (thread_nice_of(me) != 12)
            _exit(5);
        if (others < 2 || low != 1)
            _exit(6);
        trail_close(t);
        if (trail_open(db2, TRAIL_DURABILITY_FULL, &t, &err) < 0 ||
            trail_append(t, "w", "worker", "tool_call", b, NULL, &err) < 0 || trail_commit(t, &err) < 0 ||
            trail_sync(t, &err) < 0)
            _exit(3);
        threads_at_19(me, &others, &low);
        trail_close(t);
        cJSON_Delete(b);
        _exit(others >= 2 && low == 0 ? 0 : 7);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("a writer started at nice 12: status 0x%x (0x600: normal's applier not at 19, or "
                 "another thread was; 0x700: a thread of a full trail was)", st);
    free(db);
    free(db2);
    tmpdir_free(dir);
}

struct sync_arg {
    struct trail *t;
    int r;
};

static void *sync_thread(void *p)
{
    struct sync_arg *a = p;
    struct cerr err = {0};
    a->r = trail_sync(a->t, &err);
    return NULL;
}

/* While somebody waits for the applier (the loop: a wacp/trail.query's trail_sync, a commit that
 * needs room, the close) it runs at the loop's priority, not ten nice steps below: the loop's
 * wait lasted several times longer on CPUs others kept busy. Here the applier is held in its
 * transaction by another connection's write lock while a thread waits in trail_sync. */
static void test_applier_waited_for_at_loop_priority(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    sync_ok(t);
    int64_t base = sqlite_count(db);
    int loop = thread_nice_of((pid_t)syscall(SYS_gettid));
    int low = loop + 10 < 19 ? loop + 10 : 19;
    pid_t tid = 0;
    for (int i = 0; i < 1000 && !tid; i++) { /* it lowers itself as it starts */
        pthread_mutex_lock(&t->amu);
        tid = t->atid;
        pthread_mutex_unlock(&t->amu);
        if (!tid)
            usleep(10000);
    }
    assert_true(tid > 0);
    assert_int_equal(thread_nice_of(tid), low);

    trail_apply_delay(t, 3600LL * 1000000000);
    append_json(t, "w", "worker", "tool_call", "{\"n\":1}", NULL);
    commit_ok(t);
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(db, &raw), SQLITE_OK);
    sqlite3_busy_timeout(raw, 5000);
    assert_int_equal(sqlite3_exec(raw, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    struct sync_arg a = {t, 1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sync_thread, &a), 0);
    bool raised = false; /* within 3 s, inside the applier's busy timeout (TRAIL_BUSY_MS) */
    for (int i = 0; i < 600 && !raised; i++) {
        usleep(5000);
        raised = thread_nice_of(tid) == loop;
    }
    assert_int_equal(sqlite3_exec(raw, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    pthread_join(th, NULL);
    assert_int_equal(a.r, 0);
    assert_true(raised);
    assert_int_equal(thread_nice_of(tid), low); /* nobody waits: lowered again */
    assert_int_equal(sqlite_count(db), base + 1);
    trail_close(t);
    verify_ok(db, (uint64_t)base + 1);
    free(db);
    tmpdir_free(dir);
}

/* Quiet commits (trail_commit_quiet: the agent host's, several per loop turn) do not wake the
 * applier; trail_wake does at the end of the turn. A commit that must wait for the applier to
 * free a segment (both hold batches not yet in SQLite, and the current one is at
 * TRAIL_AHEAD_MAX) waited for a thread nobody had woken: the loop hung for good. Here a turn's
 * quiet commits fill one segment past its lap and the other to its bound; the child gives up
 * after 120 s (SIGALRM), so a hang fails the test. */
static void test_quiet_commits_never_wait_forever(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(120);
        struct trail *t = NULL;
        struct cerr err = {0};
        if (trail_open(db, TRAIL_DURABILITY_NORMAL, &t, &err) < 0)
            _exit(2);
        static unsigned char blob[1 << 20];
        const int mib[3] = {5, 64, 0};
        for (int c = 0; c < 3; c++) {
            for (int i = 0; i < mib[c]; i++) {
                for (size_t k = 0; k < sizeof(blob); k += 4)
                    memcpy(blob + k, &(uint32_t){(uint32_t)rand()}, 4);
                char hex[65];
                if (trail_blob_put(t, blob, sizeof(blob), hex, &err) < 0)
                    _exit(3);
            }
            cJSON *b = cJSON_CreateObject();
            if (trail_append(t, "w", "protocol", "tool_call", b, NULL, &err) < 0 ||
                trail_commit_quiet(t, &err) < 0)
                _exit(4);
            cJSON_Delete(b);
        }
        trail_wake(t);
        trail_close(t);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the writer with quiet commits: status 0x%x (0xe: it hung)", st);
    verify_ok(db, 4);
    free(db);
    tmpdir_free(dir);
}

/* Both segments hold a record that starts right after the file's head: one that never
 * continued it (a write a crash cut short, here damaged in place) left in FILE-ahead2 by a
 * writer that died, and the acknowledged one the next writer, which also died, wrote to
 * FILE-ahead. Recovery used to try only the second segment's candidate, reject it and stop: the
 * acknowledged batch was never applied, and the next writer wrote over it. */
static void test_ahead_recovery_both_segments(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    char *seg = path_in(dir, "t.db-ahead"), *seg2 = path_in(dir, "t.db-ahead2");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    trail_close(t);
    crash_after(db, 1, TRAIL_DURABILITY_NORMAL); /* entries 2-4, only in FILE-ahead */
    int fd = open(seg, O_RDWR);
    assert_true(fd >= 0);
    uint8_t buf[4096];
    ssize_t n = pread(fd, buf, sizeof(buf), 0);
    assert_true(n > 64);
    char *at = memmem(buf, (size_t)n, "\"b\":0", 5);
    assert_non_null(at);
    at[4] = '7'; /* it no longer continues the trail */
    assert_int_equal(pwrite(fd, buf, (size_t)n, 0), n);
    close(fd);
    assert_int_equal(rename(seg, seg2), 0); /* the dead writer's other segment */
    crash_after(db, 1, TRAIL_DURABILITY_NORMAL); /* rejects it; its own 2-4 go to FILE-ahead */
    assert_int_equal(sqlite_count(db), 1);
    t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    assert_int_equal(trail_head_seq(t), 4);
    trail_close(t);
    verify_ok(db, 4);
    free(seg);
    free(seg2);
    free(db);
    tmpdir_free(dir);
}

/* The trail's id, from its first entry (trail_created). */
static void trail_id_of(const char *db, char id[33])
{
    sqlite3 *raw;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(raw, "SELECT body FROM entries WHERE seq = 1", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    cJSON *b = parse((const char *)sqlite3_column_text(st, 0));
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, "trail_id");
    assert_true(cJSON_IsString(v) && strlen(v->valuestring) < 33);
    snprintf(id, 33, "%s", v->valuestring);
    cJSON_Delete(b);
    sqlite3_finalize(st);
    sqlite3_close(raw);
}

/* Entry 2, as a writer makes it while the wall clock is an hour ahead: the clock set back after,
 * every writer stamps its entries head+1 us, head+2 us, ... (trail_append), the same times for
 * the same sequence numbers. A sound entry (the chain and verify accept it). */
static void append_from_the_future(const char *db)
{
    char tid[33], id[64];
    trail_id_of(db, tid);
    sqlite3 *raw;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(db, &raw, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    uint8_t prev[TRAIL_HASH_LEN], h[TRAIL_HASH_LEN];
    assert_int_equal(last_entry(raw, prev), 1);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int n = snprintf(id, sizeof(id), "%s-2", tid);
    struct trail_fields f = {.seq = 2, .id = id, .id_len = (size_t)n,
                             .ts_us = ((int64_t)now.tv_sec + 3600) * 1000000,
                             .actor = "system", .actor_len = 6, .type = "supervisor_started",
                             .type_len = 18, .body = "{}", .body_len = 2, .prev_hash = prev};
    struct trail_buf scratch = {0};
    assert_int_equal(trail_hash_entry(&scratch, &f, h), 0);
    trail_buf_free(&scratch);
    assert_int_equal(sqlite3_prepare_v2(raw,
                                        "INSERT INTO entries (" TRAIL_COLS
                                        ") VALUES (2, ?1, ?2, NULL, 'system', 'supervisor_started', "
                                        "'{}', NULL, NULL, ?3, ?4)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, id, n, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, f.ts_us);
    sqlite3_bind_blob(st, 3, prev, TRAIL_HASH_LEN, SQLITE_STATIC);
    sqlite3_bind_blob(st, 4, h, TRAIL_HASH_LEN, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    verify_ok(db, 2);
}

/* Writer A commits entries 3-5 and 6-8 and dies; the first record is damaged (a power loss in
 * `normal` wrote the second record's pages and not all of the first's), so writer B's recovery
 * applies neither: the trail ends at 2 and B writes its own 3-5, which go over A's first record
 * in FILE-ahead, and dies. A's 6-8 were never chained after B's 3-5: the next recovery must not
 * apply them. With CRA1 their prev_hash (A's entry 5) was not B's entry 5's hash; with CRA2 only
 * the times told, and they do not while the clock is behind the trail's head. */
static void test_ahead_no_splice_of_abandoned_records(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db"), *seg = path_in(dir, "t.db-ahead");
    trail_close(open_ok(db, TRAIL_DURABILITY_NORMAL));
    append_from_the_future(db);
    crash_writer(db, 2, TRAIL_DURABILITY_NORMAL, "A"); /* A: 3-5 and 6-8, only in FILE-ahead */
    int fd = open(seg, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    assert_int_equal(pread(fd, &byte, 1, 100), 1);
    byte ^= 0x10; /* inside A's first record */
    assert_int_equal(pwrite(fd, &byte, 1, 100), 1);
    close(fd);
    crash_writer(db, 1, TRAIL_DURABILITY_NORMAL, "B"); /* rejects A's records; its own 3-5 */
    assert_int_equal(sqlite_count(db), 2);
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    if (trail_head_seq(t) != 5)
        fail_msg("recovery applied %llu entries after B's 3-5 (writer A's, chained after B's)",
                 (unsigned long long)trail_head_seq(t) - 5);
    trail_close(t);
    verify_ok(db, 5);
    free(seg);
    free(db);
    tmpdir_free(dir);
}

/* Where a record ends in a segment, the bytes that follow are a record of an earlier lap, and
 * may be anywhere in it: in a blob, content an agent chose (a file it wrote and had read). An
 * agent that can see the trail's id and sequence (wacp/trail.query) lays out a record there; the
 * writer dies once its own records end right before it. With CRA1 the forged record had to carry
 * the hash of the entry before it, not known when the blob was written; with CRA2, nothing the
 * agent could not know. The record here is built the way the agent would, with the library. */
#define FORGED_AT (1u << 20) /* where the forged record lies in FILE-ahead, and record C's length */

static void forged_record(const char *tid, struct trail_buf *fk)
{
    static const uint8_t slot[TRAIL_HASH_LEN];
    char id[64];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int n = snprintf(id, sizeof(id), "%s-5", tid);
    struct trail_fields f = {.seq = 5, .id = id, .id_len = (size_t)n,
                             .ts_us = ((int64_t)now.tv_sec + 86400) * 1000000, .actor = "system",
                             .actor_len = 6, .type = "supervisor_started", .type_len = 18,
                             .body = "{\"forged\":true}", .body_len = 15, .prev_hash = slot};
    if (trail_rec_begin(fk) < 0 || trail_rec_put_entry(fk, &f) < 0 ||
        trail_rec_end(fk, 1, 5, 5, 0) < 0) /* the seed: none the agent could know */
        _exit(10);
}

static void blob_and_entry(struct trail *t, const uint8_t *data, size_t len)
{
    char hex[65], body[128];
    struct cerr err = {0};
    if (trail_blob_put(t, data, len, hex, &err) < 0)
        _exit(11);
    snprintf(body, sizeof(body), "{\"content_blob\":\"%s\"}", hex);
    cJSON *j = cJSON_Parse(body);
    if (trail_append(t, NULL, "worker", "tool_call", j, NULL, &err) < 0 || trail_commit(t, &err) < 0)
        _exit(12);
    cJSON_Delete(j);
}

static void test_ahead_lap_remnant_not_applied(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    trail_close(open_ok(db, TRAIL_DURABILITY_NORMAL));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct trail *t = NULL;
        struct cerr err = {0};
        if (trail_open(db, TRAIL_DURABILITY_NORMAL, &t, &err) < 0)
            _exit(2);
        size_t big = (4u << 20) + (512u << 10); /* each past a lap: the next record switches */
        uint8_t *data = malloc(big);
        if (!data)
            _exit(3);
        /* A (entry 2), at 0 in FILE-ahead: its blob holds the forged record at FORGED_AT. The
         * blob's bytes start at 73: header 32, 'B', hash 32, size 8. */
        struct trail_buf fk = {0};
        forged_record(t->trail_id, &fk);
        memset(data, 'a', big);
        memcpy(data + FORGED_AT - 73, fk.p, fk.len);
        trail_buf_free(&fk);
        blob_and_entry(t, data, big);
        /* B (entry 3), at 0 in FILE-ahead2 */
        memset(data, 'b', big);
        blob_and_entry(t, data, big);
        if (trail_sync(t, &err) < 0 || t->cur != 1)
            _exit(4);
        /* C (entry 4), at 0 in FILE-ahead again, over A, FORGED_AT long; not in SQLite */
        trail_applier_hold(t, true);
        memset(data, 'c', big);
        blob_and_entry(t, data, FORGED_AT - 299);
        if (t->cur != 0 || t->aoff != FORGED_AT) {
            fprintf(stderr, "child: record C ends at %llu in segment %d, not %u in 0\n",
                    (unsigned long long)t->aoff, t->cur, FORGED_AT);
            _exit(5);
        }
        _exit(0); /* a crash */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(sqlite_count(db), 3);
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    uint64_t head = trail_head_seq(t);
    trail_close(t);
    if (head != 4)
        fail_msg("recovery applied the forged record: the trail ends at %llu", (unsigned long long)head);
    verify_ok(db, 4);
    free(db);
    tmpdir_free(dir);
}

/* Commits back to back (a flooding agent) never let a PASSIVE checkpoint copy the whole WAL, so
 * it never started over: 443 MB after these 20,000 commits. The writer now restarts it once it
 * passes its bound (64 MiB), and every entry is still there. */
static void test_wal_bounded(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db"), *wal = path_in(dir, "t.db-wal");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    off_t most = 0;
    for (int i = 0; i < 20000; i++) {
        for (int k = 0; k < 4; k++)
            append_json(t, "w", "protocol", "tool_call",
                        "{\"agent\":\"a\",\"phase\":\"start\",\"tool\":\"readFile\"}", NULL);
        commit_ok(t);
        struct stat sb;
        if (i % 500 == 0 && stat(wal, &sb) == 0 && sb.st_size > most)
            most = sb.st_size;
    }
    trail_close(t);
    if (most > (off_t)128 << 20)
        fail_msg("the WAL grew to %lld MiB", (long long)(most >> 20));
    verify_ok(db, 80001);
    free(wal);
    free(db);
    tmpdir_free(dir);
}

/* Puts N MiB of random blobs into the trail in one commit. */
static void commit_mib(struct trail *t, int n)
{
    static unsigned char blob[1 << 20];
    for (int i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof(blob); k += 4)
            memcpy(blob + k, &(uint32_t){(uint32_t)rand()}, 4);
        char hex[65];
        struct cerr err = {0};
        assert_int_equal(trail_blob_put(t, blob, sizeof(blob), hex, &err), 0);
    }
    /* Blobs commit with an entry (alone they wait for the next batch that has one). */
    append_json(t, "w", "protocol", "tool_call", "{\"agent\":\"a\",\"phase\":\"end\"}", NULL);
    commit_ok(t);
}

/* The WAL starts over early, not at its bound: once the checkpoint thread has copied all but a
 * few frames, the writer's next commit restarts it with a RESTART that copies only those few.
 * SQLite restarts it by itself only when a pass copied everything before the next commit, which
 * never happens while commits come back to back, and the WAL used to grow to its bound, where the
 * restart copied a second's frames on the loop (40-70 ms under 64 flooding agents,
 * bench/run_flood.sh). Here a reader stands in for the commits made during the thread's pass: it
 * keeps the pass from copying the last commit. */
static void test_wal_restarts_early(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    struct trail_ckpt *c = trail_ckpt_of(t);
    assert_non_null(c);
    commit_mib(t, 5); /* past the thread's threshold (1000 pages): it is woken */
    sync_ok(t);
    sqlite3 *reader;
    assert_int_equal(sqlite3_open_v2(db, &reader, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM entries;", NULL, NULL, NULL),
                     SQLITE_OK);
    append_json(t, "w", "protocol", "tool_call", "{\"agent\":\"a\",\"phase\":\"start\"}", NULL);
    commit_ok(t);
    sync_ok(t);
    /* The thread's pass copies all but that last commit (within a second or two). */
    for (int i = 0; i < 500 && trail_ckpt_debt(c) > 64; i++)
        usleep(10000);
    if (trail_ckpt_debt(c) > 64)
        fail_msg("the checkpoint thread left %d pages", trail_ckpt_debt(c));
    assert_int_equal(sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(reader);
    unsigned cap = 0, early = 0;
    /* One try per pass of the thread, which may be checkpointing at that moment. */
    for (int i = 0; i < 300 && !early; i++) {
        append_json(t, "w", "protocol", "tool_call", "{\"agent\":\"a\",\"phase\":\"start\"}", NULL);
        commit_ok(t);
        sync_ok(t); /* the applier's transaction, after which the writer's restart is tried */
        trail_ckpt_restarts(c, &cap, &early);
        if (!early)
            usleep(10000);
    }
    assert_int_equal(early, 1);
    assert_int_equal(cap, 0);
    trail_close(t);
    verify_ok(db, 0);
    free(db);
    tmpdir_free(dir);
}

/* Once the thread has copied the whole WAL, SQLite starts it over at the writer's next
 * transaction by itself (no RESTART of ours, so no new generation). The writer's estimate of
 * the debt must then count the new WAL's frames in full: measured against the old WAL's size
 * (the thread's last pass), it said 0 while 5 MiB waited uncopied, and the writer's "early"
 * RESTART copied all of it on the loop (and trail_congested said false). */
static void test_wal_debt_after_reset(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *db = path_in(dir, "t.db");
    struct trail *t = open_ok(db, TRAIL_DURABILITY_NORMAL);
    struct trail_ckpt *c = trail_ckpt_of(t);
    assert_non_null(c);
    commit_mib(t, 8); /* past the thread's threshold: it copies all of it */
    sync_ok(t);
    for (int i = 0; i < 500 && trail_ckpt_debt(c) > 0; i++)
        usleep(10000);
    assert_int_equal(trail_ckpt_debt(c), 0);
    /* The thread's pass has just ended: it waits a quarter of a second before the next one. */
    commit_mib(t, 5); /* a new WAL, smaller than the one the thread measured */
    sync_ok(t);
    /* Read at once: a pass of the thread (woken by that commit, if its pause is over) takes
     * milliseconds to copy those pages. */
    int debt = trail_ckpt_debt(c);
    unsigned cap = 0, early = 0;
    trail_ckpt_restarts(c, &cap, &early);
    assert_int_equal(early, 0);
    assert_int_equal(cap, 0);
    if (debt < 1000)
        fail_msg("5 MiB uncopied, the estimate says %d pages", debt);
    trail_close(t);
    verify_ok(db, 0);
    free(db);
    tmpdir_free(dir);
}

static void test_open_refusals(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *notdb = path_in(dir, "notes.txt"), *other = path_in(dir, "other.db");
    FILE *f = fopen(notdb, "w");
    assert_non_null(f);
    fputs("this is not a database, it is a text file that is long enough to have a header.......\n", f);
    fclose(f);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_true(trail_open(notdb, TRAIL_DURABILITY_FULL, &t, &err) < 0);
    assert_null(t);
    assert_non_null(strstr(err.msg, "not a corral trail"));
    sqlite3 *o = NULL;
    assert_int_equal(sqlite3_open(other, &o), SQLITE_OK);
    assert_int_equal(sqlite3_exec(o, "CREATE TABLE x (a)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(o);
    assert_int_equal(trail_open(other, TRAIL_DURABILITY_FULL, &t, &err), -EINVAL);
    assert_non_null(strstr(err.msg, "not a corral trail"));
    struct trail_reader *r = NULL;
    assert_int_equal(trail_reader_open(other, &r, &err), -EINVAL);
    char *missing = path_in(dir, "missing.db");
    assert_int_equal(trail_reader_open(missing, &r, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "--db"));
    uint64_t bad_seq = 0;
    assert_int_equal(trail_verify_file(missing, &bad_seq, &err), -ENOENT);
    free(missing);
    free(notdb);
    free(other);
    tmpdir_free(dir);
}

/* Never through a symbolic link: whoever made it would choose where the writer's file goes. A
 * link to a missing file (it used to be created there, as a new trail) and a link to an empty
 * file (it used to be filled) are refused and leave their targets as they were; so is a link in
 * a directory of the path. */
static void test_open_no_links(void **state)
{
    (void)state;
    char *dir = tmpdir_new(), *target = path_in(dir, "elsewhere.db"), *link = path_in(dir, "t.db");
    char *empty = path_in(dir, "empty"), *link2 = path_in(dir, "t2.db");
    char *sub = path_in(dir, "real"), *sublink = path_in(dir, "via"), *deep = path_in(dir, "via/t.db");
    assert_int_equal(symlink(target, link), 0);
    struct trail *t = NULL;
    struct cerr err = {0};
    assert_int_equal(trail_open(link, TRAIL_DURABILITY_FULL, &t, &err), -ELOOP);
    assert_null(t);
    assert_non_null(strstr(err.msg, "symbolic link"));
    struct stat st;
    assert_int_equal(lstat(target, &st), -1); /* not created */
    FILE *f = fopen(empty, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(symlink(empty, link2), 0);
    assert_int_equal(trail_open(link2, TRAIL_DURABILITY_FULL, &t, &err), -ELOOP);
    assert_int_equal(stat(empty, &st), 0);
    assert_int_equal(st.st_size, 0); /* not filled */
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(symlink(sub, sublink), 0);
    assert_int_equal(trail_open(deep, TRAIL_DURABILITY_FULL, &t, &err), -ELOOP);
    assert_non_null(strstr(err.msg, "symbolic link"));
    free(target);
    free(link);
    free(empty);
    free(link2);
    free(sub);
    free(sublink);
    free(deep);
    tmpdir_free(dir);
}

static void test_time_formats(void **state)
{
    (void)state;
    int64_t us;
    assert_int_equal(trail_parse_time("1763890047", &us), 0);
    assert_int_equal(us, 1763890047000000LL);
    assert_int_equal(trail_parse_time("1763890047.25", &us), 0);
    assert_int_equal(us, 1763890047250000LL);
    assert_int_equal(trail_parse_time("2026-11-23", &us), 0);
    assert_int_equal(us, 1795392000000000LL);
    assert_int_equal(trail_parse_time("2026-11-23T09:30:00Z", &us), 0);
    assert_int_equal(us, 1795392000000000LL + 9 * 3600000000LL + 30 * 60000000LL);
    int64_t z = us;
    assert_int_equal(trail_parse_time("2026-11-23T11:30:00+02:00", &us), 0);
    assert_int_equal(us, z);
    assert_int_equal(trail_parse_time("2026-11-23T09:30", &us), 0);
    assert_int_equal(us, z);
    assert_int_equal(trail_parse_time("2026-11-23T09:30:00.5Z", &us), 0);
    assert_int_equal(us, z + 500000);
    const char *badt[] = {"",
                          "yesterday",
                          "2026-13-01",
                          "2026-02-31",
                          "2026-11-23T25:00",
                          "12abc",
                          "-5",
                          "2026-11-23T09:30:00Zjunk"};
    for (size_t i = 0; i < ARRAY_SIZE(badt); i++)
        if (trail_parse_time(badt[i], &us) != -EINVAL)
            fail_msg("'%s' parsed", badt[i]);
    char buf[40];
    trail_format_time(z + 123456, buf, sizeof(buf));
    assert_string_equal(buf, "2026-11-23T09:30:00.123456Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_every_kind_read_back),
        cmocka_unit_test(test_canonical_and_refusals),
        cmocka_unit_test(test_blobs),
        cmocka_unit_test(test_update_delete_refused),
        cmocka_unit_test(test_tampering_caught),
        cmocka_unit_test(test_read_while_writing),
        cmocka_unit_test(test_workspace_index),
        cmocka_unit_test(test_one_writer),
        cmocka_unit_test(test_ahead_recovery),
        cmocka_unit_test(test_ahead_recovery_both_segments),
        cmocka_unit_test(test_ahead_unhashed_and_cra1),
        cmocka_unit_test(test_commits_wait_at_queue_bound),
        cmocka_unit_test(test_ahead_no_splice_of_abandoned_records),
        cmocka_unit_test(test_ahead_lap_remnant_not_applied),
        cmocka_unit_test(test_quiet_commits_never_wait_forever),
        cmocka_unit_test_teardown(test_applier_gathers, alarm_off),
        cmocka_unit_test(test_trail_threads_below_the_loop),
        cmocka_unit_test(test_applier_waited_for_at_loop_priority),
        cmocka_unit_test(test_failed_open_keeps_ahead),
        cmocka_unit_test(test_refused_commit_dropped),
        cmocka_unit_test(test_ahead_readers_hostile),
        cmocka_unit_test(test_applier_failure),
        cmocka_unit_test(test_ahead_no_links),
        cmocka_unit_test(test_wal_bounded),
        cmocka_unit_test(test_wal_restarts_early),
        cmocka_unit_test(test_wal_debt_after_reset),
        cmocka_unit_test(test_open_refusals),
        cmocka_unit_test(test_open_no_links),
        cmocka_unit_test(test_time_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
