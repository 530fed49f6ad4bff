/* tools/surfaces.h: the surfaces tool_surface_find hands out (internal to tools/). Each is an
 * immutable table in its own file (wap.c, ...) over the broker operations of broker.h. */
#ifndef CORRAL_SURFACES_H
#define CORRAL_SURFACES_H

#include "tools/tool.h"

extern const struct tool_surface tool_surface_wap;
extern const struct tool_surface tool_surface_file;
extern const struct tool_surface tool_surface_kward;
extern const struct tool_surface tool_surface_voltagent;

#endif
