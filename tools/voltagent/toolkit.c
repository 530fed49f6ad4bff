/* tools/voltagent/toolkit.c: the search and skills toolkits' one list/call loop. */
#include "tools/voltagent/toolkit.h"
#include "tools/voltagent/voltagent.h"

#include <errno.h>
#include <string.h>

int voltagent_toolkit_list(const struct voltagent_toolkit *k, cJSON *arr)
{
    for (size_t i = 0; i < k->n_tools; i++) {
        const struct voltagent_toolkit_tool *t = &k->tools[i];
        cJSON *o = voltagent_index_tool_entry(t->name, t->desc, t->params, t->n_params);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            return -ENOMEM;
        }
    }
    return 0;
}

int voltagent_toolkit_call(const struct voltagent_toolkit *k, struct tool_ctx *ctx, const char *tool,
                           const cJSON *args, cJSON **result, bool *is_error)
{
    for (size_t i = 0; tool && i < k->n_tools; i++) {
        const struct voltagent_toolkit_tool *t = &k->tools[i];
        if (strcmp(t->name, tool))
            continue;
        struct voltagent_index_args a;
        struct broker_err e = {0};
        *is_error = false;
        if (voltagent_index_args_parse(tool, t->params, t->n_params, args, &a, &e) < 0) {
            *is_error = true;
            *result = voltagent_error(&e);
        } else if (k->needs_session && !ctx->session) {
            *is_error = true;
            *result = voltagent_error_text(
                broker_kind_name(BROKER_E_IO),
                "Error: Workspace skills need a session to keep their state in");
        } else {
            *result = t->fn(ctx, &a, is_error);
        }
        return *result ? 0 : -ENOMEM;
    }
    return -ENOENT;
}
