/* tests/replay/wacp_params.c: calls every wacp/... method with a deterministic set of hostile
 * parameter objects (wrong types, null, infinity, long strings, unknown and repeated keys,
 * missing required ones) on a fresh model each time, and prints rc, code and message of each
 * answer, one per line. Two builds' transcripts are diffed to prove a change to parameter
 * checking kept every answer (issue 11: WACP methods moved onto tools/params).
 * Build against a build's library and run (ids masked):
 *   cc -std=gnu11 -D_GNU_SOURCE -I. $(pkg-config --cflags libcjson sqlite3 libsodium) \
 *      tests/replay/wacp_params.c build/libcorral.a $(make -s print-libs) -lcmocka -o /tmp/wp
 *   /tmp/wp | grep ' -> ' | sed -E 's/[0-9a-f]{8,}/ID/g' > transcript
 * Kept as a manual tool beside tests/replay/surfaces.py, not part of `make test`. */
#include "tests/unit/wacp_fixture.h"

static const char *const methods[] = {
    "wacp/checkpoint.create", "wacp/checkpoint.list",   "wacp/conflict.resolve",
    "wacp/envelope.ack",      "wacp/envelope.send",     "wacp/integrate",
    "wacp/rights.grant",      "wacp/rights.list",       "wacp/rights.revoke",
    "wacp/signal.emit",       "wacp/task.assign",       "wacp/task.cancel",
    "wacp/task.create",       "wacp/task.list",         "wacp/workspace.abort",
    "wacp/workspace.create",  "wacp/workspace.list",    "wacp/workspace.resume",
    "wacp/workspace.self",    "wacp/workspace.suspend", "wacp/workspace.transfer",
};
static const char *const keys[] = {
    "type",        "reason",      "ref",         "to",         "payload",  "in_reply_to", "priority",
    "rights",      "envelope_id", "agent",       "directive",  "context",  "task",        "owner",
    "budgets",     "delegate",    "timeout",     "workspace",  "holder",   "target",      "kind",
    "right_id",    "intent",      "status",      "confidence", "parent",   "files",       "name",
    "description", "depends_on",  "parent_task", "tasks",      "decision", "strategy",    "checkpoint",
    "resolution",  "prefer",      "bogus",
};
static const char *const values[] = {"null", "true", "1",   "1e400", "\"x\"",
                                     "[]",   "{}",   "[1]", "-0.5",  NULL};

static void one(const char *method, const char *json)
{
    void *state;
    fx_setup(&state);
    struct fx *f = state;
    cJSON *p = json ? cJSON_Parse(json) : NULL;
    cJSON *r = NULL;
    memset(&f->e, 0, sizeof(f->e));
    int rc = wacp_call(f->w, f->rootid, method, p, &r, &f->e);
    printf("%s %s -> %d %s %s\n", method, json ? json : "(none)", rc < 0 ? f->e.rpc_code : 0,
           rc < 0 ? f->e.code : "ok", rc < 0 ? f->e.msg : "");
    cJSON_Delete(r);
    cJSON_Delete(p);
    fx_teardown(&state);
}

static void run(void **unused)
{
    (void)unused;
    char big[5200], buf[6000];
    memset(big, 'a', 5000);
    big[5000] = 0;
    for (size_t m = 0; m < ARRAY_SIZE(methods); m++) {
        one(methods[m], NULL);
        one(methods[m], "[]");
        one(methods[m], "\"x\"");
        one(methods[m], "{}");
        for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
            for (size_t v = 0; values[v]; v++) {
                snprintf(buf, sizeof(buf), "{\"%s\": %s}", keys[k], values[v]);
                one(methods[m], buf);
            }
            snprintf(buf, sizeof(buf), "{\"%s\": \"%s\"}", keys[k], big);
            one(methods[m], buf);
            snprintf(buf, sizeof(buf), "{\"%s\": \"a\", \"%s\": \"b\"}", keys[k], keys[k]);
            one(methods[m], buf);
        }
    }
}

int main(void)
{
    const struct CMUnitTest t[] = {cmocka_unit_test(run)};
    return cmocka_run_group_tests(t, NULL, NULL);
}
