/* supervisor/wacp/task.h: the run's task graph and the statuses its workspaces drive. */
#ifndef CORRAL_WACP_TASK_H
#define CORRAL_WACP_TASK_H

#include "supervisor/wacp/internal.h"

const char *wacp_task_status_name(enum task_status s);
struct wacp_task *wacp_task_find(const struct wacp *w, const char *id);
/* Moves TASK to TO (recording task_status_changed, or the named EVENT instead). */
int wacp_task_set(struct wacp *w, struct wacp_task *t, enum task_status to, const char *event,
                  const char *actor, const char *ws);
/* Binds TASK to a new workspace (pending -> assigned; failed -> pending -> assigned on retry). */
int wacp_task_bind(struct wacp *w, struct wacp_task *t, struct wacp_ws *ws, const char *actor);
/* The workspace WS reached state S: the bound task follows (PROTOCOL task spec 4). */
void wacp_task_follow(struct wacp *w, struct wacp_ws *ws, enum ws_state s);
void wacp_task_on_started(struct wacp *w, struct wacp_ws *ws);
int wacp_task_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                            struct wacp_err *e);
int wacp_task_method_assign(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                            struct wacp_err *e);
int wacp_task_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                          struct wacp_err *e);
int wacp_task_method_cancel(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r,
                            struct wacp_err *e);
/* `corral run --resume`: the task_approval gate ID a dead supervisor had open on draft T, again
 * (R: its recorded rule and times; the subject and callback are filled in here). */
int wacp_task_gate_restore(struct wacp *w, struct wacp_task *t, struct highway_gate_req *r,
                           const char *id, uint64_t deadline_ms);
void wacp_task_tick(struct wacp *w, uint64_t now);
uint64_t wacp_task_next_deadline(const struct wacp *w);
void wacp_task_free(struct wacp_task *t);

#endif
