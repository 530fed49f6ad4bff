/* supervisor/egress/hub.h: egress for the command sandboxes of a `network: "proxy"` agent
 * (executeCommand and the other surfaces' command tools). A worker thread starts the command,
 * whose init made listeners of their own in the command's namespace; they are handed here
 * (thread-safe) with a pidfd of the command's sandbox, and served on the loop by proxies of the
 * agent's policy, recorded in the agent's workspace, until the sandbox ends. */
#ifndef CORRAL_EGRESS_HUB_H
#define CORRAL_EGRESS_HUB_H

#include "supervisor/egress/egress.h"

struct egress_hub;

/* P and SPEC are borrowed (the agent's egress_setup: they outlive the hub); O's strings copied. */
int egress_hub_new(struct loop *l, const struct egress_policy *p, const struct sandbox_egress *spec,
                   const struct egress_opts *o, struct egress_hub **out, struct cerr *err);
/* Ends every command's proxies (recording their connections' ends). NULL is a no-op. */
void egress_hub_free(struct egress_hub *h);

/* tool_ctx.adopt_egress: from any thread. Takes the N fds and PIDFD in every case. */
void egress_hub_adopt(void *hub, int *fds, size_t n, int pidfd);

#endif
