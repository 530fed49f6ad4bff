/* policy/surfaces.c: the tool names of each seed surface and what each needs (read, write or
 * command authority), so a policy naming a tool is checked against the surface it speaks. */
#include "policy/internal.h"

#include <string.h>

#define R POLICY_TOOL_READ
#define W POLICY_TOOL_WRITE
#define X POLICY_TOOL_COMMAND

/* Workspace Agent Protocol 1.0 (seed 000). */
static const struct policy_tool_def wap_tools[] = {
    {"exploreFiles", R}, {"readFile", R}, {"writeFile", W}, {"modifyFile", W},
    {"searchFiles", R}, {"executeCommand", X}, {"getWorkspaceInfo", R},
};
/* File Tools (seed 001). */
static const struct policy_tool_def file_tools[] = {
    {"file.read", R}, {"file.write", W}, {"file.patch", W},
    {"file.delete", W}, {"file.list", R}, {"file.search", R},
};
/* VoltAgent-style workspace (seed 003): filesystem, search, sandbox and skills toolkits. */
static const struct policy_tool_def voltagent_tools[] = {
    {"ls", R}, {"read_file", R}, {"write_file", W}, {"edit_file", W}, {"delete_file", W},
    {"stat", R}, {"mkdir", W}, {"rmdir", W}, {"list_tree", R}, {"list_files", R},
    {"glob", R}, {"grep", R},
    {"workspace_index", R}, {"workspace_index_content", R}, {"workspace_search", R},
    {"execute_command", X},
    {"workspace_list_skills", R}, {"workspace_search_skills", R}, {"workspace_read_skill", R},
    {"workspace_activate_skill", R}, {"workspace_deactivate_skill", R},
    {"workspace_read_skill_reference", R}, {"workspace_read_skill_script", R},
    {"workspace_read_skill_asset", R},
};
/* Kward workspace tools (seed 004). */
static const struct policy_tool_def kward_tools[] = {
    {"list_directory", R}, {"read_file", R}, {"summarize_file_structure", R},
    {"context_for_task", R}, {"context_budget_stats", R}, {"write_file", W}, {"edit_file", W},
    {"run_shell_command", X},
};

#undef R
#undef W
#undef X

static const struct {
    const char *name;
    const struct policy_tool_def *tools;
    size_t n;
} surfaces[] = {
    {"wap", wap_tools, ARRAY_SIZE(wap_tools)},
    {"file", file_tools, ARRAY_SIZE(file_tools)},
    {"voltagent", voltagent_tools, ARRAY_SIZE(voltagent_tools)},
    {"kward", kward_tools, ARRAY_SIZE(kward_tools)},
};

const struct policy_tool_def *policy_surface_tools(const char *surface, size_t *n)
{
    for (size_t i = 0; i < ARRAY_SIZE(surfaces); i++)
        if (!strcmp(surfaces[i].name, surface)) {
            *n = surfaces[i].n;
            return surfaces[i].tools;
        }
    *n = 0;
    return NULL;
}
