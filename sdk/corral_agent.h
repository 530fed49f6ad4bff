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
int corral_agent_initialize(struct corral_agent *a, const char *name, const char *version, cJSON **result);

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

#endif
