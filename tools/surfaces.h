/* tools/surfaces.h: the surfaces tool_surface_find hands out (internal to tools/). Each is an
 * immutable table in its own file (wap.c, ...) over the broker operations of broker.h. */
#ifndef CORRAL_SURFACES_H
#define CORRAL_SURFACES_H

#include "tools/tool.h"

extern const struct tool_surface wap_surface;
extern const struct tool_surface file_tools_surface;
extern const struct tool_surface kward_surface;
extern const struct tool_surface voltagent_surface;

#endif
