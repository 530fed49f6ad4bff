/* supervisor/egress/setup.h: what a caller that starts a `network: "proxy"` sandbox does around
 * sandbox_spawn, in one place for `corral exec` and `corral run`: the role's egress policy
 * merged with the command line's rules, the listeners the sandbox's init must make, the proxy
 * variables in the program's environment, and, once the sandbox runs, the egress proxies on the
 * caller's event loop. */
#ifndef CORRAL_EGRESS_SETUP_H
#define CORRAL_EGRESS_SETUP_H

#include "supervisor/egress/egress.h"

struct sandbox_profile;
struct sandbox_child;

struct egress_setup {
    struct egress_policy policy; /* points into the arrays below */
    struct egress_rule *allow, *deny;
    struct egress_host *hosts;
    struct sandbox_egress spec;
};

/* Copies ROLE's policy (may be NULL: nothing allowed) and appends the command line's rules
 * (each "HOST[:PORT]") and pinned hosts ("NAME:ADDRESS"). 0, or -EINVAL with err naming the bad
 * one. Free with egress_setup_free. */
int egress_setup_init(struct egress_setup *s, const struct egress_policy *role, const char *const *allow,
                      size_t n_allow, const char *const *deny, size_t n_deny, const char *const *hosts,
                      size_t n_hosts, struct cerr *err);
void egress_setup_free(struct egress_setup *s);

/* Points prof at the listeners to make. */
void egress_setup_profile(struct egress_setup *s, struct sandbox_profile *prof);

/* Takes the child's listeners and starts the proxies on L. */
int egress_setup_start(struct egress_setup *s, struct loop *l, struct sandbox_child *child,
                       const struct egress_opts *o, struct egress **out, struct cerr *err);

#endif
