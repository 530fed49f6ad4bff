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
int wacp_conflict_dependencies(const char *dir, const struct wacp_manifest *base,
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

#endif
