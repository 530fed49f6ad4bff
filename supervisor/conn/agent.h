/* supervisor/conn/agent.h: agent connections on the event loop. An agent_host holds what the agents of
 * one loop share (the loop, the worker pool, the trail, the turn's staged work); an agent is one
 * connection: a pipe pair speaking JSON-RPC lines, with its input buffer, its output queue with
 * back-pressure, its abuse counters and its own tool surface and workspace. One agent or a
 * thousand: the same code. */
#ifndef CORRAL_AGENT_H
#define CORRAL_AGENT_H

#include "common/util.h"
#include "supervisor/conn/loop.h"
#include "supervisor/conn/pool.h"
#include "supervisor/conn/rpc.h"
#include "tools/tool.h"

struct trail;
struct agent_host;
struct agent;

struct agent_host_opts {
    size_t max_message;      /* cap on one line in (default RPC_DEFAULT_MAX_MESSAGE) */
    unsigned max_depth;      /* JSON nesting bound (default RPC_DEFAULT_MAX_DEPTH) */
    size_t max_queued_bytes; /* stop reading an agent while this much output waits (default 1 MiB) */
    unsigned max_inflight;   /* tool calls of one agent running or queued at once (default 4) */
    unsigned abuse_limit;    /* malformed messages before the agent is failed (default 100) */
    unsigned tool_rate;      /* tool calls a second per agent, bursts of 5 s' worth (0: no limit) */
    double congested_tick;   /* while the trail is congested, heavy agents get one line per tick
                              * (seconds, default 0.01; see backlog_serve) */
};

/* LOOP and POOL are borrowed and must outlive the host; TRAIL may be NULL. */
int agent_host_new(struct loop *loop, struct pool *pool, struct trail *trail,
                   const struct agent_host_opts *o, struct agent_host **out, struct cerr *err);
/* Every agent must have been freed first. NULL is a no-op. */
void agent_host_free(struct agent_host *h);

enum agent_end {
    AGENT_END_EOF = 1, /* the agent closed its output and every answer was delivered */
    AGENT_END_ABUSE,   /* too many malformed messages: the agent is failed */
    AGENT_END_IO,      /* a read or write on its pipes failed (it closed its input, ...) */
    AGENT_END_NOMEM,
};
const char *agent_end_name(enum agent_end e);

struct agent_config {
    const char *name;                   /* for logs and the trail ("agent", a workspace id) */
    int in_fd;                          /* read end: the agent's stdout (borrowed) */
    int out_fd;                         /* write end: the agent's stdin (borrowed; may equal in_fd) */
    const struct tool_surface *surface; /* borrowed */
    struct tool_ctx *tools;             /* borrowed; used from worker threads during calls */
    /* Called once on the loop thread when the connection ends; the agent stays allocated. */
    void (*on_end)(struct agent *a, enum agent_end why, void *data);
    void *data;
    /* Requests whose method starts with "wacp/" (corral run): answered by this handler on the
     * loop thread (agent_reply / agent_reply_error_data); NULL: they are unknown methods. */
    void (*wacp)(struct agent *a, const struct rpc_msg *m, void *data);
    /* Acts on each decoded message (the protocol's method table: dispatch_message of
     * supervisor/conn/dispatch.h). Required: the connection frames, counts and answers; what a
     * message means is decided above it, so this file never calls up into dispatch.c. */
    void (*on_message)(struct agent *a, const struct rpc_msg *m);
    /* The other end is an MCP host (corral mcp) rather than a sandboxed agent: the end of its
     * input ends the session (running calls are cancelled), denials are sent as log messages
     * unless it sets another level, and needs_approval may ask the person (elicitation). */
    bool host;
    /* A tools/call of a tool under needs_approval (corral run: the human highway's tool gate).
     * 0: held; the handler answers it later with agent_tool_release, and the agent's other
     * requests keep flowing meanwhile. 1: approved at once. < 0 (or NULL handler): the surface
     * refuses it itself. */
    int (*approve)(struct agent *a, const cJSON *id, const char *tool, const cJSON *args, void *data);
};

/* Starts serving: both fds are made non-blocking and watched. */
int agent_new(struct agent_host *h, const struct agent_config *c, struct agent **out, struct cerr *err);
/* Stops watching its fds; frees now, or once its last running tool call has finished (the
 * surface and tool ctx must stay valid until then: see agent_host_inflight). NULL is a no-op. */
void agent_free(struct agent *a);

/* Ends the connection now, as if its input had ended (a host's running calls are cancelled);
 * on_end is called with AGENT_END_EOF. */
void agent_close(struct agent *a);

/* Tool calls submitted or running, over every agent of the host. */
size_t agent_host_inflight(const struct agent_host *h);

/* Degraded mode (docs/trail.md): the words refusing something for want of the trail, naming
 * what is wrong with it ("internal error: the trail cannot be written (WHY), so WHAT"); valid
 * until the next call. Each call counts one refusal. */
const char *agent_trail_refusal(struct agent *a, const char *what);
/* Refusals so far, for the system_degraded entry's count of what was blocked. */
uint64_t agent_host_trail_refusals(const struct agent_host *h);
/* The trail is writable again: its next failure is said on stderr again. */
void agent_host_trail_recovered(struct agent_host *h);

struct agent_stats {
    uint64_t lines_in, requests, notifications, responses, errors_sent, tool_calls;
    uint64_t responses_in; /* answers to requests corral sent (elicitation) */
    uint64_t bytes_in, bytes_out;
    uint64_t trail_bytes; /* message content this agent has put in the trail */
    unsigned abuse;       /* malformed messages (and unknown notifications) so far */
    size_t queued_bytes;  /* output waiting */
    unsigned inflight;
    bool reading; /* false while back-pressure holds its input */
};
void agent_get_stats(const struct agent *a, struct agent_stats *s);
bool agent_ended(const struct agent *a);
const char *agent_name(const struct agent *a);

/* ---- for dispatch.c: the method table calls back into the connection ---- */

/* Queues a response for the end of this turn (after the trail commit). RESULT is borrowed. */
void agent_reply(struct agent *a, const cJSON *id, const cJSON *result);
void agent_reply_error(struct agent *a, const cJSON *id, int code, const char *message);
/* The same with error.data (borrowed; may be NULL). */
void agent_reply_error_data(struct agent *a, const cJSON *id, int code, const char *message,
                            const cJSON *data);
/* Queues a notification (no id) to the agent for the end of this turn, after the trail
 * commit, like a response. PARAMS borrowed (may be NULL). */
void agent_notify(struct agent *a, const char *method, const cJSON *params);
/* The "wacp/" handler of the agent's config, or NULL. */
bool agent_serves_wacp(const struct agent *a);
void agent_call_wacp(struct agent *a, const struct rpc_msg *m);
/* Records a `denial` entry for this agent (no-op without a trail): KIND ("path", "tool",
 * "protocol", ...), SUBJECT (what was asked), RULE (what refused it). 0 or -EIO. */
/* Whether a tool call with ARGS may be kept now: the arguments of an agent's calls in flight and
 * held for a person stay under 4 messages' worth (agent_host_opts.max_message) of heap, and
 * every agent's under 32. false: recorded as a denial (kind "memory_limit"); answer and count
 * it as abuse. */
bool agent_tool_keep_ok(struct agent *a, const cJSON *args);
int agent_record_denial(struct agent *a, const char *kind, const char *subject, const char *rule);
/* A notification nobody asked for (unknown method): never answered, but it counts toward the
 * abuse limit like a malformed line, so a flood of them ends the agent alone. */
void agent_count_abuse(struct agent *a);
/* Takes one tool call from the agent's rate bucket (agent_host_opts.tool_rate): false when it
 * is spent. */
bool agent_tool_rate_take(struct agent *a);
bool agent_initialized(const struct agent *a);
void agent_set_initialized(struct agent *a, const char *protocol_version);
const struct tool_surface *agent_surface(const struct agent *a);
const struct tool_ctx *agent_tools(const struct agent *a);
/* Starts tool call NAME(ARGS) for request ID on the pool, after this turn's commit; the answer
 * comes back through the loop. ARGS (may be NULL), ID and PROGRESS (the request's
 * progressToken, may be NULL: then no progress is sent) are copied; APPROVAL is the person's
 * answer when the call was held for one. 0, -ENOMEM, or -EIO when the trail cannot record the
 * call (it is then not made). */
int agent_call_tool(struct agent *a, const cJSON *id, const char *name, const cJSON *args,
                    const cJSON *progress, enum tool_approval approval);
/* notifications/cancelled: the call of request ID stops (a running command's sandbox is
 * killed) and is not answered; its end is recorded as cancelled. A held call (waiting for the
 * person) is dropped. Unknown ids are ignored, as the specification asks. */
void agent_cancel_call(struct agent *a, const cJSON *id);

/* Sends a request to the other end (elicitation/create, ...) on behalf of the other end's request
 * ABOUT (may be NULL); DONE runs once on the loop thread with its result or its error, or with
 * DROPPED set (both NULL) when the connection ended first or ABOUT was cancelled: then nothing
 * may be answered. PARAMS and ABOUT borrowed. 0, -EBUSY (16 are already waiting), or -ENOMEM. */
typedef void (*agent_answer_fn)(struct agent *a, const cJSON *result, const cJSON *error, bool dropped,
                                void *data);
int agent_request(struct agent *a, const char *method, const cJSON *params, const cJSON *about,
                  agent_answer_fn done, void *data);

/* What the other end declared at initialize (its capabilities object; borrowed, may be NULL). */
void agent_set_client_capabilities(struct agent *a, const cJSON *caps);
bool agent_client_can_elicit(const struct agent *a);
bool agent_is_host(const struct agent *a);
/* logging/setLevel: the least severe level sent as notifications/message. */
void agent_set_log_level(struct agent *a, int level);
/* Records an entry of TYPE (gate_triggered, gate_resolved, ...) in this connection's workspace;
 * takes BODY. 0, or -EIO (no-op 0 without a trail). */
int agent_record(struct agent *a, const char *type, cJSON *body);

/* A held call (see approve) is decided: APPROVED runs it as if the tool needed no approval;
 * else it goes to the surface as it is, which refuses it in its own error shape. */
void agent_tool_release(struct agent *a, const cJSON *id, const char *tool, const cJSON *args,
                        bool approved);
/* Whether A's config holds calls for approval (dispatch.c). */
int agent_hold_for_approval(struct agent *a, const cJSON *id, const char *tool, const cJSON *args);

#endif
