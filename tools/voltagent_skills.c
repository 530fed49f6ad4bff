/* tools/voltagent_skills.c: the skills toolkit of the VoltAgent surface (placeholder: no tools yet;
 * the toolkit lands with issue 7). */
#include "tools/voltagent.h"

#include <errno.h>

int voltagent_skills_list(const struct tool_ctx *ctx, cJSON *arr)
{
    (void)ctx;
    (void)arr;
    return 0;
}

int voltagent_skills_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                        bool *is_error)
{
    (void)ctx;
    (void)tool;
    (void)args;
    (void)result;
    (void)is_error;
    return -ENOENT;
}
