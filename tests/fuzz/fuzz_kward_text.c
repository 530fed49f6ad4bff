/* tests/fuzz/fuzz_kward_text.c: what the Kward surface parses in-process of the untrusted output
 * of its sandboxed tools. The first byte picks a language; the rest, split at the first NUL, is
 * ctags' JSON lines and the source text they describe: every outline entry must lie within the
 * text, in order, capped. The whole input is also read as GNU diff's output: when the counter
 * accepts it, its counts must equal the '+' and '-' lines after the two headers. */
#include "tools/kward/kward.h"

#include <stdlib.h>
#include <string.h>

static const char *const langs[] = {"ruby", "python", "javascript", "typescript", "go",
                                    "rust", "java",   "csharp",     "c",          "none"};

static void outline(const char *lang, const char *tags, size_t tn, const char *s, size_t n)
{
    struct kward_outline o;
    if (kward_outline_from_tags(lang, tags, tn, s, n, KWARD_OUTLINE_ENTRIES, &o) < 0)
        return;
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    lines += n && s[n - 1] != '\n';
    if (o.n > KWARD_OUTLINE_ENTRIES || o.n > o.total)
        abort();
    for (size_t i = 0; i < o.n; i++)
        if (o.v[i].line < 1 || o.v[i].end_line < o.v[i].line || o.v[i].end_line > lines ||
            strlen(o.v[i].signature) > 200 || (i && o.v[i].line <= o.v[i - 1].line))
            abort();
    free(kward_outline_render(&o));
    kward_outline_clear(&o);
}

static void diff_count(const char *d, size_t dl)
{
    struct kward_diff_stats st;
    if (kward_diff_count(d, dl, &st) < 0)
        return;
    size_t plus = 0, minus = 0, line = 0;
    for (size_t i = 0; i < dl; line++) {
        const char *nl = memchr(d + i, '\n', dl - i);
        if (line >= 2) {
            plus += d[i] == '+';
            minus += d[i] == '-';
        }
        i = nl ? (size_t)(nl - d) + 1 : dl;
    }
    if (plus != st.additions || minus != st.deletions)
        abort();
    char *capped = kward_diff_cap(d, dl, KWARD_DIFF_BYTES, &st, NULL);
    free(capped);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *lang = langs[data[0] % (sizeof(langs) / sizeof(langs[0]))];
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    const char *nul = memchr(s, 0, n);
    size_t tn = nul ? (size_t)(nul - s) : n;
    const char *text = nul ? nul + 1 : "";
    size_t xn = nul ? n - tn - 1 : 0;
    outline(lang, s, tn, text, xn);
    diff_count(s, n);
    return 0;
}
