/* tools/registry.c: the tool surfaces by policy name. It sits above the four surfaces (each
 * calls the shared pieces of surface.c and gate.c below it), so naming them here makes no call
 * circle. */
#include "tools/surfaces.h"

#include <string.h>

static const struct tool_surface *const surfaces[] = {
    &wap_surface,
    &file_tools_surface,
    &kward_surface,
    &voltagent_surface,
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
