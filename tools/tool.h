/* tools/tool.h: the tool surfaces an agent may speak (wap, file, voltagent, kward), each a
 * table of seed tool names over the shared broker operations (tools/broker_*.c). The surface
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
    uint64_t max_file_size;      /* readFile / writeFile cap (WAP seed default 1 MiB) */
    size_t max_search_results;   /* searchFiles cap */
    size_t max_explore_entries;  /* exploreFiles cap */
    size_t max_output_bytes;     /* executeCommand stdout+stderr cap */
    double command_timeout_sec;  /* executeCommand default timeout */
    double command_timeout_max;  /* hard ceiling whatever the request says */
    const char *const *exclude;  /* default exclusion patterns (NULL: the seed's) */
    size_t n_exclude;
};

struct tool_ctx {
    int root_fd;                  /* O_PATH | O_DIRECTORY fd of the workspace root; caller owns it */
    const char *root_host_path;   /* used only to bind the workspace into a command sandbox */
    struct tool_limits limits;
    bool read_only;               /* writes refused (observer, read-only mode) */
    bool allow_commands;          /* executeCommand permitted by the role */
    const struct sandbox_profile *command_profile; /* base profile of command sandboxes */
    const struct sandbox_child *cgroup_parent; /* the agent's sandbox: command sandboxes nest in its cgroup */
};

void tool_limits_default(struct tool_limits *l);

struct tool_surface {
    const char *name; /* "wap", "file", "voltagent", "kward" */
    /* The `tools` array of a tools/list result: name, description, inputSchema per tool.
     * Returns a new array owned by the caller. */
    cJSON *(*list)(const struct tool_ctx *ctx);
    /* Performs one call. Returns 0 with *result set (owned by caller): the seed's response object
     * on success, the seed's error object with *is_error = true on a tool failure.
     * Returns -ENOENT when TOOL is not a tool of this surface (JSON-RPC -32602). */
    int (*call)(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                bool *is_error);
};

/* The surface of that name, or NULL. */
const struct tool_surface *tool_surface_find(const char *name);

#endif
