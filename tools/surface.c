/* tools/surface.c: what every surface shares below the surfaces themselves: the default limits
 * (the WAP seed's recommended ones: 1 MiB files, 500 entries, 100 results, 1 MiB output, 30 s)
 * and the lookup of a tool's policy rule. The registry of surfaces is tools/registry.c, above them. */
#include "tools/tool.h"

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
