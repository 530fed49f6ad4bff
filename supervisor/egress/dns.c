/* supervisor/egress/dns.c: the transparent mode's DNS stub: one question per query, answered
 * with a fake loopback address the supervisor maps back to the name when the program connects.
 * The stub forwards nothing: a name reaches a real resolver only when a rule allows it and the
 * program connects (egress_decide_name), so DNS is no way out. */
#include "supervisor/egress/internal.h"

#include <errno.h>
#include <string.h>

#define DNS_HDR 12
#define QTYPE_A 1
#define QCLASS_IN 1

int egress_dns_parse(const uint8_t *buf, size_t len, struct egress_dns_query *q)
{
    memset(q, 0, sizeof(*q));
    if (len < DNS_HDR || len > EGRESS_DNS_MAX)
        return -EINVAL;
    q->id = (uint16_t)(buf[0] << 8 | buf[1]);
    uint8_t f1 = buf[2];
    q->rd = f1 & 1;
    if (f1 & 0x80)
        return -EINVAL; /* a response: never answered (no reflection loops) */
    unsigned qd = (unsigned)(buf[4] << 8 | buf[5]);
    if (((f1 >> 3) & 0xf) != 0 || qd != 1)
        return -ENOTSUP;
    size_t off = DNS_HDR, out = 0;
    char raw[EGRESS_NAME_MAX + 2];
    for (;;) {
        if (off >= len)
            return -EINVAL;
        uint8_t l = buf[off++];
        if (l == 0)
            break;
        if (l > 63 || off + l > len || out + l + 1 > sizeof(raw))
            return -EINVAL; /* compression pointers have no place in a question */
        if (out)
            raw[out++] = '.';
        memcpy(raw + out, buf + off, l);
        out += l;
        off += l;
    }
    if (off + 4 > len)
        return -EINVAL;
    q->qtype = (uint16_t)(buf[off] << 8 | buf[off + 1]);
    uint16_t qclass = (uint16_t)(buf[off + 2] << 8 | buf[off + 3]);
    off += 4;
    q->question_len = off - DNS_HDR;
    if (out == 0 || egress_name_normalize(raw, out, q->name) < 0)
        return -EINVAL;
    if (qclass != QCLASS_IN)
        return -ENOTSUP;
    return 0;
}

size_t egress_dns_answer(const uint8_t *q_raw, const struct egress_dns_query *q, const uint8_t *addr4,
                         unsigned rcode, uint8_t out[EGRESS_DNS_MAX])
{
    size_t qlen = q->question_len;
    if (DNS_HDR + qlen + 16 > EGRESS_DNS_MAX)
        qlen = 0; /* cannot happen for a parsed query; keeps the bound obvious */
    memset(out, 0, DNS_HDR);
    out[0] = (uint8_t)(q->id >> 8);
    out[1] = (uint8_t)q->id;
    out[2] = (uint8_t)(0x80 | 0x04 | (q->rd ? 1 : 0)); /* QR, AA, RD copied */
    out[3] = (uint8_t)(0x80 | (rcode & 0xf));          /* RA */
    out[5] = qlen ? 1 : 0;
    memcpy(out + DNS_HDR, q_raw + DNS_HDR, qlen);
    size_t n = DNS_HDR + qlen;
    if (addr4 && qlen && rcode == 0) {
        static const uint8_t rr[] = {0xc0, 0x0c, 0, QTYPE_A, 0, QCLASS_IN, 0, 0, 0, 1, 0, 4};
        memcpy(out + n, rr, sizeof(rr)); /* name: the question's; TTL 1 s */
        memcpy(out + n + sizeof(rr), addr4, 4);
        n += sizeof(rr) + 4;
        out[7] = 1;
    }
    return n;
}
