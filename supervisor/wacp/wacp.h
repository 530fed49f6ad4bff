/* supervisor/wacp/wacp.h: the WACP runtime's model of one run (Level 1, Core): the workspace tree
 * and its state machine, envelopes with port rights and redelivery, signals, checkpoints, tasks
 * and integration. It owns no process and no fd: the run (supervisor/runtime/run.c) gives it hooks to
 * record trail entries, start and stop agents, and notify them, and calls in with what agents
 * ask (wacp_call), with agent ends, and with the clock (wacp_tick). Single-threaded: the loop
 * thread only. Everything an agent sends is hostile and checked (role, permission matrix, port
 * rights, workspace state) before anything happens; the entry is recorded first (write-ahead).
 *
 * Files: each workspace has a host directory of its own (its working memory). The root's is the
 * run's workspace directory; a child's is a copy of its parent's taken at creation, under
 * RUN_DIR/ws/ID. Checkpoints snapshot files by content hash into RUN_DIR/objects/; integration
 * applies a checkpoint's files to the parent's directory (direct, or layered with
 * content_overlap detection against the child's base). */
#ifndef CORRAL_WACP_H
#define CORRAL_WACP_H

#include "common/util.h"
#include "policy/policy.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

struct wacp;
struct wacp_err;

/* What a newly created workspace needs from the run to exist as a process. All strings live as
 * long as the workspace. */
struct wacp_ws_info {
    const char *id;
    const char *parent; /* NULL for the root */
    const char *agent;  /* the policy's agent name */
    const char *role;   /* the role name */
    const char *dir;    /* host directory of its files */
    const char *owner, *originator;
    struct policy_budgets budgets; /* never above the parent's */
    double wall_elapsed;           /* seconds of its wall_time spent before a recovery (else 0) */
    bool recovered;                /* started again by `corral run --resume` */
    int64_t last_activity_us;      /* recovered: its agent's last activity in the trail (0: none) */
};

/* The hooks are called from inside the model's calls (wacp_call, wacp_start, wacp_tick, ...)
 * and must not call back into it. */
struct wacp_hooks {
    void *data;
    /* Stages one trail entry (write-ahead: called before the state changes). WS may be NULL (a
     * run-level entry: task approval). BODY borrowed, may be NULL ({}). ACTOR: a role name,
     * "protocol", "system" or a user id. 0, or < 0 when
     * the trail cannot take it: the engine then abandons the operation with nothing changed
     * and the call fails with "the trail cannot be written". */
    int (*record)(void *data, const char *ws, const char *actor, const char *type, const cJSON *body);
    /* Starts the agent of a new workspace. < 0 with ERR set: the workspace fails
     * (idle -> failed, reason "creation_error") and the caller is told why. */
    int (*start)(void *data, const struct wacp_ws_info *ws, struct cerr *err);
    /* The workspace is terminal (closed, failed): its agent is to be stopped (killed when it
     * does not end by itself). Called once per workspace. */
    void (*stop)(void *data, const char *ws, const char *why);
    /* Sends a notification (method, params taken) to the agent of WS; the run releases it
     * after this turn's commit. A workspace whose agent is gone just drops it (0). */
    int (*notify)(void *data, const char *ws, const char *method, cJSON *params);
    /* wacp/trail.query: appends to ENTRIES (a JSON array) the committed entries of WS (NULL:
     * every workspace) of TYPE (NULL: any), at most LIMIT. The model checked the caller's scope.
     * < 0 with ERR: the trail cannot be read. May be NULL: the method is then unknown. */
    int (*trail_query)(void *data, const char *ws, const char *type, uint64_t limit, cJSON *entries,
                       struct cerr *err);
    /* The answer to a request wacp_call_ref deferred (WACP_DEFERRED: it waited on a gate):
     * RESULT (taken) on success, else E. May be NULL: gated requests are then refused. */
    void (*reply)(void *data, const char *ws, uint64_t call_ref, cJSON *result,
                  const struct wacp_err *e);
    /* Commits what is staged now (before an effect the trail must already hold, as the first
     * byte integration writes into a parent's files). NULL: entries commit at the turn's end. */
    int (*commit)(void *data);
    /* semantic_contradiction (an `evaluated` integration by WS's agent), in two steps so that
     * the command runs off the loop. EVALUATOR, on the loop: what running the evaluator command
     * of WS's role takes (malloc'd, released with free()), NULL when the role names none
     * (nothing to detect). EVALUATE, on a worker thread (the pool): runs it with INPUT on its
     * stdin, in a command sandbox; *OUT (malloc'd) gets its stdout. 0: it ran and exited 0;
     * < 0 with ERR: it could not run, failed, timed out or printed too much. Either may be
     * NULL: nothing is evaluated. */
    void *(*evaluator)(void *data, const char *ws);
    int (*evaluate)(void *handle, const char *input, char **out, size_t *out_len, struct cerr *err);
    /* Runs WORK(ARG) on a worker thread (the run's pool, where tool calls run), then DONE(ARG)
     * on the loop thread in a later turn: the model's file work (copies, snapshots,
     * integration's writes) off the loop. < 0: cannot (the model then does the work inline).
     * NULL: everything inline. */
    int (*offload)(void *data, void (*work)(void *arg), void (*done)(void *arg), void *arg);
};

struct wacp_opts {
    const struct policy *policy; /* borrowed; roles, agents, taxonomy */
    const char *run_dir;         /* state: ws/ID copies, objects/ (created if missing) */
    const char *root_dir;        /* the root workspace's files (the project) */
    const char *root_owner;      /* user id of the human who started the run */
    uint64_t redelivery_base_ms; /* ack timeout before redelivery k waits k * this (default 1000) */
    uint64_t max_workspaces;     /* per run (default 256): a flood of creations is refused */
    uint64_t max_envelopes;      /* undelivered per inbox (default 1024) */
    uint64_t max_payload;        /* bytes of one envelope or checkpoint payload (default 1 MiB) */
    uint64_t max_payload_total;  /* payload bytes the run keeps in all (default 256 MiB) */
};

int wacp_new(const struct wacp_opts *o, const struct wacp_hooks *h, struct wacp **out, struct cerr *err);
void wacp_free(struct wacp *w);
/* The root workspace's directory (DIR) as the model opened it in wacp_new (borrowed, valid until
 * wacp_free): an agent of the root is served this directory, not whatever its path names now. */
int wacp_root_fd(const struct wacp *w);

/* Creates the root workspace for AGENT (the policy's coordinator agent), originator "system",
 * and starts it. */
int wacp_start(struct wacp *w, const char *agent, struct cerr *err);

/* An error of wacp_call: a JSON-RPC code (-32602 bad params, -32001 denied, -32002 not
 * found, -32003 invalid state, -32004 limit, -32603 internal) and a stable code word
 * ("permission_denied", "no_send_right", "invalid_transition", "not_found", "cycle",
 * "chain_head_mismatch", "type_not_permitted", "limit", "trail_unavailable", ...) with one line
 * for a person. Denials are also recorded (a `denial` entry, kind "protocol"). */
struct wacp_err {
    int rpc_code;
    char code[48];
    char msg[400];
};
#define WACP_E_DENIED -32001
#define WACP_E_NOT_FOUND -32002
#define WACP_E_STATE -32003
#define WACP_E_LIMIT -32004

/* One request of the agent of workspace CALLER: METHOD is a "wacp/..." name (docs/protocol-wacp.md
 * lists them: signal.emit, envelope.send, envelope.ack, workspace.create, workspace.self,
 * workspace.list, workspace.abort, workspace.suspend, workspace.resume, workspace.transfer, rights.list,
 * rights.grant, rights.revoke, checkpoint.create, checkpoint.list, task.create, task.assign,
 * task.cancel, task.list, integrate, conflict.resolve, trail.query: the run reads the trail for it
 * through hooks.trail_query). PARAMS may be NULL ({}). 0 with *result
 * (owned by the caller), or < 0 with e filled (-ENOENT: no such method, e->rpc_code -32601). */
int wacp_call(struct wacp *w, const char *caller, const char *method, const cJSON *params,
              cJSON **result, struct wacp_err *e);

/* wacp_call for a caller that can wait: CALL_REF (not 0) names the request. WACP_DEFERRED: a
 * gate of the human highway holds it; hooks->reply answers it later with the same CALL_REF. */
#define WACP_DEFERRED 1
int wacp_call_ref(struct wacp *w, const char *caller, const char *method, const cJSON *params,
                  uint64_t call_ref, cJSON **result, struct wacp_err *e);

/* A tool call of WS under needs_approval waits for a person (the highway's tool_call gate): 1 it
 * waits (GATE_ID filled; DONE is called once, later, from the model's calls), 0 approved now
 * (the re-entry guard), < 0 refused (E). DONE's APPROVED: run it; else answer the refusal.
 * GATE_ID NULL: the model is being freed with the call still waiting: free DATA, nothing else. */
#define WACP_GATE_ID_LEN 48
typedef void (*wacp_tool_done_fn)(void *data, bool approved, const char *gate_id, const char *action,
                                  const char *actor);
int wacp_gate_tool(struct wacp *w, const char *ws, const char *tool, const cJSON *args,
                   wacp_tool_done_fn done, void *data, char gate_id[WACP_GATE_ID_LEN],
                   struct wacp_err *e);

/* A request of an authenticated person U (the control socket): OP gate.list, gate.show,
 * gate.approve, gate.reject, gate.modify, inject, escalations.list, escalations.respond,
 * whoami. What U may not do is refused and recorded (capability_denied). */
int wacp_human_call(struct wacp *w, const struct policy_user *u, const char *op, const cJSON *p,
                    cJSON **result, struct wacp_err *e);

/* Whether the workspace CALLER may read TARGET (itself, the coordinator everything, a
 * delegate its subtree, anyone what it was granted: wacp/visibility.grant). */
bool wacp_can_read(const struct wacp *w, const char *caller, const char *target);

/* The agent of WS has ended (exit, signal, killed for a budget): a workspace that is not yet
 * terminal fails with REASON ("agent_exited", "budget_exceeded:memory", "timeout", ...). */
void wacp_agent_ended(struct wacp *w, const char *ws, const char *reason);

/* The agent of WS exited by itself. CLEAN (status 0, no budget hit) after `complete`: its work
 * waits for its parent's integration (integrating or conflicted stay as they are); any other exit
 * is wacp_agent_ended with REASON. */
void wacp_agent_exited(struct wacp *w, const char *ws, bool clean, const char *reason);

/* Liveness: the agent of WS has been silent and idle for an interval. An active workspace goes
 * to blocked with REASON (recorded, and its parent gets a `blocked` signal); -EINVAL in any other
 * state, -EIO when it cannot be recorded. */
int wacp_agent_stalled(struct wacp *w, const char *ws, const char *reason);
/* ... and is busy again: a blocked workspace goes back to active (its parent gets `started`). */
int wacp_agent_stirred(struct wacp *w, const char *ws, const char *reason);

/* The state name of WS ("active", ...), NULL when there is no such workspace. */
const char *wacp_state_of(const struct wacp *w, const char *ws);

/* Time: the earliest deadline in CLOCK_MONOTONIC milliseconds (UINT64_MAX: none), and the
 * work due at NOW (redeliveries, workspace timeouts). */
uint64_t wacp_next_deadline(const struct wacp *w);
void wacp_tick(struct wacp *w, uint64_t now_ms);

/* ---- recovery (`corral run --resume`, WACP recovery spec 3; supervisor/wacp/restore.c) */

/* Feeds one committed trail entry of the dead run, in trail order, into a model made by wacp_new
 * and not started: workspaces (state, owner, parent, budgets, context, directive), checkpoints,
 * port rights and envelopes are rebuilt from what it records. Nothing is recorded, nothing
 * started. TS_US: the entry's timestamp. < 0 only when out of memory. */
int wacp_restore_entry(struct wacp *w, const char *type, const char *ws, int64_t ts_us,
                       const cJSON *body);

struct wacp_resume_stats {
    uint64_t workspaces_recovered, workspaces_failed, envelopes_redelivered, signals_requeued,
        timers_reconstructed;
};

/* After the last wacp_restore_entry, before wacp_resume: removes what the dead run's file jobs
 * left half done in the run directory (a workspace copy cut short, a snapshot's temporary
 * objects), so that nothing uses a half copy. Returns how many were removed. */
unsigned wacp_workspace_sweep(struct wacp *w);

/* After the last wacp_restore_entry: the timers as absolute deadlines from the recorded times
 * (NOW_US: the wall clock now), every live workspace's files checked against its last checkpoint
 * (a mismatch fails it), the agents of the live ones started again in fresh sandboxes and told
 * (wacp/recovered), envelopes not acknowledged delivered again. Records what changes. */
int wacp_resume(struct wacp *w, int64_t now_us, struct wacp_resume_stats *st, struct cerr *err);

/* The run is over: the root workspace is terminal. */
bool wacp_done(const struct wacp *w);
/* Fails every workspace that is not terminal (reason "run_ended"), children first. */
void wacp_shutdown(struct wacp *w, const char *reason);

/* The live tree for `corral ps`: [{id, parent, state, role, agent, owner, originator, task,
 * checkpoints, inbox, budgets}], parents before children. Owned by the caller. */
cJSON *wacp_tree_json(const struct wacp *w);
/* Counts for the end-of-run summary. */
struct wacp_summary {
    uint64_t workspaces, closed, failed, envelopes, signals, checkpoints, tasks, tasks_done,
        integrations, conflicts, denials;
};
void wacp_summary_get(const struct wacp *w, struct wacp_summary *s);

#endif
