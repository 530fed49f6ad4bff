/* tools/tool.h: the tool surfaces an agent may speak (wap, file, voltagent, kward), each a
 * table of seed tool names over the shared broker operations (tools/broker/). The surface
 * functions are pure with respect to the process: no globals, thread-safe, so the supervisor
 * may run a call on a worker thread and keep its event loop free. They never see a host path
 * from the agent: every path is resolved beneath ctx->root_fd by the broker. */
#ifndef CORRAL_TOOL_H
#define CORRAL_TOOL_H

#include "common/util.h"
#include "sandbox/sandbox.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

struct tool_limits {
    uint64_t max_file_size;     /* readFile / writeFile cap (WAP seed default 1 MiB) */
    size_t max_search_results;  /* searchFiles cap */
    size_t max_explore_entries; /* exploreFiles cap */
    size_t max_output_bytes;    /* executeCommand stdout+stderr cap */
    double command_timeout_sec; /* executeCommand default timeout */
    double command_timeout_max; /* hard ceiling whatever the request says */
    const char *const *exclude; /* default exclusion patterns (NULL: the seed's) */
    size_t n_exclude;
    const char *embedding_command; /* voltagent search: external embedding (NULL: the local one) */
};

/* The policy's word on one tool (policy/ fills it; tools/ never reads a policy). A tool with
 * no rule is enabled, needs no approval and has no read-first rule. */
struct tool_rule {
    const char *name;       /* the seed's tool name */
    bool enabled;           /* false: not listed, and a call is refused */
    bool needs_approval;    /* held for an admin (refused while no highway can approve it) */
    bool read_before_write; /* a write to an existing file needs a fresh read first */
};

struct tool_session;

/* One served call's own controls, shared between the loop thread that serves the connection
 * and the worker thread that runs the call. */
/* One entry the call changed in the workspace, as it left it (the trail records these in the
 * call's end entry, and `corral run --resume` checks the files on disk against them). */
enum tool_change_kind {
    TOOL_CHANGE_FILE = 0, /* a regular file written: HASH and SIZE are its new content's */
    TOOL_CHANGE_DIR,      /* a directory made */
    TOOL_CHANGE_REMOVED,  /* the entry removed */
};
struct tool_change {
    char *path; /* workspace-relative, clean (no leading '/') */
    enum tool_change_kind kind;
    char hash[65]; /* BLAKE2b-256 in hex, as checkpoint manifests have it; "" but for a file */
    uint64_t size;
};
#define TOOL_CHANGES_MAX 64 /* more in one call: recorded as unknown (changes_unknown) */

struct tool_call_ctl {
    int cancel_fd;                           /* becomes readable when the call is cancelled; -1: never */
    _Atomic unsigned long long output_bytes; /* a command's output so far (for progress) */
    /* Written by the worker running the call, read by the loop once it is done. */
    struct tool_change *changes;
    size_t n_changes;
    bool changes_unknown; /* a command ran (it may have changed anything), or over the maximum */
};

/* Notes that the call of CTL (NULL: none, nothing noted) left PATH as KIND; HASH for a file. */
void tool_changes_note(struct tool_call_ctl *ctl, const char *path, enum tool_change_kind kind,
                       const char *hash, uint64_t size);
void tool_changes_clear(struct tool_call_ctl *ctl);

/* A person's answer for a call the policy holds for approval (needs_approval). */
enum tool_approval {
    TOOL_APPROVAL_NONE = 0, /* nobody could be asked: the call is refused */
    TOOL_APPROVAL_GRANTED,  /* approved for this one call */
    TOOL_APPROVAL_DECLINED, /* the person said no */
};

struct tool_ctx {
    int root_fd;                /* O_PATH | O_DIRECTORY fd of the workspace root; caller owns it */
    const char *root_host_path; /* used only to bind the workspace into a command sandbox */
    struct tool_limits limits;
    bool read_only;                                /* writes refused (observer, read-only mode) */
    bool allow_commands;                           /* executeCommand permitted by the role */
    const struct sandbox_profile *command_profile; /* base profile of command sandboxes */
    const struct sandbox_child
        *cgroup_parent;            /* the agent's sandbox: command sandboxes nest in its cgroup */
    const struct tool_rule *rules; /* per-tool policy; NULL: every tool enabled, no rules */
    size_t n_rules;
    struct tool_session *session; /* this connection's memory (tools/session.h); NULL: none */
    /* With a trail: a command sandbox's seccomp listener is handed to this (from a worker
     * thread; it takes the fd in every case), so the command's denied system calls are recorded
     * like the agent's own (supervisor/listeners/handoff.h). NULL: the filter answers EPERM itself. */
    void (*adopt_listener)(void *data, const char *tag, int listener,
                           const struct sandbox_seccomp *rules);
    void *adopt_data;
    const char *adopt_tag; /* the workspace id the entries go to */
    /* Workspace-relative globs (policy protected_paths) no write may touch, matched on the
     * path as given and as the kernel resolved it (tools/broker/protect.h). */
    const char *const *protected_paths;
    size_t n_protected;
    uint64_t storage_bytes; /* the workspace's budget for its files' bytes; 0: none */
    /* network "proxy" (docs/egress.md): command sandboxes get egress listeners of their own
     * (egress_spec) and the proxy variables (egress_env, before the command's own env); the
     * listeners go to adopt_egress (from a worker thread; it takes the fds and the pidfd of the
     * command's sandbox in every case), whose proxies serve them until the sandbox ends
     * (supervisor/egress/hub.h). NULL: commands have no network. */
    const struct sandbox_egress *egress_spec;
    const char *const *egress_env;
    void (*adopt_egress)(void *data, int *fds, size_t n, int pidfd);
    void *egress_data;
    /* Per call (the connection copies the ctx for each call): NULL / NONE outside one. */
    struct tool_call_ctl *call;
    enum tool_approval approval;
};

/* The rule for TOOL, or NULL when the policy sets none. */
const struct tool_rule *tool_rule_find(const struct tool_ctx *ctx, const char *tool);
/* Whether TOOL may be listed and called (no rule: yes). */
bool tool_enabled(const struct tool_ctx *ctx, const char *tool);

void tool_limits_default(struct tool_limits *l);

/* What a tool does, for the policy (a role needs write authority for WRITE, command authority
 * for COMMAND) and for the gate (read-before-write applies to WRITE tools only). */
enum tool_kind {
    TOOL_KIND_READ = 0,
    TOOL_KIND_WRITE,
    TOOL_KIND_COMMAND,
};

/* One row of a surface's tool table: the one place a tool's name and kind are written. The
 * policy reads it (policy_surface_tools), the gate reads it (tools/gate.h), and test_gate
 * fails when a surface answers a tool the table does not list, or lists one it does not answer. */
struct tool_def {
    const char *name;
    enum tool_kind kind;
    bool read_first; /* read-before-write is on when the policy says nothing (the seed's default) */
};

struct tool_verdict;

/* A surface maps names and shapes; the rules are the gate's (tools/gate.h). Callers go through
 * tool_surface_list and tool_surface_call, never through list/run directly. */
struct tool_surface {
    const char *name;            /* "wap", "file", "voltagent", "kward" */
    const struct tool_def *defs; /* every tool of the surface, in tools/list order */
    size_t n_defs;
    /* The `tools` array of a tools/list result: name, description, inputSchema per tool.
     * Returns a new array owned by the caller. */
    cJSON *(*list)(const struct tool_ctx *ctx);
    /* Performs one call the gate allowed. Returns 0 with *result set (owned by caller): the
     * seed's response object on success, the seed's error object with *is_error = true on a
     * tool failure. Returns -ENOENT when TOOL is not a tool of this surface (JSON-RPC -32602). */
    int (*run)(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
               bool *is_error);
    /* The shape half of the gate: whether ARGS are well formed for TOOL (as run would accept
     * them), and for a WRITE tool the workspace file whose freshness the read-before-write
     * rule checks, as broker_path_clean names it (*rel, malloc'd). *rel is NULL when the tool
     * names no single file, or when run answers the call otherwise before that rule (a bad
     * path, containment, not a file: the seed's order). -1: malformed, so the gate leaves the
     * call to run, which answers its own argument error and acts on nothing; 0: well formed;
     * -ENOMEM. */
    int (*target)(const struct tool_ctx *ctx, const char *tool, const cJSON *args, char **rel);
    /* The gate's refusal in the surface's own error shape (an error result, owned by caller;
     * NULL: out of memory). */
    cJSON *(*refuse)(struct tool_ctx *ctx, const char *tool, const struct tool_verdict *v);
    /* When an error RESULT of call is a refusal by the rules (containment, read-only, read
     * first, approval), the rule in a few words, for the trail's denial entry; NULL when it is
     * an ordinary failure (missing file, bad argument). NULL function: the WAP/File Tools codes. */
    const char *(*denial)(const cJSON *result);
};

/* The row of TOOL in the surface's table, or NULL. */
const struct tool_def *tool_surface_def(const struct tool_surface *s, const char *tool);
/* The surface's tools/list array without the tools the policy disables (tools/gate.c). */
cJSON *tool_surface_list(const struct tool_surface *s, const struct tool_ctx *ctx);
/* One tools/call: the gate (tools/gate.h), then the surface's run when the gate allows it, or
 * the surface's refusal (*is_error = true) when it does not. Same returns as run; -EPERM for a
 * tool the policy disables (the caller answers that at the protocol level, dispatch.c). */
int tool_surface_call(const struct tool_surface *s, struct tool_ctx *ctx, const char *tool,
                      const cJSON *args, cJSON **result, bool *is_error);

/* The surface of that name, or NULL. */
const struct tool_surface *tool_surface_find(const char *name);

#endif
