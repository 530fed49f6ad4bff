/* tools/gate.h: the one tool gate. Every tools/call on every surface passes tool_gate_check
 * before the surface acts (tool_surface_call in tools/gate.c does it for the supervisor), so a
 * surface cannot forget a rule: it only maps names and argument shapes (tool_surface.target)
 * and words a refusal in its own error shape (tool_surface.refuse). The rules, in order:
 *   1. the tool is one of the surface's table (tool_surface.defs), else -ENOENT;
 *   2. enabled: a tool the policy disables is refused (TOOL_VERDICT_DENY, TOOL_RULE_DISABLED);
 *   3. the arguments are well formed (target() >= 0), else the surface answers its own
 *      argument error and nothing runs;
 *   4. needs approval: TOOL_VERDICT_NEEDS_APPROVAL;
 *   5. read before write, for a WRITE tool of a writable workspace whose target is an existing
 *      regular file: it must have been read in this session (tools/session.h) and be unchanged
 *      since (TOOL_VERDICT_DENY, TOOL_RULE_READ_FIRST or TOOL_RULE_STALE).
 * The caller decides what a verdict becomes. NEEDS_APPROVAL is refused like a DENY (the
 * surface's error shape, a message that says how to allow it, a trail `denial`) unless a person
 * approved this one call (ctx->approval, set by the connection after asking through the MCP
 * host's elicitation: supervisor/conn/dispatch.c, or through corral run's tool_call gate:
 * supervisor/runtime/run.c). See docs/tools.md, "The tool gate". */
#ifndef CORRAL_TOOL_GATE_H
#define CORRAL_TOOL_GATE_H

#include "tools/session.h"
#include "tools/tool.h"

enum tool_verdict_kind {
    TOOL_VERDICT_ALLOW = 0,
    TOOL_VERDICT_DENY,
    TOOL_VERDICT_NEEDS_APPROVAL,
};

enum tool_rule_id {
    TOOL_RULE_NONE = 0,
    TOOL_RULE_DISABLED,   /* the policy disables the tool for the role */
    TOOL_RULE_APPROVAL,   /* needs_approval */
    TOOL_RULE_READ_FIRST, /* read_before_write: never read in this session */
    TOOL_RULE_STALE,      /* read_before_write: changed since it was read */
};

struct tool_verdict {
    enum tool_verdict_kind kind;
    enum tool_rule_id rule;
    const struct tool_def *def; /* the tool's row */
    char *rel;                  /* read-before-write: the file, as broker_path_clean names it */
    struct broker_err err;      /* read-before-write: tools/session.h's words for it */
    const char *message;        /* the rule in a sentence (for surfaces without their own) */
    char words[400];            /* NEEDS_APPROVAL: what message points to (tool_gate_check) */
};

/* Decides one call of TOOL with ARGS (rules 1-5 above). 0 with *v set (free it with
 * tool_verdict_clear); -ENOENT when TOOL is not the surface's; -ENOMEM. Never acts. */
int tool_gate_check(const struct tool_surface *s, const struct tool_ctx *ctx, const char *tool,
                    const cJSON *args, struct tool_verdict *v);
void tool_verdict_clear(struct tool_verdict *v);

/* The trail's words for a rule ("needs approval", "read before write", ...). */
const char *tool_rule_words(enum tool_rule_id rule);

/* Whether read-before-write applies to TOOL: the policy's rule when it sets one, else the
 * table's default. Surfaces ask it to decide whether reads must be recorded. */
bool tool_gate_reads_matter(const struct tool_surface *s, const struct tool_ctx *ctx);

#endif
