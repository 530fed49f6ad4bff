/* policy/policy.h: policy files (JSON with comments) turned into plain C structs: roles (the
 * three WACP base roles and derived roles), their authority, tool rights, budgets and the
 * sandbox profile derived from role and authority. See docs/policy.md for the file format. */
#ifndef CORRAL_POLICY_H
#define CORRAL_POLICY_H

#include "common/util.h"
#include "sandbox/sandbox.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct policy;

/* One problem found in a policy file, at FILE:LINE:COL (1-based; LINE 0 when not in the file). */
struct policy_diag {
    char *file;
    int line, col;
    char *message;
};
struct policy_diags {
    struct policy_diag *v;
    size_t n, cap;
};
/* Frees the diagnostics held (not the struct itself) and empties it. */
void policy_diags_free(struct policy_diags *d);
/* Prints each as "FILE:LINE:COL: message\n". */
void policy_diags_print(const struct policy_diags *d, FILE *f);

/* Loads and validates. Returns 0 with *out set (owned by the caller: policy_free), or -EINVAL
 * with every problem appended to diags, or another negative errno when the file cannot be read
 * (also with one diagnostic). */
int policy_load_file(const char *path, struct policy **out, struct policy_diags *diags);
/* The same from memory: NAME is used in messages; DATA need not be NUL-terminated. */
int policy_load_buffer(const char *name, const char *data, size_t len, struct policy **out,
                       struct policy_diags *diags);
/* The embedded default policy of `corral exec` without --policy: role "default". */
int policy_load_default(struct policy **out);
const char *policy_default_text(void);
void policy_free(struct policy *p);

enum policy_base {
    POLICY_BASE_COORDINATOR = 0,
    POLICY_BASE_WORKER,
    POLICY_BASE_OBSERVER,
};
const char *policy_base_name(enum policy_base b);

/* What a role may do to the world outside the protocol, frozen at creation like WACP authority. */
struct policy_authority {
    bool write;    /* change files of its own workspace (write tools, rw workspace in commands) */
    bool commands; /* run commands (command tools; execve after start in its own sandbox) */
    bool network;  /* IP sockets (sandbox.network may be "loopback"); otherwise AF_UNIX only */
};

/* One WACP capability of the permission matrix, canonical text form:
 *   "send:TYPE->ROLE" "receive:TYPE<-ROLE" "emit:SIGNAL" "create:CHECKPOINT_TYPE" "read:SCOPE"
 *   or a protocol action name ("create_workspace", "integrate", ...). */
struct policy_cap {
    const char *text;
};

struct policy_budgets {
    uint64_t memory;        /* bytes; 0: none */
    uint64_t pids;          /* 0: none */
    double cpus;            /* 0: none */
    double wall_time;       /* seconds; 0: none */
    uint64_t output_bytes;  /* stdout+stderr the agent may produce (recorded); 0: none */
    uint64_t storage_bytes; /* bytes the workspace may hold after writes; 0: none */
    /* seconds an agent may be silent on its pipe and use no CPU before the run records a
     * liveness_warning and tells the parent (advisory, WACP Workspace spec 6); 0: none */
    double liveness_interval;
    /* seconds the workspace may spend in `active` (WACP Workspace spec 6's compute_timeout:
     * time in blocked does not accrue); past it the workspace fails (budget_exceeded:compute_time)
     * and its agent is stopped; 0: none */
    double compute_time;
};

enum policy_tool_kind {
    POLICY_TOOL_READ = 0,
    POLICY_TOOL_WRITE,   /* changes workspace files: needs write authority */
    POLICY_TOOL_COMMAND, /* runs commands: needs command authority */
};

struct policy_tool_view {
    const char *name; /* the seed's tool name */
    enum policy_tool_kind kind;
    bool enabled;
    bool needs_approval;
    bool read_before_write;
};

/* Tool limits; 0 / NULL: the surface's own default (the seed's value). */
struct policy_tool_limits {
    uint64_t max_file_size;
    uint64_t max_search_results;
    uint64_t max_explore_entries;
    uint64_t max_output_bytes;
    double command_timeout;
    double command_timeout_max;
    const char *const *exclude; /* NULL: the seed's default exclusions */
    size_t n_exclude;
    const char *embedding_command; /* voltagent: external embedding for search; NULL: local */
    /* The judge of semantic_contradiction when this role integrates with the `evaluated`
     * strategy (docs/protocol-wacp.md); NULL: that type is not detected. */
    const char *evaluator_command;
};

/* The fully resolved profile of a role. Every pointer points into the policy and stays valid
 * while it lives; the view itself is a plain value the caller owns. */
struct policy_role_view {
    const char *name;
    const char *extends; /* the base role name of a derived role; NULL for a base role */
    enum policy_base base;
    const char *description; /* NULL when none */
    struct policy_authority authority;
    const struct policy_cap *caps; /* effective WACP capabilities: base, minus remove, plus add */
    size_t n_caps;
    const char *surface;                  /* "wap", "file", "voltagent", "kward" */
    const struct policy_tool_view *tools; /* every tool of the surface, in seed order */
    size_t n_tools;
    struct policy_tool_limits limits;
    struct policy_budgets budgets;
    struct sandbox_profile sandbox;     /* the agent's own sandbox, seccomp derived from authority */
    const struct egress_policy *egress; /* sandbox.egress (policy/egress.h): network "proxy" */
    /* The base profile of its command sandboxes (executeCommand & co.): the agent's, plus @exec.
     * Meaningful only with command authority; the workspace bind (rw only with write
     * authority) is the caller's to add. */
    struct sandbox_profile command_sandbox;
    /* Whether the agent itself may execve after it starts (command authority). */
    bool may_exec;
};

struct tool_limits;
/* Overrides the limits the policy sets (non-zero / non-NULL) in L, which the caller has filled
 * with tool_limits_default() first. */
void policy_tool_limits_apply(const struct policy_role_view *v, struct tool_limits *l);

struct tool_rule;
/* The role's per-tool rules (enabled, needs approval, read first) as the tool layer takes them:
 * fills at most CAP of OUT (pointers into the policy), returns how many. */
size_t policy_tool_rules_fill(const struct policy_role_view *v, struct tool_rule *out, size_t cap);
/* The most tools any surface has, so a caller can size an array for policy_tool_rules_fill. */
#define POLICY_MAX_SURFACE_TOOLS 32

/* Fills OUT with the resolved profile of ROLE. -ENOENT with a message naming the roles there are
 * when the policy has no such role. */
int policy_role_resolve(const struct policy *p, const char *role, struct policy_role_view *out,
                        struct cerr *err);
/* Whether ROLE holds a capability (canonical text, see struct policy_cap). */
bool policy_role_can(const struct policy_role_view *v, const char *cap);

/* Roles of the policy, base roles first, then derived roles in file order. */
size_t policy_role_count(const struct policy *p);
const char *policy_role_name(const struct policy *p, size_t i);

struct policy_agent {
    const char *name;
    const char *binary;      /* absolute, checked: a root-owned regular executable */
    const char *const *argv; /* argv[0] is the binary; NULL-terminated */
    size_t argc;
    const char *const *env; /* "KEY=VALUE", NULL-terminated */
    size_t n_env;
    const char *role;
};
size_t policy_agent_count(const struct policy *p);
const struct policy_agent *policy_agent_get(const struct policy *p, size_t i);
const struct policy_agent *policy_agent_find(const struct policy *p, const char *name);
/* The agent whose role is the coordinator (what `corral run` starts), or NULL. */
const struct policy_agent *policy_coordinator_agent(const struct policy *p);

/* The human highway of WACP: a preset and overrides. Gate order: enum policy_gate. */
enum policy_gate {
    POLICY_GATE_TASK_APPROVAL = 0,
    POLICY_GATE_WORKSPACE_CREATE,
    POLICY_GATE_ENVELOPE_DELIVERY,
    POLICY_GATE_INTEGRATION,
    POLICY_GATE_CONFLICT_RESOLUTION,
    POLICY_GATE_WORKSPACE_ABORT,
    POLICY_GATE_COUNT,
};
enum policy_fallback {
    POLICY_FALLBACK_APPROVE = 0,
    POLICY_FALLBACK_REJECT,
    POLICY_FALLBACK_ESCALATE, /* escalate_to_coordinator (gates) / delegate_to_coordinator */
};
struct policy_gate_rule {
    bool enabled;
    double timeout; /* seconds; 0: wait indefinitely */
    enum policy_fallback fallback;
};
struct policy_highway {
    const char *preset; /* "autonomous", "supervised" (default), "gated" */
    bool visibility;
    bool injection;
    struct policy_gate_rule gates[POLICY_GATE_COUNT];
    /* corral's own gate: a tool call under needs_approval (always on for such tools; its
     * timeout and fallback: gate_defaults, then gate_overrides.tool_call; default 300 s, reject) */
    struct policy_gate_rule tool_call;
    bool escalation;
    double escalation_timeout; /* 0: indefinitely */
    enum policy_fallback escalation_fallback;
};
const char *policy_gate_name(enum policy_gate g);
const char *policy_fallback_name(enum policy_fallback f);

/* A person the control socket knows by uid. The short form ("1000": "alice") may do
 * everything; the long form lists it: the gate types it decides (bit per enum policy_gate, and
 * POLICY_USER_APPROVE_TOOL), injection, whose escalations it answers, and its state. */
#define POLICY_USER_APPROVE_TOOL (1u << POLICY_GATE_COUNT)
#define POLICY_USER_APPROVE_ALL ((1u << (POLICY_GATE_COUNT + 1)) - 1)
enum policy_user_esc { POLICY_USER_ESC_OWN = 0, POLICY_USER_ESC_ALL, POLICY_USER_ESC_NONE };
struct policy_user {
    uid_t uid;
    const char *user_id;
    unsigned approve;
    bool inject;
    enum policy_user_esc escalations;
    const char *state; /* "active" (default), "suspended", "blocked", "deactivated" */
};

struct policy_session {
    const struct policy_highway *highway;
    const struct policy_user *users;
    size_t n_users;
    const char *trail_path;     /* NULL: the runtime's default */
    bool trail_durability_full; /* "full" (default): synchronous=FULL; "normal" */
    uint64_t max_message;       /* bytes of one JSON-RPC line (default 8 MiB) */
    /* Workspace-relative globs no agent writes and no integration carries; NULL when the
     * policy sets none (the runtime then applies its default list), possibly empty when set. */
    const char *const *protected_paths;
    size_t n_protected_paths;
    /* Per workspace, per second (0: no limit); bursts of 5 seconds' worth (at least 10). */
    struct policy_rates {
        uint32_t signals, envelopes, checkpoints, tool_calls;
    } rates;
    uint64_t max_workspaces; /* live and ended workspaces of one run (default 256) */
};
void policy_session_get(const struct policy *p, struct policy_session *out);
#define POLICY_DEFAULT_MAX_WORKSPACES 256
#define POLICY_MAX_MAX_WORKSPACES 100000

/* Prints what a reviewer of the policy needs to see about ROLE (every effective setting). */
int policy_role_print(const struct policy *p, const char *role, FILE *f, struct cerr *err);

/* The tools of a surface (the tool gate's table, tools/tool.h), for tests and `policy show`:
 * NULL when the surface is unknown. */
struct tool_def;
const struct tool_def *policy_surface_tools(const char *surface, size_t *n);

#endif
