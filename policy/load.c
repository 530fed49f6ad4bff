/* policy/load.c: checks a parsed policy document against the format of docs/policy.md and turns
 * it into struct policy. Every problem is reported with its position and the fix in words, and
 * checking goes on after a problem so that one run of `corral policy check` shows them all. */
#include "policy/internal.h"
#include "tools/tool.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Paths in messages are cut to fit their buffers on purpose: a message stays one line. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define MAX_ROLES 256
#define MAX_AGENTS 1024
#define MAX_LIST 512

/* ---- the arena: every string and array of a policy, freed at once by policy_free. */
struct arena_chunk {
    struct arena_chunk *next;
    max_align_t data[];
};

void *policy_alloc(struct policy *p, size_t size)
{
    if (size > SIZE_MAX - sizeof(struct arena_chunk))
        return NULL;
    struct arena_chunk *c = calloc(1, sizeof(*c) + size);
    if (!c)
        return NULL;
    c->next = p->arena;
    p->arena = c;
    return c->data;
}

char *policy_strdup(struct policy *p, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = policy_alloc(p, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void policy_free(struct policy *p)
{
    if (!p)
        return;
    struct arena_chunk *c = p->arena;
    while (c) {
        struct arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    free(p);
}

/* ---- the checking context */
struct lctx {
    struct jsonc_doc *doc;
    struct policy_diags *d;
    struct policy *p;
    size_t errors;
    bool oom;
    char sbuf[4][96]; /* printable copies of strings from the file, for messages */
    unsigned si;
};

static void err_at(struct lctx *c, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void err_at(struct lctx *c, size_t off, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    int line, col;
    jsonc_where(c->doc, off, &line, &col);
    c->errors++;
    if (policy_diags_add(c->d, c->doc->name, line, col, "%s", msg) < 0)
        c->oom = true;
}
#define ERR_VAL(c, n, ...) err_at((c), jsonc_val_off((c)->doc, (n)), __VA_ARGS__)
#define ERR_KEY(c, n, ...) err_at((c), jsonc_key_off((c)->doc, (n)), __VA_ARGS__)

/* A string from the file made safe to print on one line, cut at 64 characters. */
static const char *S(struct lctx *c, const char *s)
{
    char *b = c->sbuf[c->si++ % ARRAY_SIZE(c->sbuf)];
    size_t k = 0;
    for (; s && *s && k < 64; s++)
        b[k++] = (unsigned char)*s < 32 || *s == 127 ? '?' : *s;
    if (s && *s) {
        memcpy(b + k, "...", 3);
        k += 3;
    }
    b[k] = '\0';
    return b;
}

static const char *type_name(const cJSON *n)
{
    if (cJSON_IsString(n))
        return "a string";
    if (cJSON_IsNumber(n))
        return "a number";
    if (cJSON_IsBool(n))
        return "a boolean";
    if (cJSON_IsNull(n))
        return "null";
    if (cJSON_IsArray(n))
        return "an array";
    if (cJSON_IsObject(n))
        return "an object";
    return "an unknown value";
}

static const char *where(const char *path)
{
    return *path ? path : "the top level";
}

static char *join(char *buf, size_t cap, const char *path, const char *key)
{
    snprintf(buf, cap, "%s%s%s", path, *path ? "." : "", key);
    return buf;
}

/* Unknown keys and duplicate keys are errors: a typo must never silently weaken a policy. */
static bool check_object(struct lctx *c, const cJSON *n, const char *path, const char *const *keys,
                         size_t nkeys)
{
    if (!cJSON_IsObject(n)) {
        ERR_VAL(c, n, "%s must be an object ({...}), not %s", where(path), type_name(n));
        return false;
    }
    int members = cJSON_GetArraySize(n);
    if (members > 4096) { /* keeps the duplicate check below cheap */
        ERR_VAL(c, n, "%s has %d keys; at most 4096 are allowed", where(path), members);
        return false;
    }
    for (const cJSON *m = n->child; m; m = m->next) {
        bool known = !keys; /* a map of names: only duplicates matter */
        for (size_t i = 0; i < nkeys && !known; i++)
            known = !strcmp(m->string, keys[i]);
        if (!known) {
            const char *s = policy_suggest(m->string, keys, nkeys);
            if (s) {
                ERR_KEY(c, m, "unknown key '%s' in %s; did you mean '%s'?", S(c, m->string), where(path),
                        s);
            } else {
                char list[512] = "";
                for (size_t i = 0; i < nkeys; i++)
                    snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                             keys[i]);
                ERR_KEY(c, m, "unknown key '%s' in %s; the keys here are: %s", S(c, m->string),
                        where(path), list);
            }
        }
        for (const cJSON *o = n->child; o != m; o = o->next)
            if (!strcmp(o->string, m->string)) {
                int line, col;
                jsonc_where(c->doc, jsonc_key_off(c->doc, o), &line, &col);
                ERR_KEY(c, m, "duplicate key '%s' in %s (first at line %d); keep only one",
                        S(c, m->string), where(path), line);
                break;
            }
    }
    return true;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    /* The first of duplicates: check_object has already reported the others. */
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

static bool want_bool(struct lctx *c, const cJSON *n, const char *path, bool *out)
{
    if (!cJSON_IsBool(n)) {
        ERR_VAL(c, n, "%s must be true or false, not %s", path, type_name(n));
        return false;
    }
    *out = cJSON_IsTrue(n);
    return true;
}

static bool want_string(struct lctx *c, const cJSON *n, const char *path, const char **out)
{
    if (!cJSON_IsString(n) || !n->valuestring) {
        ERR_VAL(c, n, "%s must be a string, not %s", path, type_name(n));
        return false;
    }
    if (!*n->valuestring) {
        ERR_VAL(c, n, "%s must not be empty", path);
        return false;
    }
    if (strlen(n->valuestring) > 4095) {
        ERR_VAL(c, n, "%s is longer than 4095 bytes", path);
        return false;
    }
    *out = n->valuestring;
    return true;
}

static bool want_enum(struct lctx *c, const cJSON *n, const char *path, const char *const *names,
                      size_t count, int *out)
{
    const char *s;
    if (!want_string(c, n, path, &s))
        return false;
    for (size_t i = 0; i < count; i++)
        if (!strcmp(s, names[i])) {
            *out = (int)i;
            return true;
        }
    char list[256] = "";
    for (size_t i = 0; i < count; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"",
                 i == 0           ? ""
                 : i + 1 == count ? " or "
                                  : ", ",
                 names[i]);
    const char *sug = policy_suggest(s, names, count);
    if (sug)
        ERR_VAL(c, n, "%s: unknown value '%s'; did you mean '%s'? (one of %s)", path, S(c, s), sug,
                list);
    else
        ERR_VAL(c, n, "%s: unknown value '%s'; write one of %s", path, S(c, s), list);
    return false;
}

/* An integral number in [min, max]. */
static bool want_count(struct lctx *c, const cJSON *n, const char *path, uint64_t min, uint64_t max,
                       uint64_t *out)
{
    if (!cJSON_IsNumber(n)) {
        ERR_VAL(c, n, "%s must be a whole number, not %s", path, type_name(n));
        return false;
    }
    double v = n->valuedouble;
    if (!isfinite(v) || v != floor(v) || v < (double)min || v > (double)max) {
        ERR_VAL(c, n, "%s must be a whole number from %llu to %llu, not %g", path,
                (unsigned long long)min, (unsigned long long)max, v);
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

static void fmt_size(uint64_t v, char *buf, size_t cap)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (v && v % 1024 == 0 && u < 3) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, cap, "%llu", (unsigned long long)v);
    else
        snprintf(buf, cap, "%llu%c", (unsigned long long)v, units[u]);
}

/* Bytes: a whole number, or a string with a unit ("512M", "1G"), in [min, max]. */
static bool want_size(struct lctx *c, const cJSON *n, const char *path, uint64_t min, uint64_t max,
                      uint64_t *out)
{
    uint64_t v;
    if (cJSON_IsNumber(n)) {
        if (!want_count(c, n, path, 0, UINT64_MAX >> 11, &v))
            return false;
    } else if (cJSON_IsString(n)) {
        int r = util_parse_size(n->valuestring, &v);
        if (r < 0) {
            ERR_VAL(c, n,
                    "%s: '%s' is not a size; write bytes as a number or with a unit K, M, G "
                    "or T (\"512M\", \"1G\")",
                    path, S(c, n->valuestring));
            return false;
        }
    } else {
        ERR_VAL(c, n, "%s must be a size (\"512M\" or a number of bytes), not %s", path, type_name(n));
        return false;
    }
    if (v < min || v > max) {
        char a[32], b[32];
        fmt_size(min, a, sizeof(a));
        fmt_size(max, b, sizeof(b));
        ERR_VAL(c, n, "%s must be between %s and %s bytes", path, a, b);
        return false;
    }
    *out = v;
    return true;
}

/* Seconds: a number, or a string "30", "1.5", "250ms", "2m", "1h"; ZERO_OK lets 0 mean "none". */
static bool want_seconds(struct lctx *c, const cJSON *n, const char *path, bool zero_ok, double *out)
{
    double v;
    if (cJSON_IsNumber(n)) {
        v = n->valuedouble;
        if (!isfinite(v) || v < 0 || (v == 0 && !zero_ok) || v > 365.0 * 86400) {
            ERR_VAL(c, n, "%s must be a duration from %s to one year, not %g", path,
                    zero_ok ? "0 (none)" : "above 0", v);
            return false;
        }
    } else if (cJSON_IsString(n)) {
        if (zero_ok && !strcmp(n->valuestring, "0")) {
            v = 0;
        } else if (util_parse_seconds(n->valuestring, &v) < 0) {
            ERR_VAL(c, n,
                    "%s: '%s' is not a duration; write seconds as a number or with a unit "
                    "ms, s, m or h (\"30s\", \"5m\")",
                    path, S(c, n->valuestring));
            return false;
        }
    } else {
        ERR_VAL(c, n, "%s must be a duration (\"30s\", \"5m\" or a number of seconds), not %s", path,
                type_name(n));
        return false;
    }
    *out = v;
    return true;
}

/* An array of strings, copied into the policy (NULL-terminated). */
static bool want_strings(struct lctx *c, const cJSON *n, const char *path, size_t max, const char ***out,
                         size_t *count)
{
    if (!cJSON_IsArray(n)) {
        ERR_VAL(c, n, "%s must be an array of strings ([\"...\"]), not %s", path, type_name(n));
        return false;
    }
    size_t k = (size_t)cJSON_GetArraySize(n);
    if (k > max) {
        ERR_VAL(c, n, "%s has %zu entries; at most %zu are allowed", path, k, max);
        return false;
    }
    const char **v = policy_alloc(c->p, (k + 1) * sizeof(*v));
    if (!v) {
        c->oom = true;
        return false;
    }
    bool ok = true;
    size_t i = 0;
    for (const cJSON *e = n->child; e; e = e->next, i++) {
        char p[256];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        const char *s;
        if (!want_string(c, e, p, &s)) {
            ok = false;
            continue;
        }
        if (!(v[i] = policy_strdup(c->p, s)))
            c->oom = true;
    }
    if (!ok)
        return false;
    *out = v;
    *count = k;
    return true;
}

/* A host or sandbox path: absolute, no "." or ".." component, no empty component. */
static bool want_abs_path(struct lctx *c, const cJSON *n, const char *path, const char **out)
{
    const char *s;
    if (!want_string(c, n, path, &s))
        return false;
    if (s[0] != '/') {
        ERR_VAL(c, n, "%s: '%s' is not an absolute path; start it with '/'", path, S(c, s));
        return false;
    }
    for (const char *q = s; *q;) {
        while (*q == '/')
            q++;
        size_t l = strcspn(q, "/");
        if ((l == 1 && q[0] == '.') || (l == 2 && q[0] == '.' && q[1] == '.')) {
            ERR_VAL(c, n, "%s: '%s' has a '.' or '..' component; write the path it means", path,
                    S(c, s));
            return false;
        }
        q += l;
    }
    *out = s;
    return true;
}

/* ---- capabilities */
static bool type_registered(const char *const *v, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(v[i]) == len && !strncmp(v[i], s, len))
            return true;
    return false;
}

static bool role_name_exists(const cJSON *roles, const char *s, size_t len)
{
    static const char *const base[] = {"coordinator", "worker", "observer"};
    if (type_registered(base, 3, s, len))
        return true;
    for (const cJSON *m = cJSON_IsObject(roles) ? roles->child : NULL; m; m = m->next)
        if (strlen(m->string) == len && !strncmp(m->string, s, len))
            return true;
    return false;
}

static bool is_ident(const char *s, size_t len)
{
    if (!len || len > 64)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return false;
    return true;
}

/* Parses a capability as written ("send: report -> coordinator", "emit:blocked", "integrate",
 * with -> or the arrow U+2192) into its canonical form in buf. NULL, or why it is not one. */
static const char *cap_parse(struct lctx *c, const cJSON *roles, const char *in, char *buf, size_t cap)
{
    char t[256];
    size_t k = 0;
    for (const char *s = in; *s && k < sizeof(t) - 3; s++) {
        if (*s == ' ' || *s == '\t')
            continue;
        if (!strncmp(s, "\xe2\x86\x92", 3)) { /* -> */
            t[k++] = '-', t[k++] = '>', s += 2;
            continue;
        }
        if (!strncmp(s, "\xe2\x86\x90", 3)) { /* <- */
            t[k++] = '<', t[k++] = '-', s += 2;
            continue;
        }
        t[k++] = *s;
    }
    t[k] = '\0';
    const char *colon = strchr(t, ':');
    if (!colon) {
        for (size_t i = 0; i < roles_n_actions; i++)
            if (!strcmp(t, roles_actions[i])) {
                snprintf(buf, cap, "%s", t);
                return NULL;
            }
        const char *s = policy_suggest(t, roles_actions, roles_n_actions);
        if (s) {
            snprintf(buf, cap, "did you mean '%s'?", s);
            return buf;
        }
        return "write KIND:WHAT with KIND send, receive, emit, create or read (\"emit:blocked\", "
               "\"send:report->coordinator\"), or a protocol action such as \"integrate\"";
    }
    size_t kl = (size_t)(colon - t);
    const char *what = colon + 1;
    /* send:TYPE->ROLE and receive:TYPE<-ROLE: one rule, two directions. */
    static const struct {
        const char *verb, *arrow, *shape, *no_role;
    } dirs[] = {
        {"send", "->", "a send capability names a type and a receiver: \"send:TYPE->ROLE\"",
         "the receiving role is not defined"},
        {"receive", "<-", "a receive capability names a type and a sender: \"receive:TYPE<-ROLE\"",
         "the sending role is not defined"},
    };
    for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
        if (kl != strlen(dirs[d].verb) || strncmp(t, dirs[d].verb, kl))
            continue;
        const char *arrow = strstr(what, dirs[d].arrow);
        if (!arrow)
            return dirs[d].shape;
        size_t tl = (size_t)(arrow - what);
        static const char *const base[] = {"directive", "feedback", "query"};
        if (!type_registered(base, 3, what, tl) &&
            !type_registered(c->p->envelope_types, c->p->n_envelope_types, what, tl))
            return "the envelope type is neither a base type (directive, feedback, query) nor "
                   "registered under envelope_types";
        if (!role_name_exists(roles, arrow + 2, strlen(arrow + 2)))
            return dirs[d].no_role;
        snprintf(buf, cap, "%s:%.*s%s%s", dirs[d].verb, (int)tl, what, dirs[d].arrow, arrow + 2);
        return NULL;
    }
    if (kl == 4 && !strncmp(t, "emit", 4)) {
        if (!type_registered(roles_signals, roles_n_signals, what, strlen(what))) {
            const char *s = policy_suggest(what, roles_signals, roles_n_signals);
            if (s) {
                snprintf(buf, cap, "'%s' is not a WACP signal; did you mean '%s'?", S(c, what), s);
                return buf;
            }
            return "not one of the eleven WACP signals (ready, started, blocked, checkpoint, "
                   "complete, failed, integrate, acknowledged, escalation, suspend, migrate)";
        }
        snprintf(buf, cap, "emit:%s", what);
        return NULL;
    }
    if (kl == 6 && !strncmp(t, "create", 6)) {
        static const char *const base[] = {"artifact", "observation"};
        if (!type_registered(base, 2, what, strlen(what)) &&
            !type_registered(c->p->checkpoint_types, c->p->n_checkpoint_types, what, strlen(what)))
            return "the checkpoint type is neither a base type (artifact, observation) nor "
                   "registered under checkpoint_types";
        snprintf(buf, cap, "create:%s", what);
        return NULL;
    }
    if (kl == 4 && !strncmp(t, "read", 4)) {
        if (!type_registered(roles_read_scopes, roles_n_read_scopes, what, strlen(what))) {
            const char *s = policy_suggest(what, roles_read_scopes, roles_n_read_scopes);
            if (s) {
                snprintf(buf, cap, "unknown read scope; did you mean '%s'?", s);
                return buf;
            }
            return "unknown read scope (own_workspace, own_directive, own_local_trail, "
                   "assigned_workspace, peer_workspace, designated_workspaces, designated_group, "
                   "all_workspaces, global_trail)";
        }
        snprintf(buf, cap, "read:%s", what);
        return NULL;
    }
    return "the kind before ':' must be send, receive, emit, create or read";
}

static bool role_has(const struct policy_role *r, const char *cap)
{
    for (size_t i = 0; i < r->n_caps; i++)
        if (!strcmp(r->caps[i].text, cap))
            return true;
    return false;
}

static void role_drop(struct policy_role *r, const char *cap)
{
    for (size_t i = 0; i < r->n_caps; i++)
        if (!strcmp(r->caps[i].text, cap)) {
            memmove(&r->caps[i], &r->caps[i + 1], (r->n_caps - i - 1) * sizeof(r->caps[0]));
            r->n_caps--;
            return;
        }
}

static void role_add(struct lctx *c, struct policy_role *r, const cJSON *n, const char *cap)
{
    if (role_has(r, cap))
        return;
    if (r->n_caps == POLICY_MAX_CAPS) {
        ERR_VAL(c, n, "role '%s' has more than %d capabilities", S(c, r->name), POLICY_MAX_CAPS);
        return;
    }
    char *s = policy_strdup(c->p, cap);
    if (!s) {
        c->oom = true;
        return;
    }
    r->caps[r->n_caps++].text = s;
}

/* remove, then add, then the checkpoint_types override (Roles spec 5: base -> remove -> add). */
static void load_caps(struct lctx *c, const cJSON *roles, const cJSON *rj, struct policy_role *r,
                      const char *path)
{
    char p[256], buf[256];
    const cJSON *rem = get(rj, "remove"), *add = get(rj, "add"), *ct = get(rj, "checkpoint_types");
    if (rem && !cJSON_IsArray(rem))
        ERR_VAL(c, rem, "%s.remove must be an array of capabilities, not %s", path, type_name(rem));
    size_t i = 0;
    for (const cJSON *e = cJSON_IsArray(rem) ? rem->child : NULL; e; e = e->next, i++) {
        snprintf(p, sizeof(p), "%s.remove[%zu]", path, i);
        const char *s, *why;
        if (!want_string(c, e, p, &s))
            continue;
        if ((why = cap_parse(c, roles, s, buf, sizeof(buf)))) {
            ERR_VAL(c, e, "%s: '%s' is not a capability: %s", p, S(c, s), why);
            continue;
        }
        if (!role_has(r, buf)) {
            ERR_VAL(c, e,
                    "%s: base role '%s' does not have '%s', so there is nothing to remove; "
                    "check the spelling (its capabilities are listed by 'corral policy show')",
                    p, policy_base_name(r->base), S(c, buf));
            continue;
        }
        role_drop(r, buf);
    }
    if (add && !cJSON_IsArray(add))
        ERR_VAL(c, add, "%s.add must be an array of capabilities, not %s", path, type_name(add));
    i = 0;
    for (const cJSON *e = cJSON_IsArray(add) ? add->child : NULL; e; e = e->next, i++) {
        snprintf(p, sizeof(p), "%s.add[%zu]", path, i);
        const char *s, *why;
        if (!want_string(c, e, p, &s))
            continue;
        if ((why = cap_parse(c, roles, s, buf, sizeof(buf)))) {
            ERR_VAL(c, e, "%s: '%s' is not a capability: %s", p, S(c, s), why);
            continue;
        }
        if ((why = roles_above_ceiling(r->base, buf))) {
            ERR_VAL(c, e,
                    "%s: '%s' is above the ceiling of base role '%s' (%s); a derived role can "
                    "only narrow or redirect its base: remove it%s",
                    p, S(c, buf), policy_base_name(r->base), why,
                    r->base == POLICY_BASE_WORKER ? ", or grant delegation at workspace creation" : "");
            continue;
        }
        role_add(c, r, e, buf);
    }
    if (!ct)
        return;
    if (!cJSON_IsArray(ct)) {
        ERR_VAL(c, ct, "%s.checkpoint_types must be an array of checkpoint types, not %s", path,
                type_name(ct));
        return;
    }
    for (size_t k = r->n_caps; k-- > 0;)
        if (!strncmp(r->caps[k].text, "create:", 7))
            role_drop(r, r->caps[k].text);
    i = 0;
    for (const cJSON *e = ct->child; e; e = e->next, i++) {
        snprintf(p, sizeof(p), "%s.checkpoint_types[%zu]", path, i);
        const char *s, *why;
        if (!want_string(c, e, p, &s))
            continue;
        char in[160];
        snprintf(in, sizeof(in), "create:%s", s);
        if ((why = cap_parse(c, roles, in, buf, sizeof(buf)))) {
            ERR_VAL(c, e, "%s: '%s': %s", p, S(c, s), why);
            continue;
        }
        if ((why = roles_above_ceiling(r->base, buf))) {
            ERR_VAL(c, e, "%s: '%s' is above the ceiling of base role '%s' (%s)", p, S(c, s),
                    policy_base_name(r->base), why);
            continue;
        }
        role_add(c, r, e, buf);
    }
}

/* ---- tools */
/* Per-tool "enabled" intent kept beside the role while loading: 0 default, 1 on, 2 off. */
struct tool_intent {
    unsigned char state[POLICY_MAX_TOOLS];
    const cJSON *src[POLICY_MAX_TOOLS];
};

static void tools_reset(struct policy_role *r, struct tool_intent *ti)
{
    size_t n;
    const struct tool_def *defs = policy_surface_tools(r->surface, &n);
    r->n_tools = n;
    for (size_t i = 0; i < n; i++) {
        /* read_before_write starts at the surface's default (kward's guardrail, voltagent's
         * runtime), from the gate's table. */
        r->tools[i] = (struct policy_tool_view){.name = defs[i].name,
                                                .kind = (enum policy_tool_kind)defs[i].kind,
                                                .read_before_write = defs[i].read_first};
        ti->state[i] = 0;
        ti->src[i] = NULL;
    }
}

static int tool_index(const struct policy_role *r, const char *name)
{
    for (size_t i = 0; i < r->n_tools; i++)
        if (!strcmp(r->tools[i].name, name))
            return (int)i;
    return -1;
}

/* Looks up each name of a tool list; calls back with the index, reports unknown names. */
static void tool_list(struct lctx *c, struct policy_role *r, const cJSON *n, const char *path,
                      void (*fn)(struct lctx *, struct policy_role *, struct tool_intent *, int,
                                 const cJSON *, const char *),
                      struct tool_intent *ti)
{
    if (!cJSON_IsArray(n)) {
        ERR_VAL(c, n, "%s must be an array of tool names, not %s", path, type_name(n));
        return;
    }
    size_t i = 0;
    for (const cJSON *e = n->child; e; e = e->next, i++) {
        char p[256];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        const char *s;
        if (!want_string(c, e, p, &s))
            continue;
        int k = tool_index(r, s);
        if (k < 0) {
            const char *names[POLICY_MAX_TOOLS];
            for (size_t j = 0; j < r->n_tools; j++)
                names[j] = r->tools[j].name;
            const char *sug = policy_suggest(s, names, r->n_tools);
            ERR_VAL(c, e, "%s: '%s' is not a tool of the '%s' surface%s%s%s", p, S(c, s), r->surface,
                    sug ? "; did you mean '" : " ('corral policy show' lists them)", sug ? sug : "",
                    sug ? "'?" : "");
            continue;
        }
        fn(c, r, ti, k, e, p);
    }
}

static void t_enable(struct lctx *c, struct policy_role *r, struct tool_intent *ti, int k,
                     const cJSON *e, const char *p)
{
    ti->state[k] = 1;
    ti->src[k] = e;
}
static void t_disable(struct lctx *c, struct policy_role *r, struct tool_intent *ti, int k,
                      const cJSON *e, const char *p)
{
    ti->state[k] = 2;
    ti->src[k] = e;
}
static void t_approve(struct lctx *c, struct policy_role *r, struct tool_intent *ti, int k,
                      const cJSON *e, const char *p)
{
    r->tools[k].needs_approval = true;
}
static void t_rbw(struct lctx *c, struct policy_role *r, struct tool_intent *ti, int k, const cJSON *e,
                  const char *p)
{
    if (r->tools[k].kind != POLICY_TOOL_WRITE) {
        ERR_VAL(c, e, "%s: read_before_write applies to tools that change files, and '%s' does not", p,
                r->tools[k].name);
        return;
    }
    r->tools[k].read_before_write = true;
}

static void load_tools(struct lctx *c, const cJSON *n, struct policy_role *r, struct tool_intent *ti,
                       const char *path)
{
    static const char *const keys[] = {"enabled", "disabled", "needs_approval",   "read_before_write",
                                       "limits",  "exclude",  "embedding_command",
                                       "evaluator_command"};
    if (!check_object(c, n, path, keys, ARRAY_SIZE(keys)))
        return;
    char p[256];
    const cJSON *v;
    if ((v = get(n, "enabled"))) {
        for (size_t i = 0; i < r->n_tools; i++) {
            ti->state[i] = 2;
            ti->src[i] = NULL;
        }
        tool_list(c, r, v, join(p, sizeof(p), path, "enabled"), t_enable, ti);
    }
    if ((v = get(n, "disabled"))) {
        const cJSON *en = get(n, "enabled");
        size_t i = 0;
        for (const cJSON *e = cJSON_IsArray(v) ? v->child : NULL; e; e = e->next, i++)
            for (const cJSON *f = cJSON_IsArray(en) ? en->child : NULL; f; f = f->next)
                if (cJSON_IsString(e) && cJSON_IsString(f) && !strcmp(e->valuestring, f->valuestring))
                    ERR_VAL(c, e,
                            "%s.disabled[%zu]: '%s' is also listed in %s.enabled; keep it in "
                            "one list",
                            path, i, S(c, e->valuestring), path);
        tool_list(c, r, v, join(p, sizeof(p), path, "disabled"), t_disable, ti);
    }
    if ((v = get(n, "needs_approval"))) {
        for (size_t i = 0; i < r->n_tools; i++)
            r->tools[i].needs_approval = false;
        tool_list(c, r, v, join(p, sizeof(p), path, "needs_approval"), t_approve, ti);
    }
    if ((v = get(n, "read_before_write"))) {
        for (size_t i = 0; i < r->n_tools; i++)
            r->tools[i].read_before_write = false;
        tool_list(c, r, v, join(p, sizeof(p), path, "read_before_write"), t_rbw, ti);
    }
    if ((v = get(n, "embedding_command"))) {
        const char *cmd;
        if (strcmp(r->surface, "voltagent"))
            ERR_VAL(c, v,
                    "%s.embedding_command is for the voltagent surface's search, and this "
                    "role's surface is '%s'",
                    path, r->surface);
        else if (want_string(c, v, join(p, sizeof(p), path, "embedding_command"), &cmd) &&
                 !(r->limits.embedding_command = policy_strdup(c->p, cmd)))
            c->oom = true;
    }
    if ((v = get(n, "evaluator_command"))) {
        const char *cmd;
        if (want_string(c, v, join(p, sizeof(p), path, "evaluator_command"), &cmd) &&
            !(r->limits.evaluator_command = policy_strdup(c->p, cmd)))
            c->oom = true;
    }
    if ((v = get(n, "exclude"))) {
        const char **list;
        size_t k;
        if (want_strings(c, v, join(p, sizeof(p), path, "exclude"), 256, &list, &k)) {
            r->limits.exclude = list;
            r->limits.n_exclude = k;
        }
    }
    const cJSON *lim = get(n, "limits");
    if (!lim)
        return;
    static const char *const lkeys[] = {"max_file_size",    "max_search_results", "max_explore_entries",
                                        "max_output_bytes", "command_timeout",    "command_timeout_max"};
    char lp[256];
    join(lp, sizeof(lp), path, "limits");
    if (!check_object(c, lim, lp, lkeys, ARRAY_SIZE(lkeys)))
        return;
    struct policy_tool_limits *l = &r->limits;
    if ((v = get(lim, "max_file_size")))
        want_size(c, v, join(p, sizeof(p), lp, "max_file_size"), 1, 1ull << 32, &l->max_file_size);
    if ((v = get(lim, "max_search_results")))
        want_count(c, v, join(p, sizeof(p), lp, "max_search_results"), 1, 100000,
                   &l->max_search_results);
    if ((v = get(lim, "max_explore_entries")))
        want_count(c, v, join(p, sizeof(p), lp, "max_explore_entries"), 1, 1000000,
                   &l->max_explore_entries);
    if ((v = get(lim, "max_output_bytes")))
        want_size(c, v, join(p, sizeof(p), lp, "max_output_bytes"), 1024, 1ull << 32,
                  &l->max_output_bytes);
    if ((v = get(lim, "command_timeout")))
        want_seconds(c, v, join(p, sizeof(p), lp, "command_timeout"), false, &l->command_timeout);
    if ((v = get(lim, "command_timeout_max")))
        want_seconds(c, v, join(p, sizeof(p), lp, "command_timeout_max"), false,
                     &l->command_timeout_max);
    if (l->command_timeout && l->command_timeout_max && l->command_timeout > l->command_timeout_max)
        ERR_VAL(c, get(lim, "command_timeout") ? get(lim, "command_timeout") : lim,
                "%s.command_timeout (%gs) is above command_timeout_max (%gs); lower it or raise the "
                "maximum",
                lp, l->command_timeout, l->command_timeout_max);
}

/* ---- sandbox */
static bool seccomp_name(struct lctx *c, const cJSON *e, const char *p, bool allow, uint32_t *bit,
                         const char **sys)
{
    const char *s;
    *bit = 0;
    *sys = NULL;
    if (!want_string(c, e, p, &s))
        return false;
    if (s[0] == '@') {
        if (!strcmp(s, "@default")) {
            *bit = SANDBOX_SC_DEFAULT_GROUPS;
            return true;
        }
        if (sandbox_seccomp_group_by_name(s, bit) == 0)
            return true;
        const char *names[33];
        size_t k = 0;
        names[k++] = "@default";
        for (unsigned i = 0; i < 32; i++) {
            const char *g = sandbox_seccomp_group_name(1u << i);
            if (g)
                names[k++] = g;
        }
        const char *sug = policy_suggest(s, names, k);
        char list[512] = "";
        for (size_t i = 0; i < k; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", names[i]);
        if (sug)
            ERR_VAL(c, e, "%s: unknown syscall group '%s'; did you mean '%s'?", p, S(c, s), sug);
        else
            ERR_VAL(c, e, "%s: unknown syscall group '%s'; the groups are: %s", p, S(c, s), list);
        return false;
    }
    if (!sandbox_seccomp_syscall_known(s)) {
        ERR_VAL(c, e,
                "%s: unknown syscall '%s' on this architecture; check the spelling (groups "
                "start with '@')",
                p, S(c, s));
        return false;
    }
    if (allow && sandbox_seccomp_always_denied(s)) {
        ERR_VAL(c, e,
                "%s: '%s' is on the always-denied list (namespaces, mounts, ptrace, bpf, "
                "kernel keys and modules, ...) and no policy can allow it; remove it",
                p, S(c, s));
        return false;
    }
    *sys = s;
    return true;
}

struct sc_intent {
    const cJSON *allow, *deny; /* the nodes that set them, for narrowing errors */
    uint32_t allow_groups, deny_groups;
    bool allow_set;
};

static void load_seccomp(struct lctx *c, const cJSON *n, struct policy_role *r, struct sc_intent *si,
                         const char *path)
{
    static const char *const keys[] = {"allow", "deny"};
    if (!check_object(c, n, path, keys, ARRAY_SIZE(keys)))
        return;
    for (int pass = 0; pass < 2; pass++) {
        const char *key = pass ? "deny" : "allow";
        const cJSON *v = get(n, key);
        if (!v)
            continue;
        char p[256];
        join(p, sizeof(p), path, key);
        if (!cJSON_IsArray(v)) {
            ERR_VAL(c, v,
                    "%s must be an array of syscall groups (\"@file-read\") and syscall "
                    "names, not %s",
                    p, type_name(v));
            continue;
        }
        size_t cnt = (size_t)cJSON_GetArraySize(v);
        if (cnt > MAX_LIST) {
            ERR_VAL(c, v, "%s has more than %d entries", p, MAX_LIST);
            continue;
        }
        const char **sys = policy_alloc(c->p, (cnt + 1) * sizeof(*sys));
        if (!sys) {
            c->oom = true;
            return;
        }
        size_t ns = 0, i = 0;
        uint32_t groups = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            char ep[280];
            snprintf(ep, sizeof(ep), "%s[%zu]", p, i);
            uint32_t bit;
            const char *s;
            if (!seccomp_name(c, e, ep, !pass, &bit, &s))
                continue;
            groups |= bit;
            if (s && !(sys[ns++] = policy_strdup(c->p, s)))
                c->oom = true;
        }
        if (pass) {
            si->deny = v;
            si->deny_groups = groups;
            r->sc_deny = sys;
            r->n_sc_deny = ns;
        } else {
            si->allow = v;
            si->allow_groups = groups;
            si->allow_set = true;
            r->sc_allow = sys;
            r->n_sc_allow = ns;
        }
    }
}

static bool inside_reserved(const char *s)
{
    static const char *const reserved[] = {"/proc", "/dev", "/sys", "/tmp"};
    if (!strcmp(s, "/"))
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(reserved); i++) {
        size_t l = strlen(reserved[i]);
        if (!strncmp(s, reserved[i], l) && (s[l] == '\0' || s[l] == '/'))
            return true;
    }
    return false;
}

static void load_mounts(struct lctx *c, const cJSON *n, struct policy_role *r, const char *path)
{
    if (!cJSON_IsArray(n)) {
        ERR_VAL(c, n,
                "%s must be an array of mounts ({\"host\": \"/path\", \"mode\": \"ro\"}), "
                "not %s",
                path, type_name(n));
        return;
    }
    size_t cnt = (size_t)cJSON_GetArraySize(n);
    if (cnt > 64) {
        ERR_VAL(c, n, "%s has more than 64 mounts", path);
        return;
    }
    struct sandbox_bind *b = policy_alloc(c->p, (cnt + 1) * sizeof(*b));
    if (!b) {
        c->oom = true;
        return;
    }
    static const char *const keys[] = {"host", "inside", "mode", "optional"};
    static const char *const modes[] = {"ro", "rw"};
    size_t i = 0, k = 0;
    for (const cJSON *e = n->child; e; e = e->next, i++) {
        char p[256], q[280];
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        if (!check_object(c, e, p, keys, ARRAY_SIZE(keys)))
            continue;
        const cJSON *v;
        const char *host = NULL, *inside = NULL;
        int mode = 0;
        bool optional = false, ok = true;
        if (!(v = get(e, "host"))) {
            ERR_VAL(c, e, "%s needs \"host\": the absolute host path to bind", p);
            ok = false;
        } else {
            ok &= want_abs_path(c, v, join(q, sizeof(q), p, "host"), &host);
        }
        if ((v = get(e, "inside")) && want_abs_path(c, v, join(q, sizeof(q), p, "inside"), &inside) &&
            inside_reserved(inside)) {
            ERR_VAL(c, v,
                    "%s.inside: '%s' is part of the sandbox's own root (/, /proc, /dev, /sys, "
                    "/tmp); bind it somewhere else",
                    p, S(c, inside));
            ok = false;
        }
        if ((v = get(e, "mode")))
            ok &= want_enum(c, v, join(q, sizeof(q), p, "mode"), modes, 2, &mode);
        if ((v = get(e, "optional")))
            ok &= want_bool(c, v, join(q, sizeof(q), p, "optional"), &optional);
        if (host && !inside && inside_reserved(host)) {
            ERR_VAL(c, get(e, "host"),
                    "%s.host: '%s' would cover the sandbox's own root; set "
                    "\"inside\" to another path",
                    p, S(c, host));
            ok = false;
        }
        struct stat st;
        if (host && !optional && stat(host, &st) < 0) {
            ERR_VAL(c, get(e, "host"),
                    "%s.host: '%s' does not exist (%s); create it or set "
                    "\"optional\": true",
                    p, S(c, host), strerror(errno));
            ok = false;
        }
        if (!ok || !host)
            continue;
        b[k++] = (struct sandbox_bind){.host = policy_strdup(c->p, host),
                                       .inside = inside ? policy_strdup(c->p, inside) : NULL,
                                       .writable = mode == 1,
                                       .optional = optional};
    }
    r->binds = b;
    r->n_binds = k;
}

/* sandbox.egress (docs/egress.md): every rule checked by the matcher's own parser. */
static void load_egress_rules(struct lctx *c, const cJSON *n, const char *path,
                              const struct egress_rule **out, size_t *count)
{
    const char **texts;
    size_t k;
    if (!want_strings(c, n, path, EGRESS_MAX_RULES, &texts, &k))
        return;
    struct egress_rule *v = policy_alloc(c->p, (k + 1) * sizeof(*v));
    if (!v) {
        c->oom = true;
        return;
    }
    size_t i = 0;
    for (const cJSON *e = n->child; e; e = e->next, i++) {
        char why[128];
        if (texts[i] && egress_rule_parse(texts[i], &v[i], why, sizeof(why)) < 0)
            ERR_VAL(c, e,
                    "%s[%zu]: '%s' is not a rule: %s (HOST[:PORT], *.DOMAIN, an IP address or a CIDR)",
                    path, i, texts[i], why);
    }
    *out = v;
    *count = k;
}

static void load_egress(struct lctx *c, const cJSON *n, struct policy_role *r, const char *path)
{
    static const char *const keys[] = {"allow",           "deny",      "private", "transparent",
                                       "max_connections", "max_bytes", "hosts"};
    if (!check_object(c, n, path, keys, ARRAY_SIZE(keys)))
        return;
    struct egress_policy *g = &r->egress;
    char p[256];
    const cJSON *v;
    if ((v = get(n, "allow")))
        load_egress_rules(c, v, join(p, sizeof(p), path, "allow"), &g->allow, &g->n_allow);
    if ((v = get(n, "deny")))
        load_egress_rules(c, v, join(p, sizeof(p), path, "deny"), &g->deny, &g->n_deny);
    if ((v = get(n, "private")))
        want_bool(c, v, join(p, sizeof(p), path, "private"), &g->private_ok);
    if ((v = get(n, "transparent")))
        want_bool(c, v, join(p, sizeof(p), path, "transparent"), &g->transparent);
    if ((v = get(n, "max_connections")))
        want_count(c, v, join(p, sizeof(p), path, "max_connections"), 1, 65536, &g->max_connections);
    if ((v = get(n, "max_bytes")))
        want_size(c, v, join(p, sizeof(p), path, "max_bytes"), 1, 1ull << 50, &g->max_bytes);
    if ((v = get(n, "hosts")) && check_object(c, v, join(p, sizeof(p), path, "hosts"), NULL, 0)) {
        size_t k = (size_t)cJSON_GetArraySize(v), i = 0;
        struct egress_host *h = policy_alloc(c->p, (k + 1) * sizeof(*h));
        if (!h) {
            c->oom = true;
            return;
        }
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            char why[64];
            if (!cJSON_IsString(e) ||
                egress_host_parse(e->string, e->valuestring, &h[i], why, sizeof(why)) < 0)
                ERR_VAL(c, e, "%s.hosts.%s: must map a host name to an IP address (%s)", path, e->string,
                        cJSON_IsString(e) ? why : "not a string");
        }
        g->hosts = h;
        g->n_hosts = k;
    }
}

static void load_sandbox(struct lctx *c, const cJSON *n, struct policy_role *r, struct sc_intent *si,
                         const char *path)
{
    static const char *const keys[] = {"network",  "mounts", "landlock", "user",  "group",
                                       "tmp_size", "nofile", "seccomp",  "egress"};
    if (!check_object(c, n, path, keys, ARRAY_SIZE(keys)))
        return;
    static const char *const nets[] = {"none", "loopback", "proxy"};
    char p[256];
    const cJSON *v;
    uint64_t u;
    int e;
    if ((v = get(n, "network")) && want_enum(c, v, join(p, sizeof(p), path, "network"), nets, 3, &e))
        r->net = e == 2 ? SANDBOX_NET_PROXY : e ? SANDBOX_NET_LOOPBACK : SANDBOX_NET_NONE;
    r->egress.transparent = true;
    if ((v = get(n, "egress")))
        load_egress(c, v, r, join(p, sizeof(p), path, "egress"));
    if ((v = get(n, "mounts")))
        load_mounts(c, v, r, join(p, sizeof(p), path, "mounts"));
    if ((v = get(n, "landlock")))
        want_bool(c, v, join(p, sizeof(p), path, "landlock"), &r->landlock);
    if ((v = get(n, "user")) && want_count(c, v, join(p, sizeof(p), path, "user"), 0, 65534, &u))
        r->uid = (uid_t)u;
    if ((v = get(n, "group")) && want_count(c, v, join(p, sizeof(p), path, "group"), 0, 65534, &u))
        r->gid = (gid_t)u;
    if ((v = get(n, "tmp_size")))
        want_size(c, v, join(p, sizeof(p), path, "tmp_size"), 1u << 20, 1ull << 40, &r->tmp_size);
    if ((v = get(n, "nofile")))
        want_count(c, v, join(p, sizeof(p), path, "nofile"), 16, 1u << 20, &r->nofile);
    if ((v = get(n, "seccomp")))
        load_seccomp(c, v, r, si, join(p, sizeof(p), path, "seccomp"));
}

static void load_budgets(struct lctx *c, const cJSON *n, struct policy_role *r, const char *path)
{
    static const char *const keys[] = {
        "memory",        "pids",          "cpus",        "wall_time",
        "output_bytes",  "storage_bytes", "liveness_interval", "compute_time"};
    if (!check_object(c, n, path, keys, ARRAY_SIZE(keys)))
        return;
    struct policy_budgets *b = &r->budgets;
    char p[256];
    const cJSON *v;
    if ((v = get(n, "memory")))
        want_size(c, v, join(p, sizeof(p), path, "memory"), 4u << 20, 1ull << 42, &b->memory);
    if ((v = get(n, "pids")))
        want_count(c, v, join(p, sizeof(p), path, "pids"), 1, 4194304, &b->pids);
    if ((v = get(n, "cpus"))) {
        join(p, sizeof(p), path, "cpus");
        if (!cJSON_IsNumber(v))
            ERR_VAL(c, v, "%s must be a number of CPUs (0.5 is half of one), not %s", p, type_name(v));
        else if (!isfinite(v->valuedouble) || v->valuedouble < 0.01 || v->valuedouble > 1024)
            ERR_VAL(c, v, "%s must be from 0.01 to 1024 CPUs, not %g", p, v->valuedouble);
        else
            b->cpus = v->valuedouble;
    }
    if ((v = get(n, "wall_time")))
        want_seconds(c, v, join(p, sizeof(p), path, "wall_time"), true, &b->wall_time);
    if ((v = get(n, "output_bytes")))
        want_size(c, v, join(p, sizeof(p), path, "output_bytes"), 0, 1ull << 40, &b->output_bytes);
    if ((v = get(n, "storage_bytes")))
        want_size(c, v, join(p, sizeof(p), path, "storage_bytes"), 0, 1ull << 50, &b->storage_bytes);
    if ((v = get(n, "liveness_interval")))
        want_seconds(c, v, join(p, sizeof(p), path, "liveness_interval"), true, &b->liveness_interval);
    if ((v = get(n, "compute_time")))
        want_seconds(c, v, join(p, sizeof(p), path, "compute_time"), true, &b->compute_time);
}

static void load_authority(struct lctx *c, const cJSON *n, struct policy_role *r, const char *path)
{
    static const char *const keys[] = {"write", "commands", "network"};
    if (!check_object(c, n, path, keys, ARRAY_SIZE(keys)))
        return;
    struct policy_authority ceil = roles_authority_ceiling(r->base);
    bool *dst[] = {&r->authority.write, &r->authority.commands, &r->authority.network};
    bool max[] = {ceil.write, ceil.commands, ceil.network};
    static const char *const why[] = {"it modifies no workspace files", "it runs no commands", ""};
    for (size_t i = 0; i < 3; i++) {
        const cJSON *v = get(n, keys[i]);
        char p[256];
        bool b;
        if (!v || !want_bool(c, v, join(p, sizeof(p), path, keys[i]), &b))
            continue;
        if (b && !max[i]) {
            ERR_VAL(c, v,
                    "%s: a role based on '%s' cannot have %s authority (%s); set it to false, "
                    "or base the role on 'worker'",
                    p, policy_base_name(r->base), keys[i], why[i]);
            continue;
        }
        *dst[i] = b;
    }
}

static void role_defaults(struct policy_role *r)
{
    r->surface = "wap";
    r->net = SANDBOX_NET_NONE;
    r->landlock = true;
    r->uid = 1000;
    r->gid = 1000;
    r->tmp_size = 64u << 20;
    r->budgets = (struct policy_budgets){.memory = 256u << 20,
                                         .pids = 256,
                                         .cpus = 1.0,
                                         .output_bytes = 8u << 20,
                                         .storage_bytes = 1u << 30};
}

/* Fixed order whatever the order of keys: authority decides what tools and groups may be had. */
static void load_role_settings(struct lctx *c, const cJSON *rj, struct policy_role *r,
                               struct tool_intent *ti, struct sc_intent *si, const char *path)
{
    static const char *const surfaces[] = {"wap", "file", "voltagent", "kward"};
    char p[256];
    const cJSON *v;
    if ((v = get(rj, "description")) &&
        want_string(c, v, join(p, sizeof(p), path, "description"), &r->description))
        r->description = policy_strdup(c->p, r->description);
    if ((v = get(rj, "authority")))
        load_authority(c, v, r, join(p, sizeof(p), path, "authority"));
    int s;
    if ((v = get(rj, "surface")) &&
        want_enum(c, v, join(p, sizeof(p), path, "surface"), surfaces, 4, &s) &&
        strcmp(r->surface, surfaces[s])) {
        r->surface = surfaces[s];
        tools_reset(r, ti);
        r->limits = (struct policy_tool_limits){0};
    }
    if ((v = get(rj, "sandbox")))
        load_sandbox(c, v, r, si, join(p, sizeof(p), path, "sandbox"));
    if ((v = get(rj, "budgets")))
        load_budgets(c, v, r, join(p, sizeof(p), path, "budgets"));
    if ((v = get(rj, "tools")))
        load_tools(c, v, r, ti, join(p, sizeof(p), path, "tools"));
}

/* After all settings: tool enablement and seccomp groups follow authority; what was asked for
 * explicitly beyond it is an error, never silently dropped. */
static void finalize_role(struct lctx *c, struct policy_role *r, const cJSON *rj,
                          const struct tool_intent *ti, const struct sc_intent *si, const char *path)
{
    for (size_t i = 0; i < r->n_tools; i++) {
        struct policy_tool_view *t = &r->tools[i];
        bool permitted = t->kind == POLICY_TOOL_READ ||
                         (t->kind == POLICY_TOOL_WRITE && r->authority.write) ||
                         (t->kind == POLICY_TOOL_COMMAND && r->authority.commands);
        if (ti->state[i] == 1 && !permitted) {
            const char *what = t->kind == POLICY_TOOL_WRITE ? "write" : "commands";
            err_at(c, ti->src[i] ? jsonc_val_off(c->doc, ti->src[i]) : jsonc_key_off(c->doc, rj),
                   "%s.tools.enabled: '%s' needs %s authority, which role '%s' does not have; set "
                   "%s.authority.%s to true or do not enable the tool",
                   path, t->name, what, S(c, r->name), path, what);
        }
        t->enabled = ti->state[i] == 0 ? permitted : ti->state[i] == 1 && permitted;
    }
    uint32_t asked = si->allow_set ? si->allow_groups : SANDBOX_SC_DEFAULT_GROUPS;
    asked &= ~si->deny_groups;
    uint32_t narrowed = derive_narrow_groups(r->base, &r->authority, asked);
    if (si->allow_set) {
        uint32_t lost = si->allow_groups & ~si->deny_groups & ~narrowed;
        size_t i = 0;
        for (const cJSON *e = si->allow->child; e && lost; e = e->next, i++) {
            uint32_t bit = 0;
            if (!cJSON_IsString(e) || e->valuestring[0] != '@')
                continue;
            if (!strcmp(e->valuestring, "@default"))
                bit = SANDBOX_SC_DEFAULT_GROUPS;
            else if (sandbox_seccomp_group_by_name(e->valuestring, &bit) < 0)
                continue;
            if (!(bit & lost))
                continue;
            if (bit != SANDBOX_SC_DEFAULT_GROUPS)
                ERR_VAL(c, e, "%s.sandbox.seccomp.allow[%zu]: '%s' is not allowed for role '%s': %s",
                        path, i, S(c, e->valuestring), S(c, r->name),
                        (bit & SANDBOX_SC_EXEC) ? "it has no command authority (set "
                                                  "authority.commands to true)"
                                                : "observers cannot open files for writing");
        }
    }
    size_t k = 0;
    for (const cJSON *e = si->allow ? si->allow->child : NULL; e; e = e->next, k++) {
        if (!cJSON_IsString(e) || (narrowed & SANDBOX_SC_EXEC))
            continue;
        if (!strcmp(e->valuestring, "execve") || !strcmp(e->valuestring, "execveat"))
            ERR_VAL(c, e,
                    "%s.sandbox.seccomp.allow[%zu]: '%s' needs command authority, which role "
                    "'%s' does not have; set authority.commands to true or remove it",
                    path, k, e->valuestring, S(c, r->name));
    }
    r->groups = narrowed;
    if (r->net != SANDBOX_NET_NONE && !r->authority.network)
        err_at(c, jsonc_key_off(c->doc, rj),
               "%s.sandbox.network is \"%s\" but role '%s' has no "
               "network authority; set %s.authority.network to true or the network to \"none\"",
               path, r->net == SANDBOX_NET_PROXY ? "proxy" : "loopback", S(c, r->name), path);
    for (size_t i = 0; i < r->n_binds; i++)
        if (r->binds[i].writable && !r->authority.write)
            err_at(c, jsonc_key_off(c->doc, rj),
                   "%s.sandbox.mounts: '%s' is mounted read-write but "
                   "role '%s' has no write authority; make the mount \"ro\"%s",
                   path, S(c, r->binds[i].host), S(c, r->name),
                   r->base == POLICY_BASE_OBSERVER ? "" : " or set authority.write to true");
}

static void load_roles(struct lctx *c, const cJSON *roles)
{
    static const char *const derived_keys[] = {"description",      "extends",   "add",     "remove",
                                               "checkpoint_types", "authority", "surface", "tools",
                                               "sandbox",          "budgets"};
    static const char *const base_names[] = {"coordinator", "worker", "observer"};
    size_t nd = 0;
    if (roles && check_object(c, roles, "roles", NULL, 0) == false)
        roles = NULL;
    for (const cJSON *m = roles ? roles->child : NULL; m; m = m->next)
        nd++;
    if (nd > MAX_ROLES) {
        ERR_VAL(c, roles, "roles: %zu roles; at most %d are allowed", nd, MAX_ROLES);
        nd = MAX_ROLES;
    }
    struct policy *p = c->p;
    p->roles = policy_alloc(p, (3 + nd) * sizeof(*p->roles));
    struct tool_intent *ti = calloc(3 + nd, sizeof(*ti));
    struct sc_intent *si = calloc(3 + nd, sizeof(*si));
    const cJSON **src = calloc(3 + nd, sizeof(*src));
    if (!p->roles || !ti || !si || !src) {
        c->oom = true;
        goto out;
    }
    for (int b = 0; b < 3; b++) {
        struct policy_role *r = &p->roles[b];
        role_defaults(r);
        roles_base_init(r, (enum policy_base)b);
        tools_reset(r, &ti[b]);
        const cJSON *rj = get(roles, base_names[b]);
        src[b] = rj;
        if (!rj)
            continue;
        char path[96];
        snprintf(path, sizeof(path), "roles.%s", base_names[b]);
        if (!cJSON_IsObject(rj)) {
            ERR_VAL(c, rj, "%s must be an object, not %s", path, type_name(rj));
            continue;
        }
        for (const cJSON *k = rj->child; k; k = k->next)
            if (!strcmp(k->string, "extends") || !strcmp(k->string, "add") ||
                !strcmp(k->string, "remove") || !strcmp(k->string, "checkpoint_types"))
                ERR_KEY(c, k,
                        "%s: the base role '%s' cannot have '%s' (its capabilities are fixed "
                        "by WACP); define a derived role with \"extends\": \"%s\" instead",
                        path, base_names[b], k->string,
                        b == POLICY_BASE_COORDINATOR ? "worker" : base_names[b]);
        check_object(c, rj, path, derived_keys, ARRAY_SIZE(derived_keys)); /* extends etc.: above */
        r->configured = true;
        load_role_settings(c, rj, r, &ti[b], &si[b], path);
    }
    p->n_roles = 3;
    size_t idx = 0;
    for (const cJSON *m = roles ? roles->child : NULL; m && idx < nd; m = m->next, idx++) {
        bool is_base = false;
        for (int b = 0; b < 3; b++)
            is_base |= !strcmp(m->string, base_names[b]);
        if (is_base)
            continue;
        char path[128];
        snprintf(path, sizeof(path), "roles.%s", S(c, m->string));
        if (!is_ident(m->string, strlen(m->string))) {
            ERR_KEY(c, m, "%s: a role name is 1 to 64 letters, digits, '_', '-' or '.'", path);
            continue;
        }
        bool dup = false;
        for (size_t i = 3; i < p->n_roles; i++)
            dup |= !strcmp(p->roles[i].name, m->string);
        if (dup || !check_object(c, m, path, derived_keys, ARRAY_SIZE(derived_keys)))
            continue; /* check_object has reported the duplicate */
        const cJSON *ext = get(m, "extends");
        int b = -1;
        if (!ext) {
            const char *sug = policy_suggest(m->string, base_names, 3);
            ERR_KEY(c, m,
                    "%s: '%s' is not a base role, so it needs \"extends\": \"worker\" or "
                    "\"observer\"%s%s%s",
                    path, S(c, m->string), sug ? " (or did you mean '" : "", sug ? sug : "",
                    sug ? "'?)" : "");
            continue;
        }
        const char *es;
        if (!want_string(c, ext, "extends", &es))
            continue;
        for (int k = 0; k < 3; k++)
            if (!strcmp(es, base_names[k]))
                b = k;
        if (b == POLICY_BASE_COORDINATOR) {
            ERR_VAL(c, ext,
                    "%s.extends: the coordinator role cannot be extended (one coordinator "
                    "per run, and its capabilities are already the ceiling); extend 'worker' or "
                    "'observer'",
                    path);
            continue;
        }
        if (b < 0) {
            const cJSON *other = get(roles, es);
            if (other && other != m)
                ERR_VAL(c, ext,
                        "%s.extends: '%s' is a derived role, and derived roles cannot be "
                        "extended (single-level inheritance); extend its base role instead",
                        path, S(c, es));
            else {
                const char *sug = policy_suggest(es, base_names, 3);
                ERR_VAL(c, ext,
                        "%s.extends: unknown role '%s'; a derived role extends 'worker' or "
                        "'observer'%s%s%s",
                        path, S(c, es), sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
            }
            continue;
        }
        size_t i = p->n_roles++;
        struct policy_role *r = &p->roles[i];
        *r = p->roles[b];
        ti[i] = ti[b];
        si[i] = si[b];
        src[i] = m;
        r->name = policy_strdup(p, m->string);
        r->derived = true;
        r->configured = true;
        r->description = NULL;
        if (!r->name) {
            c->oom = true;
            break;
        }
        load_caps(c, roles, m, r, path);
        load_role_settings(c, m, r, &ti[i], &si[i], path);
    }
    for (size_t i = 0; i < p->n_roles; i++) {
        char path[128];
        snprintf(path, sizeof(path), "roles.%s", S(c, p->roles[i].name));
        finalize_role(c, &p->roles[i], src[i] ? src[i] : roles, &ti[i], &si[i], path);
    }
out:
    free(ti);
    free(si);
    free(src);
}

/* ---- taxonomy: custom envelope and checkpoint types */
static void load_types(struct lctx *c, const cJSON *n, const cJSON *roles, bool envelope)
{
    const char *what = envelope ? "envelope_types" : "checkpoint_types";
    if (!check_object(c, n, what, NULL, 0))
        return;
    static const char *const ekeys[] = {"description", "permissions"};
    static const char *const ckeys[] = {"description", "permitted_roles"};
    static const char *const pkeys[] = {"sender", "receiver"};
    static const char *const ebase[] = {"directive", "feedback", "query"};
    static const char *const cbase[] = {"artifact", "observation"};
    size_t cnt = (size_t)cJSON_GetArraySize(n);
    if (cnt > 256) {
        ERR_VAL(c, n, "%s: at most 256 types", what);
        return;
    }
    const char **names = policy_alloc(c->p, (cnt + 1) * sizeof(*names));
    if (!names) {
        c->oom = true;
        return;
    }
    size_t k = 0;
    for (const cJSON *m = n->child; m; m = m->next) {
        char path[160];
        snprintf(path, sizeof(path), "%s.%s", what, S(c, m->string));
        if (!is_ident(m->string, strlen(m->string))) {
            ERR_KEY(c, m, "%s: a type name is 1 to 64 letters, digits, '_', '-' or '.'", path);
            continue;
        }
        if (type_registered(envelope ? ebase : cbase, envelope ? 3 : 2, m->string, strlen(m->string))) {
            ERR_KEY(c, m,
                    "%s: '%s' is a base type of WACP and cannot be redefined; pick another "
                    "name",
                    path, m->string);
            continue;
        }
        if (!check_object(c, m, path, envelope ? ekeys : ckeys, 2))
            continue;
        const cJSON *v;
        const char *s;
        char p[200];
        if ((v = get(m, "description")))
            want_string(c, v, join(p, sizeof(p), path, "description"), &s);
        const char *lk = envelope ? "permissions" : "permitted_roles";
        v = get(m, lk);
        join(p, sizeof(p), path, lk);
        if (!cJSON_IsArray(v) || !v->child) {
            if (v && !cJSON_IsArray(v))
                ERR_VAL(c, v, "%s must be an array, not %s", p, type_name(v));
            else
                err_at(c, v ? jsonc_val_off(c->doc, v) : jsonc_key_off(c->doc, m),
                       "%s needs at least one %s: a type nobody may %s is useless", p,
                       envelope ? "permission {\"sender\": ROLE, \"receiver\": ROLE}" : "role",
                       envelope ? "send" : "create");
        }
        size_t i = 0;
        for (const cJSON *e = cJSON_IsArray(v) ? v->child : NULL; e; e = e->next, i++) {
            char ep[240];
            snprintf(ep, sizeof(ep), "%s[%zu]", p, i);
            const cJSON *rs[2] = {e, NULL};
            if (envelope) {
                if (!check_object(c, e, ep, pkeys, 2))
                    continue;
                rs[0] = get(e, "sender");
                rs[1] = get(e, "receiver");
                if (!rs[0] || !rs[1]) {
                    ERR_VAL(c, e, "%s needs both \"sender\" and \"receiver\" roles", ep);
                    continue;
                }
            }
            for (int j = 0; j < 2 && rs[j]; j++) {
                const char *rn;
                if (want_string(c, rs[j], ep, &rn) && !role_name_exists(roles, rn, strlen(rn)))
                    ERR_VAL(c, rs[j], "%s: unknown role '%s'; define it under roles", ep, S(c, rn));
            }
        }
        if (!(names[k++] = policy_strdup(c->p, m->string)))
            c->oom = true;
    }
    if (envelope) {
        c->p->envelope_types = names;
        c->p->n_envelope_types = k;
    } else {
        c->p->checkpoint_types = names;
        c->p->n_checkpoint_types = k;
    }
}

/* ---- agents */
/* Only a binary no unprivileged user can replace is ever started: a root-owned regular executable
 * file in directories only root can write (the sticky bit aside), like sshd's StrictModes. */
static void check_binary(struct lctx *c, const cJSON *n, const char *p, const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        ERR_VAL(c, n, "%s: '%s' cannot be used: %s; install the agent there or fix the path", p,
                S(c, path), strerror(errno));
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        ERR_VAL(c, n, "%s: '%s' is not a regular file", p, S(c, path));
        return;
    }
    if (!(st.st_mode & 0111)) {
        ERR_VAL(c, n, "%s: '%s' is not executable; chmod 755 it", p, S(c, path));
        return;
    }
    if (st.st_uid != 0) {
        ERR_VAL(c, n,
                "%s: '%s' is owned by uid %u, who could replace what corral runs; make it "
                "owned by root (chown root: '%s')",
                p, S(c, path), (unsigned)st.st_uid, S(c, path));
        return;
    }
    if (st.st_mode & 022) {
        ERR_VAL(c, n,
                "%s: '%s' is writable by %s, who could replace what corral runs; chmod go-w "
                "it",
                p, S(c, path), (st.st_mode & 002) ? "every user" : "its group");
        return;
    }
    char *real = realpath(path, NULL);
    if (!real)
        return;
    for (char *slash = strrchr(real, '/'); slash; slash = strrchr(real, '/')) {
        *slash = '\0';
        const char *dir = *real ? real : "/";
        if (stat(dir, &st) == 0 && (st.st_uid != 0 || ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))) {
            ERR_VAL(c, n,
                    "%s: the directory '%s' holding '%s' is %s, so the binary could be "
                    "replaced; install it in a root-owned directory no one else can write",
                    p, S(c, dir), S(c, path),
                    st.st_uid != 0 ? "owned by a non-root user"
                                   : "writable "
                                     "by other users");
            break;
        }
        if (!*real)
            break;
    }
    free(real);
}

static void load_agents(struct lctx *c, const cJSON *n)
{
    if (!check_object(c, n, "agents", NULL, 0))
        return;
    static const char *const keys[] = {"description", "binary", "args", "env", "role"};
    size_t cnt = (size_t)cJSON_GetArraySize(n);
    if (cnt > MAX_AGENTS) {
        ERR_VAL(c, n, "agents: at most %d agents", MAX_AGENTS);
        return;
    }
    struct policy *p = c->p;
    p->agents = policy_alloc(p, (cnt + 1) * sizeof(*p->agents));
    if (!p->agents) {
        c->oom = true;
        return;
    }
    const cJSON *coordinator = NULL;
    for (const cJSON *m = n->child; m; m = m->next) {
        char path[128], q[160];
        snprintf(path, sizeof(path), "agents.%s", S(c, m->string));
        if (!is_ident(m->string, strlen(m->string))) {
            ERR_KEY(c, m, "%s: an agent name is 1 to 64 letters, digits, '_', '-' or '.'", path);
            continue;
        }
        if (!check_object(c, m, path, keys, ARRAY_SIZE(keys)))
            continue;
        struct policy_agent a = {.name = policy_strdup(p, m->string)};
        const cJSON *v;
        bool ok = true;
        const char *s;
        if (!(v = get(m, "binary"))) {
            ERR_KEY(c, m, "%s needs \"binary\": the absolute path of the program to run", path);
            ok = false;
        } else if (want_abs_path(c, v, join(q, sizeof(q), path, "binary"), &s)) {
            size_t before = c->errors;
            check_binary(c, v, q, s);
            ok &= c->errors == before;
            a.binary = policy_strdup(p, s);
        } else {
            ok = false;
        }
        const char **args = NULL;
        size_t nargs = 0;
        if ((v = get(m, "args")))
            ok &= want_strings(c, v, join(q, sizeof(q), path, "args"), 4096, &args, &nargs);
        const char **argv = policy_alloc(p, (nargs + 2) * sizeof(*argv));
        if (!argv) {
            c->oom = true;
            return;
        }
        argv[0] = a.binary;
        for (size_t i = 0; i < nargs; i++)
            argv[i + 1] = args[i];
        a.argv = argv;
        a.argc = nargs + 1;
        if ((v = get(m, "env"))) {
            join(q, sizeof(q), path, "env");
            if (!check_object(c, v, q, NULL, 0)) {
                ok = false;
            } else {
                size_t ne = (size_t)cJSON_GetArraySize(v), k = 0;
                if (ne > 1024) {
                    ERR_VAL(c, v, "%s has %zu variables; at most 1024 are allowed", q, ne);
                    ne = 0;
                    ok = false;
                }
                const char **env = policy_alloc(p, (ne + 1) * sizeof(*env));
                if (!env) {
                    c->oom = true;
                    return;
                }
                for (const cJSON *e = ne ? v->child : NULL; e; e = e->next) {
                    char ep[240];
                    snprintf(ep, sizeof(ep), "%s.%s", q, S(c, e->string));
                    const char *key = e->string;
                    bool good = (key[0] < '0' || key[0] > '9') && *key;
                    for (const char *x = key; *x; x++)
                        good &= (*x >= 'A' && *x <= 'Z') || (*x >= 'a' && *x <= 'z') ||
                                (*x >= '0' && *x <= '9') || *x == '_';
                    if (!good) {
                        ERR_KEY(c, e,
                                "%s: an environment name is letters, digits and '_', not "
                                "starting with a digit",
                                ep);
                        ok = false;
                        continue;
                    }
                    if (!cJSON_IsString(e)) {
                        ERR_VAL(c, e, "%s must be a string, not %s", ep, type_name(e));
                        ok = false;
                        continue;
                    }
                    char *kv = util_printf("%s=%s", key, e->valuestring);
                    if (!kv) {
                        c->oom = true;
                        return;
                    }
                    env[k++] = policy_strdup(p, kv);
                    free(kv);
                }
                a.env = env;
                a.n_env = k;
            }
        }
        if (!(v = get(m, "role"))) {
            ERR_KEY(c, m, "%s needs \"role\": the role it runs with", path);
            ok = false;
        } else if (want_string(c, v, join(q, sizeof(q), path, "role"), &s)) {
            const struct policy_role *r = policy_role_find(p, s);
            if (!r) {
                const char *names[MAX_ROLES + 3];
                for (size_t i = 0; i < p->n_roles; i++)
                    names[i] = p->roles[i].name;
                const char *sug = policy_suggest(s, names, p->n_roles);
                ERR_VAL(c, v, "%s: unknown role '%s'%s%s%s", q, S(c, s),
                        sug ? "; did you mean '" : "; define it under roles", sug ? sug : "",
                        sug ? "'?" : "");
                ok = false;
            } else if (r->base == POLICY_BASE_COORDINATOR) {
                if (coordinator) {
                    ERR_VAL(c, v,
                            "%s: agent '%s' already holds the coordinator role, and WACP "
                            "allows exactly one coordinator per run",
                            q, S(c, coordinator->string));
                    ok = false;
                }
                coordinator = m;
            }
            a.role = policy_strdup(p, s);
        } else {
            ok = false;
        }
        if (get(m, "description"))
            want_string(c, get(m, "description"), join(q, sizeof(q), path, "description"), &s);
        if (ok)
            p->agents[p->n_agents++] = a;
    }
}

/* ---- session-level settings for the runtime */
static const char *const gate_names[] = {"task_approval", "workspace_create",    "envelope_delivery",
                                         "integration",   "conflict_resolution", "workspace_abort",
                                         "tool_call"};

const char *policy_gate_name(enum policy_gate g)
{
    return (unsigned)g < POLICY_GATE_COUNT ? gate_names[g] : "?";
}

const char *policy_fallback_name(enum policy_fallback f)
{
    switch (f) {
    case POLICY_FALLBACK_APPROVE: return "approve";
    case POLICY_FALLBACK_REJECT: return "reject";
    case POLICY_FALLBACK_ESCALATE: return "escalate_to_coordinator";
    }
    return "?";
}

/* The three presets of the human highway spec, section 5. */
static void highway_preset(struct policy_highway *h, int preset)
{
    static const char *const names[] = {"autonomous", "supervised", "gated"};
    *h = (struct policy_highway){
        .preset = names[preset], .visibility = true, .injection = true, .escalation = true};
    for (int g = 0; g < POLICY_GATE_COUNT; g++)
        h->gates[g] = (struct policy_gate_rule){
            .enabled = preset == 2, .timeout = 0, .fallback = POLICY_FALLBACK_REJECT};
    switch (preset) {
    case 0:
        h->gates[POLICY_GATE_TASK_APPROVAL] = (struct policy_gate_rule){true, 30,
                                                                        POLICY_FALLBACK_APPROVE};
        h->escalation_timeout = 60;
        h->escalation_fallback = POLICY_FALLBACK_ESCALATE;
        break;
    case 1:
        for (int g = 0; g < POLICY_GATE_COUNT; g++)
            h->gates[g] = (struct policy_gate_rule){false, 600, POLICY_FALLBACK_ESCALATE};
        h->gates[POLICY_GATE_TASK_APPROVAL].enabled = true;
        h->gates[POLICY_GATE_INTEGRATION].enabled = true;
        h->escalation_timeout = 1800;
        h->escalation_fallback = POLICY_FALLBACK_REJECT;
        break;
    default:
        h->escalation_timeout = 0;
        h->escalation_fallback = POLICY_FALLBACK_REJECT;
        break;
    }
    /* A needs_approval tool is the admin's word that it must not run unseen: never approved by
     * a timeout unless the policy says so. */
    h->tool_call = (struct policy_gate_rule){true, preset == 2 ? 0 : 300, POLICY_FALLBACK_REJECT};
}

static void load_timeout_fallback(struct lctx *c, const cJSON *n, const char *path, bool escalation,
                                  double *timeout, enum policy_fallback *fb)
{
    static const char *const gate_fb[] = {"approve", "reject", "escalate_to_coordinator"};
    static const char *const esc_fb[] = {"approve", "reject", "delegate_to_coordinator"};
    char p[256];
    const cJSON *v;
    int e;
    if ((v = get(n, "timeout"))) {
        if (cJSON_IsNull(v))
            *timeout = 0;
        else
            want_seconds(c, v, join(p, sizeof(p), path, "timeout"), false, timeout);
    }
    if ((v = get(n, "fallback")) &&
        want_enum(c, v, join(p, sizeof(p), path, "fallback"), escalation ? esc_fb : gate_fb, 3, &e))
        *fb = (enum policy_fallback)e;
}

static void load_highway(struct lctx *c, const cJSON *n)
{
    static const char *const keys[] = {"preset",        "visibility",     "injection", "gates",
                                       "gate_defaults", "gate_overrides", "escalation"};
    static const char *const presets[] = {"autonomous", "supervised", "gated"};
    struct policy_highway *h = &c->p->highway;
    if (!check_object(c, n, "highway", keys, ARRAY_SIZE(keys)))
        return;
    const cJSON *v;
    int e;
    if ((v = get(n, "preset")) && want_enum(c, v, "highway.preset", presets, 3, &e))
        highway_preset(h, e);
    if ((v = get(n, "visibility")))
        want_bool(c, v, "highway.visibility", &h->visibility);
    if ((v = get(n, "injection")))
        want_bool(c, v, "highway.injection", &h->injection);
    if ((v = get(n, "gates")) && check_object(c, v, "highway.gates", gate_names, POLICY_GATE_COUNT))
        for (int g = 0; g < POLICY_GATE_COUNT; g++) {
            char p[96];
            const cJSON *x = get(v, gate_names[g]);
            if (x)
                want_bool(c, x, join(p, sizeof(p), "highway.gates", gate_names[g]),
                          &h->gates[g].enabled);
        }
    static const char *const tf[] = {"timeout", "fallback"};
    if ((v = get(n, "gate_defaults")) && check_object(c, v, "highway.gate_defaults", tf, 2))
        for (int g = 0; g <= POLICY_GATE_COUNT; g++) {
            struct policy_gate_rule *r = g < POLICY_GATE_COUNT ? &h->gates[g] : &h->tool_call;
            load_timeout_fallback(c, v, "highway.gate_defaults", false, &r->timeout, &r->fallback);
        }
    /* gate_overrides: the six WACP types and corral's tool_call (gate_names has room for it). */
    if ((v = get(n, "gate_overrides")) &&
        check_object(c, v, "highway.gate_overrides", gate_names, POLICY_GATE_COUNT + 1))
        for (int g = 0; g <= POLICY_GATE_COUNT; g++) {
            char p[96];
            const cJSON *x = get(v, gate_names[g]);
            struct policy_gate_rule *r = g < POLICY_GATE_COUNT ? &h->gates[g] : &h->tool_call;
            join(p, sizeof(p), "highway.gate_overrides", gate_names[g]);
            if (x && check_object(c, x, p, tf, 2))
                load_timeout_fallback(c, x, p, false, &r->timeout, &r->fallback);
        }
    static const char *const ek[] = {"enabled", "timeout", "fallback"};
    if ((v = get(n, "escalation")) && check_object(c, v, "highway.escalation", ek, 3)) {
        const cJSON *x = get(v, "enabled");
        if (x)
            want_bool(c, x, "highway.escalation.enabled", &h->escalation);
        load_timeout_fallback(c, v, "highway.escalation", true, &h->escalation_timeout,
                              &h->escalation_fallback);
    }
}

/* The long form of a user: {"user_id", "approve": [gate types | "all"], "inject", "escalations":
 * "own" | "all" | "none", "state"}. What is not listed is not allowed. */
static bool load_user_rights(struct lctx *c, const cJSON *m, const char *path, struct policy_user *u)
{
    static const char *const keys[] = {"user_id", "approve", "inject", "escalations", "state"};
    static const char *const esc[] = {"own", "all", "none"};
    static const char *const states[] = {"active", "suspended", "blocked", "deactivated"};
    char p[160];
    if (!check_object(c, m, path, keys, ARRAY_SIZE(keys)))
        return false;
    u->approve = 0;
    u->inject = false;
    u->escalations = POLICY_USER_ESC_OWN;
    const cJSON *v, *x;
    int e;
    if ((v = get(m, "approve"))) {
        join(p, sizeof(p), path, "approve");
        if (!cJSON_IsArray(v))
            ERR_VAL(c, v, "%s: a list of gate types (or \"all\")", p);
        cJSON_ArrayForEach (x, v) {
            if (cJSON_IsString(x) && !strcmp(x->valuestring, "all")) {
                u->approve = POLICY_USER_APPROVE_ALL;
                continue;
            }
            if (want_enum(c, x, p, gate_names, POLICY_GATE_COUNT + 1, &e))
                u->approve |= 1u << e;
        }
    }
    if ((v = get(m, "inject")))
        want_bool(c, v, join(p, sizeof(p), path, "inject"), &u->inject);
    if ((v = get(m, "escalations")) &&
        want_enum(c, v, join(p, sizeof(p), path, "escalations"), esc, 3, &e))
        u->escalations = (enum policy_user_esc)e;
    if ((v = get(m, "state")) && want_enum(c, v, join(p, sizeof(p), path, "state"), states, 4, &e))
        u->state = states[e];
    return true;
}

static void load_users(struct lctx *c, const cJSON *n)
{
    if (!check_object(c, n, "users", NULL, 0))
        return;
    size_t cnt = (size_t)cJSON_GetArraySize(n);
    if (cnt > 4096) {
        ERR_VAL(c, n, "users: at most 4096 users");
        return;
    }
    struct policy *p = c->p;
    p->users = policy_alloc(p, (cnt + 1) * sizeof(*p->users));
    if (!p->users) {
        c->oom = true;
        return;
    }
    for (const cJSON *m = n->child; m; m = m->next) {
        char path[128];
        snprintf(path, sizeof(path), "users.%s", S(c, m->string));
        uint64_t uid;
        if (util_parse_u64(m->string, &uid) < 0 || uid >= UINT32_MAX) {
            ERR_KEY(c, m, "%s: a key of users is a numeric uid (\"1000\"), not '%s'", path,
                    S(c, m->string));
            continue;
        }
        struct policy_user u = {.uid = (uid_t)uid,
                                .approve = POLICY_USER_APPROVE_ALL,
                                .inject = true,
                                .escalations = POLICY_USER_ESC_ALL};
        const cJSON *idn = cJSON_IsObject(m) ? get(m, "user_id") : m;
        if (cJSON_IsObject(m) && !load_user_rights(c, m, path, &u))
            continue;
        const char *s;
        if (!idn) {
            ERR_VAL(c, m, "%s: a user needs a user_id", path);
            continue;
        }
        if (!want_string(c, idn, path, &s))
            continue;
        if (!is_ident(s, strlen(s)) && !strchr(s, '@')) {
            ERR_VAL(c, m, "%s: a user_id is 1 to 64 letters, digits, '_', '-', '.' or '@'", path);
            continue;
        }
        u.user_id = policy_strdup(p, s);
        p->users[p->n_users++] = u;
    }
}

static void load_trail(struct lctx *c, const cJSON *n)
{
    static const char *const keys[] = {"path", "durability"};
    static const char *const dur[] = {"full", "normal"};
    if (!check_object(c, n, "trail", keys, 2))
        return;
    const cJSON *v;
    const char *s;
    int e;
    if ((v = get(n, "path")) && want_string(c, v, "trail.path", &s))
        c->p->trail_path = policy_strdup(c->p, s);
    if ((v = get(n, "durability")) && want_enum(c, v, "trail.durability", dur, 2, &e))
        c->p->trail_full = e == 0;
}

/* protected_paths: workspace-relative globs ("**" + "/.git/config"), each checked here so a typo
 * is an error, never a protection silently lost. */
static void load_protected(struct lctx *c, const cJSON *n)
{
    const char **v = NULL;
    size_t k = 0;
    if (!want_strings(c, n, "protected_paths", 256, &v, &k))
        return;
    size_t i = 0;
    for (const cJSON *e = n->child; e; e = e->next, i++) {
        const char *s = v[i];
        if (!s)
            continue;
        size_t len = strlen(s);
        if (!len || len > 1024 || s[0] == '/' || s[len - 1] == '/' || strstr(s, "//")) {
            ERR_VAL(c, e,
                    "protected_paths[%zu]: a workspace-relative glob (\".git/config\", "
                    "\"**/.git/hooks/**\"), "
                    "1 to 1024 bytes, no leading or trailing '/'",
                    i);
            continue;
        }
        for (const char *q = s; *q; q++)
            if (*q == '[' && !strchr(q, ']')) {
                ERR_VAL(c, e, "protected_paths[%zu]: '[' opens a class that is never closed", i);
                break;
            }
    }
    c->p->protected_paths = v;
    c->p->n_protected_paths = k;
}

/* rate_limits: requests a second per workspace, each 0 (no limit) to 100000. */
static void load_rates(struct lctx *c, const cJSON *n)
{
    static const char *const keys[] = {"signals", "envelopes", "checkpoints", "tool_calls"};
    if (!check_object(c, n, "rate_limits", keys, ARRAY_SIZE(keys)))
        return;
    uint32_t *dst[] = {&c->p->rates.signals, &c->p->rates.envelopes, &c->p->rates.checkpoints,
                       &c->p->rates.tool_calls};
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        const cJSON *v = get(n, keys[i]);
        uint64_t x;
        char path[64];
        snprintf(path, sizeof(path), "rate_limits.%s", keys[i]);
        if (v && want_count(c, v, path, 0, 100000, &x))
            *dst[i] = (uint32_t)x;
    }
}

static int load_doc(struct jsonc_doc *doc, struct policy **out, struct policy_diags *d)
{
    static const char *const keys[] = {
        "version",        "description",     "roles",       "envelope_types", "checkpoint_types",
        "agents",         "highway",         "users",       "trail",          "max_message",
        "max_workspaces", "protected_paths", "rate_limits", "$schema"};
    struct policy *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    struct lctx c = {.doc = doc, .d = d, .p = p};
    const cJSON *root = doc->root, *v;
    p->trail_full = true;
    p->max_message = 8u << 20;
    p->rates = (struct policy_rates){.signals = 20, .envelopes = 20, .checkpoints = 5, .tool_calls = 50};
    p->max_workspaces = POLICY_DEFAULT_MAX_WORKSPACES;
    highway_preset(&p->highway, 1);
    if (check_object(&c, root, "", keys, ARRAY_SIZE(keys))) {
        uint64_t ver;
        if ((v = get(root, "version")))
            want_count(&c, v, "version", 1, 1, &ver);
        const char *s;
        if ((v = get(root, "description")))
            want_string(&c, v, "description", &s);
        if ((v = get(root, "$schema"))) /* for editors: names docs/policy.schema.json */
            want_string(&c, v, "$schema", &s);
        const cJSON *roles = get(root, "roles");
        if ((v = get(root, "envelope_types")))
            load_types(&c, v, roles, true);
        if ((v = get(root, "checkpoint_types")))
            load_types(&c, v, roles, false);
        load_roles(&c, roles);
        if ((v = get(root, "agents")))
            load_agents(&c, v);
        if ((v = get(root, "highway")))
            load_highway(&c, v);
        if ((v = get(root, "users")))
            load_users(&c, v);
        if ((v = get(root, "trail")))
            load_trail(&c, v);
        if ((v = get(root, "max_message")))
            want_size(&c, v, "max_message", 1024, 1u << 30, &p->max_message);
        if ((v = get(root, "protected_paths")))
            load_protected(&c, v);
        if ((v = get(root, "rate_limits")))
            load_rates(&c, v);
        if ((v = get(root, "max_workspaces")))
            want_count(&c, v, "max_workspaces", 1, POLICY_MAX_MAX_WORKSPACES, &p->max_workspaces);
    }
    if (c.oom) {
        policy_free(p);
        policy_diags_add(d, doc->name, 0, 0, "out of memory while loading the policy");
        return -ENOMEM;
    }
    if (c.errors) {
        policy_free(p);
        return -EINVAL;
    }
    *out = p;
    return 0;
}

/* Problems in file order (the checks run in a fixed order, not the file's): by line, column,
 * then the order they were found. */
static void sort_diags(struct policy_diags *d, size_t from)
{
    for (size_t i = from + 1; i < d->n; i++) {
        struct policy_diag x = d->v[i];
        size_t j = i;
        while (j > from &&
               (d->v[j - 1].line > x.line || (d->v[j - 1].line == x.line && d->v[j - 1].col > x.col))) {
            d->v[j] = d->v[j - 1];
            j--;
        }
        d->v[j] = x;
    }
}

int policy_load_buffer(const char *name, const char *data, size_t len, struct policy **out,
                       struct policy_diags *diags)
{
    struct jsonc_doc doc;
    *out = NULL;
    size_t from = diags ? diags->n : 0;
    int r = jsonc_parse(&doc, name, data, len, diags);
    if (r == 0)
        r = load_doc(&doc, out, diags);
    jsonc_free(&doc);
    if (diags)
        sort_diags(diags, from);
    return r;
}

int policy_load_file(const char *path, struct policy **out, struct policy_diags *diags)
{
    *out = NULL;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        policy_diags_add(diags, path, 0, 0, "cannot open the policy: %s", strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        policy_diags_add(diags, path, 0, 0, "not a regular file");
        return -EINVAL;
    }
    if (st.st_size > 16 << 20) {
        policy_diags_add(diags, path, 0, 0, "the file is larger than 16 MiB; a policy is small");
        return -EFBIG;
    }
    size_t cap = (size_t)st.st_size + 1;
    _cleanup_free_ char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    ssize_t n = util_read_all(fd, buf, cap);
    if (n < 0) {
        policy_diags_add(diags, path, 0, 0, "cannot read the policy: %s", strerror((int)-n));
        return (int)n;
    }
    if ((size_t)n == cap) {
        policy_diags_add(diags, path, 0, 0, "the file grew while being read; try again");
        return -EAGAIN;
    }
    return policy_load_buffer(path, buf, (size_t)n, out, diags);
}
