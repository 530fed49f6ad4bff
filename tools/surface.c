/* tools/surface.c: the registry of tool surfaces by policy name, and the default limits (the
 * WAP seed's recommended ones: 1 MiB files, 500 entries, 100 results, 1 MiB output, 30 s). */
#include "tools/surfaces.h"

#include <string.h>

void tool_limits_default(struct tool_limits *l)
{
    memset(l, 0, sizeof(*l));
    l->max_file_size = 1048576;
    l->max_explore_entries = 500;
    l->max_search_results = 100;
    l->max_output_bytes = 1048576;
    l->command_timeout_sec = 30.0;
    l->command_timeout_max = 30.0;
    l->exclude = NULL; /* the seed's default exclusion patterns */
    l->n_exclude = 0;
}

const struct tool_rule *tool_rule_find(const struct tool_ctx *ctx, const char *tool)
{
    for (size_t i = 0; ctx && tool && i < ctx->n_rules; i++)
        if (!strcmp(ctx->rules[i].name, tool))
            return &ctx->rules[i];
    return NULL;
}

bool tool_enabled(const struct tool_ctx *ctx, const char *tool)
{
    const struct tool_rule *r = tool_rule_find(ctx, tool);
    return !r || r->enabled;
}

static const struct tool_surface *const surfaces[] = {
    &tool_surface_wap,
    &tool_surface_file,
    &tool_surface_kward,
    &tool_surface_voltagent,
};

const struct tool_surface *tool_surface_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < ARRAY_SIZE(surfaces); i++)
        if (strcmp(surfaces[i]->name, name) == 0)
            return surfaces[i];
    return NULL;
}
