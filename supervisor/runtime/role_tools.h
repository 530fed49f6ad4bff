/* supervisor/runtime/role_tools.h: the tool context of one agent, built from its role: the one
 * place `corral run` (each workspace's agent) and `corral exec --workspace` (its one agent)
 * turn a role's authority, limits and per-tool rules into a struct tool_ctx. */
#ifndef CORRAL_ROLE_TOOLS_H
#define CORRAL_ROLE_TOOLS_H

#include "policy/policy.h"
#include "tools/tool.h"

struct handoff;
struct egress_hub;

struct role_tools {
    struct tool_ctx ctx;
    struct tool_rule rules[POLICY_MAX_SURFACE_TOOLS]; /* what ctx.rules points to */
};

struct role_tools_opts {
    const struct policy_role_view *view;       /* borrowed; limits, rules, write, commands */
    int root_fd;                               /* the workspace root (borrowed) */
    const char *root_host_path;                /* borrowed: commands bind the workspace by it */
    const struct sandbox_child *cgroup_parent; /* the agent's sandbox: commands nest in it */
    struct tool_session *session;              /* borrowed; the connection's memory */
    struct handoff *denials; /* commands' seccomp listeners go here, recorded under TAG; NULL:
                              * the command's filter answers EPERM itself */
    const char *tag;
    /* Globs no write may touch (policy protected_paths); NULL: the default list (.git's
     * executable internals, tools/broker/protect.h). */
    const char *const *protected_paths;
    size_t n_protected;
    uint64_t storage_bytes;        /* the workspace's storage budget; 0: none */
    struct egress_hub *egress_hub; /* network "proxy": commands' egress listeners go here (hub.h) */
    const struct sandbox_egress *egress_spec;
};

/* Fills T; everything it points to is borrowed from O and must outlive it. */
void role_tools_init(struct role_tools *t, const struct role_tools_opts *o);

#endif
