/* supervisor/wacp/human.h: the human highway's decisions inside the model (human.c): the
 * coordinator's gated requests, tool-call gates, and the requests of people (wacp.h). */
#ifndef CORRAL_WACP_HUMAN_H
#define CORRAL_WACP_HUMAN_H

#include "supervisor/wacp/internal.h"

int human_init(struct wacp *w);
void human_free(struct wacp *w);
/* Before a gated method (TYPE, or -1 for none): 0 go on, WACP_DEFERRED it waits, < 0 refused. */
int human_gate_method(struct wacp *w, struct wacp_ws *c, const char *method, int type,
                      const cJSON *params, uint64_t call_ref, struct wacp_err *e);

#endif
