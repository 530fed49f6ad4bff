/* policy/roles.c: the three WACP base roles (coordinator, worker, observer), their rows of the
 * permission matrix, their authority, and the ceiling no derived role may rise above. */
#include "policy/internal.h"

#include <string.h>

const char *const roles_signals[] = {
    "ready",     "started",      "blocked",    "checkpoint", "complete", "failed",
    "integrate", "acknowledged", "escalation", "suspend",    "migrate",
};
const size_t roles_n_signals = ARRAY_SIZE(roles_signals);

/* What an agent may be given to read beyond its own workspace (Roles spec 3, Taxonomy 3). */
const char *const roles_read_scopes[] = {
    "own_workspace",      "own_directive",  "own_local_trail",
    "assigned_workspace", "peer_workspace", "designated_workspaces",
    "designated_group",   "all_workspaces", "global_trail",
};
const size_t roles_n_read_scopes = ARRAY_SIZE(roles_read_scopes);

/* The coordinator's protocol-level actions (Roles spec 3): never granted by inheritance. */
const char *const roles_actions[] = {
    "create_workspace", "abort_workspace", "assign_roles",     "grant_delegate",
    "integrate",        "manage_budgets",  "grant_visibility", "configure_highway",
};
const size_t roles_n_actions = ARRAY_SIZE(roles_actions);

static const char *const coordinator_row[] = {
    "send:directive->worker",
    "send:feedback->worker",
    "receive:query<-worker",
    "emit:ready",
    "emit:started",
    "emit:failed",
    "emit:integrate",
    "emit:acknowledged",
    "read:all_workspaces",
    "read:global_trail",
    "create_workspace",
    "abort_workspace",
    "assign_roles",
    "grant_delegate",
    "integrate",
    "manage_budgets",
    "grant_visibility",
    "configure_highway",
};
static const char *const worker_row[] = {
    "send:query->coordinator",
    "receive:directive<-coordinator",
    "receive:feedback<-coordinator",
    "emit:ready",
    "emit:started",
    "emit:blocked",
    "emit:checkpoint",
    "emit:complete",
    "emit:failed",
    "emit:escalation",
    "create:artifact",
    "read:own_workspace",
    "read:own_directive",
    "read:own_local_trail",
};
static const char *const observer_row[] = {
    "emit:ready",
    "emit:started",
    "emit:complete",
    "emit:failed",
    "emit:escalation",
    "create:observation",
    "read:designated_workspaces",
    "read:own_local_trail",
};

const char *policy_base_name(enum policy_base b)
{
    switch (b) {
    case POLICY_BASE_COORDINATOR: return "coordinator";
    case POLICY_BASE_WORKER: return "worker";
    case POLICY_BASE_OBSERVER: return "observer";
    }
    return "?";
}

struct policy_authority roles_authority_ceiling(enum policy_base b)
{
    switch (b) {
    case POLICY_BASE_COORDINATOR: /* orchestrates, modifies no workspace directly */
        return (struct policy_authority){.write = false, .commands = false, .network = true};
    case POLICY_BASE_WORKER:
        return (struct policy_authority){.write = true, .commands = true, .network = true};
    case POLICY_BASE_OBSERVER: /* read-only by definition */
        return (struct policy_authority){.write = false, .commands = false, .network = true};
    }
    return (struct policy_authority){0};
}

void roles_base_init(struct policy_role *r, enum policy_base b)
{
    const char *const *row;
    size_t n;
    switch (b) {
    case POLICY_BASE_COORDINATOR:
        row = coordinator_row;
        n = ARRAY_SIZE(coordinator_row);
        break;
    case POLICY_BASE_WORKER:
        row = worker_row;
        n = ARRAY_SIZE(worker_row);
        break;
    default:
        row = observer_row;
        n = ARRAY_SIZE(observer_row);
        break;
    }
    r->name = policy_base_name(b);
    r->base = b;
    r->derived = false;
    r->n_caps = n;
    for (size_t i = 0; i < n; i++)
        r->caps[i].text = row[i];
    /* Safe by default: workers write their own workspace but run no commands and have no
     * network until a policy says so. */
    r->authority = (struct policy_authority){.write = b == POLICY_BASE_WORKER};
}

static bool in_list(const char *s, size_t len, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && !strncmp(list[i], s, len))
            return true;
    return false;
}

const char *roles_above_ceiling(enum policy_base b, const char *cap)
{
    if (b == POLICY_BASE_COORDINATOR)
        return NULL; /* the ceiling itself */
    if (in_list(cap, strlen(cap), roles_actions, roles_n_actions))
        return "a coordinator-level protocol action";
    if (!strncmp(cap, "send:", 5)) {
        if (b == POLICY_BASE_OBSERVER)
            return "observers send no envelopes";
        const char *type = cap + 5;
        size_t tl = strcspn(type, "-");
        if (in_list(type, tl, (const char *const[]){"directive", "feedback"}, 2))
            return "directives and feedback flow from the coordinator (or a delegate) only";
        return NULL;
    }
    if (!strncmp(cap, "receive:", 8)) {
        if (b == POLICY_BASE_OBSERVER)
            return "observers receive no envelopes";
        const char *type = cap + 8;
        if (!strncmp(type, "query<-", 7))
            return "queries are answered by the coordinator (or a delegate) only";
        return NULL;
    }
    if (!strncmp(cap, "emit:", 5)) {
        const char *sig = cap + 5;
        static const char *const worker_ok[] = {"ready",    "started", "blocked",   "checkpoint",
                                                "complete", "failed",  "escalation"};
        static const char *const observer_ok[] = {"ready", "started", "complete", "failed",
                                                  "escalation"};
        if (b == POLICY_BASE_WORKER && !in_list(sig, strlen(sig), worker_ok, ARRAY_SIZE(worker_ok)))
            return "workers emit only ready, started, blocked, checkpoint, complete, failed, escalation";
        if (b == POLICY_BASE_OBSERVER &&
            !in_list(sig, strlen(sig), observer_ok, ARRAY_SIZE(observer_ok)))
            return "observers emit only ready, started, complete, failed, escalation";
        return NULL;
    }
    if (!strncmp(cap, "create:", 7)) {
        if (b == POLICY_BASE_OBSERVER && !strcmp(cap + 7, "artifact"))
            return "observers produce no artifacts";
        return NULL;
    }
    if (!strncmp(cap, "read:", 5)) {
        if (!strcmp(cap + 5, "all_workspaces"))
            return "reading every workspace is the coordinator's view";
        if (b == POLICY_BASE_WORKER && !strcmp(cap + 5, "global_trail"))
            return "workers read their own local trail only";
        return NULL;
    }
    return "not a capability";
}
