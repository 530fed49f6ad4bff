/* policy/surfaces.c: the tools of each seed surface and what each needs (read, write or command
 * authority), so a policy naming a tool is checked against the surface it speaks. The table is
 * the tool gate's own (tool_surface.defs, tools/gate.h): one place says a tool's kind. */
#include "policy/internal.h"
#include "tools/tool.h"

_Static_assert((int)POLICY_TOOL_READ == (int)TOOL_KIND_READ, "policy and tool kinds agree");
_Static_assert((int)POLICY_TOOL_WRITE == (int)TOOL_KIND_WRITE, "policy and tool kinds agree");
_Static_assert((int)POLICY_TOOL_COMMAND == (int)TOOL_KIND_COMMAND, "policy and tool kinds agree");

const struct tool_def *policy_surface_tools(const char *surface, size_t *n)
{
    const struct tool_surface *s = tool_surface_find(surface);
    *n = s ? s->n_defs : 0;
    return s ? s->defs : NULL;
}
