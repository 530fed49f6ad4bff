/* tools/session.h: what the tools remember of one agent connection (an MCP "conversation"):
 * which files the agent has read and what they held then, for the read-before-write rules of
 * the voltagent and kward surfaces, and one slot of per-surface state (active skills, context
 * budget counters). Thread-safe: calls of one agent may run at once on the worker pool. */
#ifndef CORRAL_TOOL_SESSION_H
#define CORRAL_TOOL_SESSION_H

#include "tools/broker/broker.h"

struct tool_session;

int tool_session_new(struct tool_session **out);
void tool_session_free(struct tool_session *s); /* NULL: no-op */
static inline void tool_session_freep(struct tool_session **s)
{
    tool_session_free(*s);
}

/* Records that the agent read workspace file REL ("a/b.c", as broker_path_clean gives it):
 * the file's identity and a BLAKE2b hash of its whole content as it is now. A file that cannot
 * be hashed (gone, not regular) is simply not recorded. 0 or -ENOMEM. */
int tool_session_note_read(struct tool_session *s, const struct tool_ctx *ctx, const char *rel);
/* After the agent's own successful write of REL: what is there now counts as read, so a
 * second edit needs no second read. Same as note_read. */
int tool_session_note_write(struct tool_session *s, const struct tool_ctx *ctx, const char *rel);
/* The read-before-write rule for REL. 0 when the file does not exist (a new file needs no
 * read) or is byte for byte what the agent last read. Otherwise -1 with e set, kind
 * BROKER_E_DENIED, and *why (may be NULL) set to TOOL_FRESH_UNREAD (never read in this
 * session) or TOOL_FRESH_CHANGED (changed since it was read: by a command, another agent, or
 * someone behind the agent's back). */
enum tool_fresh { TOOL_FRESH_OK = 0, TOOL_FRESH_UNREAD, TOOL_FRESH_CHANGED };
int tool_session_check_fresh(struct tool_session *s, const struct tool_ctx *ctx, const char *rel,
                             const char *field, enum tool_fresh *why, struct broker_err *e);
/* Forgets REL (after a delete). */
void tool_session_forget(struct tool_session *s, const char *rel);

/* The surface's own state for this session, made by MAKE on first use and freed by DROP with
 * the session. One surface per session, so one slot. NULL when MAKE fails. Callers protect
 * their state with tool_session_lock / unlock around every use. */
void *tool_session_slot(struct tool_session *s, void *(*make)(void), void (*drop)(void *));
void tool_session_lock(struct tool_session *s);
void tool_session_unlock(struct tool_session *s);

#endif
