/* supervisor/egress/internal.h: the parsers of what a sandboxed program sends the egress proxies
 * (an HTTP request head, SOCKS5 greetings and requests, DNS queries) and what the relay files
 * share. Every parser reads a bounded buffer, never allocates, and says "need more", "done" or
 * "malformed"; tests/fuzz/fuzz_egress_*.c feed them hostile bytes. */
#ifndef CORRAL_EGRESS_INTERNAL_H
#define CORRAL_EGRESS_INTERNAL_H

#include "policy/egress.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Results of every parser: > 0 bytes consumed (complete), 0 need more, < 0 malformed. */
#define EGRESS_NEED_MORE 0

/* ---- http.c */
#define EGRESS_HTTP_HEAD_MAX 16384 /* request line plus headers */

struct egress_http_req {
    bool connect;                   /* CONNECT host:port; otherwise an absolute-URI request */
    char host[EGRESS_NAME_MAX + 1]; /* normalized name, or an IP literal (no brackets) */
    uint16_t port;
    /* absolute-URI: the request line rewritten to origin form ("GET /path HTTP/1.1\r\n"), for
     * the upstream server; the rest of the head follows it unchanged. */
    char line[EGRESS_HTTP_HEAD_MAX];
    size_t line_len;
    size_t rest_off; /* where the head's headers start in the input */
};

/* Parses a request head (through the blank line) from buf. > 0: the head's length; 0: no blank
 * line yet (more may come, unless len has reached EGRESS_HTTP_HEAD_MAX); -EINVAL malformed,
 * -ENOTSUP a valid request the proxy does not serve (https:// absolute URI, origin form),
 * -E2BIG a head too long. */
ssize_t egress_http_parse(const char *buf, size_t len, struct egress_http_req *out);

/* ---- socks.c */
/* Greeting: VER=5 NMETHODS METHODS... > 0 consumed, 0 need more, -EINVAL malformed. *no_auth
 * tells whether "no authentication" (0) was offered. */
ssize_t egress_socks_greeting(const uint8_t *buf, size_t len, bool *no_auth);

struct egress_socks_req {
    uint8_t cmd;                    /* 1 CONNECT (the only one served) */
    char host[EGRESS_NAME_MAX + 1]; /* normalized name, or the IP literal as text */
    uint16_t port;
};
/* Request: VER CMD RSV ATYP DST.ADDR DST.PORT. > 0 consumed, 0 need more, -EINVAL malformed
 * (a bad name included), -EPROTONOSUPPORT an unknown address type. */
ssize_t egress_socks_request(const uint8_t *buf, size_t len, struct egress_socks_req *out);
/* The 10-byte reply with REP (0 succeeded, 2 not allowed by ruleset, 4 host unreachable,
 * 5 refused, 7 command not supported, 8 address type not supported). */
void egress_socks_reply(uint8_t out[10], uint8_t rep);

/* ---- dns.c */
#define EGRESS_DNS_MAX 512 /* UDP without EDNS: what the stub reads and answers */

struct egress_dns_query {
    uint16_t id;
    uint16_t qtype;
    bool rd;
    char name[EGRESS_NAME_MAX + 1]; /* normalized */
    size_t question_len;            /* bytes of the question section (copied into the answer) */
};
/* One standard query with one IN question. 0 with *q filled, -EINVAL malformed (no answer is
 * sent), -ENOTSUP a valid query the stub answers with NOTIMP (q->id is set). */
int egress_dns_parse(const uint8_t *buf, size_t len, struct egress_dns_query *q);
/* The answer to q: an A record of addr4 (network order; NULL: no answer record, NOERROR) or the
 * RCODE given. Returns its length (<= EGRESS_DNS_MAX). q_raw is the query as received. */
size_t egress_dns_answer(const uint8_t *q_raw, const struct egress_dns_query *q, const uint8_t *addr4,
                         unsigned rcode, uint8_t out[EGRESS_DNS_MAX]);

#endif
