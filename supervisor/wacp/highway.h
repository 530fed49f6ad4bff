/* supervisor/wacp/highway.h: the human highway's two waiting rooms (WACP human-highway spec,
 * sections 2.4, 3, 6): gates (a paused transition: approve / reject / modify by a person, a
 * fallback at its timeout, FIFO by trigger time, a re-entry guard against fallback loops,
 * resolution by the protocol when the subject goes away) and escalations (an agent that cannot
 * go on: envelope / abort / delegation by a person, routed by its owner's state, a fallback at
 * the timeout). It knows nothing of workspaces or processes: its caller (the WACP model) says
 * what is paused and is called back with the decision. Every change is recorded through the
 * RECORD hook first (write-ahead); a refused record changes nothing. Loop thread only. */
#ifndef CORRAL_WACP_HIGHWAY_H
#define CORRAL_WACP_HIGHWAY_H

#include "policy/policy.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#define HIGHWAY_ID_LEN 48
#define HIGHWAY_MAX_PENDING 4096      /* gates or escalations waiting at once: more are refused */
#define HIGHWAY_MAX_PENDING_PER_WS 16 /* escalations of one workspace waiting at once */
#define HIGHWAY_KEEP_RESOLVED 256     /* resolved ones kept for `corral gate show` */

/* The six WACP gate types (enum policy_gate order), and corral's own: a tool call under
 * needs_approval (tools are outside WACP; docs/highway.md). */
enum highway_type {
    HIGHWAY_TOOL_CALL = POLICY_GATE_COUNT,
    HIGHWAY_NTYPES,
};
const char *highway_type_name(int type);
int highway_type_parse(const char *name); /* -1: none */

enum highway_action {
    HIGHWAY_APPROVE = 0,
    HIGHWAY_REJECT,
    HIGHWAY_MODIFY,
    HIGHWAY_ESCALATE, /* fallback escalate_to_coordinator: the coordinator decides */
};
const char *highway_action_name(enum highway_action a);

struct highway_gate;
typedef void (*highway_gate_fn)(void *data, const struct highway_gate *g, enum highway_action a,
                                const cJSON *modifications);

struct highway_gate {
    char id[HIGHWAY_ID_LEN];
    int type;
    cJSON *subject;      /* owned: what the person decides on */
    char subject_id[72]; /* the guard's key (an id, or a hash of the subject) */
    char workspace[HIGHWAY_ID_LEN], task_ref[HIGHWAY_ID_LEN], graph_ref[HIGHWAY_ID_LEN];
    char requester[HIGHWAY_ID_LEN];  /* the workspace whose action is paused ("" the run) */
    uint64_t timestamp_ms;           /* wall clock at trigger */
    uint64_t opened_ms, deadline_ms; /* monotonic; deadline 0: waits for ever */
    double timeout;                  /* seconds, 0: none */
    enum policy_fallback fallback;
    size_t queue_position; /* gates pending ahead of it at trigger */
    bool pending;
    enum highway_action action;
    char actor[80]; /* user id, "fallback" or "protocol" once resolved */
    char reason[48];
    highway_gate_fn fn;
    void *fn_data;
    void (*drop)(void *fn_data); /* frees FN_DATA of a gate still pending at highway_free */
};

struct highway_escalation;
enum highway_response { HIGHWAY_RESP_ENVELOPE = 0, HIGHWAY_RESP_ABORT, HIGHWAY_RESP_DELEGATION };
const char *highway_response_name(enum highway_response r);
int highway_response_parse(const char *name);
typedef void (*highway_esc_fn)(void *data, const struct highway_escalation *x, enum highway_response r,
                               const cJSON *payload);

struct highway_escalation {
    char id[HIGHWAY_ID_LEN]; /* the escalation signal's id */
    char workspace[HIGHWAY_ID_LEN];
    char owner[80]; /* the user it is routed to */
    char *reason;
    uint64_t timestamp_ms, opened_ms, deadline_ms;
    double timeout;
    enum policy_fallback fallback; /* approve | reject | delegate_to_coordinator */
    bool pending, queued;          /* queued: its owner is suspended or blocked */
    enum highway_response response;
    char actor[80];
    char response_ref[HIGHWAY_ID_LEN];
    highway_esc_fn fn;
    void *fn_data;
};

struct highway_hooks {
    void *data;
    /* As struct wacp_hooks.record: stages one trail entry; < 0 when the trail cannot take it. */
    int (*record)(void *data, const char *ws, const char *actor, const char *type, const cJSON *body);
};

struct highway;
int highway_new(const struct highway_hooks *h, struct highway **out);
void highway_free(struct highway *h);

/* What pauses: the subject (borrowed, copied), its guard key (NULL: a hash of SUBJECT), the
 * context ids (NULL or ""), the rule (timeout in seconds, 0 none; fallback), whether the one who
 * asks is the coordinator (only its re-trigger of a subject that fell through to it is
 * converted: section 6.1), and the callback run once at resolution. */
struct highway_gate_req {
    int type;
    const cJSON *subject;
    const char *subject_id;
    const char *workspace, *task_ref, *graph_ref, *requester;
    double timeout;
    enum policy_fallback fallback;
    bool by_coordinator;
    highway_gate_fn fn;
    void *fn_data;
    void (*drop)(void *fn_data); /* may be NULL */
    uint64_t now_ms, wall_ms;
};
/* 1: the gate is open and pending (*out, owned by the highway; FN runs later). 0: the re-entry
 * guard converted it to an approval (gate_reentry_blocked recorded; FN not called; the caller
 * proceeds). -EIO: the trail refused (nothing open); -EAGAIN: too many pending; -ENOMEM. */
int highway_gate_open(struct highway *h, const struct highway_gate_req *r, struct highway_gate **out);
/* A gate a dead supervisor had open (`corral run --resume`): as highway_gate_open, but with the
 * recorded ID and trigger time (R's wall_ms), DEADLINE_MS absolute on R's now_ms clock (one
 * already passed fires at the next highway_tick), no guard check and nothing recorded: its
 * gate_triggered is in the trail. 1 and *OUT, or -EINVAL (a bad or known id), -EAGAIN, -ENOMEM. */
int highway_gate_restore(struct highway *h, const struct highway_gate_req *r, const char *id,
                         uint64_t deadline_ms, struct highway_gate **out);
/* A recovery: the re-entry guard's key of a gate the dead run resolved `escalate` (its
 * gate_resolved), so the coordinator's identical re-request is still its own decision. */
void highway_guard_restore(struct highway *h, int type, const char *subject_id);
/* The guard key of a subject with no id of its own: a hash of its canonical JSON text. */
void highway_subject_key(const cJSON *subject, char out[72]);
struct highway_gate *highway_gate_find(struct highway *h, const char *id);
/* The oldest pending gate (FIFO head), or NULL. */
struct highway_gate *highway_gate_head(struct highway *h);
/* A person's (or the protocol's) decision on a pending gate: records gate_resolved (and, for
 * the fallback, gate_timeout before it) and calls its FN. MODIFICATIONS borrowed (modify only).
 * -ENOENT no such gate, -EALREADY resolved, -EIO the trail refused (still pending). */
int highway_gate_resolve(struct highway *h, struct highway_gate *g, enum highway_action a,
                         const cJSON *modifications, const char *actor, const char *reason,
                         uint64_t now_ms);
/* Resolves every pending gate about WORKSPACE or TASK (either may be NULL) with reject, actor
 * "protocol", reason subject_invalidated (section 6.5). */
void highway_invalidate(struct highway *h, const char *workspace, const char *task, uint64_t now_ms);

/* Escalations. OWNER_STATE: "active", "suspended", "blocked" or "deactivated". 1 pending (or
 * queued), 0 rejected (deactivated owner: capability_denied recorded; the caller hands it to
 * the coordinator), < 0 trail/limit errors as above. */
struct highway_esc_req {
    const char *signal_id, *workspace, *reason, *owner, *owner_state;
    double timeout;
    enum policy_fallback fallback;
    highway_esc_fn fn;
    void *fn_data;
    uint64_t now_ms, wall_ms;
};
int highway_esc_open(struct highway *h, const struct highway_esc_req *r,
                     struct highway_escalation **out);
/* An escalation a dead supervisor had open (`corral run --resume`): as highway_esc_open with
 * R's signal id and times, QUEUED as recorded, DEADLINE_MS absolute on R's now_ms clock, nothing
 * recorded. 1 and *OUT, or -EINVAL (a bad or known id), -EAGAIN, -ENOMEM. */
int highway_esc_restore(struct highway *h, const struct highway_esc_req *r, bool queued,
                        uint64_t deadline_ms, struct highway_escalation **out);
struct highway_escalation *highway_esc_find(struct highway *h, const char *id);
/* A person's answer: records escalation_resolved then calls FN. REF: the response envelope's id
 * (envelope only; may be NULL). PAYLOAD borrowed. */
int highway_esc_respond(struct highway *h, struct highway_escalation *x, enum highway_response r,
                        const cJSON *payload, const char *ref, const char *actor, uint64_t now_ms);
/* The owner came back (active): queued escalations of OWNER are delivered (no longer queued). */
void highway_esc_owner_active(struct highway *h, const char *owner);
void highway_esc_invalidate(struct highway *h, const char *workspace, uint64_t now_ms);

/* Timeouts due at NOW (FIFO order), and the earliest deadline (UINT64_MAX: none). */
void highway_tick(struct highway *h, uint64_t now_ms);
uint64_t highway_next_deadline(const struct highway *h);

/* For the CLI: gates (pending first, FIFO; with `all` the kept resolved ones too) and one gate
 * with its subject, with the seconds left at NOW. Owned by the caller. */
cJSON *highway_gates_json(const struct highway *h, bool all, uint64_t now_ms);
cJSON *highway_gate_json(const struct highway_gate *g, bool with_subject, uint64_t now_ms);
cJSON *highway_escs_json(const struct highway *h, bool all, uint64_t now_ms);
size_t highway_pending(const struct highway *h);

#endif
