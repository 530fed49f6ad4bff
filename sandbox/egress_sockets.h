/* sandbox/egress_sockets.h: the listening sockets of `network: "proxy"` (docs/egress.md), made
 * by the sandbox's init in the sandbox's own network namespace, on its `lo`, before it drops its
 * privileges and before the program exists, then passed to the supervisor over SCM_RIGHTS and
 * closed in the sandbox. So the supervisor owns every proxy socket, no process inside holds one,
 * and the supervisor never has to enter the namespace itself (setns in a threaded supervisor
 * would need a thread of its own and its own failure modes). */
#ifndef CORRAL_SANDBOX_EGRESS_SOCKETS_H
#define CORRAL_SANDBOX_EGRESS_SOCKETS_H

#include "common/util.h"

#include <stdbool.h>
#include <stdint.h>

#define SANDBOX_EGRESS_MAX_CAPTURE 32
/* http, socks, dns, then the capture listeners in the order given. */
#define SANDBOX_EGRESS_MAX_FDS (3 + SANDBOX_EGRESS_MAX_CAPTURE)

struct sandbox_egress {
    uint16_t http_port;  /* TCP 127.0.0.1:PORT, the HTTP proxy */
    uint16_t socks_port; /* TCP 127.0.0.1:PORT, the SOCKS5 proxy */
    bool dns;            /* UDP 127.0.0.1:53, the transparent mode's DNS stub */
    /* Transparent capture: TCP 0.0.0.0:PORT listeners (every 127/8 address is local on `lo`, so
     * a connection to any fake address on PORT lands there; the supervisor reads which address
     * it was with getsockname). Ports equal to http_port / socks_port are skipped. */
    uint16_t capture[SANDBOX_EGRESS_MAX_CAPTURE];
    size_t n_capture;
};

/* How many sockets spec asks for (the fds array of the two calls below holds that many). */
size_t sandbox_egress_count(const struct sandbox_egress *spec);

/* In init (no allocation): creates, binds and listens, in the order of SANDBOX_EGRESS_MAX_FDS's
 * comment (absent ones skipped), non-blocking and close-on-exec. 0, or -errno with err set (the
 * sandbox then fails to start: it never runs without the proxies it was promised). */
int sandbox_egress_open(const struct sandbox_egress *spec, int *fds, struct cerr *err);
/* In init: open, send over sock, close its copies: what spawn.c calls. 0 or -errno with err. */
int sandbox_egress_hand_up(const struct sandbox_egress *spec, int sock, struct cerr *err);
/* Sends the n fds in one SCM_RIGHTS message. 0 or -errno. */
int sandbox_egress_send(int sock, const int *fds, size_t n);
/* In the supervisor: receives exactly n fds, each checked to be a socket; 0 or -EPROTO. */
int sandbox_egress_recv(int sock, int *fds, size_t n);

#endif
