/* supervisor/runtime/serve.h: serve the tool protocol (JSON-RPC over the agent's stdin/stdout) to one
 * sandboxed agent for `corral exec --workspace DIR`, until the agent ends. */
#ifndef CORRAL_SERVE_H
#define CORRAL_SERVE_H

#include "common/util.h"
#include "sandbox/sandbox.h"
#include "policy/policy.h"
#include "supervisor/egress/setup.h"

struct trail;
struct listener;

struct serve_exec_opts {
    const char *workspace;               /* host directory served as the workspace root; NULL: no agent
                                   * to serve, the sandbox alone is supervised */
    const struct policy_role_view *view; /* the role: surface, limits, tool rules, write,
                                          * commands (supervisor/runtime/role_tools.h) */
    size_t max_message;                  /* bytes of one JSON-RPC line (default 8 MiB) */
    double timeout_sec;                  /* 0: none; on expiry the agent is killed and *timed_out set */
    struct trail *trail;                 /* NULL: no trail */
    const char *workspace_id;            /* the agent's workspace id in the trail (default "agent") */
    struct listener *notify; /* the sandbox's seccomp listener, answered on the loop; NULL: none */
    double sample_sec;       /* > 0: sample(sample_data) every this many seconds while the
                                   * sandbox runs; what it stages commits at the turn's end */
    void (*sample)(void *data);
    void *sample_data;
    struct egress_setup *egress;    /* network "proxy": the proxies run on the serving loop, and
                                     * the agent's command sandboxes get their own */
    struct egress_opts egress_opts; /* trail, workspace, actor for its entries */
    bool host; /* serve_host: an MCP host at the other end (agent_config.host) */
    /* Degraded mode (docs/trail.md): the trail could not be written, and now it can again
     * (system_degraded committed): the caller's own record may go on. NULL: nothing to do. */
    void (*trail_recovered)(void *data);
    void *trail_recovered_data;
};

/* to_agent: the write end of the agent's stdin; from_agent: the read end of its stdout (both
 * owned by the caller, set non-blocking here). Returns 0 once the agent's sandbox has ended
 * (the caller then calls sandbox_child_wait), or a negative code with err set. */
int serve_exec(const struct serve_exec_opts *o, struct sandbox_child *child, int to_agent,
               int from_agent, bool *timed_out, struct cerr *err);

/* corral mcp: the same connection with an MCP host at the other end of IN_FD / OUT_FD (corral's
 * own stdin and stdout) and no agent process; o->workspace is required. Returns 0 once the host
 * has closed its end (or a blocked SIGTERM / SIGINT / SIGHUP arrived) and no call is left
 * running, with *why saying which; or a negative code with err set. */
int serve_host(const struct serve_exec_opts *o, int in_fd, int out_fd, const char **why,
               struct cerr *err);

#endif
