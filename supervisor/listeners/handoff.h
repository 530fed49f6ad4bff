/* supervisor/listeners/handoff.h: the seccomp listeners of command sandboxes (executeCommand and the
 * other surfaces' command tools). A worker thread starts the command; its listener is handed here
 * (thread-safe) and watched on the loop like the agent's own: every denial is recorded in the
 * agent's workspace, then answered EPERM (supervisor/listeners/listener.h). */
#ifndef CORRAL_CMD_DENIALS_H
#define CORRAL_CMD_DENIALS_H

#include "common/util.h"
#include "sandbox/sandbox.h"
#include "supervisor/conn/loop.h"

struct trail;
struct handoff;

/* TRAIL must not be NULL: without a trail no listener is asked for. */
int handoff_new(struct loop *loop, struct trail *trail, struct handoff **out, struct cerr *err);
/* Answers what waits on each listener, stages its per-syscall totals (listener_finish: the caller
 * commits them), then closes it (a process still filtered then gets ENOSYS). NULL is a no-op. */
void handoff_free(struct handoff *c);

/* tool_ctx.adopt_listener: from any thread. Takes LISTENER in every case (closed when it cannot
 * be watched: the filtered calls then fail with ENOSYS instead of EPERM, never succeed). TAG is
 * the workspace id of the entries; RULES (copied) name the rule that refused. */
void handoff_adopt(void *c, const char *tag, int listener, const struct sandbox_seccomp *rules);

#endif
