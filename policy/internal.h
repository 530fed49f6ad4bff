/* policy/internal.h: what the policy module's files share and nobody else sees: the parsed
 * document with positions (jsonc.c), the loaded policy's structs, the role tables (roles.c). */
#ifndef CORRAL_POLICY_INTERNAL_H
#define CORRAL_POLICY_INTERNAL_H

#include "policy/egress.h"
#include "policy/policy.h"

#include <cjson/cJSON.h>

/* ---- jsonc.c: JSON with comments, parsed by cJSON, with the byte offset of every key/value. */
struct jpos {
    const cJSON *node;
    size_t key_off; /* SIZE_MAX: the node is not an object member */
    size_t val_off;
};
struct jsonc_doc {
    const char *name;
    char *text; /* comments and trailing commas blanked to spaces: offsets match the file */
    size_t len;
    cJSON *root;
    struct jpos *pos; /* sorted by node address */
    size_t n_pos;
};
/* 0 with doc filled, or -EINVAL with a diagnostic (syntax error, NUL byte, ...). */
int jsonc_parse(struct jsonc_doc *doc, const char *name, const char *data, size_t len,
                struct policy_diags *d);
void jsonc_free(struct jsonc_doc *doc);
void jsonc_where(const struct jsonc_doc *doc, size_t off, int *line, int *col);
size_t jsonc_val_off(const struct jsonc_doc *doc, const cJSON *n);
size_t jsonc_key_off(const struct jsonc_doc *doc, const cJSON *n);

int policy_diags_add(struct policy_diags *d, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Levenshtein distance, capped: for "did you mean". */
size_t policy_edit_distance(const char *a, const char *b);
/* The candidate closest to WORD when close enough to be a typo, else NULL. */
const char *policy_suggest(const char *word, const char *const *cands, size_t n);

/* ---- strings owned by the policy: one arena freed at once. */
struct arena_chunk;
char *policy_strdup(struct policy *p, const char *s);
void *policy_alloc(struct policy *p, size_t size); /* zeroed */

/* ---- roles.c */
#define POLICY_MAX_CAPS 64
#define POLICY_MAX_TOOLS 32

struct policy_role {
    const char *name;
    const char *description;
    enum policy_base base;
    bool derived;
    bool configured; /* has an entry in the file (base roles may not) */
    struct policy_cap caps[POLICY_MAX_CAPS];
    size_t n_caps;
    struct policy_authority authority;
    const char *surface;
    struct policy_tool_view tools[POLICY_MAX_TOOLS];
    size_t n_tools;
    struct policy_tool_limits limits;
    struct policy_budgets budgets;
    /* sandbox */
    enum sandbox_net net;
    struct egress_policy egress; /* network "proxy": rules point into the arena */
    struct sandbox_bind *binds;
    size_t n_binds;
    bool landlock;
    uid_t uid;
    gid_t gid;
    uint64_t tmp_size;
    uint64_t nofile;
    uint32_t groups; /* after narrowing */
    const char **sc_allow;
    size_t n_sc_allow;
    const char **sc_deny;
    size_t n_sc_deny;
};

struct policy {
    struct arena_chunk *arena;
    struct policy_role *roles; /* [0..2] are the base roles */
    size_t n_roles;
    struct policy_agent *agents;
    size_t n_agents;
    const char **envelope_types; /* custom, registered */
    size_t n_envelope_types;
    const char **checkpoint_types;
    size_t n_checkpoint_types;
    struct policy_highway highway;
    struct policy_user *users;
    size_t n_users;
    const char *trail_path;
    bool trail_full;
    uint64_t max_message;
    const char **protected_paths; /* NULL: the default list (tools/broker/protect.h) */
    size_t n_protected_paths;
    struct policy_rates rates;
    uint64_t max_workspaces;
};

/* Fills the built-in settings of a base role (capability row, authority, defaults). */
void roles_base_init(struct policy_role *r, enum policy_base b);
/* The WACP signal names (closed set of eleven), base envelope/checkpoint types, read scopes and
 * protocol actions, for validation and suggestions. */
extern const char *const roles_signals[];
extern const size_t roles_n_signals;
extern const char *const roles_read_scopes[];
extern const size_t roles_n_read_scopes;
extern const char *const roles_actions[];
extern const size_t roles_n_actions;
/* NULL when CAP (canonical) is within the ceiling of BASE, else why it is not. */
const char *roles_above_ceiling(enum policy_base b, const char *cap);
/* The authority ceiling of a base role. */
struct policy_authority roles_authority_ceiling(enum policy_base b);

/* ---- derive.c */
/* Seccomp groups of a role after narrowing by authority (from the allowed set). */
uint32_t derive_narrow_groups(enum policy_base b, const struct policy_authority *a, uint32_t groups);
const struct policy_role *policy_role_find(const struct policy *p, const char *name);

#endif
