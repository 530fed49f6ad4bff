/* sandbox/root.h: the minimal root (see root.c); internal to sandbox/. */
#ifndef CORRAL_SANDBOX_ROOT_H
#define CORRAL_SANDBOX_ROOT_H

#include "sandbox/internal.h"

struct root_entry {
    int fd;       /* detached mount tree, or -1 for a symlink */
    char *inside; /* absolute path inside the sandbox */
    char *link;   /* symlink target when this entry is a link */
    bool is_dir;
    bool writable;
};

struct root_plan {
    struct root_entry *e;
    size_t n, cap;
};

/* Parent side: every runtime path, device node, profile bind and the program (plus a script's
 * interpreter) as detached mounts. On failure nothing is left open. */
int root_plan_build(struct root_plan *plan, const struct sandbox_profile *p, const char *program,
                    struct cerr *err);
int root_plan_add_bind(struct root_plan *plan, const struct sandbox_profile *p, const char *host,
                       const char *inside, bool writable, bool optional, struct cerr *err);
void root_plan_free(struct root_plan *plan);

/* Child side (new mount namespace, privileged in its user namespace): build and pivot into it. */
int root_assemble(const struct root_plan *plan, const struct sandbox_profile *p, struct cerr *err);

#endif
