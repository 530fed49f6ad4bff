/* tools/voltagent/voltagent.c: the VoltAgent workspace surface (seed 003): its registry (the
 * filesystem and sandbox tools of filesystem.c and sandbox.c, then the search and skills toolkits),
 * its one error shape, its path rule, approval and denial rules. */
#include "tools/surfaces.h"
#include "tools/voltagent/voltagent.h"

#include "tools/gate.h"
#include "tools/params.h"
#include "tools/voltagent/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- the toolkit table ---------------------------------------------------------------------- */

#define TOOL(n, d, p, f, w)            \
    {                                  \
        {n, d, p, ARRAY_SIZE(p)}, f, w \
    }
static const struct volt_tool tools[] = {
    TOOL("ls", "List files and directories in a workspace directory", voltagent_ls_params, voltagent_ls,
         false),
    TOOL("read_file",
         "Read file content with optional line range (offset/limit). Prefer targeted reads for large "
         "files.",
         voltagent_read_params, voltagent_read_file, false),
    TOOL("write_file",
         "Write content to a file. Existing files require overwrite=true; parent directories can be "
         "created automatically.",
         voltagent_write_params, voltagent_write_file, true),
    TOOL("edit_file",
         "Edit a file by replacing exact text.\n\nUsage:\n- Read the file first and copy the exact text "
         "for old_string.\n- old_string must be unique unless replace_all=true.\n- Preserve indentation "
         "and whitespace exactly.\n- If read_file output includes line numbers, do not include those "
         "prefixes in old_string/new_string.",
         voltagent_edit_params, voltagent_edit_file, true),
    TOOL("delete_file", "Delete a file from the filesystem. Use recursive=true to remove a directory",
         voltagent_delete_params, voltagent_delete_file, true),
    TOOL("stat", "Get file or directory metadata", voltagent_stat_params, voltagent_stat, false),
    TOOL("mkdir", "Create a directory in the filesystem", voltagent_mkdir_params, voltagent_mkdir, true),
    TOOL("rmdir", "Remove a directory from the filesystem", voltagent_rmdir_params, voltagent_rmdir,
         true),
    TOOL("list_tree", "List files and directories recursively with optional depth control",
         voltagent_tree_params, voltagent_list_tree, false),
    TOOL("list_files", "List files and directories recursively with optional depth control",
         voltagent_tree_params, voltagent_list_tree, false),
    TOOL("glob", "Find files matching a glob pattern (e.g., '**/*.ts' for all TypeScript files)",
         voltagent_glob_params, voltagent_glob, false),
    TOOL("grep", "Search for a regex pattern in files. Returns matching files and line numbers",
         voltagent_grep_params, voltagent_grep, false),
    TOOL("execute_command",
         "Execute a shell command in the workspace sandbox.\n\nUsage:\n- Prefer command + args (for "
         "example: command=\"npm\", args=[\"test\"]).\n- A full command line in command runs through sh "
         "-c; args are appended, each quoted as one word.\n- Set cwd explicitly for project-specific "
         "commands.\n- Use timeout_ms for long-running commands (capped by the workspace's limit).\n- "
         "Always verify paths and quote arguments that include spaces.",
         voltagent_exec_params, voltagent_execute_command, false),
};
#undef TOOL

/* Read-only mode hides the write tools (upstream's READ_ONLY_BLOCKED_TOOLS), and a role
 * without command authority does not see execute_command. */
static bool tool_shown(const void *row, const void *data)
{
    const struct volt_tool *t = row;
    const struct tool_ctx *ctx = data;
    if (t->writes && ctx->read_only)
        return false;
    return t->fn != voltagent_execute_command || ctx->allow_commands;
}

static const struct volt_tool *tool_find(const char *name)
{
    return tool_params_find(tools, ARRAY_SIZE(tools), sizeof(tools[0]), name);
}

static int fs_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                   bool *is_error)
{
    const struct volt_tool *t = tool_find(tool);
    if (!t)
        return -ENOENT;
    struct broker_err e = {0};
    struct args a;
    *is_error = false;
    if (voltagent_parse_args(t, args, &a, &e) < 0)
        *result = voltagent_fail_broker(&e, is_error);
    else
        *result = t->fn(ctx, t, &a, is_error);
    return *result ? 0 : -ENOMEM;
}

static cJSON *volt_list(const struct tool_ctx *ctx)
{
    cJSON *arr = tool_params_list(tools, ARRAY_SIZE(tools), sizeof(tools[0]),
                                  TOOL_PARAMS_ALWAYS_REQUIRED, NULL, tool_shown, ctx);
    if (!arr || voltagent_search_list(ctx, arr) < 0 || voltagent_skills_list(ctx, arr) < 0) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

static int volt_run(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                    bool *is_error)
{
    *result = NULL;
    *is_error = false;
    int r = fs_call(ctx, tool, args, result, is_error);
    if (r == -ENOENT)
        r = voltagent_search_call(ctx, tool, args, result, is_error);
    if (r == -ENOENT)
        r = voltagent_skills_call(ctx, tool, args, result, is_error);
    return r;
}

/* The gate's view of a call (tools/gate.h). Filesystem tools: well-formed arguments, and for a
 * write tool the file requireReadBeforeWrite checks, after what write_guard answers first (the
 * path rule, a symlink); directories and missing paths pass, as upstream. The search and skills
 * toolkits change no file. */
static int volt_target(const struct tool_ctx *ctx, const char *tool, const cJSON *args, char **rel)
{
    *rel = NULL;
    const struct volt_tool *t = tool_find(tool);
    if (!t)
        return 0;
    struct args a;
    struct broker_err e = {0};
    /* Malformed arguments are still "well formed" for the gate: upstream holds a call for
     * approval before its schema check, so needsApproval answers first; fs_call then answers
     * the arguments. */
    if (voltagent_parse_args(t, args, &a, &e) < 0 || !t->writes)
        return 0;
    const char *path = voltagent_arg_str(&a, 0, "");
    cJSON *err = NULL;
    bool is_error = false;
    if (voltagent_path_check(path, "file_path", &err) < 0) {
        cJSON_Delete(err);
        return 0;
    }
    err = voltagent_no_symlink((struct tool_ctx *)ctx, path, "file_path", &voltagent_symlink_text,
                               &is_error);
    if (err || is_error) {
        cJSON_Delete(err);
        return 0;
    }
    _cleanup_free_ char *r = NULL;
    if (broker_path_clean(path, "file_path", &r, &e) < 0)
        return 0;
    struct broker_meta m;
    if (broker_info(ctx, path, "file_path", &m, &e) < 0)
        return 0; /* missing: a new file; anything else: the tool reports it */
    bool dir = m.is_dir;
    broker_meta_clear(&m);
    if (!dir) {
        *rel = r;
        r = NULL;
    }
    return 0;
}

static cJSON *volt_refuse(struct tool_ctx *ctx, const char *tool, const struct tool_verdict *v)
{
    (void)ctx;
    bool is_error;
    _cleanup_free_ char *shown = v->rel ? broker_path_display(v->rel) : NULL;
    const char *p = shown ? shown : v->rel ? v->rel : "";
    switch (v->rule) {
    case TOOL_RULE_APPROVAL: {
        /* needsApproval: upstream holds the call until a person approves it; corral asks through
         * an MCP host that can elicit, and otherwise refuses the call, saying how to allow it. */
        char text[512];
        snprintf(text, sizeof(text), "Error: %s.", v->message);
        return voltagent_error_text(VOLTAGENT_E_APPROVAL, text);
    }
    case TOOL_RULE_READ_FIRST:
        return voltagent_fail_text(&is_error, VOLTAGENT_E_READ_FIRST,
                                   "Error: Please read '%s' with read_file before modifying it.", p);
    case TOOL_RULE_STALE:
        return voltagent_fail_text(
            &is_error, VOLTAGENT_E_STALE,
            "Error: '%s' has changed since it was last read. Read it again before modifying.", p);
    default:
        return voltagent_fail_text(&is_error, broker_kind_name(BROKER_E_DENIED), "Error: %s: %s", tool,
                                   v->message ? v->message : "refused");
    }
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
        {VOLTAGENT_E_SKILL_FILE, "skill files: only those its SKILL.md lists"},
        {VOLTAGENT_E_SYMLINK, "no symlinks"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
        if (!strcmp(c->valuestring, rules[i].code))
            return rules[i].rule;
    return NULL;
}

/* The gate's and the policy's table (tools/gate.h): the filesystem, search, sandbox and skills
 * toolkits. requireReadBeforeWrite is on by default for edit_file and delete_file (upstream's
 * default runtime). */
static const struct tool_def defs[] = {
    {"ls", TOOL_KIND_READ, false},
    {"read_file", TOOL_KIND_READ, false},
    {"write_file", TOOL_KIND_WRITE, false},
    {"edit_file", TOOL_KIND_WRITE, true},
    {"delete_file", TOOL_KIND_WRITE, true},
    {"stat", TOOL_KIND_READ, false},
    {"mkdir", TOOL_KIND_WRITE, false},
    {"rmdir", TOOL_KIND_WRITE, false},
    {"list_tree", TOOL_KIND_READ, false},
    {"list_files", TOOL_KIND_READ, false},
    {"glob", TOOL_KIND_READ, false},
    {"grep", TOOL_KIND_READ, false},
    {"workspace_index", TOOL_KIND_READ, false},
    {"workspace_index_content", TOOL_KIND_READ, false},
    {"workspace_search", TOOL_KIND_READ, false},
    {"execute_command", TOOL_KIND_COMMAND, false},
    {"workspace_list_skills", TOOL_KIND_READ, false},
    {"workspace_search_skills", TOOL_KIND_READ, false},
    {"workspace_read_skill", TOOL_KIND_READ, false},
    {"workspace_activate_skill", TOOL_KIND_READ, false},
    {"workspace_deactivate_skill", TOOL_KIND_READ, false},
    {"workspace_read_skill_reference", TOOL_KIND_READ, false},
    {"workspace_read_skill_script", TOOL_KIND_READ, false},
    {"workspace_read_skill_asset", TOOL_KIND_READ, false},
};

const struct tool_surface voltagent_surface = {
    .name = "voltagent",
    .defs = defs,
    .n_defs = ARRAY_SIZE(defs),
    .list = volt_list,
    .run = volt_run,
    .target = volt_target,
    .refuse = volt_refuse,
    .denial = volt_denial,
};
