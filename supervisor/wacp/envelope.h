/* supervisor/wacp/envelope.h: envelopes and port rights. */
#ifndef CORRAL_WACP_ENVELOPE_H
#define CORRAL_WACP_ENVELOPE_H

#include "supervisor/wacp/internal.h"

const char *wacp_envelope_state_name(enum env_state s);
/* Records and queues the directive of a new workspace from FROM (a workspace id, or "system"
 * for the root's), delivering at once. */
int wacp_envelope_send_directive(struct wacp *w, const char *from, struct wacp_ws *to,
                                 const cJSON *payload, const char *origin, char id_out[WACP_ID_LEN]);
/* Delivers what is queued for WS in creation order (after resume, after creation). */
void wacp_envelope_flush(struct wacp *w, struct wacp_ws *ws);
/* WS is terminal: what is still undelivered to it is recorded undeliverable. */
void wacp_envelope_drop_for(struct wacp *w, struct wacp_ws *ws);
int wacp_envelope_right_add(struct wacp *w, enum right_kind kind, const char *holder, const char *target,
                            const char *by, char id_out[WACP_ID_LEN]);
bool wacp_envelope_channel_matrix(const struct wacp *w, const struct wacp_ws *from,
                                  const struct wacp_ws *to, const char *type);
int wacp_envelope_method_send(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                              struct wacp_err *e);
int wacp_envelope_method_ack(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                             struct wacp_err *e);
int wacp_envelope_method_rights_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                     struct wacp_err *e);
int wacp_envelope_method_rights_grant(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                      struct wacp_err *e);
int wacp_envelope_method_rights_revoke(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                       struct wacp_err *e);
/* `corral run --resume`: the envelope_delivery gate ID a dead supervisor had open on V, again
 * (R: its recorded rule and times); V stays held until a person or the fallback decides. */
int wacp_envelope_gate_restore(struct wacp *w, struct wacp_env *v, struct highway_gate_req *r,
                               const char *id, uint64_t deadline_ms);
void wacp_envelope_tick(struct wacp *w, uint64_t now);
uint64_t wacp_envelope_next_deadline(const struct wacp *w);
void wacp_envelope_free(struct wacp_env *e);
/* The supervisor's proof over V with the run's key (at creation, and for an envelope rebuilt
 * from the trail by `corral run --resume`, whose key is new). */
int wacp_envelope_seal(struct wacp *w, struct wacp_env *v);

/* A person's envelope {to, type, payload, in_reply_to?, priority?} (highway spec 2.3): the role
 * send rules are the one thing skipped; origin human, originator USER_ID; recorded either way
 * (human_injection). */
int wacp_envelope_inject(struct wacp *w, const char *user_id, const cJSON *p, cJSON **r,
                         struct wacp_err *e);

#endif
