/* supervisor/wacp/conflict.c: dependency_violation and constraint_breach detection for the
 * `evaluated` integration strategy (WACP integration spec section 5). */
#include "supervisor/wacp/conflict.h"

#include "supervisor/wacp/files.h"
#include "tools/broker/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int wacp_conflict_dependencies(int dir_fd, const struct wacp_manifest *base,
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
        r = wacp_files_overlaps(dir_fd, &kept, base, &moved, err);
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

/* ---- semantic_contradiction: the evaluator's input and verdict ---- */

/* At most CAP bytes of the regular file REL under DIR (never through a link: an agent made the
 * tree), as a JSON string (invalid UTF-8 replaced); NULL JSON when absent or not a file. */
static cJSON *side(int dfd, const char *rel, bool *truncated)
{
    *truncated = false;
    if (dfd < 0)
        return cJSON_CreateNull();
    struct open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return cJSON_CreateNull();
    }
    char *buf = malloc(WACP_EVAL_MAX_TEXT + 1);
    size_t got = 0;
    while (buf && got < WACP_EVAL_MAX_TEXT) {
        ssize_t n = read(fd, buf + got, WACP_EVAL_MAX_TEXT - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    char probe;
    *truncated = buf && got == WACP_EVAL_MAX_TEXT && read(fd, &probe, 1) == 1;
    close(fd);
    if (!buf)
        return NULL;
    /* bytes that are not UTF-8 become U+FFFD for the evaluator (cJSON escapes the rest) */
    char *clean = buf ? broker_utf8_sanitize(buf, got, WACP_EVAL_MAX_TEXT, NULL) : NULL;
    free(buf);
    cJSON *s = clean ? cJSON_CreateString(clean) : NULL;
    free(clean);
    return s;
}

char *wacp_conflict_evaluator_input(const struct wacp *w, const struct wacp_ws *t,
                                    const struct wacp_checkpoint *cp, int pfd)
{
    cJSON *in = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(in, "files");
    bool ok = files && cJSON_AddStringToObject(in, "workspace_id", t->id) &&
              cJSON_AddStringToObject(in, "checkpoint_id", cp->id) &&
              cJSON_AddStringToObject(in, "intent", cp->intent ? cp->intent : "");
    _cleanup_close_ int ofd = open(w->objects_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (size_t i = 0; ok && i < cp->files.n && i < WACP_EVAL_MAX_FILES; i++) {
        const struct wacp_file *f = &cp->files.v[i];
        bool ct = false, pt = false;
        cJSON *o = cJSON_CreateObject();
        /* the child's side: its object by hash (a deletion has none) */
        cJSON *child = f->hash[0] ? side(ofd, f->hash, &ct) : cJSON_CreateNull();
        cJSON *parent = side(pfd, f->path, &pt);
        if (!o || !child || !parent) {
            cJSON_Delete(o);
            cJSON_Delete(child);
            cJSON_Delete(parent);
            ok = false;
            break;
        }
        cJSON_AddItemToArray(files, o);
        cJSON_AddItemToObject(o, "child", child);
        cJSON_AddItemToObject(o, "parent", parent);
        ok = cJSON_AddStringToObject(o, "path", f->path) &&
             cJSON_AddBoolToObject(o, "child_truncated", ct) &&
             cJSON_AddBoolToObject(o, "parent_truncated", pt);
    }
    char *text = ok ? cJSON_PrintUnformatted(in) : NULL;
    cJSON_Delete(in);
    return text;
}

int wacp_conflict_evaluator_verdict(const char *out, size_t len, const struct wacp_manifest *changes,
                                    struct wacp_manifest *conflicts, cJSON *reasons, struct cerr *err)
{
    cJSON *v = cJSON_ParseWithLength(out, len);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(v, "contradictions");
    int r = 0;
    if (!cJSON_IsObject(v) || !cJSON_IsArray(list))
        r = cerr_set(err, EINVAL,
                     "the evaluator must print {\"contradictions\": [{\"path\": ..., \"reason\": "
                     "...}]} (an empty list: none)");
    else if (cJSON_GetArraySize(list) > WACP_EVAL_MAX_REASONS)
        r = cerr_set(err, EINVAL, "the evaluator named more than %d contradictions",
                     WACP_EVAL_MAX_REASONS);
    const cJSON *c, *walk = r == 0 ? list : NULL;
    size_t k = 0;
    cJSON_ArrayForEach (c, walk) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "path");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(c, "reason");
        if (!cJSON_IsString(p) || !wacp_files_manifest_get(changes, p->valuestring)) {
            r = cerr_set(err, EINVAL,
                         "the evaluator's contradiction %zu names no file the checkpoint changed", k);
            break;
        }
        if (add(conflicts, p->valuestring, WACP_CONFLICT_SEMANTIC_CONTRADICTION, err) < 0) {
            r = -ENOMEM;
            break;
        }
        cJSON *o = reasons ? cJSON_CreateObject() : NULL;
        if (o && (!cJSON_AddStringToObject(o, "path", p->valuestring) ||
                  !cJSON_AddStringToObject(o, "reason",
                                           cJSON_IsString(why) ? why->valuestring : "") ||
                  !cJSON_AddItemToArray(reasons, o)))
            cJSON_Delete(o);
        k++;
    }
    cJSON_Delete(v);
    return r;
}
