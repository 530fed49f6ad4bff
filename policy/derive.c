/* policy/derive.c: a role and its authority turned into the sandbox profile, budgets and tool
 * rights of an agent, and `corral policy show`'s account of them. The seccomp filter is derived
 * here, never written per agent: a base set of groups, narrowed by what the role may do. */
#include "policy/internal.h"
#include "tools/tool.h"

#include <seccomp.h>
#include <string.h>

uint32_t derive_narrow_groups(enum policy_base b, const struct policy_authority *a, uint32_t groups)
{
    if (!a->commands)
        groups &= ~(uint32_t)SANDBOX_SC_EXEC; /* no execve once the program has started */
    if (b == POLICY_BASE_OBSERVER)
        groups &= ~(uint32_t)SANDBOX_SC_FILE_WRITE; /* not even in its own /tmp */
    return groups;
}

const struct policy_role *policy_role_find(const struct policy *p, const char *name)
{
    for (size_t i = 0; i < p->n_roles; i++)
        if (!strcmp(p->roles[i].name, name))
            return &p->roles[i];
    return NULL;
}

size_t policy_role_count(const struct policy *p)
{
    return p->n_roles;
}

const char *policy_role_name(const struct policy *p, size_t i)
{
    return i < p->n_roles ? p->roles[i].name : NULL;
}

int policy_role_resolve(const struct policy *p, const char *role, struct policy_role_view *out,
                        struct cerr *err)
{
    const struct policy_role *r = policy_role_find(p, role ? role : "");
    if (!r) {
        char list[512] = "";
        for (size_t i = 0; i < p->n_roles; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                     p->roles[i].name);
        return cerr_set(err, ENOENT, "the policy has no role '%s'; its roles are: %s",
                        role ? role : "(none)", list);
    }
    *out = (struct policy_role_view){
        .name = r->name,
        .extends = r->derived ? policy_base_name(r->base) : NULL,
        .base = r->base,
        .description = r->description,
        .authority = r->authority,
        .caps = r->caps,
        .n_caps = r->n_caps,
        .surface = r->surface,
        .tools = r->tools,
        .n_tools = r->n_tools,
        .limits = r->limits,
        .budgets = r->budgets,
        .may_exec = (r->groups & SANDBOX_SC_EXEC) != 0,
        .egress = &r->egress,
    };
    struct sandbox_profile *s = &out->sandbox;
    sandbox_profile_default(s);
    s->net = r->authority.network ? r->net : SANDBOX_NET_NONE;
    s->binds = r->binds;
    s->n_binds = r->n_binds;
    s->limits.memory = r->budgets.memory;
    s->limits.pids = r->budgets.pids;
    s->limits.cpus = r->budgets.cpus;
    s->limits.tmp_size = r->tmp_size;
    if (r->nofile)
        s->limits.nofile = r->nofile;
    s->seccomp = (struct sandbox_seccomp){
        .groups = r->groups,
        .allow = r->sc_allow,
        .n_allow = r->n_sc_allow,
        .deny = r->sc_deny,
        .n_deny = r->n_sc_deny,
        .network = r->authority.network,
    };
    s->landlock = r->landlock;
    s->uid = r->uid;
    s->gid = r->gid;
    out->command_sandbox = *s;
    if (r->authority.commands)
        out->command_sandbox.seccomp.groups |= SANDBOX_SC_EXEC | SANDBOX_SC_PROCESS;
    return 0;
}

void policy_tool_limits_apply(const struct policy_role_view *v, struct tool_limits *l)
{
    const struct policy_tool_limits *p = &v->limits;
    if (p->max_file_size)
        l->max_file_size = p->max_file_size;
    if (p->max_search_results)
        l->max_search_results = (size_t)p->max_search_results;
    if (p->max_explore_entries)
        l->max_explore_entries = (size_t)p->max_explore_entries;
    if (p->max_output_bytes)
        l->max_output_bytes = (size_t)p->max_output_bytes;
    if (p->command_timeout)
        l->command_timeout_sec = p->command_timeout;
    if (p->command_timeout_max)
        l->command_timeout_max = p->command_timeout_max;
    if (p->exclude) {
        l->exclude = p->exclude;
        l->n_exclude = p->n_exclude;
    }
    if (p->embedding_command)
        l->embedding_command = p->embedding_command;
}

size_t policy_tool_rules_fill(const struct policy_role_view *v, struct tool_rule *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n_tools && n < cap; i++, n++)
        out[n] = (struct tool_rule){.name = v->tools[i].name,
                                    .enabled = v->tools[i].enabled,
                                    .needs_approval = v->tools[i].needs_approval,
                                    .read_before_write = v->tools[i].read_before_write};
    return n;
}

bool policy_role_can(const struct policy_role_view *v, const char *cap)
{
    for (size_t i = 0; i < v->n_caps; i++)
        if (!strcmp(v->caps[i].text, cap))
            return true;
    return false;
}

size_t policy_agent_count(const struct policy *p)
{
    return p->n_agents;
}

const struct policy_agent *policy_agent_get(const struct policy *p, size_t i)
{
    return i < p->n_agents ? &p->agents[i] : NULL;
}

const struct policy_agent *policy_agent_find(const struct policy *p, const char *name)
{
    for (size_t i = 0; i < p->n_agents; i++)
        if (!strcmp(p->agents[i].name, name))
            return &p->agents[i];
    return NULL;
}

const struct policy_agent *policy_coordinator_agent(const struct policy *p)
{
    for (size_t i = 0; i < p->n_agents; i++) {
        const struct policy_role *r = policy_role_find(p, p->agents[i].role);
        if (r && r->base == POLICY_BASE_COORDINATOR)
            return &p->agents[i];
    }
    return NULL;
}

void policy_session_get(const struct policy *p, struct policy_session *out)
{
    *out = (struct policy_session){
        .highway = &p->highway,
        .users = p->users,
        .n_users = p->n_users,
        .trail_path = p->trail_path,
        .trail_durability_full = p->trail_full,
        .max_message = p->max_message,
        .protected_paths = (const char *const *)p->protected_paths,
        .n_protected_paths = p->n_protected_paths,
        .rates = p->rates,
        .max_workspaces = p->max_workspaces,
    };
}

/* ---- `corral policy show` */
static const char *size_str(uint64_t v, char *buf, size_t cap)
{
    static const char units[] = "KMGT";
    if (!v)
        return "none";
    int u = -1;
    uint64_t x = v;
    while (x % 1024 == 0 && u < 3) {
        x /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, cap, "%llu bytes", (unsigned long long)x);
    else
        snprintf(buf, cap, "%llu%ciB", (unsigned long long)x, units[u]);
    return buf;
}

static const char *secs_str(double v, char *buf, size_t cap)
{
    if (v <= 0)
        return "none";
    snprintf(buf, cap, "%gs", v);
    return buf;
}

/* Prints the always-denied list as the sandbox module holds it: every syscall of this
 * architecture for which sandbox_seccomp_always_denied() says yes. */
static void print_always_denied(FILE *f)
{
    size_t col = 0;
    for (int nr = 0; nr < 1024; nr++) {
        char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
        if (name && sandbox_seccomp_always_denied(name)) {
            if (col == 0)
                fprintf(f, "                 ");
            fprintf(f, "%s ", name);
            col += strlen(name) + 1;
            if (col > 64) {
                fprintf(f, "\n");
                col = 0;
            }
        }
        free(name);
    }
    if (col)
        fprintf(f, "\n");
}

int policy_role_print(const struct policy *p, const char *role, FILE *f, struct cerr *err)
{
    struct policy_role_view v;
    int r = policy_role_resolve(p, role, &v, err);
    if (r < 0)
        return r;
    char a[48], b[48];
    fprintf(f, "role %s\n", v.name);
    if (v.extends)
        fprintf(f, "  extends        %s (derived: base capabilities, minus remove, plus add)\n",
                v.extends);
    else
        fprintf(f, "  base role      %s (WACP base role)\n", policy_base_name(v.base));
    if (v.description)
        fprintf(f, "  description    %s\n", v.description);

    fprintf(f, "\nauthority\n");
    fprintf(f, "  write          %s\n", v.authority.write ? "yes (own workspace files)" : "no");
    fprintf(f, "  commands       %s\n", v.authority.commands ? "yes" : "no");
    fprintf(f, "  network        %s\n", v.authority.network ? "yes" : "no (AF_UNIX sockets only)");

    fprintf(f, "\ncapabilities (WACP permission matrix)\n");
    static const char *const kinds[] = {"send:", "receive:", "emit:", "create:", "read:"};
    static const char *const labels[] = {"send", "receive", "emit", "create", "read"};
    for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
        bool any = false;
        fprintf(f, "  %-14s", labels[k]);
        for (size_t i = 0; i < v.n_caps; i++)
            if (!strncmp(v.caps[i].text, kinds[k], strlen(kinds[k]))) {
                fprintf(f, "%s%s", any ? ", " : "", v.caps[i].text + strlen(kinds[k]));
                any = true;
            }
        fprintf(f, "%s\n", any ? "" : "-");
    }
    bool any = false;
    fprintf(f, "  %-14s", "actions");
    for (size_t i = 0; i < v.n_caps; i++)
        if (!strchr(v.caps[i].text, ':')) {
            fprintf(f, "%s%s", any ? ", " : "", v.caps[i].text);
            any = true;
        }
    fprintf(f, "%s\n", any ? "" : "-");

    fprintf(f, "\ntools (surface %s)\n", v.surface);
    for (size_t i = 0; i < v.n_tools; i++) {
        const struct policy_tool_view *t = &v.tools[i];
        const char *kind = t->kind == POLICY_TOOL_WRITE     ? "writes"
                           : t->kind == POLICY_TOOL_COMMAND ? "runs commands"
                                                            : "reads";
        fprintf(f, "  %-32s %-9s %s%s%s\n", t->name, t->enabled ? "enabled" : "disabled", kind,
                t->enabled && t->needs_approval ? "  needs approval" : "",
                t->enabled && t->read_before_write ? "  read before write" : "");
    }
    const struct policy_tool_limits *l = &v.limits;
    const char *dflt = "the surface's default";
    fprintf(f, "  limit max_file_size        %s\n",
            l->max_file_size ? size_str(l->max_file_size, a, sizeof(a)) : dflt);
    snprintf(b, sizeof(b), "%llu", (unsigned long long)l->max_search_results);
    fprintf(f, "  limit max_search_results   %s\n", l->max_search_results ? b : dflt);
    snprintf(b, sizeof(b), "%llu", (unsigned long long)l->max_explore_entries);
    fprintf(f, "  limit max_explore_entries  %s\n", l->max_explore_entries ? b : dflt);
    fprintf(f, "  limit max_output_bytes     %s\n",
            l->max_output_bytes ? size_str(l->max_output_bytes, a, sizeof(a)) : dflt);
    fprintf(f, "  limit command_timeout      %s\n",
            l->command_timeout ? secs_str(l->command_timeout, a, sizeof(a)) : dflt);
    fprintf(f, "  limit command_timeout_max  %s\n",
            l->command_timeout_max ? secs_str(l->command_timeout_max, a, sizeof(a)) : dflt);
    fprintf(f, "  exclude                    ");
    if (!l->exclude)
        fprintf(f, "the surface's default exclusions\n");
    for (size_t i = 0; l->exclude && i < l->n_exclude; i++)
        fprintf(f, "%s%s", i ? ", " : "", l->exclude[i]);
    if (l->exclude)
        fprintf(f, "%s\n", l->n_exclude ? "" : "none");
    if (l->embedding_command)
        fprintf(f, "  embedding_command          %s\n", l->embedding_command);
    if (l->evaluator_command)
        fprintf(f, "  evaluator_command          %s\n", l->evaluator_command);

    fprintf(f, "\nbudgets\n");
    fprintf(f, "  memory         %s\n", size_str(v.budgets.memory, a, sizeof(a)));
    fprintf(f, "  pids           %llu\n", (unsigned long long)v.budgets.pids);
    if (v.budgets.cpus > 0)
        fprintf(f, "  cpus           %g\n", v.budgets.cpus);
    else
        fprintf(f, "  cpus           none\n");
    fprintf(f, "  wall_time      %s\n", secs_str(v.budgets.wall_time, a, sizeof(a)));
    fprintf(f, "  output_bytes   %s\n", size_str(v.budgets.output_bytes, a, sizeof(a)));
    fprintf(f, "  storage_bytes  %s\n", size_str(v.budgets.storage_bytes, a, sizeof(a)));
    if (v.budgets.liveness_interval > 0)
        fprintf(f, "  liveness       %s\n", secs_str(v.budgets.liveness_interval, a, sizeof(a)));
    if (v.budgets.compute_time > 0)
        fprintf(f, "  compute_time   %s\n", secs_str(v.budgets.compute_time, a, sizeof(a)));

    const struct sandbox_profile *s = &v.sandbox;
    fprintf(f, "\nsandbox\n");
    fprintf(f, "  namespaces     user, mount, pid, ipc, uts, net, cgroup\n");
    fprintf(f, "  network        %s\n",
            s->net == SANDBOX_NET_LOOPBACK ? "loopback (lo only)"
            : s->net == SANDBOX_NET_PROXY
                ? "proxy (lo only; egress through the supervisor's proxies: docs/egress.md)"
                : "none (no interface up)");
    fprintf(f, "  root           minimal, read-only (/usr, /lib*, /etc basics), fresh /proc, "
               "minimal /dev\n");
    fprintf(f, "  /tmp           private, %s\n", size_str(s->limits.tmp_size, a, sizeof(a)));
    if (!s->n_binds)
        fprintf(f, "  mounts         -\n");
    for (size_t i = 0; i < s->n_binds; i++)
        fprintf(f, "  mount          %s -> %s (%s%s)\n", s->binds[i].host,
                s->binds[i].inside ? s->binds[i].inside : s->binds[i].host,
                s->binds[i].writable ? "rw" : "ro", s->binds[i].optional ? ", optional" : "");
    fprintf(f, "  landlock       %s\n", s->landlock ? "on" : "off");
    fprintf(f, "  user, group    %u, %u inside (mapped to an unprivileged host id)\n", (unsigned)s->uid,
            (unsigned)s->gid);
    if (s->limits.nofile)
        fprintf(f, "  nofile         %llu\n", (unsigned long long)s->limits.nofile);
    fprintf(f, "  capabilities   none (every set empty, no_new_privs)\n");

    fprintf(f, "\nseccomp (derived from role and authority; default action: deny with EPERM)\n");
    fprintf(f, "  allowed groups ");
    any = false;
    for (unsigned i = 0; i < 32; i++) {
        uint32_t bit = 1u << i;
        const char *g = (s->seccomp.groups & bit) ? sandbox_seccomp_group_name(bit) : NULL;
        if (g) {
            fprintf(f, "%s%s", any ? ", " : "", g);
            any = true;
        }
    }
    fprintf(f, "%s\n", any ? "" : "-");
    fprintf(f, "  narrowed       %s%s%s\n",
            v.may_exec ? "" : "@exec removed (no command authority: no execve after start)  ",
            v.base == POLICY_BASE_OBSERVER ? "@file-write removed, opens read-only (observer)" : "",
            v.may_exec && v.base != POLICY_BASE_OBSERVER ? "nothing (the role's authority "
                                                           "keeps every asked-for group)"
                                                         : "");
    fprintf(f, "  sockets        %s\n",
            s->seccomp.network ? "AF_UNIX, AF_INET, AF_INET6" : "AF_UNIX only (no network authority)");
    fprintf(f, "  extra allowed  ");
    for (size_t i = 0; i < s->seccomp.n_allow; i++)
        fprintf(f, "%s%s", i ? ", " : "", s->seccomp.allow[i]);
    fprintf(f, "%s\n", s->seccomp.n_allow ? "" : "-");
    fprintf(f, "  extra denied   ");
    for (size_t i = 0; i < s->seccomp.n_deny; i++)
        fprintf(f, "%s%s", i ? ", " : "", s->seccomp.deny[i]);
    fprintf(f, "%s\n", s->seccomp.n_deny ? "" : "-");
    fprintf(f, "  always denied  (no policy can lift these)\n");
    print_always_denied(f);
    fprintf(f,
            "                 and: clone with namespace flags, ioctl TIOCSTI and TIOCLINUX, "
            "x32 and\n                 foreign-ABI syscalls, sockets of every family but "
            "AF_UNIX%s\n",
            s->seccomp.network ? ", AF_INET, AF_INET6" : "");

    bool first = true;
    for (size_t i = 0; i < p->n_agents; i++)
        if (!strcmp(p->agents[i].role, v.name)) {
            if (first)
                fprintf(f, "\nagents with this role\n");
            first = false;
            fprintf(f, "  %-14s %s", p->agents[i].name, p->agents[i].binary);
            for (size_t k = 1; k < p->agents[i].argc; k++)
                fprintf(f, " %s", p->agents[i].argv[k]);
            fprintf(f, "\n");
        }
    return 0;
}
