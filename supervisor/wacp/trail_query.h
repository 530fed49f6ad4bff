/* supervisor/wacp/trail_query.h: the wacp/trail.query row of the method table. */
#ifndef CORRAL_WACP_TRAIL_QUERY_H
#define CORRAL_WACP_TRAIL_QUERY_H

#include "supervisor/wacp/internal.h"

int wacp_trail_query_method(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                            struct wacp_err *e);

#endif
