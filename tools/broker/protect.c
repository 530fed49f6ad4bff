/* tools/broker/protect.c: matching protected paths (see protect.h). */
#include "tools/broker/protect.h"

#include "common/util.h"
#include "tools/broker/glob.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What git runs or is steered by when anyone runs git in the directory: its config (core.fsmonitor,
 * core.hooksPath, core.sshCommand, filter and diff drivers, aliases), hooks, the config and hooks of
 * submodules and linked worktrees, commondir, attributes; and a `.git` made anew (or removed), which
 * as a file may point git at a directory the agent wrote ("gitdir: ..."). "**" + "/" matches at any
 * depth, so a nested repository is covered too. */
const char *const broker_protected_default[] = {
    "**/.git",           "**/.git/config",       "**/.git/config.worktree", "**/.git/commondir",
    "**/.git/hooks",     "**/.git/hooks/**",     "**/.git/modules",         "**/.git/modules/**",
    "**/.git/worktrees", "**/.git/worktrees/**", "**/.git/info/attributes", NULL,
};

const char *broker_protected_match(const char *const *pat, size_t n, const char *rel)
{
    if (!rel || !*rel)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (glob_match(pat[i], rel))
            return pat[i];
    return NULL;
}

char *broker_resolved_rel(int root_fd, int dirfd)
{
    char a[64], b[64], root[PATH_MAX], dir[PATH_MAX];
    snprintf(a, sizeof(a), "/proc/self/fd/%d", root_fd);
    snprintf(b, sizeof(b), "/proc/self/fd/%d", dirfd);
    ssize_t n1 = readlink(a, root, sizeof(root) - 1), n2 = readlink(b, dir, sizeof(dir) - 1);
    if (n1 <= 0 || n2 <= 0)
        return NULL;
    root[n1] = dir[n2] = '\0';
    size_t rl = (size_t)n1;
    if (rl == 1) /* the root is "/" */
        return strdup(dir + 1);
    if (strncmp(dir, root, rl) || (dir[rl] && dir[rl] != '/'))
        return NULL;
    return strdup(dir[rl] ? dir + rl + 1 : "");
}
