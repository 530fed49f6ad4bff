/* tools/kward/edit.c: write_file and edit_file, each answer with a unified diff
 * (docs/protocol-kward.md). */
#include "tools/broker/broker.h"
#include "tools/kward/internal.h"
#include "tools/kward/kward.h"
#include "tools/session.h"

#include <stdio.h>
#include <string.h>

/* ---- write_file, edit_file ------------------------------------------------------------------ */

/* The rule every change passes before the broker sees it: read-only. (Read-first, the seed's
 * guardrail, on unless the policy turns it off for the tool, is the gate's: kward_target and
 * kward_refuse, tools/gate.h.) */
static int change_allowed(struct call *c)
{
    if (c->ctx->read_only) {
        kward_fail(c, "read_only", BROKER_E_DENIED, "path",
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
    kward_sb_str(&out, head);
    free(head);
    bool cut = false;
    size_t raw = out.len;
    if (diff) {
        char *capped = kward_diff_cap(diff, dl, KWARD_DIFF_BYTES, &st, &cut);
        raw += 1 + dl;
        if (capped) {
            kward_sb_str(&out, "\n");
            kward_sb_str(&out, capped);
        }
        free(capped);
        free(diff);
        if (!capped) {
            free(out.s);
            return kward_oom(c);
        }
    } else if (!old_known) {
        kward_sb_str(&out, "\n(no diff: the previous content was not text or over the read limit)");
    }
    c->raw_bytes = raw;
    c->raw_set = true;
    cJSON *res = out.oom ? NULL : kward_result_new(c, out.s);
    free(out.s);
    if (!res || !cJSON_AddStringToObject(res, "path", shown) ||
        !cJSON_AddNumberToObject(res, "bytes_written", (double)len) ||
        !cJSON_AddNumberToObject(res, "additions", (double)st.additions) ||
        !cJSON_AddNumberToObject(res, "deletions", (double)st.deletions) ||
        !cJSON_AddBoolToObject(res, "diff_truncated", cut)) {
        cJSON_Delete(res);
        return kward_oom(c);
    }
    return res;
}

const struct tool_param kward_write_params[] = {
    {"path", TOOL_PARAM_STRING, true, "Workspace-relative file path.", NULL, 0, 0},
    {"content", TOOL_PARAM_STRING, true, "Complete file content.", NULL, 0, 0},
};

cJSON *kward_write_file(struct call *c)
{
    const char *path = kward_arg_str(c, WRITE_PATH, "");
    const char *content = kward_arg_str(c, WRITE_CONTENT, "");
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, "path", &rel, &c->e) < 0)
        return NULL;
    _cleanup_free_ char *shown = kward_shown_path(c, path);
    if (!shown)
        return NULL;
    if (!*rel)
        return kward_fail(c, "not_a_file", BROKER_E_IS_DIR, "path", "not a file: %s", shown);
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
    struct broker_read_opts o = {.max_bytes = kward_cap_file(c->ctx)};
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
                      : kward_oom(c);
    broker_read_result_clear(&old);
    return res;
}

const struct tool_param kward_edit_params[] = {
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

cJSON *kward_edit_file(struct call *c)
{
    const char *path = kward_arg_str(c, EDIT_PATH, "");
    _cleanup_free_ char *rel = NULL;
    if (broker_path_clean(path, "path", &rel, &c->e) < 0)
        return NULL;
    _cleanup_free_ char *shown = kward_shown_path(c, path);
    if (!shown)
        return NULL;
    struct broker_meta m;
    if (broker_info(c->ctx, path, "path", &m, &c->e) < 0)
        return NULL;
    bool dir = m.is_dir;
    broker_meta_clear(&m);
    if (dir)
        return kward_fail(c, "not_a_file", BROKER_E_IS_DIR, "path", "not a file: %s", shown);
    if (change_allowed(c) < 0)
        return NULL;
    struct broker_read_result r;
    if (kward_load_text(c, path, shown, &r) < 0)
        return NULL;
    const cJSON *edits = c->v[EDIT_EDITS];
    size_t n = (size_t)cJSON_GetArraySize(edits);
    struct repl *v = calloc(n, sizeof(*v));
    cJSON *res = NULL;
    char *data = NULL;
    if (!v) {
        kward_oom(c);
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
            kward_fail(c, NULL, BROKER_E_INVALID, f, "%s must not be empty", f);
            goto done;
        }
        size_t count = 0, first = 0;
        for (const char *p = r.content; (p = memmem(p, r.len - (size_t)(p - r.content), old, ol));
             p += ol)
            if (count++ == 0)
                first = (size_t)(p - r.content);
        if (count == 0) {
            kward_fail(c, "old_text_not_found", BROKER_E_NO_MATCH, f, "%s was not found in %s", f,
                       shown);
            goto done;
        }
        if (count > 1) {
            kward_fail(c, "old_text_not_unique", BROKER_E_NOT_UNIQUE, f,
                       "%s appears %zu times in %s; provide more context", f, count, shown);
            goto done;
        }
        v[i] = (struct repl){.idx = i, .at = first, .len = ol, .text = neu};
    }
    qsort(v, n, sizeof(*v), repl_cmp);
    size_t out_len = r.len;
    for (i = 0; i < n; i++) {
        if (i + 1 < n && v[i].at + v[i].len > v[i + 1].at) {
            kward_fail(c, "edits_overlap", BROKER_E_INVALID, "edits",
                       "edits[%zu] and edits[%zu] overlap in %s",
                       v[i].idx < v[i + 1].idx ? v[i].idx : v[i + 1].idx,
                       v[i].idx < v[i + 1].idx ? v[i + 1].idx : v[i].idx, shown);
            goto done;
        }
        size_t tl = strlen(v[i].text);
        if (tl > SIZE_MAX / 2 - out_len) {
            kward_oom(c);
            goto done;
        }
        out_len = out_len - v[i].len + tl;
    }
    if (out_len > c->ctx->limits.max_file_size) {
        kward_fail(c, "file_too_large", BROKER_E_TOO_LARGE, "edits",
                   "the edited file would be %zu bytes, over the limit of %ju bytes", out_len,
                   (uintmax_t)c->ctx->limits.max_file_size);
        goto done;
    }
    if (!(data = malloc(out_len + 1))) {
        kward_oom(c);
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
        kward_fail(c, "no_changes", BROKER_E_INVALID, "edits", "no changes made to %s", shown);
        goto done;
    }
    char *head = util_printf("Edited %s: replaced %zu block(s)", shown, n);
    res = head ? commit_change(c, path, rel, shown, r.content, r.len, true, data, dst, head)
               : kward_oom(c);
done:
    free(data);
    free(v);
    broker_read_result_clear(&r);
    return res;
}
