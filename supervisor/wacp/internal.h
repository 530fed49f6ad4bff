/* supervisor/wacp/internal.h: the data model every WACP module shares (the run, its workspaces,
 * envelopes, rights, checkpoints and tasks). Functions are declared in each module's own header;
 * docs/architecture.md gives their layers. */
#ifndef CORRAL_WACP_INTERNAL_H
#define CORRAL_WACP_INTERNAL_H

#include "common/rate.h"
#include "supervisor/wacp/highway.h"
#include "supervisor/wacp/integrity.h"
#include "supervisor/wacp/wacp.h"
#include "tools/broker/protect.h"

#include <stdio.h>

#define WACP_ID_LEN 40                 /* "ws-" + 32 hex + NUL, with room */
#define WACP_HASH_HEX 65               /* BLAKE2b-256 in hex + NUL */
#define WACP_MAX_CHECKPOINTS 1024      /* per workspace */
#define WACP_MAX_TASKS 4096            /* per run */
#define WACP_MAX_RIGHTS 65536          /* per run */
#define WACP_MAX_ENVELOPES_TOTAL 65536 /* per run: lookups are linear */
#define WACP_REDELIVERIES 3            /* protocol constant: 4 attempts in all */
#define WACP_TRAIL_PAYLOAD_MAX (512u << 10) /* an envelope payload kept in its envelope_created entry */

enum wacp_rate {
    WACP_RATE_NONE = 0,
    WACP_RATE_SIGNALS,
    WACP_RATE_ENVELOPES,
    WACP_RATE_CHECKPOINTS,
    WACP_RATE_N
};

struct wacp_job; /* jobs.h */

struct wacp_files_rules {
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
#define WS_LIVE_MASK                                                                   \
    (WS_BIT(WS_IDLE) | WS_BIT(WS_ACTIVE) | WS_BIT(WS_BLOCKED) | WS_BIT(WS_MIGRATING) | \
     WS_BIT(WS_SUSPENDED) | WS_BIT(WS_INTEGRATING) | WS_BIT(WS_CONFLICTED))
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
    char mac[INTEGRITY_HEX]; /* the supervisor's proof over all of the above (integrity.h) */
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
    size_t held;                /* what their trees hold of the run's payload ceiling */
    char directive_env[WACP_ID_LEN];
    char task[WACP_ID_LEN]; /* "" when none */
    struct policy_budgets budgets;
    uint64_t created_ms, timeout_ms, deadline_ms; /* deadline 0: none */
    uint64_t suspended_at_ms;
    /* Compute time (workspace spec 6: wall time in active only), carried in every
     * workspace_state_changed entry so that it survives recovery (docs/protocol-wacp.md). */
    uint64_t active_ms, active_since_ms;
    struct wacp_manifest base; /* its files at creation (layered integration's base) */
    char base_hash[WACP_HASH_HEX]; /* BASE stored as an object (workspace_created.base) */
    size_t n_checkpoints;      /* its chain: the last is the head */
    char head[WACP_ID_LEN];
    char final_cp[WACP_ID_LEN];     /* the most recent final checkpoint, "" when none */
    struct wacp_manifest conflicts; /* paths in conflict while conflicted (size: the conflict type) */
    char conflict_strategy[12];     /* the integration strategy that found them */
    size_t inbox;                   /* envelopes addressed to it not yet acknowledged */
    size_t queued;                  /* of those, not yet notified (it was frozen) */
    char (*grants)[WACP_ID_LEN];    /* workspaces it was granted to read (add-only: PROTOCOL 6.8) */
    size_t n_grants;
    struct rate_bucket rates[WACP_RATE_N]; /* policy rate_limits, per workspace */
    uint64_t rate_refused, rate_noted_ms;  /* refused since the last denial entry, and when */
    char end_reason[64];
    int64_t created_us;     /* its workspace_created entry's time (recovery: timers from the trail) */
    /* Recovery: how the tool calls recorded after its last checkpoint left each path, in trail
     * order (hash; "" removed; WACP_FILES_IS_DIR a directory made); after a command (or an
     * integration into it) only what was recorded since that is known (files_unknown); a
     * call started and not ended at the crash (calls_open) may have changed anything. */
    struct wacp_manifest recorded;
    int64_t last_activity_us; /* recovery: its agent's last recorded activity (0: none) */
    int64_t active_from_us;   /* recovery: when it last went active */
    int64_t suspended_from_us, suspended_total_us; /* recovery: its pauses (timeout meter) */
    size_t recorded_compact; /* its size after its last compaction */
    bool files_unknown;
    unsigned calls_open;
    /* File work in flight on its directory (jobs.h): readers (a copy for a child, a snapshot)
     * share it; a writer (an integration into it) has it alone. */
    unsigned file_readers;
    bool file_writing;
};

enum env_state { ENV_CREATED = 0, ENV_VALIDATED, ENV_DELIVERED, ENV_ACKNOWLEDGED, ENV_REJECTED };

struct wacp_env {
    char id[WACP_ID_LEN];
    char from[WACP_ID_LEN], to[WACP_ID_LEN];
    char *type;
    char in_reply_to[WACP_ID_LEN];
    const char *priority; /* static string */
    const char *origin;   /* "agent" or "human" */
    char *payload;        /* as JSON text: a parsed tree costs ~40x its bytes for a run */
    cJSON *rights;        /* the transferred rights, as the receiver sees them */
    enum env_state state;
    bool sent; /* notified at least once */
    bool undeliverable;
    unsigned attempt; /* notifications made (1..4) */
    uint64_t timestamp_ms, due_ms;
    char *originator;        /* the injecting person's user id (origin human), else NULL */
    bool gated;              /* held by an envelope_delivery gate */
    bool payload_lost;       /* rebuilt by a resume without its payload (too large for the trail) */
    char mac[INTEGRITY_HEX]; /* the supervisor's proof over every field above (integrity.h) */
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

/* What a state change sets off above the tree (the task follows its workspace; a terminal
 * workspace's undelivered envelopes are dropped), set by the method table at wacp_new: the
 * tree does not call up into task.c or envelope.c. */
struct wacp_tree_hooks {
    void (*state_changed)(struct wacp *w, struct wacp_ws *ws, enum ws_state to);
};

struct wacp {
    const struct policy *policy;
    struct wacp_hooks h;
    struct wacp_tree_hooks tree_hooks;
    char *run_dir, *root_dir, *root_owner, *objects_dir;
    int root_fd; /* the root workspace's directory (DIR), opened once without links: the only
                  * way the model reaches it (a user owning a directory above DIR may swap it) */
    uint64_t redelivery_base_ms, max_workspaces, max_envelopes, max_payload;
    uint64_t max_payload_total, payload_total; /* the run's memory ceiling on kept payloads */
    struct policy_session session;
    struct wacp_files_rules rules; /* protected paths (the policy's, else the default list) */

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
    char graph[WACP_ID_LEN]; /* the run's one task graph, "" until its first task */
    struct wacp_summary sum;
    struct wacp_job *jobs; /* file work in flight or queued (jobs.h) */
    struct wacp_job *jobs_queue, *jobs_queue_tail;
    unsigned jobs_running;
    size_t pending_creates;   /* workspace copies in flight: they count toward max_workspaces */
    uint64_t call_ref;        /* the request being handled (wacp_call_ref), 0: it cannot wait */
    bool restore_files; /* recovery: the supervisor of the entries being fed records tool calls'
                         * files (its supervisor_started has tool_files) */
    struct highway *hw;       /* gates and escalations (highway.c; human.c decides) */
    struct integrity_key key; /* the run's MAC key: envelopes and checkpoints */
    bool gate_pass;           /* re-running a request a person approved */
    cJSON *restored_gates;    /* `--resume`: gate_triggered bodies not yet resolved (restore.c) */
    cJSON *restored_escs;     /* and escalation_received bodies not yet resolved */
    /* wacp_call_ref, handed down by the method table so that human.c re-runs an approved
     * request without calling up into it. */
    int (*rerun)(struct wacp *w, const char *caller, const char *method, const cJSON *params,
                 uint64_t call_ref, cJSON **result, struct wacp_err *e);
};

/* Whether gate TYPE (enum policy_gate, or HIGHWAY_TOOL_CALL) is on in this run's highway, with
 * its timeout and fallback. */
static inline bool wacp_gate_rule(const struct wacp *w, int type, double *timeout,
                                  enum policy_fallback *fb)
{
    const struct policy_highway *h = w->session.highway;
    if (!h)
        return false;
    const struct policy_gate_rule *g = type == HIGHWAY_TOOL_CALL ? &h->tool_call : &h->gates[type];
    *timeout = g->timeout;
    *fb = g->fallback;
    return type == HIGHWAY_TOOL_CALL || g->enabled;
}

#endif
