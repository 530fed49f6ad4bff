/* tests/fuzz/fuzz_report_text.c: every string on a report page is an agent's, so the report's
 * escaping must take any bytes and give text that cannot be markup: no < > " ' at all, & only
 * as the start of one of its five entities, valid UTF-8, no control character but tab and
 * newline. report_clean_utf8 (labels, Graphviz's input) must give valid UTF-8 within its bound,
 * and report_svg_inert must not crash on any input. */
#include "supervisor/report/internal.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_utf8(const unsigned char *s, size_t n, bool markup_free)
{
    for (size_t i = 0; i < n;) {
        size_t l = report_utf8_len(s + i, n - i);
        if (l == 0)
            abort(); /* not UTF-8 */
        if (l == 1 && ((s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f))
            abort(); /* a control character */
        if (markup_free && l == 1) {
            if (strchr("<>\"'", s[i]) && s[i])
                abort();
            if (s[i] == '&') {
                static const char *const ent[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
                bool ok = false;
                for (size_t k = 0; k < 5 && !ok; k++)
                    ok = n - i >= strlen(ent[k]) && !memcmp(s + i, ent[k], strlen(ent[k]));
                if (!ok)
                    abort();
            }
        }
        i += l;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return 0;
    report_put_textn(f, (const char *)data, size);
    if (fclose(f) != 0)
        return 0;
    check_utf8((const unsigned char *)buf, len, true);
    free(buf);
    size_t max = size ? data[0] : 0;
    char *c = report_clean_utf8((const char *)data, size, max);
    if (c) {
        size_t n = strlen(c);
        if (n > max + 3)
            abort(); /* past the bound (3: the "…" mark) */
        check_utf8((const unsigned char *)c, n, false);
        free(c);
    }
    (void)report_svg_inert((const char *)data, size);
    return 0;
}
