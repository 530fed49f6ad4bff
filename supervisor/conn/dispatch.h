/* supervisor/conn/dispatch.h: the method table of the agent protocol, above the connection
 * (supervisor/conn/agent.h): whoever makes an agent passes dispatch_message as its on_message. */
#ifndef CORRAL_DISPATCH_H
#define CORRAL_DISPATCH_H

#include "supervisor/conn/agent.h"

/* Acts on one decoded message of A (answers requests, never notifications). */
void dispatch_message(struct agent *a, const struct rpc_msg *m);
/* The protocol versions answered by initialize and server/discover, newest first. */
extern const char *const dispatch_protocol_versions[];
extern const size_t dispatch_n_protocol_versions;

#endif
