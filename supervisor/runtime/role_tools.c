/* supervisor/runtime/role_tools.c: a role's tool context (see role_tools.h). */
#include "supervisor/runtime/role_tools.h"

#include "supervisor/egress/hub.h"
#include "supervisor/listeners/handoff.h"
#include "tools/broker/protect.h"

#include <string.h>

void role_tools_init(struct role_tools *t, const struct role_tools_opts *o)
{
    memset(t, 0, sizeof(*t));
    struct tool_ctx *c = &t->ctx;
    tool_limits_default(&c->limits);
    policy_tool_limits_apply(o->view, &c->limits);
    c->root_fd = o->root_fd;
    c->root_host_path = o->root_host_path;
    c->read_only = !o->view->authority.write;
    c->allow_commands = o->view->authority.commands;
    c->command_profile = &o->view->command_sandbox;
    c->cgroup_parent = o->cgroup_parent;
    c->n_rules = policy_tool_rules_fill(o->view, t->rules, ARRAY_SIZE(t->rules));
    c->rules = t->rules;
    c->session = o->session;
    c->protected_paths = o->protected_paths ? o->protected_paths : broker_protected_default;
    c->n_protected = o->protected_paths ? o->n_protected : 0;
    while (!o->protected_paths && broker_protected_default[c->n_protected])
        c->n_protected++;
    c->storage_bytes = o->storage_bytes;
    if (o->denials) {
        c->adopt_listener = handoff_adopt;
        c->adopt_data = o->denials;
        c->adopt_tag = o->tag;
    }
    if (o->egress_hub) {
        c->egress_spec = o->egress_spec;
        c->egress_env = egress_env();
        c->adopt_egress = egress_hub_adopt;
        c->egress_data = o->egress_hub;
    }
}
