/* supervisor/egress/resolve.h: the supervisor's own name lookups for the egress proxies, off the
 * event loop, on two detached threads per sandbox. Nothing here ever makes the loop wait: a
 * lookup that hangs in the resolver holds its thread, not the loop, and a sandbox that ends
 * meanwhile just drops its interest (the thread frees what is left when the lookup returns). */
#ifndef CORRAL_EGRESS_RESOLVE_H
#define CORRAL_EGRESS_RESOLVE_H

#include "common/util.h"
#include "policy/egress.h"

#include <sys/socket.h>

struct loop;
struct egress_resolver;

#define EGRESS_RESOLVE_MAX 8 /* addresses of one name kept */

struct egress_lookup {
    char host[EGRESS_NAME_MAX + 1];
    int gai_err; /* getaddrinfo's result */
    int n;
    struct sockaddr_storage addr[EGRESS_RESOLVE_MAX];
    socklen_t len[EGRESS_RESOLVE_MAX];
    void *owner; /* NULL once cancelled: then never delivered */
    struct egress_lookup *next;
};

/* DONE(owner, lookup) runs on the loop thread for each finished lookup still wanted; the lookup
 * is freed when it returns. */
int egress_resolver_new(struct loop *l, void (*done)(void *owner, const struct egress_lookup *lk),
                        struct egress_resolver **out, struct cerr *err);
/* Ends the resolver without waiting for lookups in progress. Loop thread. NULL is a no-op. */
void egress_resolver_free(struct egress_resolver *r);

/* Queues a lookup of HOST for OWNER; *out (may be NULL) is a handle for cancel. 0 or -ENOMEM. */
int egress_resolve(struct egress_resolver *r, const char *host, void *owner, struct egress_lookup **out);
/* OWNER is going away: its lookup will not be delivered. Loop thread. */
void egress_resolve_cancel(struct egress_resolver *r, struct egress_lookup *lk);

#endif
