/* supervisor/egress/setup.c: the egress policy of one sandbox assembled, and its proxies started
 * (see setup.h). */
#include "supervisor/egress/setup.h"
#include "sandbox/sandbox.h"

#include <string.h>

static int add_rules(struct egress_rule **dst, size_t *n, const struct egress_rule *base, size_t n_base,
                     const char *const *texts, size_t n_texts, const char *opt, struct cerr *err)
{
    if (n_base + n_texts > EGRESS_MAX_RULES * 2)
        return cerr_set(err, E2BIG, "egress: too many %s rules (at most %d)", opt, EGRESS_MAX_RULES * 2);
    *dst = calloc(n_base + n_texts + 1, sizeof(**dst));
    if (!*dst)
        return cerr_set(err, ENOMEM, "egress: out of memory");
    if (n_base)
        memcpy(*dst, base, n_base * sizeof(**dst));
    *n = n_base;
    for (size_t i = 0; i < n_texts; i++) {
        char why[128];
        if (egress_rule_parse(texts[i], &(*dst)[*n], why, sizeof(why)) < 0)
            return cerr_set(err, EINVAL, "--%s %s: %s (HOST[:PORT], *.DOMAIN, an IP address or a CIDR)",
                            opt, texts[i], why);
        (*n)++;
    }
    return 0;
}

int egress_setup_init(struct egress_setup *s, const struct egress_policy *role, const char *const *allow,
                      size_t n_allow, const char *const *deny, size_t n_deny, const char *const *hosts,
                      size_t n_hosts, struct cerr *err)
{
    memset(s, 0, sizeof(*s));
    if (role)
        s->policy = *role;
    else
        s->policy.transparent = true;
    int r = add_rules(&s->allow, &s->policy.n_allow, role ? role->allow : NULL, role ? role->n_allow : 0,
                      allow, n_allow, "allow", err);
    if (r == 0)
        r = add_rules(&s->deny, &s->policy.n_deny, role ? role->deny : NULL, role ? role->n_deny : 0,
                      deny, n_deny, "deny", err);
    size_t nb = role ? role->n_hosts : 0;
    if (r == 0 && !(s->hosts = calloc(nb + n_hosts + 1, sizeof(*s->hosts))))
        r = cerr_set(err, ENOMEM, "egress: out of memory");
    if (r == 0 && nb)
        memcpy(s->hosts, role->hosts, nb * sizeof(*s->hosts));
    for (size_t i = 0; r == 0 && i < n_hosts; i++) {
        char name[EGRESS_NAME_MAX + 2], why[64];
        const char *colon = strchr(hosts[i], ':');
        size_t nl = colon ? (size_t)(colon - hosts[i]) : 0;
        if (!colon || nl >= sizeof(name)) {
            r = cerr_set(err, EINVAL, "--add-host %s: takes NAME:ADDRESS", hosts[i]);
            break;
        }
        memcpy(name, hosts[i], nl);
        name[nl] = '\0';
        if (egress_host_parse(name, colon + 1, &s->hosts[nb + i], why, sizeof(why)) < 0)
            r = cerr_set(err, EINVAL, "--add-host %s: %s", hosts[i], why);
    }
    if (r < 0) {
        egress_setup_free(s);
        return r;
    }
    s->policy.allow = s->allow;
    s->policy.deny = s->deny;
    s->policy.hosts = s->hosts;
    s->policy.n_hosts = nb + n_hosts;
    egress_sandbox_spec(&s->policy, &s->spec);
    return 0;
}

void egress_setup_free(struct egress_setup *s)
{
    free(s->allow);
    free(s->deny);
    free(s->hosts);
    memset(s, 0, sizeof(*s));
}

void egress_setup_profile(struct egress_setup *s, struct sandbox_profile *prof)
{
    prof->net = SANDBOX_NET_PROXY;
    prof->egress = &s->spec;
    prof->seccomp.network = true; /* the program's own inet sockets, on its own lo */
}

int egress_setup_start(struct egress_setup *s, struct loop *l, struct sandbox_child *child,
                       const struct egress_opts *o, struct egress **out, struct cerr *err)
{
    int fds[SANDBOX_EGRESS_MAX_FDS];
    size_t n = sandbox_egress_count(&s->spec);
    if (sandbox_child_take_egress_fds(child, fds, n) < 0)
        return cerr_set(err, ENOENT, "egress: the sandbox has no egress listeners");
    struct egress_opts oo = *o;
    oo.policy = &s->policy;
    return egress_new(l, &oo, &s->spec, fds, n, out, err);
}
