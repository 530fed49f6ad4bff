/* supervisor/wacp/workspace.h: creating, listing, suspending, resuming, aborting and transferring
 * workspaces; their timeouts. */
#ifndef CORRAL_WACP_WORKSPACE_H
#define CORRAL_WACP_WORKSPACE_H

#include "supervisor/wacp/internal.h"

int wacp_workspace_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                 struct wacp_err *e);
int wacp_workspace_method_self(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                               struct wacp_err *e);
int wacp_workspace_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                               struct wacp_err *e);
int wacp_workspace_method_abort(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                struct wacp_err *e);
int wacp_workspace_method_suspend(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                  struct wacp_err *e);
int wacp_workspace_method_resume(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                 struct wacp_err *e);
int wacp_workspace_method_transfer(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                                   struct wacp_err *e);
int wacp_workspace_create_root(struct wacp *w, const char *agent, struct cerr *err);
void wacp_workspace_tick(struct wacp *w, uint64_t now);
uint64_t wacp_workspace_next_deadline(const struct wacp *w);
/* The target of a governing method (P's "workspace"): visible (else not found: ids do not
 * leak) and governed by C; NULL after a recorded denial in E. M names the method, CAP the role
 * capability it needs (NULL: none). */
struct wacp_ws *wacp_workspace_target_of(struct wacp *w, struct wacp_ws *c, const cJSON *p,
                                         const char *m, const char *cap, struct wacp_err *e);
/* {"workspace_id", "state"} of T. */
cJSON *wacp_workspace_state_result(const struct wacp_ws *t);
/* What the start hook is told of WS (its strings borrowed from WS). */
struct wacp_ws_info wacp_workspace_info(const struct wacp_ws *ws);

#endif
