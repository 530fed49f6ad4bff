/* tests/unit/test_wacp_conflicts.c: the conflict types an integration detects (WACP integration
 * spec 5: content_overlap by layered and evaluated; dependency_violation and constraint_breach by
 * evaluated only) and the resolution strategies (spec 6: coordinator_resolve, escalate through
 * the highway's conflict_resolution gate, agent_rework), each in its own test. */
#include "tests/unit/wacp_fixture.h"
#include "supervisor/wacp/conflict.h"
#include "supervisor/wacp/files.h"

#include <errno.h>

static const char FINAL[] =
    "{\"type\": \"artifact\", \"intent\": \"i\", \"status\": \"final\", \"confidence\": \"high\"}";

/* A worker under the root with DIRECTIVE (JSON text), its files written, a final checkpoint and
 * `complete`: integrating. FILES: path, text, path, text, ..., NULL. */
static const char *done_child(struct fx *f, const char *directive, ...)
{
    cJSON *r = fx_call(f, f->rootid, "wacp/workspace.create",
                       "{\"agent\": \"coder\", \"directive\": %s}", directive);
    if (!r)
        fail_msg("workspace.create: %s: %s", f->e.code, f->e.msg);
    const char *id = fx_str(r, "workspace_id");
    fx_ack_last(f, id);
    va_list ap;
    va_start(ap, directive);
    for (const char *path; (path = va_arg(ap, const char *));) {
        const char *slash = strchr(path, '/'); /* one level of folders is enough here */
        if (slash) {
            char d[512];
            snprintf(d, sizeof d, "%s/%.*s", fx_dir(f, id), (int)(slash - path), path);
            assert_true(mkdir(d, 0700) == 0 || errno == EEXIST);
        }
        fx_write(fx_dir(f, id), path, va_arg(ap, const char *));
    }
    va_end(ap);
    assert_non_null(fx_call(f, id, "wacp/checkpoint.create", "%s", FINAL));
    assert_non_null(fx_call(f, id, "wacp/signal.emit", "{\"type\": \"complete\"}"));
    assert_string_equal(fx_state(f, id), "integrating");
    return id;
}

static cJSON *integrate(struct fx *f, const char *ws, const char *strategy)
{
    cJSON *r = fx_call(f, f->rootid, "wacp/integrate",
                       "{\"workspace\": \"%s\", \"decision\": \"accept\", \"strategy\": \"%s\"}", ws,
                       strategy);
    if (!r)
        fail_msg("integrate: %s: %s", f->e.code, f->e.msg);
    return r;
}

/* The one conflict of R is TYPE on PATH. */
static void one_conflict(const cJSON *r, const char *type, const char *path)
{
    const cJSON *cf = cJSON_GetObjectItem(r, "conflicts");
    assert_int_equal(cJSON_GetArraySize(cf), 1);
    assert_string_equal(fx_str(cJSON_GetArrayItem(cf, 0), "type"), type);
    assert_string_equal(fx_str(cJSON_GetArrayItem(cf, 0), "path"), path);
}

static void test_content_overlap_evaluated(void **state)
{
    FX;
    const char *a = done_child(f, "{}", "a.txt", "child\n", NULL);
    fx_write(f->root, "a.txt", "parent\n");
    cJSON *r = integrate(f, a, "evaluated");
    assert_string_equal(fx_str(r, "state"), "conflicted");
    one_conflict(r, "content_overlap", "a.txt");
    assert_string_equal(fx_str(fx_last_ent(f, "workspace_state_changed")->body, "reason"),
                        "content_overlap");
    assert_string_equal(fx_read(f->root, "a.txt"), "parent\n");
}

/* b's integration changed a.txt, which a left as it found it (it built on it): evaluated says
 * dependency_violation; layered does not look (the spec's table) and merges. */
static void test_dependency_violation(void **state)
{
    FX;
    const char *a = done_child(f, "{}", "x.txt", "x\n", NULL);
    const char *a2 = done_child(f, "{}", "y.txt", "y\n", NULL);
    const char *b = done_child(f, "{}", "a.txt", "changed by b\n", NULL);
    assert_string_equal(fx_str(integrate(f, b, "direct"), "state"), "closed");
    cJSON *r = integrate(f, a, "evaluated");
    assert_string_equal(fx_str(r, "state"), "conflicted");
    one_conflict(r, "dependency_violation", "a.txt");
    const cJSON *d = fx_last(f, "conflict_detected");
    assert_string_equal(fx_str(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "conflicts"), 0), "type"),
                        "dependency_violation");
    assert_null(fx_read(f->root, "x.txt"));
    assert_string_equal(fx_str(integrate(f, a2, "layered"), "state"), "closed");
    assert_string_equal(fx_read(f->root, "y.txt"), "y\n");
}

/* The directive's constraints: paths outside `paths` and changes past `max_files`. */
static void test_constraint_breach(void **state)
{
    FX;
    const char *a = done_child(f, "{\"constraints\": {\"paths\": [\"src/\"], \"max_files\": 1}}",
                               "src/a.c", "a\n", "src/b.c", "b\n", "doc.txt", "d\n", NULL);
    cJSON *r = integrate(f, a, "evaluated");
    assert_string_equal(fx_str(r, "state"), "conflicted");
    const cJSON *cf = cJSON_GetObjectItem(r, "conflicts");
    assert_int_equal(cJSON_GetArraySize(cf), 2);
    for (int i = 0; i < 2; i++)
        assert_string_equal(fx_str(cJSON_GetArrayItem(cf, i), "type"), "constraint_breach");
    assert_string_equal(fx_str(cJSON_GetArrayItem(cf, 0), "path"), "doc.txt"); /* outside src/ */
    assert_string_equal(fx_str(cJSON_GetArrayItem(cf, 1), "path"), "src/a.c"); /* 2nd, path order */
    /* Within its constraints: no conflict. */
    const char *b = done_child(f, "{\"constraints\": {\"paths\": [\"src\"], \"max_files\": 2}}",
                               "src/c.c", "c\n", "src/d.c", "d\n", NULL);
    assert_string_equal(fx_str(integrate(f, b, "evaluated"), "state"), "closed");
    /* A prefix is a path prefix, not a string prefix. */
    const char *c = done_child(f, "{\"constraints\": {\"paths\": [\"src\"]}}", "srcx/e.c", "e\n", NULL);
    one_conflict(integrate(f, c, "evaluated"), "constraint_breach", "srcx/e.c");
}

/* Hostile constraints stay bounded: past 256 prefixes the rest allow nothing (stricter). */
static void test_constraint_prefixes_bounded(void **state)
{
    FX;
    size_t cap = 300 * 16 + 64;
    char *d = malloc(cap), *at = d;
    at += sprintf(at, "{\"constraints\": {\"paths\": [");
    for (int i = 0; i < 300; i++)
        at += sprintf(at, "%s\"p%d\"", i ? ", " : "", i);
    sprintf(at, "]}}");
    const char *a = done_child(f, d, "p0/x", "x\n", "p299/y", "y\n", NULL);
    free(d);
    one_conflict(integrate(f, a, "evaluated"), "constraint_breach", "p299/y");
}

static void test_resolve_coordinator(void **state)
{
    FX;
    const char *a = done_child(f, "{\"constraints\": {\"max_files\": 0}}", "n.txt", "n\n", NULL);
    one_conflict(integrate(f, a, "evaluated"), "constraint_breach", "n.txt");
    cJSON *r = fx_call(f, f->rootid, "wacp/conflict.resolve",
                       "{\"workspace\": \"%s\", \"resolution\": \"coordinator_resolve\"}", a);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_string_equal(fx_read(f->root, "n.txt"), "n\n");
    assert_string_equal(fx_str(fx_last(f, "conflict_resolved"), "resolution"), "coordinator_resolve");
    assert_string_equal(fx_str(fx_last(f, "integration_completed"), "strategy"), "evaluated");
}

/* `corral run --resume` (restore.c) rebuilds a conflicted workspace's conflict list from its
 * conflict_detected entry: resolving with prefer parent after the resume keeps the parent's copy
 * of what conflicted (with no list, the child's file would be applied). */
static void test_conflicts_survive_resume(void **state)
{
    FX;
    const char *a = done_child(f, "{\"constraints\": {\"max_files\": 0}}", "n.txt", "n\n", NULL);
    char id[WACP_ID_LEN];
    snprintf(id, sizeof id, "%s", a);
    one_conflict(integrate(f, id, "evaluated"), "constraint_breach", "n.txt");
    fx_resume(f);
    assert_string_equal(fx_state(f, id), "conflicted");
    cJSON *r = fx_call(f, f->rootid, "wacp/conflict.resolve",
                       "{\"workspace\": \"%s\", \"resolution\": \"coordinator_resolve\", "
                       "\"prefer\": \"parent\"}",
                       id);
    if (!r)
        fail_msg("conflict.resolve: %s: %s", f->e.code, f->e.msg);
    assert_string_equal(fx_str(r, "state"), "closed");
    assert_null(fx_read(f->root, "n.txt")); /* the parent's copy: none */
    one_conflict(fx_last(f, "conflict_resolved"), "constraint_breach", "n.txt");
    assert_string_equal(fx_str(fx_last(f, "integration_completed"), "strategy"), "evaluated");
}

static void test_resolve_agent_rework(void **state)
{
    FX;
    const char *a = done_child(f, "{\"constraints\": {\"paths\": [\"docs\"]}}", "n.txt", "n\n", NULL);
    integrate(f, a, "evaluated");
    cJSON *r = fx_call(f, f->rootid, "wacp/conflict.resolve",
                       "{\"workspace\": \"%s\", \"resolution\": \"agent_rework\"}", a);
    assert_string_equal(fx_str(r, "state"), "failed");
    assert_null(fx_read(f->root, "n.txt"));
    assert_string_equal(fx_str(fx_last(f, "conflict_resolved"), "resolution"), "agent_rework");
}

static const struct policy_user alice = {
    .uid = 1000, .user_id = "alice", .approve = POLICY_USER_APPROVE_ALL};

static const char *escalate(struct fx *f, const char *ws)
{
    cJSON *r = fx_call(f, f->rootid, "wacp/conflict.resolve",
                       "{\"workspace\": \"%s\", \"resolution\": \"escalate\"}", ws);
    if (!r)
        fail_msg("escalate: %s: %s", f->e.code, f->e.msg);
    assert_string_equal(fx_str(r, "state"), "conflicted"); /* until a person decides */
    assert_non_null(fx_str(r, "gate_id"));
    assert_string_equal(fx_state(f, ws), "conflicted");
    return fx_str(r, "gate_id");
}

static int person(struct fx *f, const char *op, const char *gate, const char *mods)
{
    char text[256];
    snprintf(text, sizeof text, "{\"id\": \"%s\"%s%s}", gate, mods ? ", \"modifications\": " : "",
             mods ? mods : "");
    cJSON *p = cJSON_Parse(text), *r = NULL;
    int rc = wacp_human_call(f->w, &alice, op, p, &r, &f->e);
    cJSON_Delete(p);
    cJSON_Delete(r);
    return rc;
}

/* Escalated, a person approves: the merge completes (child's files), closed, the coordinator is
 * told; the resolution entry names the person. */
static void test_resolve_escalate_approve(void **state)
{
    FX;
    const char *a = done_child(f, "{}", "a.txt", "child\n", "n.txt", "n\n", NULL);
    fx_write(f->root, "a.txt", "parent\n");
    integrate(f, a, "layered");
    const char *g = escalate(f, a);
    assert_non_null(fx_last(f, "gate_triggered"));
    assert_string_equal(fx_str(fx_last(f, "gate_triggered"), "gate_type"), "conflict_resolution");
    assert_int_equal(person(f, "gate.approve", g, NULL), 0);
    assert_string_equal(fx_state(f, a), "closed");
    assert_string_equal(fx_read(f->root, "a.txt"), "child\n");
    const cJSON *cr = fx_last(f, "conflict_resolved");
    assert_string_equal(fx_str(cr, "resolution"), "escalate");
    assert_string_equal(fx_str(cr, "decided_by"), "alice");
    assert_string_equal(fx_str(cr, "outcome"), "closed");
    assert_true(fx_notes_count(f, f->rootid, "wacp/highway") >= 1);
}

/* A person modifies the merge to keep the parent's copy of what conflicted. */
static void test_resolve_escalate_modify_prefer_parent(void **state)
{
    FX;
    const char *a = done_child(f, "{}", "a.txt", "child\n", "n.txt", "n\n", NULL);
    fx_write(f->root, "a.txt", "parent\n");
    integrate(f, a, "layered");
    const char *g = escalate(f, a);
    assert_int_not_equal(person(f, "gate.modify", g, "{\"strategy\": \"direct\"}"), 0);
    assert_string_equal(f->e.code, "not_modifiable");
    assert_int_equal(person(f, "gate.modify", g, "{\"prefer\": \"parent\"}"), 0);
    assert_string_equal(fx_state(f, a), "closed");
    assert_string_equal(fx_read(f->root, "a.txt"), "parent\n");
    assert_string_equal(fx_read(f->root, "n.txt"), "n\n");
}

/* A person rejects: failed, nothing written. */
static void test_resolve_escalate_reject(void **state)
{
    FX;
    const char *a = done_child(f, "{}", "a.txt", "child\n", NULL);
    fx_write(f->root, "a.txt", "parent\n");
    integrate(f, a, "layered");
    const char *g = escalate(f, a);
    assert_int_equal(person(f, "gate.reject", g, NULL), 0);
    assert_string_equal(fx_state(f, a), "failed");
    assert_string_equal(fx_read(f->root, "a.txt"), "parent\n");
    assert_string_equal(fx_str(fx_last(f, "conflict_resolved"), "outcome"), "failed");
    /* Decided: the coordinator cannot resolve it again. */
    assert_null(fx_call(f, f->rootid, "wacp/conflict.resolve",
                        "{\"workspace\": \"%s\", \"resolution\": \"coordinator_resolve\"}", a));
    EXPECT_ERR("invalid_transition");
}

/* Aborting the workspace while a person looks withdraws the gate (subject invalidated). */
static void test_resolve_escalate_withdrawn(void **state)
{
    FX;
    const char *a = done_child(f, "{}", "a.txt", "child\n", NULL);
    fx_write(f->root, "a.txt", "parent\n");
    integrate(f, a, "layered");
    const char *g = escalate(f, a);
    assert_non_null(fx_call(f, f->rootid, "wacp/workspace.abort", "{\"workspace\": \"%s\"}", a));
    assert_string_equal(fx_state(f, a), "failed");
    assert_int_not_equal(person(f, "gate.approve", g, NULL), 0);
    assert_string_equal(fx_read(f->root, "a.txt"), "parent\n");
}

/* The evaluator's verdict (semantic_contradiction) is checked before it decides anything: only
 * paths the checkpoint changed, a bounded list, the documented shape. */
static void test_semantic_verdict(void **state)
{
    (void)state;
    struct wacp_manifest ch = {0}, out = {0};
    assert_int_equal(wacp_files_manifest_add(&ch, "a.md", "h", 1), 0);
    assert_int_equal(wacp_files_manifest_add(&ch, "b.md", "h", 1), 0);
    cJSON *reasons = cJSON_CreateArray();
    struct cerr e = {0};
    const char *ok = "{\"contradictions\": [{\"path\": \"b.md\", \"reason\": \"X vs Y\"}]}";
    assert_int_equal(wacp_conflict_evaluator_verdict(ok, strlen(ok), &ch, &out, reasons, &e), 0);
    assert_int_equal(out.n, 1);
    assert_string_equal(out.v[0].path, "b.md");
    assert_string_equal(wacp_conflict_type_name(out.v[0].size), "semantic_contradiction");
    assert_int_equal(cJSON_GetArraySize(reasons), 1);
    wacp_files_manifest_clear(&out);
    const char *none = "{\"contradictions\": []}";
    assert_int_equal(wacp_conflict_evaluator_verdict(none, strlen(none), &ch, &out, NULL, &e), 0);
    assert_int_equal(out.n, 0);
    static const char *const bad[] = {
        "", "[]", "{}", "{\"contradictions\": {}}", "not json",
        "{\"contradictions\": [{\"path\": \"../etc/passwd\"}]}",
        "{\"contradictions\": [{\"path\": 5}]}", "{\"contradictions\": [\"a.md\"]}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e = (struct cerr){0};
        assert_int_equal(wacp_conflict_evaluator_verdict(bad[i], strlen(bad[i]), &ch, &out, NULL, &e),
                         -EINVAL);
        assert_true(e.msg[0] != '\0');
        wacp_files_manifest_clear(&out);
    }
    char many[8192], *at = many;
    at += sprintf(at, "{\"contradictions\": [");
    for (int i = 0; i < WACP_EVAL_MAX_REASONS + 1; i++)
        at += sprintf(at, "%s{\"path\": \"a.md\"}", i ? "," : "");
    sprintf(at, "]}");
    assert_int_equal(wacp_conflict_evaluator_verdict(many, strlen(many), &ch, &out, NULL, &e), -EINVAL);
    wacp_files_manifest_clear(&out);
    wacp_files_manifest_clear(&ch);
    cJSON_Delete(reasons);
}

int main(void)
{
#define T(x) cmocka_unit_test_setup_teardown(x, fx_setup, fx_teardown)
    const struct CMUnitTest tests[] = {
        T(test_content_overlap_evaluated), T(test_dependency_violation),
        T(test_constraint_breach),         T(test_constraint_prefixes_bounded),
        T(test_resolve_coordinator),       T(test_resolve_agent_rework),
        T(test_conflicts_survive_resume), T(test_resolve_escalate_approve),  T(test_resolve_escalate_modify_prefer_parent),
        T(test_resolve_escalate_reject),   T(test_resolve_escalate_withdrawn),
        cmocka_unit_test(test_semantic_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
