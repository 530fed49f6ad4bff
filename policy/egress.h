/* policy/egress.h: the egress allowlist of `sandbox.network: "proxy"` (docs/egress.md): rules of
 * the form HOST[:PORT] (exact names, "*." wildcards, IP literals, CIDRs), deny before allow, and
 * the private-address check applied to the address a name resolved to. Pure logic, no I/O: the
 * policy loader validates with it, the supervisor's proxies decide with it. */
#ifndef CORRAL_POLICY_EGRESS_H
#define CORRAL_POLICY_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_NAME_MAX 253 /* a DNS name, without the final dot */
#define EGRESS_RULE_TEXT 280
#define EGRESS_MAX_RULES 256 /* per list */
#define EGRESS_MAX_PORTS 32  /* distinct ports captured in transparent mode */

enum egress_rule_kind {
    EGRESS_RULE_NAME = 0, /* "api.example.com": that name only */
    EGRESS_RULE_WILDCARD, /* "*.example.com": any name strictly beneath example.com */
    EGRESS_RULE_ADDR,     /* "10.1.2.3", "10.0.0.0/8", "[fd00::1]", "fd00::/8" */
};

struct egress_rule {
    enum egress_rule_kind kind;
    char host[EGRESS_NAME_MAX + 1]; /* NAME: the name; WILDCARD: the suffix after "*." (lowercase) */
    int family;                     /* ADDR: AF_INET or AF_INET6 */
    uint8_t addr[16];               /* ADDR: network byte order, host bits cleared */
    unsigned prefix;                /* ADDR: 32 / 128 for a literal */
    uint16_t port;                  /* 0: the default ports, 80 and 443 */
    bool any_port;                  /* "HOST:*": every port */
    char text[EGRESS_RULE_TEXT];    /* as written, for the trail */
};

/* A name pinned to an address by the policy (`egress.hosts`), looked up before the system
 * resolver: for names the host's resolver cannot know (and for tests without a network). */
struct egress_host {
    char name[EGRESS_NAME_MAX + 1];
    int family;
    uint8_t addr[16];
};

struct egress_policy {
    const struct egress_rule *allow;
    size_t n_allow;
    const struct egress_rule *deny;
    size_t n_deny;
    const struct egress_host *hosts;
    size_t n_hosts;
    bool private_ok;          /* `private: true`: private addresses need no rule of their own */
    bool transparent;         /* DNS stub + capture (default true) */
    uint64_t max_connections; /* concurrent, per sandbox; 0: EGRESS_DEFAULT_CONNECTIONS */
    uint64_t max_bytes;       /* both ways, over the sandbox's life; 0: no cap */
};
#define EGRESS_DEFAULT_CONNECTIONS 256

/* Parses one rule ("HOST:*" is every port). Returns 0, or -EINVAL with a one-line reason in why. */
int egress_rule_parse(const char *text, struct egress_rule *out, char *why, size_t why_len);
/* Parses "NAME:ADDRESS" (an `egress.hosts` entry / `--add-host`). 0 or -EINVAL with why. */
int egress_host_parse(const char *name, const char *addr, struct egress_host *out, char *why,
                      size_t why_len);

/* Lowercases and checks a host name as a client sent it: letters, digits, '-', '_', dots; no
 * empty label, labels up to 63, at most EGRESS_NAME_MAX. A final dot is dropped. 0 or -EINVAL. */
int egress_name_normalize(const char *in, size_t len, char out[EGRESS_NAME_MAX + 1]);

/* An IP literal ("1.2.3.4", "::1", "[::1]") into family/addr; false if it is not one. */
bool egress_addr_parse(const char *s, int *family, uint8_t addr[16]);

/* Loopback, private, link-local, CGNAT, cloud metadata, unspecified, multicast, reserved and
 * the like (docs/egress.md lists them): never a public host. IPv4-mapped and NAT64 addresses are
 * judged by the IPv4 address they carry. */
bool egress_addr_private(int family, const uint8_t addr[16]);

enum egress_verdict {
    EGRESS_ALLOW = 0,
    EGRESS_DENY_RULE,     /* a deny rule matched */
    EGRESS_DENY_UNLISTED, /* no allow rule matched */
    EGRESS_DENY_PRIVATE,  /* the name resolved to a private address no rule names */
};

struct egress_decision {
    enum egress_verdict verdict;
    const struct egress_rule *rule; /* the rule that decided, or NULL */
    const char *reason;             /* one line for the program and the trail (static) */
};

/* Step one, before any lookup: the name (normalized) or IP literal and the port the program asked
 * for. A name not allowed by a name rule is refused here, so no lookup is ever made for it
 * (a lookup would itself leak the name to the resolver's servers). ALLOW for a name means "resolve,
 * then call egress_decide_addr"; for an IP literal the decision is final. */
void egress_decide_name(const struct egress_policy *p, const char *host, uint16_t port,
                        struct egress_decision *d);
/* Step two, for each address a name resolved to: deny address rules, then the private check. */
void egress_decide_addr(const struct egress_policy *p, int family, const uint8_t addr[16], uint16_t port,
                        struct egress_decision *d);

/* The ports a transparent capture must listen on: the allow rules' ports (80 and 443 for a rule
 * without one), distinct, sorted, at most cap. Returns how many. */
size_t egress_ports(const struct egress_policy *p, uint16_t *out, size_t cap);

const char *egress_verdict_name(enum egress_verdict v); /* "allowed", "denied", ... */

#endif
