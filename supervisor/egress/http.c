/* supervisor/egress/http.c: the HTTP proxy's request head parser. Only the request line matters
 * for the decision (CONNECT authority or absolute URI); headers pass through to the upstream
 * server untouched, but the whole head must fit EGRESS_HTTP_HEAD_MAX and arrive in time. */
#include "supervisor/egress/internal.h"

#include <errno.h>
#include <string.h>

static const char *find_end(const char *buf, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            return buf + i + 4;
    return NULL;
}

/* "host:port", "[v6]:port", "host" (default_port); into out. */
static int parse_authority(const char *s, size_t n, uint16_t default_port, struct egress_http_req *out)
{
    const char *host = s, *port = NULL;
    size_t hl = n;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return -EINVAL;
        host = s + 1;
        hl = (size_t)(close - s - 1);
        size_t after = n - (size_t)(close - s) - 1;
        if (after) {
            if (close[1] != ':')
                return -EINVAL;
            port = close + 2;
        }
        char lit[64];
        int fam;
        uint8_t a[16];
        if (hl == 0 || hl >= sizeof(lit))
            return -EINVAL;
        memcpy(lit, host, hl);
        lit[hl] = '\0';
        if (!egress_addr_parse(lit, &fam, a) || fam != AF_INET6)
            return -EINVAL;
        memcpy(out->host, lit, hl + 1);
    } else {
        const char *colon = memchr(s, ':', n);
        if (colon) {
            hl = (size_t)(colon - s);
            port = colon + 1;
        }
        if (egress_name_normalize(host, hl, out->host) < 0)
            return -EINVAL;
    }
    if (port) {
        size_t pl = n - (size_t)(port - s);
        unsigned long v = 0;
        if (pl == 0 || pl > 5)
            return -EINVAL;
        for (size_t i = 0; i < pl; i++) {
            if (port[i] < '0' || port[i] > '9')
                return -EINVAL;
            v = v * 10 + (unsigned long)(port[i] - '0');
        }
        if (v == 0 || v > 65535)
            return -EINVAL;
        out->port = (uint16_t)v;
    } else {
        if (!default_port)
            return -EINVAL;
        out->port = default_port;
    }
    return 0;
}

static bool token_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

ssize_t egress_http_parse(const char *buf, size_t len, struct egress_http_req *out)
{
    memset(out, 0, sizeof(*out) - sizeof(out->line));
    out->line[0] = '\0';
    if (len > EGRESS_HTTP_HEAD_MAX)
        len = EGRESS_HTTP_HEAD_MAX;
    const char *end = find_end(buf, len);
    if (!end)
        return len >= EGRESS_HTTP_HEAD_MAX ? -E2BIG : EGRESS_NEED_MORE;
    const char *eol = memchr(buf, '\r', (size_t)(end - buf));
    if (!eol || eol[1] != '\n')
        return -EINVAL;
    /* METHOD SP TARGET SP HTTP/1.x */
    const char *sp1 = memchr(buf, ' ', (size_t)(eol - buf));
    if (!sp1 || sp1 == buf)
        return -EINVAL;
    for (const char *c = buf; c < sp1; c++)
        if (!token_char(*c))
            return -EINVAL;
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', (size_t)(eol - target));
    if (!sp2 || sp2 == target)
        return -EINVAL;
    size_t vl = (size_t)(eol - sp2 - 1);
    if (vl != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) || (sp2[8] != '0' && sp2[8] != '1'))
        return -EINVAL;
    for (const char *c = target; c < sp2; c++)
        if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
            return -EINVAL;
    size_t ml = (size_t)(sp1 - buf), tl = (size_t)(sp2 - target);
    out->rest_off = (size_t)(eol - buf) + 2;
    if (ml == 7 && !memcmp(buf, "CONNECT", 7)) {
        out->connect = true;
        if (parse_authority(target, tl, 0, out) < 0)
            return -EINVAL;
        return end - buf;
    }
    if (tl >= 8 && !strncasecmp(target, "https://", 8))
        return -ENOTSUP; /* a client asks CONNECT for TLS; an absolute https URI is a misuse */
    if (tl < 7 || strncasecmp(target, "http://", 7))
        return -ENOTSUP; /* origin form: a request for the proxy itself */
    const char *auth = target + 7;
    size_t al = tl - 7;
    const char *path = memchr(auth, '/', al);
    const char *q = memchr(auth, '?', al);
    if (q && (!path || q < path))
        path = q;
    size_t authl = path ? (size_t)(path - auth) : al;
    if (memchr(auth, '@', authl))
        return -EINVAL; /* userinfo: never forwarded, and a classic confusion of parsers */
    if (parse_authority(auth, authl, 80, out) < 0)
        return -EINVAL;
    /* Origin form: METHOD SP PATH SP VERSION CRLF ("/" when the URI has no path). */
    size_t pl = path ? (size_t)(sp2 - path) : 0;
    size_t need = ml + 1 + (pl ? pl : 1) + (pl && *path == '?' ? 1 : 0) + 1 + 8 + 2;
    if (need >= sizeof(out->line))
        return -E2BIG;
    char *w = out->line;
    memcpy(w, buf, ml);
    w += ml;
    *w++ = ' ';
    if (!pl || *path == '?')
        *w++ = '/';
    if (pl)
        memcpy(w, path, pl);
    w += pl;
    *w++ = ' ';
    memcpy(w, sp2 + 1, 8);
    w += 8;
    *w++ = '\r';
    *w++ = '\n';
    out->line_len = (size_t)(w - out->line);
    return end - buf;
}
