/* tools/voltagent/voltagent.h: the VoltAgent workspace surface (seed 003) is four toolkits, as upstream:
 * filesystem (filesystem.c) and sandbox (sandbox.c), search (search.c) and skills (skills.c);
 * voltagent.c owns the surface's registry. Internal to tools/. */
#ifndef CORRAL_TOOLS_VOLTAGENT_H
#define CORRAL_TOOLS_VOLTAGENT_H

#include "tools/broker/broker.h"

/* The error result of the surface, one shape for every toolkit: {"error": TEXT, "code": CODE}.
 * Upstream's toolkits answer a failure with a string, mostly "Error: ..."; TEXT is that string
 * (the broker's message after "Error: "), CODE a stable snake_case name (broker_kind_name, or
 * one of the surface's refusal codes below) for programs and the trail. NULL on ENOMEM. */
cJSON *voltagent_error(const struct broker_err *e);
/* The same shape with CODE and TEXT spelled by the caller (upstream's own messages). */
cJSON *voltagent_error_text(const char *code, const char *text);

/* Refusal codes (the surface's denial function turns these into trail denials, with "denied"
 * for the broker's containment refusals). */
#define VOLTAGENT_E_TRAVERSAL "path_traversal"          /* ".." or "~" in a path */
#define VOLTAGENT_E_READ_ONLY "read_only"               /* a write in read-only mode */
#define VOLTAGENT_E_READ_FIRST "read_before_write"      /* never read in this session */
#define VOLTAGENT_E_STALE "changed_since_read"          /* changed since the agent read it */
#define VOLTAGENT_E_APPROVAL "approval_required"        /* needs_approval: no admin can approve yet */
#define VOLTAGENT_E_COMMANDS "commands_not_allowed"     /* the role may not run commands */
#define VOLTAGENT_E_SKILL_FILE "skill_file_not_allowed" /* not in the skill's front matter lists */
#define VOLTAGENT_E_SYMLINK "symlink_not_allowed"       /* a path naming a symlink (upstream refuses) */

/* The surface's path rule (seed 003): a workspace path is virtual and starts with '/'; a ".."
 * segment or a '~' anywhere is refused outright (not cleaned away). 0 when PATH passes; else -1
 * with *error set to the error result (invalid_argument, or path_traversal; NULL on ENOMEM). */
int voltagent_path_check(const char *path, const char *field, cJSON **error);

/* Results: where upstream's tool returns a string, the success result is {"output": STRING}
 * (the string as upstream spells it), with structured fields beside it where they help a
 * program; where upstream returns an object (execute_command), that object. The tool gate
 * (tools/gate.h) applies the policy's rules to every toolkit's tools before the registry
 * (voltagent.c) dispatches, so a toolkit never sees a call that needs approval.
 *
 * Each toolkit: its tools for tools/list (appended to ARR; 0 or -ENOMEM), and a call that
 * returns -ENOENT when TOOL is not one of its own, else as tool_surface.call. */
int voltagent_search_list(const struct tool_ctx *ctx, cJSON *arr);
int voltagent_search_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                          bool *is_error);
int voltagent_skills_list(const struct tool_ctx *ctx, cJSON *arr);
int voltagent_skills_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                          bool *is_error);

#endif
