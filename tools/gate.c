/* tools/gate.c: the one tool gate (tools/gate.h) and the one list/call path over a surface's
 * table (tool_surface_list, tool_surface_call). */
#include "tools/gate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct tool_def *tool_surface_def(const struct tool_surface *s, const char *tool)
{
    for (size_t i = 0; s && tool && i < s->n_defs; i++)
        if (!strcmp(s->defs[i].name, tool))
            return &s->defs[i];
    return NULL;
}

const char *tool_rule_words(enum tool_rule_id rule)
{
    switch (rule) {
    case TOOL_RULE_DISABLED: return "tool disabled by policy";
    case TOOL_RULE_APPROVAL: return "needs approval";
    case TOOL_RULE_READ_FIRST: return "read before write";
    case TOOL_RULE_STALE: return "read before write (changed since read)";
    default: return NULL;
    }
}

static bool read_first(const struct tool_ctx *ctx, const struct tool_def *d)
{
    if (d->kind != TOOL_KIND_WRITE)
        return false;
    const struct tool_rule *r = tool_rule_find(ctx, d->name);
    return r ? r->read_before_write : d->read_first;
}

bool tool_gate_reads_matter(const struct tool_surface *s, const struct tool_ctx *ctx)
{
    for (size_t i = 0; i < s->n_defs; i++)
        if (read_first(ctx, &s->defs[i]))
            return true;
    return false;
}

int tool_gate_check(const struct tool_surface *s, const struct tool_ctx *ctx, const char *tool,
                    const cJSON *args, struct tool_verdict *v)
{
    memset(v, 0, sizeof(*v));
    v->def = tool_surface_def(s, tool);
    if (!v->def)
        return -ENOENT;
    const struct tool_rule *rule = tool_rule_find(ctx, tool);
    if (rule && !rule->enabled) {
        v->kind = TOOL_VERDICT_DENY;
        v->rule = TOOL_RULE_DISABLED;
        v->message = "the policy disables this tool for the agent's role";
        return 0;
    }
    int t = s->target(ctx, tool, args, &v->rel);
    if (t == -ENOMEM)
        return -ENOMEM;
    if (t < 0)
        return 0; /* malformed: the surface answers its own argument error */
    if (rule && rule->needs_approval && ctx->approval != TOOL_APPROVAL_GRANTED) {
        v->kind = TOOL_VERDICT_NEEDS_APPROVAL;
        v->rule = TOOL_RULE_APPROVAL;
        if (ctx->approval == TOOL_APPROVAL_DECLINED)
            snprintf(v->words, sizeof(v->words),
                     "%.64s was declined by the person asked to approve it; nothing was done", tool);
        else
            snprintf(
                v->words, sizeof(v->words),
                "%.64s needs a person's approval and nobody can be asked here; nothing was done. To "
                "allow "
                "it, lift needs_approval for '%.64s' in the policy, or use corral mcp from an MCP host "
                "that supports elicitation (it asks the person)",
                tool, tool);
        v->message = v->words;
        return 0;
    }
    /* A read-only workspace refuses every write anyway, in the surface's words. */
    if (v->rel && !ctx->read_only && read_first(ctx, v->def)) {
        enum tool_fresh why;
        if (tool_session_check_fresh(ctx->session, ctx, v->rel, "path", &why, &v->err) < 0 &&
            why != TOOL_FRESH_OK) {
            v->kind = TOOL_VERDICT_DENY;
            v->rule = why == TOOL_FRESH_CHANGED ? TOOL_RULE_STALE : TOOL_RULE_READ_FIRST;
            v->message = v->err.msg;
        }
    }
    return 0;
}

void tool_verdict_clear(struct tool_verdict *v)
{
    free(v->rel);
    v->rel = NULL;
}

cJSON *tool_surface_list(const struct tool_surface *s, const struct tool_ctx *ctx)
{
    cJSON *tools = s->list(ctx);
    /* A tool the policy disables is not offered at all. */
    for (cJSON *t = tools ? tools->child : NULL, *next; t; t = next) {
        next = t->next;
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
        if (cJSON_IsString(n) && !tool_enabled(ctx, n->valuestring))
            cJSON_Delete(cJSON_DetachItemViaPointer(tools, t));
    }
    return tools;
}

int tool_surface_call(const struct tool_surface *s, struct tool_ctx *ctx, const char *tool,
                      const cJSON *args, cJSON **result, bool *is_error)
{
    *result = NULL;
    *is_error = false;
    struct tool_verdict v;
    int r = tool_gate_check(s, ctx, tool, args, &v);
    if (r < 0)
        return r;
    if (v.kind == TOOL_VERDICT_DENY && v.rule == TOOL_RULE_DISABLED) {
        tool_verdict_clear(&v);
        return -EPERM;
    }
    /* The one place a verdict becomes an answer. NEEDS_APPROVAL reaches here only when nobody
     * approved this call (corral run's tool_call gate and corral mcp's elicitation ask first):
     * it is refused like a DENY and never runs. */
    if (v.kind != TOOL_VERDICT_ALLOW) {
        *result = s->refuse(ctx, tool, &v);
        *is_error = true;
        tool_verdict_clear(&v);
        return *result ? 0 : -ENOMEM;
    }
    tool_verdict_clear(&v);
    return s->run(ctx, tool, args, result, is_error);
}
