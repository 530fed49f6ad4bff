/* tools/file/file_tools.c: the File Tools surface (seed 001): file.read, file.write, file.patch,
 * file.delete, file.list and file.search with the seed's parameters, response shapes and
 * `{error, message}` errors, over the broker operations. As in wap.c, one table per tool drives
 * both argument validation and the inputSchema of tools/list. */
#include "tools/broker/broker.h"
#include "tools/gate.h"
#include "tools/params.h"
#include "tools/session.h"
#include "tools/surfaces.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One call in flight: the validated arguments by parameter index, and how it failed. CODE,
 * when set, is the error code; otherwise the broker's kind is spelled by ft_code. */
struct call {
    struct tool_ctx *ctx;
    const struct ft_tool *t;
    const cJSON *v[6];
    struct broker_err e;
    const char *code;
};

struct ft_tool {
    struct tool_spec spec; /* first: tool_params_list / tool_params_find */
    cJSON *(*fn)(struct call *c);
    bool writes; /* changes the workspace: read-only, read-first and write_failed apply */
};

#define MAX_LINE 9007199254740991.0 /* 2^53 - 1: exact in a JSON number */
#define MAX_PATCHES 1000.0
#define MAX_CONTEXT 100.0  /* broker_search's own bound on context lines */
#define LIST_MAX_DEPTH 64u /* directory levels a `**` pattern descends */
#define SEARCH_DEFAULT 100 /* the seed's default max_results */

/* ---- arguments ------------------------------------------------------------------------------ */

static const char *arg_str(const struct call *c, size_t i, const char *dflt)
{
    return c->v[i] ? c->v[i]->valuestring : dflt;
}
static bool arg_bool(const struct call *c, size_t i, bool dflt)
{
    return c->v[i] ? cJSON_IsTrue(c->v[i]) : dflt;
}
static uint64_t arg_u64(const struct call *c, size_t i, uint64_t dflt)
{
    return c->v[i] ? (uint64_t)c->v[i]->valuedouble : dflt;
}

static int fail(struct call *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct call *c, const char *code, const char *fmt, ...)
{
    c->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->e.msg, sizeof(c->e.msg), fmt, ap);
    va_end(ap);
    return -1;
}

static cJSON *oom(struct call *c)
{
    broker_fail(&c->e, BROKER_E_IO, NULL, "out of memory");
    c->code = "io_error";
    return NULL;
}

/* One {find, replace} of file.patch's patches (the checker has seen it is an object). */
static int check_patch(const struct tool_param *p, int i, const cJSON *it, void *arg)
{
    struct call *c = arg;
    for (const cJSON *f = it->child; f; f = f->next) {
        const char *k = f->string ? f->string : "";
        if (strcmp(k, "find") != 0 && strcmp(k, "replace") != 0)
            return fail(c, "invalid_argument",
                        "%s[%d] takes only \"find\" and \"replace\", not \"%.40s\"", p->name, i, k);
        if (!cJSON_IsString(f))
            return fail(c, "invalid_argument", "%s[%d].%s must be a string", p->name, i, k);
    }
    const cJSON *find = cJSON_GetObjectItemCaseSensitive(it, "find");
    if (!find || !cJSON_GetObjectItemCaseSensitive(it, "replace"))
        return fail(c, "invalid_argument", "%s[%d] needs both \"find\" and \"replace\"", p->name, i);
    if (!*find->valuestring)
        return fail(c, "invalid_argument", "%s[%d].find is empty; give the exact text to replace",
                    p->name, i);
    return 0;
}

/* Types, then the table: unknown fields are refused so that a typo ("ofset") never silently
 * reads the whole file. JSON null reads as absent. The checker's faults in the seed's words. */
static int parse_args(struct call *c, const cJSON *args)
{
    const struct ft_tool *t = c->t;
    struct tool_param_bad b;
    if (tool_params_check(t->spec.params, t->spec.n_params, args, c->v, NULL, check_patch, c, &b) == 0)
        return 0;
    const struct tool_param *p = b.param;
    switch (b.fault) {
    case TOOL_PARAM_NOT_OBJECT: return fail(c, "invalid_argument", "arguments must be an object");
    case TOOL_PARAM_UNKNOWN: {
        char name[64];
        size_t n = broker_utf8_cut(b.key, strlen(b.key), 60);
        memcpy(name, b.key, n);
        name[n] = '\0';
        return fail(c, "invalid_argument", "%s takes no argument \"%s\"", t->spec.name, name);
    }
    case TOOL_PARAM_TYPE:
        switch (p->type) {
        case TOOL_PARAM_BOOL:
            return fail(c, "invalid_argument", "%s must be a boolean (true or false)", p->name);
        case TOOL_PARAM_INT: return fail(c, "invalid_argument", "%s must be an integer", p->name);
        case TOOL_PARAM_ITEMS:
            return fail(c, "invalid_argument", "%s must be an array of {find, replace} objects",
                        p->name);
        default: return fail(c, "invalid_argument", "%s must be a string", p->name);
        }
    case TOOL_PARAM_NOT_FINITE:
    case TOOL_PARAM_NOT_WHOLE: return fail(c, "invalid_argument", "%s must be an integer", p->name);
    case TOOL_PARAM_RANGE:
        return fail(c, "invalid_argument", "%s must be between %.0f and %.0f", p->name, p->min, p->max);
    case TOOL_PARAM_COUNT:
        return fail(c, "invalid_argument", "%s must hold %.0f to %.0f patches", p->name, p->min, p->max);
    case TOOL_PARAM_ITEM:
        return fail(c, "invalid_argument", "%s[%d] must be an object {find, replace}", p->name, b.item);
    case TOOL_PARAM_HOOK: return -1; /* check_patch said why */
    case TOOL_PARAM_REQUIRED: return fail(c, "invalid_argument", "%s is required", p->name);
    default: return fail(c, "invalid_argument", "%s has an unknown type", p ? p->name : "?");
    }
}

/* ---- paths, rules, names -------------------------------------------------------------------- */

/* The seed's path rule: relative to the workspace root ("" and "." are the root). An absolute
 * path names a place outside the workspace's own names, so it is refused as an escape. The
 * cleaned name goes to the broker, whose openat2 beneath the root fd is the containment; this
 * cleaning only refuses a `..` above the root early and names the file for the session. */
static int path_rel(struct call *c, const char *path, char **rel)
{
    *rel = NULL;
    if (broker_path_clean(path, "path", rel, &c->e) < 0)
        return -1;
    if (path[0] == '/') {
        free(*rel);
        *rel = NULL;
        return fail(c, "path_outside_workspace",
                    "path is absolute; paths are relative to the workspace root (e.g. \"src/app.py\")");
    }
    return 0;
}

/* Does any tool of this policy need reads recorded (for the gate's read-first rule)? Hashing
 * every read costs a pass over the file, so it is done only when a rule can ask for it. */
static bool reads_matter(const struct tool_ctx *ctx)
{
    return tool_gate_reads_matter(&file_tools_surface, ctx);
}

static void note_write(struct call *c, const char *rel)
{
    if (reads_matter(c->ctx))
        (void)tool_session_note_write(c->ctx->session, c->ctx, rel);
}

/* The broker names arguments as the WAP seed does ("query", "paths[0]", "operations[1].find");
 * this surface's names differ. Renames the field and its first mention in the message. */
static void respell(struct broker_err *e, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to);
    if (strncmp(e->field, from, fl) != 0)
        return;
    char buf[sizeof(e->msg) + 64];
    size_t rest = strlen(e->field + fl);
    if (tl + rest < sizeof(e->field)) {
        memmove(e->field + tl, e->field + fl, rest + 1);
        memcpy(e->field, to, tl);
    }
    char *at = strstr(e->msg, from);
    if (!at)
        return;
    size_t pre = (size_t)(at - e->msg);
    size_t post = strlen(at + fl);
    memcpy(buf, e->msg, pre);
    memcpy(buf + pre, to, tl);
    memcpy(buf + pre + tl, at + fl, post + 1);
    size_t n = broker_utf8_cut(buf, pre + tl + post, sizeof(e->msg) - 1);
    memcpy(e->msg, buf, n);
    e->msg[n] = '\0';
}

/* The exclusions of a walk from REL: the workspace's, unless REL itself lies in an excluded
 * directory (node_modules/left-pad): then the agent named it on purpose and sees all of it. */
static int walk_excludes(struct call *c, const char *rel, const char *const **ex, size_t *n)
{
    broker_default_excludes(c->ctx, ex, n);
    if (!rel || !*rel || !*n)
        return 0;
    struct broker_filter *f = NULL;
    if (broker_filter_new(*ex, *n, "exclude", &f, &c->e) < 0)
        return -1;
    if (broker_filter_prunes(f, rel, "", true))
        *n = 0;
    broker_filter_free(f);
    return 0;
}

/* A glob as written relative to a directory: "./" in front says nothing more. */
static const char *glob_plain(const char *g)
{
    while (g && g[0] == '.' && g[1] == '/')
        g += 2;
    return g;
}

/* A workspace path as the seed shows it: relative, without the broker's leading '/'. */
static const char *shown(const char *display)
{
    return display[0] == '/' ? display + 1 : display;
}

/* ---- file.read ------------------------------------------------------------------------------ */

static const struct tool_param read_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Relative to workspace root", NULL, 0, 0},
    {"offset", TOOL_PARAM_INT, false, "Start line, 1-indexed (default: 1)", NULL, 1, MAX_LINE},
    {"limit", TOOL_PARAM_INT, false, "Max lines to return (default: all)", NULL, 1, MAX_LINE},
};

/* S[0..len) with each line prefixed by its number as `cat -n` does ("%6ju\t"), the first line
 * being FIRST. At most CAP bytes of whole lines; a first line too long alone is cut at a
 * character boundary. *lines gets the lines begun, *cut whether any of S was left out. */
static char *number_lines(const char *s, size_t len, uint64_t first, size_t cap, uint64_t *lines,
                          bool *cut)
{
    enum { PREFIX_MAX = 24 };
    *lines = 0;
    *cut = false;
    size_t n_lines = 0;
    for (const char *p = s; p < s + len; n_lines++) {
        const char *nl = memchr(p, '\n', (size_t)(s + len - p));
        p = nl ? nl + 1 : s + len;
    }
    size_t want = len + n_lines * PREFIX_MAX; /* len <= SIZE_MAX / 2 and lines <= len */
    if (n_lines > (SIZE_MAX - len) / PREFIX_MAX)
        want = SIZE_MAX - 1;
    size_t alloc = (want < cap ? want : cap) + PREFIX_MAX + 1;
    char *out = malloc(alloc);
    if (!out)
        return NULL;
    size_t o = 0;
    for (const char *p = s; p < s + len;) {
        const char *nl = memchr(p, '\n', (size_t)(s + len - p));
        size_t seg = nl ? (size_t)(nl - p) + 1 : (size_t)(s + len - p);
        char pre[PREFIX_MAX];
        int pl = snprintf(pre, sizeof(pre), "%6ju\t", (uintmax_t)(first + *lines));
        if (o + (size_t)pl + seg > cap) {
            *cut = true;
            if (*lines > 0)
                break;
            /* the first line alone is over the cap: as much of it as fits */
            seg = cap > (size_t)pl ? broker_utf8_cut(p, seg, cap - (size_t)pl) : 0;
        }
        memcpy(out + o, pre, (size_t)pl);
        memcpy(out + o + pl, p, seg);
        o += (size_t)pl + seg;
        (*lines)++;
        if (*cut)
            break;
        p += seg;
    }
    out[o] = '\0';
    return out;
}

static cJSON *ft_read(struct call *c)
{
    _cleanup_free_ char *rel = NULL;
    if (path_rel(c, arg_str(c, 0, ""), &rel) < 0)
        return NULL;
    uint64_t offset = arg_u64(c, 1, 1), limit = arg_u64(c, 2, 0);
    struct broker_read_opts o = {.start_line = offset, .end_line = limit ? offset + limit - 1 : 0};
    struct broker_read_result r;
    if (broker_read(c->ctx, rel, &o, &r, &c->e) < 0) {
        respell(&c->e, "startLine", "offset");
        return NULL;
    }
    if (reads_matter(c->ctx))
        (void)tool_session_note_read(c->ctx->session, c->ctx, rel);
    /* The broker reads at most max_file_size bytes of the file; numbered, the answer may hold
     * twice that before whole lines are left for the next call. */
    uint64_t cap64 = c->ctx->limits.max_file_size;
    size_t cap = cap64 > SIZE_MAX / 4 ? SIZE_MAX / 2 : (size_t)cap64 * 2;
    uint64_t shown_lines;
    bool cut;
    _cleanup_free_ char *text = number_lines(r.content, r.len, offset, cap, &shown_lines, &cut);
    bool truncated = r.truncated || cut || offset - 1 + shown_lines < r.total_lines;
    uint64_t total = r.total_lines;
    broker_read_result_clear(&r);
    if (!text)
        return oom(c);
    cJSON *res = cJSON_CreateObject();
    if (!res || !cJSON_AddStringToObject(res, "content", text) ||
        !cJSON_AddNumberToObject(res, "total_lines", (double)total) ||
        !cJSON_AddBoolToObject(res, "truncated", truncated)) {
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- file.write ----------------------------------------------------------------------------- */

static const struct tool_param write_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Relative to workspace root", NULL, 0, 0},
    {"content", TOOL_PARAM_STRING, true, "Full file contents", NULL, 0, 0},
};

static cJSON *ft_write(struct call *c)
{
    _cleanup_free_ char *rel = NULL;
    if (path_rel(c, arg_str(c, 0, ""), &rel) < 0)
        return NULL;
    const char *content = arg_str(c, 1, "");
    struct broker_write_opts o = {.mode = BROKER_WRITE_OVERWRITE, .create_dirs = true};
    size_t written = 0;
    if (broker_write(c->ctx, rel, content, strlen(content), &o, NULL, &written, &c->e) < 0)
        return NULL;
    note_write(c, rel);
    cJSON *res = cJSON_CreateObject();
    if (!res || !cJSON_AddBoolToObject(res, "success", true) ||
        !cJSON_AddNumberToObject(res, "bytes_written", (double)written)) {
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- file.patch ----------------------------------------------------------------------------- */

static const struct tool_param patch_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Relative to workspace root", NULL, 0, 0},
    {"patches", TOOL_PARAM_ITEMS, true,
     "Array of patches to apply in order (each sees the result of the ones before); all or none are "
     "applied",
     NULL, 1, MAX_PATCHES},
};

static cJSON *ft_patch(struct call *c)
{
    _cleanup_free_ char *rel = NULL;
    if (path_rel(c, arg_str(c, 0, ""), &rel) < 0)
        return NULL;
    size_t n = (size_t)cJSON_GetArraySize(c->v[1]);
    _cleanup_free_ struct broker_edit *ed = calloc(n, sizeof(*ed));
    if (!ed)
        return oom(c);
    size_t i = 0;
    for (const cJSON *it = c->v[1]->child; it; it = it->next, i++) {
        ed[i].kind = BROKER_EDIT_EXACT;
        ed[i].pattern = cJSON_GetObjectItemCaseSensitive(it, "find")->valuestring;
        ed[i].replacement = cJSON_GetObjectItemCaseSensitive(it, "replace")->valuestring;
    }
    if (broker_modify(c->ctx, rel, ed, n, NULL, &c->e) < 0) {
        respell(&c->e, "operations", "patches");
        return NULL;
    }
    note_write(c, rel);
    cJSON *res = cJSON_CreateObject();
    if (!res || !cJSON_AddBoolToObject(res, "success", true) ||
        !cJSON_AddNumberToObject(res, "patches_applied", (double)n)) {
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- file.delete ---------------------------------------------------------------------------- */

static const struct tool_param delete_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Relative to workspace root", NULL, 0, 0},
};

static cJSON *ft_delete(struct call *c)
{
    _cleanup_free_ char *rel = NULL;
    if (path_rel(c, arg_str(c, 0, ""), &rel) < 0)
        return NULL;
    if (!*rel) {
        fail(c, "is_directory", "path names the workspace root, a directory; file.delete deletes files");
        return NULL;
    }
    if (broker_remove(c->ctx, rel, false, &c->e) < 0)
        return NULL;
    tool_session_forget(c->ctx->session, rel);
    cJSON *res = cJSON_CreateObject();
    if (!res || !cJSON_AddBoolToObject(res, "success", true)) {
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- file.list ------------------------------------------------------------------------------ */

static const struct tool_param list_params[] = {
    {"path", TOOL_PARAM_STRING, false, "Directory relative to workspace (default: root)", NULL, 0, 0},
    {"pattern", TOOL_PARAM_STRING, false,
     "Glob pattern (e.g., \"**/*.ts\", \"*.py\"), matched against paths below the directory", NULL, 0,
     0},
};

static cJSON *ft_list(struct call *c)
{
    _cleanup_free_ char *rel = NULL;
    if (path_rel(c, arg_str(c, 0, ""), &rel) < 0)
        return NULL;
    const char *pattern = glob_plain(arg_str(c, 1, NULL));
    /* A pattern reaches as deep as it names: "*.py" the directory itself, "a/x*.py" one level
     * more, any `**` every level. */
    unsigned depth = 1;
    for (const char *p = pattern; p && *p; p++)
        depth += *p == '/';
    if (pattern && strstr(pattern, "**"))
        depth = LIST_MAX_DEPTH;
    if (depth > LIST_MAX_DEPTH)
        depth = LIST_MAX_DEPTH;
    const char *const *ex;
    size_t n_ex;
    if (walk_excludes(c, rel, &ex, &n_ex) < 0)
        return NULL;
    struct broker_walk_opts o = {
        .recursive = depth > 1,
        .max_depth = depth,
        .exclude = ex,
        .n_exclude = n_ex,
        .want_meta = true,
        .max_entries = c->ctx->limits.max_explore_entries,
        .include_glob = pattern,
        .files_only = true,
    };
    struct broker_list l;
    if (broker_explore(c->ctx, rel, &o, &l, &c->e) < 0)
        return NULL;
    cJSON *res = cJSON_CreateObject();
    cJSON *files = cJSON_AddArrayToObject(res, "files");
    for (size_t i = 0; files && i < l.n; i++) {
        char iso[32];
        broker_iso_time(&l.v[i].mtime, iso);
        cJSON *f = cJSON_CreateObject();
        if (!f || !cJSON_AddItemToArray(files, f) ||
            !cJSON_AddStringToObject(f, "path", shown(l.v[i].path)) ||
            !cJSON_AddNumberToObject(f, "size", (double)l.v[i].size) ||
            !cJSON_AddStringToObject(f, "modified", iso))
            files = NULL;
    }
    /* Not in the seed: said only when the workspace's entry cap cut the list, so that a cut
     * list is never mistaken for the whole. */
    bool ok = files && (!l.truncated || cJSON_AddBoolToObject(res, "truncated", true));
    broker_list_clear(&l);
    if (!ok) {
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- file.search ---------------------------------------------------------------------------- */

static const struct tool_param search_params[] = {
    {"pattern", TOOL_PARAM_STRING, true, "Regex pattern (PCRE2 syntax)", NULL, 0, 0},
    {"path", TOOL_PARAM_STRING, false, "Directory to search (default: workspace root)", NULL, 0, 0},
    {"glob", TOOL_PARAM_STRING, false, "Filter by filename pattern (e.g., \"*.py\")", NULL, 0, 0},
    {"case_sensitive", TOOL_PARAM_BOOL, false, "Default: true", NULL, 0, 0},
    {"context_lines", TOOL_PARAM_INT, false, "Lines before/after match (default: 0)", NULL, 0,
     MAX_CONTEXT},
    {"max_results", TOOL_PARAM_INT, false,
     "Limit results (default: 100; at most the workspace's max_search_results)", NULL, 1, MAX_LINE},
};

/* A match as the seed's example shows it: with context, each line behind a four-column gutter,
 * "--> " for the matching line and four spaces for the lines around it; without, the line. */
static char *match_content(const struct broker_match *m, bool context)
{
    if (!context)
        return strdup(m->text);
    size_t len = 0, n = m->n_before + 1 + m->n_after;
    for (size_t i = 0; i < m->n_before; i++)
        len += strlen(m->before[i]);
    for (size_t i = 0; i < m->n_after; i++)
        len += strlen(m->after[i]);
    len += strlen(m->text) + n * 5 + 1; /* gutter and newline per line */
    char *out = malloc(len);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *line = i < m->n_before    ? m->before[i]
                           : i == m->n_before ? m->text
                                              : m->after[i - m->n_before - 1];
        size_t l = strlen(line);
        if (i)
            out[o++] = '\n';
        memcpy(out + o, i == m->n_before ? "--> " : "    ", 4);
        memcpy(out + o + 4, line, l);
        o += 4 + l;
    }
    out[o] = '\0';
    return out;
}

static cJSON *ft_search(struct call *c)
{
    _cleanup_free_ char *rel = NULL;
    if (c->v[1] && path_rel(c, arg_str(c, 1, ""), &rel) < 0)
        return NULL;
    const char *paths[1] = {rel};
    const char *const *ex;
    size_t n_ex;
    if (walk_excludes(c, rel, &ex, &n_ex) < 0)
        return NULL;
    /* A glob with a '/' reads from the directory searched, as file.list's pattern does; the
     * broker matches such globs from the workspace root, so the directory goes in front. A glob
     * only matches names: it opens nothing, so no prefix can lead anywhere. */
    const char *glob = glob_plain(arg_str(c, 2, NULL));
    _cleanup_free_ char *glob_full = NULL;
    if (glob && strchr(glob, '/') && rel && *rel) {
        if (!(glob_full = util_printf("%s/%s", rel, glob)))
            return oom(c);
        glob = glob_full;
    }
    size_t cap = c->ctx->limits.max_search_results;
    uint64_t want = arg_u64(c, 5, SEARCH_DEFAULT);
    unsigned context = (unsigned)arg_u64(c, 4, 0);
    struct broker_search_opts o = {
        .paths = rel ? paths : NULL,
        .n_paths = rel ? 1 : 0,
        .query = arg_str(c, 0, ""),
        .ignore_case = !arg_bool(c, 3, true),
        .recursive = true,
        .exclude = ex,
        .n_exclude = n_ex,
        .include_glob = glob,
        .context = context,
        .max_results = cap && want > cap ? cap : (size_t)want,
    };
    struct broker_search_result r;
    if (broker_search(c->ctx, &o, &r, &c->e) < 0) {
        respell(&c->e, "query", "pattern");
        respell(&c->e, "paths[0]", "path");
        respell(&c->e, "paths", "path");
        respell(&c->e, "contextLines", "context_lines");
        return NULL;
    }
    cJSON *res = cJSON_CreateObject();
    cJSON *matches = cJSON_AddArrayToObject(res, "matches");
    for (size_t i = 0; matches && i < r.n; i++) {
        const struct broker_match *m = &r.v[i];
        char *text = match_content(m, context > 0);
        cJSON *j = cJSON_CreateObject();
        if (j && !cJSON_AddItemToArray(matches, j)) {
            cJSON_Delete(j);
            j = NULL;
        }
        if (!text || !j || !cJSON_AddStringToObject(j, "path", shown(m->path)) ||
            !cJSON_AddNumberToObject(j, "line", (double)m->line) ||
            !cJSON_AddStringToObject(j, "content", text))
            matches = NULL;
        free(text);
    }
    bool ok = matches && cJSON_AddBoolToObject(res, "truncated", r.truncated);
    broker_search_result_clear(&r);
    if (!ok) {
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- the table ------------------------------------------------------------------------------ */

static const struct ft_tool tools[] = {
    {{"file.read", "Read file contents with optional pagination for large files.", read_params,
      ARRAY_SIZE(read_params)},
     ft_read,
     false},
    {{"file.write", "Create or overwrite a file. Creates parent directories if needed.", write_params,
      ARRAY_SIZE(write_params)},
     ft_write,
     true},
    {{"file.patch",
      "Apply search-and-replace edits to a file. More efficient than rewriting entire files for small "
      "changes.",
      patch_params, ARRAY_SIZE(patch_params)},
     ft_patch,
     true},
    {{"file.delete", "Delete a file. Does not delete directories.", delete_params,
      ARRAY_SIZE(delete_params)},
     ft_delete,
     true},
    {{"file.list", "List files in a directory with optional glob pattern filtering.", list_params,
      ARRAY_SIZE(list_params)},
     ft_list,
     false},
    {{"file.search", "Search for content within files using regex patterns.", search_params,
      ARRAY_SIZE(search_params)},
     ft_search,
     false},
};

/* ---- errors --------------------------------------------------------------------------------- */

/* The seed's codes where it has one; for what it does not name, the broker's own spelling. */
static const char *ft_code(const struct call *c)
{
    if (c->code)
        return c->code;
    int se = c->e.sys_errno;
    switch (c->e.kind) {
    case BROKER_E_NOT_FOUND: return "file_not_found";
    case BROKER_E_DENIED:
        /* The kernel's own refusal (a read-only mount, an immutable file) is not an escape. */
        return se == EACCES || se == EPERM || se == EROFS ? "permission_denied"
                                                          : "path_outside_workspace";
    case BROKER_E_TOO_LARGE:
        /* A full disk is an I/O failure of the write, a size over the limit is not. */
        return c->t->writes && (se == ENOSPC || se == EDQUOT || se == EFBIG) ? "write_failed"
                                                                             : "file_too_large";
    case BROKER_E_INVALID: return "invalid_argument";
    case BROKER_E_IS_DIR: return "is_directory";
    case BROKER_E_NOT_DIR: return "not_a_directory";
    case BROKER_E_NOT_REGULAR: return "not_a_regular_file";
    case BROKER_E_BINARY: return "binary_file";
    case BROKER_E_NO_MATCH: return "find_not_found";
    case BROKER_E_NOT_UNIQUE: return "find_not_unique";
    case BROKER_E_PATTERN:
    case BROKER_E_REGEX_LIMIT: return "invalid_pattern";
    default: return c->t->writes ? "write_failed" : "io_error";
    }
}

static cJSON *error_json(const struct call *c)
{
    /* The broker's messages open with the path as "/src/app.py"; this seed's paths are
     * relative, so the message says "src/app.py". */
    const char *msg = c->e.msg[0] ? c->e.msg : "the tool failed";
    if (msg[0] == '/' && msg[1] && msg[1] != ' ')
        msg++;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "error", ft_code(c)) ||
        !cJSON_AddStringToObject(o, "message", msg)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The codes that are a refusal by the rules, and the rule, for the trail's denial entry. */
static const char *ft_denial(const cJSON *result)
{
    static const struct {
        const char *code, *rule;
    } rules[] = {
        {"path_outside_workspace", "workspace containment"},
        {"permission_denied", "read-only"},
        {"approval_required", "needs approval"},
        {"read_required", "read before write"},
    };
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "error");
    for (size_t i = 0; cJSON_IsString(code) && i < ARRAY_SIZE(rules); i++)
        if (strcmp(code->valuestring, rules[i].code) == 0)
            return rules[i].rule;
    return NULL;
}

/* ---- the surface ---------------------------------------------------------------------------- */

/* file.patch's patches: {find, replace} objects, which the generic table cannot say. */
static cJSON *patches_schema(const struct tool_param *p)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "type", "array");
    cJSON_AddNumberToObject(s, "minItems", p->min);
    cJSON_AddNumberToObject(s, "maxItems", p->max);
    cJSON_AddItemToObject(s, "items",
                          cJSON_Parse("{\"type\":\"object\",\"additionalProperties\":false,"
                                      "\"required\":[\"find\",\"replace\"],\"properties\":{"
                                      "\"find\":{\"type\":\"string\",\"minLength\":1,"
                                      "\"description\":\"Exact text to find (must be unique)\"},"
                                      "\"replace\":{\"type\":\"string\","
                                      "\"description\":\"Text to replace it with\"}}}"));
    if (!cJSON_GetObjectItemCaseSensitive(s, "items")) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

static cJSON *ft_list_tools(const struct tool_ctx *ctx)
{
    (void)ctx;
    return tool_params_list(tools, ARRAY_SIZE(tools), sizeof(tools[0]), 0, patches_schema, NULL, NULL);
}

static const struct ft_tool *tool_find(const char *name)
{
    return tool_params_find(tools, ARRAY_SIZE(tools), sizeof(tools[0]), name);
}

/* The gate's view of a call (tools/gate.h): well-formed arguments, and the file a write tool
 * would change. The gate checks approval and read-first between this and ft_run: arguments,
 * then the policy, then the tool, the order of trust. */
static int ft_target(const struct tool_ctx *ctx, const char *name, const cJSON *args, char **rel)
{
    *rel = NULL;
    const struct ft_tool *t = tool_find(name);
    struct call c = {.ctx = (struct tool_ctx *)ctx, .t = t};
    if (!t || parse_args(&c, args) < 0)
        return -1;
    if (t->writes && path_rel(&c, arg_str(&c, 0, ""), rel) < 0)
        *rel = NULL;                            /* ft_run answers the bad path itself */
    if (*rel && !**rel && t->fn == ft_delete) { /* ft_delete answers the root first */
        free(*rel);
        *rel = NULL;
    }
    return 0;
}

static cJSON *ft_refuse(struct tool_ctx *ctx, const char *name, const struct tool_verdict *v)
{
    struct call c = {.ctx = ctx, .t = tool_find(name), .e = v->err};
    if (v->rule == TOOL_RULE_APPROVAL)
        fail(&c, "approval_required", "%s", v->message);
    else if (v->rule == TOOL_RULE_READ_FIRST || v->rule == TOOL_RULE_STALE)
        c.code = "read_required";
    else
        fail(&c, "permission_denied", "%s: %s", name, v->message ? v->message : "refused");
    return error_json(&c);
}

static int ft_run(struct tool_ctx *ctx, const char *name, const cJSON *args, cJSON **result,
                  bool *is_error)
{
    *result = NULL;
    *is_error = false;
    const struct ft_tool *t = tool_find(name);
    if (!t)
        return -ENOENT;
    struct call c = {.ctx = ctx, .t = t};
    cJSON *res = NULL;
    if (parse_args(&c, args) < 0)
        ;
    else if (t->writes && ctx->read_only)
        fail(&c, "permission_denied",
             "the workspace is read-only for this agent (its role has no write authority); nothing was "
             "changed");
    else
        res = t->fn(&c);
    if (res) {
        *result = res;
        return 0;
    }
    if (!c.code && c.e.kind == BROKER_OK)
        broker_fail(&c.e, BROKER_E_IO, NULL, "the tool failed without saying why");
    *result = error_json(&c);
    *is_error = true;
    return *result ? 0 : -ENOMEM;
}

/* The gate's and the policy's table (tools/gate.h). */
static const struct tool_def defs[] = {
    {"file.read", TOOL_KIND_READ, false},   {"file.write", TOOL_KIND_WRITE, false},
    {"file.patch", TOOL_KIND_WRITE, false}, {"file.delete", TOOL_KIND_WRITE, false},
    {"file.list", TOOL_KIND_READ, false},   {"file.search", TOOL_KIND_READ, false},
};

const struct tool_surface file_tools_surface = {
    .name = "file",
    .defs = defs,
    .n_defs = ARRAY_SIZE(defs),
    .list = ft_list_tools,
    .run = ft_run,
    .target = ft_target,
    .refuse = ft_refuse,
    .denial = ft_denial,
};
