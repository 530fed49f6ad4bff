/* supervisor/egress/socks.c: SOCKS5 (RFC 1928) as far as a CONNECT with no authentication
 * needs: the greeting, the request, the reply. Names are resolved by the supervisor, never by
 * the program (socks5h). */
#include "supervisor/egress/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

ssize_t egress_socks_greeting(const uint8_t *buf, size_t len, bool *no_auth)
{
    *no_auth = false;
    if (len < 2)
        return len && buf[0] != 5 ? -EINVAL : EGRESS_NEED_MORE;
    if (buf[0] != 5 || buf[1] == 0)
        return -EINVAL;
    size_t n = 2 + (size_t)buf[1];
    if (len < n)
        return EGRESS_NEED_MORE;
    for (size_t i = 2; i < n; i++)
        if (buf[i] == 0)
            *no_auth = true;
    return (ssize_t)n;
}

ssize_t egress_socks_request(const uint8_t *buf, size_t len, struct egress_socks_req *out)
{
    memset(out, 0, sizeof(*out));
    if (len < 5)
        return len && buf[0] != 5 ? -EINVAL : EGRESS_NEED_MORE;
    if (buf[0] != 5 || buf[2] != 0)
        return -EINVAL;
    out->cmd = buf[1];
    size_t n;
    switch (buf[3]) {
    case 1: /* IPv4 */
        n = 4 + 4 + 2;
        if (len < n)
            return EGRESS_NEED_MORE;
        inet_ntop(AF_INET, buf + 4, out->host, sizeof(out->host));
        break;
    case 4: /* IPv6 */
        n = 4 + 16 + 2;
        if (len < n)
            return EGRESS_NEED_MORE;
        inet_ntop(AF_INET6, buf + 4, out->host, sizeof(out->host));
        break;
    case 3: /* a name, length-prefixed */
        n = 4 + 1 + (size_t)buf[4] + 2;
        if (len < n)
            return EGRESS_NEED_MORE;
        if (egress_name_normalize((const char *)buf + 5, buf[4], out->host) < 0) {
            /* An IP literal sent as a name ("127.0.0.1" with socks5h) is still an address. */
            char lit[64];
            int fam;
            uint8_t a[16];
            if (buf[4] >= sizeof(lit))
                return -EINVAL;
            memcpy(lit, buf + 5, buf[4]);
            lit[buf[4]] = '\0';
            if (!egress_addr_parse(lit, &fam, a))
                return -EINVAL;
            inet_ntop(fam, a, out->host, sizeof(out->host));
        }
        break;
    default: return -EPROTONOSUPPORT;
    }
    out->port = (uint16_t)((buf[n - 2] << 8) | buf[n - 1]);
    if (out->port == 0)
        return -EINVAL;
    return (ssize_t)n;
}

void egress_socks_reply(uint8_t out[10], uint8_t rep)
{
    /* BND.ADDR 0.0.0.0:0: clients of CONNECT do not use it. */
    static const uint8_t base[10] = {5, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    memcpy(out, base, sizeof(base));
    out[1] = rep;
}
