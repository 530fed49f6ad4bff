/* tools/voltagent/voltagent.c: the VoltAgent workspace surface (seed 003): its registry (the filesystem and
 * sandbox tools here, then the search and skills toolkits), its one error shape, its path rule,
 * approval and denial rules, and the filesystem and sandbox toolkits over the broker. */
#include "tools/surfaces.h"
#include "tools/voltagent/voltagent.h"

#include "tools/broker/glob.h"
#include "tools/gate.h"
#include "tools/params.h"
#include "tools/session.h"

#include <errno.h>
#include <fcntl.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- arguments ------------------------------------------------------------------------------ */

/* Upstream's zod schemas, as tool_param tables: integers are coerced from strings as
 * z.coerce.number does, and "glob" of grep is nullable. */
#define MAX_INT TOOL_PARAMS_JSON_MAX
#define MAX_ARGS 1000.0 /* execute_command's args */
#define MAX_ENV 256.0   /* execute_command's env */

#define MAX_PARAMS 8
struct args {
    const cJSON *v[MAX_PARAMS];
    double n[MAX_PARAMS]; /* TOOL_PARAM_INT_TEXT values (coerced, as z.coerce.number does) */
};

struct volt_tool;
typedef cJSON *(*volt_fn)(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                          bool *is_error);

struct volt_tool {
    struct tool_spec spec; /* first: tool_params_list / tool_params_find */
    volt_fn fn;
    bool writes; /* upstream's READ_ONLY_BLOCKED_TOOLS: hidden and refused in read-only mode */
};

static const char *arg_str(const struct args *a, size_t i, const char *dflt)
{
    return a->v[i] && cJSON_IsString(a->v[i]) ? a->v[i]->valuestring : dflt;
}
static bool arg_bool(const struct args *a, size_t i, bool dflt)
{
    return a->v[i] ? cJSON_IsTrue(a->v[i]) : dflt;
}
static uint64_t arg_u64(const struct args *a, size_t i, uint64_t dflt)
{
    return a->v[i] ? (uint64_t)a->n[i] : dflt;
}

/* The checker's fault in upstream's words. */
static int bad_args(const struct volt_tool *t, const struct tool_param_bad *b, struct broker_err *e)
{
    const struct tool_param *p = b->param;
    switch (b->fault) {
    case TOOL_PARAM_NOT_OBJECT:
        return broker_fail(e, BROKER_E_INVALID, "arguments", "arguments must be an object");
    case TOOL_PARAM_UNKNOWN:
        return broker_fail(e, BROKER_E_INVALID, NULL, "%s takes no argument \"%.60s\"", t->spec.name,
                           b->key);
    case TOOL_PARAM_REQUIRED:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s is required", p->name);
    case TOOL_PARAM_NOT_FINITE:
    case TOOL_PARAM_NOT_WHOLE:
    case TOOL_PARAM_RANGE:
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a whole number from %.0f", p->name,
                           p->min);
    case TOOL_PARAM_ITEM:
        if (p->type == TOOL_PARAM_STRMAP)
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s.%.40s must be a string", p->name,
                               b->key);
        return broker_fail(e, BROKER_E_INVALID, p->name, "%s must hold strings only", p->name);
    default: /* TYPE, and COUNT, which reads the same */
        switch (p->type) {
        case TOOL_PARAM_BOOL:
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a boolean", p->name);
        case TOOL_PARAM_INT_TEXT:
            return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a number", p->name);
        case TOOL_PARAM_STRINGS:
            return broker_fail(e, BROKER_E_INVALID, p->name,
                               "%s must be an array of at most %.0f strings", p->name, p->max);
        case TOOL_PARAM_STRMAP:
            return broker_fail(e, BROKER_E_INVALID, p->name,
                               "%s must be an object of at most %.0f string values", p->name, p->max);
        default: return broker_fail(e, BROKER_E_INVALID, p->name, "%s must be a string", p->name);
        }
    }
}

/* Typed, then matched to the table. Unknown fields are refused (zod would drop them silently):
 * a typo such as "filepath" must not turn into a call on the default path. JSON null reads as
 * absent, as upstream's optional().nullable() does. */
static int parse_args(const struct volt_tool *t, const cJSON *args, struct args *a, struct broker_err *e)
{
    struct tool_param_bad b;
    memset(a, 0, sizeof(*a));
    if (tool_params_check(t->spec.params, t->spec.n_params, args, a->v, a->n, NULL, NULL, &b) < 0)
        return bad_args(t, &b, e);
    return 0;
}

/* ---- result building ------------------------------------------------------------------------ */

/* Upstream's truncation marker (filesystem/utils.ts). */
static const char TRUNCATION_GUIDANCE[] =
    "... [results truncated, try being more specific with your parameters]";
/* Upstream's cap on a tool's text (TOOL_RESULT_TOKEN_LIMIT * 4 characters). */
#define MAX_TEXT 80000

/* A growing text buffer; on ENOMEM it goes "failed" and every later append is a no-op. */
struct text {
    char *s;
    size_t len, cap;
    bool failed;
};

static void text_add(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) {
            if (cap > SIZE_MAX / 2) {
                t->failed = true;
                return;
            }
            cap *= 2;
        }
        char *v = realloc(t->s, cap);
        if (!v) {
            t->failed = true;
            return;
        }
        t->s = v;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

__attribute__((format(printf, 2, 3))) static void text_printf(struct text *t, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    if ((size_t)n < sizeof(buf)) {
        text_add(t, buf, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        t->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    text_add(t, big, (size_t)n);
    free(big);
}

static void text_str(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* Upstream's truncateIfTooLong for a whole text: cut at MAX_TEXT (a character boundary), then
 * the guidance line. Returns whether it cut. */
static bool text_cap(struct text *t)
{
    if (t->failed || t->len <= MAX_TEXT)
        return false;
    t->len = broker_utf8_cut(t->s, t->len, MAX_TEXT);
    t->s[t->len] = '\0';
    text_str(t, "\n");
    text_str(t, TRUNCATION_GUIDANCE);
    return true;
}

/* {"output": TEXT} with the text's ownership kept by the caller; NULL on ENOMEM. */
static cJSON *output_result(struct text *t)
{
    if (t->failed)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "output", t->s ? t->s : "")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Short echo of agent text in a message (upstream echoes it whole; corral caps it so a huge
 * old_string cannot double the size of every error). */
static void echo(char *buf, size_t size, const char *s)
{
    size_t n = strlen(s);
    if (n < size) {
        memcpy(buf, s, n + 1);
        return;
    }
    size_t cut = broker_utf8_cut(s, n, size - 4);
    memcpy(buf, s, cut);
    memcpy(buf + cut, "...", 4);
}

static cJSON *fail_broker(const struct broker_err *e, bool *is_error)
{
    *is_error = true;
    return voltagent_error(e);
}

__attribute__((format(printf, 3, 4))) static cJSON *fail_text(bool *is_error, const char *code,
                                                              const char *fmt, ...)
{
    char buf[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    *is_error = true;
    return voltagent_error_text(code, buf);
}

static cJSON *fail_path(cJSON *err, bool *is_error)
{
    *is_error = true;
    return err;
}

/* ---- the rules shared by the write tools ---------------------------------------------------- */

static const char READ_ONLY_TEXT[] = "Workspace filesystem is read-only.";

/* A glob argument may not climb either: the seed rejects every input holding ".." or "~". */
static int pattern_check(const char *pat, const char *field, cJSON **error)
{
    /* The path rule without its leading-'/' requirement. */
    char probe[GLOB_MAX_PATTERN + 2];
    if (strlen(pat) > GLOB_MAX_PATTERN) {
        char text[128];
        snprintf(text, sizeof(text), "Error: %s is longer than %d bytes", field, GLOB_MAX_PATTERN);
        *error = voltagent_error_text(broker_kind_name(BROKER_E_PATTERN), text);
        return -1;
    }
    snprintf(probe, sizeof(probe), "/%s", pat);
    return voltagent_path_check(probe, field, error);
}

struct link_text {
    const char *pre, *post; /* upstream's message: PRE + path + POST */
};
static const struct link_text SYMLINK_TEXT = {"Error: Symlinks are not allowed: ", ""};

/* Upstream refuses a path whose last component is a symlink (lstat, then "Symlinks are not
 * allowed"). One leading out of the workspace is the broker's to refuse (a containment denial,
 * recorded as such); one that stays inside gets upstream's message, in TEXT (two parts around
 * the path). NULL to go on. */

static cJSON *no_symlink(struct tool_ctx *ctx, const char *path, const char *field,
                         const struct link_text *text, bool *is_error)
{
    struct broker_err e = {0};
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, field, &rel, &e) < 0 || !*rel)
        return NULL; /* the operation reports it */
    const char *leaf;
    _cleanup_close_ int dirfd = broker_open_parent(ctx, rel, false, field, &leaf, &e);
    struct stat st;
    if (dirfd < 0 || fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
        return NULL;
    struct broker_meta m;
    if (broker_info(ctx, path, field, &m, &e) < 0 && e.kind == BROKER_E_DENIED)
        return fail_broker(&e, is_error);
    broker_meta_clear(&m);
    char buf[1100];
    snprintf(buf, sizeof(buf), "%s%s%s", text->pre, path, text->post);
    *is_error = true;
    return voltagent_error_text(VOLTAGENT_E_SYMLINK, buf);
}

/* The common head of every write tool: the path rule, read-only mode, no symlink. Then comes
 * requireReadBeforeWrite, which the gate checked before the call (volt_target, tools/gate.h). */
static cJSON *write_guard(struct tool_ctx *ctx, const struct volt_tool *t, const char *path,
                          const char *field, const struct link_text *symlink_text, bool *is_error)
{
    (void)t;
    cJSON *err;
    if (voltagent_path_check(path, field, &err) < 0)
        return fail_path(err, is_error);
    if (ctx->read_only)
        return fail_text(is_error, VOLTAGENT_E_READ_ONLY, "%s", READ_ONLY_TEXT);
    return no_symlink(ctx, path, field, symlink_text, is_error);
}

static void note(struct tool_ctx *ctx, const char *path, bool gone)
{
    struct broker_err e;
    _cleanup_free_ char *rel = NULL;
    if (!ctx->session || broker_path_clean(path, "file_path", &rel, &e) < 0)
        return;
    if (gone)
        tool_session_forget(ctx->session, rel);
    else
        (void)tool_session_note_write(ctx->session, ctx, rel);
}

/* ---- ls, stat ------------------------------------------------------------------------------- */

static const struct tool_param ls_params[] = {
    {"path", TOOL_PARAM_STRING, false, "Directory path to list (default: /)", NULL, 0, 0},
};

/* A directory's path as upstream shows it: with a trailing '/'. */
static void text_entry_path(struct text *t, const struct broker_meta *m)
{
    text_str(t, m->path);
    if (m->is_dir && strcmp(m->path, "/"))
        text_str(t, "/");
}

static cJSON *info_json(const struct broker_meta *m)
{
    char iso[32];
    broker_iso_time(&m->mtime, iso);
    struct text p = {0};
    text_entry_path(&p, m);
    cJSON *o = cJSON_CreateObject();
    bool ok = o && !p.failed && cJSON_AddStringToObject(o, "path", p.s) &&
              cJSON_AddBoolToObject(o, "is_dir", m->is_dir) &&
              cJSON_AddNumberToObject(o, "size", m->is_dir ? 0 : (double)m->size) &&
              cJSON_AddStringToObject(o, "modified_at", iso);
    free(p.s);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *t_ls(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a, bool *is_error)
{
    (void)t;
    const char *path = arg_str(a, 0, "/");
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0)
        return fail_path(err, is_error);
    struct broker_walk_opts o = {
        .recursive = false, .want_meta = true, .max_entries = ctx->limits.max_explore_entries};
    struct broker_list l;
    struct broker_err e = {0};
    if (broker_explore(ctx, path, &o, &l, &e) < 0)
        return fail_broker(&e, is_error);
    struct text out = {0};
    cJSON *res = cJSON_CreateObject();
    cJSON *entries = cJSON_CreateArray();
    size_t shown = 0;
    /* Upstream lists files and directories, never symlinks. */
    for (size_t i = 0; i < l.n; i++) {
        const struct broker_meta *m = &l.v[i];
        if (m->is_symlink)
            continue;
        if (shown++)
            text_str(&out, "\n");
        text_entry_path(&out, m);
        if (m->is_dir)
            text_str(&out, " (directory)");
        else if (m->size)
            text_printf(&out, " (%ju bytes)", (uintmax_t)m->size);
        if (!cJSON_AddItemToArray(entries, info_json(m)))
            out.failed = true;
    }
    if (!shown)
        text_str(&out, "No files found");
    if (l.truncated) {
        text_str(&out, "\n");
        text_str(&out, TRUNCATION_GUIDANCE);
    }
    bool ok = res && entries && !out.failed && cJSON_AddStringToObject(res, "output", out.s) &&
              cJSON_AddItemToObject(res, "entries", entries) &&
              cJSON_AddBoolToObject(res, "truncated", l.truncated);
    if (ok)
        entries = NULL;
    broker_list_clear(&l);
    free(out.s);
    cJSON_Delete(entries);
    if (!ok) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

static const struct tool_param stat_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Absolute path to the file or directory", NULL, 0, 0},
};

static cJSON *t_stat(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                     bool *is_error)
{
    (void)t;
    const char *path = arg_str(a, 0, "/");
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0)
        return fail_path(err, is_error);
    struct broker_meta m;
    struct broker_err e = {0};
    struct text out = {0};
    if (broker_info(ctx, path, "path", &m, &e) < 0) {
        if (e.kind != BROKER_E_NOT_FOUND && e.kind != BROKER_E_NOT_DIR)
            return fail_broker(&e, is_error);
        /* Upstream answers a missing path with a sentence, not an error. */
        text_printf(&out, "No file or directory found at '%s'", path);
        cJSON *res = output_result(&out);
        free(out.s);
        if (res && !cJSON_AddBoolToObject(res, "exists", false)) {
            cJSON_Delete(res);
            res = NULL;
        }
        return res;
    }
    char iso[32];
    broker_iso_time(&m.mtime, iso);
    text_str(&out, "path: ");
    text_entry_path(&out, &m);
    text_printf(&out, "\ntype: %s", m.is_dir ? "directory" : "file");
    if (!m.is_dir)
        text_printf(&out, "\nsize: %ju bytes", (uintmax_t)m.size);
    text_printf(&out, "\nmodified_at: %s", iso);
    cJSON *res = output_result(&out);
    cJSON *info = info_json(&m);
    if (!res || !info || !cJSON_AddBoolToObject(res, "exists", true)) {
        cJSON_Delete(info);
        cJSON_Delete(res);
        res = NULL;
    } else {
        for (cJSON *it = info->child; it;) {
            cJSON *next = it->next;
            cJSON_AddItemToObject(res, it->string, cJSON_DetachItemViaPointer(info, it));
            it = next;
        }
        cJSON_Delete(info);
    }
    broker_meta_clear(&m);
    free(out.s);
    return res;
}

/* ---- read_file ------------------------------------------------------------------------------ */

static const struct tool_param read_params[] = {
    {"file_path", TOOL_PARAM_STRING, true, "Absolute path to the file to read", NULL, 0, 0},
    {"offset", TOOL_PARAM_INT_TEXT, false, "Line offset to start reading from (0-indexed)", NULL, 0,
     MAX_INT},
    {"limit", TOOL_PARAM_INT_TEXT, false, "Maximum number of lines to read", NULL, 0, MAX_INT},
};

/* Upstream's formatContentWithLineNumbers: "%6d\t" + line; a line over 10000 characters goes
 * in chunks numbered N.1, N.2, ... (corral counts bytes, cut at character boundaries). */
#define MAX_LINE_LENGTH 10000
static void number_line(struct text *out, uint64_t n, const char *s, size_t len)
{
    size_t chunk = 0;
    do {
        size_t take = len > MAX_LINE_LENGTH ? broker_utf8_cut(s, len, MAX_LINE_LENGTH) : len;
        if (take == 0 && len)
            take = len; /* cannot happen with valid UTF-8; never loop forever */
        if (out->len)
            text_str(out, "\n");
        if (chunk == 0) {
            text_printf(out, "%6ju\t", (uintmax_t)n);
        } else {
            char mark[48];
            snprintf(mark, sizeof(mark), "%ju.%zu", (uintmax_t)n, chunk);
            text_printf(out, "%6s\t", mark);
        }
        text_add(out, s, take);
        s += take;
        len -= take;
        chunk++;
    } while (len);
}

static cJSON *t_read(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                     bool *is_error)
{
    (void)t;
    const char *path = arg_str(a, 0, "");
    cJSON *err;
    if (voltagent_path_check(path, "file_path", &err) < 0)
        return fail_path(err, is_error);
    uint64_t offset = arg_u64(a, 1, 0), limit = arg_u64(a, 2, 2000);
    cJSON *link = no_symlink(ctx, path, "file_path", &SYMLINK_TEXT, is_error);
    if (link || *is_error)
        return link;
    struct broker_err e = {0};
    /* limit 0 still checks the file (upstream reads it, then slices nothing). */
    struct broker_read_opts o = {.start_line = offset + 1,
                                 .end_line = offset > UINT64_MAX - limit ? 0
                                                                         : offset + (limit ? limit : 1)};
    struct broker_read_result r;
    if (broker_read(ctx, path, &o, &r, &e) < 0) {
        if (e.kind == BROKER_E_NOT_FOUND || e.kind == BROKER_E_IS_DIR || e.kind == BROKER_E_NOT_REGULAR)
            return fail_text(is_error, broker_kind_name(e.kind), "Error: File '%s' not found", path);
        if (e.kind == BROKER_E_INVALID && !strcmp(e.field, "startLine")) {
            struct broker_read_opts first = {.start_line = 1, .end_line = 1};
            uint64_t total = 0;
            if (broker_read(ctx, path, &first, &r, &e) == 0) {
                total = r.total_lines;
                broker_read_result_clear(&r);
            }
            return fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                             "Error: Line offset %ju exceeds file length (%ju lines)", (uintmax_t)offset,
                             (uintmax_t)total);
        }
        return fail_broker(&e, is_error);
    }
    /* What was read counts as read (upstream records partial reads too). */
    if (ctx->session) {
        _cleanup_free_ char *rel = NULL;
        if (broker_path_clean(path, "file_path", &rel, &e) == 0)
            (void)tool_session_note_read(ctx->session, ctx, rel);
    }
    bool blank = r.meta.size == 0;
    if (!blank && offset == 0 && !r.truncated && r.returned_lines == r.total_lines) {
        blank = true;
        for (size_t i = 0; i < r.len && blank; i++)
            blank = r.content[i] == ' ' || (r.content[i] >= '\t' && r.content[i] <= '\r');
    }
    struct text out = {0};
    if (limit == 0) {
        text_str(&out, "");
    } else if (blank) {
        text_str(&out, "System reminder: File exists but has empty contents");
    } else {
        const char *p = r.content, *end = r.content + r.len;
        uint64_t n = offset + 1;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
            number_line(&out, n++, p, len);
            p += len + (nl ? 1 : 0);
        }
        if (r.truncated) {
            text_str(&out, "\n");
            text_str(&out, TRUNCATION_GUIDANCE);
        }
    }
    cJSON *res = output_result(&out);
    if (res && (!cJSON_AddNumberToObject(res, "total_lines", (double)r.total_lines) ||
                !cJSON_AddBoolToObject(res, "truncated", r.truncated))) {
        cJSON_Delete(res);
        res = NULL;
    }
    free(out.s);
    broker_read_result_clear(&r);
    return res;
}

/* ---- write_file, edit_file ------------------------------------------------------------------ */

static const struct tool_param write_params[] = {
    {"file_path", TOOL_PARAM_STRING, true, "Absolute path to the file to write", NULL, 0, 0},
    {"content", TOOL_PARAM_STRING, true, "Content to write to the file", NULL, 0, 0},
    {"overwrite", TOOL_PARAM_BOOL, false, "Whether to overwrite the file if it already exists", NULL, 0,
     0},
    {"create_parent_dirs", TOOL_PARAM_BOOL, false, "Whether to create parent directories if needed",
     NULL, 0, 0},
};

static cJSON *t_write(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error)
{
    const char *path = arg_str(a, 0, ""), *content = arg_str(a, 1, "");
    cJSON *guard = write_guard(
        ctx, t, path, "file_path",
        &(struct link_text){"Cannot write to ", " because it is a symlink. Symlinks are not allowed."},
        is_error);
    if (guard || *is_error)
        return guard;
    struct broker_write_opts o = {
        .mode = arg_bool(a, 2, false) ? BROKER_WRITE_OVERWRITE : BROKER_WRITE_CREATE,
        .create_dirs = arg_bool(a, 3, true),
    };
    struct broker_err e = {0};
    size_t written = 0;
    if (broker_write(ctx, path, content, strlen(content), &o, NULL, &written, &e) < 0) {
        if (e.kind == BROKER_E_EXISTS)
            return fail_text(is_error, broker_kind_name(e.kind),
                             "Cannot write to %s because it already exists. Read and then make an edit, "
                             "or write to a new path.",
                             path);
        if (e.kind == BROKER_E_IS_DIR || e.kind == BROKER_E_NOT_REGULAR)
            return fail_text(is_error, broker_kind_name(e.kind),
                             "Cannot write to %s because it is not a file.", path);
        return fail_broker(&e, is_error);
    }
    note(ctx, path, false);
    struct text out = {0};
    text_printf(&out, "Successfully wrote to '%s'", path);
    cJSON *res = output_result(&out);
    free(out.s);
    if (res && !cJSON_AddNumberToObject(res, "bytes_written", (double)written)) {
        cJSON_Delete(res);
        res = NULL;
    }
    return res;
}

static const struct tool_param edit_params[] = {
    {"file_path", TOOL_PARAM_STRING, true, "Absolute path to the file to edit", NULL, 0, 0},
    {"old_string", TOOL_PARAM_STRING, true, "String to be replaced (must match exactly)", NULL, 0, 0},
    {"new_string", TOOL_PARAM_STRING, true, "String to replace with", NULL, 0, 0},
    {"replace_all", TOOL_PARAM_BOOL, false, "Whether to replace all occurrences", NULL, 0, 0},
};

/* Upstream's performStringReplacement: occurrences counted left to right without overlap
 * (String.split), unique unless replace_all, then split/join. The new content is written
 * atomically by broker_write (mode, owner kept). */
static cJSON *t_edit(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                     bool *is_error)
{
    const char *path = arg_str(a, 0, ""), *old = arg_str(a, 1, ""), *new = arg_str(a, 2, "");
    bool all = arg_bool(a, 3, false);
    cJSON *guard = write_guard(ctx, t, path, "file_path", &SYMLINK_TEXT, is_error);
    if (guard || *is_error)
        return guard;
    if (!*old)
        return fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                         "Error: old_string must not be empty; to write a whole file use write_file");
    struct broker_err e = {0};
    struct broker_read_result r;
    if (broker_read(ctx, path, NULL, &r, &e) < 0) {
        if (e.kind == BROKER_E_NOT_FOUND || e.kind == BROKER_E_IS_DIR || e.kind == BROKER_E_NOT_REGULAR)
            return fail_text(is_error, broker_kind_name(e.kind), "Error: File '%s' not found", path);
        return fail_broker(&e, is_error);
    }
    if (r.truncated) {
        broker_read_result_clear(&r);
        return fail_text(is_error, broker_kind_name(BROKER_E_TOO_LARGE),
                         "Error: '%s' is larger than the workspace's file size limit (%ju bytes) and "
                         "cannot be edited",
                         path, (uintmax_t)ctx->limits.max_file_size);
    }
    size_t olen = strlen(old), nlen = strlen(new), count = 0;
    for (const char *p = r.content; (p = memmem(p, r.len - (size_t)(p - r.content), old, olen));
         p += olen)
        count++;
    char shown[512];
    echo(shown, sizeof(shown), old);
    if (count == 0) {
        broker_read_result_clear(&r);
        return fail_text(is_error, broker_kind_name(BROKER_E_NO_MATCH),
                         "Error: String not found in file: '%s'", shown);
    }
    if (count > 1 && !all) {
        broker_read_result_clear(&r);
        return fail_text(is_error, broker_kind_name(BROKER_E_NOT_UNIQUE),
                         "Error: String '%s' appears %zu times in file. Use replace_all=true to replace "
                         "all instances, or provide a more specific string with surrounding context.",
                         shown, count);
    }
    struct text body = {0};
    const char *p = r.content;
    for (size_t i = 0; i < count; i++) {
        const char *hit = memmem(p, r.len - (size_t)(p - r.content), old, olen);
        text_add(&body, p, (size_t)(hit - p));
        text_add(&body, new, nlen);
        p = hit + olen;
    }
    text_add(&body, p, r.len - (size_t)(p - r.content));
    broker_read_result_clear(&r);
    if (body.failed) {
        free(body.s);
        return NULL;
    }
    struct broker_write_opts o = {.mode = BROKER_WRITE_OVERWRITE};
    int w = broker_write(ctx, path, body.s ? body.s : "", body.len, &o, NULL, NULL, &e);
    free(body.s);
    if (w < 0)
        return fail_broker(&e, is_error);
    note(ctx, path, false);
    struct text out = {0};
    text_printf(&out, "Successfully replaced %zu occurrence(s) in '%s'", count, path);
    cJSON *res = output_result(&out);
    free(out.s);
    if (res && !cJSON_AddNumberToObject(res, "occurrences", (double)count)) {
        cJSON_Delete(res);
        res = NULL;
    }
    return res;
}

/* ---- delete_file, mkdir, rmdir -------------------------------------------------------------- */

/* Recursive removal of directory PATH with the broker's own walk (symlinks listed, never
 * followed) and removals, deepest first. Bounded: a tree of more than MAX_REMOVE entries is
 * refused before anything is removed. */
#define MAX_REMOVE 100000
static int remove_tree(struct tool_ctx *ctx, const char *path, struct broker_err *e)
{
    struct broker_walk_opts o = {.recursive = true, .max_depth = 4096, .max_entries = MAX_REMOVE};
    struct broker_list l;
    if (broker_explore(ctx, path, &o, &l, e) < 0)
        return -1;
    if (l.truncated) {
        broker_list_clear(&l);
        return broker_fail(e, BROKER_E_TOO_LARGE, "path",
                           "the directory holds more than %d entries; remove its subdirectories first",
                           MAX_REMOVE);
    }
    int r = 0;
    for (size_t i = l.n; i-- > 0 && r == 0;)
        r = broker_remove(ctx, l.v[i].path, l.v[i].is_dir && !l.v[i].is_symlink, e);
    broker_list_clear(&l);
    return r < 0 ? -1 : broker_remove(ctx, path, true, e);
}

static const struct tool_param delete_params[] = {
    {"file_path", TOOL_PARAM_STRING, true, "Absolute path to the file to delete", NULL, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false, "Whether to delete directories recursively", NULL, 0, 0},
};

static cJSON *t_delete(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                       bool *is_error)
{
    const char *path = arg_str(a, 0, "");
    cJSON *guard = write_guard(ctx, t, path, "file_path", &SYMLINK_TEXT, is_error);
    if (guard || *is_error)
        return guard;
    struct broker_err e = {0};
    struct broker_meta m;
    if (broker_info(ctx, path, "file_path", &m, &e) == 0 && m.is_dir && !m.is_symlink) {
        broker_meta_clear(&m);
        if (!arg_bool(a, 1, false))
            return fail_text(is_error, broker_kind_name(BROKER_E_IS_DIR), "Error: '%s' is a directory",
                             path);
        if (remove_tree(ctx, path, &e) < 0)
            return fail_broker(&e, is_error);
    } else {
        broker_meta_clear(&m);
        if (broker_remove(ctx, path, false, &e) < 0) {
            if (e.kind == BROKER_E_NOT_FOUND)
                return fail_text(is_error, broker_kind_name(e.kind), "Error: File '%s' not found", path);
            return fail_broker(&e, is_error);
        }
    }
    note(ctx, path, true);
    struct text out = {0};
    text_printf(&out, "Successfully deleted '%s'", path);
    cJSON *res = output_result(&out);
    free(out.s);
    return res;
}

static const struct tool_param mkdir_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Absolute path to the directory to create", NULL, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false,
     "Whether to create parent directories if needed (default: true)", NULL, 0, 0},
};

static cJSON *t_mkdir(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error)
{
    const char *path = arg_str(a, 0, "");
    cJSON *guard = write_guard(
        ctx, t, path, "path",
        &(struct link_text){"Cannot create directory '", "' because it is a symlink."}, is_error);
    if (guard || *is_error)
        return guard;
    struct broker_err e = {0};
    struct broker_meta m;
    bool exists = broker_info(ctx, path, "path", &m, &e) == 0;
    bool dir = exists && m.is_dir;
    if (exists && !dir) {
        broker_meta_clear(&m);
        return fail_text(is_error, broker_kind_name(BROKER_E_EXISTS),
                         "Cannot create directory '%s' because a file exists at that path.", path);
    }
    if (!exists && broker_mkdir(ctx, path, arg_bool(a, 1, true), &e) < 0)
        return fail_broker(&e, is_error);
    if (!exists && broker_info(ctx, path, "path", &m, &e) < 0)
        return fail_broker(&e, is_error);
    struct text out = {0};
    text_str(&out, "Successfully created directory '");
    text_entry_path(&out, &m);
    text_str(&out, "'");
    broker_meta_clear(&m);
    cJSON *res = output_result(&out);
    free(out.s);
    return res;
}

static const struct tool_param rmdir_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Absolute path to the directory to remove", NULL, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false, "Whether to remove contents recursively", NULL, 0, 0},
};

static cJSON *t_rmdir(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error)
{
    const char *path = arg_str(a, 0, "");
    cJSON *guard = write_guard(ctx, t, path, "path", &SYMLINK_TEXT, is_error);
    if (guard || *is_error)
        return guard;
    struct broker_err e = {0};
    struct broker_meta m;
    if (broker_info(ctx, path, "path", &m, &e) < 0) {
        if (e.kind == BROKER_E_NOT_FOUND || e.kind == BROKER_E_NOT_DIR)
            return fail_text(is_error, broker_kind_name(BROKER_E_NOT_FOUND),
                             "Error: Directory '%s' not found", path);
        return fail_broker(&e, is_error);
    }
    bool dir = m.is_dir;
    broker_meta_clear(&m);
    if (!dir)
        return fail_text(is_error, broker_kind_name(BROKER_E_NOT_DIR), "Error: Directory '%s' not found",
                         path);
    if ((arg_bool(a, 1, false) ? remove_tree(ctx, path, &e) : broker_remove(ctx, path, true, &e)) < 0)
        return fail_broker(&e, is_error);
    struct text out = {0};
    text_printf(&out, "Successfully removed directory '%s'", path);
    cJSON *res = output_result(&out);
    free(out.s);
    return res;
}

/* ---- list_tree / list_files ----------------------------------------------------------------- */

static const struct tool_param tree_params[] = {
    {"path", TOOL_PARAM_STRING, false, "Base directory path (default: /)", NULL, 0, 0},
    {"max_depth", TOOL_PARAM_INT_TEXT, false, "Maximum depth to traverse (default: 3)", NULL, 1,
     MAX_INT},
};

static size_t depth_of(const char *path, size_t base_len)
{
    size_t d = 0;
    for (const char *p = path + base_len; *p; p++)
        d += *p == '/';
    return d; /* "/a" under "/" (base_len 0) and "/s/a" under "/s" are both depth 1 */
}

/* Writes the children of the entry at PARENT (or of the start, PARENT = l->n) in upstream's
 * order: directories first, then by path; each directory followed by its own children. The
 * walk's list is pre-order, so an entry's subtree is the run after it of deeper entries. */
static void tree_level(struct text *out, const struct broker_list *l, const size_t *depth, size_t from,
                       size_t to, size_t d)
{
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = from; i < to; i++) {
            if (depth[i] != d || l->v[i].is_symlink || (pass == 0) != l->v[i].is_dir)
                continue;
            size_t end = i + 1;
            while (end < to && depth[end] > d)
                end++;
            const char *name = strrchr(l->v[i].path, '/');
            name = name ? name + 1 : l->v[i].path;
            text_str(out, "\n");
            for (size_t k = 0; k < d; k++)
                text_str(out, "  ");
            text_printf(out, "- %s%s", name, l->v[i].is_dir ? "/" : "");
            if (l->v[i].is_dir)
                tree_level(out, l, depth, i + 1, end, d + 1);
        }
}

static cJSON *t_tree(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                     bool *is_error)
{
    (void)t;
    const char *path = arg_str(a, 0, "/");
    uint64_t max_depth = arg_u64(a, 1, 3);
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0)
        return fail_path(err, is_error);
    struct broker_err e = {0};
    struct broker_meta m;
    if (broker_info(ctx, path, "path", &m, &e) < 0)
        return fail_broker(&e, is_error);
    struct text out = {0};
    if (!m.is_dir) { /* upstream: a file's tree is its path */
        text_str(&out, m.path);
        broker_meta_clear(&m);
        cJSON *res = output_result(&out);
        free(out.s);
        return res;
    }
    text_entry_path(&out, &m);
    size_t base_len = strlen(m.path);
    broker_meta_clear(&m);
    struct broker_walk_opts o = {.recursive = true,
                                 .max_depth = max_depth > 64 ? 64 : (unsigned)max_depth,
                                 .max_entries = ctx->limits.max_explore_entries};
    struct broker_list l;
    if (broker_explore(ctx, path, &o, &l, &e) < 0) {
        free(out.s);
        return fail_broker(&e, is_error);
    }
    size_t *depth = calloc(l.n ? l.n : 1, sizeof(*depth));
    if (!depth) {
        broker_list_clear(&l);
        free(out.s);
        return NULL;
    }
    size_t visible = 0;
    for (size_t i = 0; i < l.n; i++) {
        depth[i] = depth_of(l.v[i].path, base_len == 1 ? 0 : base_len);
        visible += !l.v[i].is_symlink;
    }
    if (!visible)
        text_str(&out, "\n  (empty)");
    else
        tree_level(&out, &l, depth, 0, l.n, 1);
    bool cut = l.truncated;
    if (cut) {
        text_str(&out, "\n");
        text_str(&out, TRUNCATION_GUIDANCE);
    }
    cut |= text_cap(&out);
    free(depth);
    broker_list_clear(&l);
    cJSON *res = output_result(&out);
    free(out.s);
    if (res && !cJSON_AddBoolToObject(res, "truncated", cut)) {
        cJSON_Delete(res);
        res = NULL;
    }
    return res;
}

/* ---- glob, grep ----------------------------------------------------------------------------- */

static const struct tool_param glob_params[] = {
    {"pattern", TOOL_PARAM_STRING, true, "Glob pattern (e.g., '*.ts', '**/*.ts')", NULL, 0, 0},
    {"path", TOOL_PARAM_STRING, false, "Base path to search from (default: /)", NULL, 0, 0},
};

/* Upstream: fast-glob beneath PATH, files only, dot files included, symlinks not followed,
 * sorted by path. Here: the broker's walk, matched with tools/broker/glob.c. */
#define MAX_GLOB_WALK 100000
static cJSON *t_glob(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                     bool *is_error)
{
    (void)t;
    const char *pattern = arg_str(a, 0, ""), *path = arg_str(a, 1, "/");
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0 || pattern_check(pattern, "pattern", &err) < 0)
        return fail_path(err, is_error);
    while (*pattern == '/')
        pattern++;
    struct glob *g = NULL;
    if (!*pattern || glob_new(pattern, &g) < 0)
        return fail_text(is_error, broker_kind_name(BROKER_E_PATTERN),
                         "Error: '%.200s' is not a valid glob pattern", arg_str(a, 0, ""));
    struct broker_err e = {0};
    struct broker_list l;
    struct broker_walk_opts o = {.recursive = true, .max_depth = 4096, .max_entries = MAX_GLOB_WALK};
    if (broker_explore(ctx, path, &o, &l, &e) < 0) {
        glob_free(g);
        return fail_broker(&e, is_error);
    }
    _cleanup_free_ char *base = NULL;
    if (broker_path_clean(path, "path", &base, &e) < 0) {
        glob_free(g);
        broker_list_clear(&l);
        return fail_broker(&e, is_error);
    }
    size_t skip = *base ? strlen(base) + 2 : 1; /* "/" + base + "/" */
    struct text out = {0};
    cJSON *res = cJSON_CreateObject(), *files = cJSON_CreateArray();
    size_t found = 0, cap = ctx->limits.max_explore_entries;
    bool cut = l.truncated;
    for (size_t i = 0; i < l.n; i++) {
        const struct broker_meta *m = &l.v[i];
        if (m->is_dir || m->is_symlink || strlen(m->path) < skip || !glob_matches(g, m->path + skip))
            continue;
        if (found == cap) {
            cut = true;
            break;
        }
        if (found++)
            text_str(&out, "\n");
        text_str(&out, m->path);
        cJSON_AddItemToArray(files, cJSON_CreateString(m->path));
    }
    glob_free(g);
    broker_list_clear(&l);
    if (!found)
        text_printf(&out, "No files found matching pattern '%s'", arg_str(a, 0, ""));
    if (cut) {
        text_str(&out, "\n");
        text_str(&out, TRUNCATION_GUIDANCE);
    }
    bool ok = res && files && !out.failed && cJSON_GetArraySize(files) == (int)found &&
              cJSON_AddStringToObject(res, "output", out.s) &&
              cJSON_AddItemToObject(res, "files", files) && cJSON_AddBoolToObject(res, "truncated", cut);
    if (ok)
        files = NULL;
    cJSON_Delete(files);
    free(out.s);
    if (!ok) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

static const struct tool_param grep_params[] = {
    {"pattern", TOOL_PARAM_STRING, true, "Regex pattern to search for", NULL, 0, 0},
    {"path", TOOL_PARAM_STRING, false, "Base path to search from (default: /)", NULL, 0, 0},
    {"glob", TOOL_PARAM_STRING_NULL, false, "Optional glob pattern to filter files (e.g., '*.ts')", NULL,
     0, 0},
};

/* Upstream's assessRegexPattern: a pattern over 500 characters, or one with a nested or an
 * overlapping quantifier ("(a+)+", ".*+"), is searched for as literal text instead. Its two
 * detectors run here under a match limit, on at most 500 bytes. */
#define MAX_REGEX_PATTERN 500
static bool regex_unsafe(const char *pattern)
{
    static const char *const detectors[] = {
        "\\((?:[^()\\\\]|\\\\.)*[*+{](?:[^()\\\\]|\\\\.)*\\)\\s*[*+{]",
        "(\\.\\*|\\.\\+|\\.\\{[^}]+\\})\\s*[*+{]",
    };
    size_t len = strlen(pattern);
    if (len > MAX_REGEX_PATTERN)
        return true;
    bool unsafe = false;
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (mc)
        pcre2_set_match_limit(mc, 100000);
    for (size_t i = 0; mc && i < ARRAY_SIZE(detectors) && !unsafe; i++) {
        int err;
        PCRE2_SIZE off;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)detectors[i], PCRE2_ZERO_TERMINATED, 0, &err, &off,
                                       NULL);
        pcre2_match_data *md = re ? pcre2_match_data_create_from_pattern(re, NULL) : NULL;
        /* A detector that cannot run (no memory, its limit hit) counts as unsafe: literal is
         * the cautious reading. */
        unsafe = !md || pcre2_match(re, (PCRE2_SPTR)pattern, len, 0, 0, md, mc) != PCRE2_ERROR_NOMATCH;
        pcre2_match_data_free(md);
        pcre2_code_free(re);
    }
    pcre2_match_context_free(mc);
    return unsafe || !mc;
}

static int cmp_match(const void *x, const void *y)
{
    const struct broker_match *a = x, *b = y;
    int c = strcmp(a->path, b->path);
    return c ? c : (a->line > b->line) - (a->line < b->line);
}

/* Upstream: ripgrep (or a fallback walk), at most 5000 matches, printed per file: "/path:" then
 * "  LINE: text", an unsafe pattern taken literally. Here: broker_search with the workspace's
 * exclusions and the policy's max_search_results. */
static cJSON *t_grep(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                     bool *is_error)
{
    (void)t;
    const char *pattern = arg_str(a, 0, ""), *path = arg_str(a, 1, "/"), *glob = arg_str(a, 2, NULL);
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0 || (glob && pattern_check(glob, "glob", &err) < 0))
        return fail_path(err, is_error);
    const char *const paths[] = {path};
    struct broker_search_opts o = {.paths = paths,
                                   .n_paths = 1,
                                   .query = pattern,
                                   .recursive = true,
                                   .literal = regex_unsafe(pattern),
                                   .include_glob = glob && *glob ? glob : NULL,
                                   .max_results = ctx->limits.max_search_results,
                                   .max_line_bytes = MAX_LINE_LENGTH};
    broker_default_excludes(ctx, &o.exclude, &o.n_exclude);
    struct broker_search_result r;
    struct broker_err e = {0};
    if (broker_search(ctx, &o, &r, &e) < 0) {
        if (e.kind == BROKER_E_PATTERN && !strcmp(e.field, "query"))
            return fail_text(is_error, broker_kind_name(e.kind), "Invalid regex pattern: %s", e.msg);
        return fail_broker(&e, is_error);
    }
    if (r.n > 1)
        qsort(r.v, r.n, sizeof(*r.v), cmp_match);
    struct text out = {0};
    cJSON *res = cJSON_CreateObject(), *matches = cJSON_CreateArray();
    for (size_t i = 0; i < r.n; i++) {
        if (i == 0 || strcmp(r.v[i].path, r.v[i - 1].path))
            text_printf(&out, "%s%s:", i ? "\n" : "", r.v[i].path);
        text_printf(&out, "\n  %ju: ", (uintmax_t)r.v[i].line);
        text_str(&out, r.v[i].text);
        cJSON *m = cJSON_CreateObject();
        if (!cJSON_AddItemToArray(matches, m) || !cJSON_AddStringToObject(m, "path", r.v[i].path) ||
            !cJSON_AddNumberToObject(m, "line", (double)r.v[i].line) ||
            !cJSON_AddStringToObject(m, "text", r.v[i].text))
            out.failed = true;
    }
    if (!r.n)
        text_printf(&out, "No matches found for pattern '%s'", pattern);
    bool cut = r.truncated;
    if (cut) {
        text_str(&out, "\n");
        text_str(&out, TRUNCATION_GUIDANCE);
    }
    cut |= text_cap(&out);
    bool ok = res && matches && !out.failed && cJSON_AddStringToObject(res, "output", out.s) &&
              cJSON_AddItemToObject(res, "matches", matches) &&
              cJSON_AddBoolToObject(res, "truncated", cut);
    if (ok)
        matches = NULL;
    cJSON_Delete(matches);
    broker_search_result_clear(&r);
    free(out.s);
    if (!ok) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

/* ---- the registry --------------------------------------------------------------------------- */

/* ---- execute_command (the sandbox toolkit) ------------------------------------------------- */

static const struct tool_param exec_params[] = {
    {"command", TOOL_PARAM_STRING, true, "Command to execute", NULL, 0, 0},
    {"args", TOOL_PARAM_STRINGS, false, "Command arguments", NULL, 0, MAX_ARGS},
    {"cwd", TOOL_PARAM_STRING, false, "Working directory for the command", NULL, 0, 0},
    {"timeout_ms", TOOL_PARAM_INT_TEXT, false, "Timeout in milliseconds", NULL, 0, MAX_INT},
    {"env", TOOL_PARAM_STRMAP, false, "Environment variables to set", NULL, 0, MAX_ENV},
    {"stdin", TOOL_PARAM_STRING, false,
     "Optional stdin input for the command (not supported by corral yet: must be empty)", NULL, 0, 0},
    {"max_output_bytes", TOOL_PARAM_INT_TEXT, false,
     "Maximum output bytes to capture per stream (stdout or stderr)", NULL, 0, MAX_INT},
    {"max_output_kb", TOOL_PARAM_INT_TEXT, false,
     "Maximum output to capture per stream, in KiB (the seed's name)", NULL, 0, MAX_INT},
};

/* Appends S to the command line in single quotes, so an argument reaches the program as one
 * word, whatever it holds (upstream passes args to spawn without a shell). */
static void shell_quote(struct text *t, const char *s)
{
    text_str(t, " '");
    for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
        text_add(t, s, (size_t)(q - s));
        text_str(t, "'\\''");
    }
    text_str(t, s);
    text_str(t, "'");
}

/* Upstream's per-stream capture cap: the stream cut at a character boundary. */
static bool cap_stream(char *s, size_t *len, size_t max)
{
    if (*len <= max)
        return false;
    *len = broker_utf8_cut(s, *len, max);
    s[*len] = '\0';
    return true;
}

static void stream_summary(struct text *t, const char *label, size_t bytes, bool cut)
{
    if (bytes)
        text_printf(t, "\n%s: captured inline (%zu bytes%s)", label, bytes, cut ? ", truncated" : "");
    else
        text_printf(t, "\n%s: (empty)", label);
}

/* Upstream's result object for a command that could not start. */
static cJSON *exec_failed(const char *message, const char *code, bool *is_error)
{
    cJSON *o = cJSON_CreateObject();
    char summary[700];
    snprintf(summary, sizeof(summary), "Error executing command: %s", message);
    bool ok = o && cJSON_AddBoolToObject(o, "success", false) && cJSON_AddNullToObject(o, "exit_code") &&
              cJSON_AddNumberToObject(o, "duration_ms", 0) &&
              cJSON_AddBoolToObject(o, "timed_out", false) &&
              cJSON_AddBoolToObject(o, "aborted", false) && cJSON_AddStringToObject(o, "stdout", "") &&
              cJSON_AddStringToObject(o, "stderr", "") &&
              cJSON_AddBoolToObject(o, "stdout_truncated", false) &&
              cJSON_AddBoolToObject(o, "stderr_truncated", false) &&
              cJSON_AddStringToObject(o, "summary", summary) &&
              cJSON_AddStringToObject(o, "error", message) && cJSON_AddStringToObject(o, "code", code);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    *is_error = true;
    return o;
}

static cJSON *t_exec(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                     bool *is_error)
{
    (void)t;
    const char *command = arg_str(a, 0, ""), *cwd = arg_str(a, 2, NULL), *in = arg_str(a, 5, "");
    if (!ctx->allow_commands)
        return exec_failed(
            "this agent's role may not run commands (the policy grants no command authority)",
            VOLTAGENT_E_COMMANDS, is_error);
    cJSON *err;
    if (cwd && voltagent_path_check(cwd, "cwd", &err) < 0)
        return fail_path(err, is_error);
    while (*command == ' ' || *command == '\t' || *command == '\n')
        command++;
    if (!*command)
        return exec_failed("Sandbox command is required", broker_kind_name(BROKER_E_INVALID), is_error);
    if (*in)
        return exec_failed("stdin is not supported by corral's command sandbox yet; write the input to "
                           "a file and redirect it",
                           broker_kind_name(BROKER_E_INVALID), is_error);
    /* operationTimeoutMs: the policy's command_timeout (default) and command_timeout_max
     * (ceiling, applied by the broker whatever the request says). 0 asks for no timeout,
     * which here means the ceiling. */
    double timeout = a->v[3] ? (double)arg_u64(a, 3, 0) / 1000.0 : 0;
    if (a->v[3] && timeout <= 0)
        timeout = ctx->limits.command_timeout_max;
    size_t per_stream = ctx->limits.max_output_bytes;
    if (a->v[6] && arg_u64(a, 6, 0) < per_stream)
        per_stream = (size_t)arg_u64(a, 6, 0);
    if (a->v[7] && arg_u64(a, 7, 0) < per_stream / 1024)
        per_stream = (size_t)arg_u64(a, 7, 0) * 1024;
    struct text line = {0};
    text_str(&line, command);
    for (const cJSON *it = a->v[1] ? a->v[1]->child : NULL; it; it = it->next)
        shell_quote(&line, it->valuestring);
    size_t n_env = a->v[4] ? (size_t)cJSON_GetArraySize(a->v[4]) : 0;
    char **env = calloc(n_env ? n_env : 1, sizeof(*env));
    size_t k = 0;
    bool env_ok = env != NULL;
    for (const cJSON *it = a->v[4] ? a->v[4]->child : NULL; env_ok && it; it = it->next) {
        if (!it->string || !*it->string || strchr(it->string, '=')) {
            for (size_t i = 0; i < k; i++)
                free(env[i]);
            free(env);
            free(line.s);
            return fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                             "Error: env names must be non-empty and hold no '='");
        }
        env_ok = asprintf(&env[k], "%s=%s", it->string, it->valuestring) >= 0;
        k += env_ok;
    }
    struct broker_command_opts o = {.command = line.s,
                                    .workdir = cwd,
                                    .timeout_sec = timeout,
                                    .env = (const char *const *)env,
                                    .n_env = k};
    struct broker_command_result r;
    struct broker_err e = {0};
    int rc = env_ok && !line.failed ? broker_command(ctx, &o, &r, &e) : -2;
    for (size_t i = 0; i < k; i++)
        free(env[i]);
    free(env);
    free(line.s);
    if (rc == -2)
        return NULL;
    if (rc < 0) {
        if (e.kind == BROKER_E_EXEC || e.kind == BROKER_E_IO)
            return exec_failed(e.msg, broker_kind_name(e.kind), is_error);
        return fail_broker(&e, is_error);
    }
    size_t out_bytes = r.out_len, err_bytes = r.err_len;
    bool out_cut = cap_stream(r.out, &r.out_len, per_stream) || (r.truncated && r.out_len);
    bool err_cut = cap_stream(r.err, &r.err_len, per_stream) || (r.truncated && r.err_len);
    struct text sum = {0};
    text_printf(&sum, "Exit code: %d\nDuration: %ju ms", r.exit_code, (uintmax_t)r.duration_ms);
    if (r.timed_out)
        text_str(&sum, "\nTimed out: true");
    if (out_cut)
        text_str(&sum, "\nStdout truncated: true");
    if (err_cut)
        text_str(&sum, "\nStderr truncated: true");
    stream_summary(&sum, "STDOUT", out_bytes, out_cut);
    stream_summary(&sum, "STDERR", err_bytes, err_cut);
    cJSON *res = cJSON_CreateObject();
    bool ok = res && !sum.failed &&
              cJSON_AddBoolToObject(res, "success", !r.timed_out && r.exit_code == 0) &&
              cJSON_AddNumberToObject(res, "exit_code", r.exit_code) &&
              cJSON_AddNumberToObject(res, "duration_ms", (double)r.duration_ms) &&
              cJSON_AddBoolToObject(res, "timed_out", r.timed_out) &&
              cJSON_AddBoolToObject(res, "aborted", false) &&
              cJSON_AddStringToObject(res, "stdout", r.out) &&
              cJSON_AddStringToObject(res, "stderr", r.err) &&
              cJSON_AddBoolToObject(res, "stdout_truncated", out_cut) &&
              cJSON_AddBoolToObject(res, "stderr_truncated", err_cut) &&
              cJSON_AddStringToObject(res, "summary", sum.s);
    free(sum.s);
    broker_command_result_clear(&r);
    if (!ok) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

/* ---- the toolkit table ---------------------------------------------------------------------- */

#define TOOL(n, d, p, f, w)            \
    {                                  \
        {n, d, p, ARRAY_SIZE(p)}, f, w \
    }
static const struct volt_tool tools[] = {
    TOOL("ls", "List files and directories in a workspace directory", ls_params, t_ls, false),
    TOOL("read_file",
         "Read file content with optional line range (offset/limit). Prefer targeted reads for large "
         "files.",
         read_params, t_read, false),
    TOOL("write_file",
         "Write content to a file. Existing files require overwrite=true; parent directories can be "
         "created automatically.",
         write_params, t_write, true),
    TOOL("edit_file",
         "Edit a file by replacing exact text.\n\nUsage:\n- Read the file first and copy the exact text "
         "for old_string.\n- old_string must be unique unless replace_all=true.\n- Preserve indentation "
         "and whitespace exactly.\n- If read_file output includes line numbers, do not include those "
         "prefixes in old_string/new_string.",
         edit_params, t_edit, true),
    TOOL("delete_file", "Delete a file from the filesystem. Use recursive=true to remove a directory",
         delete_params, t_delete, true),
    TOOL("stat", "Get file or directory metadata", stat_params, t_stat, false),
    TOOL("mkdir", "Create a directory in the filesystem", mkdir_params, t_mkdir, true),
    TOOL("rmdir", "Remove a directory from the filesystem", rmdir_params, t_rmdir, true),
    TOOL("list_tree", "List files and directories recursively with optional depth control", tree_params,
         t_tree, false),
    TOOL("list_files", "List files and directories recursively with optional depth control", tree_params,
         t_tree, false),
    TOOL("glob", "Find files matching a glob pattern (e.g., '**/*.ts' for all TypeScript files)",
         glob_params, t_glob, false),
    TOOL("grep", "Search for a regex pattern in files. Returns matching files and line numbers",
         grep_params, t_grep, false),
    TOOL("execute_command",
         "Execute a shell command in the workspace sandbox.\n\nUsage:\n- Prefer command + args (for "
         "example: command=\"npm\", args=[\"test\"]).\n- A full command line in command runs through sh "
         "-c; args are appended, each quoted as one word.\n- Set cwd explicitly for project-specific "
         "commands.\n- Use timeout_ms for long-running commands (capped by the workspace's limit).\n- "
         "Always verify paths and quote arguments that include spaces.",
         exec_params, t_exec, false),
};
#undef TOOL

/* Read-only mode hides the write tools (upstream's READ_ONLY_BLOCKED_TOOLS), and a role
 * without command authority does not see execute_command. */
static bool tool_shown(const void *row, const void *data)
{
    const struct volt_tool *t = row;
    const struct tool_ctx *ctx = data;
    if (t->writes && ctx->read_only)
        return false;
    return t->fn != t_exec || ctx->allow_commands;
}

static const struct volt_tool *tool_find(const char *name)
{
    return tool_params_find(tools, ARRAY_SIZE(tools), sizeof(tools[0]), name);
}

static int fs_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                   bool *is_error)
{
    const struct volt_tool *t = tool_find(tool);
    if (!t)
        return -ENOENT;
    struct broker_err e = {0};
    struct args a;
    *is_error = false;
    if (parse_args(t, args, &a, &e) < 0)
        *result = fail_broker(&e, is_error);
    else
        *result = t->fn(ctx, t, &a, is_error);
    return *result ? 0 : -ENOMEM;
}

static cJSON *volt_list(const struct tool_ctx *ctx)
{
    cJSON *arr = tool_params_list(tools, ARRAY_SIZE(tools), sizeof(tools[0]),
                                  TOOL_PARAMS_ALWAYS_REQUIRED, NULL, tool_shown, ctx);
    if (!arr || voltagent_search_list(ctx, arr) < 0 || voltagent_skills_list(ctx, arr) < 0) {
        cJSON_Delete(arr);
        return NULL;
    }
    return arr;
}

static int volt_run(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                    bool *is_error)
{
    *result = NULL;
    *is_error = false;
    int r = fs_call(ctx, tool, args, result, is_error);
    if (r == -ENOENT)
        r = voltagent_search_call(ctx, tool, args, result, is_error);
    if (r == -ENOENT)
        r = voltagent_skills_call(ctx, tool, args, result, is_error);
    return r;
}

/* The gate's view of a call (tools/gate.h). Filesystem tools: well-formed arguments, and for a
 * write tool the file requireReadBeforeWrite checks, after what write_guard answers first (the
 * path rule, a symlink); directories and missing paths pass, as upstream. The search and skills
 * toolkits change no file. */
static int volt_target(const struct tool_ctx *ctx, const char *tool, const cJSON *args, char **rel)
{
    *rel = NULL;
    const struct volt_tool *t = tool_find(tool);
    if (!t)
        return 0;
    struct args a;
    struct broker_err e = {0};
    /* Malformed arguments are still "well formed" for the gate: upstream holds a call for
     * approval before its schema check, so needsApproval answers first; fs_call then answers
     * the arguments. */
    if (parse_args(t, args, &a, &e) < 0 || !t->writes)
        return 0;
    const char *path = arg_str(&a, 0, "");
    cJSON *err = NULL;
    bool is_error = false;
    if (voltagent_path_check(path, "file_path", &err) < 0) {
        cJSON_Delete(err);
        return 0;
    }
    err = no_symlink((struct tool_ctx *)ctx, path, "file_path", &SYMLINK_TEXT, &is_error);
    if (err || is_error) {
        cJSON_Delete(err);
        return 0;
    }
    _cleanup_free_ char *r = NULL;
    if (broker_path_clean(path, "file_path", &r, &e) < 0)
        return 0;
    struct broker_meta m;
    if (broker_info(ctx, path, "file_path", &m, &e) < 0)
        return 0; /* missing: a new file; anything else: the tool reports it */
    bool dir = m.is_dir;
    broker_meta_clear(&m);
    if (!dir) {
        *rel = r;
        r = NULL;
    }
    return 0;
}

static cJSON *volt_refuse(struct tool_ctx *ctx, const char *tool, const struct tool_verdict *v)
{
    (void)ctx;
    bool is_error;
    _cleanup_free_ char *shown = v->rel ? broker_path_display(v->rel) : NULL;
    const char *p = shown ? shown : v->rel ? v->rel : "";
    switch (v->rule) {
    case TOOL_RULE_APPROVAL: {
        /* needsApproval: upstream holds the call until a person approves it; corral asks through
         * an MCP host that can elicit, and otherwise refuses the call, saying how to allow it. */
        char text[512];
        snprintf(text, sizeof(text), "Error: %s.", v->message);
        return voltagent_error_text(VOLTAGENT_E_APPROVAL, text);
    }
    case TOOL_RULE_READ_FIRST:
        return fail_text(&is_error, VOLTAGENT_E_READ_FIRST,
                         "Error: Please read '%s' with read_file before modifying it.", p);
    case TOOL_RULE_STALE:
        return fail_text(
            &is_error, VOLTAGENT_E_STALE,
            "Error: '%s' has changed since it was last read. Read it again before modifying.", p);
    default:
        return fail_text(&is_error, broker_kind_name(BROKER_E_DENIED), "Error: %s: %s", tool,
                         v->message ? v->message : "refused");
    }
}

static const char *volt_denial(const cJSON *result)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(result, "code");
    if (!cJSON_IsString(c))
        return NULL;
    static const struct {
        const char *code, *rule;
    } rules[] = {
        {"denied", "workspace containment"},
        {VOLTAGENT_E_TRAVERSAL, "workspace paths: no '..' or '~'"},
        {VOLTAGENT_E_READ_ONLY, "read-only workspace"},
        {VOLTAGENT_E_READ_FIRST, "read before write"},
        {VOLTAGENT_E_STALE, "read before write (changed since read)"},
        {VOLTAGENT_E_APPROVAL, "needs approval"},
        {VOLTAGENT_E_COMMANDS, "commands not allowed for the role"},
        {VOLTAGENT_E_SKILL_FILE, "skill files: only those its SKILL.md lists"},
        {VOLTAGENT_E_SYMLINK, "no symlinks"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(rules); i++)
        if (!strcmp(c->valuestring, rules[i].code))
            return rules[i].rule;
    return NULL;
}

/* The gate's and the policy's table (tools/gate.h): the filesystem, search, sandbox and skills
 * toolkits. requireReadBeforeWrite is on by default for edit_file and delete_file (upstream's
 * default runtime). */
static const struct tool_def defs[] = {
    {"ls", TOOL_KIND_READ, false},
    {"read_file", TOOL_KIND_READ, false},
    {"write_file", TOOL_KIND_WRITE, false},
    {"edit_file", TOOL_KIND_WRITE, true},
    {"delete_file", TOOL_KIND_WRITE, true},
    {"stat", TOOL_KIND_READ, false},
    {"mkdir", TOOL_KIND_WRITE, false},
    {"rmdir", TOOL_KIND_WRITE, false},
    {"list_tree", TOOL_KIND_READ, false},
    {"list_files", TOOL_KIND_READ, false},
    {"glob", TOOL_KIND_READ, false},
    {"grep", TOOL_KIND_READ, false},
    {"workspace_index", TOOL_KIND_READ, false},
    {"workspace_index_content", TOOL_KIND_READ, false},
    {"workspace_search", TOOL_KIND_READ, false},
    {"execute_command", TOOL_KIND_COMMAND, false},
    {"workspace_list_skills", TOOL_KIND_READ, false},
    {"workspace_search_skills", TOOL_KIND_READ, false},
    {"workspace_read_skill", TOOL_KIND_READ, false},
    {"workspace_activate_skill", TOOL_KIND_READ, false},
    {"workspace_deactivate_skill", TOOL_KIND_READ, false},
    {"workspace_read_skill_reference", TOOL_KIND_READ, false},
    {"workspace_read_skill_script", TOOL_KIND_READ, false},
    {"workspace_read_skill_asset", TOOL_KIND_READ, false},
};

const struct tool_surface voltagent_surface = {
    .name = "voltagent",
    .defs = defs,
    .n_defs = ARRAY_SIZE(defs),
    .list = volt_list,
    .run = volt_run,
    .target = volt_target,
    .refuse = volt_refuse,
    .denial = volt_denial,
};
