/* tools/broker/protect.h: protected paths: workspace-relative globs (policy `protected_paths`)
 * naming files no agent may write and no integration may carry, by default the `.git` internals
 * git executes from (config, hooks, ...). Matched on the real path of what is written, after
 * symlinks inside the workspace are resolved, so a link to `.git` is no way around. */
#ifndef CORRAL_BROKER_PROTECT_H
#define CORRAL_BROKER_PROTECT_H

#include <stdbool.h>
#include <stddef.h>

/* The default list (NULL-terminated): what `protected_paths` is when a policy does not set it. */
extern const char *const broker_protected_default[];

/* The first of the N globs PAT (tools/broker/glob.h syntax) that REL ("a/b", no leading '/')
 * matches, or NULL. */
const char *broker_protected_match(const char *const *pat, size_t n, const char *rel);

/* The path of directory DIRFD relative to the workspace root ROOT_FD ("" for the root itself),
 * as the kernel resolved it, malloc'd; NULL when it is not beneath the root or on failure. */
char *broker_resolved_rel(int root_fd, int dirfd);

#endif
