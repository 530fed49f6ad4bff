/* tools/voltagent/skills.c: the skills toolkit of the VoltAgent surface: SKILL.md files found
 * under /skills, their YAML front matter read with libyaml, activation per session, and reads of
 * only the files a skill's front matter (or its instructions' links) lists. Upstream's tool
 * names, parameters, defaults and texts (src/workspace/skills/index.ts). */
#include "tools/voltagent/voltagent.h"
#include "tools/voltagent/index.h"
#include "tools/voltagent/toolkit.h"

#include "tools/broker/glob.h"
#include "tools/session.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Upstream's defaults. */
#define SKILL_ROOT "/skills"
#define SKILL_FILE "SKILL.md"
#define SKILL_MAX_FILE_BYTES (512 * 1024)
#define DEFAULT_TOP_K 10
#define DEFAULT_SNIPPET_LENGTH 240
#define DEFAULT_WEIGHT 0.5
/* corral's caps: skills discovered, entries walked under /skills, results. */
#define MAX_SKILLS 500
#define MAX_WALK 20000
#define MAX_TOP_K 100
#define MAX_SNIPPET 10000
#define MAX_ENTRY 1024
#define MAX_ID 1024

/* ---- front matter --------------------------------------------------------------------------- */

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void voltagent_skills_meta_clear(struct voltagent_skill_meta *m)
{
    if (!m)
        return;
    free(m->id);
    free(m->name);
    free(m->description);
    free(m->version);
    strv_free(m->tags, m->n_tags);
    strv_free(m->references, m->n_references);
    strv_free(m->scripts, m->n_scripts);
    strv_free(m->assets, m->n_assets);
    memset(m, 0, sizeof(*m));
}

static bool all_digits(const char *s, size_t n, const char *extra)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] >= '0' && s[i] <= '9') && !(extra && strchr(extra, s[i])))
            return false;
    return true;
}

/* Whether a plain (unquoted, untagged) scalar resolves to something other than a string in
 * js-yaml's default schema: null, a boolean, a number or a timestamp. */
static bool plain_is_typed(const char *s, size_t n)
{
    static const char *const words[] = {"~",     "null",  "Null",  "NULL", "true", "True", "TRUE",
                                        "false", "False", "FALSE", ".inf", ".Inf", ".INF", "-.inf",
                                        "+.inf", "-.Inf", "+.Inf", ".nan", ".NaN", ".NAN"};
    if (!n)
        return true; /* an empty plain value is null */
    for (size_t i = 0; i < ARRAY_SIZE(words); i++)
        if (strlen(words[i]) == n && !memcmp(words[i], s, n))
            return true;
    const char *p = s;
    size_t k = n;
    if (*p == '-' || *p == '+') {
        p++;
        k--;
    }
    if (k > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'o' || p[1] == 'b'))
        return true;
    if (all_digits(p, k, "_"))
        return true;
    /* floats: digits with one '.', and an optional exponent */
    size_t dots = 0, digits = 0, i = 0;
    for (; i < k && ((p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == '_'); i++) {
        dots += p[i] == '.';
        digits += p[i] >= '0' && p[i] <= '9';
    }
    if (dots == 1 && digits) {
        if (i == k)
            return true;
        if ((p[i] == 'e' || p[i] == 'E') && i + 1 < k) {
            size_t j = i + 1 + (p[i + 1] == '-' || p[i + 1] == '+');
            if (j < k && all_digits(p + j, k - j, NULL))
                return true;
        }
    }
    /* timestamps: YYYY-MM-DD, with or without a time after it */
    if (n >= 10 && all_digits(s, 4, NULL) && s[4] == '-' && all_digits(s + 5, 2, NULL) && s[7] == '-' &&
        all_digits(s + 8, 2, NULL) && (n == 10 || s[10] == 'T' || s[10] == 't' || s[10] == ' '))
        return true;
    return false;
}

/* The scalar node as a string, or NULL when it is not one (or on ENOMEM). */
static char *scalar_string(const yaml_node_t *n)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    /* libyaml's loader tags every untagged scalar !!str, so the tag cannot tell an explicit
     * "!!str 1.0" from a plain 1.0: quoting is what makes a number-looking value a string. */
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && plain_is_typed(v, len))
        return NULL;
    if (memchr(v, '\0', len))
        return NULL;
    return strndup(v, len);
}

static char *trim_dup(const char *s)
{
    while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r')))
        n--;
    return strndup(s, n);
}

/* A path a skill lists: backslashes read as slashes (upstream's normalizePath); a ".." segment
 * or '~' makes it unusable. */
static bool entry_ok(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '\\')
            *p = '/';
    if (strchr(s, '~') || strlen(s) > MAX_ENTRY)
        return false;
    for (const char *p = s; (p = strstr(p, "..")); p += 2)
        if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return false;
    return true;
}

/* Upstream's normalizeStringArray: a sequence's strings, trimmed, empties dropped; or one
 * string; NULL (0) when nothing is left. */
static int string_list(yaml_document_t *doc, const yaml_node_t *n, bool paths, char ***out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (!n)
        return 0;
    size_t cap = n->type == YAML_SEQUENCE_NODE
                     ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start)
                     : 1;
    if (cap > VS_SKILL_MAX_LIST)
        cap = VS_SKILL_MAX_LIST;
    if (!cap || (n->type != YAML_SEQUENCE_NODE && n->type != YAML_SCALAR_NODE))
        return 0;
    char **v = calloc(cap, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < cap; i++) {
        const yaml_node_t *item = n->type == YAML_SCALAR_NODE
                                      ? n
                                      : yaml_document_get_node(doc, n->data.sequence.items.start[i]);
        _cleanup_free_ char *s = scalar_string(item);
        char *t = s ? trim_dup(s) : NULL;
        if (!t || !*t || (paths && !entry_ok(t))) {
            free(t);
            continue;
        }
        v[k++] = t;
    }
    if (!k) {
        free(v);
        return 0;
    }
    *out = v;
    *nout = k;
    return 0;
}

/* The line [p, end of line) and where the next begins. */
static size_t line_end(const char *text, size_t len, size_t p, size_t *next)
{
    const char *nl = memchr(text + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - text) : len;
    *next = nl ? e + 1 : len;
    if (e > p && text[e - 1] == '\r')
        e--;
    return e;
}

static void trim_span(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || (**s >= '\t' && **s <= '\r'))) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || ((*s)[*n - 1] >= '\t' && (*s)[*n - 1] <= '\r')))
        (*n)--;
}

int voltagent_skills_frontmatter(const char *text, size_t len, struct voltagent_skill_meta *m,
                                 const char **body, size_t *body_len, struct broker_err *e)
{
    memset(m, 0, sizeof(*m));
    *body = text;
    *body_len = len;
    /* gray-matter: front matter only when the text opens with "---" (a language may follow
     * on that line, "---yaml"); it ends at the next line that starts with "---". */
    if (len < 3 || memcmp(text, "---", 3) || (len > 3 && text[3] == '-')) {
        trim_span(body, body_len);
        return 0;
    }
    size_t next, first_end = line_end(text, len, 0, &next);
    (void)first_end;
    size_t start = next, stop = len, after = len;
    for (size_t p = next; p < len;) {
        size_t nx, le = line_end(text, len, p, &nx);
        if (le - p >= 3 && !memcmp(text + p, "---", 3)) {
            stop = p;
            after = nx;
            break;
        }
        p = nx;
    }
    *body = text + after;
    *body_len = len - after;
    trim_span(body, body_len);
    if (stop - start > VS_SKILL_MAX_FRONTMATTER)
        return broker_fail(e, BROKER_E_INVALID, NULL, "the front matter is longer than %d bytes",
                           VS_SKILL_MAX_FRONTMATTER);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return broker_fail(e, BROKER_E_IO, NULL, "out of memory for the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text + start, stop - start);
    if (!yaml_parser_load(&parser, &doc)) {
        broker_fail(e, BROKER_E_INVALID, NULL, "the front matter is not valid YAML: %.200s (line %zu)",
                    parser.problem ? parser.problem : "parse error", parser.problem_mark.line + 1);
        yaml_parser_delete(&parser);
        return -1;
    }
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)
        root = NULL; /* an empty document */
    if (root && root->type != YAML_MAPPING_NODE) {
        rc = broker_fail(e, BROKER_E_INVALID, NULL, "the front matter must be a YAML mapping");
        goto out;
    }
    for (yaml_node_pair_t *pr = root ? root->data.mapping.pairs.start : NULL;
         pr && pr < root->data.mapping.pairs.top && rc == 0; pr++) {
        yaml_node_t *k = yaml_document_get_node(&doc, pr->key),
                    *v = yaml_document_get_node(&doc, pr->value);
        if (!k || k->type != YAML_SCALAR_NODE)
            continue;
        const char *key = (const char *)k->data.scalar.value;
        char **str = !strcmp(key, "id")            ? &m->id
                     : !strcmp(key, "name")        ? &m->name
                     : !strcmp(key, "description") ? &m->description
                     : !strcmp(key, "version")     ? &m->version
                                                   : NULL;
        if (str) {
            /* A later duplicate key wins, as in js-yaml's non-strict load. */
            free(*str);
            *str = scalar_string(v);
            continue;
        }
        struct {
            const char *key;
            char ***v;
            size_t *n;
            bool paths;
        } lists[] = {{"tags", &m->tags, &m->n_tags, false},
                     {"references", &m->references, &m->n_references, true},
                     {"scripts", &m->scripts, &m->n_scripts, true},
                     {"assets", &m->assets, &m->n_assets, true}};
        for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
            if (strcmp(key, lists[i].key))
                continue;
            strv_free(*lists[i].v, *lists[i].n);
            if (string_list(&doc, v, lists[i].paths, lists[i].v, lists[i].n) < 0)
                rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
        }
    }
out:
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc < 0)
        voltagent_skills_meta_clear(m);
    return rc;
}

/* Upstream's inferSkillFileAllowlistsFromInstructions: relative Markdown link targets under
 * references/, scripts/ or assets/ in the instructions, for the lists the front matter leaves
 * out. */
static int push_unique(char ***v, size_t *n, const char *s, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen((*v)[i]) == len && !memcmp((*v)[i], s, len))
            return 0;
    if (*n >= VS_SKILL_MAX_LIST)
        return 0;
    char **nv = reallocarray(*v, *n + 1, sizeof(**v));
    if (!nv)
        return -ENOMEM;
    *v = nv;
    if (!(nv[*n] = strndup(s, len)))
        return -ENOMEM;
    (*n)++;
    return 0;
}

static int infer_lists(const char *body, size_t len, struct voltagent_skill_meta *inf)
{
    for (size_t i = 0; i + 1 < len; i++) {
        /* [text](target): a '[' with at least one character before its ']'. */
        if (body[i] != '[')
            continue;
        size_t j = i + 1;
        while (j < len && body[j] != ']')
            j++;
        if (j == i + 1 || j + 1 >= len || body[j + 1] != '(')
            continue;
        size_t t = j + 2, te = t;
        while (te < len && body[te] != ')')
            te++;
        if (te >= len)
            continue;
        const char *s = body + t;
        size_t n = te - t;
        trim_span(&s, &n);
        size_t w = 0; /* the target without a title */
        while (w < n && !(s[w] == ' ' || (s[w] >= '\t' && s[w] <= '\r')))
            w++;
        n = w;
        if (n && s[0] == '<') {
            s++;
            n--;
        }
        if (n && s[n - 1] == '>')
            n--;
        for (size_t k = 0; k < n; k++)
            if (s[k] == '#' || s[k] == '?') {
                n = k;
                break;
            }
        if (n >= 2 && s[0] == '.' && s[1] == '/') {
            s += 2;
            n -= 2;
        }
        char buf[MAX_ENTRY + 1];
        if (!n || n > MAX_ENTRY)
            continue;
        memcpy(buf, s, n);
        buf[n] = '\0';
        for (char *p = buf; *p; p++)
            if (*p == '\\')
                *p = '/';
        if (buf[0] == '/' || strstr(buf, "://") || !strncmp(buf, "mailto:", 7) || strstr(buf, "..") ||
            strchr(buf, '~'))
            continue;
        int r = 0;
        if (!strncmp(buf, "references/", 11))
            r = push_unique(&inf->references, &inf->n_references, buf, n);
        else if (!strncmp(buf, "scripts/", 8))
            r = push_unique(&inf->scripts, &inf->n_scripts, buf, n);
        else if (!strncmp(buf, "assets/", 7))
            r = push_unique(&inf->assets, &inf->n_assets, buf, n);
        if (r < 0)
            return r;
        i = te;
    }
    return 0;
}

/* ---- skills --------------------------------------------------------------------------------- */

struct skill {
    struct voltagent_skill_meta m; /* id and name always set here */
    char *path;                    /* "/skills/pdf/SKILL.md" */
    char *root;                    /* "/skills/pdf" */
};

struct voltagent_skills {
    struct skill *v;
    size_t n;
    bool discovered;
    char **active; /* ids, in activation order */
    size_t n_active;
    struct voltagent_index *index; /* built on the first search after a discovery */
};

static void skill_clear(struct skill *s)
{
    voltagent_skills_meta_clear(&s->m);
    free(s->path);
    free(s->root);
}

static void skills_clear_list(struct voltagent_skills *s)
{
    for (size_t i = 0; i < s->n; i++)
        skill_clear(&s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

void voltagent_skills_free(struct voltagent_skills *s)
{
    if (!s)
        return;
    skills_clear_list(s);
    strv_free(s->active, s->n_active);
    voltagent_index_free(s->index);
    free(s);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* A skill's file read and parsed: the front matter, the lists it leaves out filled from the
 * instructions' links (as upstream), the instructions in *body (malloc'd, may be NULL). */
static int load_skill_file(const struct tool_ctx *ctx, const char *path, struct voltagent_skill_meta *m,
                           char **body, struct broker_err *e)
{
    struct broker_read_opts ro = {.max_bytes = SKILL_MAX_FILE_BYTES};
    struct broker_read_result rr;
    if (broker_read(ctx, path, &ro, &rr, e) < 0)
        return -1;
    if (rr.truncated) {
        broker_read_result_clear(&rr);
        return broker_fail(e, BROKER_E_TOO_LARGE, NULL, "%s is larger than %d KiB", path,
                           SKILL_MAX_FILE_BYTES / 1024);
    }
    const char *b;
    size_t bl;
    int r = voltagent_skills_frontmatter(rr.content, rr.len, m, &b, &bl, e);
    if (r == 0) {
        struct voltagent_skill_meta inf = {0};
        if (infer_lists(b, bl, &inf) < 0) {
            r = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
        } else {
#define TAKE(f)               \
    if (!m->f) {              \
        m->f = inf.f;         \
        m->n_##f = inf.n_##f; \
        inf.f = NULL;         \
        inf.n_##f = 0;        \
    }
            TAKE(references)
            TAKE(scripts)
            TAKE(assets)
#undef TAKE
        }
        voltagent_skills_meta_clear(&inf);
        if (r == 0 && body && !(*body = strndup(b, bl)))
            r = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
    }
    if (r < 0)
        voltagent_skills_meta_clear(m);
    broker_read_result_clear(&rr);
    return r;
}

static void note_problem(cJSON *problems, const char *msg)
{
    cJSON *s = problems ? cJSON_CreateString(msg) : NULL;
    if (s && !cJSON_AddItemToArray(problems, s))
        cJSON_Delete(s);
}

/* Upstream's discoverSkills over /skills with "**" + "/SKILL.md": each readable SKILL.md of
 * at most 512 KiB with front matter that parses is a skill; the others are passed over (upstream
 * passes over them silently; corral names them in *problems). */
static int discover(const struct tool_ctx *ctx, struct skill **out, size_t *nout, cJSON *problems)
{
    *out = NULL;
    *nout = 0;
    struct broker_err e = {0};
    const char *const *ex;
    size_t n_ex;
    broker_default_excludes(ctx, &ex, &n_ex);
    struct broker_walk_opts wo = {.recursive = true,
                                  .max_depth = 64,
                                  .exclude = ex,
                                  .n_exclude = n_ex,
                                  .want_meta = true,
                                  .max_entries = MAX_WALK};
    struct broker_list l;
    if (broker_explore(ctx, SKILL_ROOT, &wo, &l, &e) < 0)
        return 0; /* no /skills: no skills, as upstream */
    struct skill *v = calloc(MAX_SKILLS, sizeof(*v));
    if (!v) {
        broker_list_clear(&l);
        return -ENOMEM;
    }
    size_t n = 0;
    int rc = 0;
    for (size_t i = 0; i < l.n && rc == 0; i++) {
        const struct broker_meta *bm = &l.v[i];
        if (bm->is_dir || bm->is_symlink || strcmp(base_name(bm->path), SKILL_FILE))
            continue;
        if (n == MAX_SKILLS) {
            note_problem(problems, "more than 500 skills: the rest were not read");
            break;
        }
        if (bm->size > SKILL_MAX_FILE_BYTES)
            continue;
        struct skill *s = &v[n];
        struct broker_err le = {0};
        if (load_skill_file(ctx, bm->path, &s->m, NULL, &le) < 0) {
            if (le.kind == BROKER_E_IO && !strcmp(le.msg, "out of memory")) {
                rc = -ENOMEM;
                break;
            }
            char msg[800];
            snprintf(msg, sizeof(msg), "%s: %s", bm->path, le.msg);
            note_problem(problems, msg);
            continue;
        }
        s->path = strdup(bm->path);
        size_t rl = strlen(bm->path) - strlen(SKILL_FILE) - 1;
        s->root = rl ? strndup(bm->path, rl) : strdup("/");
        if (!s->path || !s->root) {
            skill_clear(s);
            rc = -ENOMEM;
            break;
        }
        char *name = s->m.name ? trim_dup(s->m.name) : NULL;
        if (!name || !*name) {
            free(name);
            const char *bn = base_name(s->root);
            name = strdup(*bn ? bn : "skill");
        }
        free(s->m.name);
        s->m.name = name;
        char *id = s->m.id ? trim_dup(s->m.id) : NULL;
        if (!id || !*id || strlen(id) > MAX_ID) {
            free(id);
            id = strdup(s->root);
        }
        free(s->m.id);
        s->m.id = id;
        if (!name || !id) {
            skill_clear(s);
            rc = -ENOMEM;
            break;
        }
        /* Two skills with one id: the later gets "-2", "-3", ... as upstream. */
        for (unsigned suffix = 2; rc == 0; suffix++) {
            bool taken = false;
            for (size_t k = 0; k < n && !taken; k++)
                taken = !strcmp(v[k].m.id, s->m.id);
            if (!taken)
                break;
            char *nid = util_printf("%s-%u", id, suffix);
            if (!nid) {
                rc = -ENOMEM;
                break;
            }
            if (s->m.id != id)
                free(s->m.id);
            s->m.id = nid;
        }
        if (s->m.id != id)
            free(id);
        if (rc < 0) {
            skill_clear(s);
            break;
        }
        n++;
    }
    broker_list_clear(&l);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++)
            skill_clear(&v[i]);
        free(v);
        return rc;
    }
    *out = v;
    *nout = n;
    return 0;
}

/* The session's skills, discovered on first use (or again with REFRESH). Called without the
 * session lock (the discovery reads files); takes it to install the result. */
static int ensure_discovered(struct tool_ctx *ctx, bool refresh, cJSON *problems)
{
    struct voltagent_state *st = voltagent_state(ctx);
    if (!st)
        return -ENOMEM;
    tool_session_lock(ctx->session);
    if (!st->skills) {
        st->skills = calloc(1, sizeof(*st->skills));
        st->skills_free = voltagent_skills_free;
    }
    bool need = st->skills && (refresh || !st->skills->discovered);
    bool made = st->skills != NULL;
    tool_session_unlock(ctx->session);
    if (!made)
        return -ENOMEM;
    if (!need)
        return 0;
    struct skill *v;
    size_t n;
    int r = discover(ctx, &v, &n, problems);
    if (r < 0)
        return r;
    tool_session_lock(ctx->session);
    struct voltagent_skills *sk = st->skills;
    skills_clear_list(sk);
    sk->v = v;
    sk->n = n;
    sk->discovered = true;
    voltagent_index_free(sk->index);
    sk->index = NULL;
    tool_session_unlock(ctx->session);
    return 0;
}

/* Upstream's resolveSkillId: an id, else a name (case-insensitive; the first skill of that
 * name). Under the lock. */
static const struct skill *resolve(const struct voltagent_skills *sk, const char *ident)
{
    _cleanup_free_ char *t = trim_dup(ident);
    if (!t || !*t)
        return NULL;
    for (size_t i = 0; i < sk->n; i++)
        if (!strcmp(sk->v[i].m.id, t))
            return &sk->v[i];
    for (size_t i = 0; i < sk->n; i++)
        if (!strcasecmp(sk->v[i].m.name, t))
            return &sk->v[i];
    return NULL;
}

static bool is_active(const struct voltagent_skills *sk, const char *id)
{
    for (size_t i = 0; i < sk->n_active; i++)
        if (!strcmp(sk->active[i], id))
            return true;
    return false;
}

/* ---- results -------------------------------------------------------------------------------- */

struct text {
    char *s;
    size_t len, cap;
    bool failed;
};

__attribute__((format(printf, 2, 3))) static void tprintf(struct text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || t->len + (size_t)n + 1 > SIZE_MAX / 2) {
        t->failed = true;
        return;
    }
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = (t->len + (size_t)n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static cJSON *text_result(struct text *t)
{
    cJSON *o = t->failed ? NULL : voltagent_index_output(t->s ? t->s : "");
    free(t->s);
    t->s = NULL;
    return o;
}

__attribute__((format(printf, 3, 4))) static cJSON *fail_text(bool *is_error, const char *code,
                                                              const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    *is_error = true;
    return voltagent_error_text(code, buf);
}

static cJSON *not_found(bool *is_error, const char *ident)
{
    return fail_text(is_error, broker_kind_name(BROKER_E_NOT_FOUND), "Skill not found: %.500s", ident);
}

static cJSON *no_memory(bool *is_error)
{
    return fail_text(is_error, broker_kind_name(BROKER_E_IO),
                     "Error: out of memory for the skills of this session");
}

static cJSON *strv_json(char **v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static cJSON *skill_json(const struct skill *s, bool active)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", s->m.id);
    cJSON_AddStringToObject(o, "name", s->m.name);
    if (s->m.description)
        cJSON_AddStringToObject(o, "description", s->m.description);
    if (s->m.version)
        cJSON_AddStringToObject(o, "version", s->m.version);
    if (s->m.tags)
        cJSON_AddItemToObject(o, "tags", strv_json(s->m.tags, s->m.n_tags));
    cJSON_AddStringToObject(o, "path", s->path);
    cJSON_AddStringToObject(o, "root", s->root);
    cJSON_AddItemToObject(o, "references", strv_json(s->m.references, s->m.n_references));
    cJSON_AddItemToObject(o, "scripts", strv_json(s->m.scripts, s->m.n_scripts));
    cJSON_AddItemToObject(o, "assets", strv_json(s->m.assets, s->m.n_assets));
    cJSON_AddBoolToObject(o, "active", active);
    return o;
}

/* ---- the tools ------------------------------------------------------------------------------ */

static const struct voltagent_index_param list_params[] = {
    {"refresh", VS_BOOL, false, "Refresh skill discovery"},
    {"active_only", VS_BOOL, false, "Only list active skills"},
};
enum { S_QUERY, S_MODE, S_TOP_K, S_SNIPPET, S_LEX, S_VEC };
static const struct voltagent_index_param search_params[] = {
    {"query", VS_STR, true, "Search query"},
    {"mode", VS_MODE, false, "Search mode"},
    {"top_k", VS_INT, false, "Number of results (default: 10)"},
    {"snippet_length", VS_INT, false, "Snippet length for each result"},
    {"lexical_weight", VS_NUM, false, "Hybrid lexical weight"},
    {"vector_weight", VS_NUM, false, "Hybrid vector weight"},
};
static const struct voltagent_index_param id_params[] = {
    {"skill_id", VS_STR, true, "Skill id or name"},
};
static const struct voltagent_index_param ref_params[] = {
    {"skill_id", VS_STR, true, "Skill id or name"},
    {"reference", VS_STR, true, "Reference file path"},
};
static const struct voltagent_index_param script_params[] = {
    {"skill_id", VS_STR, true, "Skill id or name"},
    {"script", VS_STR, true, "Script file path"},
};
static const struct voltagent_index_param asset_params[] = {
    {"skill_id", VS_STR, true, "Skill id or name"},
    {"asset", VS_STR, true, "Asset file path"},
};

static cJSON *t_list(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    bool refresh = a->v[0] && cJSON_IsTrue(a->v[0]), active_only = a->v[1] && cJSON_IsTrue(a->v[1]);
    cJSON *problems = cJSON_CreateArray();
    if (!problems || ensure_discovered(ctx, refresh, problems) < 0) {
        cJSON_Delete(problems);
        return no_memory(is_error);
    }
    struct voltagent_skills *sk = voltagent_state(ctx)->skills;
    struct text t = {0};
    cJSON *arr = cJSON_CreateArray();
    tool_session_lock(ctx->session);
    size_t shown = 0;
    for (size_t i = 0; i < sk->n; i++) {
        const struct skill *s = &sk->v[i];
        bool act = is_active(sk, s->m.id);
        if (active_only && !act)
            continue;
        tprintf(&t, "%s[%s] %s (%s)%s%s", shown++ ? "\n" : "", act ? "active" : "inactive", s->m.id,
                s->m.name, s->m.description ? " - " : "", s->m.description ? s->m.description : "");
        cJSON_AddItemToArray(arr, skill_json(s, act));
    }
    tool_session_unlock(ctx->session);
    if (!shown)
        tprintf(&t, "No skills found.");
    cJSON *o = text_result(&t);
    if (!o || !arr || !cJSON_AddItemToObject(o, "skills", arr)) {
        cJSON_Delete(arr);
        cJSON_Delete(problems);
        cJSON_Delete(o);
        return NULL;
    }
    if (cJSON_GetArraySize(problems))
        cJSON_AddItemToObject(o, "problems", problems);
    else
        cJSON_Delete(problems);
    return o;
}

/* The skills' index: name, description and instructions of each, built on the first search
 * after a discovery (upstream's ensureIndexed). Reads and embeds without the lock. */
static int ensure_indexed(struct tool_ctx *ctx, struct broker_err *e)
{
    struct voltagent_skills *sk = voltagent_state(ctx)->skills;
    tool_session_lock(ctx->session);
    bool have = sk->index != NULL;
    size_t n = sk->n;
    char **paths = have ? NULL : calloc(n + 1, sizeof(*paths));
    char **ids = have ? NULL : calloc(n + 1, sizeof(*ids));
    char **names = have ? NULL : calloc(n + 1, sizeof(*names));
    bool ok = have || (paths && ids && names);
    for (size_t i = 0; ok && !have && i < n; i++) {
        paths[i] = strdup(sk->v[i].path);
        ids[i] = strdup(sk->v[i].m.id);
        names[i] = strdup(sk->v[i].m.name);
        ok = paths[i] && ids[i] && names[i];
    }
    tool_session_unlock(ctx->session);
    int rc = 0;
    struct voltagent_index_doc **docs = NULL;
    size_t nd = 0;
    if (have)
        goto out;
    if (!ok) {
        rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
        goto out;
    }
    docs = calloc(n + 1, sizeof(*docs));
    const char **texts = calloc(n + 1, sizeof(*texts));
    size_t *lens = calloc(n + 1, sizeof(*lens));
    if (!docs || !texts || !lens) {
        free(texts);
        free(lens);
        rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct voltagent_skill_meta m;
        char *body = NULL;
        struct broker_err le = {0};
        if (load_skill_file(ctx, paths[i], &m, &body, &le) < 0)
            continue; /* gone since discovery: not searchable */
        char *content = util_printf("%s\n%s\n%s", names[i], m.description ? m.description : "", body);
        voltagent_skills_meta_clear(&m);
        free(body);
        if (!content) {
            rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
            break;
        }
        /* upstream's [name, description, instructions].join("\n").trim() */
        const char *c = content;
        size_t cl = strlen(content);
        trim_span(&c, &cl);
        memmove(content, c, cl);
        content[cl] = '\0';
        if (!cl) {
            free(content);
            continue;
        }
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "path", paths[i]);
        docs[nd] = voltagent_index_doc_new(ids[i], content, cl, meta, names[i], NULL, 0);
        if (!docs[nd]) {
            rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
            break;
        }
        texts[nd] = docs[nd]->content;
        lens[nd] = docs[nd]->len;
        nd++;
    }
    float *vecs = NULL;
    size_t dim = 0;
    if (rc == 0)
        rc = voltagent_index_embed(ctx, texts, lens, nd, &vecs, &dim, e);
    free(texts);
    free(lens);
    for (size_t i = 0; rc == 0 && vecs && i < nd; i++) {
        if (!(docs[i]->vec = malloc(dim * sizeof(float)))) {
            rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
            break;
        }
        memcpy(docs[i]->vec, vecs + i * dim, dim * sizeof(float));
        docs[i]->dim = dim;
        docs[i]->cost += dim * sizeof(float);
    }
    free(vecs);
    struct voltagent_index *ix = NULL;
    if (rc == 0 && voltagent_index_new(MAX_SKILLS, VS_MAX_BYTES, &ix) < 0)
        rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory");
    if (rc == 0 && voltagent_index_add(ix, docs, nd, e) < 0)
        rc = -1;
    if (rc == 0) {
        tool_session_lock(ctx->session);
        if (!sk->index) {
            sk->index = ix;
            ix = NULL;
        }
        tool_session_unlock(ctx->session);
    }
    voltagent_index_free(ix);
out:
    for (size_t i = 0; docs && i < nd; i++)
        voltagent_index_doc_free(docs[i]);
    free(docs);
    for (size_t i = 0; !have && i < n; i++) {
        if (paths)
            free(paths[i]);
        if (ids)
            free(ids[i]);
        if (names)
            free(names[i]);
    }
    free(paths);
    free(ids);
    free(names);
    return rc;
}

struct skill_hit {
    size_t doc;
    double score, bm25, vec;
    bool has_bm25, has_vec;
};

static int hit_cmp(const void *a, const void *b)
{
    const struct skill_hit *x = a, *y = b;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

static cJSON *t_search(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    const char *query = a->v[S_QUERY]->valuestring;
    const char *mode = a->v[S_MODE] ? a->v[S_MODE]->valuestring : "hybrid";
    size_t top_k = a->v[S_TOP_K] ? (size_t)fmin(a->n[S_TOP_K], MAX_TOP_K) : DEFAULT_TOP_K;
    size_t snip = a->v[S_SNIPPET] ? (size_t)fmin(a->n[S_SNIPPET], MAX_SNIPPET) : DEFAULT_SNIPPET_LENGTH;
    /* Upstream's skills search takes each weight as given (no 1 - other, no clamp). */
    double lw = a->v[S_LEX] ? a->n[S_LEX] : DEFAULT_WEIGHT,
           vw = a->v[S_VEC] ? a->n[S_VEC] : DEFAULT_WEIGHT;
    if (strlen(query) > 65536)
        return fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                         "Error: query is longer than 65536 bytes");
    if (ensure_discovered(ctx, false, NULL) < 0)
        return no_memory(is_error);
    struct broker_err e = {0};
    if (ensure_indexed(ctx, &e) < 0) {
        *is_error = true;
        return voltagent_error(&e);
    }
    bool want_bm25 = strcmp(mode, "vector") != 0, want_vec = strcmp(mode, "bm25") != 0;
    float *qvec = NULL;
    size_t dim = 0;
    bool any = false;
    if (want_vec) {
        size_t ql = strlen(query);
        if (voltagent_index_embed(ctx, &query, &ql, 1, &qvec, &dim, &e) < 0) {
            *is_error = true;
            return voltagent_error(&e);
        }
        for (size_t i = 0; i < dim && !any; i++)
            any = qvec[i] != 0;
    }
    struct voltagent_skills *sk = voltagent_state(ctx)->skills;
    struct voltagent_index_scored *bm = NULL, *vec = NULL;
    size_t n_bm = 0, n_vec = 0;
    struct skill_hit *h = NULL;
    size_t nh = 0;
    struct text t = {0};
    cJSON *results = cJSON_CreateArray(), *o = NULL;
    tool_session_lock(ctx->session);
    /* NULL only when a refresh in another call dropped the index meanwhile: no results. */
    struct voltagent_index *ix = sk->index;
    int r = 0;
    if (ix && want_bm25)
        r = voltagent_index_bm25(ix, query, NULL, NULL, top_k * 5, &bm, &n_bm);
    if (ix && r == 0 && want_vec && any && dim == voltagent_index_dim(ix))
        r = voltagent_index_vector(ix, qvec, dim, NULL, NULL, top_k * 5, &vec, &n_vec);
    h = calloc(n_bm + n_vec + 1, sizeof(*h));
    if (r < 0 || !h || !results)
        goto out;
    double max_bm = 0, max_vec = 0;
    for (size_t i = 0; i < n_bm; i++) {
        h[nh++] = (struct skill_hit){.doc = bm[i].doc, .bm25 = bm[i].score, .has_bm25 = true};
        max_bm = fmax(max_bm, bm[i].score);
    }
    for (size_t i = 0; i < n_vec; i++) {
        struct skill_hit *x = NULL;
        for (size_t k = 0; k < nh && !x; k++)
            if (h[k].doc == vec[i].doc)
                x = &h[k];
        if (!x) {
            x = &h[nh++];
            *x = (struct skill_hit){.doc = vec[i].doc};
        }
        x->vec = vec[i].score;
        x->has_vec = true;
        max_vec = fmax(max_vec, vec[i].score);
    }
    for (size_t i = 0; i < nh; i++) {
        if (!strcmp(mode, "bm25"))
            h[i].score = h[i].bm25;
        else if (!strcmp(mode, "vector"))
            h[i].score = h[i].vec;
        else
            h[i].score = lw * (max_bm > 0 && h[i].has_bm25 ? h[i].bm25 / max_bm : 0) +
                         vw * (max_vec > 0 && h[i].has_vec ? h[i].vec / max_vec : 0);
    }
    if (!strcmp(mode, "hybrid") && nh)
        qsort(h, nh, sizeof(*h), hit_cmp);
    if (nh > top_k)
        nh = top_k;
    if (!nh)
        tprintf(&t, "No results found.");
    else
        tprintf(&t, "Found %zu result(s):", nh);
    for (size_t i = 0; i < nh; i++) {
        const struct voltagent_index_doc *d = voltagent_index_doc(ix, h[i].doc);
        tprintf(&t, "\n%zu. %s (%s) (score=%.3f", i + 1, d->label, d->id, h[i].score);
        if (h[i].has_bm25)
            tprintf(&t, ", bm25=%.3f", h[i].bm25);
        if (h[i].has_vec)
            tprintf(&t, ", vector=%.3f", h[i].vec);
        tprintf(&t, ")");
        _cleanup_free_ char *sn = voltagent_index_snippet(d->content, d->len, query, snip);
        if (sn && *sn)
            tprintf(&t, "\n   %s", sn);
        cJSON *ro = cJSON_CreateObject();
        cJSON_AddStringToObject(ro, "id", d->id);
        cJSON_AddStringToObject(ro, "name", d->label);
        cJSON_AddNumberToObject(ro, "score", h[i].score);
        if (h[i].has_bm25)
            cJSON_AddNumberToObject(ro, "bm25Score", h[i].bm25);
        if (h[i].has_vec)
            cJSON_AddNumberToObject(ro, "vectorScore", h[i].vec);
        if (sn)
            cJSON_AddStringToObject(ro, "snippet", sn);
        if (d->metadata)
            cJSON_AddItemToObject(ro, "metadata", cJSON_Duplicate(d->metadata, true));
        cJSON_AddItemToArray(results, ro);
    }
    o = text_result(&t);
    if (o && cJSON_AddItemToObject(o, "results", results))
        results = NULL;
out:
    tool_session_unlock(ctx->session);
    free(t.s);
    cJSON_Delete(results);
    free(h);
    free(bm);
    free(vec);
    free(qvec);
    return o;
}

/* A copy of the skill named IDENT (id, name, path, root, and the current lists), under the
 * lock; false when there is none. */
static bool find_skill(struct tool_ctx *ctx, const char *ident, char **id, char **name, char **path,
                       char **root, bool activate, int *active_change)
{
    struct voltagent_skills *sk = voltagent_state(ctx)->skills;
    tool_session_lock(ctx->session);
    const struct skill *s = resolve(sk, ident);
    if (s) {
        *id = strdup(s->m.id);
        *name = strdup(s->m.name);
        if (path)
            *path = strdup(s->path);
        if (root)
            *root = strdup(s->root);
        if (active_change && activate && !is_active(sk, s->m.id)) {
            char **v = reallocarray(sk->active, sk->n_active + 1, sizeof(*v));
            if (v) {
                sk->active = v;
                if ((v[sk->n_active] = strdup(s->m.id)))
                    sk->n_active++;
            }
            *active_change = 1;
        } else if (active_change && !activate) {
            *active_change = 0;
            for (size_t i = 0; i < sk->n_active; i++)
                if (!strcmp(sk->active[i], s->m.id)) {
                    free(sk->active[i]);
                    memmove(sk->active + i, sk->active + i + 1, (sk->n_active - i - 1) * sizeof(char *));
                    sk->n_active--;
                    *active_change = 1;
                    break;
                }
        }
    }
    tool_session_unlock(ctx->session);
    return s != NULL;
}

static cJSON *t_read(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    const char *ident = a->v[0]->valuestring;
    if (ensure_discovered(ctx, false, NULL) < 0)
        return no_memory(is_error);
    _cleanup_free_ char *id = NULL, *name = NULL, *path = NULL;
    if (!find_skill(ctx, ident, &id, &name, &path, NULL, false, NULL))
        return not_found(is_error, ident);
    if (!id || !name || !path)
        return no_memory(is_error);
    struct voltagent_skill_meta m;
    _cleanup_free_ char *body = NULL;
    struct broker_err e = {0};
    if (load_skill_file(ctx, path, &m, &body, &e) < 0) {
        *is_error = true;
        return voltagent_error(&e);
    }
    /* upstream's formatSkillDetail */
    struct text t = {0};
    tprintf(&t, "Name: %s\nId: %s", name, id);
    if (m.description)
        tprintf(&t, "\nDescription: %s", m.description);
    if (m.version)
        tprintf(&t, "\nVersion: %s", m.version);
    for (size_t i = 0; i < m.n_tags; i++)
        tprintf(&t, "%s%s", i ? ", " : "\nTags: ", m.tags[i]);
    tprintf(&t, "\nPath: %s\n\nInstructions:\n%s", path, body && *body ? body : "(empty)");
    struct skill s = {.m = m, .path = path, .root = NULL};
    free(s.m.id);
    free(s.m.name);
    s.m.id = id;
    s.m.name = name;
    cJSON *o = text_result(&t);
    if (o) {
        char *slash = strrchr(path, '/');
        char rootbuf[4096];
        snprintf(rootbuf, sizeof(rootbuf), "%.*s", slash && slash != path ? (int)(slash - path) : 1,
                 path);
        s.root = rootbuf;
        cJSON *sj = skill_json(&s, false);
        cJSON_DeleteItemFromObject(sj, "active");
        cJSON_AddItemToObject(o, "skill", sj);
        cJSON_AddStringToObject(sj, "instructions", body ? body : "");
    }
    s.m.id = NULL;
    s.m.name = NULL;
    voltagent_skills_meta_clear(&s.m);
    return o;
}

static cJSON *t_activate(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    const char *ident = a->v[0]->valuestring;
    if (ensure_discovered(ctx, false, NULL) < 0)
        return no_memory(is_error);
    _cleanup_free_ char *id = NULL, *name = NULL;
    int changed = 0;
    if (!find_skill(ctx, ident, &id, &name, NULL, NULL, true, &changed))
        return not_found(is_error, ident);
    if (!id || !name)
        return no_memory(is_error);
    char buf[2200];
    snprintf(buf, sizeof(buf), "Activated skill: %s (%s)", name, id);
    return voltagent_index_output(buf);
}

static cJSON *t_deactivate(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    const char *ident = a->v[0]->valuestring;
    if (ensure_discovered(ctx, false, NULL) < 0)
        return no_memory(is_error);
    _cleanup_free_ char *id = NULL, *name = NULL;
    int changed = 0;
    /* Upstream answers "Skill not found" for a skill that exists but was not active. */
    if (!find_skill(ctx, ident, &id, &name, NULL, NULL, false, &changed) || !changed)
        return not_found(is_error, ident);
    char buf[1200];
    snprintf(buf, sizeof(buf), "Deactivated skill: %.1000s", ident);
    return voltagent_index_output(buf);
}

/* Upstream's resolveSkillFilePath: REL may not hold "..", and must be a listed entry, or the
 * end of one after a '/'; a listed absolute entry must lie under the skill's root. *out gets the
 * workspace path to read. */
static bool resolve_file(const char *root, char **list, size_t n, const char *rel, char **out)
{
    _cleanup_free_ char *r = trim_dup(rel);
    *out = NULL;
    if (!r || !*r || strstr(r, ".."))
        return false;
    size_t rl = strlen(r);
    const char *match = NULL;
    for (size_t i = 0; i < n && !match; i++) {
        size_t el = strlen(list[i]);
        if (!strcmp(list[i], r) ||
            (el > rl && list[i][el - rl - 1] == '/' && !strcmp(list[i] + el - rl, r)))
            match = list[i];
    }
    if (!match)
        return false;
    if (match[0] == '/') {
        size_t ro = strcmp(root, "/") ? strlen(root) : 0;
        if (strncmp(match, root, ro) || match[ro] != '/')
            return false;
        *out = strdup(match);
    } else {
        *out = util_printf("%s/%s", strcmp(root, "/") ? root : "", match);
    }
    return *out != NULL;
}

static cJSON *read_skill_file(struct tool_ctx *ctx, const char *ident, const char *rel, const char *kind,
                              bool *is_error)
{
    if (ensure_discovered(ctx, false, NULL) < 0)
        return no_memory(is_error);
    _cleanup_free_ char *id = NULL, *name = NULL, *path = NULL, *root = NULL;
    if (!find_skill(ctx, ident, &id, &name, &path, &root, false, NULL))
        return not_found(is_error, ident);
    if (!id || !name || !path || !root)
        return no_memory(is_error);
    /* The lists come from the file as it is now (upstream's loadSkill). */
    struct voltagent_skill_meta m;
    struct broker_err e = {0};
    if (load_skill_file(ctx, path, &m, NULL, &e) < 0) {
        *is_error = true;
        return voltagent_error(&e);
    }
    char **list = !strcmp(kind, "reference") ? m.references
                  : !strcmp(kind, "script")  ? m.scripts
                                             : m.assets;
    size_t n = !strcmp(kind, "reference") ? m.n_references
               : !strcmp(kind, "script")  ? m.n_scripts
                                          : m.n_assets;
    _cleanup_free_ char *target = NULL;
    if (!resolve_file(root, list, n, rel, &target)) {
        struct text t = {0};
        tprintf(&t, "File not allowed for %s. Available: ", kind);
        for (size_t i = 0; i < n; i++)
            tprintf(&t, "%s%s", i ? ", " : "", list[i]);
        if (!n)
            tprintf(&t, "none");
        cJSON *o = t.failed ? NULL : voltagent_error_text(VOLTAGENT_E_SKILL_FILE, t.s);
        free(t.s);
        voltagent_skills_meta_clear(&m);
        *is_error = true;
        return o;
    }
    voltagent_skills_meta_clear(&m);
    cJSON *err;
    if (voltagent_path_check(target, kind, &err) < 0) {
        *is_error = true;
        return err;
    }
    struct broker_read_opts ro = {0};
    struct broker_read_result rr;
    if (broker_read(ctx, target, &ro, &rr, &e) < 0)
        return fail_text(is_error, broker_kind_name(e.kind), "Error reading skill file: %s", e.msg);
    cJSON *o = voltagent_index_output(rr.len ? rr.content : "(empty)");
    if (o) {
        cJSON_AddStringToObject(o, "path", target);
        if (rr.truncated)
            cJSON_AddBoolToObject(o, "truncated", true);
    }
    broker_read_result_clear(&rr);
    return o;
}

static cJSON *t_read_reference(struct tool_ctx *ctx, const struct voltagent_index_args *a,
                               bool *is_error)
{
    return read_skill_file(ctx, a->v[0]->valuestring, a->v[1]->valuestring, "reference", is_error);
}
static cJSON *t_read_script(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    return read_skill_file(ctx, a->v[0]->valuestring, a->v[1]->valuestring, "script", is_error);
}
static cJSON *t_read_asset(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    return read_skill_file(ctx, a->v[0]->valuestring, a->v[1]->valuestring, "asset", is_error);
}

/* ---- the toolkit ---------------------------------------------------------------------------- */

static const struct voltagent_toolkit_tool tools[] = {
    {"workspace_list_skills", "List available workspace skills.", list_params, ARRAY_SIZE(list_params),
     t_list},
    {"workspace_search_skills", "Search skill instructions by text query.", search_params,
     ARRAY_SIZE(search_params), t_search},
    {"workspace_read_skill", "Read a skill's instructions from SKILL.md.", id_params,
     ARRAY_SIZE(id_params), t_read},
    {"workspace_activate_skill", "Activate a workspace skill.", id_params, ARRAY_SIZE(id_params),
     t_activate},
    {"workspace_deactivate_skill", "Deactivate a workspace skill.", id_params, ARRAY_SIZE(id_params),
     t_deactivate},
    {"workspace_read_skill_reference", "Read a skill reference file.", ref_params,
     ARRAY_SIZE(ref_params), t_read_reference},
    {"workspace_read_skill_script", "Read a skill script file.", script_params,
     ARRAY_SIZE(script_params), t_read_script},
    {"workspace_read_skill_asset", "Read a skill asset file.", asset_params, ARRAY_SIZE(asset_params),
     t_read_asset},
};

static const struct voltagent_toolkit toolkit = {tools, ARRAY_SIZE(tools), true};

int voltagent_skills_list(const struct tool_ctx *ctx, cJSON *arr)
{
    (void)ctx;
    return voltagent_toolkit_list(&toolkit, arr);
}

int voltagent_skills_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                          bool *is_error)
{
    return voltagent_toolkit_call(&toolkit, ctx, tool, args, result, is_error);
}
