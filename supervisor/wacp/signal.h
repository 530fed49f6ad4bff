/* supervisor/wacp/signal.h: signals and their upward propagation. */
#ifndef CORRAL_WACP_SIGNAL_H
#define CORRAL_WACP_SIGNAL_H

#include "supervisor/wacp/internal.h"

bool wacp_signal_known(const char *type);
/* Records signal_emitted for WS (actor ACTOR), then its delivery to the parent (signal_delivered
 * + notify of the parent's agent). TO overrides the recipient (the acknowledged signal goes to an
 * envelope's sender); NULL: WS's parent. */
int wacp_signal_emit(struct wacp *w, struct wacp_ws *ws, const char *actor, const char *type,
                     const char *reason, const char *ref, struct wacp_ws *to, bool duplicate,
                     char id_out[WACP_ID_LEN]);
int wacp_signal_method_emit(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                            struct wacp_err *e);

/* `corral run --resume`: the escalation SIGNAL_ID of WS a dead supervisor had open, again, under
 * the run's escalation timeout and fallback (DEADLINE_MS absolute, on NOW_MS's clock). */
int wacp_signal_esc_restore(struct wacp *w, struct wacp_ws *ws, const char *signal_id,
                            const char *reason, bool queued, uint64_t wall_ms, uint64_t now_ms,
                            uint64_t deadline_ms);

#endif
