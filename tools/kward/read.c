/* tools/kward/read.c: Kward's reading tools: list_directory, read_file and
 * summarize_file_structure (docs/protocol-kward.md). */
#include "tools/broker/broker.h"
#include "tools/kward/internal.h"
#include "tools/kward/kward.h"
#include "tools/session.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- list_directory ------------------------------------------------------------------------- */

enum { LIST_PATH };
const struct tool_param kward_list_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Workspace-relative directory.", NULL, 0, 0},
};

cJSON *kward_list_directory(struct call *c)
{
    const char *path = kward_arg_str(c, LIST_PATH, ".");
    _cleanup_free_ char *shown = kward_shown_path(c, path);
    if (!shown)
        return NULL;
    struct broker_walk_opts o = {.max_depth = 1, .max_entries = c->ctx->limits.max_explore_entries};
    struct broker_list l;
    if (broker_explore(c->ctx, path, &o, &l, &c->e) < 0) {
        if (c->e.kind == BROKER_E_NOT_DIR)
            return kward_fail(c, "not_a_directory", BROKER_E_NOT_DIR, "path", "not a directory: %s",
                              shown);
        return NULL;
    }
    struct sbuf out = {0};
    kward_sb_put(&out, "", 0);
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
                kward_sb_put(&out, "\n", 1);
            kward_sb_str(&out, e);
        }
        free(e);
    }
    if (l.truncated)
        kward_sb_printf(&out, "%s[%ju more entries not shown]", l.n ? "\n" : "",
                        (uintmax_t)(l.total - l.n));
    bool trunc = l.truncated;
    broker_list_clear(&l);
    cJSON *res = entries && !out.oom ? kward_result_new(c, out.s) : NULL;
    free(out.s);
    if (!res || !cJSON_AddStringToObject(res, "path", shown) ||
        !cJSON_AddItemToObject(res, "entries", entries) ||
        !cJSON_AddBoolToObject(res, "truncated", trunc)) {
        if (!res)
            cJSON_Delete(entries);
        cJSON_Delete(res);
        return kward_oom(c);
    }
    return res;
}

/* ---- read_file ------------------------------------------------------------------------------ */

enum { READ_PATH, READ_OFFSET, READ_LIMIT, READ_MODE, READ_MAX_BYTES };
static const char *const read_modes[] = {"preview", "outline", "range", "full", NULL};
const struct tool_param kward_read_params[] = {
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
char *kward_structure_text(struct call *c, const char *shown, const char *text, size_t len,
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
        kward_oom(c);
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
    if (first < want_end && kward_line_bytes(l, first) > max_bytes) {
        kward_fail(
            c, "invalid_argument", BROKER_E_TOO_LARGE, "max_bytes",
            "first line is %zu bytes, exceeds %zu byte read limit. Use run_shell_command with sed/head "
            "to inspect smaller chunks.",
            kward_line_bytes(l, first), max_bytes);
        return -1;
    }
    size_t bytes = 0;
    for (size_t i = first; i < want_end; i++) {
        if (i - first >= KWARD_READ_OUTPUT_LINES) {
            s->by = "lines";
            break;
        }
        if (bytes + kward_line_bytes(l, i) > max_bytes) {
            s->by = "bytes";
            break;
        }
        bytes += kward_line_bytes(l, i);
        s->end = i + 1;
    }
    s->truncated = s->by != NULL;
    return 0;
}

static void put_slice(struct sbuf *out, const struct lines *l, const struct slice *s)
{
    if (s->end > s->first)
        kward_sb_put(out, l->s + l->start[s->first], l->start[s->end] - l->start[s->first]);
}

/* Separates a notice from content: the notice starts after one blank line. */
static void notice_gap(struct sbuf *out)
{
    if (out->len && out->s[out->len - 1] != '\n')
        kward_sb_put(out, "\n", 1);
    if (out->len)
        kward_sb_put(out, "\n", 1);
}

cJSON *kward_read_file(struct call *c)
{
    const char *path = kward_arg_str(c, READ_PATH, "");
    _cleanup_free_ char *shown = kward_shown_path(c, path);
    if (!shown)
        return NULL;
    long long offset = 0, limit = 0, max_bytes = 0;
    bool has_offset = kward_arg_int(c, READ_OFFSET, &offset);
    bool has_limit = kward_arg_int(c, READ_LIMIT, &limit);
    bool has_max = kward_arg_int(c, READ_MAX_BYTES, &max_bytes);
    const char *mode = kward_arg_str(c, READ_MODE, NULL);
    if (has_offset && offset < 1)
        return kward_fail(c, NULL, BROKER_E_INVALID, "offset",
                          "offset must be a positive integer (lines are 1-indexed)");
    if (has_limit && limit < 1)
        return kward_fail(c, NULL, BROKER_E_INVALID, "limit", "limit must be positive");
    if (has_max && max_bytes < 1)
        return kward_fail(c, NULL, BROKER_E_INVALID, "max_bytes", "max_bytes must be positive");
    size_t budget = KWARD_READ_OUTPUT_BYTES;
    if (has_max && (unsigned long long)max_bytes < budget)
        budget = (size_t)max_bytes;

    struct broker_read_result r;
    if (kward_load_text(c, path, shown, &r) < 0)
        return NULL;
    struct lines l = {0};
    struct kward_outline ol = {0};
    struct sbuf out = {0};
    cJSON *res = NULL;
    const char *shown_mode = mode ? mode : "default";
    struct slice s = {0};
    char *rel = NULL;
    if (kward_lines_split(&l, r.content, r.len) < 0) {
        kward_oom(c);
        goto done;
    }
    kward_sb_put(&out, "", 0);
    size_t first = has_offset ? (size_t)offset - 1 : 0;
    if (mode && !strcmp(mode, "outline")) {
        bool has;
        _cleanup_free_ char *t = kward_structure_text(c, shown, r.content, r.len, l.n, &ol, &has);
        if (!t)
            goto done;
        kward_sb_str(&out, t);
    } else {
        if (has_offset && first >= l.n && !(first == 0 && l.n == 0)) {
            kward_fail(c, NULL, BROKER_E_INVALID, "offset",
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
                    kward_oom(c);
                goto done;
            }
            shown_mode = "large_file_outline";
            kward_sb_printf(
                &out,
                "File has %zu lines (%zu bytes). Showing an outline and the first %zu lines to "
                "reduce model context.\n\nOutline:\n",
                l.n, r.len, s.end);
            kward_sb_str(&out, body);
            kward_sb_printf(&out, "\n\nFirst %zu lines:\n", s.end);
            put_slice(&out, &l, &s);
            notice_gap(&out);
            kward_sb_printf(
                &out,
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
                    kward_sb_printf(
                        &out,
                        "[Showing lines %zu-%zu of %zu (%u line limit). Use offset=%zu to continue.]",
                        s.first + 1, s.end, l.n, KWARD_READ_OUTPUT_LINES, s.end + 1);
                else
                    kward_sb_printf(
                        &out,
                        "[Showing lines %zu-%zu of %zu (%zu byte limit). Use offset=%zu to continue.]",
                        s.first + 1, s.end, l.n, budget, s.end + 1);
            } else if (user_limit && want < l.n) {
                notice_gap(&out);
                kward_sb_printf(&out, "[%zu more lines in file. Use offset=%zu to continue.]",
                                l.n - want, want + 1);
                s.truncated = true;
            }
        }
    }
    if (out.oom) {
        kward_oom(c);
        goto done;
    }
    /* A successful read marks the file read for the session: later writes may change it. */
    if (broker_path_clean(path, "path", &rel, &c->e) == 0)
        tool_session_note_read(c->ctx->session, c->ctx, rel);
    c->raw_bytes = r.len;
    c->raw_set = true;
    res = kward_result_new(c, out.s);
    if (res && (!cJSON_AddStringToObject(res, "path", shown) ||
                !cJSON_AddStringToObject(res, "mode", shown_mode) ||
                !cJSON_AddNumberToObject(res, "total_lines", (double)l.n) ||
                !cJSON_AddNumberToObject(res, "start_line", s.end > s.first ? (double)s.first + 1 : 0) ||
                !cJSON_AddNumberToObject(res, "end_line", (double)s.end) ||
                !cJSON_AddBoolToObject(res, "truncated", s.truncated))) {
        cJSON_Delete(res);
        res = kward_oom(c);
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

const struct tool_param kward_summarize_params[] = {
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

cJSON *kward_summarize_file_structure(struct call *c)
{
    const char *path = kward_arg_str(c, 0, "");
    _cleanup_free_ char *shown = kward_shown_path(c, path);
    if (!shown)
        return NULL;
    struct broker_read_result r;
    if (kward_load_text(c, path, shown, &r) < 0)
        return NULL;
    struct lines l = {0};
    struct kward_outline ol = {0};
    cJSON *res = NULL;
    bool has;
    char *text = kward_lines_split(&l, r.content, r.len) == 0
                     ? kward_structure_text(c, shown, r.content, r.len, l.n, &ol, &has)
                     : (kward_oom(c), (char *)NULL);
    const char *lang = kward_language(shown);
    if (!text) {
        res = NULL;
    } else if (!(res = kward_result_new(c, text)) || !cJSON_AddStringToObject(res, "path", shown) ||
               !(lang ? cJSON_AddStringToObject(res, "language", lang)
                      : cJSON_AddNullToObject(res, "language")) ||
               !cJSON_AddItemToObject(res, "entries", outline_entries(&ol)) ||
               !cJSON_AddBoolToObject(res, "truncated", ol.total > ol.n)) {
        cJSON_Delete(res);
        res = kward_oom(c);
    }
    c->raw_bytes = r.len;
    c->raw_set = true;
    free(text);
    free(l.start);
    kward_outline_clear(&ol);
    broker_read_result_clear(&r);
    return res;
}
