/* supervisor/conn/mcp.c: the MCP host-facing messages of a connection (see mcp.h). */
#include "supervisor/conn/mcp.h"

#include "tools/gate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool add_bool(cJSON *o, const char *k, bool v)
{
    return cJSON_AddBoolToObject(o, k, v) != NULL;
}

int mcp_tools_annotate(cJSON *tools, const struct tool_surface *s)
{
    cJSON *t;
    cJSON_ArrayForEach (t, tools) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
        /* From the gate's table; a tool missing from it is treated as the most dangerous kind. */
        const struct tool_def *d = cJSON_IsString(n) ? tool_surface_def(s, n->valuestring) : NULL;
        bool reads = d && d->kind == TOOL_KIND_READ;
        cJSON *a = cJSON_CreateObject();
        /* Tools reach the workspace only, and command sandboxes have no network: the world they
         * touch is closed. A write may overwrite or delete, so it is destructive; none is
         * idempotent as a rule (append modes, edits that match once). */
        if (!a || !add_bool(a, "readOnlyHint", reads) || !add_bool(a, "destructiveHint", !reads) ||
            !add_bool(a, "idempotentHint", reads) || !add_bool(a, "openWorldHint", false)) {
            cJSON_Delete(a);
            return -ENOMEM;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(t, "annotations");
        cJSON_AddItemToObject(t, "annotations", a);
        /* Every result is the surface's own response object, as structuredContent. */
        cJSON *os = cJSON_CreateObject();
        if (!os || !cJSON_AddStringToObject(os, "type", "object")) {
            cJSON_Delete(os);
            return -ENOMEM;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(t, "outputSchema");
        cJSON_AddItemToObject(t, "outputSchema", os);
    }
    return 0;
}

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

int mcp_log_level_parse(const char *name)
{
    for (size_t i = 0; name && i < ARRAY_SIZE(level_names); i++)
        if (!strcmp(name, level_names[i]))
            return (int)i;
    return -EINVAL;
}

const char *mcp_log_level_name(enum mcp_log_level l)
{
    return (size_t)l < ARRAY_SIZE(level_names) ? level_names[l] : "warning";
}

cJSON *mcp_log_denial(enum mcp_log_level l, const char *kind, const char *subject, const char *rule,
                      const char *reason)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *d = p ? cJSON_AddObjectToObject(p, "data") : NULL;
    char msg[512];
    snprintf(msg, sizeof(msg), "corral denied %s \"%.200s\": %.200s", kind ? kind : "a call",
             subject ? subject : "", rule ? rule : "refused by the rules");
    if (!d || !cJSON_AddStringToObject(p, "level", mcp_log_level_name(l)) ||
        !cJSON_AddStringToObject(p, "logger", "corral") || !cJSON_AddStringToObject(d, "message", msg) ||
        !cJSON_AddStringToObject(d, "kind", kind ? kind : "") ||
        !cJSON_AddStringToObject(d, "subject", subject ? subject : "") ||
        !cJSON_AddStringToObject(d, "rule", rule ? rule : "") ||
        (reason && !cJSON_AddStringToObject(d, "reason", reason))) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

/* ---- approval through elicitation ---- */

struct text {
    char buf[4096];
    size_t len;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(struct text *t, const char *fmt, ...)
{
    if (t->len >= sizeof(t->buf) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n < sizeof(t->buf) - t->len ? (size_t)n : sizeof(t->buf) - 1 - t->len;
}

/* The argument names the surfaces use for what a call acts on (docs/tools.md). */
static const char *const path_keys[] = {"path", "file_path", "paths", "workingDirectory", "cwd"};

static void describe_value(struct text *t, const char *label, const cJSON *v)
{
    if (cJSON_IsString(v))
        text_add(t, "\n%s: %.300s", label, v->valuestring);
    else if (cJSON_IsArray(v)) {
        const cJSON *e;
        cJSON_ArrayForEach (e, v)
            if (cJSON_IsString(e))
                text_add(t, "\n%s: %.300s", label, e->valuestring);
    }
}

cJSON *mcp_elicit_approval(const char *surface, const char *tool, const cJSON *args)
{
    struct text t = {.len = 0};
    text_add(&t,
             "The policy asks a person to approve this call before corral runs it.\nTool: %.100s (%.20s "
             "surface)",
             tool, surface ? surface : "wap");
    for (size_t i = 0; i < ARRAY_SIZE(path_keys); i++)
        describe_value(&t, i < 3 ? "Path" : "Working directory",
                       cJSON_GetObjectItemCaseSensitive(args, path_keys[i]));
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
    if (cJSON_IsString(cmd)) {
        text_add(&t, "\nCommand: %.1000s", cmd->valuestring);
        const cJSON *a, *argv = cJSON_GetObjectItemCaseSensitive(args, "args");
        cJSON_ArrayForEach (a, argv)
            if (cJSON_IsString(a))
                text_add(&t, " %.200s", a->valuestring);
    }
    text_add(&t, "\nAccept to run it once; decline to refuse it.");
    cJSON *p = cJSON_CreateObject();
    cJSON *schema = p ? cJSON_AddObjectToObject(p, "requestedSchema") : NULL;
    cJSON *props = schema ? cJSON_AddObjectToObject(schema, "properties") : NULL;
    cJSON *approve = props ? cJSON_AddObjectToObject(props, "approve") : NULL;
    if (!approve || !cJSON_AddStringToObject(p, "mode", "form") ||
        !cJSON_AddStringToObject(p, "message", t.buf) ||
        !cJSON_AddStringToObject(schema, "type", "object") ||
        !cJSON_AddStringToObject(approve, "type", "boolean") ||
        !cJSON_AddStringToObject(approve, "title", "Run this call") ||
        !cJSON_AddStringToObject(approve, "description", "Leave it on to run the call once") ||
        !cJSON_AddBoolToObject(approve, "default", true)) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

enum mcp_decision mcp_elicit_decision(const cJSON *result, const cJSON *error)
{
    if (error || !cJSON_IsObject(result))
        return MCP_DECISION_CANCELLED;
    const cJSON *action = cJSON_GetObjectItemCaseSensitive(result, "action");
    if (!cJSON_IsString(action))
        return MCP_DECISION_CANCELLED;
    if (!strcmp(action->valuestring, "decline"))
        return MCP_DECISION_DECLINED;
    if (strcmp(action->valuestring, "accept"))
        return MCP_DECISION_CANCELLED;
    /* Accepted, unless the person switched the one field off. */
    const cJSON *approve = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(result, "content"), "approve");
    return cJSON_IsFalse(approve) ? MCP_DECISION_DECLINED : MCP_DECISION_APPROVED;
}

const char *mcp_decision_name(enum mcp_decision d)
{
    switch (d) {
    case MCP_DECISION_APPROVED: return "approved";
    case MCP_DECISION_DECLINED: return "declined";
    case MCP_DECISION_CANCELLED: return "cancelled";
    }
    return "cancelled";
}

/* ---- progress ---- */

const cJSON *mcp_progress_token(const cJSON *params)
{
    const cJSON *meta = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, "_meta")
                                               : NULL;
    const cJSON *tok = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "progressToken")
                                            : NULL;
    return cJSON_IsString(tok) || cJSON_IsNumber(tok) || cJSON_IsRaw(tok) ? tok : NULL;
}

cJSON *mcp_progress(const cJSON *token, double elapsed_sec, uint64_t output_bytes)
{
    char msg[128];
    snprintf(msg, sizeof(msg), "running for %.0f s; %llu bytes of output so far", elapsed_sec,
             (unsigned long long)output_bytes);
    cJSON *p = cJSON_CreateObject();
    cJSON *tok = token ? cJSON_Duplicate(token, false) : NULL;
    if (!p || !tok) {
        cJSON_Delete(p);
        cJSON_Delete(tok);
        return NULL;
    }
    cJSON_AddItemToObject(p, "progressToken", tok);
    if (!cJSON_AddNumberToObject(p, "progress", floor(elapsed_sec * 10.0) / 10.0) ||
        !cJSON_AddStringToObject(p, "message", msg)) {
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}
