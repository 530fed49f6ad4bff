/* tools/kward/diff.c: the unified diff in write_file's and edit_file's results: GNU diff -u in a
 * command sandbox, and the counting of its output.
 * Why GNU diff and not a diff of our own: a maintained tool (docs/protocol-kward.md), no second
 * diff algorithm to keep correct. Why in a sandbox: it reads untrusted workspace bytes. The new
 * text goes to its stdin and is written to the sandbox's private /tmp; the old file is read
 * where it lies, /workspace/REL, bound read-only; so the diff exists before the write is
 * committed. The cost is one sandbox start per write or edit (figures in docs/protocol-kward.md). */
#include "tools/kward/kward.h"

#include "tools/broker/broker.h"
#include "tools/tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* stdin holds the old text (KWARD_OLD_LEN bytes, read exactly: dd's count_bytes) then the new.
 * The labels come through the environment, so no path is ever spliced into the shell text.
 * --text: both are text already; never "Binary files differ". */
#define DIFF_COMMAND                                                                     \
    "command -v diff >/dev/null 2>&1 || exit 127; "                                      \
    "dd of=/tmp/old bs=65536 count=\"$KWARD_OLD_LEN\" iflag=count_bytes status=none && " \
    "cat > /tmp/new && "                                                                 \
    "exec diff -u --text --label \"$KWARD_LABEL_A\" --label \"$KWARD_LABEL_B\" -- /tmp/old /tmp/new"

/* A decimal number at *p (advanced past it); false when there is none or it overflows. */
static bool number(const char **p, const char *end, size_t *v)
{
    const char *s = *p;
    size_t n = 0;
    if (s >= end || *s < '0' || *s > '9')
        return false;
    while (s < end && *s >= '0' && *s <= '9') {
        if (n > (SIZE_MAX - 9) / 10)
            return false;
        n = n * 10 + (size_t)(*s - '0');
        s++;
    }
    *p = s;
    *v = n;
    return true;
}

/* "-A[,B] +C[,D]" of a hunk header: the old and new line counts (1 when the count is left out). */
static bool hunk_counts(const char *s, const char *end, size_t *old_n, size_t *new_n)
{
    size_t v;
    if (end - s < 4 || memcmp(s, "@@ -", 4))
        return false;
    s += 4;
    if (!number(&s, end, &v))
        return false;
    *old_n = 1;
    if (s < end && *s == ',' && (++s, !number(&s, end, old_n)))
        return false;
    if (end - s < 2 || memcmp(s, " +", 2))
        return false;
    s += 2;
    if (!number(&s, end, &v))
        return false;
    *new_n = 1;
    if (s < end && *s == ',' && (++s, !number(&s, end, new_n)))
        return false;
    return end - s >= 3 && !memcmp(s, " @@", 3);
}

int kward_diff_count(const char *diff, size_t len, struct kward_diff_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!len)
        return 0;
    size_t line = 0, old_left = 0, new_left = 0;
    bool in_hunk = false;
    for (size_t i = 0; i < len; line++) {
        const char *nl = memchr(diff + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - diff) : len;
        const char *s = diff + i, *end = diff + e;
        i = nl ? e + 1 : len;
        if (line < 2) { /* the two file headers */
            if (end - s < 4 || memcmp(s, line ? "+++ " : "--- ", 4))
                return -EINVAL;
            continue;
        }
        if (!old_left && !new_left) {
            if (s < end && *s == '\\' && in_hunk)
                continue; /* "\ No newline at end of file" */
            if (!hunk_counts(s, end, &old_left, &new_left))
                return -EINVAL;
            in_hunk = true;
            continue;
        }
        char m = s < end ? *s : '\0';
        if (m == ' ' && old_left && new_left) {
            old_left--;
            new_left--;
        } else if (m == '-' && old_left) {
            old_left--;
            st->deletions++;
        } else if (m == '+' && new_left) {
            new_left--;
            st->additions++;
        } else if (m != '\\') {
            return -EINVAL;
        }
    }
    return old_left || new_left || !in_hunk ? -EINVAL : 0;
}

int kward_diff(const struct tool_ctx *ctx, const char *rel, const char *old, size_t old_len,
               const char *new_text, size_t len, char **out, size_t *out_len,
               struct kward_diff_stats *st, struct broker_err *e)
{
    *out = NULL;
    *out_len = 0;
    memset(st, 0, sizeof(*st));
    if (old_len > SIZE_MAX - len)
        return broker_fail(e, BROKER_E_TOO_LARGE, NULL, "the texts are too large to diff");
    _cleanup_free_ char *la = old ? util_printf("KWARD_LABEL_A=a/%s", rel)
                                  : strdup("KWARD_LABEL_A=/dev/null");
    _cleanup_free_ char *lb = util_printf("KWARD_LABEL_B=b/%s", rel);
    _cleanup_free_ char *ol = util_printf("KWARD_OLD_LEN=%zu", old ? old_len : 0);
    _cleanup_free_ char *input = malloc((old ? old_len : 0) + len + 1);
    if (!la || !lb || !ol || !input)
        return broker_fail(e, BROKER_E_IO, NULL, "out of memory for the diff");
    if (old && old_len)
        memcpy(input, old, old_len);
    if (len)
        memcpy(input + (old ? old_len : 0), new_text, len);
    const char *const env[] = {la, lb, ol};
    struct broker_command_result r = {0};
    if (kward_tool_run(ctx, "GNU diff", "diffutils", DIFF_COMMAND, env, 3, input,
                       (old ? old_len : 0) + len, &r, e) < 0)
        return -1;
    int rc = 0;
    /* diff: 0 the same, 1 different, 2 trouble. */
    if (r.exit_code != 0 && r.exit_code != 1)
        rc = broker_fail(e, BROKER_E_EXEC, NULL, "diff exited with status %d: %.200s", r.exit_code,
                         r.err);
    else if (r.truncated)
        rc = broker_fail(e, BROKER_E_TOO_LARGE, NULL, "the diff is larger than %u bytes",
                         KWARD_TOOL_OUTPUT_BYTES);
    else if ((r.exit_code == 0) != (r.out_len == 0) || kward_diff_count(r.out, r.out_len, st) < 0)
        rc = broker_fail(e, BROKER_E_EXEC, NULL, "diff printed something other than a unified diff");
    if (rc == 0) {
        *out = r.out;
        *out_len = r.out_len;
        r.out = NULL;
    }
    broker_command_result_clear(&r);
    return rc;
}

char *kward_diff_cap(const char *diff, size_t len, size_t cap, const struct kward_diff_stats *st,
                     bool *cut)
{
    if (cut)
        *cut = len > cap;
    if (len <= cap)
        return strndup(diff, len);
    size_t keep = cap;
    while (keep > 0 && diff[keep - 1] != '\n')
        keep--; /* whole lines only, so no UTF-8 sequence is split either */
    char tail[200];
    int tl = snprintf(tail, sizeof(tail),
                      "... diff truncated to %zu bytes; full diff stats: +%zu|-%zu. Use read_file to "
                      "inspect current content.",
                      cap, st->additions, st->deletions);
    char *s = malloc(keep + (size_t)tl + 1);
    if (!s)
        return NULL;
    memcpy(s, diff, keep);
    memcpy(s + keep, tail, (size_t)tl + 1);
    return s;
}
