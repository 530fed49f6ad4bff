/* tools/kward/kward.c: the Kward workspace tools surface (seed 004): list_directory, read_file,
 * summarize_file_structure, context_for_task, context_budget_stats, write_file, edit_file and
 * run_shell_command, with the seed's limits and the upstream tools' model-facing text, over the
 * broker operations (containment, reads, writes, walks and command sandboxes are the broker's).
 * Outlines (universal-ctags) and diffs (GNU diff) each cost a command sandbox: kward_outline.c,
 * kward_diff.c. Every answer is an object whose "output" is the text Kward's tool returns; errors are
 * {error: "Error: ...", code, field?} (docs/protocol-kward.md). */
#include "tools/broker/broker.h"
#include "tools/gate.h"
#include "tools/kward/kward.h"
#include "tools/params.h"
#include "tools/session.h"
#include "tools/surfaces.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_PARAMS 6
#define MAX_COMMAND_BYTES 65536
#define MAX_TASK_BYTES 16384
#define MAX_PATHS 64
#define MAX_EDITS 256
#define MAX_INT TOOL_PARAMS_JSON_MAX /* integers: what a JSON number holds exactly */

struct call {
    struct tool_ctx *ctx;
    const struct kward_tool *t;
    const cJSON *v[MAX_PARAMS];
    struct broker_err e;
    const char *code; /* the error's code; NULL: from e.kind */
    cJSON *err_extra; /* fields merged into the error object (a timeout's partial output) */
    size_t raw_bytes; /* what an uncapped answer would have held (context_budget_stats) */
    bool raw_set;
};

typedef cJSON *(*kward_fn)(struct call *c);

struct kward_tool {
    struct tool_spec spec; /* first: tool_params_list / tool_params_find */
    kward_fn fn;
};

/* ---- errors ---------------------------------------------------------------------------------- */

__attribute__((format(printf, 5, 6))) static cJSON *fail(struct call *c, const char *code,
                                                         enum broker_kind kind, const char *field,
                                                         const char *fmt, ...)
{
    c->code = code;
    c->e.kind = kind;
    snprintf(c->e.field, sizeof(c->e.field), "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->e.msg, sizeof(c->e.msg), fmt, ap);
    va_end(ap);
    return NULL;
}

static cJSON *oom(struct call *c)
{
    return fail(c, "io_error", BROKER_E_IO, NULL, "out of memory");
}

/* The code of a broker failure, spelled the surface's way. */
static const char *kind_code(enum broker_kind k)
{
    switch (k) {
    case BROKER_E_NOT_FOUND: return "not_found";
    case BROKER_E_DENIED: return "permission_denied";
    case BROKER_E_TOO_LARGE: return "file_too_large";
    case BROKER_E_IS_DIR:
    case BROKER_E_NOT_REGULAR: return "not_a_file";
    case BROKER_E_NOT_DIR: return "not_a_directory";
    case BROKER_E_BINARY: return "not_a_text_file";
    case BROKER_E_EXISTS: return "exists";
    case BROKER_E_NO_MATCH: return "old_text_not_found";
    case BROKER_E_NOT_UNIQUE: return "old_text_not_unique";
    case BROKER_E_TIMEOUT: return "timeout";
    case BROKER_E_EXEC: return "command_failed";
    case BROKER_E_IO: return "io_error";
    default: return "invalid_argument";
    }
}

/* The codes that are refusals by the rules, and the rule each names for the trail. */
static const struct {
    const char *code;
    const char *rule;
} denials[] = {
    {"permission_denied", "workspace containment"},
    {"read_only", "read-only workspace"},
    {"read_required", "read before write"},
    {"stale_read", "read before write (changed since read)"},
    {"approval_required", "approval required"},
    {"commands_disabled", "commands not permitted for this role"},
};

static cJSON *error_json(struct call *c)
{
    const char *code = c->code ? c->code : kind_code(c->e.kind);
    cJSON *o = cJSON_CreateObject();
    char *msg = util_printf("Error: %s", c->e.msg[0] ? c->e.msg : "the tool failed");
    if (!o || !msg || !cJSON_AddStringToObject(o, "error", msg) ||
        !cJSON_AddStringToObject(o, "code", code) ||
        (c->e.field[0] && !cJSON_AddStringToObject(o, "field", c->e.field))) {
        free(msg);
        cJSON_Delete(o);
        return NULL;
    }
    free(msg);
    for (cJSON *it = c->err_extra ? c->err_extra->child : NULL; it; it = it->next) {
        cJSON *d = cJSON_Duplicate(it, true);
        if (!d || !cJSON_AddItemToObject(o, it->string, d)) {
            cJSON_Delete(d);
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

/* ---- arguments ------------------------------------------------------------------------------ */

static const char *arg_str(const struct call *c, size_t i, const char *dflt)
{
    return c->v[i] ? c->v[i]->valuestring : dflt;
}

static bool arg_int(const struct call *c, size_t i, long long *out)
{
    if (!c->v[i])
        return false;
    *out = (long long)c->v[i]->valuedouble;
    return true;
}

/* One {old_text, new_text} of edit_file's edits (the checker has seen it is an object). */
static int check_edit(const struct tool_param *p, int i, const cJSON *it, void *arg)
{
    struct call *c = arg;
    char f[64];
    for (const cJSON *k = it->child; k; k = k->next)
        if (!k->string || (strcmp(k->string, "old_text") && strcmp(k->string, "new_text"))) {
            snprintf(f, sizeof(f), "%s[%d]", p->name, i);
            fail(c, NULL, BROKER_E_INVALID, f, "%s takes only old_text and new_text", f);
            return -1;
        }
    static const char *const keys[] = {"old_text", "new_text"};
    for (size_t k = 0; k < 2; k++) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, keys[k]);
        if (!cJSON_IsString(s) || !s->valuestring) {
            snprintf(f, sizeof(f), "%s[%d].%s", p->name, i, keys[k]);
            fail(c, NULL, BROKER_E_INVALID, f, "%s must be a string", f);
            return -1;
        }
    }
    return 0;
}

/* The checker's fault in the seed's words. */
static void bad_args(struct call *c, const struct tool_param_bad *b)
{
    const struct tool_param *p = b->param;
    char f[64];
    switch (b->fault) {
    case TOOL_PARAM_NOT_OBJECT:
        fail(c, NULL, BROKER_E_INVALID, "arguments", "arguments must be an object");
        return;
    case TOOL_PARAM_UNKNOWN:
        fail(c, NULL, BROKER_E_INVALID, b->key, "%s takes no argument \"%.60s\"", c->t->spec.name,
             b->key);
        return;
    case TOOL_PARAM_REQUIRED:
        fail(c, NULL, BROKER_E_INVALID, p->name, "%s is required", p->name);
        return;
    case TOOL_PARAM_HOOK: return; /* check_edit said why */
    case TOOL_PARAM_CHOICE: {
        char list[128] = "";
        for (const char *const *ch = p->choices; *ch; ch++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                     ch == p->choices ? "" : ", ", *ch);
        fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be one of %s", p->name, list);
        return;
    }
    default: break;
    }
    switch (p->type) {
    case TOOL_PARAM_INT: /* not a number, not whole, or past what JSON holds exactly */
        fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be an integer", p->name);
        return;
    case TOOL_PARAM_STRINGS:
        if (b->fault == TOOL_PARAM_ITEM)
            fail(c, NULL, BROKER_E_INVALID, p->name, "%s[%d] must be a string", p->name, b->item);
        else
            fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be an array of at most %.0f strings",
                 p->name, p->max);
        return;
    case TOOL_PARAM_ITEMS:
        if (b->fault == TOOL_PARAM_ITEM) {
            snprintf(f, sizeof(f), "%s[%d]", p->name, b->item);
            fail(c, NULL, BROKER_E_INVALID, f, "%s must be an object {old_text, new_text}", f);
        } else if (b->fault == TOOL_PARAM_COUNT && cJSON_GetArraySize(b->value) > p->max) {
            fail(c, NULL, BROKER_E_INVALID, p->name, "%s holds more than %.0f replacements", p->name,
                 p->max);
        } else {
            fail(c, NULL, BROKER_E_INVALID, p->name, "%s must contain at least one replacement",
                 p->name);
        }
        return;
    default: fail(c, NULL, BROKER_E_INVALID, p->name, "%s must be a string", p->name); return;
    }
}

/* Length-checked, typed, matched against the table; unknown fields are refused (the upstream
 * schemas say additionalProperties: false). JSON null reads as absent. */
static int parse_args(struct call *c, const cJSON *args)
{
    struct tool_param_bad b;
    if (tool_params_check(c->t->spec.params, c->t->spec.n_params, args, c->v, NULL, check_edit, c, &b) ==
        0)
        return 0;
    bad_args(c, &b);
    return -1;
}

/* ---- text helpers --------------------------------------------------------------------------- */

struct sbuf {
    char *s;
    size_t len, cap;
    bool oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 1024;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *t = realloc(b->s, nc);
        if (!t) {
            b->oom = true;
            return;
        }
        b->s = t;
        b->cap = nc;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sb_put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Line starts of a text: start[i] for i < n, start[n] = len. A final newline ends the last line
 * rather than starting an empty one. */
struct lines {
    const char *s;
    size_t len, n;
    size_t *start;
};

static int lines_split(struct lines *l, const char *s, size_t len)
{
    l->s = s;
    l->len = len;
    l->n = 0;
    for (size_t i = 0; i < len; i++)
        l->n += s[i] == '\n';
    if (len && s[len - 1] != '\n')
        l->n++;
    if (!(l->start = malloc((l->n + 1) * sizeof(size_t))))
        return -1;
    size_t pos = 0;
    for (size_t i = 0; i < l->n; i++) {
        l->start[i] = pos;
        const char *nl = memchr(s + pos, '\n', len - pos);
        pos = nl ? (size_t)(nl - s) + 1 : len;
    }
    l->start[l->n] = len;
    return 0;
}

static size_t line_bytes(const struct lines *l, size_t i)
{
    return l->start[i + 1] - l->start[i];
}

/* The cleaned workspace-relative path ("src/a.rb", "." for the root) the texts show. */
static char *shown_path(struct call *c, const char *path)
{
    char *rel = NULL;
    if (broker_path_clean(path, "path", &rel, &c->e) < 0)
        return NULL;
    if (!*rel) {
        free(rel);
        return strdup(".");
    }
    return rel;
}

static cJSON *result_new(struct call *c, const char *output)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "output", output)) {
        cJSON_Delete(o);
        return oom(c);
    }
    return o;
}

/* The policy may narrow a cap, never widen it past the seed's. */
static size_t cap_file(const struct tool_ctx *ctx)
{
    uint64_t m = ctx->limits.max_file_size;
    return m && m < KWARD_MAX_FILE_BYTES ? (size_t)m : KWARD_MAX_FILE_BYTES;
}

/* Reads a whole text file for read_file, summarize_file_structure and edit_file: the 256 KB cap
 * checked on the size before reading, NUL bytes refused. */
static int load_text(struct call *c, const char *path, const char *shown, struct broker_read_result *r)
{
    memset(r, 0, sizeof(*r));
    size_t cap = cap_file(c->ctx);
    struct broker_meta m;
    if (broker_info(c->ctx, path, "path", &m, &c->e) < 0)
        return -1;
    bool dir = m.is_dir;
    uint64_t size = m.size;
    broker_meta_clear(&m);
    if (dir) {
        fail(c, "not_a_file", BROKER_E_IS_DIR, "path", "not a file: %s", shown);
        return -1;
    }
    if (size > cap) {
        fail(c, "file_too_large", BROKER_E_TOO_LARGE, "path",
             "file too large: %s is %ju bytes; limit is %zu bytes", shown, (uintmax_t)size, cap);
        return -1;
    }
    struct broker_read_opts o = {.max_bytes = cap};
    if (broker_read(c->ctx, path, &o, r, &c->e) < 0) {
        if (c->e.kind == BROKER_E_BINARY)
            fail(c, "not_a_text_file", BROKER_E_BINARY, "path", "not a text file: %s", shown);
        else if (c->e.kind == BROKER_E_IS_DIR || c->e.kind == BROKER_E_NOT_REGULAR)
            fail(c, "not_a_file", c->e.kind, "path", "not a file: %s", shown);
        return -1;
    }
    if (r->truncated) { /* it grew past the cap since the size was taken */
        broker_read_result_clear(r);
        fail(c, "file_too_large", BROKER_E_TOO_LARGE, "path",
             "file too large: %s is over the limit of %zu bytes", shown, cap);
        return -1;
    }
    return 0;
}

/* ---- session state: context budget counters ------------------------------------------------- */

enum { T_LIST, T_READ, T_SUMMARIZE, T_CONTEXT, T_STATS, T_WRITE, T_EDIT, T_SHELL, T_COUNT };

struct budget {
    uint64_t calls[T_COUNT], original[T_COUNT], returned[T_COUNT];
};

static void *budget_make(void)
{
    return calloc(1, sizeof(struct budget));
}
static void budget_drop(void *p)
{
    free(p);
}

static void budget_note(struct tool_ctx *ctx, size_t tool, size_t original, size_t returned)
{
    struct budget *b = tool_session_slot(ctx->session, budget_make, budget_drop);
    if (!b)
        return;
    tool_session_lock(ctx->session);
    b->calls[tool]++;
    b->original[tool] += original;
    b->returned[tool] += returned;
    tool_session_unlock(ctx->session);
}

/* ---- list_directory ------------------------------------------------------------------------- */

enum { LIST_PATH };
static const struct tool_param list_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Workspace-relative directory.", NULL, 0, 0},
};

static cJSON *k_list(struct call *c)
{
    const char *path = arg_str(c, LIST_PATH, ".");
    _cleanup_free_ char *shown = shown_path(c, path);
    if (!shown)
        return NULL;
    struct broker_walk_opts o = {.max_depth = 1, .max_entries = c->ctx->limits.max_explore_entries};
    struct broker_list l;
    if (broker_explore(c->ctx, path, &o, &l, &c->e) < 0) {
        if (c->e.kind == BROKER_E_NOT_DIR)
            return fail(c, "not_a_directory", BROKER_E_NOT_DIR, "path", "not a directory: %s", shown);
        return NULL;
    }
    struct sbuf out = {0};
    sb_put(&out, "", 0);
    cJSON *entries = cJSON_CreateArray();
    for (size_t i = 0; entries && i < l.n; i++) {
        const char *slash = strrchr(l.v[i].path, '/');
        const char *name = slash ? slash + 1 : l.v[i].path;
        char *e = util_printf("%s%s", name, l.v[i].is_dir ? "/" : "");
        cJSON *s = e ? cJSON_CreateString(e) : NULL;
        if (!s || !cJSON_AddItemToArray(entries, s)) {
            cJSON_Delete(s);
            cJSON_Delete(entries);
            entries = NULL;
        } else {
            if (i)
                sb_put(&out, "\n", 1);
            sb_str(&out, e);
        }
        free(e);
    }
    if (l.truncated)
        sb_printf(&out, "%s[%ju more entries not shown]", l.n ? "\n" : "", (uintmax_t)(l.total - l.n));
    bool trunc = l.truncated;
    broker_list_clear(&l);
    cJSON *res = entries && !out.oom ? result_new(c, out.s) : NULL;
    free(out.s);
    if (!res || !cJSON_AddStringToObject(res, "path", shown) ||
        !cJSON_AddItemToObject(res, "entries", entries) ||
        !cJSON_AddBoolToObject(res, "truncated", trunc)) {
        if (!res)
            cJSON_Delete(entries);
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- read_file ------------------------------------------------------------------------------ */

enum { READ_PATH, READ_OFFSET, READ_LIMIT, READ_MODE, READ_MAX_BYTES };
static const char *const read_modes[] = {"preview", "outline", "range", "full", NULL};
static const struct tool_param read_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Workspace-relative path.", NULL, 0, 0},
    {"offset", TOOL_PARAM_INT, false, "1-indexed start line.", NULL, -MAX_INT, MAX_INT},
    {"limit", TOOL_PARAM_INT, false, "Maximum lines to return.", NULL, -MAX_INT, MAX_INT},
    {"mode", TOOL_PARAM_STRING, false,
     "Context mode: preview (120 lines unless limit says), outline (declarations only), range (the "
     "offset/limit slice), full (from offset until the read caps stop it).",
     read_modes, 0, 0},
    {"max_bytes", TOOL_PARAM_INT, false, "Per-call byte budget, capped by the 50 KB read limit.", NULL,
     -MAX_INT, MAX_INT},
};

/* The outline text of a file, the seed's summarize_file_structure answer. *has: any entry.
 * NULL with the call's error set when ctags could not run (or out of memory). */
static char *structure_text(struct call *c, const char *shown, const char *text, size_t len,
                            size_t n_lines, struct kward_outline *ol, bool *has)
{
    *has = false;
    if (kward_outline_build(c->ctx, kward_language(shown), text, len, KWARD_OUTLINE_ENTRIES, ol, &c->e) <
        0)
        return NULL;
    char *t;
    if (ol->n == 0) {
        t = util_printf("No recognizable source structure found in %s.", shown);
    } else {
        *has = true;
        _cleanup_free_ char *body = kward_outline_render(ol);
        t = body ? util_printf("# File structure: %s\n- Lines: %zu\n- Bytes: %zu\n\n## Outline\n%s%s",
                               shown, n_lines, len, body,
                               ol->total > ol->n ? "\n[Outline capped at 80 entries.]" : "")
                 : NULL;
    }
    if (!t)
        oom(c);
    return t;
}

struct slice {
    size_t first, end; /* lines [first, end) shown (0-based) */
    bool truncated;
    const char *by; /* "lines" or "bytes" when a cap cut it */
};

/* Lines [first, want_end) of l, at most KWARD_READ_OUTPUT_LINES and max_bytes of them. */
static int take_lines(struct call *c, const struct lines *l, size_t first, size_t want_end,
                      size_t max_bytes, struct slice *s)
{
    s->first = first;
    s->end = first;
    s->truncated = false;
    s->by = NULL;
    if (first < want_end && line_bytes(l, first) > max_bytes) {
        fail(c, "invalid_argument", BROKER_E_TOO_LARGE, "max_bytes",
             "first line is %zu bytes, exceeds %zu byte read limit. Use run_shell_command with sed/head "
             "to inspect smaller chunks.",
             line_bytes(l, first), max_bytes);
        return -1;
    }
    size_t bytes = 0;
    for (size_t i = first; i < want_end; i++) {
        if (i - first >= KWARD_READ_OUTPUT_LINES) {
            s->by = "lines";
            break;
        }
        if (bytes + line_bytes(l, i) > max_bytes) {
            s->by = "bytes";
            break;
        }
        bytes += line_bytes(l, i);
        s->end = i + 1;
    }
    s->truncated = s->by != NULL;
    return 0;
}

static void put_slice(struct sbuf *out, const struct lines *l, const struct slice *s)
{
    if (s->end > s->first)
        sb_put(out, l->s + l->start[s->first], l->start[s->end] - l->start[s->first]);
}

/* Separates a notice from content: the notice starts after one blank line. */
static void notice_gap(struct sbuf *out)
{
    if (out->len && out->s[out->len - 1] != '\n')
        sb_put(out, "\n", 1);
    if (out->len)
        sb_put(out, "\n", 1);
}

static cJSON *k_read(struct call *c)
{
    const char *path = arg_str(c, READ_PATH, "");
    _cleanup_free_ char *shown = shown_path(c, path);
    if (!shown)
        return NULL;
    long long offset = 0, limit = 0, max_bytes = 0;
    bool has_offset = arg_int(c, READ_OFFSET, &offset);
    bool has_limit = arg_int(c, READ_LIMIT, &limit);
    bool has_max = arg_int(c, READ_MAX_BYTES, &max_bytes);
    const char *mode = arg_str(c, READ_MODE, NULL);
    if (has_offset && offset < 1)
        return fail(c, NULL, BROKER_E_INVALID, "offset",
                    "offset must be a positive integer (lines are 1-indexed)");
    if (has_limit && limit < 1)
        return fail(c, NULL, BROKER_E_INVALID, "limit", "limit must be positive");
    if (has_max && max_bytes < 1)
        return fail(c, NULL, BROKER_E_INVALID, "max_bytes", "max_bytes must be positive");
    size_t budget = KWARD_READ_OUTPUT_BYTES;
    if (has_max && (unsigned long long)max_bytes < budget)
        budget = (size_t)max_bytes;

    struct broker_read_result r;
    if (load_text(c, path, shown, &r) < 0)
        return NULL;
    struct lines l = {0};
    struct kward_outline ol = {0};
    struct sbuf out = {0};
    cJSON *res = NULL;
    const char *shown_mode = mode ? mode : "default";
    struct slice s = {0};
    char *rel = NULL;
    if (lines_split(&l, r.content, r.len) < 0) {
        oom(c);
        goto done;
    }
    sb_put(&out, "", 0);
    size_t first = has_offset ? (size_t)offset - 1 : 0;
    if (mode && !strcmp(mode, "outline")) {
        bool has;
        _cleanup_free_ char *t = structure_text(c, shown, r.content, r.len, l.n, &ol, &has);
        if (!t)
            goto done;
        sb_str(&out, t);
    } else {
        if (has_offset && first >= l.n && !(first == 0 && l.n == 0)) {
            fail(c, NULL, BROKER_E_INVALID, "offset",
                 "offset %lld is beyond end of file (%zu lines total)", offset, l.n);
            goto done;
        }
        bool large = !mode && !has_offset && !has_limit &&
                     (l.n > KWARD_READ_OUTPUT_LINES || r.len > KWARD_READ_OUTPUT_BYTES);
        if (large) {
            /* The seed's answer for a large file read without a range: an outline and the
             * first 120 lines (over 2,000 lines OR over 50 KB), even when the outline is empty:
             * 2,000 lines of a structureless file are exactly what this answer keeps out of
             * the model's context. */
            if (kward_outline_build(c->ctx, kward_language(shown), r.content, r.len,
                                    KWARD_OUTLINE_ENTRIES, &ol, &c->e) < 0)
                goto done;
            _cleanup_free_ char *body = ol.n > 0
                                            ? kward_outline_render(&ol)
                                            : strdup("(no classes, functions or sections recognized)");
            size_t pv = KWARD_PREVIEW_LINES < l.n ? KWARD_PREVIEW_LINES : l.n;
            if (!body || take_lines(c, &l, 0, pv, budget, &s) < 0) {
                if (!body)
                    oom(c);
                goto done;
            }
            shown_mode = "large_file_outline";
            sb_printf(&out,
                      "File has %zu lines (%zu bytes). Showing an outline and the first %zu lines to "
                      "reduce model context.\n\nOutline:\n",
                      l.n, r.len, s.end);
            sb_str(&out, body);
            sb_printf(&out, "\n\nFirst %zu lines:\n", s.end);
            put_slice(&out, &l, &s);
            notice_gap(&out);
            sb_printf(&out,
                      "[Use read_file with mode=\"range\", offset=%zu, and limit to continue; "
                      "mode=\"outline\" for only the outline; or request a specific section from the "
                      "outline.]",
                      s.end + 1);
            s.truncated = true;
        } else {
            bool preview = mode && !strcmp(mode, "preview");
            size_t want = l.n;
            bool user_limit = has_limit || preview;
            size_t lim = has_limit ? (size_t)limit : KWARD_PREVIEW_LINES;
            if (user_limit && lim < l.n - first)
                want = first + lim;
            if (take_lines(c, &l, first, want, budget, &s) < 0)
                goto done;
            put_slice(&out, &l, &s);
            if (s.truncated) {
                notice_gap(&out);
                if (!strcmp(s.by, "lines"))
                    sb_printf(
                        &out,
                        "[Showing lines %zu-%zu of %zu (%u line limit). Use offset=%zu to continue.]",
                        s.first + 1, s.end, l.n, KWARD_READ_OUTPUT_LINES, s.end + 1);
                else
                    sb_printf(
                        &out,
                        "[Showing lines %zu-%zu of %zu (%zu byte limit). Use offset=%zu to continue.]",
                        s.first + 1, s.end, l.n, budget, s.end + 1);
            } else if (user_limit && want < l.n) {
                notice_gap(&out);
                sb_printf(&out, "[%zu more lines in file. Use offset=%zu to continue.]", l.n - want,
                          want + 1);
                s.truncated = true;
            }
        }
    }
    if (out.oom) {
        oom(c);
        goto done;
    }
    /* A successful read marks the file read for the session: later writes may change it. */
    if (broker_path_clean(path, "path", &rel, &c->e) == 0)
        tool_session_note_read(c->ctx->session, c->ctx, rel);
    c->raw_bytes = r.len;
    c->raw_set = true;
    res = result_new(c, out.s);
    if (res && (!cJSON_AddStringToObject(res, "path", shown) ||
                !cJSON_AddStringToObject(res, "mode", shown_mode) ||
                !cJSON_AddNumberToObject(res, "total_lines", (double)l.n) ||
                !cJSON_AddNumberToObject(res, "start_line", s.end > s.first ? (double)s.first + 1 : 0) ||
                !cJSON_AddNumberToObject(res, "end_line", (double)s.end) ||
                !cJSON_AddBoolToObject(res, "truncated", s.truncated))) {
        cJSON_Delete(res);
        res = oom(c);
    }
done:
    free(rel);
    free(out.s);
    free(l.start);
    kward_outline_clear(&ol);
    broker_read_result_clear(&r);
    return res;
}

/* ---- summarize_file_structure --------------------------------------------------------------- */

static const struct tool_param summarize_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Workspace-relative source file path.", NULL, 0, 0},
};

static cJSON *outline_entries(const struct kward_outline *ol)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < ol->n; i++) {
        const struct kward_outline_entry *e = &ol->v[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o) || !cJSON_AddNumberToObject(o, "line", e->line) ||
            !cJSON_AddNumberToObject(o, "end_line", e->end_line) ||
            !cJSON_AddStringToObject(o, "kind", e->kind) ||
            !cJSON_AddStringToObject(o, "signature", e->signature) ||
            !cJSON_AddNumberToObject(o, "indent", e->indent)) {
            if (o && !o->prev)
                cJSON_Delete(o);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *k_summarize(struct call *c)
{
    const char *path = arg_str(c, 0, "");
    _cleanup_free_ char *shown = shown_path(c, path);
    if (!shown)
        return NULL;
    struct broker_read_result r;
    if (load_text(c, path, shown, &r) < 0)
        return NULL;
    struct lines l = {0};
    struct kward_outline ol = {0};
    cJSON *res = NULL;
    bool has;
    char *text = lines_split(&l, r.content, r.len) == 0
                     ? structure_text(c, shown, r.content, r.len, l.n, &ol, &has)
                     : (oom(c), (char *)NULL);
    const char *lang = kward_language(shown);
    if (!text) {
        res = NULL;
    } else if (!(res = result_new(c, text)) || !cJSON_AddStringToObject(res, "path", shown) ||
               !(lang ? cJSON_AddStringToObject(res, "language", lang)
                      : cJSON_AddNullToObject(res, "language")) ||
               !cJSON_AddItemToObject(res, "entries", outline_entries(&ol)) ||
               !cJSON_AddBoolToObject(res, "truncated", ol.total > ol.n)) {
        cJSON_Delete(res);
        res = oom(c);
    }
    c->raw_bytes = r.len;
    c->raw_set = true;
    free(text);
    free(l.start);
    kward_outline_clear(&ol);
    broker_read_result_clear(&r);
    return res;
}

/* ---- context_for_task ----------------------------------------------------------------------- */

enum { CTX_TASK, CTX_PATHS, CTX_BUDGET };
static const struct tool_param context_params[] = {
    {"task", TOOL_PARAM_STRING, true, "Task or question to gather context for.", NULL, 0, 0},
    {"paths", TOOL_PARAM_STRINGS, false, "Optional workspace-relative files or directories to focus.",
     NULL, 0, MAX_PATHS},
    {"budget", TOOL_PARAM_INT, false,
     "Approximate byte budget for the returned context. Default 4000, maximum 20000.", NULL, -MAX_INT,
     MAX_INT},
};

#define CTX_DEFAULT_BUDGET 4000
#define CTX_MAX_BUDGET 20000
#define CTX_MAX_FILES 8
#define CTX_MAX_CANDIDATES (CTX_MAX_FILES * 8)
#define CTX_MAX_MATCHES 8
#define CTX_MAX_TERMS 20
#define CTX_MAX_WALK 20000

static const char *const ctx_extensions[] = {".rb", ".js",   ".jsx",  ".ts",   ".tsx",  ".py", ".go",
                                             ".rs", ".java", ".cs",   ".cpp",  ".c",    ".h",  ".hpp",
                                             ".md", ".yml",  ".yaml", ".json", ".toml", NULL};
static const char *const ctx_skip[] = {".git", ".yardoc", "_yardoc",  "node_modules", "vendor", "tmp",
                                       "log",  ".bundle", "coverage", "dist",         "build"};
static const char *const ctx_stopwords[] = {
    "the",    "and",   "for",     "with",    "from",    "this",  "that",   "into",   "when",
    "where",  "what",  "why",     "how",     "fix",     "add",   "update", "change", "implement",
    "review", "debug", "explain", "failing", "failure", "error", "issue",  NULL};

static bool context_name_ok(const char *rel)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    if (!strcmp(base, "Gemfile"))
        return true;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return false;
    for (const char *const *e = ctx_extensions; *e; e++)
        if (!strcmp(dot, *e))
            return true;
    return false;
}

struct cand {
    char *rel;
    long score;
};

struct terms {
    char v[CTX_MAX_TERMS][64];
    size_t n;
};

static void terms_of(const char *task, struct terms *t)
{
    t->n = 0;
    for (const char *p = task; *p && t->n < CTX_MAX_TERMS;) {
        if (!(isalpha((unsigned char)*p) || *p == '_')) {
            p++;
            continue;
        }
        const char *q = p;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        size_t len = (size_t)(q - p);
        if (len >= 3 && len < sizeof(t->v[0])) {
            char w[64];
            for (size_t i = 0; i < len; i++)
                w[i] = (char)tolower((unsigned char)p[i]);
            w[len] = '\0';
            bool skip = false;
            for (const char *const *s = ctx_stopwords; *s && !skip; s++)
                skip = !strcmp(*s, w);
            for (size_t i = 0; i < t->n && !skip; i++)
                skip = !strcmp(t->v[i], w);
            if (!skip)
                memcpy(t->v[t->n++], w, len + 1);
        }
        p = q;
    }
}

static char *lower_dup(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    for (size_t i = 0; i < len; i++)
        d[i] = (char)tolower((unsigned char)s[i]);
    d[len] = '\0';
    return d;
}

static long count_term(const char *hay, size_t len, const char *term)
{
    long n = 0;
    size_t tl = strlen(term);
    for (const char *p = hay; (p = memmem(p, len - (size_t)(p - hay), term, tl)); p += tl)
        n++;
    return n;
}

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->rel, y->rel);
}

/* Adds the readable candidate files under (or at) ROOT, in walk order, up to the limit. */
static int gather(struct call *c, const char *root, struct cand *v, size_t *n)
{
    struct broker_meta m;
    if (broker_info(c->ctx, root, "paths", &m, &c->e) < 0)
        return -1;
    bool dir = m.is_dir;
    char *rel = m.path && m.path[0] == '/' ? strdup(m.path + 1) : NULL;
    uint64_t size = m.size;
    broker_meta_clear(&m);
    if (!rel)
        return oom(c), -1;
    if (!dir) {
        bool dup = false;
        for (size_t i = 0; i < *n && !dup; i++)
            dup = !strcmp(v[i].rel, rel);
        if (!dup && *n < CTX_MAX_CANDIDATES && size <= cap_file(c->ctx) && context_name_ok(rel))
            v[(*n)++].rel = rel;
        else
            free(rel);
        return 0;
    }
    free(rel);
    const char *ex[ARRAY_SIZE(ctx_skip) + 64];
    size_t n_ex = 0;
    for (size_t i = 0; i < ARRAY_SIZE(ctx_skip); i++)
        ex[n_ex++] = ctx_skip[i];
    for (size_t i = 0; i < c->ctx->limits.n_exclude && n_ex < ARRAY_SIZE(ex); i++)
        ex[n_ex++] = c->ctx->limits.exclude[i];
    struct broker_walk_opts o = {.recursive = true,
                                 .max_depth = 32,
                                 .exclude = ex,
                                 .n_exclude = n_ex,
                                 .want_meta = true,
                                 .max_entries = CTX_MAX_WALK};
    struct broker_list l;
    if (broker_explore(c->ctx, root, &o, &l, &c->e) < 0)
        return -1;
    for (size_t i = 0; i < l.n && *n < CTX_MAX_CANDIDATES; i++) {
        const struct broker_meta *e = &l.v[i];
        const char *r = e->path[0] == '/' ? e->path + 1 : e->path;
        if (e->is_dir || e->is_symlink || e->size > cap_file(c->ctx) || !context_name_ok(r))
            continue;
        bool dup = false;
        for (size_t k = 0; k < *n && !dup; k++)
            dup = !strcmp(v[k].rel, r);
        if (dup)
            continue;
        if (!(v[*n].rel = strdup(r))) {
            broker_list_clear(&l);
            return oom(c), -1;
        }
        (*n)++;
    }
    broker_list_clear(&l);
    return 0;
}

/* "### Matching excerpts": the first matching lines with two lines around each. */
static void excerpt(struct sbuf *out, const struct lines *l, const char *lower, const struct terms *t)
{
    size_t hits[CTX_MAX_MATCHES], nh = 0;
    for (size_t i = 0; i < l->n && nh < CTX_MAX_MATCHES; i++) {
        size_t a = l->start[i], len = line_bytes(l, i);
        for (size_t k = 0; k < t->n; k++)
            if (memmem(lower + a, len, t->v[k], strlen(t->v[k]))) {
                hits[nh++] = i;
                break;
            }
    }
    if (!nh)
        return;
    sb_str(out, "\n### Matching excerpts");
    size_t prev = (size_t)-1;
    for (size_t h = 0; h < nh; h++) {
        size_t from = hits[h] >= 2 ? hits[h] - 2 : 0;
        size_t to = hits[h] + 2 < l->n ? hits[h] + 2 : l->n - 1;
        if (prev != (size_t)-1 && from <= prev)
            from = prev + 1;
        for (size_t i = from; i <= to; i++) {
            if (prev != (size_t)-1 && i > prev + 1)
                sb_str(out, "\n...");
            size_t len = line_bytes(l, i);
            const char *s = l->s + l->start[i];
            while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
                len--;
            sb_printf(out, "\n%4zu: ", i + 1);
            sb_put(out, s, len);
            prev = i;
        }
    }
}

static cJSON *k_context(struct call *c)
{
    const char *task_in = arg_str(c, CTX_TASK, "");
    while (isspace((unsigned char)*task_in))
        task_in++;
    size_t tl = strlen(task_in);
    while (tl && isspace((unsigned char)task_in[tl - 1]))
        tl--;
    if (!tl)
        return fail(c, NULL, BROKER_E_INVALID, "task", "task is required");
    if (tl > MAX_TASK_BYTES)
        return fail(c, NULL, BROKER_E_INVALID, "task", "task is longer than %d bytes", MAX_TASK_BYTES);
    _cleanup_free_ char *task = strndup(task_in, tl);
    long long budget = CTX_DEFAULT_BUDGET;
    if (arg_int(c, CTX_BUDGET, &budget) && budget < 1)
        return fail(c, NULL, BROKER_E_INVALID, "budget", "budget must be positive");
    if (budget > CTX_MAX_BUDGET)
        budget = CTX_MAX_BUDGET;
    if (!task)
        return oom(c);

    struct cand v[CTX_MAX_CANDIDATES];
    size_t n = 0;
    cJSON *res = NULL;
    struct sbuf out = {0};
    size_t raw = 0;
    const cJSON *paths = c->v[CTX_PATHS];
    bool any_path = false;
    for (const cJSON *it = paths ? paths->child : NULL; it; it = it->next) {
        if (!*it->valuestring)
            continue;
        any_path = true;
        if (gather(c, it->valuestring, v, &n) < 0)
            goto done;
    }
    if (!any_path && gather(c, ".", v, &n) < 0)
        goto done;
    struct terms t;
    terms_of(task, &t);
    /* Score every candidate: term occurrences in its path and text, +5 when a term is in the
     * path. Files that cannot be read as text are dropped. */
    size_t kept = 0, readable = 0;
    for (size_t i = 0; i < n; i++) {
        struct broker_read_result r;
        struct broker_read_opts o = {.max_bytes = cap_file(c->ctx)};
        struct broker_err ignore;
        if (broker_read(c->ctx, v[i].rel, &o, &r, &ignore) < 0) {
            free(v[i].rel);
            continue;
        }
        if (r.truncated) {
            broker_read_result_clear(&r);
            free(v[i].rel);
            continue;
        }
        readable++;
        raw += r.len;
        _cleanup_free_ char *hay = util_printf("%s\n%s", v[i].rel, r.content);
        char *lh = hay ? lower_dup(hay, strlen(hay)) : NULL;
        long score = 0;
        bool in_path = false;
        for (size_t k = 0; lh && k < t.n; k++) {
            score += count_term(lh, strlen(lh), t.v[k]);
            in_path = in_path || memmem(lh, strlen(v[i].rel), t.v[k], strlen(t.v[k]));
        }
        free(lh);
        broker_read_result_clear(&r);
        v[i].score = score + (in_path ? 5 : 0);
        if (t.n && v[i].score <= 0) {
            free(v[i].rel);
            continue;
        }
        v[kept++] = v[i];
    }
    n = kept;
    c->raw_set = true;
    c->raw_bytes = raw;
    if (n == 0) {
        res = result_new(c, readable ? "No matching candidate files found for focused context."
                                     : "No readable candidate files found for focused context.");
        goto done;
    }
    qsort(v, n, sizeof(v[0]), cand_cmp);
    size_t use = n < CTX_MAX_FILES ? n : CTX_MAX_FILES;

    sb_str(&out, "# Focused context\n- Task: ");
    sb_str(&out, task);
    sb_printf(&out, "\n- Budget: %lld bytes\n- Search terms: ", budget);
    for (size_t k = 0; k < t.n; k++)
        sb_printf(&out, "%s%s", k ? ", " : "", t.v[k]);
    if (!t.n)
        sb_str(&out, "(none)");
    sb_str(&out, "\n");
    size_t used = out.len;
    cJSON *files = cJSON_CreateArray();
    size_t sections = 0;
    for (size_t i = 0; i < use && files; i++) {
        struct broker_read_result r;
        struct broker_read_opts o = {.max_bytes = cap_file(c->ctx)};
        struct broker_err ignore;
        if (broker_read(c->ctx, v[i].rel, &o, &r, &ignore) < 0)
            continue;
        struct sbuf sec = {0};
        struct lines l = {0};
        struct kward_outline ol = {0};
        char *lower = lower_dup(r.content, r.len);
        bool has = false;
        char *st = NULL;
        if (lower && lines_split(&l, r.content, r.len) == 0)
            st = structure_text(c, v[i].rel, r.content, r.len, l.n, &ol, &has);
        /* ctags missing or failing fails the call, as it does summarize_file_structure. */
        bool outline_failed = lower && l.start && !st;
        sb_printf(&sec, "\n## %s\n- Score: %ld", v[i].rel, v[i].score);
        if (st && has) {
            sb_str(&sec, "\n");
            sb_str(&sec, st);
        }
        if (lower && l.start && t.n)
            excerpt(&sec, &l, lower, &t);
        sb_str(&sec, "\n");
        free(st);
        free(lower);
        free(l.start);
        kward_outline_clear(&ol);
        broker_read_result_clear(&r);
        if (outline_failed) {
            free(sec.s);
            cJSON_Delete(files);
            goto done;
        }
        if (sec.oom) {
            free(sec.s);
            break;
        }
        bool stop = false;
        if (used + sec.len > (size_t)budget) {
            if (sections > 0) {
                stop = true;
            } else {
                size_t remaining = (size_t)budget > used ? (size_t)budget - used : 0;
                if (remaining < 200) {
                    stop = true;
                } else {
                    size_t keep = broker_utf8_cut(sec.s, sec.len, remaining);
                    sec.len = keep;
                    sec.s[keep] = '\0';
                    sb_str(&sec, "\n[Context budget reached.]");
                }
            }
        }
        if (stop) {
            free(sec.s);
            break;
        }
        sb_put(&out, sec.s, sec.len);
        used += sec.len;
        sections++;
        free(sec.s);
        cJSON *f = cJSON_CreateObject();
        if (!f || !cJSON_AddItemToArray(files, f) || !cJSON_AddStringToObject(f, "path", v[i].rel) ||
            !cJSON_AddNumberToObject(f, "score", (double)v[i].score)) {
            if (f && !f->prev)
                cJSON_Delete(f);
            cJSON_Delete(files);
            files = NULL;
        }
    }
    cJSON *terms = cJSON_CreateArray();
    for (size_t k = 0; terms && k < t.n; k++)
        cJSON_AddItemToArray(terms, cJSON_CreateString(t.v[k]));
    if (!files || !terms || out.oom || !(res = result_new(c, out.s)) ||
        !cJSON_AddNumberToObject(res, "budget", (double)budget) ||
        !cJSON_AddItemToObject(res, "terms", terms) || !cJSON_AddItemToObject(res, "files", files)) {
        if (!res) {
            cJSON_Delete(files);
            cJSON_Delete(terms);
        }
        cJSON_Delete(res);
        res = oom(c);
    }
done:
    for (size_t i = 0; i < n; i++)
        free(v[i].rel);
    free(out.s);
    return res;
}

/* ---- context_budget_stats ------------------------------------------------------------------- */

static const struct kward_tool tools[];

static cJSON *k_stats(struct call *c)
{
    struct budget snap = {0};
    struct budget *b = tool_session_slot(c->ctx->session, budget_make, budget_drop);
    if (b) {
        tool_session_lock(c->ctx->session);
        snap = *b;
        tool_session_unlock(c->ctx->session);
    }
    uint64_t calls = 0, orig = 0, ret = 0;
    for (size_t i = 0; i < T_COUNT; i++) {
        calls += snap.calls[i];
        orig += snap.original[i];
        ret += snap.returned[i];
    }
    uint64_t saved = orig > ret ? orig - ret : 0;
    struct sbuf out = {0};
    sb_printf(&out,
              "# Context budget stats\n- Calls: %ju\n- Original bytes: %ju\n- Returned bytes: %ju\n- "
              "Saved bytes: %ju\n- Estimated tokens saved: %ju",
              (uintmax_t)calls, (uintmax_t)orig, (uintmax_t)ret, (uintmax_t)saved,
              (uintmax_t)((saved + 3) / 4));
    /* Per tool, most saved first, then by name. */
    size_t order[T_COUNT], n = 0;
    for (size_t i = 0; i < T_COUNT; i++)
        if (snap.calls[i])
            order[n++] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0; k--) {
            size_t x = order[k - 1], y = order[k];
            uint64_t sx = snap.original[x] > snap.returned[x] ? snap.original[x] - snap.returned[x] : 0;
            uint64_t sy = snap.original[y] > snap.returned[y] ? snap.original[y] - snap.returned[y] : 0;
            if (sx > sy || (sx == sy && strcmp(tools[x].spec.name, tools[y].spec.name) < 0))
                break;
            order[k - 1] = y;
            order[k] = x;
        }
    cJSON *by = cJSON_CreateArray();
    if (n)
        sb_str(&out, "\n\n## By tool");
    for (size_t j = 0; j < n && by; j++) {
        size_t i = order[j];
        uint64_t sv = snap.original[i] > snap.returned[i] ? snap.original[i] - snap.returned[i] : 0;
        sb_printf(&out, "\n- %s: %ju call(s), %ju bytes saved, %ju/%ju bytes returned",
                  tools[i].spec.name, (uintmax_t)snap.calls[i], (uintmax_t)sv,
                  (uintmax_t)snap.returned[i], (uintmax_t)snap.original[i]);
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(by, o) ||
            !cJSON_AddStringToObject(o, "tool", tools[i].spec.name) ||
            !cJSON_AddNumberToObject(o, "calls", (double)snap.calls[i]) ||
            !cJSON_AddNumberToObject(o, "original_bytes", (double)snap.original[i]) ||
            !cJSON_AddNumberToObject(o, "returned_bytes", (double)snap.returned[i]) ||
            !cJSON_AddNumberToObject(o, "saved_bytes", (double)sv)) {
            if (o && !o->prev)
                cJSON_Delete(o);
            cJSON_Delete(by);
            by = NULL;
        }
    }
    cJSON *res = by && !out.oom ? result_new(c, out.s) : NULL;
    free(out.s);
    if (!res || !cJSON_AddNumberToObject(res, "calls", (double)calls) ||
        !cJSON_AddNumberToObject(res, "original_bytes", (double)orig) ||
        !cJSON_AddNumberToObject(res, "returned_bytes", (double)ret) ||
        !cJSON_AddNumberToObject(res, "saved_bytes", (double)saved) ||
        !cJSON_AddNumberToObject(res, "estimated_tokens_saved", (double)((saved + 3) / 4)) ||
        !cJSON_AddItemToObject(res, "by_tool", by)) {
        if (!res)
            cJSON_Delete(by);
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

/* ---- write_file, edit_file ------------------------------------------------------------------ */

/* The rule every change passes before the broker sees it: read-only. (Read-first, the seed's
 * guardrail, on unless the policy turns it off for the tool, is the gate's: kward_target and
 * kward_refuse, tools/gate.h.) */
static int change_allowed(struct call *c)
{
    if (c->ctx->read_only) {
        fail(c, "read_only", BROKER_E_DENIED, "path",
             "the workspace is read-only for this agent; %s is refused", c->t->spec.name);
        return -1;
    }
    return 0;
}

/* Diffs OLD (NULL: a new file) against DATA (GNU diff in a command sandbox), then writes DATA
 * over REL (atomically, as broker_write does), records it as read, and renders the answer: HEAD
 * + the diff. The diff comes first, so a write that cannot be diffed is refused before anything
 * changes. OLD_KNOWN: the old content is text within the read cap (else no diff is shown). */
static cJSON *commit_change(struct call *c, const char *path, const char *rel, const char *shown,
                            const char *old, size_t old_len, bool old_known, const char *data,
                            size_t len, char *head)
{
    bool changed = !old || old_len != len || memcmp(old, data, len);
    char *diff = NULL;
    size_t dl = 0;
    struct kward_diff_stats st = {0};
    if (old_known && changed &&
        kward_diff(c->ctx, rel, old, old_len, data, len, &diff, &dl, &st, &c->e) < 0) {
        free(head);
        return NULL;
    }
    struct broker_write_opts wo = {.mode = BROKER_WRITE_OVERWRITE};
    if (broker_write(c->ctx, path, data, len, &wo, NULL, NULL, &c->e) < 0) {
        free(diff);
        free(head);
        return NULL;
    }
    tool_session_note_write(c->ctx->session, c->ctx, rel);
    struct sbuf out = {0};
    sb_str(&out, head);
    free(head);
    bool cut = false;
    size_t raw = out.len;
    if (diff) {
        char *capped = kward_diff_cap(diff, dl, KWARD_DIFF_BYTES, &st, &cut);
        raw += 1 + dl;
        if (capped) {
            sb_str(&out, "\n");
            sb_str(&out, capped);
        }
        free(capped);
        free(diff);
        if (!capped) {
            free(out.s);
            return oom(c);
        }
    } else if (!old_known) {
        sb_str(&out, "\n(no diff: the previous content was not text or over the read limit)");
    }
    c->raw_bytes = raw;
    c->raw_set = true;
    cJSON *res = out.oom ? NULL : result_new(c, out.s);
    free(out.s);
    if (!res || !cJSON_AddStringToObject(res, "path", shown) ||
        !cJSON_AddNumberToObject(res, "bytes_written", (double)len) ||
        !cJSON_AddNumberToObject(res, "additions", (double)st.additions) ||
        !cJSON_AddNumberToObject(res, "deletions", (double)st.deletions) ||
        !cJSON_AddBoolToObject(res, "diff_truncated", cut)) {
        cJSON_Delete(res);
        return oom(c);
    }
    return res;
}

enum { WRITE_PATH, WRITE_CONTENT };
static const struct tool_param write_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Workspace-relative file path.", NULL, 0, 0},
    {"content", TOOL_PARAM_STRING, true, "Complete file content.", NULL, 0, 0},
};

static cJSON *k_write(struct call *c)
{
    const char *path = arg_str(c, WRITE_PATH, "");
    const char *content = arg_str(c, WRITE_CONTENT, "");
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, "path", &rel, &c->e) < 0)
        return NULL;
    _cleanup_free_ char *shown = shown_path(c, path);
    if (!shown)
        return NULL;
    if (!*rel)
        return fail(c, "not_a_file", BROKER_E_IS_DIR, "path", "not a file: %s", shown);
    /* Containment before the read-first rule: a link leading out is refused as such, not as
     * an unread file. A missing target is a new file. */
    struct broker_meta m;
    struct broker_err pe;
    if (broker_info(c->ctx, path, "path", &m, &pe) == 0)
        broker_meta_clear(&m);
    else if (pe.kind != BROKER_E_NOT_FOUND) {
        c->e = pe;
        return NULL;
    }
    if (change_allowed(c) < 0)
        return NULL;
    /* The old content, for the diff: none for a new file; unknown (no diff) when it is not text
     * or over the read cap. Errors of the target itself come from the write. */
    struct broker_read_result old = {0};
    struct broker_read_opts o = {.max_bytes = cap_file(c->ctx)};
    struct broker_err ignore;
    bool known = true, had = false;
    if (broker_read(c->ctx, path, &o, &old, &ignore) == 0) {
        had = true;
        known = !old.truncated;
    } else {
        known = ignore.kind == BROKER_E_NOT_FOUND;
    }
    char *head = util_printf("Wrote %zu bytes to %s", strlen(content), shown);
    cJSON *res = head ? commit_change(c, path, rel, shown, had ? old.content : NULL, had ? old.len : 0,
                                      known, content, strlen(content), head)
                      : oom(c);
    broker_read_result_clear(&old);
    return res;
}

enum { EDIT_PATH, EDIT_EDITS };
static const struct tool_param edit_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Workspace-relative path.", NULL, 0, 0},
    {"edits", TOOL_PARAM_ITEMS, true,
     "Non-overlapping replacements against original content; each old_text must match exactly once.",
     NULL, 1, MAX_EDITS},
};

struct repl {
    size_t idx, at, len;
    const char *text;
};

static int repl_cmp(const void *a, const void *b)
{
    const struct repl *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

static cJSON *k_edit(struct call *c)
{
    const char *path = arg_str(c, EDIT_PATH, "");
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, "path", &rel, &c->e) < 0)
        return NULL;
    _cleanup_free_ char *shown = shown_path(c, path);
    if (!shown)
        return NULL;
    struct broker_meta m;
    if (broker_info(c->ctx, path, "path", &m, &c->e) < 0)
        return NULL;
    bool dir = m.is_dir;
    broker_meta_clear(&m);
    if (dir)
        return fail(c, "not_a_file", BROKER_E_IS_DIR, "path", "not a file: %s", shown);
    if (change_allowed(c) < 0)
        return NULL;
    struct broker_read_result r;
    if (load_text(c, path, shown, &r) < 0)
        return NULL;
    const cJSON *edits = c->v[EDIT_EDITS];
    size_t n = (size_t)cJSON_GetArraySize(edits);
    struct repl *v = calloc(n, sizeof(*v));
    cJSON *res = NULL;
    char *data = NULL;
    if (!v) {
        oom(c);
        goto done;
    }
    size_t i = 0;
    for (const cJSON *it = edits->child; it; it = it->next, i++) {
        const char *old = cJSON_GetObjectItemCaseSensitive(it, "old_text")->valuestring;
        const char *neu = cJSON_GetObjectItemCaseSensitive(it, "new_text")->valuestring;
        size_t ol = strlen(old);
        char f[48];
        snprintf(f, sizeof(f), "edits[%zu].old_text", i);
        if (!ol) {
            fail(c, NULL, BROKER_E_INVALID, f, "%s must not be empty", f);
            goto done;
        }
        size_t count = 0, first = 0;
        for (const char *p = r.content; (p = memmem(p, r.len - (size_t)(p - r.content), old, ol));
             p += ol)
            if (count++ == 0)
                first = (size_t)(p - r.content);
        if (count == 0) {
            fail(c, "old_text_not_found", BROKER_E_NO_MATCH, f, "%s was not found in %s", f, shown);
            goto done;
        }
        if (count > 1) {
            fail(c, "old_text_not_unique", BROKER_E_NOT_UNIQUE, f,
                 "%s appears %zu times in %s; provide more context", f, count, shown);
            goto done;
        }
        v[i] = (struct repl){.idx = i, .at = first, .len = ol, .text = neu};
    }
    qsort(v, n, sizeof(*v), repl_cmp);
    size_t out_len = r.len;
    for (i = 0; i < n; i++) {
        if (i + 1 < n && v[i].at + v[i].len > v[i + 1].at) {
            fail(c, "edits_overlap", BROKER_E_INVALID, "edits",
                 "edits[%zu] and edits[%zu] overlap in %s",
                 v[i].idx < v[i + 1].idx ? v[i].idx : v[i + 1].idx,
                 v[i].idx < v[i + 1].idx ? v[i + 1].idx : v[i].idx, shown);
            goto done;
        }
        size_t tl = strlen(v[i].text);
        if (tl > SIZE_MAX / 2 - out_len) {
            oom(c);
            goto done;
        }
        out_len = out_len - v[i].len + tl;
    }
    if (out_len > c->ctx->limits.max_file_size) {
        fail(c, "file_too_large", BROKER_E_TOO_LARGE, "edits",
             "the edited file would be %zu bytes, over the limit of %ju bytes", out_len,
             (uintmax_t)c->ctx->limits.max_file_size);
        goto done;
    }
    if (!(data = malloc(out_len + 1))) {
        oom(c);
        goto done;
    }
    size_t src = 0, dst = 0;
    for (i = 0; i < n; i++) {
        memcpy(data + dst, r.content + src, v[i].at - src);
        dst += v[i].at - src;
        size_t tl = strlen(v[i].text);
        memcpy(data + dst, v[i].text, tl);
        dst += tl;
        src = v[i].at + v[i].len;
    }
    memcpy(data + dst, r.content + src, r.len - src);
    dst += r.len - src;
    data[dst] = '\0';
    if (dst == r.len && !memcmp(data, r.content, r.len)) {
        fail(c, "no_changes", BROKER_E_INVALID, "edits", "no changes made to %s", shown);
        goto done;
    }
    char *head = util_printf("Edited %s: replaced %zu block(s)", shown, n);
    res = head ? commit_change(c, path, rel, shown, r.content, r.len, true, data, dst, head) : oom(c);
done:
    free(data);
    free(v);
    broker_read_result_clear(&r);
    return res;
}

/* ---- run_shell_command ---------------------------------------------------------------------- */

enum { SHELL_COMMAND, SHELL_TIMEOUT };
static const struct tool_param shell_params[] = {
    {"command", TOOL_PARAM_STRING, true,
     "Command to run (sh -c, from the workspace root, in a command sandbox).", NULL, 0, 0},
    {"timeout_seconds", TOOL_PARAM_INT, false, "Timeout seconds; default 30.", NULL, -MAX_INT, MAX_INT},
};

static cJSON *k_shell(struct call *c)
{
    const char *cmd_in = arg_str(c, SHELL_COMMAND, "");
    while (isspace((unsigned char)*cmd_in))
        cmd_in++;
    size_t cl = strlen(cmd_in);
    while (cl && isspace((unsigned char)cmd_in[cl - 1]))
        cl--;
    if (!cl)
        return fail(c, NULL, BROKER_E_INVALID, "command", "command is required");
    if (cl > MAX_COMMAND_BYTES)
        return fail(c, NULL, BROKER_E_INVALID, "command", "command is longer than %d bytes",
                    MAX_COMMAND_BYTES);
    if (!c->ctx->allow_commands)
        return fail(c, "commands_disabled", BROKER_E_DENIED, "command",
                    "this agent's role may not run commands");
    _cleanup_free_ char *cmd = strndup(cmd_in, cl);
    if (!cmd)
        return oom(c);
    long long ts = 0;
    double timeout = c->ctx->limits.command_timeout_sec > 0 ? c->ctx->limits.command_timeout_sec : 30.0;
    if (arg_int(c, SHELL_TIMEOUT, &ts) && ts > 0)
        timeout = (double)ts;
    if (c->ctx->limits.command_timeout_max > 0 && timeout > c->ctx->limits.command_timeout_max)
        timeout = c->ctx->limits.command_timeout_max;
    /* The seed's 128 KB output cap, or the policy's when lower. */
    struct tool_ctx cc = *c->ctx;
    size_t cap = KWARD_COMMAND_OUTPUT_BYTES;
    if (cc.limits.max_output_bytes && cc.limits.max_output_bytes < cap)
        cap = cc.limits.max_output_bytes;
    cc.limits.max_output_bytes = cap;
    struct broker_command_opts o = {
        .command = cmd, .timeout_sec = timeout, .kill_grace_sec = KWARD_KILL_GRACE_SEC};
    struct broker_command_result r;
    if (broker_command(&cc, &o, &r, &c->e) < 0)
        return NULL;
    struct sbuf out = {0};
    sb_printf(&out, "Exit status: %d\n\nSTDOUT:\n", r.exit_code);
    sb_put(&out, r.out, r.out_len);
    if (r.out_len && r.out[r.out_len - 1] != '\n')
        sb_put(&out, "\n", 1);
    sb_str(&out, "\nSTDERR:\n");
    sb_put(&out, r.err, r.err_len);
    if (r.truncated)
        sb_printf(&out, "\n... truncated to %zu bytes", cap);
    c->raw_bytes = out.len;
    c->raw_set = true;
    if (!out.oom && out.len > cap) {
        size_t keep = broker_utf8_cut(out.s, out.len, cap);
        out.len = keep;
        out.s[keep] = '\0';
        sb_printf(&out, "\n... truncated to %zu bytes", cap);
    }
    cJSON *res = NULL;
    if (out.oom) {
        oom(c);
    } else if (r.timed_out) {
        /* The seed's timeout error, with what the command printed before it was stopped. */
        fail(c, "timeout", BROKER_E_TIMEOUT, "timeout_seconds", "command timed out after %g seconds",
             timeout);
        c->err_extra = cJSON_CreateObject();
        if (c->err_extra)
            cJSON_AddStringToObject(c->err_extra, "output", out.s);
    } else if (!(res = result_new(c, out.s)) ||
               !cJSON_AddNumberToObject(res, "exit_status", r.exit_code) ||
               !cJSON_AddBoolToObject(res, "truncated", r.truncated || c->raw_bytes > cap) ||
               !cJSON_AddNumberToObject(res, "duration_ms", (double)r.duration_ms)) {
        cJSON_Delete(res);
        res = oom(c);
    }
    free(out.s);
    broker_command_result_clear(&r);
    return res;
}

/* ---- the surface ---------------------------------------------------------------------------- */

/* In the order of the T_* indexes. */
static const struct kward_tool tools[] = {
    {{"list_directory", "Lists entries in a workspace-relative directory (directories end with '/').",
      list_params, ARRAY_SIZE(list_params)},
     k_list},
    {{"read_file",
      "Read a workspace text file. Output is capped at 50 KB or 2,000 lines; use offset/limit to "
      "continue, or mode preview/outline/range/full. Files over 256 KB cannot be read.",
      read_params, ARRAY_SIZE(read_params)},
     k_read},
    {{"summarize_file_structure",
      "Returns a compact outline of recognizable declarations in a source file (line ranges and kinds, "
      "at most 80 entries).",
      summarize_params, ARRAY_SIZE(summarize_params)},
     k_summarize},
    {{"context_for_task",
      "Build focused workspace context for a task from outlines and matching excerpts within a byte "
      "budget.",
      context_params, ARRAY_SIZE(context_params)},
     k_context},
    {{"context_budget_stats",
      "Return approximate per-session context budget savings: raw versus returned result sizes per "
      "tool.",
      NULL, 0},
     k_stats},
    {{"write_file",
      "Writes complete file content. Existing files must be read first. The result includes a unified "
      "diff.",
      write_params, ARRAY_SIZE(write_params)},
     k_write},
    {{"edit_file",
      "Edit a read workspace file by exact replacements. Each old_text must match once; edits must not "
      "overlap.",
      edit_params, ARRAY_SIZE(edit_params)},
     k_edit},
    {{"run_shell_command", "Run a shell command from the workspace root.", shell_params,
      ARRAY_SIZE(shell_params)},
     k_shell},
};

/* edit_file's edits: {old_text, new_text} objects, which the generic table cannot say. */
static cJSON *edits_schema(const struct tool_param *p)
{
    (void)p;
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "type", "array");
    cJSON_AddItemToObject(
        s, "items",
        cJSON_Parse(
            "{\"type\":\"object\",\"properties\":{"
            "\"new_text\":{\"type\":\"string\",\"description\":\"Replacement text.\"},"
            "\"old_text\":{\"type\":\"string\",\"description\":\"Unique exact text to replace.\"}},"
            "\"required\":[\"new_text\",\"old_text\"],\"additionalProperties\":false}"));
    if (!cJSON_GetObjectItemCaseSensitive(s, "items")) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

static cJSON *kward_list(const struct tool_ctx *ctx)
{
    (void)ctx;
    return tool_params_list(tools, ARRAY_SIZE(tools), sizeof(tools[0]), TOOL_PARAMS_ALWAYS_REQUIRED,
                            edits_schema, NULL, NULL);
}

/* The index of tool NAME (T_LIST ...), or ARRAY_SIZE(tools). */
static size_t tool_index(const char *name)
{
    const struct kward_tool *t = tool_params_find(tools, ARRAY_SIZE(tools), sizeof(tools[0]), name);
    return t ? (size_t)(t - tools) : ARRAY_SIZE(tools);
}

/* The gate's view of a call (tools/gate.h): well-formed arguments, and for write_file and
 * edit_file the file whose freshness the read-first rule checks, after the checks k_write and
 * k_edit make first (not the root; containment; edit_file: an existing file, not a directory). */
static int kward_target(const struct tool_ctx *ctx, const char *name, const cJSON *args, char **rel)
{
    *rel = NULL;
    size_t ti = tool_index(name);
    if (ti == ARRAY_SIZE(tools))
        return -1;
    struct call c = {.ctx = (struct tool_ctx *)ctx, .t = &tools[ti]};
    if (parse_args(&c, args) < 0)
        return -1;
    if (ti != T_WRITE && ti != T_EDIT)
        return 0;
    const char *path = arg_str(&c, ti == T_WRITE ? WRITE_PATH : EDIT_PATH, "");
    _cleanup_free_ char *r = NULL;
    struct broker_err e;
    if (broker_path_clean(path, "path", &r, &e) < 0 || !*r)
        return 0;
    struct broker_meta m;
    if (broker_info(ctx, path, "path", &m, &e) == 0) {
        bool dir = m.is_dir;
        broker_meta_clear(&m);
        if (ti == T_EDIT && dir)
            return 0;
    } else if (ti == T_EDIT || e.kind != BROKER_E_NOT_FOUND) {
        return 0;
    }
    *rel = r;
    r = NULL;
    return 0;
}

/* Shapes an error of tool TI like kward_run does, context budget included. */
static cJSON *error_result(struct call *c, size_t ti)
{
    cJSON *res = error_json(c);
    cJSON_Delete(c->err_extra);
    if (res && ti != T_STATS) {
        const cJSON *er = cJSON_GetObjectItemCaseSensitive(res, "error");
        size_t n = cJSON_IsString(er) ? strlen(er->valuestring) : 0;
        budget_note(c->ctx, ti, n, n);
    }
    return res;
}

static cJSON *kward_refuse(struct tool_ctx *ctx, const char *name, const struct tool_verdict *v)
{
    size_t ti = tool_index(name);
    if (ti == ARRAY_SIZE(tools))
        return NULL;
    struct call c = {.ctx = ctx, .t = &tools[ti]};
    const char *verb = ti == T_WRITE ? "writing" : "editing";
    const char *shown = v->rel && *v->rel ? v->rel : ".";
    if (v->rule == TOOL_RULE_APPROVAL)
        /* Until an approval channel exists, a call that needs one is refused, never run. */
        fail(&c, "approval_required", BROKER_E_DENIED, NULL, "%s", v->message);
    else if (v->rule == TOOL_RULE_STALE)
        fail(&c, "stale_read", BROKER_E_DENIED, "path",
             "%s has changed since it was last read; read it again before %s", shown, verb);
    else if (v->rule == TOOL_RULE_READ_FIRST)
        fail(&c, "read_required", BROKER_E_DENIED, "path", "existing file must be read before %s: %s",
             verb, shown);
    else
        fail(&c, "permission_denied", BROKER_E_DENIED, NULL, "%s: %s", name,
             v->message ? v->message : "refused");
    return error_result(&c, ti);
}

static int kward_run(struct tool_ctx *ctx, const char *name, const cJSON *args, cJSON **result,
                     bool *is_error)
{
    *result = NULL;
    *is_error = false;
    size_t ti = tool_index(name);
    if (ti == ARRAY_SIZE(tools))
        return -ENOENT;
    struct call c = {.ctx = ctx, .t = &tools[ti]};
    cJSON *res = NULL;
    if (parse_args(&c, args) == 0)
        res = tools[ti].fn(&c);
    if (res) {
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(res, "output");
        size_t ret = cJSON_IsString(out) ? strlen(out->valuestring) : 0;
        if (ti != T_STATS)
            budget_note(ctx, ti, c.raw_set ? c.raw_bytes : ret, ret);
        *result = res;
        return 0;
    }
    if (c.e.kind == BROKER_OK && !c.code)
        fail(&c, "io_error", BROKER_E_IO, NULL, "the tool failed without saying why");
    *result = error_result(&c, ti);
    *is_error = true;
    return *result ? 0 : -ENOMEM;
}

static const char *kward_denial(const cJSON *result)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(result, "code");
    if (!cJSON_IsString(code))
        return NULL;
    for (size_t i = 0; i < ARRAY_SIZE(denials); i++)
        if (!strcmp(denials[i].code, code->valuestring))
            return denials[i].rule;
    return NULL;
}

/* The gate's and the policy's table (tools/gate.h); read-first on by default for the two
 * write tools, the seed's guardrail. Same order as tools[] (T_LIST ...). */
static const struct tool_def defs[] = {
    {"list_directory", TOOL_KIND_READ, false},
    {"read_file", TOOL_KIND_READ, false},
    {"summarize_file_structure", TOOL_KIND_READ, false},
    {"context_for_task", TOOL_KIND_READ, false},
    {"context_budget_stats", TOOL_KIND_READ, false},
    {"write_file", TOOL_KIND_WRITE, true},
    {"edit_file", TOOL_KIND_WRITE, true},
    {"run_shell_command", TOOL_KIND_COMMAND, false},
};

const struct tool_surface kward_surface = {
    .name = "kward",
    .defs = defs,
    .n_defs = ARRAY_SIZE(defs),
    .list = kward_list,
    .run = kward_run,
    .target = kward_target,
    .refuse = kward_refuse,
    .denial = kward_denial,
};
