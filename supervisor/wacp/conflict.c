/* supervisor/wacp/conflict.c: dependency_violation and constraint_breach detection for the
 * `evaluated` integration strategy (WACP integration spec section 5). */
#include "supervisor/wacp/conflict.h"

#include "supervisor/wacp/files.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

const char *wacp_conflict_type_name(uint64_t type)
{
    static const char *const n[] = {"content_overlap", "semantic_contradiction", "dependency_violation",
                                    "constraint_breach"};
    return type < sizeof n / sizeof *n ? n[type] : "content_overlap";
}

static int add(struct wacp_manifest *out, const char *path, enum wacp_conflict_type type,
               struct cerr *err)
{
    if (wacp_files_manifest_get(out, path))
        return 0; /* one conflict per path: the first type found names it */
    if (wacp_files_manifest_add(out, path, "", type) < 0)
        return cerr_set(err, ENOMEM, "out of memory");
    return 0;
}

int wacp_conflict_dependencies(const char *dir, const struct wacp_manifest *base,
                               const struct wacp_manifest *changes, struct wacp_manifest *out,
                               struct cerr *err)
{
    struct wacp_manifest kept = {0}, moved = {0};
    int r = 0;
    for (size_t i = 0; r == 0 && i < base->n; i++)
        if (!wacp_files_manifest_get(changes, base->v[i].path) &&
            wacp_files_manifest_add(&kept, base->v[i].path, base->v[i].hash, base->v[i].size) < 0)
            r = cerr_set(err, ENOMEM, "out of memory");
    /* Against its own base, a kept file "overlaps" exactly when the parent's copy moved. */
    if (r == 0)
        r = wacp_files_overlaps(dir, &kept, base, &moved, err);
    for (size_t i = 0; r == 0 && i < moved.n; i++)
        r = add(out, moved.v[i].path, WACP_CONFLICT_DEPENDENCY_VIOLATION, err);
    wacp_files_manifest_clear(&kept);
    wacp_files_manifest_clear(&moved);
    return r;
}

static bool under_prefix(const char *path, const cJSON *prefixes)
{
    const cJSON *p;
    size_t seen = 0;
    cJSON_ArrayForEach (p, prefixes) {
        /* a bound on the work per changed file: prefixes past it allow nothing (stricter) */
        if (++seen > WACP_CONFLICT_MAX_PREFIXES)
            break;
        if (!cJSON_IsString(p) || !p->valuestring[0])
            continue;
        size_t n = strlen(p->valuestring);
        /* "src" and "src/" both cover src/a.c, and neither covers srcx/a.c */
        while (n > 1 && p->valuestring[n - 1] == '/')
            n--;
        if (!strncmp(path, p->valuestring, n) && (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

int wacp_conflict_constraints(const cJSON *directive, const struct wacp_manifest *changes,
                              struct wacp_manifest *out, struct cerr *err)
{
    const cJSON *c = cJSON_IsObject(directive)
                         ? cJSON_GetObjectItemCaseSensitive(directive, "constraints")
                         : NULL;
    if (!cJSON_IsObject(c))
        return 0;
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(c, "paths");
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(c, "max_files");
    /* the index of the first change past max_files; a negative limit allows none */
    size_t limit = SIZE_MAX;
    if (cJSON_IsNumber(max) && max->valuedouble < (double)changes->n)
        limit = max->valuedouble > 0 ? (size_t)max->valuedouble : 0;
    for (size_t i = 0; i < changes->n; i++) {
        const char *path = changes->v[i].path;
        bool breach = (cJSON_IsArray(paths) && !under_prefix(path, paths)) || i == limit;
        if (breach && add(out, path, WACP_CONFLICT_CONSTRAINT_BREACH, err) < 0)
            return -1;
    }
    return 0;
}
