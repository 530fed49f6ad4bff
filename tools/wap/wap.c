/* tools/wap/wap.c: the Workspace Agent Protocol 1.0 surface (seed 000): its seven tools, their
 * parameters, response shapes and `{error, code, details}` errors, over the broker operations.
 * One table per tool drives both argument validation and the inputSchema of tools/list, so the
 * two can never disagree. */
#include "tools/broker/broker.h"
#include "tools/gate.h"
#include "tools/params.h"
#include "tools/surfaces.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The validated arguments of one call, by parameter index. */
struct args {
    const cJSON *v[8];
};

typedef cJSON *(*wap_fn)(struct tool_ctx *ctx, const struct args *a, struct broker_err *e);

struct wap_tool {
    struct tool_spec spec; /* first: tool_params_list / tool_params_find */
    wap_fn fn;
};

#define MAX_LINE 9007199254740991.0 /* 2^53 - 1: exact in a JSON number */
#define MAX_ITEMS 1000.0

static const char *const write_modes[] = {"create", "overwrite", "append", NULL};
static const char *const search_types[] = {"regex", "literal", NULL};

/* ---- argument access ------------------------------------------------------------------------ */

static const char *arg_str(const struct args *a, size_t i, const char *dflt)
{
    return a->v[i] ? a->v[i]->valuestring : dflt;
}
static bool arg_bool(const struct args *a, size_t i, bool dflt)
{
    return a->v[i] ? cJSON_IsTrue(a->v[i]) : dflt;
}
static uint64_t arg_u64(const struct args *a, size_t i, uint64_t dflt)
{
    return a->v[i] ? (uint64_t)a->v[i]->valuedouble : dflt;
}

static int check_int(const cJSON *v, double min, double max, const char *field, struct broker_err *e)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || floor(v->valuedouble) != v->valuedouble)
        return broker_fail(e, BROKER_E_INVALID, field, "%s must be an integer", field);
    if (v->valuedouble < min || v->valuedouble > max)
        return broker_fail(e, BROKER_E_INVALID, field, "%s must be between %.0f and %.0f", field, min,
                           max);
    return 0;
}

static const char *type_name(enum tool_param_type t)
{
    switch (t) {
    case TOOL_PARAM_STRING: return "a string";
    case TOOL_PARAM_BOOL: return "a boolean";
    case TOOL_PARAM_INT: return "an integer";
    case TOOL_PARAM_STRINGS: return "an array of strings";
    case TOOL_PARAM_STRMAP: return "an object of string values";
    case TOOL_PARAM_ITEMS: return "an array of operation objects";
    default: return "?";
    }
}

/* The checker's fault in WAP's words, with the field it concerns. */
static int bad_args(const struct wap_tool *t, const struct tool_param_bad *b, struct broker_err *e)
{
    const struct tool_param *p = b->param;
    switch (b->fault) {
    case TOOL_PARAM_NOT_OBJECT:
        return broker_fail(e, BROKER_E_INVALID, "arguments", "arguments must be an object");
    case TOOL_PARAM_UNKNOWN: {
        char f[64];
        snprintf(f, sizeof(f), "%.60s", b->key);
        return broker_fail(e, BROKER_E_INVALID, f, "%s takes no field \"%s\"", t->spec.name, f);
    }
    case TOOL_PARAM_CHOICE: {
        char list[128] = "";
        for (const char *const *c = p->choices; *c; c++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"",
                     c == p->choices ? "" : ", ", *c);
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be one of %s", p->name, list);
    }
    case TOOL_PARAM_NOT_FINITE:
    case TOOL_PARAM_NOT_WHOLE:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be an integer", p->name);
    case TOOL_PARAM_RANGE:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be between %.0f and %.0f", p->name,
                           p->min, p->max);
    case TOOL_PARAM_COUNT:
        if (p->type == TOOL_PARAM_STRMAP)
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s holds more than %.0f entries", p->name,
                               p->max);
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must hold %.0f to %.0f items", p->name,
                           p->min, p->max);
    case TOOL_PARAM_ITEM:
        if (p->type == TOOL_PARAM_STRMAP)
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s.%s must be a string", p->name, b->key);
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s[%d] must be %s", p->name, b->item,
                           p->type == TOOL_PARAM_STRINGS ? "a string" : "an object");
    case TOOL_PARAM_REQUIRED:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s is required", p->name);
    default:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be %s", p->name, type_name(p->type));
    }
}

/* Length-checked, then typed, then matched to the table: unknown fields are refused so a typo
 * ("startline") never silently reads the whole file. JSON null reads as absent. */
static int parse_args(const struct wap_tool *t, const cJSON *args, struct args *a, struct broker_err *e)
{
    struct tool_param_bad b;
    memset(a, 0, sizeof(*a));
    if (tool_params_check(t->spec.params, t->spec.n_params, args, a->v, NULL, NULL, NULL, &b) < 0)
        return bad_args(t, &b, e);
    return 0;
}

/* ---- result building ------------------------------------------------------------------------ */

static cJSON *oom(struct broker_err *e)
{
    broker_fail(e, BROKER_E_IO, NULL, "out of memory");
    return NULL;
}

static cJSON *meta_json(const struct broker_meta *m)
{
    cJSON *o = cJSON_CreateObject();
    char iso[32];
    broker_iso_time(&m->mtime, iso);
    if (!o || !cJSON_AddStringToObject(o, "path", m->path) ||
        !cJSON_AddNumberToObject(o, "size", (double)m->size) ||
        !cJSON_AddBoolToObject(o, "isDirectory", m->is_dir) ||
        !cJSON_AddStringToObject(o, "lastModified", iso)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The exclusions of a walk: the request's excludePatterns replace the defaults (an empty array
 * turns them off); without them the workspace defaults apply. */
static int excludes_of(const struct tool_ctx *ctx, const cJSON *arr, const char ***v, size_t *n,
                       struct broker_err *e)
{
    if (!arr) {
        const char *const *d;
        broker_default_excludes(ctx, &d, n);
        *v = NULL;
        if (*n && !(*v = malloc(*n * sizeof(char *))))
            return broker_fail(e, BROKER_E_IO, NULL, "out of memory");
        for (size_t i = 0; i < *n; i++)
            (*v)[i] = d[i];
        return 0;
    }
    *n = (size_t)cJSON_GetArraySize(arr);
    *v = NULL;
    if (*n && !(*v = malloc(*n * sizeof(char *))))
        return broker_fail(e, BROKER_E_IO, NULL, "out of memory");
    size_t i = 0;
    for (const cJSON *it = arr->child; it; it = it->next)
        (*v)[i++] = it->valuestring;
    return 0;
}

/* ---- the tools ------------------------------------------------------------------------------ */

static const struct tool_param explore_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Starting directory path", NULL, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false, "Whether to explore recursively", NULL, 0, 0},
    {"excludePatterns", TOOL_PARAM_STRINGS, false,
     "Glob patterns to exclude (e.g. [\"**/node_modules/**\", \"**/.git/**\"]); replaces the default "
     "exclusions",
     NULL, 0, 256},
    {"maxDepth", TOOL_PARAM_INT, false, "Maximum recursion depth (default: 3)", NULL, 1, 64},
    {"returnMetadata", TOOL_PARAM_BOOL, false, "Whether to include file metadata", NULL, 0, 0},
};

static cJSON *wap_explore(struct tool_ctx *ctx, const struct args *a, struct broker_err *e)
{
    _cleanup_free_ const char **ex = NULL;
    struct broker_walk_opts o = {
        .recursive = arg_bool(a, 1, false),
        .max_depth = (unsigned)arg_u64(a, 3, 3),
        .want_meta = arg_bool(a, 4, false),
        .max_entries = ctx->limits.max_explore_entries,
    };
    if (excludes_of(ctx, a->v[2], &ex, &o.n_exclude, e) < 0)
        return NULL;
    o.exclude = ex;
    struct broker_list l;
    if (broker_explore(ctx, arg_str(a, 0, "."), &o, &l, e) < 0)
        return NULL;
    cJSON *res = cJSON_CreateObject();
    cJSON *files = cJSON_AddArrayToObject(res, "files");
    for (size_t i = 0; files && i < l.n; i++) {
        cJSON *f = cJSON_CreateObject();
        if (!f || !cJSON_AddItemToArray(files, f) || !cJSON_AddStringToObject(f, "path", l.v[i].path) ||
            !cJSON_AddBoolToObject(f, "isDirectory", l.v[i].is_dir) ||
            (o.want_meta && !cJSON_AddItemToObject(f, "metadata", meta_json(&l.v[i])))) {
            files = NULL;
            break;
        }
    }
    bool ok = files && cJSON_AddBoolToObject(res, "isTruncated", l.truncated) &&
              cJSON_AddNumberToObject(res, "totalFound", (double)l.total);
    broker_list_clear(&l);
    if (!ok) {
        cJSON_Delete(res);
        return oom(e);
    }
    return res;
}

/* What the agent read or wrote, for the gate's read-before-write rule (tools/gate.h). Hashing
 * costs a pass over the file, so only when a rule of this policy can ask for it. */
static void note(struct tool_ctx *ctx, const char *path, bool wrote)
{
    if (!ctx->session || !tool_gate_reads_matter(&wap_surface, ctx))
        return;
    _cleanup_free_ char *rel = NULL;
    struct broker_err e;
    if (broker_path_clean(path, "path", &rel, &e) < 0)
        return;
    if (wrote)
        (void)tool_session_note_write(ctx->session, ctx, rel);
    else
        (void)tool_session_note_read(ctx->session, ctx, rel);
}

static const struct tool_param read_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Path to file", NULL, 0, 0},
    {"startLine", TOOL_PARAM_INT, false, "Optional start line (1-indexed)", NULL, 1, MAX_LINE},
    {"endLine", TOOL_PARAM_INT, false, "Optional end line (1-indexed)", NULL, 1, MAX_LINE},
};

#define WAP_READ_SCAN_FACTOR 64u

static cJSON *wap_read(struct tool_ctx *ctx, const struct args *a, struct broker_err *e)
{
    /* Content is capped at maxFileSize (isTruncated), but totalLines reads the whole file: a
     * file past WAP_READ_SCAN_FACTOR times the cap is refused by its size, before any read. */
    uint64_t cap = ctx->limits.max_file_size;
    struct broker_read_opts o = {
        .start_line = arg_u64(a, 1, 0),
        .end_line = arg_u64(a, 2, 0),
        .max_scan = cap > UINT64_MAX / WAP_READ_SCAN_FACTOR ? 0 : cap * WAP_READ_SCAN_FACTOR};
    if (o.end_line && o.end_line < (o.start_line ? o.start_line : 1)) {
        broker_fail(e, BROKER_E_INVALID, "endLine", "endLine (%ju) is before startLine (%ju)",
                    (uintmax_t)o.end_line, (uintmax_t)o.start_line);
        return NULL;
    }
    struct broker_read_result r;
    if (broker_read(ctx, arg_str(a, 0, ""), &o, &r, e) < 0)
        return NULL;
    note(ctx, arg_str(a, 0, ""), false);
    cJSON *res = cJSON_CreateObject();
    bool ok = res && cJSON_AddStringToObject(res, "content", r.content) &&
              cJSON_AddItemToObject(res, "metadata", meta_json(&r.meta)) &&
              cJSON_AddBoolToObject(res, "isTruncated", r.truncated) &&
              cJSON_AddNumberToObject(res, "totalLines", (double)r.total_lines) &&
              cJSON_AddNumberToObject(res, "returnedLines", (double)r.returned_lines);
    broker_read_result_clear(&r);
    if (!ok) {
        cJSON_Delete(res);
        return oom(e);
    }
    return res;
}

static const struct tool_param write_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Path to file", NULL, 0, 0},
    {"content", TOOL_PARAM_STRING, true, "Content to write", NULL, 0, 0},
    {"mode", TOOL_PARAM_STRING, false, "Write mode (default: \"overwrite\")", write_modes, 0, 0},
    {"createDirectories", TOOL_PARAM_BOOL, false, "Create parent directories if they don't exist", NULL,
     0, 0},
};

static cJSON *wap_write(struct tool_ctx *ctx, const struct args *a, struct broker_err *e)
{
    const char *mode = arg_str(a, 2, "overwrite");
    struct broker_write_opts o = {
        .mode = strcmp(mode, "create") == 0   ? BROKER_WRITE_CREATE
                : strcmp(mode, "append") == 0 ? BROKER_WRITE_APPEND
                                              : BROKER_WRITE_OVERWRITE,
        .create_dirs = arg_bool(a, 3, false),
    };
    const char *content = arg_str(a, 1, "");
    _cleanup_free_ char *display = NULL;
    size_t written = 0;
    if (broker_write(ctx, arg_str(a, 0, ""), content, strlen(content), &o, &display, &written, e) < 0)
        return NULL;
    note(ctx, arg_str(a, 0, ""), true);
    cJSON *res = cJSON_CreateObject();
    if (!res || !cJSON_AddBoolToObject(res, "success", true) ||
        !cJSON_AddStringToObject(res, "path", display) ||
        !cJSON_AddNumberToObject(res, "bytesWritten", (double)written)) {
        cJSON_Delete(res);
        return oom(e);
    }
    return res;
}

static const struct tool_param modify_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Path to file", NULL, 0, 0},
    {"operations", TOOL_PARAM_ITEMS, true,
     "List of operations to perform, in order (each sees the result of the ones before); all or none "
     "are applied",
     NULL, 1, MAX_ITEMS},
};

/* One operation object of modifyFile, by its "type". */
static int parse_op(const cJSON *o, size_t idx, struct broker_edit *ed, struct broker_err *e)
{
    static const struct {
        const char *type;
        enum broker_edit_kind kind;
        const char *fields[4]; /* required, then optional after NULL-terminated required part */
        const char *optional;
    } kinds[] = {
        {"replace", BROKER_EDIT_REPLACE_LINES, {"startLine", "endLine", "newContent", NULL}, NULL},
        {"insert", BROKER_EDIT_INSERT_LINES, {"afterLine", "newContent", NULL, NULL}, NULL},
        {"delete", BROKER_EDIT_DELETE_LINES, {"startLine", "endLine", NULL, NULL}, NULL},
        {"regexReplace", BROKER_EDIT_REGEX, {"pattern", "replacement", NULL, NULL}, "flags"},
    };
    char field[64];
    memset(ed, 0, sizeof(*ed));
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    snprintf(field, sizeof(field), "operations[%zu].type", idx);
    if (!cJSON_IsString(type))
        return broker_fail(e, BROKER_E_INVALID, field,
                           "%s must be \"replace\", \"insert\", \"delete\" or \"regexReplace\"", field);
    size_t k;
    for (k = 0; k < ARRAY_SIZE(kinds); k++)
        if (strcmp(kinds[k].type, type->valuestring) == 0)
            break;
    if (k == ARRAY_SIZE(kinds))
        return broker_fail(e, BROKER_E_INVALID, field,
                           "%s must be \"replace\", \"insert\", \"delete\" or \"regexReplace\"", field);
    ed->kind = kinds[k].kind;
    for (const cJSON *it = o->child; it; it = it->next) {
        const char *name = it->string ? it->string : "";
        snprintf(field, sizeof(field), "operations[%zu].%.30s", idx, name);
        bool known = strcmp(name, "type") == 0 ||
                     (kinds[k].optional && strcmp(name, kinds[k].optional) == 0);
        for (size_t f = 0; !known && kinds[k].fields[f]; f++)
            known = strcmp(name, kinds[k].fields[f]) == 0;
        if (!known)
            return broker_fail(e, BROKER_E_INVALID, field, "a %s operation takes no field \"%s\"",
                               kinds[k].type, name);
        if (strcmp(name, "type") == 0)
            continue;
        bool is_line = strstr(name, "Line") != NULL;
        if (is_line) {
            if (check_int(it, strcmp(name, "afterLine") == 0 ? 0 : 1, MAX_LINE, field, e) < 0)
                return -1;
        } else if (!cJSON_IsString(it)) {
            return broker_fail(e, BROKER_E_INVALID, field, "%s must be a string", field);
        }
        if (strcmp(name, "startLine") == 0)
            ed->start = (uint64_t)it->valuedouble;
        else if (strcmp(name, "endLine") == 0)
            ed->end = (uint64_t)it->valuedouble;
        else if (strcmp(name, "afterLine") == 0)
            ed->after = (uint64_t)it->valuedouble;
        else if (strcmp(name, "newContent") == 0)
            ed->text = it->valuestring;
        else if (strcmp(name, "pattern") == 0)
            ed->pattern = it->valuestring;
        else if (strcmp(name, "replacement") == 0)
            ed->replacement = it->valuestring;
        else if (strcmp(name, "flags") == 0)
            ed->flags = it->valuestring;
    }
    for (size_t f = 0; kinds[k].fields[f]; f++)
        if (!cJSON_GetObjectItemCaseSensitive(o, kinds[k].fields[f])) {
            snprintf(field, sizeof(field), "operations[%zu].%s", idx, kinds[k].fields[f]);
            return broker_fail(e, BROKER_E_INVALID, field, "%s is required for a %s operation", field,
                               kinds[k].type);
        }
    return 0;
}

static cJSON *wap_modify(struct tool_ctx *ctx, const struct args *a, struct broker_err *e)
{
    const cJSON *ops = a->v[1];
    size_t n = (size_t)cJSON_GetArraySize(ops);
    _cleanup_free_ struct broker_edit *ed = calloc(n, sizeof(*ed));
    if (!ed)
        return oom(e);
    size_t i = 0;
    for (const cJSON *it = ops->child; it; it = it->next, i++)
        if (parse_op(it, i, &ed[i], e) < 0)
            return NULL;
    _cleanup_free_ char *display = NULL;
    if (broker_modify(ctx, arg_str(a, 0, ""), ed, n, &display, e) < 0)
        return NULL;
    note(ctx, arg_str(a, 0, ""), true);
    cJSON *res = cJSON_CreateObject();
    if (!res || !cJSON_AddBoolToObject(res, "success", true) ||
        !cJSON_AddStringToObject(res, "path", display)) {
        cJSON_Delete(res);
        return oom(e);
    }
    return res;
}

static const struct tool_param search_params[] = {
    {"paths", TOOL_PARAM_STRINGS, true, "Paths to search in", NULL, 1, 64},
    {"query", TOOL_PARAM_STRING, true, "Search query", NULL, 0, 0},
    {"type", TOOL_PARAM_STRING, true, "Search type", search_types, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false, "Whether to search recursively (default: false)", NULL, 0, 0},
    {"excludePatterns", TOOL_PARAM_STRINGS, false,
     "Glob patterns to exclude; replaces the default exclusions", NULL, 0, 256},
    {"contextLines", TOOL_PARAM_INT, false, "Number of context lines to include (0 to 100)", NULL, 0,
     100},
};

static cJSON *string_array(char **v, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *s = cJSON_CreateString(v[i]);
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *wap_search(struct tool_ctx *ctx, const struct args *a, struct broker_err *e)
{
    _cleanup_free_ const char **ex = NULL;
    _cleanup_free_ const char **paths = NULL;
    size_t n_paths = (size_t)cJSON_GetArraySize(a->v[0]);
    if (!(paths = calloc(n_paths, sizeof(char *))))
        return oom(e);
    size_t i = 0;
    for (const cJSON *it = a->v[0]->child; it; it = it->next)
        paths[i++] = it->valuestring;
    struct broker_search_opts o = {
        .paths = paths,
        .n_paths = n_paths,
        .query = arg_str(a, 1, ""),
        .literal = strcmp(arg_str(a, 2, "regex"), "literal") == 0,
        .recursive = arg_bool(a, 3, false),
        .context = (unsigned)arg_u64(a, 5, 0),
        .max_results = ctx->limits.max_search_results,
    };
    if (excludes_of(ctx, a->v[4], &ex, &o.n_exclude, e) < 0)
        return NULL;
    o.exclude = ex;
    struct broker_search_result r;
    if (broker_search(ctx, &o, &r, e) < 0)
        return NULL;
    cJSON *res = cJSON_CreateObject();
    cJSON *matches = cJSON_AddArrayToObject(res, "matches");
    for (i = 0; matches && i < r.n; i++) {
        const struct broker_match *m = &r.v[i];
        cJSON *j = cJSON_CreateObject();
        if (!j || !cJSON_AddItemToArray(matches, j) || !cJSON_AddStringToObject(j, "path", m->path) ||
            !cJSON_AddNumberToObject(j, "line", (double)m->line) ||
            !cJSON_AddStringToObject(j, "matchText", m->text) ||
            !cJSON_AddItemToObject(j, "contextBefore", string_array(m->before, m->n_before)) ||
            !cJSON_AddItemToObject(j, "contextAfter", string_array(m->after, m->n_after)))
            matches = NULL;
    }
    bool ok = matches && cJSON_AddBoolToObject(res, "isTruncated", r.truncated) &&
              cJSON_AddNumberToObject(res, "totalMatches", (double)r.total);
    broker_search_result_clear(&r);
    if (!ok) {
        cJSON_Delete(res);
        return oom(e);
    }
    return res;
}

static const struct tool_param exec_params[] = {
    {"command", TOOL_PARAM_STRING, true, "Command to execute (run by sh -c in a command sandbox)", NULL,
     0, 0},
    {"workingDirectory", TOOL_PARAM_STRING, false, "Working directory (default: workspace root)", NULL,
     0, 0},
    {"timeout", TOOL_PARAM_INT, false, "Timeout in milliseconds (default and ceiling: the workspace's)",
     NULL, 1, 86400000},
    {"environment", TOOL_PARAM_STRMAP, false, "Environment variables", NULL, 0, 256},
};

static cJSON *command_json(const struct broker_command_result *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "stdout", r->out) ||
        !cJSON_AddStringToObject(o, "stderr", r->err) ||
        !cJSON_AddNumberToObject(o, "exitCode", r->exit_code) ||
        !cJSON_AddBoolToObject(o, "isOutputTruncated", r->truncated) ||
        !cJSON_AddNumberToObject(o, "durationMs", (double)r->duration_ms)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *wap_exec(struct tool_ctx *ctx, const struct args *a, struct broker_err *e)
{
    if (!ctx->allow_commands) {
        broker_fail(e, BROKER_E_DENIED, "command", "this agent's role may not run commands");
        return NULL;
    }
    const char *cmd = arg_str(a, 0, "");
    if (!*cmd || strlen(cmd) > 65536) {
        broker_fail(e, BROKER_E_INVALID, "command", "command must be 1 to 65536 bytes");
        return NULL;
    }
    size_t n_env = a->v[3] ? (size_t)cJSON_GetArraySize(a->v[3]) : 0;
    char **env = calloc(n_env + 1, sizeof(char *));
    if (!env)
        return oom(e);
    size_t i = 0;
    cJSON *res = NULL;
    for (const cJSON *it = a->v[3] ? a->v[3]->child : NULL; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        bool bad = !*k || strlen(k) > 256 || strchr(k, '=') || strlen(it->valuestring) > 32768;
        if (bad) {
            char f[64];
            snprintf(f, sizeof(f), "environment.%.40s", k);
            broker_fail(e, BROKER_E_INVALID, f,
                        "environment names are 1-256 bytes without '=', values at most 32 KiB");
            goto out;
        }
        if (!(env[i++] = util_printf("%s=%s", k, it->valuestring))) {
            oom(e);
            goto out;
        }
    }
    struct broker_command_opts o = {
        .command = cmd,
        .workdir = arg_str(a, 1, NULL),
        .timeout_sec = a->v[2] ? a->v[2]->valuedouble / 1000.0 : 0,
        .env = (const char *const *)env,
        .n_env = n_env,
    };
    struct broker_command_result r;
    if (broker_command(ctx, &o, &r, e) < 0)
        goto out;
    res = command_json(&r);
    if (!res)
        oom(e);
    else if (r.timed_out) {
        double t = o.timeout_sec > 0 ? o.timeout_sec : ctx->limits.command_timeout_sec;
        if (ctx->limits.command_timeout_max > 0 && t > ctx->limits.command_timeout_max)
            t = ctx->limits.command_timeout_max;
        broker_fail(e, BROKER_E_TIMEOUT, "timeout",
                    "the command ran past its timeout of %.0f ms and was stopped (SIGTERM, then "
                    "SIGKILL); its output so far is in details",
                    t * 1000.0);
        /* The caller turns this into a TIMEOUT error with res as its details. */
    }
    broker_command_result_clear(&r);
out:
    for (size_t k = 0; k < n_env; k++)
        free(env[k]);
    free(env);
    return res;
}

static cJSON *wap_info(struct tool_ctx *ctx, const struct args *a, struct broker_err *e)
{
    (void)a;
    const char *const *ex;
    size_t n;
    broker_default_excludes(ctx, &ex, &n);
    cJSON *res = cJSON_CreateObject();
    bool ok = res && cJSON_AddStringToObject(res, "root", "/"); /* never the host path */
    cJSON *arr = ok ? cJSON_AddArrayToObject(res, "defaultExclusions") : NULL;
    ok = arr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *s = cJSON_CreateString(ex[i]);
        ok = s && cJSON_AddItemToArray(arr, s);
    }
    cJSON *lim = ok ? cJSON_AddObjectToObject(res, "limits") : NULL;
    ok = lim && cJSON_AddNumberToObject(lim, "maxFileSize", (double)ctx->limits.max_file_size) &&
         cJSON_AddNumberToObject(lim, "maxDirectoryEntries", (double)ctx->limits.max_explore_entries) &&
         cJSON_AddNumberToObject(lim, "maxSearchResults", (double)ctx->limits.max_search_results) &&
         cJSON_AddNumberToObject(lim, "maxOutputSize", (double)ctx->limits.max_output_bytes);
    if (!ok) {
        cJSON_Delete(res);
        return oom(e);
    }
    return res;
}

static const struct wap_tool tools[] = {
    {{"exploreFiles", "Lists files and directories in a specified path, optionally recursively.",
      explore_params, ARRAY_SIZE(explore_params)},
     wap_explore},
    {{"readFile", "Reads the content of a file, with options to read specific line ranges.", read_params,
      ARRAY_SIZE(read_params)},
     wap_read},
    {{"writeFile", "Writes content to a file, creating the file if it doesn't exist.", write_params,
      ARRAY_SIZE(write_params)},
     wap_write},
    {{"modifyFile", "Performs targeted modifications to a file without rewriting the entire content.",
      modify_params, ARRAY_SIZE(modify_params)},
     wap_modify},
    {{"searchFiles", "Searches for content in files across the workspace.", search_params,
      ARRAY_SIZE(search_params)},
     wap_search},
    {{"executeCommand", "Executes a shell command in the workspace.", exec_params,
      ARRAY_SIZE(exec_params)},
     wap_exec},
    {{"getWorkspaceInfo",
      "Retrieves information about the workspace, including default settings and limits.", NULL, 0},
     wap_info},
};

/* ---- errors --------------------------------------------------------------------------------- */

static const char *wap_code(enum broker_kind k)
{
    switch (k) {
    case BROKER_E_NOT_FOUND: return "FILE_NOT_FOUND";
    case BROKER_E_DENIED: return "PERMISSION_DENIED";
    case BROKER_E_TOO_LARGE: return "SIZE_LIMIT_EXCEEDED";
    case BROKER_E_EXEC:
    case BROKER_E_IO: return "EXECUTION_FAILED";
    case BROKER_E_TIMEOUT: return "TIMEOUT";
    default: return "INVALID_ARGUMENT";
    }
}

/* {error, code, details: {reason, field?, ...}}; takes extra (may be NULL) into details. */
static cJSON *error_json(const struct broker_err *e, cJSON *extra)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *d = extra ? extra : cJSON_CreateObject();
    if (!o || !d || !cJSON_AddStringToObject(o, "error", e->msg[0] ? e->msg : "failed") ||
        !cJSON_AddStringToObject(o, "code", wap_code(e->kind)) ||
        !cJSON_AddStringToObject(d, "reason", broker_kind_name(e->kind)) ||
        (e->field[0] && !cJSON_AddStringToObject(d, "field", e->field))) {
        cJSON_Delete(o);
        cJSON_Delete(d);
        return NULL;
    }
    cJSON_AddItemToObject(o, "details", d);
    return o;
}

/* ---- the surface ---------------------------------------------------------------------------- */

/* modifyFile's operations: one of four shapes, which the generic table cannot say. */
static cJSON *ops_schema(const struct tool_param *p)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "type", "array");
    cJSON_AddNumberToObject(s, "minItems", p->min);
    cJSON_AddItemToObject(
        s, "items",
        cJSON_Parse(
            "{\"oneOf\":["
            "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"type\",\"startLine\","
            "\"endLine\",\"newContent\"],"
            "\"properties\":{\"type\":{\"const\":\"replace\"},\"startLine\":{\"type\":\"integer\","
            "\"minimum\":1},"
            "\"endLine\":{\"type\":\"integer\",\"minimum\":1},\"newContent\":{\"type\":\"string\"}}},"
            "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"type\",\"afterLine\","
            "\"newContent\"],"
            "\"properties\":{\"type\":{\"const\":\"insert\"},\"afterLine\":{\"type\":\"integer\","
            "\"minimum\":0},"
            "\"newContent\":{\"type\":\"string\"}}},"
            "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"type\",\"startLine\","
            "\"endLine\"],"
            "\"properties\":{\"type\":{\"const\":\"delete\"},\"startLine\":{\"type\":\"integer\","
            "\"minimum\":1},"
            "\"endLine\":{\"type\":\"integer\",\"minimum\":1}}},"
            "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"type\",\"pattern\","
            "\"replacement\"],"
            "\"properties\":{\"type\":{\"const\":\"regexReplace\"},\"pattern\":{\"type\":\"string\"},"
            "\"replacement\":{\"type\":\"string\"},\"flags\":{\"type\":\"string\",\"pattern\":\"^[gimsu]"
            "*$\"}}}"
            "]}"));
    if (!cJSON_GetObjectItemCaseSensitive(s, "items")) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

static cJSON *wap_list(const struct tool_ctx *ctx)
{
    (void)ctx;
    return tool_params_list(tools, ARRAY_SIZE(tools), sizeof(tools[0]), TOOL_PARAMS_ALL_BOUNDS,
                            ops_schema, NULL, NULL);
}

static const struct wap_tool *tool_find(const char *name)
{
    return tool_params_find(tools, ARRAY_SIZE(tools), sizeof(tools[0]), name);
}

/* The gate's view of a call: well-formed arguments, and the file a write would change
 * (writeFile "create" never changes an existing one). */
static int wap_target(const struct tool_ctx *ctx, const char *name, const cJSON *args, char **rel)
{
    *rel = NULL;
    const struct wap_tool *t = tool_find(name);
    struct broker_err e;
    struct args a;
    if (!t || parse_args(t, args, &a, &e) < 0)
        return -1;
    if (t->fn != wap_write && t->fn != wap_modify)
        return 0;
    if (t->fn == wap_write && !strcmp(arg_str(&a, 2, "overwrite"), "create"))
        return 0;
    /* A bad path, the root or a directory: the broker answers it as such. */
    _cleanup_free_ char *r = NULL;
    struct broker_meta m;
    if (broker_path_clean(arg_str(&a, 0, ""), "path", &r, &e) < 0 || !*r)
        return 0;
    if (broker_info(ctx, r, "path", &m, &e) == 0) {
        bool dir = m.is_dir;
        broker_meta_clear(&m);
        if (dir)
            return 0;
    }
    *rel = r;
    r = NULL;
    return 0;
}

/* A refusal by the gate: PERMISSION_DENIED, the rule as details.reason (the trail's denial). */
static cJSON *wap_refuse(struct tool_ctx *ctx, const char *name, const struct tool_verdict *v)
{
    (void)ctx;
    struct broker_err e = v->err;
    const char *reason = "denied";
    if (v->rule == TOOL_RULE_APPROVAL) {
        reason = "approval_required";
        broker_fail(&e, BROKER_E_DENIED, NULL, "%s", v->message);
    } else if (v->rule == TOOL_RULE_READ_FIRST) {
        reason = "read_before_write";
    } else if (v->rule == TOOL_RULE_STALE) {
        reason = "stale_read";
    } else {
        broker_fail(&e, BROKER_E_DENIED, NULL, "%s: %s", name, v->message ? v->message : "refused");
    }
    cJSON *d = cJSON_CreateObject();
    cJSON *o = cJSON_CreateObject();
    if (!o || !d || !cJSON_AddStringToObject(o, "error", e.msg) ||
        !cJSON_AddStringToObject(o, "code", wap_code(BROKER_E_DENIED)) ||
        !cJSON_AddStringToObject(d, "reason", reason) ||
        (e.field[0] && !cJSON_AddStringToObject(d, "field", e.field))) {
        cJSON_Delete(o);
        cJSON_Delete(d);
        return NULL;
    }
    cJSON_AddItemToObject(o, "details", d);
    return o;
}

static int wap_run(struct tool_ctx *ctx, const char *name, const cJSON *args, cJSON **result,
                   bool *is_error)
{
    *result = NULL;
    *is_error = false;
    const struct wap_tool *t = tool_find(name);
    if (!t)
        return -ENOENT;
    struct broker_err e = {0};
    struct args a;
    cJSON *res = NULL;
    if (parse_args(t, args, &a, &e) == 0)
        res = t->fn(ctx, &a, &e);
    /* A handler's result is its answer, except executeCommand's TIMEOUT, which carries one. */
    if (res && e.kind != BROKER_E_TIMEOUT) {
        *result = res;
        return 0;
    }
    /* executeCommand's TIMEOUT carries its partial output as details. */
    if (e.kind == BROKER_OK)
        broker_fail(&e, BROKER_E_IO, NULL, "the tool failed without saying why");
    *result = error_json(&e, res);
    *is_error = true;
    return *result ? 0 : -ENOMEM;
}

/* The gate's and the policy's table (tools/gate.h): names as the seed spells them, and kinds. */
static const struct tool_def defs[] = {
    {"exploreFiles", TOOL_KIND_READ, false},     {"readFile", TOOL_KIND_READ, false},
    {"writeFile", TOOL_KIND_WRITE, false},       {"modifyFile", TOOL_KIND_WRITE, false},
    {"searchFiles", TOOL_KIND_READ, false},      {"executeCommand", TOOL_KIND_COMMAND, false},
    {"getWorkspaceInfo", TOOL_KIND_READ, false},
};

const struct tool_surface wap_surface = {
    .name = "wap",
    .defs = defs,
    .n_defs = ARRAY_SIZE(defs),
    .list = wap_list,
    .run = wap_run,
    .target = wap_target,
    .refuse = wap_refuse,
};
