/* tools/voltagent.c: the VoltAgent workspace surface (seed 003): its registry (the filesystem and
 * sandbox tools here, then the search and skills toolkits), its one error shape, its path rule,
 * approval and denial rules, and the filesystem and sandbox toolkits over the broker. */
#include "tools/surfaces.h"
#include "tools/voltagent.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- the error shape ------------------------------------------------------------------------ */

cJSON *voltagent_error_text(const char *code, const char *text)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "error", text) || !cJSON_AddStringToObject(o, "code", code)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *voltagent_error(const struct broker_err *e)
{
    char text[sizeof(e->msg) + 16];
    snprintf(text, sizeof(text), "Error: %s", e->msg[0] ? e->msg : "the operation failed");
    return voltagent_error_text(broker_kind_name(e->kind), text);
}

int voltagent_path_check(const char *path, const char *field, cJSON **error)
{
    char text[256];
    *error = NULL;
    if (!path || path[0] != '/') {
        snprintf(text, sizeof(text), "Error: %s must be a workspace path starting with '/'", field);
        *error = voltagent_error_text(broker_kind_name(BROKER_E_INVALID), text);
        return -1;
    }
    bool tilde = strchr(path, '~') != NULL, dots = false;
    for (const char *p = path; *p && !dots; p++)
        dots = p[0] == '.' && p[1] == '.' && (p == path || p[-1] == '/' || p[-1] == '\\') &&
               (p[2] == '\0' || p[2] == '/' || p[2] == '\\');
    if (tilde || dots) {
        snprintf(text, sizeof(text),
                 "Error: Path traversal is not allowed: %s may not contain %s; use a path from the workspace root, like '/src/app.ts'",
                 field, tilde ? "'~'" : "'..'");
        *error = voltagent_error_text(VOLTAGENT_E_TRAVERSAL, text);
        return -1;
    }
    return 0;
}

/* ---- the registry --------------------------------------------------------------------------- */

static int fs_list(const struct tool_ctx *ctx, cJSON *arr)
{
    (void)ctx;
    (void)arr;
    return 0;
}

static int fs_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                   bool *is_error)
{
    (void)ctx;
    (void)tool;
    (void)args;
    (void)result;
    (void)is_error;
    return -ENOENT;
}

static cJSON *volt_list(const struct tool_ctx *ctx)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr || fs_list(ctx, arr) < 0 || voltagent_search_list(ctx, arr) < 0 ||
        voltagent_skills_list(ctx, arr) < 0) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

static int volt_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                     bool *is_error)
{
    *result = NULL;
    *is_error = false;
    /* needsApproval: upstream holds the call until a person approves it. corral has no way yet
     * to reach an admin mid-call, so the call is refused, and says why, before any toolkit
     * parses or performs it. */
    const struct tool_rule *rule = tool_rule_find(ctx, tool);
    if (rule && rule->needs_approval) {
        char text[512];
        snprintf(text, sizeof(text),
                 "Error: Tool '%.64s' requires an admin's approval before it runs, and corral cannot yet hold calls for approval, so this call was refused. Ask an admin to run it for you or to lift needs_approval for '%.64s' in the policy.",
                 tool, tool);
        *result = voltagent_error_text(VOLTAGENT_E_APPROVAL, text);
        *is_error = true;
        return *result ? 0 : -ENOMEM;
    }
    int r = fs_call(ctx, tool, args, result, is_error);
    if (r == -ENOENT)
        r = voltagent_search_call(ctx, tool, args, result, is_error);
    if (r == -ENOENT)
        r = voltagent_skills_call(ctx, tool, args, result, is_error);
    return r;
}

static const char *volt_denial(const cJSON *result)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(result, "code");
    if (!cJSON_IsString(c))
        return NULL;
    static const struct {
        const char *code, *rule;
    } rules[] = {
        {"denied", "workspace containment"},
        {VOLTAGENT_E_TRAVERSAL, "workspace paths: no '..' or '~'"},
        {VOLTAGENT_E_READ_ONLY, "read-only workspace"},
        {VOLTAGENT_E_READ_FIRST, "read before write"},
        {VOLTAGENT_E_STALE, "read before write (changed since read)"},
        {VOLTAGENT_E_APPROVAL, "needs approval"},
        {VOLTAGENT_E_COMMANDS, "commands not allowed for the role"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
        if (!strcmp(c->valuestring, rules[i].code))
            return rules[i].rule;
    return NULL;
}

const struct tool_surface tool_surface_voltagent = {
    .name = "voltagent",
    .list = volt_list,
    .call = volt_call,
    .denial = volt_denial,
};
