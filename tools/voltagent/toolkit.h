/* tools/voltagent/toolkit.h: the one table shape and list/call loop of the VoltAgent search
 * and skills toolkits (their tools take zod-style arguments, tools/voltagent/index.h). The
 * gate (tools/gate.h) has decided the rules before a call gets here. */
#ifndef CORRAL_VOLTAGENT_TOOLKIT_H
#define CORRAL_VOLTAGENT_TOOLKIT_H

#include "tools/tool.h"
#include "tools/voltagent/index.h"

typedef cJSON *(*voltagent_toolkit_fn)(struct tool_ctx *ctx, const struct voltagent_index_args *a,
                                       bool *is_error);

struct voltagent_toolkit_tool {
    const char *name, *desc;
    const struct voltagent_index_param *params;
    size_t n_params;
    voltagent_toolkit_fn fn;
};

struct voltagent_toolkit {
    const struct voltagent_toolkit_tool *tools;
    size_t n_tools;
    bool needs_session; /* its state lives in the session: refused without one */
};

/* Appends the toolkit's tools/list entries to ARR: 0 or -ENOMEM. */
int voltagent_toolkit_list(const struct voltagent_toolkit *k, cJSON *arr);
/* -ENOENT when TOOL is not the toolkit's; else 0 with *result (its answer, or the error result
 * for bad arguments, *is_error set), or -ENOMEM. */
int voltagent_toolkit_call(const struct voltagent_toolkit *k, struct tool_ctx *ctx, const char *tool,
                           const cJSON *args, cJSON **result, bool *is_error);

#endif
