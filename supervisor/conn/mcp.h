/* supervisor/conn/mcp.h: the MCP host-facing parts of a connection, as pure functions over
 * cJSON: tool annotations from the gate's table, the approval question asked through
 * elicitation and the reading of its answer, progress and log notifications. agent.c and
 * dispatch.c send what these build; nothing here does I/O or keeps state. */
#ifndef CORRAL_CONN_MCP_H
#define CORRAL_CONN_MCP_H

#include "tools/tool.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

/* Adds `annotations` (readOnlyHint, destructiveHint, idempotentHint, openWorldHint, from the
 * kind of each tool in the surface's table) and `outputSchema` to each tool of a tools/list
 * array. 0 or -ENOMEM. */
int mcp_tools_annotate(cJSON *tools, const struct tool_surface *s);

/* Syslog levels of MCP logging, least to most severe. */
enum mcp_log_level {
    MCP_LOG_DEBUG = 0,
    MCP_LOG_INFO,
    MCP_LOG_NOTICE,
    MCP_LOG_WARNING,
    MCP_LOG_ERROR,
    MCP_LOG_CRITICAL,
    MCP_LOG_ALERT,
    MCP_LOG_EMERGENCY,
};
/* The level of that name, or -EINVAL. */
int mcp_log_level_parse(const char *name);
const char *mcp_log_level_name(enum mcp_log_level l);
/* params of notifications/message for a denial: {level, logger:"corral", data:{tool, rule, reason}}.
 * New object, or NULL on ENOMEM. */
cJSON *mcp_log_denial(enum mcp_log_level l, const char *kind, const char *subject, const char *rule,
                      const char *reason);

/* params of elicitation/create asking a person to approve TOOL(ARGS) on SURFACE: a message that
 * names the tool, each path and the command the call would act on, and a form with one optional
 * boolean. New object, or NULL on ENOMEM. */
cJSON *mcp_elicit_approval(const char *surface, const char *tool, const cJSON *args);
/* What the person said, from the elicitation's RESULT or ERROR (either may be NULL). */
enum mcp_decision {
    MCP_DECISION_APPROVED = 0,
    MCP_DECISION_DECLINED,
    MCP_DECISION_CANCELLED, /* dismissed, or the host could not ask (an error answer) */
};
enum mcp_decision mcp_elicit_decision(const cJSON *result, const cJSON *error);
const char *mcp_decision_name(enum mcp_decision d);

/* params of notifications/progress: {progressToken, progress: seconds so far, message}. */
cJSON *mcp_progress(const cJSON *token, double elapsed_sec, uint64_t output_bytes);

/* The progressToken of a request's params._meta (borrowed), or NULL. MCP allows a string or an
 * integer. */
const cJSON *mcp_progress_token(const cJSON *params);

#endif
