/* tools/voltagent.h: the VoltAgent workspace surface (seed 003) is four toolkits, as upstream:
 * filesystem and sandbox (voltagent.c, which also owns the surface's registry and error shape),
 * search (voltagent_search.c) and skills (voltagent_skills.c). Internal to tools/. */
#ifndef CORRAL_TOOLS_VOLTAGENT_H
#define CORRAL_TOOLS_VOLTAGENT_H

#include "tools/broker.h"

/* The error result of the surface for a broker failure (one shape for every toolkit). */
cJSON *voltagent_error(const struct broker_err *e);

/* Each toolkit: its tools for tools/list (appended to ARR; 0 or -ENOMEM), and a call that
 * returns -ENOENT when TOOL is not one of its own, else as tool_surface.call. */
int voltagent_search_list(const struct tool_ctx *ctx, cJSON *arr);
int voltagent_search_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                          bool *is_error);
int voltagent_skills_list(const struct tool_ctx *ctx, cJSON *arr);
int voltagent_skills_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                          bool *is_error);

#endif
