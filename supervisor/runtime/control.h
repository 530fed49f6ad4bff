/* supervisor/runtime/control.h: the control socket of a running `corral run` (a Unix socket, mode 0600,
 * or 0666 when the policy maps users other than root: every request is then authenticated by
 * the kernel's credentials of the caller). A client sends one request line (control_human.h) or
 * nothing (then EOF: `corral ps`'s live state) and gets one JSON document, then EOF. Reading is
 * non-blocking, bounded (2 MiB, 10 s), so a silent or hostile client cannot stall the loop. */
#ifndef CORRAL_CONTROL_H
#define CORRAL_CONTROL_H

#include "common/util.h"
#include "supervisor/conn/loop.h"

#include <cjson/cJSON.h>

struct control;
struct control_peer;

/* A request OP (REQ: the whole request, borrowed) of the process PEER: the answer document
 * (owned by the control socket). */
typedef cJSON *(*control_request_fn)(void *data, const struct control_peer *peer, const char *op,
                                     const cJSON *req);

/* Listens at PATH (a stale socket there is replaced; anything else there is an error).
 * STATE builds the document for each client (owned by the caller of STATE's result: freed
 * here). */
int control_new(struct loop *loop, const char *path, cJSON *(*state)(void *data),
                control_request_fn request, void *data, bool open_to_all, struct control **out,
                struct cerr *err);
/* Stops listening and removes the socket. NULL is a no-op. */
void control_free(struct control *c);

/* Client side (`corral ps`): connects to PATH and reads the whole document (malloc'd, NUL
 * terminated). -ENOENT / -ECONNREFUSED when no run listens there. */
int control_fetch(const char *path, char **out, struct cerr *err);

#endif
