/* supervisor/wacp/visibility.h: dynamic visibility grants (visibility.c). The reads themselves
 * are checked by wacp_tree_visible, which reads a workspace's grants. */
#ifndef CORRAL_WACP_VISIBILITY_H
#define CORRAL_WACP_VISIBILITY_H

#include "supervisor/wacp/internal.h"

/* workspace.create's "visibility": the new workspace's designated reads (observers). */
int wacp_visibility_grant_at_create(struct wacp *w, struct wacp_ws *c, struct wacp_ws *ws,
                                    const cJSON *p, struct wacp_err *e);
int wacp_visibility_method_grant(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                 struct wacp_err *e);

#endif
