/* supervisor/wacp/internal.h: what the WACP model's modules share (methods.c, workspace.c,
 * envelope.c, signal.c, checkpoint.c, task.c, files.c). */
#ifndef CORRAL_WACP_INTERNAL_H
#define CORRAL_WACP_INTERNAL_H

#include "common/rate.h"
#include "supervisor/wacp/wacp.h"
#include "tools/broker/protect.h"

#include <stdio.h>

#define WACP_ID_LEN 40          /* "ws-" + 32 hex + NUL, with room */
#define WACP_HASH_HEX 65        /* BLAKE2b-256 in hex + NUL */
#define WACP_MAX_CHECKPOINTS 1024   /* per workspace */
#define WACP_MAX_TASKS 4096         /* per run */
#define WACP_MAX_RIGHTS 65536       /* per run */
#define WACP_MAX_ENVELOPES_TOTAL 65536 /* per run: lookups are linear */
#define WACP_REDELIVERIES 3         /* protocol constant: 4 attempts in all */

enum wacp_rate { WACP_RATE_NONE = 0, WACP_RATE_SIGNALS, WACP_RATE_ENVELOPES, WACP_RATE_CHECKPOINTS, WACP_RATE_N };

struct wacpf_rules {
    const char *const *protected_paths; /* globs (tools/broker/protect.h) */
    size_t n_protected;
};

enum ws_state {
    WS_IDLE = 0,
    WS_ACTIVE,
    WS_BLOCKED,
    WS_MIGRATING,
    WS_SUSPENDED,
    WS_INTEGRATING,
    WS_CONFLICTED,
    WS_CLOSED,
    WS_FAILED,
    WS_NSTATES,
};
#define WS_BIT(s) (1u << (s))
#define WS_LIVE_MASK (WS_BIT(WS_IDLE) | WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED) | \
                      WS_BIT(WS_MIGRATING) | WS_BIT(WS_SUSPENDED) | WS_BIT(WS_INTEGRATING) | \
                      WS_BIT(WS_CONFLICTED))
#define WS_WORKING_MASK (WS_BIT(WS_IDLE) | WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED))

/* One file of a manifest: HASH empty for a file the workspace deleted since its base. */
struct wacp_file {
    char *path;
    char hash[WACP_HASH_HEX];
    uint64_t size;
    unsigned mode; /* permission bits in the workspace's copy (0: unknown) */
};
struct wacp_manifest {
    struct wacp_file *v;
    size_t n, cap;
};

struct wacp_checkpoint {
    char id[WACP_ID_LEN];
    char ws[WACP_ID_LEN];
    char *type, *intent, *status, *confidence;
    char parent[WACP_ID_LEN]; /* "" for the first */
    char *payload;            /* as JSON text (parsed only when shown); NULL: none */
    struct wacp_manifest files;
    char payload_hash[WACP_HASH_HEX];
    uint64_t timestamp_ms;
};

struct wacp_ws {
    char id[WACP_ID_LEN];
    struct wacp_ws *parent; /* NULL for the root; changes only by reparenting */
    char *agent, *role, *dir, *owner, *originator;
    struct policy_role_view view;
    enum ws_state state, saved; /* saved: where suspended / migrating return to */
    bool delegate;
    bool stopped;               /* hooks->stop was called */
    cJSON *directive, *context; /* immutable components 1 and 3 */
    char directive_env[WACP_ID_LEN];
    char task[WACP_ID_LEN];     /* "" when none */
    struct policy_budgets budgets;
    uint64_t created_ms, timeout_ms, deadline_ms; /* deadline 0: none */
    uint64_t suspended_at_ms;
    struct wacp_manifest base;  /* its files at creation (layered integration's base) */
    size_t n_checkpoints;       /* its chain: the last is the head */
    char head[WACP_ID_LEN];
    char final_cp[WACP_ID_LEN]; /* the most recent final checkpoint, "" when none */
    struct wacp_manifest conflicts; /* paths in conflict while conflicted */
    size_t inbox;               /* envelopes addressed to it not yet acknowledged */
    size_t queued;              /* of those, not yet notified (it was frozen) */
    struct rate_bucket rates[WACP_RATE_N]; /* policy rate_limits, per workspace */
    uint64_t rate_refused, rate_noted_ms;  /* refused since the last denial entry, and when */
    char end_reason[64];
};

enum env_state { ENV_CREATED = 0, ENV_VALIDATED, ENV_DELIVERED, ENV_ACKNOWLEDGED, ENV_REJECTED };

struct wacp_env {
    char id[WACP_ID_LEN];
    char from[WACP_ID_LEN], to[WACP_ID_LEN];
    char *type;
    char in_reply_to[WACP_ID_LEN];
    const char *priority;       /* static string */
    const char *origin;         /* "agent" or "human" */
    char *payload;              /* as JSON text: a parsed tree costs ~40x its bytes for a run */
    cJSON *rights;              /* the transferred rights, as the receiver sees them */
    enum env_state state;
    bool sent;                  /* notified at least once */
    bool undeliverable;
    unsigned attempt;           /* notifications made (1..4) */
    uint64_t timestamp_ms, due_ms;
};

enum right_kind { RIGHT_SEND = 0, RIGHT_SEND_ONCE, RIGHT_RECEIVE };
struct wacp_right {
    char id[WACP_ID_LEN];
    enum right_kind kind;
    char holder[WACP_ID_LEN], target[WACP_ID_LEN];
    bool live;
};

enum task_status {
    TASK_DRAFT = 0,
    TASK_PENDING,
    TASK_ASSIGNED,
    TASK_IN_PROGRESS,
    TASK_COMPLETED,
    TASK_FAILED,
    TASK_INTEGRATED,
    TASK_CANCELLED,
};
struct wacp_task {
    char id[WACP_ID_LEN];
    char *name, *description;
    char (*depends_on)[WACP_ID_LEN];
    size_t n_depends;
    char parent_task[WACP_ID_LEN];
    enum task_status status;
    char workspace_ref[WACP_ID_LEN];
    char (*history)[WACP_ID_LEN];
    size_t n_history;
    char checkpoint_ref[WACP_ID_LEN];
    uint64_t created_ms, approve_at_ms; /* approve_at 0: no approval timeout pending */
};

struct wacp {
    const struct policy *policy;
    struct wacp_hooks h;
    char *run_dir, *root_dir, *root_owner, *objects_dir;
    uint64_t redelivery_base_ms, max_workspaces, max_envelopes, max_payload;
    uint64_t max_payload_total, payload_total; /* the run's memory ceiling on kept payloads */
    struct policy_session session;
    struct wacpf_rules rules;   /* protected paths (the policy's, else the default list) */

    struct wacp_ws **ws;
    size_t n_ws, cap_ws;
    struct wacp_env **env;
    size_t n_env, cap_env;
    struct wacp_right *rights;
    size_t n_rights, cap_rights;
    struct wacp_checkpoint **cp;
    size_t n_cp, cap_cp;
    struct wacp_task **tasks;
    size_t n_tasks, cap_tasks;
    char graph[WACP_ID_LEN];    /* the run's one task graph, "" until its first task */
    struct wacp_summary sum;
};

/* ---- wacp.c: ids, time, records, errors, JSON helpers */
void wacp_new_id(const char *prefix, char out[WACP_ID_LEN]);
uint64_t wacp_now_ms(void);
uint64_t wacp_wall_ms(void);
/* Stages one entry; -EIO when the trail refuses (the caller changes nothing). BODY borrowed. */
int wacp_rec(struct wacp *w, const char *ws, const char *actor, const char *type, const cJSON *body);
/* Fills E and returns -1. */
int wacp_fail(struct wacp_err *e, int rpc, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A refusal by the rules: records a `denial` entry (kind "protocol") and fails E with it. */
int wacp_deny(struct wacp *w, const struct wacp_ws *caller, const char *method, struct wacp_err *e,
              int rpc, const char *code, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
int wacp_trail_err(struct wacp_err *e);
/* Whether the run may keep LEN more payload bytes (the run-wide ceiling); counts them if so. */
bool wacp_hold(struct wacp *w, size_t len);
bool wacp_grow(void **v, size_t *cap, size_t n, size_t elem);
/* A cJSON object {k: v, ...}; NULL on ENOMEM. */
cJSON *wacp_obj(void);
void wacp_add_str(cJSON *o, const char *k, const char *v); /* v NULL or "": null */
bool wacp_is_coordinator(const struct wacp_ws *ws);

/* ---- workspace.c */
const char *ws_state_name(enum ws_state s);
bool ws_transition_ok(enum ws_state from, enum ws_state to);
struct wacp_ws *ws_find(const struct wacp *w, const char *id);
struct wacp_ws *ws_root(const struct wacp *w);
bool ws_is_ancestor(const struct wacp_ws *a, const struct wacp_ws *d); /* a strictly above d */
/* Whether CALLER may see WS: the coordinator all, a delegate its subtree, others themselves. */
bool ws_visible(const struct wacp_ws *caller, const struct wacp_ws *ws);
/* Whether CALLER governs WS (abort, suspend, integrate): the coordinator any non-root, a
 * delegate its descendants. */
bool ws_governs(const struct wacp_ws *caller, const struct wacp_ws *ws);
/* Records (body gets from, to, reason) and applies one state change. For a terminal state it
 * also fails the children (cascade within ownership), updates the task and stops the agent. */
int ws_set_state(struct wacp *w, struct wacp_ws *ws, enum ws_state to, const char *actor,
                 const char *reason);
cJSON *ws_json(const struct wacp_ws *ws);
int ws_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_self(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_abort(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_suspend(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_resume(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_transfer(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_integrate(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_method_resolve(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int ws_create_root(struct wacp *w, const char *agent, struct cerr *err);
void ws_tick(struct wacp *w, uint64_t now);
uint64_t ws_next_deadline(const struct wacp *w);
void ws_free(struct wacp_ws *ws);

/* ---- envelope.c */
const char *env_state_name(enum env_state s);
/* Records and queues the directive of a new workspace from FROM (a workspace id, or "system"
 * for the root's), delivering at once. */
int env_send_directive(struct wacp *w, const char *from, struct wacp_ws *to, const cJSON *payload,
                       const char *origin, char id_out[WACP_ID_LEN]);
/* Delivers what is queued for WS in creation order (after resume, after creation). */
void env_flush(struct wacp *w, struct wacp_ws *ws);
/* WS is terminal: what is still undelivered to it is recorded undeliverable. */
void env_drop_for(struct wacp *w, struct wacp_ws *ws);
int env_right_add(struct wacp *w, enum right_kind kind, const char *holder, const char *target,
                  const char *by, char id_out[WACP_ID_LEN]);
bool env_channel_matrix(const struct wacp *w, const struct wacp_ws *from, const struct wacp_ws *to,
                        const char *type);
int env_method_send(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int env_method_ack(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int env_method_rights_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int env_method_rights_grant(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int env_method_rights_revoke(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
void env_tick(struct wacp *w, uint64_t now);
uint64_t env_next_deadline(const struct wacp *w);
void env_free(struct wacp_env *e);

/* ---- signal.c */
bool sig_known(const char *type);
/* Records signal_emitted for WS (actor ACTOR), then its delivery to the parent (signal_delivered
 * + notify of the parent's agent). TO overrides the recipient (the acknowledged signal goes to an
 * envelope's sender); NULL: WS's parent. */
int sig_emit(struct wacp *w, struct wacp_ws *ws, const char *actor, const char *type,
             const char *reason, const char *ref, struct wacp_ws *to, bool duplicate,
             char id_out[WACP_ID_LEN]);
int sig_method_emit(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);

/* ---- checkpoint.c */
struct wacp_checkpoint *cp_find(const struct wacp *w, const char *id);
cJSON *cp_json(const struct wacp_checkpoint *cp, bool with_files);
int cp_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int cp_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
void cp_free(struct wacp_checkpoint *cp);

/* ---- task.c */
const char *task_status_name(enum task_status s);
struct wacp_task *task_find(const struct wacp *w, const char *id);
/* Moves TASK to TO (recording task_status_changed, or the named EVENT instead). */
int task_set(struct wacp *w, struct wacp_task *t, enum task_status to, const char *event,
             const char *actor, const char *ws);
/* Binds TASK to a new workspace (pending -> assigned; failed -> pending -> assigned on retry). */
int task_bind(struct wacp *w, struct wacp_task *t, struct wacp_ws *ws, const char *actor);
/* The workspace WS reached state S: the bound task follows (PROTOCOL task spec 4). */
void task_follow(struct wacp *w, struct wacp_ws *ws, enum ws_state s);
void task_on_started(struct wacp *w, struct wacp_ws *ws);
int task_method_create(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int task_method_assign(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int task_method_list(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
int task_method_cancel(struct wacp *w, struct wacp_ws *c, const cJSON *p, cJSON **r, struct wacp_err *e);
void task_tick(struct wacp *w, uint64_t now);
uint64_t task_next_deadline(const struct wacp *w);
void task_free(struct wacp_task *t);

/* ---- files.c: the files of workspaces (host directories), never following links */
#define WACPF_MAX_FILES 20000
#define WACPF_MAX_BYTES (1ull << 30) /* per copy or snapshot */
#define WACPF_MAX_FILE (256ull << 20)
void wacpf_manifest_clear(struct wacp_manifest *m);
int wacpf_manifest_add(struct wacp_manifest *m, const char *path, const char *hash, uint64_t size);
const struct wacp_file *wacpf_manifest_get(const struct wacp_manifest *m, const char *path);
/* mkdir -p of an absolute host path the runtime made itself (RUN_DIR). */
int wacpf_mkdirs(const char *path, struct cerr *err);
/* Copies the regular files and directories of SRC into DST (created), skipping anything else,
 * bounded; fills BASE with the hashes of what was copied. */
int wacpf_copy_tree(const char *src, const char *dst, struct wacp_manifest *base, struct cerr *err);
/* Hashes every regular file under DIR. */
int wacpf_scan(const char *dir, struct wacp_manifest *out, struct cerr *err);
/* Snapshots PATHS (NULL: every file that differs from BASE, and the deletions) of DIR into
 * OBJECTS/HASH; fills OUT (sorted by path). */
int wacpf_snapshot(const char *dir, const char *const *paths, size_t n_paths,
                   const struct wacp_manifest *base, const char *objects, struct wacp_manifest *out,
                   struct cerr *err);
/* The paths of M whose copy in DIR differs from their hash in BASE (changed behind the child). */
int wacpf_overlaps(const char *dir, const struct wacp_manifest *m, const struct wacp_manifest *base,
                   struct wacp_manifest *out, struct cerr *err);
/* Applies M (from OBJECTS) to DIR, skipping the paths in SKIP (may be NULL). */
int wacpf_apply(const char *dir, const struct wacp_manifest *m, const struct wacp_manifest *skip,
                const char *objects, struct cerr *err);
/* The rules integration and checkpoints apply to paths (integrate_files.c). */
#define WACPF_MAX_DEPTH 64 /* directories a workspace may nest (the copy's walk stops there) */
/* Every path of M clean, no deeper than WACPF_MAX_DEPTH, not protected. */
int wacpf_check_paths(const struct wacp_manifest *m, const struct wacpf_rules *rules, struct cerr *err);
/* Integrates M (objects from OBJECTS, each verified by its hash) into DIR, minus SKIP; checks
 * everything before the first byte changes (see integrate_files.c). */
int wacpf_integrate(const char *dir, const struct wacp_manifest *m, const struct wacp_manifest *skip,
                    const char *objects, const struct wacpf_rules *rules, struct cerr *err);
/* Whether REL is a clean relative path (no "..", no "/" at either end, no empty parts). */
bool wacpf_path_ok(const char *rel);
void wacpf_hash_hex(const void *data, size_t len, char out[WACP_HASH_HEX]);
cJSON *wacpf_manifest_json(const struct wacp_manifest *m);

#endif
