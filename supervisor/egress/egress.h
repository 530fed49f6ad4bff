/* supervisor/egress/egress.h: filtered egress for one sandbox of `network: "proxy"`
 * (docs/egress.md). The supervisor owns the listening sockets its init made on the sandbox's
 * `lo` (sandbox/egress_sockets.h): an HTTP proxy (CONNECT and absolute URIs), a SOCKS5 proxy, a
 * DNS stub handing out fake loopback addresses, and transparent capture listeners that map those
 * addresses back to names. Every connection is decided by the policy's rules, recorded in the
 * trail before it is made (`network_connect`, and `network_closed` at its end, `denial` when
 * refused), and relayed on the supervisor's event loop with splice. Loop thread only. */
#ifndef CORRAL_EGRESS_H
#define CORRAL_EGRESS_H

#include "common/util.h"
#include "policy/egress.h"
#include "sandbox/egress_sockets.h"

struct loop;
struct trail;
struct egress;

/* The ports inside the sandbox (documented, and in the proxy variables). */
#define EGRESS_HTTP_PORT 3128
#define EGRESS_SOCKS_PORT 1080
/* Fake addresses the DNS stub hands out: 127.128.0.1 onwards, one per name. */
#define EGRESS_FAKE_NET 0x7f800000u /* 127.128.0.0/16 */
#define EGRESS_FAKE_MAX 4096
#define EGRESS_HEAD_TIMEOUT 10.0 /* seconds a client has to send its request */

struct egress_opts {
    const struct egress_policy *policy; /* borrowed: must outlive the egress */
    struct trail *trail;                /* NULL: nothing recorded */
    const char *workspace;              /* the sandbox's workspace id in the trail */
    const char *actor;                  /* its role */
    double head_timeout;                /* 0: EGRESS_HEAD_TIMEOUT */
    const char *sandbox;                /* which sandbox of the workspace, in each entry ("agent",
                                         * "command-N"); NULL: "agent" */
};

/* The listeners spec asks for, from the policy: both proxies, the DNS stub and a capture
 * listener per allowed port when transparent. */
void egress_sandbox_spec(const struct egress_policy *p, struct sandbox_egress *spec);

/* The proxy variables for the program (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY and their
 * lowercase forms): static strings, NULL-ended, at most 9. */
const char *const *egress_env(void);

/* Takes the fds (sandbox_egress_recv's, in spec order) in all cases. *out owned by the caller. */
int egress_new(struct loop *l, const struct egress_opts *o, const struct sandbox_egress *spec, int *fds,
               size_t n_fds, struct egress **out, struct cerr *err);
/* Closes every connection (recording its end) and listener; stages what it records and commits
 * it. NULL is a no-op. */
void egress_free(struct egress *e);

struct egress_stats {
    uint64_t allowed, refused, open, bytes_out, bytes_in;
};
void egress_get_stats(const struct egress *e, struct egress_stats *s);

#endif
