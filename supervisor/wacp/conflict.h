/* supervisor/wacp/conflict.h: the conflict types an `evaluated` integration detects (WACP
 * integration spec section 5) besides the layered strategy's content_overlap. */
#ifndef CORRAL_WACP_CONFLICT_H
#define CORRAL_WACP_CONFLICT_H

#include "supervisor/wacp/internal.h"

/* The closed set of the spec. A conflict list is a struct wacp_manifest whose entries carry the
 * path in conflict and, in `size`, one of these (content_overlap is 0, so the layered strategy's
 * overlap lists are conflict lists as they are). */
enum wacp_conflict_type {
    WACP_CONFLICT_CONTENT_OVERLAP = 0,
    WACP_CONFLICT_SEMANTIC_CONTRADICTION,
    WACP_CONFLICT_DEPENDENCY_VIOLATION,
    WACP_CONFLICT_CONSTRAINT_BREACH,
};
const char *wacp_conflict_type_name(uint64_t type);

/* dependency_violation: files of the child's BASE it left as they were (it built on them) that a
 * prior integration changed or removed in the parent's directory DIR since the child's base. */
int wacp_conflict_dependencies(int dir_fd, const struct wacp_manifest *base,
                               const struct wacp_manifest *changes, struct wacp_manifest *out,
                               struct cerr *err);

/* constraint_breach: the checkpoint's CHANGES against the constraints its creator put in the
 * directive (`directive.constraints`: `paths`, a list of path prefixes the work may touch;
 * `max_files`, how many files it may change). A path outside `paths` is one breach each; more
 * than `max_files` changes is one breach on the first path past the limit. No constraints: none.
 * Only the first WACP_CONFLICT_MAX_PREFIXES of `paths` count (the work stays bounded). */
#define WACP_CONFLICT_MAX_PREFIXES 256 /* `paths` entries read; the rest allow nothing */
int wacp_conflict_constraints(const cJSON *directive, const struct wacp_manifest *changes,
                              struct wacp_manifest *out, struct cerr *err);

/* semantic_contradiction (integration spec 5: "two workspaces reached incompatible
 * conclusions", a judgment): the policy's evaluator command judges the two sides of each file the
 * child changed, its version (from the checkpoint's objects) and the parent's current one, and
 * its verdict decides. The input: {workspace_id, checkpoint_id, intent, files: [{path, child,
 * parent, child_truncated, parent_truncated}]} (a side is null when absent or not a regular
 * file; at most WACP_EVAL_MAX_FILES files of at most WACP_EVAL_MAX_TEXT bytes each, as UTF-8).
 * PARENT_FD: the parent's directory (wacp_tree_dir_open; < 0: every parent side null).
 * Returns the JSON text (malloc'd) or NULL (out of memory). */
#define WACP_EVAL_MAX_FILES 64
#define WACP_EVAL_MAX_TEXT (32 * 1024)
#define WACP_EVAL_MAX_REASONS 64
char *wacp_conflict_evaluator_input(const struct wacp *w, const struct wacp_ws *t,
                                    const struct wacp_checkpoint *cp, int parent_fd);
/* The verdict: {"contradictions": [{"path": P, "reason": R}, ...]} (an empty list: none). Each P
 * must be one of CHANGES' paths; each becomes a semantic_contradiction in OUT, and REASONS (a
 * JSON array, may be NULL) gets {path, reason}. Anything else is -EINVAL with ERR saying what. */
int wacp_conflict_evaluator_verdict(const char *out, size_t len, const struct wacp_manifest *changes,
                                    struct wacp_manifest *conflicts, cJSON *reasons, struct cerr *err);

#endif
