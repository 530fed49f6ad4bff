/* tests/fuzz/fuzz_kward_text.c: the Kward surface's parsers of untrusted workspace text. The
 * first byte picks a language; the rest, split at the first NUL, is an old and a new file: the
 * outliner runs on both (every entry's range must lie within the file), and the diff from one
 * to the other must count exactly the '+' and '-' lines it prints. */
#include "tools/kward.h"

#include <stdlib.h>
#include <string.h>

static const char *const langs[] = {"ruby", "python", "javascript", "typescript", "go",
                                    "rust", "java",   "csharp",     "c",          "none"};

static void outline(const char *lang, const char *s, size_t n)
{
    struct kward_outline o;
    if (kward_outline_build(lang, s, n, KWARD_OUTLINE_ENTRIES, &o) < 0)
        return;
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    lines += n && s[n - 1] != '\n';
    if (o.n > KWARD_OUTLINE_ENTRIES || o.n > o.total)
        abort();
    for (size_t i = 0; i < o.n; i++)
        if (o.v[i].line < 1 || o.v[i].end_line < o.v[i].line || o.v[i].end_line > lines ||
            strlen(o.v[i].signature) > 200)
            abort();
    free(kward_outline_render(&o));
    kward_outline_clear(&o);
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
    size_t an = nul ? (size_t)(nul - s) : n;
    const char *b = nul ? nul + 1 : "";
    size_t bn = nul ? n - an - 1 : 0;
    outline(lang, s, an);
    outline(lang, b, bn);
    char *d;
    size_t dl;
    struct kward_diff_stats st;
    if (kward_diff("f", s, an, b, bn, &d, &dl, &st) < 0)
        return 0;
    size_t plus = 0, minus = 0, line = 0;
    /* every diff line ends with '\n'; the first two are the headers */
    for (size_t i = 0; i < dl; i = (size_t)((char *)memchr(d + i, '\n', dl - i) - d) + 1, line++) {
        if (line < 2) {
            if (strncmp(d + i, line ? "+++ f\n" : "--- f\n", 6))
                abort();
            continue;
        }
        plus += d[i] == '+';
        minus += d[i] == '-';
    }
    if (plus != st.additions || minus != st.deletions)
        abort();
    free(d);
    return 0;
}
