/* supervisor/wacp/core.h: ids, time, trail records, refusals and JSON helpers shared by every WACP
 * module (the bottom of supervisor/wacp/, see docs/architecture.md). */
#ifndef CORRAL_WACP_CORE_H
#define CORRAL_WACP_CORE_H

#include "supervisor/wacp/internal.h"

void wacp_core_new_id(const char *prefix, char out[WACP_ID_LEN]);
uint64_t wacp_core_now_ms(void);
uint64_t wacp_core_wall_ms(void);
/* Stages one entry; -EIO when the trail refuses (the caller changes nothing). BODY borrowed. */
int wacp_core_rec(struct wacp *w, const char *ws, const char *actor, const char *type,
                  const cJSON *body);
/* Fills E and returns -1. */
int wacp_core_fail(struct wacp_err *e, int rpc, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A refusal by the rules: records a `denial` entry (kind "protocol") and fails E with it. */
int wacp_core_deny(struct wacp *w, const struct wacp_ws *caller, const char *method, struct wacp_err *e,
                   int rpc, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
int wacp_core_trail_err(struct wacp_err *e);
/* Whether the run may keep LEN more payload bytes (the run-wide ceiling); counts them if so. */
bool wacp_core_hold(struct wacp *w, size_t len);
bool wacp_core_grow(void **v, size_t *cap, size_t n, size_t elem);
/* A cJSON object {k: v, ...}; NULL on ENOMEM. */
cJSON *wacp_core_obj(void);
void wacp_core_add_str(cJSON *o, const char *k, const char *v); /* v NULL or "": null */

#endif
