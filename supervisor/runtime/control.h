/* supervisor/runtime/control.h: the control socket of a running `corral run` (a Unix socket, mode 0600,
 * root only). A client connects and gets one JSON document, the run's live state, then EOF:
 * nothing is read from the client, so a silent or hostile client cannot stall the loop. */
#ifndef CORRAL_CONTROL_H
#define CORRAL_CONTROL_H

#include "common/util.h"
#include "supervisor/conn/loop.h"

#include <cjson/cJSON.h>

struct control;

/* Listens at PATH (a stale socket there is replaced; anything else there is an error).
 * STATE builds the document for each client (owned by the caller of STATE's result: freed
 * here). */
int control_new(struct loop *loop, const char *path, cJSON *(*state)(void *data), void *data,
                struct control **out, struct cerr *err);
/* Stops listening and removes the socket. NULL is a no-op. */
void control_free(struct control *c);

/* Client side (`corral ps`): connects to PATH and reads the whole document (malloc'd, NUL
 * terminated). -ENOENT / -ECONNREFUSED when no run listens there. */
int control_fetch(const char *path, char **out, struct cerr *err);

#endif
