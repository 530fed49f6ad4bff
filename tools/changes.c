/* What a tool call changed in its workspace, noted by the broker as it writes, so the call's
 * trail entry can say how it left each file (docs/trail.md, tool_call `files`). */
#include "tools/tool.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void tool_changes_note(struct tool_call_ctl *ctl, const char *path, enum tool_change_kind kind,
                       const char *hash, uint64_t size)
{
    if (!ctl || ctl->changes_unknown)
        return;
    /* A later change of the same path in the same call replaces the earlier one. */
    struct tool_change *c = NULL;
    for (size_t i = 0; i < ctl->n_changes && !c; i++)
        if (!strcmp(ctl->changes[i].path, path))
            c = &ctl->changes[i];
    if (!c) {
        struct tool_change *v = ctl->n_changes < TOOL_CHANGES_MAX
                                    ? realloc(ctl->changes, (ctl->n_changes + 1) * sizeof(*v))
                                    : NULL;
        char *p = v ? strdup(path) : NULL;
        if (!p) {
            /* Past the maximum or out of memory: the record says it does not know. */
            if (v)
                ctl->changes = v;
            ctl->changes_unknown = true;
            return;
        }
        ctl->changes = v;
        c = &v[ctl->n_changes++];
        c->path = p;
    }
    c->kind = kind;
    c->size = kind == TOOL_CHANGE_FILE ? size : 0;
    snprintf(c->hash, sizeof(c->hash), "%s", kind == TOOL_CHANGE_FILE && hash ? hash : "");
}

void tool_changes_clear(struct tool_call_ctl *ctl)
{
    for (size_t i = 0; i < ctl->n_changes; i++)
        free(ctl->changes[i].path);
    free(ctl->changes);
    ctl->changes = NULL;
    ctl->n_changes = 0;
    ctl->changes_unknown = false;
}
