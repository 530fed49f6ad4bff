/* supervisor/wacp/integrate.h: integration of a child workspace into its parent (PROTOCOL 7.4-7.8)
 * and the resolution of its conflicts. */
#ifndef CORRAL_WACP_INTEGRATE_H
#define CORRAL_WACP_INTEGRATE_H

#include "supervisor/wacp/internal.h"

int wacp_integrate_method_integrate(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                    struct wacp_err *e);
int wacp_integrate_method_resolve(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                  struct wacp_err *e);

#endif
