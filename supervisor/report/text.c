/* supervisor/report/text.c: the report's text at the bottom of its layers: UTF-8 checking and
 * cleaning, the one escaping function every string of the trail goes through on its way into the
 * page, and numbers for people. */
#include "supervisor/report/internal.h"

#include <stdarg.h>
#include <string.h>

/* ---- UTF-8 ----------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
size_t report_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    uint32_t cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

char *report_clean_utf8(const char *s, size_t len, size_t max)
{
    if (!s)
        s = "", len = 0;
    size_t cap = (len < max ? len : max) + 4;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    size_t o = 0, i = 0;
    const unsigned char *u = (const unsigned char *)s;
    while (i < len) {
        size_t l = report_utf8_len(u + i, len - i);
        if (o + (l ? l : 1) > max) {
            memcpy(out + o, "\xe2\x80\xa6", 3); /* … */
            o += 3;
            break;
        }
        if (l == 0 || (l == 1 && ((u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') || u[i] == 0x7f))) {
            out[o++] = '?';
            i += l ? l : 1;
            continue;
        }
        memcpy(out + o, u + i, l);
        o += l;
        i += l;
    }
    out[o] = '\0';
    return out;
}

/* ---- escaping -------------------------------------------------------------------------------- */

void report_put_textn(FILE *f, const char *s, size_t n)
{
    static const char repl[] = "\xef\xbf\xbd"; /* U+FFFD */
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        unsigned char c = u[i];
        const char *esc = NULL;
        size_t adv = 1;
        switch (c) {
        case '&': esc = "&amp;"; break;
        case '<': esc = "&lt;"; break;
        case '>': esc = "&gt;"; break;
        case '"': esc = "&quot;"; break;
        case '\'': esc = "&#39;"; break;
        default:
            if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
                esc = repl;
            } else if (c >= 0x80) {
                /* valid UTF-8 passes; anything else is one replacement character per byte */
                adv = report_utf8_len(u + i, n - i);
                if (adv == 0) {
                    esc = repl;
                    adv = 1;
                }
            }
        }
        if (esc) {
            if (run)
                fwrite(s + i - run, 1, run, f);
            run = 0;
            fputs(esc, f);
            i += adv;
        } else {
            run += adv;
            i += adv;
        }
    }
    if (run)
        fwrite(s + n - run, 1, run, f);
}

void report_put_text(FILE *f, const char *s)
{
    if (s)
        report_put_textn(f, s, strlen(s));
}

void report_putf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
}

/* ---- numbers --------------------------------------------------------------------------------- */

void report_fmt_bytes(double v, char *buf, size_t cap)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (v >= 1024 && u + 1 < ARRAY_SIZE(unit))
        v /= 1024, u++;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

void report_fmt_duration_us(int64_t us, char *buf, size_t cap)
{
    double a = (double)(us < 0 ? -us : us);
    if (a < 1000)
        snprintf(buf, cap, "%lld \xc2\xb5s", (long long)us);
    else if (a < 1e6)
        snprintf(buf, cap, "%.3g ms", (double)us / 1e3);
    else if (a < 6e7)
        snprintf(buf, cap, "%.3g s", (double)us / 1e6);
    else
        snprintf(buf, cap, "%lld min %lld s", (long long)(us / 60000000),
                 (long long)(us % 60000000 / 1000000));
}
