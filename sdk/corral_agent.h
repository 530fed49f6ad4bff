/* sdk/corral_agent.h: a small C client for agents run by corral. The agent's stdin and stdout are
 * its channel to the supervisor: one JSON-RPC 2.0 message per line (docs/protocol.md). Blocking,
 * one request at a time, no threads. Link with cJSON (pkg-config libcjson).
 *
 *   struct corral_agent *a = corral_agent_new(0, 1);
 *   corral_agent_initialize(a, "my-agent", "1.0");
 *   bool is_error;
 *   cJSON *r = corral_agent_call(a, "readFile", cJSON_Parse("{\"path\":\"README.md\"}"), &is_error);
 *   ... cJSON_GetObjectItem(r, "content") ...
 *   cJSON_Delete(r);
 *   corral_agent_free(a);
 *
 * Under `corral run` the same pipe carries WACP (docs/sdk.md): wacp requests, and the
 * runtime's notifications (wacp/envelope, wacp/signal), which are queued while a request waits
 * for its answer. Each envelope is acknowledged on arrival and handed to the program once per
 * envelope_id, however often it is redelivered:
 *
 *   cJSON *env = corral_agent_next_envelope(a, 30000);   // the directive; NULL on timeout
 *   corral_agent_send(a, from, "query", payload, envelope_id);
 */
#ifndef CORRAL_AGENT_SDK_H
#define CORRAL_AGENT_SDK_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

struct corral_agent;

/* IN_FD: where answers arrive (the agent's stdin, 0); OUT_FD: where requests go (stdout, 1).
 * Nothing else may write to OUT_FD: log on stderr. NULL on out of memory. */
struct corral_agent *corral_agent_new(int in_fd, int out_fd);
/* Closes nothing (the fds are the caller's). NULL is a no-op. */
void corral_agent_free(struct corral_agent *a);

/* initialize + notifications/initialized. Returns 0, or -1 with corral_agent_error set.
 * *result (may be NULL) gets the initialize result, owned by the caller. */
int corral_agent_initialize(struct corral_agent *a, const char *name, const char *version,
                            cJSON **result);

/* Any method. PARAMS (may be NULL) is taken. Returns the result (owned by the caller), or NULL
 * with the JSON-RPC error in corral_agent_error / corral_agent_error_code (0 for an I/O error). */
cJSON *corral_agent_request(struct corral_agent *a, const char *method, cJSON *params);
int corral_agent_notify(struct corral_agent *a, const char *method, cJSON *params);

/* tools/call NAME with ARGS (taken; NULL means {}). Returns structuredContent (owned by the
 * caller): the tool's response object, or its error object ({error, code, details}) with
 * *is_error set. NULL on a JSON-RPC or I/O error (see corral_agent_error). */
cJSON *corral_agent_call(struct corral_agent *a, const char *tool, cJSON *args, bool *is_error);

/* The message and code of the last failure ("" and 0 when none). */
const char *corral_agent_error(const struct corral_agent *a);
int corral_agent_error_code(const struct corral_agent *a);

/* Low level, for tests and tools that pipeline: raw bytes out (no newline added), and the next
 * line in (malloc'd, without its newline; NULL at end of input). */
int corral_agent_send_raw(struct corral_agent *a, const void *buf, size_t len);
char *corral_agent_read_line(struct corral_agent *a, size_t *len);

/* ---- WACP (corral run) */

/* Any WACP METHOD ("wacp/workspace.self"; the "wacp/" prefix may be left out). PARAMS (may
 * be NULL: {}) is taken. The result (owned by the caller), or NULL with the JSON-RPC error in
 * corral_agent_error / corral_agent_error_code and the runtime's code word ("permission_denied",
 * "no_send_right", "invalid_transition", ...) in corral_agent_error_word. */
cJSON *corral_agent_wacp(struct corral_agent *a, const char *method, cJSON *params);
/* The code word of the last refused wacp request ("" when none). */
const char *corral_agent_error_word(const struct corral_agent *a);

/* Helpers; every cJSON argument is taken (NULL allowed where it says so), every result is the
 * caller's, NULL on failure as above. */
cJSON *corral_agent_self(struct corral_agent *a);
/* DIRECTIVE: the child's first envelope's payload. MORE (may be NULL): further params
 * (context, task, owner, budgets, delegate, timeout). */
cJSON *corral_agent_create_workspace(struct corral_agent *a, const char *agent, cJSON *directive,
                                     cJSON *more);
/* IN_REPLY_TO may be NULL. */
cJSON *corral_agent_send(struct corral_agent *a, const char *to, const char *type, cJSON *payload,
                         const char *in_reply_to);
/* REASON, REF may be NULL. */
cJSON *corral_agent_emit(struct corral_agent *a, const char *type, const char *reason, const char *ref);
/* A checkpoint of the caller's workspace, chained to the last one this client created (the
 * first has parent null). TYPE NULL: "artifact"; STATUS NULL: "final"; CONFIDENCE NULL:
 * "high". FILES (array of paths) and PAYLOAD may be NULL. */
cJSON *corral_agent_checkpoint(struct corral_agent *a, const char *type, const char *intent,
                               const char *status, const char *confidence, cJSON *files, cJSON *payload);
/* The head of this client's checkpoint chain (NULL before the first). */
const char *corral_agent_chain_head(const struct corral_agent *a);
/* DESCRIPTION may be NULL; DEPENDS_ON (array of task ids) may be NULL. */
cJSON *corral_agent_task_create(struct corral_agent *a, const char *name, const char *description,
                                cJSON *depends_on);
cJSON *corral_agent_task_list(struct corral_agent *a);
/* DECISION NULL: "accept"; STRATEGY and CHECKPOINT may be NULL. */
cJSON *corral_agent_integrate(struct corral_agent *a, const char *workspace, const char *decision,
                              const char *strategy, const char *checkpoint);

/* Waiting. The next event, queued or arriving within TIMEOUT_MS (-1: no limit):
 * CORRAL_EV_ENVELOPE (the envelope object, acked already, each envelope_id once),
 * CORRAL_EV_SIGNAL (the signal object) or CORRAL_EV_LIVENESS (a child has been silent and idle
 * for its liveness interval: {workspace_id, interval, last_activity_timestamp}; advisory) or
 * CORRAL_EV_RECOVERED (`corral run --resume` started this agent again after its supervisor died:
 * {workspace_id, state, checkpoint_head, checkpoints, inbox}; the chain head is set from it). Returns the object (the caller's) with *kind set, or
 * NULL: on timeout (*kind = CORRAL_EV_NONE, corral_agent_error "") or when the channel ended
 * (corral_agent_error says so). KINDS is a mask of the kinds wanted: others stay queued. */
enum {
    CORRAL_EV_NONE = 0,
    CORRAL_EV_ENVELOPE = 1,
    CORRAL_EV_SIGNAL = 2,
    CORRAL_EV_LIVENESS = 4,
    CORRAL_EV_RECOVERED = 8
};
cJSON *corral_agent_next_event(struct corral_agent *a, int kinds, int timeout_ms, int *kind);
cJSON *corral_agent_next_envelope(struct corral_agent *a, int timeout_ms);
cJSON *corral_agent_next_signal(struct corral_agent *a, int timeout_ms);

/* Tests: the next N envelopes that arrive are dropped without an ack (and not handed over), so
 * the runtime redelivers them. */
void corral_agent_drop_envelopes(struct corral_agent *a, unsigned n);
/* Refused acks so far (the runtime said no to an envelope.ack; logged on stderr too). */
unsigned corral_agent_ack_errors(const struct corral_agent *a);

#endif
