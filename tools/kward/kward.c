/* tools/kward/kward.c: the Kward workspace tools surface (seed 004): list_directory, read_file,
 * summarize_file_structure, context_for_task, context_budget_stats, write_file, edit_file and
 * run_shell_command, with the seed's limits and the upstream tools' model-facing text, over the
 * broker operations (containment, reads, writes, walks and command sandboxes are the broker's).
 * Outlines (universal-ctags) and diffs (GNU diff) each cost a command sandbox: outline.c,
 * diff.c. Every answer is an object whose "output" is the text Kward's tool returns; errors are
 * {error: "Error: ...", code, field?} (docs/protocol-kward.md). */
#include "tools/broker/broker.h"
#include "tools/gate.h"
#include "tools/kward/internal.h"
#include "tools/kward/kward.h"
#include "tools/params.h"
#include "tools/surfaces.h"

#include <string.h>

/* The codes that are refusals by the rules, and the rule each names for the trail. */
static const struct {
    const char *code;
    const char *rule;
} denials[] = {
    {"permission_denied", "workspace containment"},
    {"read_only", "read-only workspace"},
    {"read_required", "read before write"},
    {"stale_read", "read before write (changed since read)"},
    {"approval_required", "approval required"},
    {"commands_disabled", "commands not permitted for this role"},
};

/* ---- the surface ---------------------------------------------------------------------------- */

/* In the order of the T_* indexes. */
static const struct kward_tool tools[] = {
    {{"list_directory", "Lists entries in a workspace-relative directory (directories end with '/').",
      kward_list_params, ARRAY_SIZE(kward_list_params)},
     kward_list_directory},
    {{"read_file",
      "Read a workspace text file. Output is capped at 50 KB or 2,000 lines; use offset/limit to "
      "continue, or mode preview/outline/range/full. Files over 256 KB cannot be read.",
      kward_read_params, ARRAY_SIZE(kward_read_params)},
     kward_read_file},
    {{"summarize_file_structure",
      "Returns a compact outline of recognizable declarations in a source file (line ranges and kinds, "
      "at most 80 entries).",
      kward_summarize_params, ARRAY_SIZE(kward_summarize_params)},
     kward_summarize_file_structure},
    {{"context_for_task",
      "Build focused workspace context for a task from outlines and matching excerpts within a byte "
      "budget.",
      kward_context_params, ARRAY_SIZE(kward_context_params)},
     kward_context_for_task},
    {{"context_budget_stats",
      "Return approximate per-session context budget savings: raw versus returned result sizes per "
      "tool.",
      NULL, 0},
     kward_context_budget_stats},
    {{"write_file",
      "Writes complete file content. Existing files must be read first. The result includes a unified "
      "diff.",
      kward_write_params, ARRAY_SIZE(kward_write_params)},
     kward_write_file},
    {{"edit_file",
      "Edit a read workspace file by exact replacements. Each old_text must match once; edits must not "
      "overlap.",
      kward_edit_params, ARRAY_SIZE(kward_edit_params)},
     kward_edit_file},
    {{"run_shell_command", "Run a shell command from the workspace root.", kward_shell_params,
      ARRAY_SIZE(kward_shell_params)},
     kward_run_shell_command},
};

/* edit_file's edits: {old_text, new_text} objects, which the generic table cannot say. */
static cJSON *edits_schema(const struct tool_param *p)
{
    (void)p;
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "type", "array");
    cJSON_AddItemToObject(
        s, "items",
        cJSON_Parse(
            "{\"type\":\"object\",\"properties\":{"
            "\"new_text\":{\"type\":\"string\",\"description\":\"Replacement text.\"},"
            "\"old_text\":{\"type\":\"string\",\"description\":\"Unique exact text to replace.\"}},"
            "\"required\":[\"new_text\",\"old_text\"],\"additionalProperties\":false}"));
    if (!cJSON_GetObjectItemCaseSensitive(s, "items")) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

static cJSON *kward_list(const struct tool_ctx *ctx)
{
    (void)ctx;
    return tool_params_list(tools, ARRAY_SIZE(tools), sizeof(tools[0]), TOOL_PARAMS_ALWAYS_REQUIRED,
                            edits_schema, NULL, NULL);
}

/* The index of tool NAME (T_LIST ...), or ARRAY_SIZE(tools). */
static size_t tool_index(const char *name)
{
    const struct kward_tool *t = tool_params_find(tools, ARRAY_SIZE(tools), sizeof(tools[0]), name);
    return t ? (size_t)(t - tools) : ARRAY_SIZE(tools);
}

/* The gate's view of a call (tools/gate.h): well-formed arguments, and for write_file and
 * edit_file the file whose freshness the read-first rule checks, after the checks kward_write_file and
 * kward_edit_file make first (not the root; containment; edit_file: an existing file, not a directory). */
static int kward_target(const struct tool_ctx *ctx, const char *name, const cJSON *args, char **rel)
{
    *rel = NULL;
    size_t ti = tool_index(name);
    if (ti == ARRAY_SIZE(tools))
        return -1;
    struct call c = {.ctx = (struct tool_ctx *)ctx, .t = &tools[ti]};
    if (kward_parse_args(&c, args) < 0)
        return -1;
    if (ti != T_WRITE && ti != T_EDIT)
        return 0;
    const char *path = kward_arg_str(&c, ti == T_WRITE ? WRITE_PATH : EDIT_PATH, "");
    _cleanup_free_ char *r = NULL;
    struct broker_err e;
    if (broker_path_clean(path, "path", &r, &e) < 0 || !*r)
        return 0;
    struct broker_meta m;
    if (broker_info(ctx, path, "path", &m, &e) == 0) {
        bool dir = m.is_dir;
        broker_meta_clear(&m);
        if (ti == T_EDIT && dir)
            return 0;
    } else if (ti == T_EDIT || e.kind != BROKER_E_NOT_FOUND) {
        return 0;
    }
    *rel = r;
    r = NULL;
    return 0;
}

/* Shapes an error of tool TI like kward_run does, context budget included. */
static cJSON *error_result(struct call *c, size_t ti)
{
    cJSON *res = kward_error_json(c);
    cJSON_Delete(c->err_extra);
    if (res && ti != T_STATS) {
        const cJSON *er = cJSON_GetObjectItemCaseSensitive(res, "error");
        size_t n = cJSON_IsString(er) ? strlen(er->valuestring) : 0;
        kward_budget_note(c->ctx, ti, n, n);
    }
    return res;
}

static cJSON *kward_refuse(struct tool_ctx *ctx, const char *name, const struct tool_verdict *v)
{
    size_t ti = tool_index(name);
    if (ti == ARRAY_SIZE(tools))
        return NULL;
    struct call c = {.ctx = ctx, .t = &tools[ti]};
    const char *verb = ti == T_WRITE ? "writing" : "editing";
    const char *shown = v->rel && *v->rel ? v->rel : ".";
    if (v->rule == TOOL_RULE_APPROVAL)
        /* Until an approval channel exists, a call that needs one is refused, never run. */
        kward_fail(&c, "approval_required", BROKER_E_DENIED, NULL, "%s", v->message);
    else if (v->rule == TOOL_RULE_STALE)
        kward_fail(&c, "stale_read", BROKER_E_DENIED, "path",
                   "%s has changed since it was last read; read it again before %s", shown, verb);
    else if (v->rule == TOOL_RULE_READ_FIRST)
        kward_fail(&c, "read_required", BROKER_E_DENIED, "path",
                   "existing file must be read before %s: %s", verb, shown);
    else
        kward_fail(&c, "permission_denied", BROKER_E_DENIED, NULL, "%s: %s", name,
                   v->message ? v->message : "refused");
    return error_result(&c, ti);
}

static int kward_run(struct tool_ctx *ctx, const char *name, const cJSON *args, cJSON **result,
                     bool *is_error)
{
    *result = NULL;
    *is_error = false;
    size_t ti = tool_index(name);
    if (ti == ARRAY_SIZE(tools))
        return -ENOENT;
    struct call c = {.ctx = ctx, .t = &tools[ti], .table = tools};
    cJSON *res = NULL;
    if (kward_parse_args(&c, args) == 0)
        res = tools[ti].fn(&c);
    if (res) {
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(res, "output");
        size_t ret = cJSON_IsString(out) ? strlen(out->valuestring) : 0;
        if (ti != T_STATS)
            kward_budget_note(ctx, ti, c.raw_set ? c.raw_bytes : ret, ret);
        *result = res;
        return 0;
    }
    if (c.e.kind == BROKER_OK && !c.code)
        kward_fail(&c, "io_error", BROKER_E_IO, NULL, "the tool failed without saying why");
    *result = error_result(&c, ti);
    *is_error = true;
    return *result ? 0 : -ENOMEM;
}

static const char *kward_denial(const cJSON *result)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "code");
    if (!cJSON_IsString(code))
        return NULL;
    for (size_t i = 0; i < ARRAY_SIZE(denials); i++)
        if (!strcmp(denials[i].code, code->valuestring))
            return denials[i].rule;
    return NULL;
}

/* The gate's and the policy's table (tools/gate.h); read-first on by default for the two
 * write tools, the seed's guardrail. Same order as tools[] (T_LIST ...). */
static const struct tool_def defs[] = {
    {"list_directory", TOOL_KIND_READ, false},
    {"read_file", TOOL_KIND_READ, false},
    {"summarize_file_structure", TOOL_KIND_READ, false},
    {"context_for_task", TOOL_KIND_READ, false},
    {"context_budget_stats", TOOL_KIND_READ, false},
    {"write_file", TOOL_KIND_WRITE, true},
    {"edit_file", TOOL_KIND_WRITE, true},
    {"run_shell_command", TOOL_KIND_COMMAND, false},
};

const struct tool_surface kward_surface = {
    .name = "kward",
    .defs = defs,
    .n_defs = ARRAY_SIZE(defs),
    .list = kward_list,
    .run = kward_run,
    .target = kward_target,
    .refuse = kward_refuse,
    .denial = kward_denial,
};
