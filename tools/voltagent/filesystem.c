/* tools/voltagent/filesystem.c: the filesystem toolkit's tools (seed 003): ls, stat, read_file,
 * write_file, edit_file, delete_file, mkdir, rmdir, list_tree / list_files, glob and grep over the
 * broker, with the rules the write tools share (docs/protocol-voltagent.md). */
#include "tools/broker/broker.h"
#include "tools/voltagent/internal.h"
#include "tools/voltagent/voltagent.h"
#include "tools/broker/glob.h"
#include "tools/session.h"

#include <errno.h>
#include <fcntl.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

const struct link_text voltagent_symlink_text = {"Error: Symlinks are not allowed: ", ""};

/* Upstream refuses a path whose last component is a symlink (lstat, then "Symlinks are not
 * allowed"). One leading out of the workspace is the broker's to refuse (a containment denial,
 * recorded as such); one that stays inside gets upstream's message, in TEXT (two parts around
 * the path). NULL to go on. */

cJSON *voltagent_no_symlink(struct tool_ctx *ctx, const char *path, const char *field,
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
        return voltagent_fail_broker(&e, is_error);
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
        return voltagent_fail_path(err, is_error);
    if (ctx->read_only)
        return voltagent_fail_text(is_error, VOLTAGENT_E_READ_ONLY, "%s", READ_ONLY_TEXT);
    return voltagent_no_symlink(ctx, path, field, symlink_text, is_error);
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

const struct tool_param voltagent_ls_params[] = {
    {"path", TOOL_PARAM_STRING, false, "Directory path to list (default: /)", NULL, 0, 0},
};

/* A directory's path as upstream shows it: with a trailing '/'. */
static void text_entry_path(struct text *t, const struct broker_meta *m)
{
    voltagent_text_str(t, m->path);
    if (m->is_dir && strcmp(m->path, "/"))
        voltagent_text_str(t, "/");
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

cJSON *voltagent_ls(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                    bool *is_error)
{
    (void)t;
    const char *path = voltagent_arg_str(a, 0, "/");
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0)
        return voltagent_fail_path(err, is_error);
    struct broker_walk_opts o = {
        .recursive = false, .want_meta = true, .max_entries = ctx->limits.max_explore_entries};
    struct broker_list l;
    struct broker_err e = {0};
    if (broker_explore(ctx, path, &o, &l, &e) < 0)
        return voltagent_fail_broker(&e, is_error);
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
            voltagent_text_str(&out, "\n");
        text_entry_path(&out, m);
        if (m->is_dir)
            voltagent_text_str(&out, " (directory)");
        else if (m->size)
            voltagent_text_printf(&out, " (%ju bytes)", (uintmax_t)m->size);
        if (!cJSON_AddItemToArray(entries, info_json(m)))
            out.failed = true;
    }
    if (!shown)
        voltagent_text_str(&out, "No files found");
    if (l.truncated) {
        voltagent_text_str(&out, "\n");
        voltagent_text_str(&out, voltagent_truncation_guidance);
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

const struct tool_param voltagent_stat_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Absolute path to the file or directory", NULL, 0, 0},
};

cJSON *voltagent_stat(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error)
{
    (void)t;
    const char *path = voltagent_arg_str(a, 0, "/");
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0)
        return voltagent_fail_path(err, is_error);
    struct broker_meta m;
    struct broker_err e = {0};
    struct text out = {0};
    if (broker_info(ctx, path, "path", &m, &e) < 0) {
        if (e.kind != BROKER_E_NOT_FOUND && e.kind != BROKER_E_NOT_DIR)
            return voltagent_fail_broker(&e, is_error);
        /* Upstream answers a missing path with a sentence, not an error. */
        voltagent_text_printf(&out, "No file or directory found at '%s'", path);
        cJSON *res = voltagent_output_result(&out);
        free(out.s);
        if (res && !cJSON_AddBoolToObject(res, "exists", false)) {
            cJSON_Delete(res);
            res = NULL;
        }
        return res;
    }
    char iso[32];
    broker_iso_time(&m.mtime, iso);
    voltagent_text_str(&out, "path: ");
    text_entry_path(&out, &m);
    voltagent_text_printf(&out, "\ntype: %s", m.is_dir ? "directory" : "file");
    if (!m.is_dir)
        voltagent_text_printf(&out, "\nsize: %ju bytes", (uintmax_t)m.size);
    voltagent_text_printf(&out, "\nmodified_at: %s", iso);
    cJSON *res = voltagent_output_result(&out);
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

const struct tool_param voltagent_read_params[] = {
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
            voltagent_text_str(out, "\n");
        if (chunk == 0) {
            voltagent_text_printf(out, "%6ju\t", (uintmax_t)n);
        } else {
            char mark[48];
            snprintf(mark, sizeof(mark), "%ju.%zu", (uintmax_t)n, chunk);
            voltagent_text_printf(out, "%6s\t", mark);
        }
        voltagent_text_add(out, s, take);
        s += take;
        len -= take;
        chunk++;
    } while (len);
}

cJSON *voltagent_read_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                           bool *is_error)
{
    (void)t;
    const char *path = voltagent_arg_str(a, 0, "");
    cJSON *err;
    if (voltagent_path_check(path, "file_path", &err) < 0)
        return voltagent_fail_path(err, is_error);
    uint64_t offset = voltagent_arg_u64(a, 1, 0), limit = voltagent_arg_u64(a, 2, 2000);
    cJSON *link = voltagent_no_symlink(ctx, path, "file_path", &voltagent_symlink_text, is_error);
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
            return voltagent_fail_text(is_error, broker_kind_name(e.kind), "Error: File '%s' not found",
                                       path);
        if (e.kind == BROKER_E_INVALID && !strcmp(e.field, "startLine")) {
            struct broker_read_opts first = {.start_line = 1, .end_line = 1};
            uint64_t total = 0;
            if (broker_read(ctx, path, &first, &r, &e) == 0) {
                total = r.total_lines;
                broker_read_result_clear(&r);
            }
            return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                                       "Error: Line offset %ju exceeds file length (%ju lines)",
                                       (uintmax_t)offset, (uintmax_t)total);
        }
        return voltagent_fail_broker(&e, is_error);
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
        voltagent_text_str(&out, "");
    } else if (blank) {
        voltagent_text_str(&out, "System reminder: File exists but has empty contents");
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
            voltagent_text_str(&out, "\n");
            voltagent_text_str(&out, voltagent_truncation_guidance);
        }
    }
    cJSON *res = voltagent_output_result(&out);
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

const struct tool_param voltagent_write_params[] = {
    {"file_path", TOOL_PARAM_STRING, true, "Absolute path to the file to write", NULL, 0, 0},
    {"content", TOOL_PARAM_STRING, true, "Content to write to the file", NULL, 0, 0},
    {"overwrite", TOOL_PARAM_BOOL, false, "Whether to overwrite the file if it already exists", NULL, 0,
     0},
    {"create_parent_dirs", TOOL_PARAM_BOOL, false, "Whether to create parent directories if needed",
     NULL, 0, 0},
};

cJSON *voltagent_write_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                            bool *is_error)
{
    const char *path = voltagent_arg_str(a, 0, ""), *content = voltagent_arg_str(a, 1, "");
    cJSON *guard = write_guard(
        ctx, t, path, "file_path",
        &(struct link_text){"Cannot write to ", " because it is a symlink. Symlinks are not allowed."},
        is_error);
    if (guard || *is_error)
        return guard;
    struct broker_write_opts o = {
        .mode = voltagent_arg_bool(a, 2, false) ? BROKER_WRITE_OVERWRITE : BROKER_WRITE_CREATE,
        .create_dirs = voltagent_arg_bool(a, 3, true),
    };
    struct broker_err e = {0};
    size_t written = 0;
    if (broker_write(ctx, path, content, strlen(content), &o, NULL, &written, &e) < 0) {
        if (e.kind == BROKER_E_EXISTS)
            return voltagent_fail_text(
                is_error, broker_kind_name(e.kind),
                "Cannot write to %s because it already exists. Read and then make an edit, "
                "or write to a new path.",
                path);
        if (e.kind == BROKER_E_IS_DIR || e.kind == BROKER_E_NOT_REGULAR)
            return voltagent_fail_text(is_error, broker_kind_name(e.kind),
                                       "Cannot write to %s because it is not a file.", path);
        return voltagent_fail_broker(&e, is_error);
    }
    note(ctx, path, false);
    struct text out = {0};
    voltagent_text_printf(&out, "Successfully wrote to '%s'", path);
    cJSON *res = voltagent_output_result(&out);
    free(out.s);
    if (res && !cJSON_AddNumberToObject(res, "bytes_written", (double)written)) {
        cJSON_Delete(res);
        res = NULL;
    }
    return res;
}

const struct tool_param voltagent_edit_params[] = {
    {"file_path", TOOL_PARAM_STRING, true, "Absolute path to the file to edit", NULL, 0, 0},
    {"old_string", TOOL_PARAM_STRING, true, "String to be replaced (must match exactly)", NULL, 0, 0},
    {"new_string", TOOL_PARAM_STRING, true, "String to replace with", NULL, 0, 0},
    {"replace_all", TOOL_PARAM_BOOL, false, "Whether to replace all occurrences", NULL, 0, 0},
};

/* Upstream's performStringReplacement: occurrences counted left to right without overlap
 * (String.split), unique unless replace_all, then split/join. The new content is written
 * atomically by broker_write (mode, owner kept). */
cJSON *voltagent_edit_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                           bool *is_error)
{
    const char *path = voltagent_arg_str(a, 0, ""), *old = voltagent_arg_str(a, 1, ""),
               *new = voltagent_arg_str(a, 2, "");
    bool all = voltagent_arg_bool(a, 3, false);
    cJSON *guard = write_guard(ctx, t, path, "file_path", &voltagent_symlink_text, is_error);
    if (guard || *is_error)
        return guard;
    if (!*old)
        return voltagent_fail_text(
            is_error, broker_kind_name(BROKER_E_INVALID),
            "Error: old_string must not be empty; to write a whole file use write_file");
    struct broker_err e = {0};
    struct broker_read_result r;
    if (broker_read(ctx, path, NULL, &r, &e) < 0) {
        if (e.kind == BROKER_E_NOT_FOUND || e.kind == BROKER_E_IS_DIR || e.kind == BROKER_E_NOT_REGULAR)
            return voltagent_fail_text(is_error, broker_kind_name(e.kind), "Error: File '%s' not found",
                                       path);
        return voltagent_fail_broker(&e, is_error);
    }
    if (r.truncated) {
        broker_read_result_clear(&r);
        return voltagent_fail_text(
            is_error, broker_kind_name(BROKER_E_TOO_LARGE),
            "Error: '%s' is larger than the workspace's file size limit (%ju bytes) and "
            "cannot be edited",
            path, (uintmax_t)ctx->limits.max_file_size);
    }
    size_t olen = strlen(old), nlen = strlen(new), count = 0;
    for (const char *p = r.content; (p = memmem(p, r.len - (size_t)(p - r.content), old, olen));
         p += olen)
        count++;
    char shown[512];
    voltagent_echo(shown, sizeof(shown), old);
    if (count == 0) {
        broker_read_result_clear(&r);
        return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_NO_MATCH),
                                   "Error: String not found in file: '%s'", shown);
    }
    if (count > 1 && !all) {
        broker_read_result_clear(&r);
        return voltagent_fail_text(
            is_error, broker_kind_name(BROKER_E_NOT_UNIQUE),
            "Error: String '%s' appears %zu times in file. Use replace_all=true to replace "
            "all instances, or provide a more specific string with surrounding context.",
            shown, count);
    }
    struct text body = {0};
    const char *p = r.content;
    for (size_t i = 0; i < count; i++) {
        const char *hit = memmem(p, r.len - (size_t)(p - r.content), old, olen);
        voltagent_text_add(&body, p, (size_t)(hit - p));
        voltagent_text_add(&body, new, nlen);
        p = hit + olen;
    }
    voltagent_text_add(&body, p, r.len - (size_t)(p - r.content));
    broker_read_result_clear(&r);
    if (body.failed) {
        free(body.s);
        return NULL;
    }
    struct broker_write_opts o = {.mode = BROKER_WRITE_OVERWRITE};
    int w = broker_write(ctx, path, body.s ? body.s : "", body.len, &o, NULL, NULL, &e);
    free(body.s);
    if (w < 0)
        return voltagent_fail_broker(&e, is_error);
    note(ctx, path, false);
    struct text out = {0};
    voltagent_text_printf(&out, "Successfully replaced %zu occurrence(s) in '%s'", count, path);
    cJSON *res = voltagent_output_result(&out);
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

const struct tool_param voltagent_delete_params[] = {
    {"file_path", TOOL_PARAM_STRING, true, "Absolute path to the file to delete", NULL, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false, "Whether to delete directories recursively", NULL, 0, 0},
};

cJSON *voltagent_delete_file(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                             bool *is_error)
{
    const char *path = voltagent_arg_str(a, 0, "");
    cJSON *guard = write_guard(ctx, t, path, "file_path", &voltagent_symlink_text, is_error);
    if (guard || *is_error)
        return guard;
    struct broker_err e = {0};
    struct broker_meta m;
    if (broker_info(ctx, path, "file_path", &m, &e) == 0 && m.is_dir && !m.is_symlink) {
        broker_meta_clear(&m);
        if (!voltagent_arg_bool(a, 1, false))
            return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_IS_DIR),
                                       "Error: '%s' is a directory", path);
        if (remove_tree(ctx, path, &e) < 0)
            return voltagent_fail_broker(&e, is_error);
    } else {
        broker_meta_clear(&m);
        if (broker_remove(ctx, path, false, &e) < 0) {
            if (e.kind == BROKER_E_NOT_FOUND)
                return voltagent_fail_text(is_error, broker_kind_name(e.kind),
                                           "Error: File '%s' not found", path);
            return voltagent_fail_broker(&e, is_error);
        }
    }
    note(ctx, path, true);
    struct text out = {0};
    voltagent_text_printf(&out, "Successfully deleted '%s'", path);
    cJSON *res = voltagent_output_result(&out);
    free(out.s);
    return res;
}

const struct tool_param voltagent_mkdir_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Absolute path to the directory to create", NULL, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false,
     "Whether to create parent directories if needed (default: true)", NULL, 0, 0},
};

cJSON *voltagent_mkdir(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                       bool *is_error)
{
    const char *path = voltagent_arg_str(a, 0, "");
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
        return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_EXISTS),
                                   "Cannot create directory '%s' because a file exists at that path.",
                                   path);
    }
    if (!exists && broker_mkdir(ctx, path, voltagent_arg_bool(a, 1, true), &e) < 0)
        return voltagent_fail_broker(&e, is_error);
    if (!exists && broker_info(ctx, path, "path", &m, &e) < 0)
        return voltagent_fail_broker(&e, is_error);
    struct text out = {0};
    voltagent_text_str(&out, "Successfully created directory '");
    text_entry_path(&out, &m);
    voltagent_text_str(&out, "'");
    broker_meta_clear(&m);
    cJSON *res = voltagent_output_result(&out);
    free(out.s);
    return res;
}

const struct tool_param voltagent_rmdir_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Absolute path to the directory to remove", NULL, 0, 0},
    {"recursive", TOOL_PARAM_BOOL, false, "Whether to remove contents recursively", NULL, 0, 0},
};

cJSON *voltagent_rmdir(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                       bool *is_error)
{
    const char *path = voltagent_arg_str(a, 0, "");
    cJSON *guard = write_guard(ctx, t, path, "path", &voltagent_symlink_text, is_error);
    if (guard || *is_error)
        return guard;
    struct broker_err e = {0};
    struct broker_meta m;
    if (broker_info(ctx, path, "path", &m, &e) < 0) {
        if (e.kind == BROKER_E_NOT_FOUND || e.kind == BROKER_E_NOT_DIR)
            return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_NOT_FOUND),
                                       "Error: Directory '%s' not found", path);
        return voltagent_fail_broker(&e, is_error);
    }
    bool dir = m.is_dir;
    broker_meta_clear(&m);
    if (!dir)
        return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_NOT_DIR),
                                   "Error: Directory '%s' not found", path);
    if ((voltagent_arg_bool(a, 1, false) ? remove_tree(ctx, path, &e)
                                         : broker_remove(ctx, path, true, &e)) < 0)
        return voltagent_fail_broker(&e, is_error);
    struct text out = {0};
    voltagent_text_printf(&out, "Successfully removed directory '%s'", path);
    cJSON *res = voltagent_output_result(&out);
    free(out.s);
    return res;
}

/* ---- list_tree / list_files ----------------------------------------------------------------- */

const struct tool_param voltagent_tree_params[] = {
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
            voltagent_text_str(out, "\n");
            for (size_t k = 0; k < d; k++)
                voltagent_text_str(out, "  ");
            voltagent_text_printf(out, "- %s%s", name, l->v[i].is_dir ? "/" : "");
            if (l->v[i].is_dir)
                tree_level(out, l, depth, i + 1, end, d + 1);
        }
}

cJSON *voltagent_list_tree(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                           bool *is_error)
{
    (void)t;
    const char *path = voltagent_arg_str(a, 0, "/");
    uint64_t max_depth = voltagent_arg_u64(a, 1, 3);
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0)
        return voltagent_fail_path(err, is_error);
    struct broker_err e = {0};
    struct broker_meta m;
    if (broker_info(ctx, path, "path", &m, &e) < 0)
        return voltagent_fail_broker(&e, is_error);
    struct text out = {0};
    if (!m.is_dir) { /* upstream: a file's tree is its path */
        voltagent_text_str(&out, m.path);
        broker_meta_clear(&m);
        cJSON *res = voltagent_output_result(&out);
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
        return voltagent_fail_broker(&e, is_error);
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
        voltagent_text_str(&out, "\n  (empty)");
    else
        tree_level(&out, &l, depth, 0, l.n, 1);
    bool cut = l.truncated;
    if (cut) {
        voltagent_text_str(&out, "\n");
        voltagent_text_str(&out, voltagent_truncation_guidance);
    }
    cut |= voltagent_text_cap(&out);
    free(depth);
    broker_list_clear(&l);
    cJSON *res = voltagent_output_result(&out);
    free(out.s);
    if (res && !cJSON_AddBoolToObject(res, "truncated", cut)) {
        cJSON_Delete(res);
        res = NULL;
    }
    return res;
}

/* ---- glob, grep ----------------------------------------------------------------------------- */

const struct tool_param voltagent_glob_params[] = {
    {"pattern", TOOL_PARAM_STRING, true, "Glob pattern (e.g., '*.ts', '**/*.ts')", NULL, 0, 0},
    {"path", TOOL_PARAM_STRING, false, "Base path to search from (default: /)", NULL, 0, 0},
};

/* Upstream: fast-glob beneath PATH, files only, dot files included, symlinks not followed,
 * sorted by path. Here: the broker's walk, matched with tools/broker/glob.c. */
#define MAX_GLOB_WALK 100000
cJSON *voltagent_glob(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error)
{
    (void)t;
    const char *pattern = voltagent_arg_str(a, 0, ""), *path = voltagent_arg_str(a, 1, "/");
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0 || pattern_check(pattern, "pattern", &err) < 0)
        return voltagent_fail_path(err, is_error);
    while (*pattern == '/')
        pattern++;
    struct glob *g = NULL;
    if (!*pattern || glob_new(pattern, &g) < 0)
        return voltagent_fail_text(is_error, broker_kind_name(BROKER_E_PATTERN),
                                   "Error: '%.200s' is not a valid glob pattern",
                                   voltagent_arg_str(a, 0, ""));
    struct broker_err e = {0};
    struct broker_list l;
    struct broker_walk_opts o = {.recursive = true, .max_depth = 4096, .max_entries = MAX_GLOB_WALK};
    if (broker_explore(ctx, path, &o, &l, &e) < 0) {
        glob_free(g);
        return voltagent_fail_broker(&e, is_error);
    }
    _cleanup_free_ char *base = NULL;
    if (broker_path_clean(path, "path", &base, &e) < 0) {
        glob_free(g);
        broker_list_clear(&l);
        return voltagent_fail_broker(&e, is_error);
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
            voltagent_text_str(&out, "\n");
        voltagent_text_str(&out, m->path);
        cJSON_AddItemToArray(files, cJSON_CreateString(m->path));
    }
    glob_free(g);
    broker_list_clear(&l);
    if (!found)
        voltagent_text_printf(&out, "No files found matching pattern '%s'", voltagent_arg_str(a, 0, ""));
    if (cut) {
        voltagent_text_str(&out, "\n");
        voltagent_text_str(&out, voltagent_truncation_guidance);
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

const struct tool_param voltagent_grep_params[] = {
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
cJSON *voltagent_grep(struct tool_ctx *ctx, const struct volt_tool *t, const struct args *a,
                      bool *is_error)
{
    (void)t;
    const char *pattern = voltagent_arg_str(a, 0, ""), *path = voltagent_arg_str(a, 1, "/"),
               *glob = voltagent_arg_str(a, 2, NULL);
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0 || (glob && pattern_check(glob, "glob", &err) < 0))
        return voltagent_fail_path(err, is_error);
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
            return voltagent_fail_text(is_error, broker_kind_name(e.kind), "Invalid regex pattern: %s",
                                       e.msg);
        return voltagent_fail_broker(&e, is_error);
    }
    if (r.n > 1)
        qsort(r.v, r.n, sizeof(*r.v), cmp_match);
    struct text out = {0};
    cJSON *res = cJSON_CreateObject(), *matches = cJSON_CreateArray();
    for (size_t i = 0; i < r.n; i++) {
        if (i == 0 || strcmp(r.v[i].path, r.v[i - 1].path))
            voltagent_text_printf(&out, "%s%s:", i ? "\n" : "", r.v[i].path);
        voltagent_text_printf(&out, "\n  %ju: ", (uintmax_t)r.v[i].line);
        voltagent_text_str(&out, r.v[i].text);
        cJSON *m = cJSON_CreateObject();
        if (!cJSON_AddItemToArray(matches, m) || !cJSON_AddStringToObject(m, "path", r.v[i].path) ||
            !cJSON_AddNumberToObject(m, "line", (double)r.v[i].line) ||
            !cJSON_AddStringToObject(m, "text", r.v[i].text))
            out.failed = true;
    }
    if (!r.n)
        voltagent_text_printf(&out, "No matches found for pattern '%s'", pattern);
    bool cut = r.truncated;
    if (cut) {
        voltagent_text_str(&out, "\n");
        voltagent_text_str(&out, voltagent_truncation_guidance);
    }
    cut |= voltagent_text_cap(&out);
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
