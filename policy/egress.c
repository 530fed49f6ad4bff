/* policy/egress.c: the egress rule syntax and the decision (see egress.h). Deny is looked at
 * first and wins; a name is judged by name rules before any lookup and by address rules and the
 * private check after it, so the address checked is the one connected to. */
#include "policy/egress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_why(char *why, size_t len, const char *msg)
{
    if (why && len)
        snprintf(why, len, "%s", msg);
}

int egress_name_normalize(const char *in, size_t len, char out[EGRESS_NAME_MAX + 1])
{
    if (len && in[len - 1] == '.')
        len--;
    if (len == 0 || len > EGRESS_NAME_MAX)
        return -EINVAL;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch == '.') {
            if (label == 0)
                return -EINVAL;
            label = 0;
        } else if (isalnum(ch) || ch == '-' || ch == '_') {
            if (++label > 63)
                return -EINVAL;
        } else {
            return -EINVAL;
        }
        out[i] = (char)tolower(ch);
    }
    if (label == 0)
        return -EINVAL;
    out[len] = '\0';
    return 0;
}

bool egress_addr_parse(const char *s, int *family, uint8_t addr[16])
{
    char buf[64];
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
        s++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    memset(addr, 0, 16);
    if (inet_pton(AF_INET, buf, addr) == 1) {
        *family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, buf, addr) == 1) {
        *family = AF_INET6;
        return true;
    }
    return false;
}

static void mask_host_bits(uint8_t addr[16], unsigned prefix, unsigned bits)
{
    for (unsigned i = 0; i < bits / 8; i++) {
        unsigned keep = prefix > i * 8 ? (prefix - i * 8 >= 8 ? 8 : prefix - i * 8) : 0;
        addr[i] &= (uint8_t)(0xff00u >> keep);
    }
}

static bool in_prefix(const uint8_t a[16], const uint8_t net[16], unsigned prefix)
{
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, net, full))
        return false;
    return rest == 0 || ((a[full] ^ net[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

/* "HOST", "HOST:PORT", "[V6]", "[V6]:PORT", "V6" (a bare IPv6 literal takes no port), each
 * HOST possibly "*.suffix" or "ADDR/PREFIX". */
int egress_rule_parse(const char *text, struct egress_rule *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof(*out));
    size_t tl = text ? strlen(text) : 0;
    if (tl == 0 || tl >= EGRESS_RULE_TEXT) {
        set_why(why, why_len, tl ? "too long" : "empty");
        return -EINVAL;
    }
    memcpy(out->text, text, tl + 1);
    char host[EGRESS_RULE_TEXT];
    const char *port = NULL;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close) {
            set_why(why, why_len, "'[' without ']'");
            return -EINVAL;
        }
        size_t hl = (size_t)(close - text - 1);
        memcpy(host, text + 1, hl);
        host[hl] = '\0';
        if (close[1] == ':')
            port = close + 2;
        else if (close[1]) {
            set_why(why, why_len, "junk after ']'");
            return -EINVAL;
        }
    } else {
        const char *colon = strchr(text, ':');
        if (colon && strchr(colon + 1, ':'))
            colon = NULL; /* a bare IPv6 literal or CIDR */
        size_t hl = colon ? (size_t)(colon - text) : tl;
        memcpy(host, text, hl);
        host[hl] = '\0';
        if (colon)
            port = colon + 1;
    }
    if (port && !strcmp(port, "*")) {
        out->any_port = true;
    } else if (port) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(port, &end, 10);
        if (!*port || *end || !isdigit((unsigned char)port[0]) || v == 0 || v > 65535 || errno) {
            set_why(why, why_len, "the port must be a number from 1 to 65535");
            return -EINVAL;
        }
        out->port = (uint16_t)v;
    }
    char *slash = strchr(host, '/');
    if (slash) {
        *slash = '\0';
        char *end;
        errno = 0;
        unsigned long pl = strtoul(slash + 1, &end, 10);
        if (!egress_addr_parse(host, &out->family, out->addr) || !slash[1] || *end ||
            !isdigit((unsigned char)slash[1]) || errno || pl > (out->family == AF_INET ? 32u : 128u)) {
            set_why(why, why_len, "a CIDR is ADDRESS/PREFIX with a prefix length the family allows");
            return -EINVAL;
        }
        out->kind = EGRESS_RULE_ADDR;
        out->prefix = (unsigned)pl;
        mask_host_bits(out->addr, out->prefix, out->family == AF_INET ? 32 : 128);
        return 0;
    }
    if (egress_addr_parse(host, &out->family, out->addr)) {
        out->kind = EGRESS_RULE_ADDR;
        out->prefix = out->family == AF_INET ? 32 : 128;
        return 0;
    }
    const char *name = host;
    if (!strncmp(host, "*.", 2)) {
        out->kind = EGRESS_RULE_WILDCARD;
        name = host + 2;
    }
    if (strchr(name, '*')) {
        set_why(why, why_len, "a wildcard is only '*.' at the start of a name");
        return -EINVAL;
    }
    if (egress_name_normalize(name, strlen(name), out->host) < 0 || strchr(name, '_')) {
        set_why(why, why_len, "not a host name, IP address or CIDR");
        return -EINVAL;
    }
    return 0;
}

int egress_host_parse(const char *name, const char *addr, struct egress_host *out, char *why,
                      size_t why_len)
{
    memset(out, 0, sizeof(*out));
    if (!name || egress_name_normalize(name, strlen(name), out->name) < 0) {
        set_why(why, why_len, "not a host name");
        return -EINVAL;
    }
    if (!addr || !egress_addr_parse(addr, &out->family, out->addr)) {
        set_why(why, why_len, "not an IP address");
        return -EINVAL;
    }
    return 0;
}

struct range {
    uint8_t net[16];
    unsigned prefix;
};

static bool v4_private(const uint8_t a[4])
{
    static const struct {
        uint8_t net[4];
        unsigned prefix;
    } r[] = {
        {{0, 0, 0, 0}, 8},       /* "this network" */
        {{10, 0, 0, 0}, 8},      /* RFC 1918 */
        {{100, 64, 0, 0}, 10},   /* CGNAT (RFC 6598) */
        {{127, 0, 0, 0}, 8},     /* loopback */
        {{169, 254, 0, 0}, 16},  /* link-local, cloud metadata 169.254.169.254 */
        {{172, 16, 0, 0}, 12},   /* RFC 1918 */
        {{192, 0, 0, 0}, 24},    /* IETF protocol assignments */
        {{192, 0, 2, 0}, 24},    /* documentation */
        {{192, 168, 0, 0}, 16},  /* RFC 1918 */
        {{198, 18, 0, 0}, 15},   /* benchmarking */
        {{198, 51, 100, 0}, 24}, /* documentation */
        {{203, 0, 113, 0}, 24},  /* documentation */
        {{224, 0, 0, 0}, 4},     /* multicast */
        {{240, 0, 0, 0}, 4},     /* reserved, broadcast */
    };
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
        uint8_t a16[16] = {0}, n16[16] = {0};
        memcpy(a16, a, 4);
        memcpy(n16, r[i].net, 4);
        if (in_prefix(a16, n16, r[i].prefix))
            return true;
    }
    return false;
}

bool egress_addr_private(int family, const uint8_t addr[16])
{
    if (family == AF_INET)
        return v4_private(addr);
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t zero12[12] = {0};
    if (!memcmp(addr, mapped, 12) || !memcmp(addr, nat64, 12))
        return v4_private(addr + 12);
    if (!memcmp(addr, zero12, 12))
        return true; /* ::, ::1, and the deprecated IPv4-compatible form */
    static const struct range r[] = {
        {{0xfc}, 7},                    /* unique local, incl. AWS metadata fd00:ec2::254 */
        {{0xfe, 0x80}, 10},             /* link-local */
        {{0xfe, 0xc0}, 10},             /* site-local (deprecated) */
        {{0xff}, 8},                    /* multicast */
        {{0x01, 0x00}, 64},             /* discard-only 100::/64 */
        {{0x20, 0x01, 0x0d, 0xb8}, 32}, /* documentation */
        {{0x20, 0x02}, 16},             /* 6to4: carries any IPv4, private ones included */
        {{0x20, 0x01, 0x00, 0x00}, 32}, /* Teredo */
    };
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        if (in_prefix(addr, r[i].net, r[i].prefix))
            return true;
    return false;
}

static bool port_ok(const struct egress_rule *r, uint16_t port)
{
    return r->any_port || (r->port ? r->port == port : (port == 80 || port == 443));
}

static bool name_matches(const struct egress_rule *r, const char *name)
{
    if (r->kind == EGRESS_RULE_NAME)
        return !strcmp(r->host, name);
    if (r->kind != EGRESS_RULE_WILDCARD)
        return false;
    /* Strictly beneath: "a.example.com" matches "*.example.com", "example.com" does not, and
     * neither does "badexample.com". */
    size_t nl = strlen(name), sl = strlen(r->host);
    return nl > sl + 1 && name[nl - sl - 1] == '.' && !strcmp(name + nl - sl, r->host);
}

static bool addr_matches(const struct egress_rule *r, int family, const uint8_t addr[16])
{
    return r->kind == EGRESS_RULE_ADDR && r->family == family && in_prefix(addr, r->addr, r->prefix);
}

static const struct egress_rule *find_name(const struct egress_rule *v, size_t n, const char *name,
                                           uint16_t port)
{
    for (size_t i = 0; i < n; i++)
        if (port_ok(&v[i], port) && name_matches(&v[i], name))
            return &v[i];
    return NULL;
}

static const struct egress_rule *find_addr(const struct egress_rule *v, size_t n, int family,
                                           const uint8_t addr[16], uint16_t port)
{
    for (size_t i = 0; i < n; i++)
        if (port_ok(&v[i], port) && addr_matches(&v[i], family, addr))
            return &v[i];
    return NULL;
}

static void verdict(struct egress_decision *d, enum egress_verdict v, const struct egress_rule *r,
                    const char *reason)
{
    d->verdict = v;
    d->rule = r;
    d->reason = reason;
}

void egress_decide_name(const struct egress_policy *p, const char *host, uint16_t port,
                        struct egress_decision *d)
{
    int family;
    uint8_t addr[16];
    const struct egress_rule *r;
    if (egress_addr_parse(host, &family, addr)) {
        /* An IP literal is judged by address rules only, and needs one: a name rule never
         * allows an address, whatever that name resolves to today. */
        if ((r = find_addr(p->deny, p->n_deny, family, addr, port)))
            return verdict(d, EGRESS_DENY_RULE, r, "denied by an egress deny rule");
        if ((r = find_addr(p->allow, p->n_allow, family, addr, port)))
            return verdict(d, EGRESS_ALLOW, r, "allowed");
        return verdict(d, EGRESS_DENY_UNLISTED, NULL,
                       "no egress allow rule names this address and port");
    }
    if ((r = find_name(p->deny, p->n_deny, host, port)))
        return verdict(d, EGRESS_DENY_RULE, r, "denied by an egress deny rule");
    if ((r = find_name(p->allow, p->n_allow, host, port)))
        return verdict(d, EGRESS_ALLOW, r, "allowed");
    verdict(d, EGRESS_DENY_UNLISTED, NULL, "no egress allow rule names this host and port");
}

void egress_decide_addr(const struct egress_policy *p, int family, const uint8_t addr[16], uint16_t port,
                        struct egress_decision *d)
{
    const struct egress_rule *r;
    if ((r = find_addr(p->deny, p->n_deny, family, addr, port)))
        return verdict(d, EGRESS_DENY_RULE, r, "the host's address is denied by an egress deny rule");
    if (!p->private_ok && egress_addr_private(family, addr)) {
        /* Only a rule naming the address or its range itself lets a name reach a private
         * address: a public name pointed at 169.254.169.254 must not ride on its name rule. */
        if ((r = find_addr(p->allow, p->n_allow, family, addr, port)))
            return verdict(d, EGRESS_ALLOW, r, "allowed");
        return verdict(
            d, EGRESS_DENY_PRIVATE, NULL,
            "the host resolved to a private address (egress.private is false and no rule names it)");
    }
    verdict(d, EGRESS_ALLOW, d->rule, "allowed");
}

static int cmp_u16(const void *a, const void *b)
{
    return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

size_t egress_ports(const struct egress_policy *p, uint16_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_allow; i++) {
        if (p->allow[i].any_port)
            continue; /* every port: reachable through the proxies, not captured */
        uint16_t want[2] = {p->allow[i].port, 0};
        size_t k = 1;
        if (!want[0]) {
            want[0] = 80;
            want[1] = 443;
            k = 2;
        }
        for (size_t j = 0; j < k; j++) {
            bool seen = false;
            for (size_t m = 0; m < n; m++)
                seen |= out[m] == want[j];
            if (!seen && n < cap)
                out[n++] = want[j];
        }
    }
    qsort(out, n, sizeof(*out), cmp_u16);
    return n;
}

const char *egress_verdict_name(enum egress_verdict v)
{
    switch (v) {
    case EGRESS_ALLOW: return "allowed";
    case EGRESS_DENY_RULE: return "denied";
    case EGRESS_DENY_UNLISTED: return "unlisted";
    case EGRESS_DENY_PRIVATE: return "private";
    }
    return "?";
}
